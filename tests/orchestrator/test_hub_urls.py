"""How the orchestrator reaches a hub's servers: the hub API path of a named
server, and the proxy URL of a server under a hub base_url."""

import json
import os

import pytest

from elastichub.orchestrator.hub import proxied_url, server_api_path


def test_default_and_named_servers_have_their_own_api_paths():
    assert server_api_path("alice", "") == "/users/alice/server"
    assert server_api_path("alice", "gpu") == "/users/alice/servers/gpu"
    assert server_api_path("a b@x.org", "my lab") == "/users/a%20b%40x.org/servers/my%20lab"


@pytest.mark.parametrize("proxy_url", ["http://hub.example", "http://hub.example/", "http://hub.example/jhub",
                                       "http://hub.example/jhub/"])
def test_the_base_url_counts_once_whether_proxy_url_has_it_or_not(proxy_url):
    assert proxied_url(proxy_url, "/jhub/user/alice/gpu/") == "http://hub.example/jhub/user/alice/gpu/"


def test_a_prefix_of_a_reverse_proxy_in_front_is_kept():
    # A path of proxy_url that the server's URL does not start with is the
    # address of the proxy itself (e.g. a load balancer that strips it).
    assert proxied_url("https://lb.example/hub", "/user/alice/") == "https://lb.example/hub/user/alice/"
    assert proxied_url("https://lb.example/jh", "/jhub/user/a/") == "https://lb.example/jh/jhub/user/a/"


def self_signed(tmp_path):
    """(certificate, key) files of a self-signed certificate for 127.0.0.1, as a hub's own https has."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "hub.internal")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    (tmp_path / "hub.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "hub.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption()))
    return tmp_path / "hub.crt", tmp_path / "hub.key"


CHECK_HUB = """
import asyncio, sys
from elastichub.orchestrator.hub import HubClient, HubError
try:
    asyncio.run(HubClient(sys.argv[1], "http://127.0.0.1:1", "t").check())
except HubError as e:
    print(e)
"""


async def test_a_hub_on_https_with_a_certificate_not_trusted_here_is_named_with_the_way_to_trust_it(tmp_path):
    """JUPYTERHUB_API_URL https://... with a self-signed certificate: the admin was told OpenSSL's
    "certificate verify failed" and nothing of what to do; the advice given works."""
    import asyncio
    import ssl
    import subprocess
    import sys

    from tornado import httpserver, web

    from elastichub.demo.stage import free_port
    from elastichub.orchestrator.hub import HubClient, HubError

    class Hub(web.RequestHandler):
        def get(self, path):
            self.write({"version": "5.3.0"} if path == "/" else {"kind": "service", "name": "o", "scopes": []})

    cert, key = self_signed(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server = httpserver.HTTPServer(web.Application([(r"/hub/api(/.*)", Hub)]), ssl_options=context)
    port = free_port()
    server.listen(port, "127.0.0.1")
    url = f"https://127.0.0.1:{port}/hub/api"
    try:
        with pytest.raises(HubError) as refused:
            await HubClient(url, "http://127.0.0.1:1", "t").check()
        assert "certificate verify failed" in str(refused.value)
        assert "name a PEM file with the CA's certificate in SSL_CERT_FILE in the orchestrator's environment" \
            in str(refused.value)
        # As advised: the hub's certificate trusted, the check goes on to what the token may do.
        trusted = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", CHECK_HUB, url], capture_output=True,
                                          text=True, timeout=30, env={**os.environ, "SSL_CERT_FILE": str(cert)})
        assert "lacks the scope(s) list:users" in trusted.stdout and "certificate" not in trusted.stdout, trusted
    finally:
        server.stop()


@pytest.mark.parametrize("api_path, said", [("/hub/api", "404"), ("/jhub", "a web page")])
async def test_a_hub_api_url_past_the_hubs_base_url_is_one_line_saying_where_the_api_is(api_path, said):
    """A hub at base_url /jhub/ given as http://hub:8081/hub/api answers its 404 page (or, without
    /hub/api, its login page): the whole HTML page was the "one line" of the start's error, and nothing
    said the base_url was missing; a page answering 200 was even taken for the API."""
    from tornado import httpserver, web

    from elastichub.demo.stage import free_port
    from elastichub.orchestrator.hub import HubClient, HubError

    page = "\n<!DOCTYPE HTML>\n<html lang='en'>\n  <head>\n    <title>JupyterHub</title>\n  </head>\n</html>\n"

    class Hub(web.RequestHandler):  # as JupyterHub answers where it serves no API: an HTML page
        def get(self, path):
            if not path.startswith("/jhub"):
                self.set_status(404)
            self.write(page)

    server = httpserver.HTTPServer(web.Application([(r"(.*)", Hub)]))
    port = free_port()
    server.listen(port, "127.0.0.1")
    try:
        with pytest.raises(HubError) as refused:
            await HubClient(f"http://127.0.0.1:{port}{api_path}", "http://127.0.0.1:1", "t").check()
    finally:
        server.stop()
    assert str(refused.value) == (f"no JupyterHub API at http://127.0.0.1:{port}{api_path}/ (it answers {said}): the "
                                  "hub serves it under its base_url, at BASE_URL/hub/api (e.g. http://hub:8081/jhub/"
                                  "hub/api for base_url '/jhub/'), as JUPYTERHUB_API_URL gives it to a managed service")


async def test_a_proxy_url_where_nothing_answers_is_named_at_start():
    """Run in the hub's pod with proxy_url left at its default (127.0.0.1:8000, where no proxy is), the
    orchestrator started without a word, scaled out, and every drain then cordoned a node to reach no
    kernel at all. A proxy that answers is not judged: it may not route to the hub yet."""
    from tornado import httpserver, web

    from elastichub.demo.stage import free_port
    from elastichub.orchestrator.hub import HubClient

    class Proxy(web.RequestHandler):  # configurable-http-proxy before the hub has added its routes
        def get(self, path):
            self.set_status(404)

    server = httpserver.HTTPServer(web.Application([(r"(.*)", Proxy)]))
    port, nowhere = free_port(), free_port()
    server.listen(port, "127.0.0.1")
    api = "http://hub.internal:8081/jhub/hub/api"
    try:
        assert await HubClient(api, f"http://127.0.0.1:{port}", "t").proxy_problem() is None
        said = await HubClient(api, f"http://127.0.0.1:{nowhere}", "t").proxy_problem()
    finally:
        server.stop()
    assert said.startswith(f"ElasticOrchestrator.proxy_url http://127.0.0.1:{nowhere}: nothing answers there (GET "
                           f"http://127.0.0.1:{nowhere}/jhub/hub/api/: ")
    assert said.endswith("users' servers are reached through the hub's proxy, so no server can be moved: set it "
                         "to where the proxy serves /user/ (zero-to-jupyterhub: http://proxy-public, or "
                         "http://proxy-http:8000 with autohttps; or $ELASTICHUB_PROXY_URL)") and "\n" not in said


async def test_under_subdomain_host_each_server_is_asked_at_its_own_host_through_the_proxy():
    """c.JupyterHub.subdomain_host: the hub's URL of a server is a whole URL at a host of its user's
    (http://alice.hub.example.org/user/alice/), and the proxy routes by Host and path. The orchestrator
    glued that URL to proxy_url (http://127.0.0.1:PORThttp://alice...): no kernel list, checkpoint or
    live move reached a server, and a live move's destination was asked at http://IP:PORT/http:/alice...
    Each request now goes to proxy_url (or the pod) with the server's path, naming its host."""
    from tornado import httpserver, web

    from elastichub.demo.stage import free_port
    from elastichub.orchestrator.hub import HubClient, parse_server
    from elastichub.orchestrator.live import pod_base

    seen = []

    class Proxy(web.RequestHandler):  # as configurable-http-proxy --host-routing routes: Host, then path
        def _answer(self, path):
            host = self.request.host.split(":")[0]
            seen.append((host, path))
            if path.startswith("/hub/api/users/alice/tokens"):
                self.set_status(201)
                self.finish({"token": "alice-server-token"})
            elif host == "alice.hub.example.org" and path.startswith("/user/alice/"):
                self.finish(json.dumps({"kernels": []} if path.endswith("/status") else []))
            else:  # the hub's default route: its 404 page
                self.set_status(404)
                self.finish("<html>404 Not Found</html>")

        get = post = _answer

    server = httpserver.HTTPServer(web.Application([(r"(.*)", Proxy)]))
    port = free_port()
    server.listen(port, "127.0.0.1")
    client = HubClient(f"http://127.0.0.1:{port}/hub/api", f"http://127.0.0.1:{port}", "service-token")
    alice = parse_server("alice", "", {"ready": True, "url": "http://alice.hub.example.org/user/alice/"})
    try:
        assert await client.kernels(alice) == []
        assert (await client.checkpoint(alice, 10)).ok
        assert await client.server_call(client.proxy_base(alice), "GET", "/api/elastichub/status",
                                        owner=("alice", "")) == {"kernels": []}
    finally:
        server.stop()
        await client.close()
    assert [s for s in seen if not s[1].startswith("/hub/")] == [
        ("alice.hub.example.org", "/user/alice/api/kernels"),
        ("alice.hub.example.org", "/user/alice/api/elastichub/checkpoint"),
        ("alice.hub.example.org", "/user/alice/api/elastichub/status")]
    pod = {"status": {"podIP": "10.0.0.7"}, "spec": {"containers": [{"ports": [
        {"name": "notebook-port", "containerPort": 8888}]}]}}
    assert pod_base(pod, alice.url) == "http://10.0.0.7:8888/user/alice/"  # a live move's record holds the URL
