# ElasticHub: example JupyterHub configuration.
#
# The spawner part is real (see docs/spawner.md). SKETCH for the orchestrator:
# the service is not built yet (see the issue tracker); settings marked
# "(planned)" name the traits it will read and are not read by anything yet.

c = get_config()  # noqa: F821 (injected by JupyterHub)

# ElasticSpawner: KubeSpawner that fills on-prem nodes first (preferred node
# affinity, on-prem weight 10, cloud 1: the paper's priorities), labels its
# pods for the orchestrator, and has the kernels checkpoint before a stop.
# Nodes carry the label elastichub.io/tier=on-prem|cloud (the local cluster
# sets it; label your real nodes the same way).
c.JupyterHub.spawner_class = "elastic"
# The defaults, spelled out:
# c.ElasticSpawner.tier_label = "elastichub.io/tier"
# c.ElasticSpawner.onprem_tier = "on-prem"
# c.ElasticSpawner.cloud_tier = "cloud"
# c.ElasticSpawner.onprem_weight = 10
# c.ElasticSpawner.cloud_weight = 1
# c.ElasticSpawner.checkpoint_timeout = 120  # seconds a stop waits for the kernels' checkpoint
c.KubeSpawner.cpu_guarantee = 0.5
c.KubeSpawner.mem_guarantee = "1G"
# Every single-user image has the Elastic Python kernel installed
# (python -m elastichub_kernel install --sys-prefix). Its checkpoints go to
# the home directories' shared volume (NFS), mounted on every node, so a
# moved server finds the same files and the kernel's checkpoints.
c.KubeSpawner.environment = {"ELASTICHUB_CHECKPOINT_DIR": "/home/jovyan/.elastichub/checkpoints"}
# Servers the orchestrator must never move (GPU, exams): a profile that pins them.
c.KubeSpawner.profile_list = [
    {"display_name": "Notebook", "slug": "notebook", "default": True},
    {"display_name": "Exam (never moved)", "slug": "exam", "kubespawner_override": {"migratable": False}},
]

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
