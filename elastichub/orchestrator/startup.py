"""What stops `elastichub orchestrator` at start: the checks of its
configuration that traitlets does not make, and loading the Kubernetes
configuration it finds."""

from __future__ import annotations

import difflib
import os

from .kube import in_cluster_environ


class StartupError(Exception):
    """Something the orchestrator needs is missing or unreachable at start: one line says what."""


def check_names(config, settings: list[str], class_name: str) -> None:
    """A misspelt setting (`c.ElasticOrchestrator.dryrun = True`) or class
    name is an error: traitlets only warns, and the orchestrator would run on
    the default, a dry run left real without a word. `config`: the loaded
    traitlets config; `settings`: the names of the class's settings."""
    for key in config.get(class_name, {}):
        if key not in settings:
            hint = difflib.get_close_matches(key, settings, n=1)
            raise StartupError(f"{class_name}.{key}: no such setting"
                               + (f" (did you mean {hint[0]}?)" if hint else "; --help-all lists them"))
    for section in config:
        if section != class_name and difflib.get_close_matches(section, [class_name], n=1, cutoff=0.8):
            raise StartupError(f"{section}.{', '.join(config[section]) or '...'}: no class {section} "
                               f"(did you mean {class_name}?)")


async def kube_client(kubeconfig: str):
    """The Kubernetes API client and its CoreV1Api, from `kubeconfig`, KUBECONFIG, ~/.kube/config or the
    pod's service account, in that order; StartupError in one line when none is there or it cannot load."""
    from kubernetes_asyncio import client, config

    if kubeconfig and not os.path.isfile(kubeconfig):
        raise StartupError(f"ElasticOrchestrator.kubeconfig {kubeconfig}: no such file")
    in_pod = None if kubeconfig or os.environ.get("KUBECONFIG") else in_cluster_environ(os.environ)
    if not kubeconfig and in_pod is None:
        # kubernetes_asyncio takes a missing file for an empty one: "Expected key current-context".
        where = os.environ.get("KUBECONFIG") or "~/.kube/config"
        if not any(os.path.isfile(os.path.expanduser(path)) for path in where.split(os.pathsep) if path):
            raise StartupError(f"no Kubernetes configuration: {where} does not exist, and this is not a pod with "
                               "a service account; set ElasticOrchestrator.kubeconfig (--kubeconfig) or KUBECONFIG")
    try:
        if kubeconfig:
            await config.load_kube_config(config_file=kubeconfig)
        elif in_pod is not None:
            config.load_incluster_config(environ=in_pod)
        else:
            await config.load_kube_config()
    except Exception as e:
        raise StartupError(f"cannot load the Kubernetes configuration ({kubeconfig or 'default'}): "
                           f"{e}") from None
    api = client.ApiClient()
    return api, client.CoreV1Api(api)
