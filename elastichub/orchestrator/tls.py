"""JupyterHub's internal_ssl for the orchestrator.

With ``c.JupyterHub.internal_ssl = True`` the hub serves its API only to
clients that present a certificate of its internal CAs, and gives each
managed service its own, in JUPYTERHUB_SSL_KEYFILE and
JUPYTERHUB_SSL_CERTFILE, with JUPYTERHUB_SSL_CLIENT_CA the bundle it is to
trust. As JupyterHub's own services (HubAuth) and single-user servers do,
the orchestrator presents that certificate on every request (the hub API,
users' servers through the proxy or at their pods) and serves its pages
over https with it, asking its callers (the proxy) for theirs.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from jupyterhub.utils import make_ssl_context

from .startup import StartupError

KEYFILE, CERTFILE, CLIENT_CA = "JUPYTERHUB_SSL_KEYFILE", "JUPYTERHUB_SSL_CERTFILE", "JUPYTERHUB_SSL_CLIENT_CA"


@dataclass(frozen=True)
class InternalSSL:
    keyfile: str
    certfile: str
    client_ca: str  # "" : the system's CAs only

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> InternalSSL | None:
        """The hub's certificate for this service, or None without internal_ssl. One of the pair alone is
        an error: JupyterHub's make_ssl_context ignored it, and every request went out without a certificate."""
        key, cert = environ.get(KEYFILE, ""), environ.get(CERTFILE, "")
        if not key and not cert:
            return None
        if not (key and cert):
            given, missing = (KEYFILE, CERTFILE) if key else (CERTFILE, KEYFILE)
            raise StartupError(f"${given} is set but ${missing} is not: internal_ssl needs both (the hub sets "
                               "them for a managed service; for another, give the service's key and certificate)")
        return cls(key, cert, environ.get(CLIENT_CA, ""))

    def client(self) -> ssl.SSLContext:
        """For requests: presents the certificate, verifies the server against the bundle."""
        return self._context(ssl.Purpose.SERVER_AUTH)

    def server(self) -> ssl.SSLContext:
        """For the pages: serves with the certificate, asks each client for one the bundle signed."""
        return self._context(ssl.Purpose.CLIENT_AUTH)

    def _context(self, purpose: ssl.Purpose) -> ssl.SSLContext:
        try:
            return make_ssl_context(self.keyfile, self.certfile, cafile=self.client_ca or None, purpose=purpose)
        except (OSError, ssl.SSLError) as e:
            files = f"${KEYFILE} {self.keyfile}, ${CERTFILE} {self.certfile}" + (
                f", ${CLIENT_CA} {self.client_ca}" if self.client_ca else "")
            raise StartupError(f"internal_ssl: cannot load {files}: {getattr(e, 'strerror', None) or e}") from None


def client_ssl(environ: Mapping[str, str]) -> ssl.SSLContext | None:
    tls = InternalSSL.from_env(environ)
    return tls.client() if tls is not None else None


def server_ssl(service_url: str, environ: Mapping[str, str]) -> ssl.SSLContext | None:
    """The pages' TLS context: an https service_url needs the hub's certificate (internal_ssl); an http one is
    served plain, as the admin set it (the proxy reaches it as such)."""
    tls = InternalSSL.from_env(environ)
    if urlsplit(service_url).scheme != "https":
        return None
    if tls is None:
        raise StartupError(f"ElasticOrchestrator.service_url {service_url} is https, but ${KEYFILE} and ${CERTFILE} "
                           "are not set: with c.JupyterHub.internal_ssl the hub sets them for a managed service; "
                           "otherwise give the service an http url")
    return tls.server()
