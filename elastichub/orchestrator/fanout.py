"""The same hub calls for each server of a node, a few servers at a time.

A cloud node holds 30-60 servers, and a busy hub answers each REST call in
0.2-2 s. One by one, asking each server something before a drain took
minutes (30 servers x 4 calls x 2 s); all at once, the calls queued in the
hub client's HTTP client (hub.HTTP_MAX_CLIENTS requests at a time), where one
that waits for its turn longer than its connect timeout fails: the servers
late in the queue went unasked. `HUB_FANOUT` servers at a time keep the hub's
queue short and leave that client room for the other fan-outs running.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

HUB_FANOUT = 4  # servers asked at once (each one's calls follow each other)


async def each(fn: Callable[[T], Awaitable[R]], items: Iterable[T], limit: int = HUB_FANOUT) -> list[R]:
    """`fn(item)` for every item, at most `limit` at once; the results in the items' order. The first
    exception cancels the calls still running and is raised, as from one call."""
    items = list(items)
    results: list = [None] * len(items)
    turns = iter(enumerate(items))  # shared: each worker takes the next item

    async def worker() -> None:
        for i, item in turns:
            results[i] = await fn(item)

    workers = [asyncio.ensure_future(worker()) for _ in range(min(max(limit, 1), len(items)))]
    try:
        if workers:
            await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
        for w in workers:
            if w.done() and not w.cancelled() and w.exception() is not None:
                raise w.exception()
    finally:
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    return results
