"""Names ElasticHub writes on Kubernetes objects: the contract between the
spawner (which labels the pods) and the orchestrator (which reads them, and
marks the nodes it drains).

Everything lives under one prefix, so `kubectl get pods -l` / `kubectl
describe node` show an admin at a glance what ElasticHub owns. Label values
must be valid Kubernetes label values (63 characters of [A-Za-z0-9._-]);
raw JupyterHub names (any Unicode) go in annotations.
"""

from __future__ import annotations

PREFIX = "elastichub.io/"

# -- nodes (set by the admin, or the local cluster) ----------------------------
TIER_LABEL = PREFIX + "tier"  # "on-prem" | "cloud" (values configurable)

# -- single-user pods (set by ElasticSpawner) ----------------------------------
MANAGED_LABEL = PREFIX + "managed"  # "true": a server ElasticHub may account for and move
MIGRATABLE_LABEL = PREFIX + "migratable"  # "true" | "false": the orchestrator never moves "false"
USER_ANNOTATION = PREFIX + "user"  # the JupyterHub user name, unescaped
SERVER_NAME_ANNOTATION = PREFIX + "server-name"  # "" for the default server
VERSION_ANNOTATION = PREFIX + "spawner-version"
# Seconds the hub gives the pod to stop (KubeSpawner's delete_grace_period): the
# orchestrator deletes a live move's source with it too, so an admin's preStop hook
# gets the time it was given. Absent (older pods): KubeSpawner's default.
DELETE_GRACE_ANNOTATION = PREFIX + "delete-grace-period"
DEFAULT_DELETE_GRACE = 1

# -- nodes being drained (set by the orchestrator) -----------------------------
# A NoSchedule taint, as Karpenter marks the nodes it disrupts: it says why the
# node is cordoned, so a restarted orchestrator (or an admin) knows it is ours.
DRAIN_TAINT = PREFIX + "draining"
# JSON on the Node: the drain's plan and progress (see orchestrator docs).
DRAIN_ANNOTATION = PREFIX + "drain"

# -- moved servers (set by the orchestrator on a server's new pod) -------------
# When the user asked for the server (RFC 3339): its first pod's creation. A
# moved server keeps it, so that it is never taken for a new arrival (the
# policy sizes its reserve on recent arrivals) and its history row spans its moves.
ASKED_ANNOTATION = PREFIX + "asked"

# The node a drain moves the server off (set on its pod just before the drain
# stops it): ElasticSpawner's stop reads it, so that the next start says
# "Moving your server" only after a move ElasticHub made, never after the
# user's own stop and start that happened to land on another node.
MOVING_ANNOTATION = PREFIX + "moving-off"

# -- live moves (make-before-break; set on the destination pod) ----------------
# The source pod's name: a second pod of a server while it moves.
MOVE_OF_ANNOTATION = PREFIX + "move-of"
# When the server's first pod started (RFC 3339): a moved server keeps its age
# (the policy estimates how long a server still runs from it).
STARTED_ANNOTATION = PREFIX + "started"
# The route handshake: the orchestrator writes "requested" once the destination
# holds the state; the hub's ElasticSpawner claims it ("switching"), switches
# the server to the pod and answers "switched", or "refused: <why>"; an
# unclaimed request is "withdrawn". Each side changes the value only from the
# one it expects (a JSON patch test): a hub that claimed the pod has the last
# word, and one that was too late never switches to a pod being deleted.
ROUTE_ANNOTATION = PREFIX + "route"
ROUTE_REQUESTED, ROUTE_SWITCHING, ROUTE_SWITCHED = "requested", "switching", "switched"
ROUTE_REFUSED, ROUTE_WITHDRAWN = "refused", "withdrawn"
# The sessions (JSON, shaped like Jupyter Server's GET /api/sessions) the
# destination server re-creates under the same ids: an environment variable.
ADOPT_SESSIONS_ENV = "ELASTICHUB_ADOPT_SESSIONS"

TRUE, FALSE = "true", "false"

# -- KubeSpawner's own marks (ElasticSpawner's pods carry them too) ------------
# A pod with these and none of ours is a server KubeSpawner started before the
# hub switched to ElasticSpawner (or another hub's): a user's session all the same.
KUBESPAWNER_USER = "hub.jupyter.org/username"  # the annotation holds the raw name, the label a slug
KUBESPAWNER_SERVER_NAME = "hub.jupyter.org/servername"  # annotation, only on named servers


def server_key(user: str, server_name: str) -> str:
    """One string for a hub server: "alice" or "alice/gpu" (as the hub's
    own routes spell it)."""
    return f"{user}/{server_name}" if server_name else user
