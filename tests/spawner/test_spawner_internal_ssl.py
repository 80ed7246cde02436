"""ElasticSpawner on a hub with c.JupyterHub.internal_ssl = True: the server serves https and asks every caller
for a certificate of the hub's CAs, so the checkpoint before a stop presents the hub's own internal certificate
and verifies the server's against the hub's trust bundle, as the hub's own calls to its servers do
(JupyterHub's User._wait_up). The certificates are JupyterHub's own (init_internal_ssl, Spawner.create_certs)."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl

import pytest
from certipy import Certipy
from jupyterhub.app import JupyterHub
from jupyterhub.utils import make_ssl_context
from tornado import web
from tornado.httpserver import HTTPServer

from elastichub.checkpoint_client import FAILED, SAVED
from spawnertools import spawner


class _Checkpoint(web.RequestHandler):
    def initialize(self, peers):
        self.peers = peers

    def post(self):
        self.peers.append(self.request.get_ssl_certificate())
        self.finish(json.dumps([{"kernel_id": "k1", "ok": True, "migrated": ["x"], "bytes": 10}]))


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """A hub's internal CAs and certificate (made once: each CA is a new RSA key)."""
    app = JupyterHub(internal_ssl=True, internal_certs_location=str(tmp_path_factory.mktemp("certs")))

    async def init():  # it makes the hub's HTTP client, which wants a running loop
        app.init_internal_ssl()

    asyncio.run(init())
    return app


@pytest.fixture
async def tls_server(hub):
    """(a spawner of the hub, the https URL of its server, the client certificates the server saw)."""
    s = spawner(ssl_alt_names_include_local=True)  # the server is reached as 127.0.0.1 here, not its Service
    s.internal_ssl, s.internal_trust_bundles = True, hub.internal_trust_bundles
    s.internal_certs_location = hub.internal_certs_location
    s.user.settings = {"internal_ssl_key": hub.internal_ssl_key, "internal_ssl_cert": hub.internal_ssl_cert,
                       "internal_ssl_ca": hub.internal_ssl_ca}
    s.api_token = "t"
    paths = await s.create_certs()  # as the hub makes the server's before its start
    # As the single-user server serves: its certificate, and one its trust bundle signed asked of every caller.
    server_tls = make_ssl_context(paths["keyfile"], paths["certfile"], cafile=paths["cafile"],
                                  purpose=ssl.Purpose.CLIENT_AUTH)
    peers = []
    server = HTTPServer(web.Application([(r"/user/alice/api/elastichub/checkpoint", _Checkpoint,
                                          {"peers": peers})]), ssl_options=server_tls)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server.listen(port, "127.0.0.1")
    yield s, f"https://127.0.0.1:{port}/user/alice/", peers
    server.stop()


async def test_the_checkpoint_presents_the_hubs_internal_certificate(tls_server, tmp_path):
    s, url, peers = tls_server
    out = await s._checkpoint(url, "before stopping")
    assert (out.status, out.kernels, out.bytes) == (SAVED, 1, 10), out.reason
    assert len(peers) == 1 and peers[0], peers  # the request carried a certificate the server verified
    # The server takes no other: a certificate of a CA the hub's notebooks do not trust is refused.
    other = Certipy(store_dir=str(tmp_path / "other"))
    other.create_ca("elsewhere-ca")
    pair = other.create_signed_pair("intruder", "elsewhere-ca", alt_names=["IP:127.0.0.1"])
    s.user.settings = {**s.user.settings, "internal_ssl_key": pair["files"]["key"],
                       "internal_ssl_cert": pair["files"]["cert"]}
    out = await s._checkpoint(url, "before stopping")
    assert out.status == FAILED and url in out.reason and len(peers) == 1, out


@pytest.mark.parametrize("settings, words", [
    ({}, "internal_ssl is on but the hub's settings have no internal_ssl_key and internal_ssl_cert"),
    ({"internal_ssl_key": "/absent/hub.key", "internal_ssl_cert": "/absent/hub.crt"},
     "internal_ssl: cannot load the hub's key /absent/hub.key, certificate /absent/hub.crt"),
])
async def test_without_the_hubs_certificate_the_checkpoint_fails_naming_why(tls_server, settings, words):
    s, url, peers = tls_server
    s.user.settings = settings
    out = await s._checkpoint(url, "before stopping")
    assert out.status == FAILED and words in out.reason and peers == [], out
