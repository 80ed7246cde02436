"""The orchestrator calls a student's server with a token that reaches that
one server, never with the service's own: the student's server (its code, an
extension the student installs in their home) sees every request's headers,
and the service's token reaches every user's server and stops and starts them."""

import json

import pytest
from tornado import web
from tornado.httpserver import HTTPServer
from tornado.testing import bind_unused_port

from elastichub.orchestrator.hub import HubClient, HubError, HubServer

SERVICE_TOKEN = "service-secret"


class _Hub:
    """The hub's token API and the users' servers behind the proxy, on one port."""

    def __init__(self, refuse: bool = False, expires_in_max: int = 0):
        self.minted: list[tuple[str, dict, str]] = []  # (user, body, token)
        self.seen: list[tuple[str, str]] = []  # (path, Authorization) of each call to a server
        self.refuse = refuse
        self.revoked: set[str] = set()  # Authorization headers the servers refuse
        self.expires_in_max = expires_in_max  # c.JupyterHub.token_expires_in_max_seconds

    def app(self) -> web.Application:
        hub = self

        class Tokens(web.RequestHandler):
            def post(self, user):
                assert self.request.headers["Authorization"] == f"token {SERVICE_TOKEN}"
                if hub.refuse:
                    self.set_status(403)
                    self.finish({"status": 403, "message": "Service orchestrator not found or no permissions "
                                                            "to generate tokens"})
                    return
                body = json.loads(self.request.body)
                if hub.expires_in_max and body["expires_in"] > hub.expires_in_max:
                    self.set_status(400)  # JupyterHub 5's answer, word for word
                    self.finish({"status": 400, "message": f"token expires_in: {body['expires_in']} must not exceed "
                                                            f"{hub.expires_in_max}"})
                    return
                token = f"user-token-{len(hub.minted)}"
                hub.minted.append((user, body, token))
                self.set_status(201)
                self.finish({"id": f"a{len(hub.minted)}", "token": token})

        class Server(web.RequestHandler):
            def _answer(self, path):
                auth = self.request.headers.get("Authorization", "")
                hub.seen.append((path, auth))
                self.set_header("Content-Type", "application/json")
                if auth in hub.revoked:
                    self.set_status(403)
                    self.finish({"message": "Forbidden"})
                else:
                    self.finish("[]")

            get = post = _answer

        return web.Application([(r"/hub/api/users/([^/]+)/tokens", Tokens), (r"(/user/.*)", Server)])


@pytest.fixture
async def hub_at():
    servers = []

    async def start(hub: _Hub) -> HubClient:
        sock, port = bind_unused_port()
        server = HTTPServer(hub.app())
        server.add_sockets([sock])
        servers.append(server)
        return HubClient(f"http://127.0.0.1:{port}/hub/api", f"http://127.0.0.1:{port}", SERVICE_TOKEN)

    yield start
    for server in servers:
        server.stop()


def _server(user: str, name: str = "") -> HubServer:
    url = f"/user/{user}/{name}/" if name else f"/user/{user}/"
    return HubServer(user, name, True, None, url, {}, None, None)


async def test_every_call_to_a_server_carries_a_token_for_that_server_only(hub_at):
    hub = _Hub()
    client = await hub_at(hub)
    alice, bob_gpu = _server("alice"), _server("bob", "gpu")
    await client.kernels(alice)
    await client.checkpoint(alice, 10)
    await client.server_call(client.proxy_base(alice), "GET", "/api/sessions", owner=("alice", ""))
    await client.kernels(bob_gpu)
    assert [(user, body["scopes"]) for user, body, _ in hub.minted] == [
        ("alice", ["access:servers!server=alice/"]), ("bob", ["access:servers!server=bob/gpu"])]
    assert all(isinstance(body.get("expires_in"), int) and body["expires_in"] > 0 for _, body, _ in hub.minted)
    assert SERVICE_TOKEN not in " ".join(auth for _, auth in hub.seen), "the service's token went to a user's server"
    assert hub.seen == [("/user/alice/api/kernels", "token user-token-0"),
                        ("/user/alice/api/elastichub/checkpoint", "token user-token-0"),
                        ("/user/alice/api/sessions", "token user-token-0"),
                        ("/user/bob/gpu/api/kernels", "token user-token-1")]


async def test_a_role_that_may_not_mint_tokens_is_named_and_nothing_reaches_the_server(hub_at):
    hub = _Hub(refuse=True)
    client = await hub_at(hub)
    with pytest.raises(HubError, match="needs the scope tokens"):
        await client.kernels(_server("alice"))
    outcome = None
    with pytest.raises(HubError, match="cannot get a token for server alice/"):
        outcome = await client.checkpoint(_server("alice"), 10)
    assert outcome is None and hub.seen == []


async def test_a_token_the_server_refuses_is_minted_again_once(hub_at):
    """Its user revoked it on their token page (or the hub lost it): the cached token must not
    hold up the moves of that server until it is renewed an hour later."""
    hub = _Hub()
    client = await hub_at(hub)
    alice = _server("alice")
    await client.kernels(alice)
    hub.revoked = {"token user-token-0"}
    assert await client.server_call(client.proxy_base(alice), "GET", "/api/sessions", owner=("alice", "")) == []
    assert [token for _, _, token in hub.minted] == ["user-token-0", "user-token-1"]
    assert hub.seen[-2:] == [("/user/alice/api/sessions", "token user-token-0"),
                             ("/user/alice/api/sessions", "token user-token-1")]
    outcome = await client.checkpoint(alice, 10)  # a refused checkpoint gives the token up for the next try
    assert outcome.ok and hub.seen[-1] == ("/user/alice/api/elastichub/checkpoint", "token user-token-1")
    hub.revoked.add("token user-token-1")
    assert not (await client.checkpoint(alice, 10)).ok
    await client.kernels(alice)
    assert hub.seen[-1] == ("/user/alice/api/kernels", "token user-token-2")


async def test_a_hub_that_caps_token_lifetimes_gets_tokens_within_its_cap(hub_at):
    """c.JupyterHub.token_expires_in_max_seconds below the orchestrator's lifetime: the hub
    refuses the mint (400), which would fail every move of every server."""
    hub = _Hub(expires_in_max=1800)
    client = await hub_at(hub)
    await client.kernels(_server("alice"))
    await client.kernels(_server("bob"))
    assert [(user, body["expires_in"]) for user, body, _ in hub.minted] == [("alice", 1800), ("bob", 1800)]
    assert [path for path, _ in hub.seen] == ["/user/alice/api/kernels", "/user/bob/api/kernels"]


async def test_the_tokens_of_servers_gone_quiet_are_forgotten(hub_at):
    """A token past its renewal is never sent again: kept, the cache grew with every server the
    orchestrator ever called (thousands of users, a term of drains), each a live credential."""
    from elastichub.orchestrator.hub import SERVER_TOKEN_S

    hub, now = _Hub(), [0.0]
    client = await hub_at(hub)
    client.clock = lambda: now[0]
    for i in range(50):
        await client.kernels(_server(f"student{i}"))
    assert len(client._server_tokens) == 50
    now[0] = SERVER_TOKEN_S / 3 - 1
    await client.kernels(_server("student0"))  # still fresh: no new token, nothing forgotten
    assert len(hub.minted) == 50 and len(client._server_tokens) == 50
    now[0] = SERVER_TOKEN_S / 3 + 1
    await client.kernels(_server("late"))
    assert list(client._server_tokens) == [("late", "")]
    await client.kernels(_server("student1"))  # called again: a new token
    assert len(hub.minted) == 52 and hub.minted[-1][0] == "student1"


async def test_a_restart_moves_hold_is_ended_with_the_servers_token_and_a_refusal_only_logged(hub_at):
    """The drain lets held cells run (a cell waits, a terminal is in use); a server that refuses
    (stopping meanwhile) holds them until their lease ends: no error stops the move for it."""
    hub = _Hub()
    client = await hub_at(hub)
    alice = _server("alice")
    await client.end_hold(alice)
    assert hub.seen == [("/user/alice/api/elastichub/live", "token user-token-0")]
    hub.revoked = {"token user-token-0", "token user-token-1"}
    await client.end_hold(alice)  # refused twice (a new token too): logged, not raised
    assert [path for path, _ in hub.seen] == ["/user/alice/api/elastichub/live"] * 3
