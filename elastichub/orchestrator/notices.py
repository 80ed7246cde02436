"""What a user whose server waits for room is told, and when.

The hub's spawn page shows the Kubernetes Events of the server's pod, so
the orchestrator writes one there: the scheduler's "0/9 nodes are
available: 9 Insufficient memory" becomes "a cloud node is starting for
this server; the node should be ready in about 4 min". Pure: the
controller sends what `notices` returns, once per pod and situation (not
every cycle as the estimate ticks down).
"""

from __future__ import annotations

import statistics
from typing import Container, Iterable

from ..policy import ClusterSnapshot, NodeStatus, Tier
from .records import PodRecord

REASON = "ElasticHubWaiting"
BOOTING = "booting:"  # a situation: "booting:NODE,NODE[:late]"


def boot_estimate(measured: Iterable[float], fallback: float | None) -> float | None:
    """Seconds a cloud node takes to be Ready: the median of the last boots
    seen here, else the strategy's figure (None: say no time)."""
    measured = list(measured)
    return statistics.median(measured) if measured else fallback


def _boots_lost(situation: str, failed: Container[str], booting: list[str]) -> list[str]:
    """The nodes a pod was told were starting (its last `situation`) whose boot failed since."""
    if not situation.startswith(BOOTING):
        return []
    named = situation[len(BOOTING):].split(":")[0].split(",")
    return [n for n in named if n in failed and n not in booting]


def _boot_failed_message(lost: list[str], then: str) -> str:
    which = f"cloud node {lost[0]} was" if len(lost) == 1 else f"cloud nodes {', '.join(lost)} were"
    # What comes next is the usual notice, less its own "ElasticHub: "; none yet: the policy decides later.
    nxt = then.removeprefix("ElasticHub: ") if then else (
        "another node may be started, or this server waits for one to have room.")
    return (f"ElasticHub: {which} starting for the servers waiting but could not start (its boot failed). "
            f"{nxt[:1].upper()}{nxt[1:]} Keep this page open: the server starts by itself, there is nothing to do.")


def notices(snapshot: ClusterSnapshot, waiting: list[PodRecord], boot_started: dict[str, float],
            boot_s: float | None, now: float, told: dict[str, str],
            onprem_only: list[tuple[PodRecord, str]] = (),
            failed: Container[str] = ()) -> tuple[list[tuple[PodRecord, str]], dict]:
    """([(pod, message)] to send, the new `told`): `waiting` are the pods of
    the servers in the policy's queue, `onprem_only` those no cloud node
    can run, with why (observe: Kubernetes' words, "required node
    affinity", for the admin's status page, not the user); `told` maps a
    pod's key to the situation it was last told about; `failed`: the cloud
    nodes whose last boot failed (a pod told one was starting hears so)."""
    booting = sorted({n.name for n in snapshot.nodes if n.tier is Tier.CLOUD and n.status is NodeStatus.BOOTING}
                     | set(boot_started))
    clouds = [n for n in snapshot.nodes if n.tier is Tier.CLOUD]
    cloud_message = None  # what a server only cloud nodes take is told instead, when it differs
    if booting:
        situation = BOOTING + ",".join(booting)
        starts = [boot_started[n] for n in booting if n in boot_started]
        eta = ""
        if boot_s is not None and starts:
            left = min(starts) + boot_s - now
            if left > 0:
                # The node's boot, not the server's start (its image, its own start follow): said so.
                first = "the node" if len(booting) == 1 else "the first node"
                eta = f" ({first} should be ready in about {max(round(left / 60), 1)} min)"
            else:  # no time is known: "about 1 min" told a user 10 minutes into a slow boot it was nearly over
                eta = f" ({'the node is' if len(booting) == 1 else 'the nodes are'} taking longer than usual to start)"
                situation += ":late"  # told again: the time a user was given has passed
        which = (f"cloud node {booting[0]} is starting" if len(booting) == 1
                 else f"cloud nodes {', '.join(booting)} are starting")
        message = (f"ElasticHub: the on-premises nodes are full, so {which} for the servers waiting; "
                   f"this server starts as soon as there is room{eta}.")
        # a profile or a hub-wide node selector only cloud nodes match: on-prem may have room, it is no help
        cloud_message = (f"ElasticHub: this server runs on cloud nodes only (its settings), and {which}; it "
                         f"starts as soon as there is room{eta}.")
    elif not any(n.status is NodeStatus.STOPPED for n in clouds):
        situation = "full"
        message = ("ElasticHub: every node is full" + (", cloud nodes included" if clouds else "")
                   + "; this server starts as soon as another server stops.")  # "another one" read as a node
    else:
        situation, message = "", ""  # the policy may still start a node for it: nothing to say yet
    cloud_only = {s.name for s in snapshot.pending if s.cloud_only}
    out, now_told = [], {}
    for pod in waiting:
        said = cloud_message if cloud_message and pod.server in cloud_only else message
        lost = _boots_lost(told.get(pod.key, ""), failed, booting)
        if lost:
            # Told a node was starting for it, which will not come: said at once, not left to the next situation
            # (none comes while the failed node's back-off keeps the policy from starting it again).
            now_told[pod.key] = situation or f"failed:{','.join(lost)}"
            out.append((pod, _boot_failed_message(lost, said)))
            continue
        now_told[pod.key] = situation or told.get(pod.key, "")
        if situation and told.get(pod.key) != situation:
            out.append((pod, said))
    for pod, _ in onprem_only:
        now_told[pod.key] = "on-prem only"
        if told.get(pod.key) != "on-prem only":
            out.append((pod, "ElasticHub: this server can run only on some of the on-premises nodes (its settings), "
                             "not on cloud nodes, and those are full; it starts as soon as one of them has room."))
    return out, now_told
