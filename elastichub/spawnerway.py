"""A pod in the way of a server's start: KubeSpawner, answered 409 when it
creates the pod, deletes the pod of that name at once (no grace, no
checkpoint) and tries again. A pod of the same name can still be running
the server's kernels: a hub that lost track of the server (a database
restored from a backup, a failed stop recorded as done), or one of another
server sharing the name. ElasticSpawner decides here what may go.
"""

from __future__ import annotations

from tornado import web

from . import podmeta
from .checkpoint_client import FAILED
from .spawnerchecks import for_staff


def pod_in_the_way(problem: str) -> web.HTTPError:
    """The error a start ends with when a running pod holds its pod's name:
    one line for the log and the user, as a bad setting's."""
    message = f"ElasticHub did not start the server: {problem}"
    error = web.HTTPError(409, "%s", message)
    error.jupyterhub_message = for_staff(message)
    return error


class PodInTheWay:
    """Mixed into ElasticSpawner: reads its reflector, checkpoints, log."""

    async def _clear_the_way(self, name: str) -> bool | None:
        """What to do with the pod `name` in the way of this start: None,
        leave it (KubeSpawner's backoff creates the pod again later); True,
        delete it at once (nothing of the user's runs in it); False, delete
        it with its grace period (its kernels have just checkpointed). A
        running pod that could not checkpoint, or of another server, raises."""
        pod = self.pod_reflector.pods.get(f"{self.namespace}/{name}")
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            # Not seen yet, or stopping: its kernels checkpoint as they shut down, which a
            # deletion without grace would cut short.
            self.log.info("ElasticHub: pod %s is in the way of the start of %s and %s; waiting", name,
                          self._log_name, "stopping" if pod else "not seen yet")
            return None
        if (pod.get("status") or {}).get("phase") != "Running":
            return True  # pending or ended: no kernel runs there
        annotations = pod["metadata"].get("annotations") or {}
        owner = (annotations.get(podmeta.USER_ANNOTATION), annotations.get(podmeta.SERVER_NAME_ANNOTATION, ""))
        if owner[0] is not None and owner != (self.user.name, self.name or ""):
            raise pod_in_the_way(
                f"pod {name} is running the server {owner[1]!r} of user {owner[0]!r} and has this server's pod "
                "name; it is not deleted (its kernels' state would be lost): stop that server, or give "
                "pod_name_template the server's name")
        try:
            url = self._get_pod_url(pod) + (self.server.base_url if self.server is not None else "/")
        except (KeyError, TypeError, ValueError) as e:  # not KubeSpawner's pod: no notebook-port, no IP
            raise pod_in_the_way(f"pod {name} is running and has this server's pod name, but its server cannot be "
                                 f"reached to checkpoint it ({type(e).__name__}: {e}); it is not deleted") from None
        outcome = await self._checkpoint(url, "before deleting the running pod in the way of the start of")
        if outcome.status == FAILED:
            raise pod_in_the_way(
                f"pod {name} of this server is still running (the hub had lost track of it) and its kernels could "
                f"not be checkpointed ({outcome.reason}); it is not deleted: save the work there, delete the pod "
                "(kubectl delete pod), then start again")
        self.last_checkpoint = outcome
        self._persist_state()
        self._plan_announcements()  # the start now restores what was just saved
        return False
