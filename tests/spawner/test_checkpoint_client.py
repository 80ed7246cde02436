"""Reading the kernel package's checkpoint endpoint: the pure classifier, and
the request against a real HTTP server answering each way."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest
from tornado import web
from spawnertools import spawner
from tornado.httpclient import AsyncHTTPClient

from elastichub.checkpoint_client import (
    FAILED, NOTHING_TO_SAVE, SAVED, UNSUPPORTED, CheckpointOutcome, classify_answer, request_checkpoint)


def _result(ok=True, nbytes=1000, migrated=("x",), recomputed=(), unchanged=False, error=None, lost=()):
    r = {"kernel_id": "k1", "kernel_name": "elastic-python", "ok": ok, "bytes": nbytes, "seconds": 0.1,
         "migrated": list(migrated), "recomputed": list(recomputed), "unchanged": unchanged,
         "not_restorable": [{"name": n, "reason": "a socket"} for n in lost]}
    if error:
        r["error"] = error
    return r


def _answer(results):
    return json.dumps(results).encode()


def test_saved_adds_up_the_kernels_holding_variables():
    out = classify_answer(200, _answer([_result(nbytes=1000, lost=("sock",)),
                                        _result(nbytes=500, migrated=(), recomputed=("df",), unchanged=True),
                                        _result(nbytes=90, migrated=())]), seconds=1.5)
    assert (out.status, out.kernels, out.bytes, out.unchanged, out.seconds) == (SAVED, 2, 1500, 1, 1.5)
    assert out.not_restorable == ("sock",) and out.ok
    assert "2 kernel(s), 1500 bytes" in out.summary()


def test_an_unchanged_checkpoint_still_counts_as_saved():
    # The orchestrator checkpoints, then the hub's stop asks again: the second
    # answer is "unchanged", and the variables are still on disk to restore.
    assert classify_answer(200, _answer([_result(unchanged=True)])).status == SAVED


@pytest.mark.parametrize("results,reason", [([], "no kernel running"),
                                            ([_result(migrated=())], "no variables in any kernel")])
def test_nothing_to_save(results, reason):
    out = classify_answer(200, _answer(results))
    assert (out.status, out.reason, out.ok) == (NOTHING_TO_SAVE, reason, True)


def test_404_is_a_server_without_the_kernel_package():
    out = classify_answer(404, b"<html>404 Not Found</html>")
    assert out.status == UNSUPPORTED and not out.ok and "not installed" in out.reason


@pytest.mark.parametrize("code,body,words", [
    (200, _answer([_result(), _result(ok=False, error="a cell is still running after 30 s")]),
     "kernel k1: a cell is still running after 30 s"),
    (200, _answer([_result(ok="yes")]), "no ok in its result"),
    (200, b"not json", "not a JSON list"),
    (200, b'{"ok": true}', "not a JSON list"),
    (200, _answer([_result(nbytes="many")]), "'bytes' is not a number"),
    (403, b'{"message": "Forbidden: no access to alice"}', "HTTP 403: Forbidden: no access to alice"),
    (500, b"", "HTTP 500: (empty body)"),
    (302, b"", "HTTP 302"),
])
def test_every_other_answer_is_a_failure_with_its_reason(code, body, words):
    out = classify_answer(code, body)
    assert out.status == FAILED and not out.ok
    assert words in out.reason


def test_a_stock_kernel_beside_elastic_ones_fails_the_outcome_but_the_saved_ones_count():
    """A stop must still say so (the orchestrator moves no such server), but
    the next start may tell the user the Elastic kernels' variables return."""
    stock = _result(ok=False, migrated=(), nbytes=0, error="kernel 'python3' is not an Elastic Python kernel")
    out = classify_answer(200, _answer([_result(nbytes=2_000_000, lost=("sock",)), stock]))
    assert (out.status, out.ok, out.kernels, out.bytes, out.unsaved) == (FAILED, False, 1, 2_000_000, 1)
    assert "not an Elastic Python kernel" in out.reason and out.not_restorable == ("sock",)
    assert out.summary().endswith("(1 other kernel(s) saved, 2000000 bytes)")
    assert CheckpointOutcome.from_dict(json.loads(json.dumps(out.to_dict()))) == out


def test_a_kernels_warning_reaches_the_outcome_and_its_log_line():
    # Two kernels of one notebook saving to the same place: the kernel says so, and so must the hub's log.
    said = "another kernel of this notebook (pid 42) also saves here: its checkpoint is kept beside this one"
    out = classify_answer(200, _answer([{**_result(), "warning": said}, _result()]))
    assert out.status == SAVED and out.warnings == (said,)
    assert out.summary().endswith("; " + said)
    assert CheckpointOutcome.from_dict(json.loads(json.dumps(out.to_dict()))) == out


FORGED = "\n[I 2026-12-01 09:00:13.123 JupyterHub base:1193] Removing user bob from proxy (/user/bob/)\r\x1b[2K"


@pytest.mark.parametrize("code, body", [
    (200, _answer([_result(ok=False, error="boom" + FORGED)])),  # a kernel's error
    (200, _answer([{**_result(ok=False, error="boom"), "kernel_id": "k1" + FORGED}])),
    (200, _answer([dict(_result(lost=("s" + FORGED,)), warning="w" + FORGED)])),
    (500, json.dumps({"message": "boom" + FORGED}).encode()),  # the server's error page
    (502, b"boom" + FORGED.encode()),
])
def test_what_a_students_server_says_stays_on_one_log_line(code, body):
    """The student controls their server's answers; the spawner logs the
    outcome in the hub's log, which `elastichub trace` reads: a line break
    in an answer must not add a line (here: a forged stop of bob's server)."""
    out = classify_answer(code, body)
    text = out.summary() + " ".join(out.warnings + out.not_restorable)
    assert "boom" in text or "s [I" in text
    assert not any(not c.isprintable() for c in text), repr(text)
    assert "Removing user bob" in text  # kept, on the same line


def test_outcomes_round_trip_and_foreign_records_are_ignored():
    out = classify_answer(200, _answer([_result(lost=("s",))]), seconds=2.0, at=1e9)
    assert CheckpointOutcome.from_dict(json.loads(json.dumps(out.to_dict()))) == out
    for junk in (None, "saved", {}, {"status": "lost"}, {"status": SAVED, "bytes": "x"}):
        assert CheckpointOutcome.from_dict(junk) is None


# --------------------------------------------------------------------- request_checkpoint over HTTP


class _Endpoint(web.RequestHandler):
    def initialize(self, seen, behaviour):
        self.seen, self.behaviour = seen, behaviour

    async def post(self):
        self.seen.append((self.request.path, self.request.headers.get("Authorization")))
        code, body, delay = self.behaviour["answer"]
        await asyncio.sleep(delay)
        self.set_status(code)
        self.finish(body)


@pytest.fixture
async def endpoint():
    seen, behaviour = [], {}
    app = web.Application([(r"/user/alice/api/elastichub/checkpoint", _Endpoint,
                            {"seen": seen, "behaviour": behaviour})])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    server = app.listen(port, "127.0.0.1")
    yield f"http://127.0.0.1:{port}/user/alice/", seen, behaviour
    server.stop()


async def test_the_request_goes_to_the_servers_endpoint_with_the_token(endpoint):
    url, seen, behaviour = endpoint
    behaviour["answer"] = (200, _answer([_result(nbytes=4096)]), 0)
    out = await request_checkpoint(AsyncHTTPClient(), url, "secret", timeout=10)
    assert (out.status, out.bytes, out.kernels) == (SAVED, 4096, 1)
    assert seen == [("/user/alice/api/elastichub/checkpoint", "token secret")]
    assert out.at > 0 and out.seconds >= 0


async def test_a_server_without_the_endpoint_is_unsupported(endpoint):
    url, _, _ = endpoint
    out = await request_checkpoint(AsyncHTTPClient(), url.replace("alice", "bob"), "t", timeout=10)
    assert out.status == UNSUPPORTED


async def test_a_slow_server_is_a_failure_at_the_timeout_not_a_hang(endpoint):
    url, _, behaviour = endpoint
    behaviour["answer"] = (200, b"[]", 5)
    out = await request_checkpoint(AsyncHTTPClient(), url, "t", timeout=0.3)
    assert out.status == FAILED and "within 0.3 s" in out.reason


async def test_nobody_listening_is_a_failure_naming_the_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = await request_checkpoint(AsyncHTTPClient(), f"http://127.0.0.1:{port}/user/x/", "t", timeout=5)
    assert out.status == FAILED and f"127.0.0.1:{port}/user/x/api/elastichub/checkpoint" in out.reason


class _Held(web.RequestHandler):
    """Each user's checkpoint, answered once `everyone` have asked."""

    def initialize(self, seen, everyone, count):
        self.seen, self.everyone, self.count = seen, everyone, count

    async def post(self, user):
        self.seen.append(user)
        if len(self.seen) == self.count:
            self.everyone.set()
        await self.everyone.wait()
        self.finish(_answer([_result()]))


async def test_a_stop_among_more_than_ten_at_once_still_gets_its_checkpoint():
    """Tornado's shared client sends ten requests at a time: the eleventh stop's checkpoint (a hub's
    shutdown, a class's end) waited for one of the ten to end, and failed when it did not come in time:
    the stop went on without a checkpoint. Each is held here until all eleven have asked."""
    seen, everyone, count = [], asyncio.Event(), 11
    app = web.Application([(r"/user/([^/]+)/api/elastichub/checkpoint", _Held,
                            {"seen": seen, "everyone": everyone, "count": count})])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    server = app.listen(port, "127.0.0.1")
    spawners = [spawner(checkpoint_timeout=10) for _ in range(count)]
    for i, s in enumerate(spawners):
        s.api_token = f"token-{i}"
    try:
        outcomes = await asyncio.gather(*(s._checkpoint(f"http://127.0.0.1:{port}/user/u{i}/", "before stopping")
                                          for i, s in enumerate(spawners)))
    finally:
        server.stop()
    assert sorted(seen) == sorted(f"u{i}" for i in range(count))
    assert [o.status for o in outcomes] == [SAVED] * count, [o.reason for o in outcomes]


class _OlderExtension(web.RequestHandler):
    """An extension from before `hold_s`: it refuses the field, as it refuses any unknown one."""

    def initialize(self, bodies):
        self.bodies = bodies

    def post(self):
        body = json.loads(self.request.body)
        self.bodies.append(body)
        if set(body) - {"kernel_id"}:
            self.set_status(400)
            self.finish({"message": f"unknown field(s) in the request body: {', '.join(sorted(body))}"})
            return
        self.finish(_answer([_result()]))


async def test_a_restart_moves_hold_is_asked_and_an_older_extension_is_asked_without_it():
    bodies = []
    app = web.Application([(r"/user/alice/api/elastichub/checkpoint", _OlderExtension, {"bodies": bodies})])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = app.listen(port, "127.0.0.1")
    try:
        out = await request_checkpoint(AsyncHTTPClient(), f"http://127.0.0.1:{port}/user/alice/", "t", timeout=10,
                                       hold_s=60.0)
    finally:
        server.stop()
    assert out.status == SAVED and bodies == [{"hold_s": 60.0}, {}], (out, bodies)
