"""ElasticSpawner's pieces that are KubeSpawner's types rather than plain
data (those are podspec's): its memory and CPU settings, affinity as the
client models KubeSpawner builds a pod of, and a setting's copy.
"""

from __future__ import annotations

import math
import re

from jupyterhub.traitlets import ByteSpecification
from kubernetes_asyncio.client import ApiClient, V1Affinity, V1NodeAffinity
from kubespawner import KubeSpawner
from traitlets import Float, TraitError


class MemorySize(ByteSpecification):
    """JupyterHub's memory setting (bytes; K, M, G, T: powers of 1024), which
    also takes Kubernetes' Ki, Mi, Gi, Ti (the same powers): JupyterHub's own
    refused "2Gi" in a message that named no setting, and a list with a bare TypeError."""

    UNIT_SUFFIXES = {**ByteSpecification.UNIT_SUFFIXES, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    _TEXT = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)\s*(Ki|Mi|Gi|Ti|K|M|G|T)?$")

    def validate(self, obj, value):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
            return int(value)
        match = self._TEXT.match(value.strip()) if isinstance(value, str) else None
        if match is None:
            raise TraitError(f"The '{self.name}' trait of an {type(obj).__name__} instance: {value!r} is not a "
                             "memory size (bytes, or a number with K, M, G, T or Ki, Mi, Gi, Ti: powers of 1024 "
                             "either way, e.g. '512M', '2Gi')")
        return int(float(match[1]) * self.UNIT_SUFFIXES.get(match[2], 1))


class CpuAmount(Float):
    """JupyterHub's CPU setting (a number of cores), which also takes it as text: a profile option's
    free-form field ("Other...", KubeSpawner's unlisted_choice) gives `{value}` as a string, and
    JupyterHub's Float refused every one typed, "2" too. Kubernetes' millicores ("500m") are read too."""

    _TEXT = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)\s*(m)?$")

    def validate(self, obj, value):
        if isinstance(value, str):
            match = self._TEXT.match(value.strip())
            value = float(match[1]) / (1000 if match[2] else 1) if match else value
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
            return float(value)
        raise TraitError(f"The '{self.name}' trait of an {type(obj).__name__} instance: {value!r} is not a number of "
                         "CPUs (e.g. 2, 0.5, or Kubernetes' millicores: '500m')")


def memory_help(name: str) -> str:
    return KubeSpawner.class_traits()[name].help + """
        ElasticSpawner also takes Kubernetes' suffixes Ki, Mi, Gi, Ti (as K, M, G, T: powers of 1024)."""


def cpu_help(name: str) -> str:
    return KubeSpawner.class_traits()[name].help + """
        ElasticSpawner also takes it as text ("2", as a profile option's free-form field gives it) and in
        Kubernetes' millicores ("500m")."""


def with_model_preferences(affinity: V1Affinity | None, terms: list[dict]) -> V1Affinity:
    """`affinity` (a client model, or None) with `terms` (plain JSON) appended
    to its preferred node affinity, as models too."""
    affinity = affinity or V1Affinity()
    node = affinity.node_affinity = affinity.node_affinity or V1NodeAffinity()
    decode = ApiClient.__new__(ApiClient)._ApiClient__deserialize  # JSON -> models, nested ones too
    node.preferred_during_scheduling_ignored_during_execution = list(
        node.preferred_during_scheduling_ignored_during_execution or []) + [
        decode(term, "V1PreferredSchedulingTerm") for term in terms]
    return affinity


def setting_copy(value):
    """A setting's value with its dicts and lists copied, their other contents
    shared (a callable in `environment` is the admin's, kept as it is)."""
    if isinstance(value, dict):
        return {k: setting_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [setting_copy(v) for v in value]
    return value
