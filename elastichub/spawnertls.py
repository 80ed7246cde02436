"""JupyterHub's internal_ssl for ElasticSpawner's own calls to a user's server.

With ``c.JupyterHub.internal_ssl = True`` a single-user server serves https
with a certificate of the hub's notebooks CA and asks every caller for one
its trust bundle signed (the hub's CA among them). The hub reaches its
servers with its own internal certificate, verifying theirs against its
trust bundle (JupyterHub's ``User._wait_up``); the checkpoint before a stop
is the hub's call too, so it presents the same.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping

from jupyterhub.utils import make_ssl_context


class InternalSSLProblem(Exception):
    """The hub's internal certificate cannot be used; the message names the problem."""


def hub_client_ssl(settings: Mapping) -> ssl.SSLContext:
    """The hub's client context from its tornado `settings` (internal_ssl_key, _cert, _ca, set by
    JupyterHub's init_internal_ssl). Without it every request would go out without a certificate and
    the server's TLS would refuse it: raised instead, naming what is missing."""
    key, cert, ca = (settings.get(f"internal_ssl_{part}") or "" for part in ("key", "cert", "ca"))
    if not key or not cert:
        missing = " and ".join(n for n, v in (("internal_ssl_key", key), ("internal_ssl_cert", cert)) if not v)
        raise InternalSSLProblem(f"internal_ssl is on but the hub's settings have no {missing} (JupyterHub's "
                                 "init_internal_ssl sets them)")
    try:
        return make_ssl_context(key, cert, cafile=ca or None)
    except (OSError, ssl.SSLError) as e:
        files = f"key {key}, certificate {cert}" + (f", CA bundle {ca}" if ca else "")
        raise InternalSSLProblem(f"internal_ssl: cannot load the hub's {files}: "
                                 f"{getattr(e, 'strerror', None) or e}") from None
