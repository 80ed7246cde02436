"""Ask a running single-user server to checkpoint its kernels.

The endpoint is the Elastic Python kernel's server extension
(``POST <server url>api/elastichub/checkpoint``, see
kernel/elastichub_kernel/serverext.py): it answers a JSON list, one result
per running kernel. The spawner calls it before a stop, the orchestrator
before it asks the hub to stop a server it moves: both use this module, so
both read an answer the same way.

Outcomes:

``saved``
    every kernel answered ok and at least one holds variables: a checkpoint
    is on disk (written now, or confirmed unchanged since the last one).
``nothing-to-save``
    no kernel runs, or every kernel's namespace is empty.
``unsupported``
    the server has no checkpoint endpoint (404: the kernel package is not
    installed there): stop it as KubeSpawner would.
``failed``
    anything else, with the reason (a kernel that could not checkpoint, a
    stock kernel, a timeout, an error status, an answer we do not understand).
    The kernels that did save are counted all the same (`kernels`, `bytes`,
    `unsaved`: a notebook on a stock kernel next to Elastic ones).
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

SAVED, NOTHING_TO_SAVE, UNSUPPORTED, FAILED = "saved", "nothing-to-save", "unsupported", "failed"
STATUSES = (SAVED, NOTHING_TO_SAVE, UNSUPPORTED, FAILED)
ENDPOINT = "api/elastichub/checkpoint"


@dataclasses.dataclass(frozen=True)
class CheckpointOutcome:
    """What one checkpoint request came to (JSON-able: it goes into the
    spawner's state and the orchestrator's records)."""

    status: str
    kernels: int = 0  # kernels whose variables are on disk
    bytes: int = 0  # their checkpoints' size
    seconds: float = 0.0  # the request's wall time
    unchanged: int = 0  # of `kernels`, those confirmed rather than rewritten
    not_restorable: tuple[str, ...] = ()  # variables a kernel said it cannot bring back
    reason: str = ""  # why, for unsupported / failed
    at: float = 0.0  # when (Unix time)
    unsaved: int = 0  # kernels that answered and could not checkpoint (failed)
    warnings: tuple[str, ...] = ()  # what kernels that saved asked to be told (e.g. two kernels, one notebook)

    @property
    def ok(self) -> bool:
        """The server's state is safe to stop: saved, or there was none."""
        return self.status in (SAVED, NOTHING_TO_SAVE)

    def summary(self) -> str:
        """One line for a log."""
        if self.status == SAVED:
            return (f"saved: {self.kernels} kernel(s), {self.bytes} bytes in {self.seconds:.2f} s"
                    + (f", {self.unchanged} unchanged" if self.unchanged else "")
                    + (f", not restorable: {', '.join(self.not_restorable)}" if self.not_restorable else "")
                    + "".join(f"; {w}" for w in self.warnings))
        saved = f" ({self.kernels} other kernel(s) saved, {self.bytes} bytes)" if self.kernels else ""
        return self.status + (f": {self.reason}" if self.reason else "") + saved

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "not_restorable": list(self.not_restorable),
                "warnings": list(self.warnings)}

    @classmethod
    def from_dict(cls, data: Any) -> "CheckpointOutcome | None":
        """The outcome recorded in `data`, or None when it is not one (a
        state written by another version must never break a load)."""
        if not isinstance(data, dict) or data.get("status") not in STATUSES:
            return None
        try:
            return cls(status=data["status"], kernels=int(data.get("kernels", 0)),
                       bytes=int(data.get("bytes", 0)), seconds=float(data.get("seconds", 0.0)),
                       unchanged=int(data.get("unchanged", 0)),
                       not_restorable=tuple(str(n) for n in data.get("not_restorable", ())),
                       reason=str(data.get("reason", "")), at=float(data.get("at", 0.0)),
                       unsaved=int(data.get("unsaved", 0)),
                       warnings=tuple(str(w) for w in data.get("warnings") or () if isinstance(w, str)))
        except (TypeError, ValueError):
            return None


def classify_answer(code: int, body: bytes | str, seconds: float = 0.0, at: float = 0.0) -> CheckpointOutcome:
    """Turn the endpoint's HTTP answer into an outcome (pure)."""
    if code == 404:
        return CheckpointOutcome(UNSUPPORTED, seconds=seconds, at=at,
                                 reason="the server has no checkpoint endpoint (the Elastic Python kernel "
                                        "package is not installed in its image)")
    if code != 200:
        text = body.decode(errors="replace") if isinstance(body, bytes) else str(body)
        return CheckpointOutcome(FAILED, seconds=seconds, at=at,
                                 reason=f"the checkpoint endpoint answered HTTP {code}: {_message(text)}")
    try:
        results = json.loads(body)
    except ValueError:
        results = None
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        return CheckpointOutcome(FAILED, seconds=seconds, at=at,
                                 reason="the checkpoint endpoint's answer is not a JSON list of kernel results")
    failures = [r for r in results if r.get("ok") is not True]
    holding = [r for r in results if r.get("ok") is True and (r.get("migrated") or r.get("recomputed"))]
    try:
        nbytes = sum(int(r.get("bytes", 0)) for r in holding)
    except (TypeError, ValueError):
        return CheckpointOutcome(FAILED, seconds=seconds, at=at, reason="a kernel result's 'bytes' is not a number")
    lost = tuple(one_line(v.get("name")) for r in holding for v in (r.get("not_restorable") or ())
                 if isinstance(v, dict))
    warnings = tuple(one_line(r["warning"]) for r in holding if r.get("warning"))
    counted = dict(kernels=len(holding), bytes=nbytes, seconds=seconds, at=at, not_restorable=lost,
                   unchanged=sum(1 for r in holding if r.get("unchanged")), warnings=warnings)
    if failures:
        return CheckpointOutcome(FAILED, unsaved=len(failures), **counted, reason="; ".join(
            f"kernel {one_line(r.get('kernel_id'))}: {one_line(r.get('error') or 'no ok in its result')}"
            for r in failures))
    if not holding:
        return CheckpointOutcome(NOTHING_TO_SAVE, seconds=seconds, at=at,
                                 reason="no kernel running" if not results else "no variables in any kernel")
    return CheckpointOutcome(SAVED, **counted)


def one_line(value: Any, limit: int = 500) -> str:
    """Text a user's server sent, fit for a log line: the student controls
    that server, and a newline in its answer would add a line of their
    choosing to the hub's log (which `elastichub trace` reads as servers
    starting and stopping). Unprintable characters become spaces."""
    text = " ".join("".join(c if c.isprintable() else " " for c in str(value)).split())
    return text if len(text) <= limit else text[:limit] + "..."


def _message(text: str) -> str:
    """Jupyter's JSON error body says it in "message"; otherwise the start of the text."""
    try:
        data = json.loads(text)
        if isinstance(data, dict) and data.get("message"):
            return one_line(data["message"])
    except ValueError:
        pass
    return one_line(text, 200) or "(empty body)"


async def request_checkpoint(http_client: AsyncHTTPClient, server_url: str, token: str,
                             timeout: float, hold_s: float | None = None, *, ssl_options=None,
                             host: str = "") -> CheckpointOutcome:
    """POST the checkpoint request to the single-user server at `server_url`
    (its base URL, ending in "/": ``http://10.0.0.5:8888/user/alice/``
    directly, or ``https://hub.example.org/user/alice/`` through the proxy),
    authorized with `token` (one with access to that server). `hold_s`: a
    restart move's, each kernel then holds new cells until the stop (at most
    that long); an extension too old for it is asked without. Never raises:
    a network error or the `timeout` (seconds) is a ``failed`` outcome.
    `ssl_options`: a client certificate's context (JupyterHub's internal_ssl).
    `host`: the Host header, a user's subdomain asked of the proxy (c.JupyterHub.subdomain_host)."""
    url = server_url.rstrip("/") + "/" + ENDPOINT
    at, started = time.time(), time.monotonic()

    headers = {"Authorization": f"token {token}", "Content-Type": "application/json"} | ({"Host": host} if host else {})

    def request(body: dict) -> HTTPRequest:
        return HTTPRequest(url, method="POST", body=json.dumps(body), headers=headers,
            connect_timeout=min(timeout, 20.0), request_timeout=timeout, follow_redirects=False,
            ssl_options=ssl_options)
    try:
        resp = await http_client.fetch(request({} if hold_s is None else {"hold_s": hold_s}), raise_error=False)
        if hold_s is not None and resp.code == 400 and b"hold_s" in (resp.body or b""):
            resp = await http_client.fetch(request({}), raise_error=False)
    except HTTPClientError as e:  # 599: timeouts and the like
        return CheckpointOutcome(FAILED, seconds=time.monotonic() - started, at=at,
                                 reason=f"no answer from {url} within {timeout:g} s ({e.message})"
                                 if e.code == 599 else f"{url}: {e}")
    except OSError as e:
        return CheckpointOutcome(FAILED, seconds=time.monotonic() - started, at=at,
                                 reason=f"cannot reach {url}: {e}")
    return classify_answer(resp.code, resp.body or b"", seconds=round(time.monotonic() - started, 3), at=at)
