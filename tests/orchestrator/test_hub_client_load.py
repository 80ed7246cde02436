"""The orchestrator's hub client under load: a drain, the pre-drain check and the re-reads of unmovable
servers each ask a few servers at once (fanout.py), and together they ask more than tornado's
process-wide client serves at a time (ten): the rest queued, and one that waited past its connect
timeout failed. Against a real tornado server that answers no request before all have arrived."""

from __future__ import annotations

import asyncio

import pytest
from tornado import httpserver, web

from elastichub.demo.stage import free_port
from elastichub.orchestrator.hub import HubClient, HubServer

pytestmark = [pytest.mark.timeout(60)]
USERS = 8  # each asked three ways at once: 24 calls in flight together
ALL_IN = 5.0  # how long a request waits for the others before the server gives up (503)


class Together:
    """Holds every request it counts until `expected` have arrived."""

    def __init__(self, expected: int):
        self.expected, self.arrived, self.all_in = expected, 0, asyncio.Event()

    async def arrive(self) -> bool:
        self.arrived += 1
        if self.arrived >= self.expected:
            self.all_in.set()
        try:
            async with asyncio.timeout(ALL_IN):
                await self.all_in.wait()
        except TimeoutError:
            return False
        return True


def app(together: Together) -> web.Application:
    class Held(web.RequestHandler):
        async def answer(self, body):
            if not await together.arrive():
                self.set_status(503)
                self.finish({"message": f"only {together.arrived} of {together.expected} requests arrived"})
            else:
                self.finish(body)

    class User(Held):  # GET /hub/api/users/NAME: the hub's model
        async def get(self, name):
            await self.answer({"name": name, "servers": {"": {"ready": True, "url": f"/user/{name}/"}}})

    class Token(web.RequestHandler):  # POST /hub/api/users/NAME/tokens: answered at once
        def post(self, name):
            self.set_status(201)
            self.finish({"token": f"token-of-{name}"})

    class Kernels(Held):  # the single-user server, through the proxy
        async def get(self, name):
            await self.answer(b'[{"id": "k", "execution_state": "idle"}]')

    class Status(Held):
        async def get(self, name):
            await self.answer({"kernels": [], "user": name})

    return web.Application([(r"/hub/api/users/([^/]+)", User), (r"/hub/api/users/([^/]+)/tokens", Token),
                            (r"/user/([^/]+)/api/kernels", Kernels),
                            (r"/user/([^/]+)/api/elastichub/status", Status)])


async def test_more_calls_at_once_than_tornados_shared_client_serves_all_succeed():
    together = Together(3 * USERS)
    server = httpserver.HTTPServer(app(together))
    port = free_port()
    server.listen(port, "127.0.0.1")
    base = f"http://127.0.0.1:{port}"
    hub = HubClient(f"{base}/hub/api", base, "service-token")
    users = [f"user{i}" for i in range(USERS)]
    servers = [HubServer(u, "", True, None, f"/user/{u}/", {}, None, None) for u in users]
    for s in servers:  # minted first: the tokens are not what is tested
        await hub.server_token(s.user, s.name)
    try:
        answers = await asyncio.gather(
            *(hub.server(u, "") for u in users),  # a drain's and the unmovable re-reads' look at the hub
            *(hub.kernels(s) for s in servers),  # a drain's wait for idle kernels
            *(hub.server_call(hub.proxy_base(s), "GET", "/api/elastichub/status", owner=(s.user, s.name))
              for s in servers),  # the pre-drain check
            return_exceptions=True)
    finally:
        server.stop()
        await hub.close()
    failed = [a for a in answers if isinstance(a, BaseException)]
    assert not failed, failed
    assert [a.ready for a in answers[:USERS]] == [True] * USERS
    assert answers[USERS] == [{"id": "k", "execution_state": "idle"}]
    assert answers[-1] == {"kernels": [], "user": users[-1]}
