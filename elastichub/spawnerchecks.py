"""ElasticSpawner's checks of an admin's KubeSpawner settings: what would
fail a start obscurely is refused in one line naming the setting; what is
legal but likely unmeant is warned once per hub.
"""

from __future__ import annotations

import json
import string
from typing import ClassVar

from kubernetes_asyncio.client import models as client_models
from tornado import web

from . import podspec
from .orchestrator.nodefit import Constraints, NodeTemplate, misfit
from .podresources import resources_problem
from .quantity import QuantityError, parse_quantity


_BAD_CONFIGURATION = "Bad ElasticHub configuration: %s"


# Said to the user after what only the hub's staff can fix: the problem names settings and Kubernetes'
# objects, which the staff need and a student can do nothing about ("kubectl delete pod").
FOR_STAFF = "This is not something you did or can fix: tell the course staff, and show them this message."


def for_staff(message: str) -> str:
    """`message`, as the user reads it: followed by who can fix it."""
    return f"{message.rstrip('.')}. {FOR_STAFF}"


def bad_configuration(problem: str) -> web.HTTPError:
    """The error a bad setting ends a start with: one line naming it, logged
    without a traceback and answered to the user with whom to tell (raised inside a
    spawn, a plain HTTPError reaches the API as "Internal Server Error")."""
    error = web.HTTPError(500, _BAD_CONFIGURATION, problem)
    error.jupyterhub_message = for_staff(_BAD_CONFIGURATION % problem)
    return error


def bad_choice(option: str, typed, problem: str, typing: bool = True) -> web.HTTPError:
    """The error for a value the user typed into a profile option's free-form
    field ("Other...", KubeSpawner's unlisted_choice), or sent through the REST API: the user's mistake
    (400). `typing`: the option takes a typed value (else the advice is to pick a listed one)."""
    error = web.HTTPError(400, "Your choice %r for %s cannot be used: %s", typed, option, problem)
    # The user reads what is wrong with the value, from where the problem names it: not the setting it
    # went into ("The 'mem_limit' trait of an ElasticSpawner instance: ..."), which the log keeps.
    at = problem.find(repr(typed))
    said = (problem[at:] if at >= 0 else problem).rstrip(".")
    then = "Pick one of the listed choices, or type another value." if typing else "Pick one of the listed choices."
    error.jupyterhub_message = f"Your choice {typed!r} for {option} cannot be used: {said}. {then}"
    return error


def typed_choices(user_options: dict | None):
    """(option, value) of each value the user typed into a free-form field."""
    for key, typed in (user_options or {}).items():
        if key.endswith("--unlisted-choice") and isinstance(typed, str) and typed:
            yield key[:-len("--unlisted-choice")], typed


def configuration_problem(error: web.HTTPError) -> str | None:
    """The problem a bad_configuration error names (None: another error)."""
    return error.args[0] if error.log_message == _BAD_CONFIGURATION and error.args else None


def shared_pod_name_problem(template: str, server_name: str) -> str | None:
    """Why a named server may not start with this pod_name_template (None
    when it may): without a field of the server's name every server of a
    user gets one pod name: one server's running pod stops the others'
    starts (spawnerway refuses to delete it)."""
    try:
        fields = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    except ValueError:  # KubeSpawner's own error says what is wrong with it
        return None
    if not server_name or any("servername" in f or "user_server" in f for f in fields):
        return None
    return (f"pod_name_template {template!r} names no server ({{servername}} or {{user_server}}): the named server "
            f"{server_name!r} would take the pod name of the user's other servers, so the pod of one would be in "
            "the way of the others' starts")


def _fields(model: str) -> dict[str, str]:
    return getattr(client_models, model).attribute_map


_TRAIT = {"cpu": "cpu", "memory": "mem"}  # KubeSpawner's traits of the two resources
# extra_pod_config's placement fields (camelCase or snake_case, as KubeSpawner takes them), each with the
# settings KubeSpawner builds it from, which the field replaces on the pod.
_REPLACED_BY_EXTRA = (
    (("affinity",), ("node_affinity_required", "node_affinity_preferred", "pod_affinity_required",
                     "pod_affinity_preferred", "pod_anti_affinity_required", "pod_anti_affinity_preferred")),
    (("nodeSelector", "node_selector"), ("node_selector",)),
    (("tolerations",), ("tolerations",)),
)


class AdminChecks:
    """Mixed into ElasticSpawner (a KubeSpawner): reads its traits and log."""

    def _refuse_bad_pod_settings(self) -> None:
        if self.onprem_weight <= self.cloud_weight:  # two traits, possibly set apart (a profile): checked together
            raise bad_configuration(f"ElasticSpawner.onprem_weight ({self.onprem_weight}) must be higher than "
                                    f"cloud_weight ({self.cloud_weight}), or servers fill the cloud first")
        for kind, guarantee, limit in (("mem", self.mem_guarantee, self.mem_limit),
                                       ("cpu", self.cpu_guarantee, self.cpu_limit)):
            if guarantee and limit and guarantee > limit:  # the API server's 422 came with the whole pod
                raise bad_configuration(f"{kind}_guarantee ({guarantee}) is above {kind}_limit ({limit}): Kubernetes "
                                        "refuses such a pod (a profile that raises one must raise the other)")
        for setting, model in podspec.OBJECT_LIST_SETTINGS.items():
            problem = podspec.object_list_problem(setting, getattr(self, setting), _fields(model), model[2:])
            if problem:
                raise bad_configuration(problem)
        problem = self._resources_problem()
        if problem:
            raise bad_configuration(problem)
        for setting, model in podspec.OBJECT_SETTINGS.items():  # a misspelt key: KubeSpawner's ValueError
            value = getattr(self, setting) or {}
            problem = None if callable(value) else (  # a security context's callable: KubeSpawner calls it later
                podspec.unknown_field_problem(setting, value, _fields(model), model[2:],
                                              camel_case=setting in podspec.CAMEL_CASE_SETTINGS))
            if problem:
                raise bad_configuration(problem)
        for setting in ("extra_labels", "extra_annotations"):
            # Ours would silently win: an extra label elastichub.io/migratable "false" left servers movable.
            problem = podspec.own_key_problem(setting, getattr(self, setting) or {})
            if problem:
                raise bad_configuration(problem)

    def _refuse_bad_placement(self, spec: dict) -> None:
        """The built pod's placement (`spec`, plain JSON): what the hub's settings, a
        profile and extra_pod_config (whose tolerations replace the setting's) made of it."""
        cordon = podspec.cordon_toleration(spec.get("tolerations"))
        if cordon is not None:
            setting = ("tolerations" if podspec.cordon_toleration(self.tolerations) is not None
                       else "extra_pod_config: tolerations")
            raise bad_configuration(
                f"{setting}: {cordon!r} tolerates {podspec.CORDON_TAINT['key']}, a cordoned node's taint: servers "
                "would be placed on the nodes ElasticHub cordons to drain them, and a moved server could come back "
                "to the node it is moved off; give it the key of the taint it is meant for")
        self._refuse_no_tier(spec)

    def _refuse_no_tier(self, spec: dict) -> None:
        """A node selector or required node affinity (the hub's, a profile's,
        extra_pod_config's) that no node of either tier can match on the tier
        label (a typo, 'onprem' for 'on-prem'): every server waited Pending
        until start_timeout, and the orchestrator can start no node for it."""
        key = self.tier_label
        selector = tuple((k, str(v)) for k, v in (spec.get("nodeSelector") or {}).items() if k == key)
        required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution") or {}
        terms = [t for t in required.get("nodeSelectorTerms") or [] if isinstance(t, dict)]
        # Only the tier label is known of a node here: a term that does not name it may match some node of a tier.
        on_key = [[e for e in t.get("matchExpressions") or [] if isinstance(e, dict) and e.get("key") == key]
                  for t in terms]
        terms = () if not all(on_key) else tuple({"matchExpressions": e} for e in on_key)
        asks = Constraints(node_selector=selector, terms=terms)
        why = {tier: misfit(asks, NodeTemplate(tier, {key: tier})) for tier in (self.onprem_tier, self.cloud_tier)}
        if all(why.values()):
            # The value quoted: one the user typed into a profile option is then found theirs (get_pod_manifest).
            reasons = " and ".join(sorted({f"node selector {key}: {selector[0][1]!r}" if w.startswith("node selector")
                                           else f"{w} on {key}" for w in why.values()}))
            raise bad_configuration(
                f"the pod's {reasons} (from node_selector, node_affinity_required, extra_pod_config or a profile): "
                f"no node of either tier can take it (on-prem nodes have {key}={self.onprem_tier}, cloud nodes "
                f"{key}={self.cloud_tier}), so every server would wait unplaced until start_timeout; name one of "
                "these tiers, or leave the tier to ElasticHub")

    def _resources_problem(self) -> str | None:
        """The server's container's requests and limits as KubeSpawner makes
        them (the extra_resource_* ones last, they win), then those of the
        admin's other containers, each named by the setting it came from."""
        extra_asked, extra_limited = self.extra_resource_guarantees or {}, self.extra_resource_limits or {}
        requests = {**{k: v for k, v in (("cpu", self.cpu_guarantee), ("memory", self.mem_guarantee)) if v},
                    **extra_asked}
        limits = {**{k: v for k, v in (("cpu", self.cpu_limit), ("memory", self.mem_limit)) if v}, **extra_limited}
        problem = resources_problem(
            requests, limits,
            lambda name: _TRAIT[name] + "_guarantee" if name in _TRAIT and name not in extra_asked
            else "extra_resource_guarantees",
            lambda name: _TRAIT[name] + "_limit" if name in _TRAIT and name not in extra_limited
            else "extra_resource_limits")
        for setting in ("init_containers", "extra_containers"):
            for i, container in enumerate(self._container_items(setting)):
                resources = podspec.plain(container).get("resources") or {}
                where = f"{setting}[{i}].resources"
                problem = problem or resources_problem(resources.get("requests"), resources.get("limits"),
                                                       lambda _: f"{where}.requests", lambda _: f"{where}.limits")
        return problem

    def _container_items(self, setting: str) -> list:
        value = getattr(self, setting) or []
        return list(value.values() if isinstance(value, dict) else value)

    def get_env(self):
        # KubeSpawner's TypeError for a number (a YAML `OMP_NUM_THREADS: 1`) named no variable.
        env = super().get_env()
        for name, value in env.items():
            problem = podspec.env_value_problem(name, value, _fields("V1EnvVar"),
                                                called=callable(self.environment.get(name)))
            if problem:
                raise bad_configuration(problem)
        return env

    def get_pvc_manifest(self):
        # KubeSpawner creates the claim before it builds the pod: checked here, or the API
        # server's 422 ("spec.resources[storage]: Required value") ends the start in a traceback.
        capacity = self.storage_capacity
        if capacity is None or str(capacity).strip() == "":
            raise bad_configuration("storage_pvc_ensure is on but storage_capacity is not set: Kubernetes refuses "
                                    "a claim without a size (e.g. c.KubeSpawner.storage_capacity = '10Gi')")
        try:
            parse_quantity(capacity)
        except QuantityError as e:
            raise bad_configuration(f"storage_capacity: {e}") from None
        return super().get_pvc_manifest()

    _warned_outweighing: ClassVar[set[str]] = set()

    def _warn_outweighing(self, affinity: dict | None) -> None:
        """An admin's preferred term as heavy as the on-prem preference sends
        servers to any cloud node it matches while on-prem has room: legal,
        possibly meant, so a warning (once per term) rather than a refusal."""
        for term in podspec.outweighing_preferences(affinity, self.onprem_weight - self.cloud_weight):
            text = json.dumps(term, sort_keys=True)
            if text not in type(self)._warned_outweighing:
                type(self)._warned_outweighing.add(text)
                needed = term["weight"] + self.cloud_weight + 1
                # zero-to-jupyterhub's node-purpose term weighs 100: no onprem_weight can outweigh it.
                fix = (f"raise onprem_weight to {needed} or more" if needed <= 100 else
                       f"lower its weight below {self.onprem_weight - self.cloud_weight} (onprem_weight stops at 100)")
                self.log.warning(
                    "ElasticHub: a preferred node-affinity term of weight %d outweighs ElasticSpawner.onprem_weight "
                    "(%d) over cloud_weight (%d): servers go to any cloud node it matches before on-prem; %s, "
                    "unless that is meant or every node matches it alike: %s", term["weight"],
                    self.onprem_weight, self.cloud_weight, fix, text)

    _warned_replaced: ClassVar[set[str]] = set()

    def _warn_replaced_placement(self) -> None:
        """KubeSpawner sets a field of extra_pod_config on the pod in place of
        what it built from the settings of that field (its help says "merged"):
        a profile's required node affinity, zero-to-jupyterhub's node-purpose
        term, a cloud-burst node selector were gone from the pod, and from the
        tier checks, with only a model dump in KubeSpawner's info log."""
        extra = self.extra_pod_config or {}
        for fields, settings in _REPLACED_BY_EXTRA:
            field = next((f for f in fields if extra.get(f)), None)
            lost = [name for name in settings if getattr(self, name, None)]
            if field is None or not lost:
                continue
            text = (f"extra_pod_config's {field} replaces, on the pod, the one KubeSpawner builds from "
                    f"{', '.join(lost)} (the hub's or a profile's): {'it is' if len(lost) == 1 else 'they are'} not on "
                    f"the pods, so the scheduler and ElasticHub's placement checks never see "
                    f"{'it' if len(lost) == 1 else 'them'}; write {'it' if len(lost) == 1 else 'them'} into "
                    f"extra_pod_config's {field} instead")
            if text not in type(self)._warned_replaced:
                type(self)._warned_replaced.add(text)
                self.log.warning("ElasticHub: %s (first seen on the pod of %s)", text, self._log_name)

    _warned_volumes: ClassVar[set[tuple]] = set()

    def _warn_single_node_volume(self) -> None:
        """A per-user PVC only one node mounts at a time (KubeSpawner's default,
        and zero-to-jupyterhub's) cannot follow a live move, which runs the old
        and the new pod at once: each such move is undone after a wait. Said
        once per hub and access modes, not refused: a restart move takes it along."""
        modes = tuple(self.storage_access_modes or ())
        if not self.storage_pvc_ensure or not self.migratable or "ReadWriteMany" in modes:
            return
        if modes not in type(self)._warned_volumes:
            type(self)._warned_volumes.add(modes)
            self.log.warning(
                "ElasticHub: each server's PVC (storage_pvc_ensure) is %s: a live move starts the new pod while the "
                "old one runs, and no second node can mount it; set c.ElasticOrchestrator.move_method = 'restart', "
                "or a ReadWriteMany storage_class and storage_access_modes. A volume bound to one zone (most cloud "
                "disks) mounts only on that zone's nodes: a server moved elsewhere waits Pending",
                "/".join(modes) or "of no access mode")

    _warned_start_timeouts: ClassVar[set[tuple]] = set()

    def _warn_late_start_timeout(self, waited: int) -> None:
        """JupyterHub reads start_timeout when it calls start(), and KubeSpawner
        applies the profile inside start: a longer one (a cloud-burst profile
        waiting for a cloud node's boot) silently changed nothing."""
        if (waited, self.start_timeout) in type(self)._warned_start_timeouts:
            return
        type(self)._warned_start_timeouts.add((waited, self.start_timeout))
        self.log.warning("ElasticHub: a profile's start_timeout (%d) does not lengthen the hub's wait for a server: "
                         "JupyterHub waits %d s, read before the profile applies; set c.KubeSpawner.start_timeout to "
                         "the longest any profile needs", self.start_timeout, waited)
