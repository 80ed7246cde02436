"""ElasticSpawner: KubeSpawner that fills on-prem nodes first, labels its pods
for the orchestrator, checkpoints the notebook kernels before a stop, and
tells the user when a restarted server was moved and will restore.

Registered as ``c.JupyterHub.spawner_class = "elastic"``.
"""

from __future__ import annotations

import asyncio
import difflib
import textwrap
import time
from typing import ClassVar

from kubespawner import KubeSpawner
from sqlalchemy.orm import object_session
from tornado import web
from tornado.httpclient import AsyncHTTPClient
from traitlets import Bool, Float, Integer, TraitError, Unicode, default, validate

from . import __version__, podspec
from .checkpoint_client import FAILED, CheckpointOutcome, request_checkpoint
from .spawnerchecks import (AdminChecks, bad_choice, bad_configuration, configuration_problem, shared_pod_name_problem,
                            typed_choices)
from .spawnerevents import (STILL_STARTING, STILL_STARTING_NO_EVENTS, EventIndex, NotStartedInTime, page_message,
                            pod_waiting, spawn_age)
from .spawneroptions import options_problem
from .spawnerroute import RouteSwitch
from .spawnertls import InternalSSLProblem, hub_client_ssl
from .spawnertypes import CpuAmount, MemorySize, cpu_help, memory_help, setting_copy, with_model_preferences
from .spawnerway import PodInTheWay

# Bump when the shape of the "elastichub" entry of the state changes;
# load_state ignores what it does not understand rather than failing a hub.
STATE_VERSION = 1
STATE_KEY = "elastichub"
# Seconds a stop waits for a profile_list callable (it may ask another service) before it stops
# with the hub's own settings: a hung callable must not hold the stop up.
PROFILE_AGAIN_TIMEOUT = 10.0


class ElasticSpawner(AdminChecks, PodInTheWay, RouteSwitch, KubeSpawner):
    """KubeSpawner for ElasticHub's hybrid clusters (see docs/spawner.md)."""

    tier_label = Unicode(
        "elastichub.io/tier",
        config=True,
        help="""Node label that says which tier a node belongs to. The local
        cluster sets it; label your own nodes the same way
        (`kubectl label node NAME elastichub.io/tier=on-prem`).""",
    )
    onprem_tier = Unicode(
        "on-prem",
        config=True,
        help="Value of `tier_label` on the on-premises nodes (filled first).",
    )
    cloud_tier = Unicode(
        "cloud",
        config=True,
        help="Value of `tier_label` on the cloud nodes (used once on-prem is full).",
    )
    onprem_weight = Integer(
        10,
        config=True,
        help="""Preferred node-affinity weight of the on-prem tier (1..100).
        Higher than `cloud_weight`, so a server lands on-prem while there is room.
        Added to whatever `node_affinity_preferred` and profiles set.""",
    )
    cloud_weight = Integer(
        1,
        config=True,
        help="Preferred node-affinity weight of the cloud tier (1..100).",
    )
    migratable = Bool(
        True,
        config=True,
        help="""May the orchestrator move this server to another node (with
        its kernels' state)? Written on the pod as the label
        `elastichub.io/migratable`. Set it to False in a profile's
        `kubespawner_override` to pin, e.g., GPU or exam servers.""",
    )
    checkpoint_timeout = Float(
        120.0,
        config=True,
        help="""Seconds the spawner waits for the server's kernels to
        checkpoint before it stops the server. The stop goes ahead whatever
        the outcome (the kernel also checkpoints when it shuts down).""",
    )

    route_switch_interval = Float(
        0.05,
        config=True,
        help="""Seconds between two looks for a live move's route request (a
        destination pod the orchestrator annotated `elastichub.io/route:
        requested`). The hub switches the server to that pod within about
        this time: it is part of the user's pause during a live move.""",
    )

    # Redefined (not only a new default) so that `jupyterhub --help-all` shows 600, not JupyterHub's 60.
    start_timeout = Integer(
        600,
        config=True,
        help="""Seconds a server may take to start (JupyterHub's Spawner.start_timeout, 60 there).
        A server that finds on-prem full waits for a cloud node's boot (minutes, 290 s in the paper)
        before its pod can start, then for its image: 600 by default. c.KubeSpawner.start_timeout
        (zero-to-jupyterhub's singleuser.startTimeout) applies too.""",
    )

    @default("slow_spawn_message")
    def _still_starting(self):
        return STILL_STARTING if self.events_enabled else STILL_STARTING_NO_EVENTS

    mem_limit = MemorySize(None, allow_none=True, config=True, help=memory_help("mem_limit"))
    mem_guarantee = MemorySize(None, allow_none=True, config=True, help=memory_help("mem_guarantee"))
    cpu_limit = CpuAmount(None, allow_none=True, config=True, help=cpu_help("cpu_limit"))
    cpu_guarantee = CpuAmount(None, allow_none=True, config=True, help=cpu_help("cpu_guarantee"))

    _events: ClassVar[EventIndex] = EventIndex()  # every spawn page's events, grouped once per look

    # A value out of range is noted and the trait keeps its default, rather
    # than failing the spawner's construction: at hub start JupyterHub builds
    # one for every running server, and a raise there stops the whole hub.
    # No server starts while a problem stands (start, profiles).
    def _refuse(self, proposal, problem: str):
        self._config_problems[proposal.trait.name] = f"ElasticSpawner.{proposal.trait.name}: {problem}"
        return proposal.trait.default_value

    def _accept(self, proposal):
        self._config_problems.pop(proposal.trait.name, None)
        return proposal.value

    @validate("tier_label")
    def _valid_tier_label(self, proposal):
        problem = podspec.label_key_problem(proposal.value)
        return self._refuse(proposal, problem) if problem else self._accept(proposal)

    @validate("onprem_tier", "cloud_tier")
    def _valid_tier(self, proposal):
        name = proposal.trait.name
        problem = podspec.tier_value_problem(proposal.value,
                                             self.cloud_tier if name == "onprem_tier" else self.onprem_tier)
        return self._refuse(proposal, problem) if problem else self._accept(proposal)

    @validate("onprem_weight", "cloud_weight")
    def _valid_weight(self, proposal):
        if not 1 <= proposal.value <= 100:
            return self._refuse(proposal, f"{proposal.value} is outside 1..100 (Kubernetes' range for preferred "
                                          "node-affinity weights)")
        return self._accept(proposal)

    @validate("checkpoint_timeout", "route_switch_interval", "start_timeout")
    def _valid_timeout(self, proposal):
        # Also refuses NaN; the token minted for a checkpoint lives this long, and JupyterHub
        # waits start_timeout: a day is more than any checkpoint or cloud boot needs.
        if not 0 < proposal.value <= 86_400:
            return self._refuse(proposal, f"{proposal.value} is not a number of seconds in (0, 86400]")
        return self._accept(proposal)

    _logged_problems: ClassVar[set[str]] = set()

    def __init__(self, *args, **kwargs):
        self._config_problems: dict[str, str] = {}
        try:
            super().__init__(*args, **kwargs)
        except TraitError as e:
            # A value of the wrong type (traitlets' own check): one line, to the log and the API,
            # not a traceback. Traitlets has undone the whole configuration, so nothing can go on.
            raise bad_configuration(str(e)) from None
        for problem in self._config_problems.values():
            if problem not in ElasticSpawner._logged_problems:  # once, not once per running server
                ElasticSpawner._logged_problems.add(problem)
                self.log.error("Bad ElasticHub configuration: %s. No server can start until it is fixed; the "
                               "servers already running go on.", problem)
        # What the last stop saved, and where the server last ran: the next
        # start announces them. clear_state (after a stop, before a start)
        # leaves them alone on purpose.
        self.last_checkpoint: CheckpointOutcome | None = None
        self.last_node: str | None = None
        self.last_stop_moved = False  # the last stop was a drain's (podmeta.MOVING_ANNOTATION), not its user's
        # Snapshot taken when a start begins: what progress() announces.
        self._moved_from: str | None = None
        self._restoring: CheckpointOutcome | None = None
        self._creating_pod: str | None = None  # the pod a start is creating: one of its name is in the way
        self._before_profile: dict = {}  # each setting a profile overrode, as it was before (clear_state)
        self._profile_applied = False  # this object's start applied the server's profile (load_user_options)
        self._polled = False  # the hub polled this object: after a hub restart, the profile was applied then
        self._typed_overrides: dict[int, tuple[str, str]] = {}  # while a profile loads (_load_profile)
        if getattr(self, "user", None) is not None:
            RouteSwitch._servers[(self.user.name, self.name or "")] = self

    # -- the pod ---------------------------------------------------------------------------------

    def _apply_overrides(self, spawner_override: dict):
        """A profile's kubespawner_override: a key that is no setting would
        be set as a plain attribute and do nothing (a misspelt `migratable`
        leaves an exam's servers movable), a bad value would end the start
        in a traceback: both end it with one line naming the setting."""
        for key in spawner_override:
            if not self.has_trait(key):
                close = difflib.get_close_matches(key, self.trait_names(config=True), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise bad_configuration(f"profile_list: kubespawner_override key {key!r} is not a setting of "
                                        f"ElasticSpawner{hint}")
        before = dict(self._config_problems)
        previous = {name: getattr(self, name) for name in spawner_override}  # every key is a trait (above)
        for name, value in previous.items():  # copied: KubeSpawner merges a dict override into the dict itself
            self._before_profile.setdefault(name, setting_copy(value))
        try:
            super()._apply_overrides(spawner_override)
        except TraitError as e:
            raise self._bad_override(spawner_override, str(e)) from None
        added = {name: p for name, p in self._config_problems.items() if before.get(name) != p}
        # start() checked the hub's template; a profile's names the pods from the next clear_state on.
        shared = "pod_name_template" in spawner_override and shared_pod_name_problem(self.pod_name_template,
                                                                                     self.name)
        if shared:
            added["pod_name_template"] = shared
        if added:
            # The profile is refused; the hub's own settings stand for the next start (this spawner may be reused).
            for name in added:
                setattr(self, name, previous[name])
            self._config_problems = before
            raise self._bad_override(spawner_override, "; ".join(added.values()))
        if "start_timeout" in spawner_override and self.start_timeout > previous["start_timeout"]:
            self._warn_late_start_timeout(previous["start_timeout"])

    async def load_user_options(self):
        self._profile_applied = True
        await super().load_user_options()

    def _validate_user_options(self, profile_list):
        # Options sent through the REST API can be anything: each KubeSpawner cannot take is named (400),
        # not its ValueError/KeyError/TypeError (a traceback, a 500) (spawneroptions.py).
        problem = options_problem(self.user_options or {}, profile_list)
        if problem is not None:
            raise bad_choice(*problem)
        super()._validate_user_options(profile_list)

    async def _profile_of_the_running_server(self) -> None:
        """After a hub restart JupyterHub builds a running server's spawner
        from the hub's settings alone: the profile its start applied was gone
        for all the hub then does with the server (its first look, whose
        get_url rewrote the server's URL without a profile's services_enabled;
        a live move's route switch; the stop, which cut a big kernel's longer
        checkpoint_timeout and delete_grace_period short). Applied again, from
        the options the hub kept with the server, by the first of them (poll,
        at the hub's start) and, should that have been missed, by the others."""
        if self._profile_applied or not self.profile_list:
            return
        try:
            async with asyncio.timeout(PROFILE_AGAIN_TIMEOUT):
                await self.load_user_options()
        except Exception as e:  # a profile since removed or changed: the server goes on, said
            problem = (configuration_problem(e) if isinstance(e, web.HTTPError) else
                       f"profile_list took more than {PROFILE_AGAIN_TIMEOUT:g} s" if isinstance(e, TimeoutError)
                       else f"{type(e).__name__}: {e}")
            self.log.warning("ElasticHub: the profile of %s (%s) cannot be applied to the running server: %s; "
                             "it goes on with the hub's own settings", self._log_name,
                             self.user_options.get("profile"), problem or e)
            self._profile_applied = False  # tried again by a route request or the stop (a service back since)

    def _load_profile(self, slug, profile_list):
        # KubeSpawner renders a typed value into its option's unlisted_choice override in place and applies
        # that very dict: known by identity, a refused override is the user's only when it is one of those.
        typed = dict(typed_choices(self.user_options))
        self._typed_overrides = {
            id(option["unlisted_choice"].get("kubespawner_override")): (name, typed[name])
            for profile in profile_list for name, option in (profile.get("profile_options") or {}).items()
            if name in typed and isinstance(option.get("unlisted_choice"), dict)}
        try:
            return super()._load_profile(slug, profile_list)
        finally:
            self._typed_overrides = {}

    def _bad_override(self, spawner_override: dict, problem: str) -> web.HTTPError:
        """A value the user typed into a profile option's free-form field
        ("Other...", KubeSpawner's unlisted_choice) is the user's mistake, not
        the admin's: say so to them (400), not "Bad ElasticHub configuration".
        Only that field's override: the same characters in the profile's own
        (a typed "20", an admin's weight of 200) are the admin's."""
        typed = self._typed_overrides.get(id(spawner_override))
        if typed:
            return bad_choice(*typed, problem)
        return bad_configuration(f"profile_list: kubespawner_override: {problem}")

    async def get_pod_manifest(self):
        try:
            self._refuse_bad_pod_settings()
            pod = await super().get_pod_manifest()
            self._refuse_bad_placement(podspec.plain(pod.spec))
        except web.HTTPError as e:
            # The pod's checks see a typed choice only once it is in the pod's settings
            # ("two" GPUs): a problem naming that value is the user's too.
            problem = configuration_problem(e)
            typed = next((c for c in typed_choices(self.user_options) if problem and repr(c[1]) in problem), None)
            if typed:
                raise bad_choice(*typed, problem) from None
            raise
        self._warn_outweighing(podspec.plain(pod.spec.affinity))
        self._warn_replaced_placement()
        self._warn_single_node_volume()
        self._put_elastic_parts(pod)
        return pod

    def _put_elastic_parts(self, pod, missing_only: bool = False) -> list[str]:
        """ElasticHub's labels, annotations and tier preferences, put on `pod`;
        with `missing_only` (after modify_pod_hook), only those it lacks: the
        names of those put back."""
        meta, spec, put = pod.metadata, pod.spec, []
        for field, ours in (("labels", podspec.pod_labels(self.migratable)),
                            ("annotations", podspec.pod_annotations(self.user.name, self.name or "", __version__,
                                                              self.delete_grace_period))):
            have = getattr(meta, field) or {}
            add = {k: v for k, v in ours.items() if not (missing_only and k in have)}
            put += [f"{field[:-1]} {k}" for k in add] if missing_only else []
            setattr(meta, field, {**have, **add})
        # Appended to the admin's own preferences (make_pod built them from
        # node_affinity_preferred, extra_pod_config and the profile): theirs still count.
        own = podspec.plain(spec.affinity)
        have = ((own or {}).get("nodeAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution") or []
        terms = [t for t in podspec.tier_preferences(self.tier_label, [(self.onprem_tier, self.onprem_weight),
                                                                       (self.cloud_tier, self.cloud_weight)])
                 if not (missing_only and t in have)]
        if terms and missing_only:
            put.append(f"the preferred node affinity on {self.tier_label}")
        if not terms:
            return put
        if isinstance(spec.affinity, dict):  # extra_pod_config's affinity: the admin's dict, kept a dict
            spec.affinity = podspec.with_preferences(own, terms)
        else:
            # Client models, as KubeSpawner makes them: a modify_pod_hook written for KubeSpawner
            # (pod.spec.affinity.node_affinity...) runs on this pod next.
            spec.affinity = with_model_preferences(spec.affinity, terms)
        return put

    _warned_hook: ClassVar[set[tuple]] = set()

    async def _make_create_pod_request(self, pod, request_timeout):
        # The pod as modify_pod_hook left it. A hook that sets an affinity of its own
        # (pod.spec.affinity = V1Affinity(...): KubeSpawner's pods have none) dropped
        # on-prem first silently; one that drops the labels hid the server from the orchestrator.
        put = self._put_elastic_parts(pod, missing_only=True)
        if put and tuple(put) not in ElasticSpawner._warned_hook:
            ElasticSpawner._warned_hook.add(tuple(put))
            self.log.warning("ElasticHub: modify_pod_hook removed %s from the pod of %s: put back (the orchestrator "
                             "finds and counts servers by them, and they place servers on-prem first); a hook should "
                             "add to the pod's labels, annotations and affinity, not replace them",
                             ", ".join(put), self._log_name)
        # KubeSpawner answers a 409 with stop(now=True): see stop().
        self._creating_pod = pod.metadata.name
        try:
            return await super()._make_create_pod_request(pod, request_timeout)
        finally:
            self._creating_pod = None

    def _current_pod(self) -> dict | None:
        """This server's live pod: the one of its pod name, as KubeSpawner
        finds it (at once: the hub asks for every server's state on each
        user list), else by ElasticHub's labels and annotations (after a
        live move the hub may know the pod before the switch is recorded).
        By name, a server started before ElasticSpawner ran the hub, whose
        pod has no ElasticHub annotations, is found too."""
        reflector = self.pod_reflector
        if reflector is None:
            return None
        own = reflector.pods.get(f"{self.namespace}/{self.pod_name}")
        if own is not None and not (own.get("metadata") or {}).get("deletionTimestamp"):
            return own
        return podspec.current_pod(reflector.pods.values(), self.user.name, self.name or "", self.pod_name)

    # -- state -------------------------------------------------------------------------------------

    def clear_state(self):
        # JupyterHub keeps one spawner per server from start to start: the last start's profile (an
        # exam's migratable = False, its environment) stayed on it under the profile picked next. Undone
        # here, after the stop and before the next start's pre_spawn_hook (whose changes stand).
        super().clear_state()
        for name, value in getattr(self, "_before_profile", {}).items():
            setattr(self, name, value)
        self._before_profile = {}
        self._profile_applied = False

    def get_state(self):
        state = super().get_state()
        node = podspec.pod_node(self._current_pod())
        if node:
            self.last_node = node
        state[STATE_KEY] = {
            "version": STATE_VERSION,
            "last_checkpoint": self.last_checkpoint.to_dict() if self.last_checkpoint else None,
            "node": self.last_node,
            "moved": self.last_stop_moved,
        }
        return state

    def load_state(self, state):
        super().load_state(state)
        mine = state.get(STATE_KEY) if isinstance(state, dict) else None
        if not isinstance(mine, dict):
            return
        if mine.get("version") != STATE_VERSION:
            self.log.warning("Ignoring ElasticHub state version %r of %s (this spawner writes %s)",
                             mine.get("version"), self._log_name, STATE_VERSION)
            return
        self.last_checkpoint = CheckpointOutcome.from_dict(mine.get("last_checkpoint"))
        node = mine.get("node")
        self.last_node = node if isinstance(node, str) and node else None
        self.last_stop_moved = mine.get("moved") is True  # absent (an older spawner's state): not said

    # -- start / progress --------------------------------------------------------------------------

    def start(self):
        if self._config_problems:
            raise bad_configuration("; ".join(self._config_problems.values()))
        shared = shared_pod_name_problem(self.pod_name_template, self.name)
        if shared:
            raise bad_configuration(shared)
        self._plan_announcements()
        self._watch_route_requests()
        return super().start()

    async def poll(self):
        # The hub polls every running server after its own restart (then asks get_url): the server's
        # profile and the route watcher come back with it.
        if self.server is not None and not self._polled:  # the first poll only: the others every 30 s
            self._polled = True
            await self._profile_of_the_running_server()
        self._watch_route_requests()
        return await super().poll()

    def _plan_announcements(self) -> None:
        # Decided before the new pod exists: announce a restore only when the
        # last stop saved variables (of every kernel, or of some: failed, with
        # a stock kernel beside), and a move only against the node it ran on, after a drain's stop: its
        # user's own stop and start landing elsewhere is no move.
        saved = self.last_checkpoint is not None and self.last_checkpoint.kernels > 0
        self._restoring = self.last_checkpoint if saved else None
        self._moved_from = self.last_node if saved and self.last_stop_moved else None

    async def _start(self):
        # Ended a little before the hub's own limit (which cancels it and says nothing to the user),
        # with an error that says why: the hub's clock started a moment before this one.
        limit = self.start_timeout
        try:
            async with asyncio.timeout(limit - min(10.0, limit / 10)):
                return await super()._start()
        except TimeoutError:  # KubeSpawner's own, at a profile's shorter start_timeout, too
            raise NotStartedInTime(min(limit, self.start_timeout), self._current_pod()) from None

    def _elastic_events(self, announced: set[str], final: bool):
        """ElasticHub's progress events not yet announced. The move is told
        once the new pod is bound to a node; the restore right after it, or
        at the end when there was no move to tell."""
        if self._restoring is None:
            return
        node = podspec.pod_node(self._current_pod())
        if "move" not in announced and node and self._moved_from and node != self._moved_from:
            announced.add("move")
            yield {"message": podspec.moving_message(self._moved_from, node)}
        if "restore" not in announced and (node or final):
            announced.add("restore")
            yield {"message": podspec.restore_message(self._restoring.kernels, self._restoring.bytes,
                                                      self._restoring.unsaved)}

    async def progress(self):
        """KubeSpawner's kind of events, followed by the pod's uid rather than
        its name: KubeSpawner's own progress() matches events by pod name from
        a marker its start sets, so a restarted server (same pod name) shows
        the old pod's events and can miss the new one's; a make-before-break
        move has two pods. ElasticHub's own events join as soon as they are
        known: this generator is cut off when the spawn completes."""
        if self.events_enabled:
            await self._start_watching_events()
        started, seen, shown, announced, progress = time.monotonic(), set(), set(), set(), 0.0
        started -= spawn_age(self.orm_spawner)
        last_patience = 0.0
        while True:
            done = self._start_future is not None and self._start_future.done()
            elapsed = time.monotonic() - started
            if 0 < self.slow_spawn_message_threshold <= elapsed and (
                    elapsed >= last_patience + self.slow_spawn_message_frequency):
                last_patience = elapsed
                yield {"message": textwrap.dedent(self.slow_spawn_message).format(seconds=int(elapsed))}
            pod = self._current_pod()
            uid = ((pod or {}).get("metadata") or {}).get("uid")
            if uid and self.event_reflector is not None:
                for event in ElasticSpawner._events.of(self.event_reflector, uid, fresh=done):
                    if event["metadata"]["uid"] in seen:
                        continue
                    seen.add(event["metadata"]["uid"])
                    message = page_message(event)
                    if message in shown:  # the scheduler's next try, in other words: the same for the student
                        continue
                    shown.add(message)
                    progress += (90 - progress) / 3  # approach 90 %, as KubeSpawner does
                    yield {"progress": int(progress), "raw_event": event, "message": message}
            waiting = None if self.events_enabled else pod_waiting(pod)
            if waiting and waiting not in shown:  # no FailedScheduling event to say it: the pod's status does
                shown.add(waiting)
                yield {"message": waiting}
            for extra in self._elastic_events(announced, final=done):
                yield extra
            if done:
                return
            await asyncio.sleep(0.25)

    # -- stop ----------------------------------------------------------------------------------------

    async def stop(self, now=False):
        if now and self._creating_pod:  # not a stop: KubeSpawner's deletion of a pod in the way of the start
            delete_now = await self._clear_the_way(self._creating_pod)
            if delete_now is not None:
                await super().stop(now=delete_now)
            return
        await self._start_watching_pods()
        pod = self._current_pod()
        if pod is not None:
            self.last_node = podspec.pod_node(pod) or self.last_node
        self.last_stop_moved = podspec.drain_moving(pod)
        if not now and self.server is not None and (
                pod is None or not (self.is_pod_running(pod) or podspec.notebook_serving(pod))):
            # Nothing to ask (no pod, or one not serving): say so, a stop without a checkpoint is never silent.
            why = f"its pod {(pod.get('metadata') or {}).get('name')} is not running" if pod else "no pod was found"
            self.log.warning("ElasticHub: stopping %s without a checkpoint: %s", self._log_name, why)
        elif not now and self.server is not None:
            await self._profile_of_the_running_server()
            try:
                self.last_checkpoint = await self._checkpoint(self.server.url, "before stopping")
                # Read again: the drain marks the pod just before its stop, the pod cache may have lagged.
                self.last_stop_moved = self.last_stop_moved or podspec.drain_moving(self._current_pod())
                self._persist_state()
            except Exception as e:  # the stop proceeds whatever happened (docs/spawner.md)
                self.last_checkpoint = CheckpointOutcome(FAILED, reason=f"{type(e).__name__}: {e}", at=time.time())
                self.log.warning("ElasticHub checkpoint before stopping %s: %s", self._log_name,
                                 self.last_checkpoint.summary())
        await super().stop(now=now)

    async def _checkpoint(self, url: str, purpose: str) -> CheckpointOutcome:
        """Checkpoint the kernels of this server's pod at `url`; `purpose`,
        for the log, is followed by the server's name."""
        try:  # internal_ssl: the server asks for a certificate of the hub's, as the hub's own calls present
            tls = hub_client_ssl(self.user.settings) if self.internal_ssl else None
        except InternalSSLProblem as e:
            outcome = CheckpointOutcome(FAILED, reason=str(e), at=time.time())
        else:
            outcome = await self._ask_checkpoint(url, purpose, tls)
        log = self.log.warning if outcome.status == FAILED else self.log.info
        log("ElasticHub checkpoint %s %s: %s", purpose, self._log_name, outcome.summary())
        return outcome

    async def _ask_checkpoint(self, url: str, purpose: str, tls) -> CheckpointOutcome:
        token, minted = self.api_token, None
        if not token:
            # After a hub restart the server's own token is gone from memory
            # (the hub stores only its hash): mint a short-lived one with the
            # same reach, access to this one server.
            token = minted = self.user.new_api_token(
                note=f"elastichub checkpoint {purpose} {self._log_name}",
                scopes=[f"access:servers!server={self.user.name}/{self.name or ''}"],
                expires_in=int(self.checkpoint_timeout) + 60)
        # A client of its own, not tornado's shared one: that one sends ten requests at a time and fails any
        # that waits 20 s for its turn, so beyond ten stops at once (a hub's shutdown, a class's end) a stop
        # queued behind ten slow checkpoints went on without its own.
        http = AsyncHTTPClient(force_instance=True)
        try:
            outcome = await request_checkpoint(http, url, token, self.checkpoint_timeout, ssl_options=tls)
        finally:
            http.close()
            if minted:
                self._revoke(minted)
        return outcome

    def _revoke(self, token: str) -> None:
        from jupyterhub import orm

        db = object_session(self.orm_spawner)
        found = orm.APIToken.find(db, token)
        if found is not None:
            db.delete(found)
            db.commit()

    def _persist_state(self) -> None:
        """Write the state now, not only when the stop ends: a hub that dies
        between the checkpoint and the pod's deletion keeps the outcome."""
        db = object_session(self.orm_spawner) if self.orm_spawner is not None else None
        if db is None:
            return
        self.orm_spawner.state = self.get_state()
        db.commit()
