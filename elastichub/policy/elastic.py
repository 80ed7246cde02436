"""`elastic`: the default strategy, built from what the simulations show works.

Differences from the published policy (`paper`), each an option (measured
effects in docs/strategies.md):

- **Sized scale-out, not gated by the cooldown.** Every cycle it adds up the
  demand the cluster must carry — requests on active nodes, servers being
  drained off cordoned cloud nodes, the queue, and (with a calendar) the
  classes about to start — against the capacity it will have once the
  nodes already booting are Ready, and starts as many stopped cloud nodes
  as that demand plus a reserve needs on *every* resource, plus whatever
  the queued servers need to be placed at all (first-fit, so a big request
  is not lost in an aggregate). Booting nodes are counted, so the next
  cycle does not start them twice: a burst is answered within one boot.
- **A reserve sized on what it is for** (`reserve_basis`). Headroom exists
  to absorb the users who arrive while a new node boots. "arrivals" (the
  default): what users asked for within the last boot + tmon, capped at
  (100 - theta_out) % of the on-prem cluster; "onprem": always that cap;
  "all": the paper's eq. (2), theta_out % of every active node, so the
  reserve grows with each cloud node. Arrivals of a scheduled class are
  left out: the calendar already counts them, and they predict no trend.
  A moved (re-queued) server is no arrival: its `created_at` is when its
  user asked for it.
- **A standing reserve at low thresholds** (`standing_reserve`): with
  "arrivals", a share of the cap stands whatever the arrivals (a burst has
  no trend to foretell it): none from theta_out 90 up, linear below, and
  under 65 what it is at 65 (5/6), so lowering theta_out buys headroom as
  it does with the paper's policy.
- **Scale-in hysteresis:** a node goes only if the reserve left behind is
  the one of `theta_out - theta_in` (a gap of theta_in % of on-prem), with
  no queue, nothing booting and no drain still running; optionally only
  once that has held for `unneeded_s` and `delay_after_add_s` after a
  scale-out (Cluster Autoscaler's scale-down-unneeded-time and
  -delay-after-add). Both default to 0: they only cost node-hours in the
  simulations (booting nodes and the arrivals reserve keep a fresh node).
- **Lifetime-aware scale-in:** a server of age `a` has an expected remaining
  lifetime E[L - a | L > a] under the lifetime distribution (normal,
  `lifetime_mean_s`, `lifetime_sd_s`). A node whose servers will all be gone
  soon is left to empty by itself: draining pays only when the cloud
  node-seconds it saves (natural drain time, the longest expected remaining
  lifetime on it, minus the time the moves take) are at least `min_saving_s`
  (default: one boot time, what the replacement headroom would cost).
  Among nodes worth draining, the one with the fewest servers goes first
  (fewest users disturbed), then the one that saves most.
- **Thrift at high thresholds** (`thrift`, default from theta_out: none at
  80 and below, all of it from 90, linear between). A session of age `a`
  ends within `s` seconds with probability P(L <= a + s | L > a). What ends
  within one boot + tmon (times the thrift share) frees room no later than
  a node started now would, so scale-out *and* scale-in (the same
  departures on both sides, or a node drained now starts again a cycle
  later) plan the reserve against the demand that stays. A new request may
  wait up to `queue_patience_s` (default one boot times the thrift share)
  for room that sessions likely (p >= 1/2) to end soon free on its node
  (without migration: before the queue's patience left, on average, runs
  out), each session's room on its own (the scheduler hands freed room to
  whatever fits); past its patience, and for a moved server at once, it
  counts only on room that exists or boots. So nobody waits on purpose
  longer than the patience (1.5 patiences under `min_fill`) plus a boot.
- **Small remainders wait, without migration** (`min_fill`, default a
  quarter of the thrift share without migration, 0 with it). Without
  migration a cloud node stops only once its last session ends, so a node
  started for a few queued servers costs about a session lifetime, as a
  full one does, and catches every later arrival that on-prem cannot take.
  While what the queue still needs (after the rules above) is under that
  share of the node it would start, on every resource, it waits for
  departures instead, until someone queued has waited 1.5 patiences.

Pure: no I/O, no clock; `now` is whatever clock the caller's snapshot uses.
"""
from __future__ import annotations

import math
from math import fsum
from dataclasses import dataclass, field, replace
from functools import cached_property

from .calendar import ScheduledClass, reserved_demand
from .census import Census, take_census
from .lifetime import ending_within, expected_remaining_s
from .controller import STRATEGIES, Action, ControllerState, PolicyConfig, ScaleIn, ScaleOut, _check_number
from .model import ClusterSnapshot, Node, NodeStatus, Resources, Tier
from .packing import by_size, departure_slots, first_fit, fits_fraction, fits_with_reserve
from .placement import MigrationPlan, candidate_order, plan_migration

# Scale-in plans tried per cycle: the first few candidates decide it in
# practice, and this bounds a cycle's cost on a pool of hundreds of nodes.
MAX_CANDIDATES_TRIED = 8

RESERVE_BASES = ("arrivals", "onprem", "all")
STANDING_UP_TO, STANDING_SPAN, STANDING_MAX = 90.0, 30.0, 5 / 6  # standing reserve: none from 90, linear, at most 5/6
THRIFT_FROM, THRIFT_SPAN = 80.0, 10.0  # thrift: none up to theta_out 80, all of it from 90
MIN_FILL = 0.25  # no migration: a queue remainder under a quarter of a node waits (x thrift share)

_NONE = Resources()  # no calendar: nothing reserved


@dataclass(frozen=True)
class ElasticState(ControllerState):
    """`last_action_at` (kept for callers that read it) plus what the
    elastic rules remember between cycles."""

    last_scale_out_at: float | None = None
    last_scale_in_at: float | None = None
    draining: str | None = None  # cloud node we are emptying, until it stops
    unneeded_since: float | None = None  # scale-in conditions held since


@dataclass(slots=True)
class _Tally:
    demand: Resources  # active nodes' requests + drained servers + queue + reserved
    active_capacity: Resources
    booting_capacity: Resources
    base_capacity: Resources  # every on-prem node (the cluster theta_out was tuned for)
    inflow: Resources | None  # recent arrivals (see _inflow), computed on first use
    outflow: dict  # horizon -> expected departures within it (see _outflow), on first use
    active: list[Node]
    booting: list[Node]
    stopped: list[Node]  # cloud pool, by name
    active_cloud: int  # how many of `active` are cloud nodes
    snapshot: ClusterSnapshot
    now: float


def _not_unneeded(state: ElasticState) -> ElasticState:
    """`state` with the scale-in conditions' clock stopped; most cycles it
    already is, and building an equal copy every Tmon is measurable."""
    return state if state.unneeded_since is None else replace(state, unneeded_since=None)


@dataclass(frozen=True)
class ElasticStrategy:
    """See the module docstring. Every option is a plain value (traitlets
    and CLI options map onto them one to one)."""

    config: PolicyConfig = PolicyConfig()
    theta_in: float = 5.0  # percentage points below theta_out left after a scale-in
    delay_after_add_s: float | None = 0.0  # scale-in pause after a scale-out; None: config.tcool
    unneeded_s: float = 0.0  # scale-in conditions must hold this long first
    lifetime_aware: bool = True
    lifetime_mean_s: float = 3600.0  # the paper's server lifetime: mean 60 min
    lifetime_sd_s: float = 900.0  # SD 15 min
    migration_s: float = 16.6  # expected downtime of one move (paper: 11-22.2 s)
    min_saving_s: float | None = None  # cloud node-seconds a drain must save; None: boot_s
    schedule: tuple[ScheduledClass, ...] = ()
    boot_s: float = 290.0  # cloud boot time: how early a scheduled class needs its nodes
    lead_margin_s: float = 60.0  # extra lead before a class (boot-time jitter), on top of boot + tmon
    reserve_basis: str = "arrivals"  # "arrivals", "onprem" or "all": see _room_left
    # "arrivals": share of the (100 - theta) % cap kept at all times (bursts
    # come without a trend); None: derived from theta_out (standing_share)
    standing_reserve: float | None = None
    # share of thrift (0..1): how far scale-out counts on ending sessions and
    # lets new requests wait for them; None: derived from theta_out (thrift_share)
    thrift: float | None = None
    # how long a new request may wait for room that ending sessions free
    # before a node is started for it; None: boot_s times the thrift share
    queue_patience_s: float | None = None
    # share of a node (0..1) the queue's remainder must fill before a node is
    # started for it, until it has waited 1.5 patiences; None: a quarter of
    # the thrift share without migration, 0 with it (see fill_share)
    min_fill: float | None = None
    name: str = "elastic"
    # the last snapshot and its census (_census): a memo, no state
    _census_of: list = field(default_factory=lambda: [None, None], init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_number("theta_in", self.theta_in)
        for option in ("delay_after_add_s", "min_saving_s", "queue_patience_s"):
            if getattr(self, option) is not None:
                _check_number(option, getattr(self, option))
        for option in ("unneeded_s", "lifetime_mean_s", "lifetime_sd_s", "migration_s",
                       "boot_s", "lead_margin_s"):
            _check_number(option, getattr(self, option))
        if self.standing_reserve is not None:
            _check_number("standing_reserve", self.standing_reserve)
            if self.standing_reserve > 1:
                raise ValueError(f"standing_reserve is a share of the reserve cap, 0..1, got {self.standing_reserve!r}")
        for option in ("thrift", "min_fill"):
            value = getattr(self, option)
            if value is not None:
                _check_number(option, value)
                if value > 1:
                    raise ValueError(f"{option} is a share, 0..1, got {value!r}")
        if not isinstance(self.lifetime_aware, bool):  # "no" would be truthy: scale-in lifetime-aware after all
            raise ValueError(f"lifetime_aware must be True or False, got {self.lifetime_aware!r}")
        if self.reserve_basis not in RESERVE_BASES:
            raise ValueError(f"reserve_basis must be one of {', '.join(RESERVE_BASES)}, got {self.reserve_basis!r}")
        object.__setattr__(self, "schedule", tuple(self.schedule))
        for entry in self.schedule:
            if not isinstance(entry, ScheduledClass):
                raise ValueError(f"schedule entries must be ScheduledClass, got {entry!r}")

    @cached_property
    def delay_after_add(self) -> float:
        return self.config.tcool if self.delay_after_add_s is None else self.delay_after_add_s

    @cached_property
    def min_saving(self) -> float:
        """A drain must save at least one boot of node time by default: a
        node that empties sooner on its own costs less than the boot of the
        node that would replace it as headroom."""
        return self.boot_s if self.min_saving_s is None else self.min_saving_s

    @cached_property
    def standing_share(self) -> float:
        """Share of the reserve cap kept whatever the arrivals: an admin who
        sets theta_out low asks for headroom against bursts, which recent
        arrivals do not foretell. Default: none from theta_out 90 up, linear
        below, to 5/6 at 65 and no more below: the whole cap cost more than
        `paper` on teaching days (docs/strategies.md has the measurements)."""
        if self.standing_reserve is not None:
            return self.standing_reserve
        return min(max((STANDING_UP_TO - self.config.theta_out) / STANDING_SPAN, 0.0), STANDING_MAX)

    @cached_property
    def patience_s(self) -> float:
        """How long a new request may wait for room that ending sessions
        free instead of a node started for it: one boot times the thrift
        share (so nobody waits on purpose at theta_out 80 and below)."""
        if self.queue_patience_s is not None:
            return self.queue_patience_s
        return self.boot_s * self.thrift_share

    @cached_property
    def thrift_share(self) -> float:
        """How far the policy counts on ending sessions and lets new
        requests wait for them: none at theta_out 80 and below (the pre-issue
        12 rules: a queue is answered by nodes alone), all of it from 90 up,
        linear between. An admin who sets theta_out high asks for a full
        cluster; the paper's policy then makes users wait far longer than
        this (docs/strategies.md)."""
        if self.thrift is not None:
            return self.thrift
        return min(max((self.config.theta_out - THRIFT_FROM) / THRIFT_SPAN, 0.0), 1.0)

    @cached_property
    def fill_share(self) -> float:
        """Share of a node a queue remainder must fill to have a node started
        for it at once: a quarter of the thrift share without migration (a
        node stops only once its last session ends), 0 with it."""
        if self.min_fill is not None:
            return self.min_fill
        return 0.0 if self.config.migration else MIN_FILL * self.thrift_share

    @cached_property
    def soon_s(self) -> float:
        """Departures within this span count (scale-out and scale-in) as
        room that comes no later than a node started now would: one boot +
        tmon, scaled by the thrift share."""
        return self.thrift_share * (self.boot_s + self.config.tmon)

    @cached_property
    def scale_out_horizon_s(self) -> float:
        """... and within this one for a request that may still wait: one
        boot + tmon, plus the patience."""
        return self.soon_s + self.patience_s

    @cached_property
    def lead_s(self) -> float:
        """How long before a class starts its capacity must be asked for."""
        return self.boot_s + self.config.tmon + self.lead_margin_s

    # -- the cycle -------------------------------------------------------

    def decide(
        self, snapshot: ClusterSnapshot, state: ControllerState, now: float
    ) -> tuple[Action | None, ControllerState]:
        if not isinstance(state, ElasticState):
            state = ElasticState(last_action_at=state.last_action_at)
        if state.draining is not None and not self._still_draining(snapshot, state.draining):
            state = replace(state, draining=None)

        reserved = reserved_demand(self.schedule, snapshot, now, self.lead_s) if self.schedule else _NONE
        tally = self._tally(snapshot, reserved, now)
        if self.config.scale_out:
            wanted = self.nodes_to_start(snapshot, now, reserved, tally)
            if wanted is None:
                # more demand than the pool can ever meet: shrinking now
                # would only make users wait longer
                return None, _not_unneeded(state)
            if wanted:
                action = ScaleOut(
                    tuple(n.name for n in wanted),
                    reason=f"demand above {self.config.theta_out:g} % of the capacity once booted",
                )
                return action, replace(
                    state, last_action_at=now, last_scale_out_at=now, unneeded_since=None
                )

        plan = self._scale_in_plan(snapshot, state, now, tally)
        if plan is None:
            return None, _not_unneeded(state)
        if state.unneeded_since is None:
            state = replace(state, unneeded_since=now)
        if now - state.unneeded_since < self.unneeded_s:
            return None, state
        action = ScaleIn.from_plan(plan, reason=self._scale_in_reason(plan))
        return action, replace(
            state, last_action_at=now, last_scale_in_at=now, draining=plan.node, unneeded_since=None
        )

    # -- scale-out -------------------------------------------------------

    def _tally(self, snapshot: ClusterSnapshot, reserved: Resources, now: float) -> _Tally:
        """What every rule of a cycle needs, from one look at the nodes."""
        c = self._census(snapshot)
        demand = Resources(c.d_cpu + c.r_cpu + reserved.cpu, c.d_ram + c.r_ram + reserved.ram)
        return _Tally(demand, c.active_capacity, c.booting_capacity, c.base_capacity, None, {}, c.active,
                      c.booting, c.stopped, c.active_cloud, snapshot, now)

    def _census(self, snapshot: ClusterSnapshot) -> Census:
        """The part of the tally that depends on the snapshot alone, kept for
        the next cycle: a quiet hub (and the simulator, most Tmons) shows the
        same snapshot cycle after cycle. Every rule only reads it."""
        memo = self._census_of
        if memo[0] is not snapshot:
            memo[:] = snapshot, take_census(snapshot)
        return memo[1]

    def _inflow(self, snapshot: ClusterSnapshot, now: float) -> Resources:
        """What users are likely to ask for during one boot + tmon: what they
        asked for within the last boot + tmon (a node started now could not
        have served them). Servers without `created_at` count as old.
        Arrivals of a scheduled class are the calendar's business and no
        trend: their arrival windows are left out and the look-back is
        stretched by as long, so the estimate is the ordinary arrival rate."""
        span = self.boot_s + self.config.tmon
        windows = [(c.start_s, c.start_s + c.spread_s) for c in self.schedule
                   if c.start_s <= now and c.start_s + c.spread_s >= now - span - c.spread_s]
        since = now - span - sum(min(b, now) - a for a, b in windows)
        recent = [srv for n in snapshot.nodes for srv in n.servers
                  if srv.created_at is not None and srv.created_at >= since]
        recent += [srv for srv in snapshot.pending if srv.created_at is not None and srv.created_at >= since]
        cpu = ram = 0.0
        for srv in recent:
            if not (windows and any(a <= srv.created_at <= b for a, b in windows)):
                req = srv.requests
                cpu += req.cpu
                ram += req.ram
        return Resources(cpu, ram)

    def _outflow(self, t: _Tally, span: float) -> tuple[Resources, dict[str, list[Resources]]]:
        """What the servers now running will free within `span` seconds.
        In all: each request times the chance its session ends that soon,
        given how long it has run (an expectation: many sessions, so it
        holds on the whole). Per node: the request of each session *likely*
        (p >= 1/2) to end that soon, one by one, since a queued request
        needs its room on one node, where a few sessions decide, and room
        comes back a session at a time. Once per cycle and span."""
        known = t.outflow.get(span)
        if known is not None:
            return known
        per_node: dict[str, list[Resources]] = {}
        cpu = ram = 0.0
        mean, sd, now = self.lifetime_mean_s, self.lifetime_sd_s, t.now
        cordoned, cloud = NodeStatus.CORDONED, Tier.CLOUD
        for node in t.snapshot.nodes:
            # the servers `demand` counts: on active nodes and on cloud nodes being drained
            if node.status is NodeStatus.READY or (node.status is cordoned and node.tier is cloud):
                n_cpu = n_ram = 0.0
                likely = []
                for srv in node.servers:
                    age = 0.0 if srv.started_at is None else max(now - srv.started_at, 0.0)
                    p = ending_within(round(age), span, mean, sd)
                    if p:
                        req = srv.requests
                        n_cpu += p * req.cpu
                        n_ram += p * req.ram
                        if p >= 0.5:
                            likely.append(req)
                if likely:
                    likely.sort(key=lambda r: (-r.ram, -r.cpu))
                    per_node[node.name] = likely
                cpu += n_cpu
                ram += n_ram
        t.outflow[span] = known = (Resources(cpu, ram), per_node)
        return known

    def _room_left(self, demand: Resources, capacity: Resources, theta: float, t: _Tally,
                   horizon: float) -> bool:
        """Does `capacity` carry `demand` and keep the headroom theta (percent)
        asks for? `reserve_basis` "all": demand <= theta % of the capacity
        (the paper's eq. 2 over every active node, so the reserve grows with
        each cloud node); "onprem": a fixed reserve of (100 - theta) % of the
        on-prem cluster, whatever runs in the cloud; "arrivals": no more than
        the recent arrivals (plus the hysteresis gap below theta_out)."""
        if self.reserve_basis == "all":
            return fits_fraction(demand, capacity, theta / 100.0)
        share = max(1.0 - theta / 100.0, 0.0)
        reserve = Resources(share * t.base_capacity.cpu, share * t.base_capacity.ram)
        if self.reserve_basis == "arrivals":
            # no more than recent arrivals, plus the hysteresis gap when
            # theta is the scale-in level (below theta_out). The bounds
            # decide most cycles without counting the arrivals.
            if fits_with_reserve(demand, capacity, reserve):
                return True
            # the standing share holds against demand as it is now (a burst
            # needs its room at once); arrivals only against what stays
            floor = self.standing_share
            if floor > 0 and not fits_with_reserve(demand, capacity, Resources(floor * reserve.cpu,
                                                                                 floor * reserve.ram)):
                return False
            if t.inflow is None:
                t.inflow = self._inflow(t.snapshot, t.now)
            # The gap never exceeds what runs: on a hub of cloud nodes only
            # (the base is one of them) an idle hub keeps no node for it.
            gap = max(self.config.theta_out - theta, 0.0) / 100.0
            reserve = Resources(
                min(reserve.cpu, t.inflow.cpu + min(gap * t.base_capacity.cpu, demand.cpu)),
                min(reserve.ram, t.inflow.ram + min(gap * t.base_capacity.ram, demand.ram)),
            )
            if horizon > 0:
                # what ends within the horizon frees room no later than a
                # node started now would (or the queue may wait): the
                # demand to plan for is what stays
                reserve = reserve - self._outflow(t, horizon)[0]
        return fits_with_reserve(demand, capacity, reserve)

    def nodes_to_start(self, snapshot: ClusterSnapshot, now: float, reserved: Resources = Resources(),
                       tally: _Tally | None = None) -> list[Node] | None:
        """Stopped cloud nodes to start now ([] for none). None when the
        demand needs more than the pool has left (every stopped node is
        started first: None comes only once the pool is empty)."""
        theta = self.config.theta_out
        if theta > 100.0:  # the paper's convention: a theta above 100 % never scales out
            return []
        t = tally or self._tally(snapshot, reserved, now)
        capacity = t.active_capacity + t.booting_capacity
        start: list[Node] = []
        pool = t.stopped

        # 1. queued servers must find a slot on nodes up or coming up. One
        # that may still wait (patience) may also count on sessions likely to
        # end soon; past it only on room that exists or boots (a session that
        # outlives its odds would keep it waiting with no bound).
        horizon = self.scale_out_horizon_s
        if snapshot.pending:
            nodes = t.active + t.booting
            free = [n.free for n in nodes]
            # Servers only a cloud node can run (a profile's node selector)
            # place first, on cloud room alone, and never wait on purpose:
            # on-prem room and departures there do nothing for them.
            only_cloud = [srv.requests for srv in snapshot.pending if srv.cloud_only]
            bound = []
            if only_cloud:
                cloud = [i for i, n in enumerate(nodes) if n.tier is Tier.CLOUD]
                slots = [free[i] for i in cloud]
                bound = first_fit(by_size(only_cloud), slots)
                for i, slot in zip(cloud, slots):
                    free[i] = slot
            urgent, patient, waited = self._split_queue([srv for srv in snapshot.pending if not srv.cloud_only], now)
            left = first_fit(by_size(urgent), free) if urgent else []
            if patient:  # a patience > 0, so a horizon > 0
                free = departure_slots(free, nodes, self._outflow(t, self._patient_horizon(waited / len(patient)))[1])
                left += first_fit(by_size(patient), free)
            if left and self._small_remainder(left, snapshot.pending, t.stopped, now):
                left = []
            left = sorted(left + bound, key=lambda g: (-g[0].ram, -g[0].cpu))
            pool = []
            for node in t.stopped:
                if left and any(req.fits_in(node.allocatable) for req, _ in left):
                    start.append(node)
                    capacity = capacity + node.allocatable
                    left = first_fit(left, [node.allocatable])
                else:
                    pool.append(node)  # not needed for the queue (or too small for it)

        # 2. every resource at or below theta_out once all of it is Ready
        i = 0
        while not self._room_left(t.demand, capacity, theta, t, horizon):
            if i == len(pool):
                return start if start else None
            start.append(pool[i])
            capacity = capacity + pool[i].allocatable
            i += 1
        return start

    def _small_remainder(self, left: list[list], pending, stopped: list[Node], now: float) -> bool:
        """Should the queue's `left` requests wait for departures rather than
        a node (`fill_share`)? Yes while they fill less than that share of
        the node they would start, on every resource, and nobody queued has
        waited 1.5 patiences (a moved server never waits on purpose)."""
        fill, hold = self.fill_share, 1.5 * self.patience_s
        if fill <= 0 or any(srv.started_at is not None or srv.created_at is None
                            or now - srv.created_at >= hold for srv in pending):
            return False
        target = next((n for n in stopped if any(req.fits_in(n.allocatable) for req, _ in left)), None)
        if target is None:
            return False
        cpu = fsum(req.cpu * count for req, count in left)
        ram = fsum(req.ram * count for req, count in left)
        return cpu < fill * target.allocatable.cpu and ram < fill * target.allocatable.ram

    def _split_queue(self, pending, now: float) -> tuple[list[Resources], list[Resources], float]:
        """Requests of the queue that must not wait longer (a moved server,
        or a new one that has waited the patience out), those that may, and
        how long the latter have waited in all."""
        patience = self.patience_s
        urgent, patient, waited = [], [], 0.0
        for srv in pending:
            if patience > 0 and srv.started_at is None and srv.created_at is not None \
                    and now - srv.created_at < patience:
                patient.append(srv.requests)
                waited += now - srv.created_at
            else:
                urgent.append(srv.requests)
        return urgent, patient, waited

    def _patient_horizon(self, waited: float) -> float:
        """How far ahead the patient queue counts on departures: one boot +
        tmon plus, without migration, the patience it has left on average,
        with migration all of it (measured, docs/strategies.md)."""
        if self.config.migration:
            return self.scale_out_horizon_s
        return self.soon_s + max(self.patience_s - waited, 0.0)

    # -- scale-in --------------------------------------------------------

    def _still_draining(self, snapshot: ClusterSnapshot, name: str) -> bool:
        try:
            node = snapshot.node(name)
        except KeyError:
            return False
        return node.status is NodeStatus.CORDONED

    def _scale_in_plan(
        self, snapshot: ClusterSnapshot, state: ElasticState, now: float, t: _Tally
    ) -> MigrationPlan | None:
        if state.draining is not None or snapshot.pending or t.booting:
            return None
        if state.last_scale_out_at is not None and now - state.last_scale_out_at < self.delay_after_add:
            return None
        if not t.active_cloud:
            return None
        keep = self.config.theta_out - self.theta_in

        tried = 0
        for candidate in self._candidates(t.active, now):
            # the same departures as scale-out counts (soon_s): counted on
            # one side only, a node drained now is started again next cycle
            if not self._room_left(t.demand, t.active_capacity - candidate.allocatable, keep, t,
                                   self.soon_s):
                continue  # too little headroom would be left behind
            if candidate.servers and not self.config.migration:
                continue
            plan = plan_migration(snapshot, candidate)
            if plan is not None:
                return plan
            tried += 1
            if tried >= MAX_CANDIDATES_TRIED:
                break
        return None

    def _candidates(self, active: list[Node], now: float) -> list[Node]:
        """Active cloud nodes worth removing, best first."""
        order = candidate_order(active)  # fewest servers, lowest RAM, name
        if not self.lifetime_aware:
            return order
        worth = []
        for rank, node in enumerate(order):
            saving = self.migration_saving_s(node, now)
            if node.servers and saving < self.min_saving:
                continue  # it will be empty soon enough on its own
            worth.append((len(node.servers), -saving, rank, node))
        worth.sort(key=lambda t: t[:3])
        return [t[3] for t in worth]

    def migration_saving_s(self, node: Node, now: float) -> float:
        """Node-seconds saved by draining `node` now instead of letting its
        servers end: natural drain time minus the time the moves take. A
        server with no start time counts as just started."""
        if not node.servers:
            return math.inf
        # the remaining lifetime falls with age: the youngest server is the last to end
        started = max(now if s.started_at is None else s.started_at for s in node.servers)
        natural = expected_remaining_s(max(now - started, 0.0), self.lifetime_mean_s, self.lifetime_sd_s)
        return natural - self.migration_s * len(node.servers)

    def _scale_in_reason(self, plan: MigrationPlan) -> str:
        if not plan.moves:
            return "empty cloud node, enough headroom left"
        return f"{len(plan.moves)} server(s) fit elsewhere, enough headroom left"


def _elastic(config: PolicyConfig, **options) -> ElasticStrategy:
    return ElasticStrategy(config, **options)


def _calendar(config: PolicyConfig, **options) -> ElasticStrategy:
    if not options.get("schedule"):
        raise ValueError(
            "policy 'calendar' needs a schedule of classes "
            "(a calendar file, or a workload that carries one)"
        )
    # the timetable's promise is that classes wait nothing: no thrift unless asked for
    options.setdefault("thrift", 0.0)
    return ElasticStrategy(config, name="calendar", **options)


_elastic.strategy_class = _calendar.strategy_class = ElasticStrategy
STRATEGIES["elastic"] = _elastic
STRATEGIES["calendar"] = _calendar
