# ElasticHub: example JupyterHub configuration.
#
# SKETCH: ElasticSpawner and the orchestrator service are not built yet (see
# the issue tracker). What runs today is plain KubeSpawner with the on-prem /
# cloud preference ElasticHub relies on, and the service + role definitions
# the orchestrator will use. Settings marked "(planned)" name the traits the
# orchestrator and spawner will read; they are not read by anything yet.

c = get_config()  # noqa: F821 (injected by JupyterHub)

# Servers go to on-prem nodes first, cloud nodes second: the node affinity
# weights of the paper (on-prem priority 10, cloud 1). Nodes carry the label
# elastichub.io/tier=on-prem|cloud (the local cluster sets it; label your
# real nodes the same way).
c.JupyterHub.spawner_class = "kubespawner.KubeSpawner"
c.KubeSpawner.node_affinity_preferred = [
    {
        "weight": 10,
        "preference": {
            "matchExpressions": [
                {"key": "elastichub.io/tier", "operator": "In", "values": ["on-prem"]}
            ]
        },
    },
    {
        "weight": 1,
        "preference": {
            "matchExpressions": [
                {"key": "elastichub.io/tier", "operator": "In", "values": ["cloud"]}
            ]
        },
    },
]
# Home directories on the shared NFS volume, mounted on every node, so a
# moved server finds the same files and the kernel's checkpoints.
c.KubeSpawner.cpu_guarantee = 0.5
c.KubeSpawner.mem_guarantee = "1G"
# Every single-user image has the Elastic Python kernel installed
# (python -m elastichub_kernel install --sys-prefix); make it the default.
c.KubeSpawner.environment = {"ELASTICHUB_CHECKPOINT_DIR": "/home/jovyan/.elastichub/checkpoints"}

# (planned) The orchestrator as a hub-managed service with only the scopes it needs.
c.JupyterHub.services = [
    {
        "name": "elastichub-orchestrator",
        "command": ["elastichub", "orchestrator"],
        "url": "http://127.0.0.1:10101",
    }
]
c.JupyterHub.load_roles = [
    {
        "name": "elastichub-orchestrator",
        "scopes": ["list:users", "read:users", "admin:servers", "access:servers"],
        "services": ["elastichub-orchestrator"],
    }
]
# (planned) Thresholds, shared with `elastichub simulate` so an admin can tune
# them on the simulator first:
# c.ElasticOrchestrator.theta_out = 80
# c.ElasticOrchestrator.tmon = 15
# c.ElasticOrchestrator.tcool = 580
