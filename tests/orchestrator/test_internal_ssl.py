"""A hub with c.JupyterHub.internal_ssl = True: the orchestrator presents the certificate the hub gives its
managed services (JUPYTERHUB_SSL_*) on its calls to the hub API, and serves its pages over https to callers
with one, as JupyterHub's own services do. The certificates are JupyterHub's own (init_internal_ssl, certipy)."""

from __future__ import annotations

import json
import socket
import ssl
from unittest.mock import Mock

import pytest
from certipy import Certipy
from jupyterhub.app import JupyterHub
from jupyterhub.utils import make_ssl_context
from tornado import web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError
from tornado.httpserver import HTTPServer

from elastichub.orchestrator.hub import HubClient, HubError
from elastichub.orchestrator.startup import StartupError
from elastichub.orchestrator.tls import CERTFILE, CLIENT_CA, KEYFILE, client_ssl, server_ssl

ALT_NAMES = ["IP:127.0.0.1", "DNS:localhost"]


@pytest.fixture
async def certs(tmp_path):
    """(the hub app with its internal certificates, the environment the hub gives a managed service)."""
    hub = JupyterHub(internal_ssl=True, internal_certs_location=str(tmp_path / "certs"))
    hub.init_internal_ssl()
    pair = Certipy(store_dir=str(tmp_path / "certs")).create_signed_pair("elastichub", "notebooks-ca",
                                                                        alt_names=ALT_NAMES)
    env = {KEYFILE: pair["files"]["key"], CERTFILE: pair["files"]["cert"],
           CLIENT_CA: hub.internal_trust_bundles["notebooks-ca"]}
    return hub, env


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Root(web.RequestHandler):
    def get(self):
        self.finish(json.dumps({"version": "5.2.1"}))


async def test_the_hub_api_behind_internal_ssl_is_reached_with_the_services_certificate(certs):
    hub, env = certs
    port = _port()
    # As the hub serves its API with internal_ssl: its certificate, and one of its CAs' asked of every client.
    tls = make_ssl_context(hub.internal_ssl_key, hub.internal_ssl_cert, cafile=hub.internal_ssl_ca,
                           purpose=ssl.Purpose.CLIENT_AUTH)
    server = HTTPServer(web.Application([(r"/hub/api/", Root)]), ssl_options=tls)
    server.listen(port, "127.0.0.1")
    api = f"https://127.0.0.1:{port}/hub/api"
    try:
        _, info = await HubClient(api, api, "t", ssl_context=client_ssl(env))._api("GET", "/")
        assert info == {"version": "5.2.1"}
        with pytest.raises(HubError):  # without the certificate the hub's TLS refuses the connection
            await HubClient(api, api, "t")._api("GET", "/")
    finally:
        server.stop()


async def test_the_pages_are_served_over_https_to_callers_with_an_internal_certificate(certs, monkeypatch):
    from elastichub.orchestrator.app import ElasticOrchestrator

    hub, env = certs
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    port = _port()
    app = ElasticOrchestrator(service_url=f"https://127.0.0.1:{port}", api_token="t",
                              hub_api_url="http://127.0.0.1:1/hub/api")
    server = app._serve(Mock(health=lambda: (True, ""), cycles=1, last_cycle_at=1.0,
                             hub=HubClient("http://127.0.0.1:1/hub/api", "http://127.0.0.1:1", "t")))
    url = f"https://127.0.0.1:{port}{app.service_prefix}health"
    proxy = hub.internal_proxy_certs["proxy-client"]  # what the proxy presents to the servers it routes to
    trusted = hub.internal_trust_bundles["proxy-client-ca"]
    try:
        answer = await AsyncHTTPClient().fetch(url, ssl_options=make_ssl_context(
            proxy["keyfile"], proxy["certfile"], cafile=trusted))
        assert answer.code == 200
        with pytest.raises((HTTPClientError, OSError)):  # no client certificate: refused
            await AsyncHTTPClient().fetch(url, ssl_options=ssl.create_default_context(cafile=trusted))
    finally:
        server.stop()


async def test_half_a_certificate_or_an_https_url_without_one_is_one_line_naming_the_variables(certs):
    _, env = certs
    with pytest.raises(StartupError, match=r"\$JUPYTERHUB_SSL_KEYFILE is set but \$JUPYTERHUB_SSL_CERTFILE is not"):
        client_ssl({KEYFILE: env[KEYFILE]})
    with pytest.raises(StartupError, match=r"service_url https://hub:10101 is https, but \$JUPYTERHUB_SSL_KEYFILE"):
        server_ssl("https://hub:10101", {})
    with pytest.raises(StartupError, match=r"internal_ssl: cannot load \$JUPYTERHUB_SSL_KEYFILE /absent"):
        client_ssl({KEYFILE: "/absent", CERTFILE: env[CERTFILE]})
    assert server_ssl("http://hub:10101", env) is None  # http, as the admin set it
