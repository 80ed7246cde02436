# ElasticHub: example JupyterHub configuration (docs: how-to "Deploy on a real cluster").
#
# One file configures the hub, ElasticSpawner and the orchestrator service:
# the orchestrator is started with `--config` pointing at this same file and
# reads its `c.ElasticOrchestrator` settings from it (the hub ignores them).
# `elastichub demo` runs this very file on a local cluster: the block at the
# end, which only the demo turns on, points it there.
#
# On a real cluster, change (docs: how-to "Deploy on a real cluster"):
# - the service's "url" below: where the proxy reaches the orchestrator;
# - the cloud pool's settings (driver, region, tags) at the end, and give the
#   service its credentials through the hub's environment (see the service);
# - proxy_url, where the orchestrator reaches the users' servers;
# - the images: `elastichub` in the hub's, `elastichub-kernel` in every
#   single-user one, both installed from this repository (neither is on PyPI).

import json
import os
import sys

c = get_config()  # noqa: F821 (injected by JupyterHub and by the orchestrator's config loader)

# -- ElasticSpawner ----------------------------------------------------------------------------
# KubeSpawner that fills on-prem nodes first (preferred node affinity: on-prem
# weight 10, cloud 1, the paper's priorities), labels its pods for the
# orchestrator, and has the kernels checkpoint before a stop. Nodes carry the
# label elastichub.io/tier=on-prem|cloud: `kubectl label node NAME elastichub.io/tier=on-prem`.
c.JupyterHub.spawner_class = "elastic"
# The defaults, spelled out:
# c.ElasticSpawner.tier_label = "elastichub.io/tier"
# c.ElasticSpawner.onprem_tier = "on-prem"
# c.ElasticSpawner.cloud_tier = "cloud"
# c.ElasticSpawner.onprem_weight = 10
# c.ElasticSpawner.cloud_weight = 1
# c.ElasticSpawner.checkpoint_timeout = 120  # seconds a stop waits for the kernels' checkpoint
c.KubeSpawner.cpu_guarantee = 0.5
c.KubeSpawner.mem_guarantee = "1G"  # RAM requests: what the orchestrator's occupancy counts
# Every single-user image has the Elastic Python kernel installed from this
# repository's kernel/ directory, a distribution of its own (not on PyPI), under the
# stock kernel's name: notebooks open with the kernel their metadata names, almost always
# `python3`, and only Elastic kernels move with their state (docs: deploy, section 2).
# `COPY kernel /tmp/elastichub-kernel` in the image's build, then
#   pip install /tmp/elastichub-kernel
#   python -m elastichub_kernel install --sys-prefix --name python3 --display-name "Python 3 (ipykernel)"
# Its checkpoints go to the home directories' shared volume (NFS), mounted on
# every node, so a moved server finds its files and its kernels' checkpoints.
c.KubeSpawner.environment = {"ELASTICHUB_CHECKPOINT_DIR": "/home/jovyan/.elastichub/checkpoints"}
# Servers the orchestrator must never move (GPU, exams): a profile that pins them.
c.KubeSpawner.profile_list = [
    {"display_name": "Notebook", "slug": "notebook", "default": True},
    {"display_name": "Exam (never moved)", "slug": "exam", "kubespawner_override": {"migratable": False}},
]

# -- The orchestrator, a hub-managed service with only the scopes it needs ------------------------
c.JupyterHub.services = [
    {
        "name": "elastichub-orchestrator",
        "command": [sys.executable, "-m", "elastichub", "orchestrator", f"--config={__file__}"],
        # Its status page, JSON API and metrics: where the proxy reaches them and
        # the orchestrator listens. 127.0.0.1 when the proxy runs on the hub's host.
        # zero-to-jupyterhub: "http://hub:10101" (the hub's Service; the
        # orchestrator then listens on port 10101 of every interface), plus the
        # chart's hub.service.extraPorts and hub.networkPolicy.ingress for that port.
        "url": "http://127.0.0.1:10101",
        # A managed service starts with a clean environment: pass it the cloud
        # credentials the hub has (the Kubernetes API needs nothing here: in a pod
        # the orchestrator uses the in-cluster service account by itself).
        "environment": {name: os.environ[name] for name in ("ELASTICHUB_CLOUD_KEY", "ELASTICHUB_CLOUD_SECRET")
                        if name in os.environ},
        "oauth_no_confirm": True,  # the hub's own service: no "authorize" page for the admins
    }
]
c.JupyterHub.load_roles = [
    {
        "name": "elastichub-orchestrator",
        "services": ["elastichub-orchestrator"],
        "scopes": ["list:users", "read:users", "servers", "access:servers", "admin:server_state", "tokens"],
    }
]
# Thresholds, with the names `elastichub simulate` uses: tune them on your
# hub's history first (`elastichub simulate --trace history.csv --tune --slo-p95-wait 60`),
# which the orchestrator records for you, in dry_run too:
# c.ElasticOrchestrator.history_file = "/srv/jupyterhub/elastichub-history.csv"
c.ElasticOrchestrator.policy = "elastic"
c.ElasticOrchestrator.theta_out = 80  # percent of the active nodes' RAM requested
c.ElasticOrchestrator.tmon = 15  # seconds between observations
c.ElasticOrchestrator.tcool = 580  # seconds after a scaling action before the next
# The cloud pool through Apache Libcloud: stopped EC2 instances tagged
# elastichub.io/pool=cloud, each tagged with the node name it registers as.
# Credentials: ELASTICHUB_CLOUD_KEY / ELASTICHUB_CLOUD_SECRET (access key id, secret
# access key) in the service's environment, passed on from the hub's above (other
# clouds, Azure's four arguments: docs, deploy section 5).
c.ElasticOrchestrator.cloud_driver = "ec2"
c.ElasticOrchestrator.cloud_driver_kwargs = {"region": "eu-west-1"}
c.ElasticOrchestrator.cloud_vm_tags = {"elastichub.io/pool": "cloud"}
c.ElasticOrchestrator.cloud_node_mapping = "tag:elastichub.io/node"
# zero-to-jupyterhub's proxy Service; with the chart's autohttps, proxy-public is
# Traefik redirecting to HTTPS: use "http://proxy-http:8000" then.
c.ElasticOrchestrator.proxy_url = "http://proxy-public"

# -- `elastichub demo` only: the same hub on the local cluster -------------------------------------
if os.environ.get("ELASTICHUB_DEMO"):
    with open(os.environ["ELASTICHUB_DEMO"]) as f:
        demo = json.load(f)
    work = demo["workdir"]
    c.JupyterHub.ip = "127.0.0.1"
    c.JupyterHub.port = demo["port"]
    c.JupyterHub.hub_ip = "127.0.0.1"
    c.JupyterHub.hub_port = demo["hub_port"]
    c.JupyterHub.db_url = f"sqlite:///{work}/jupyterhub.sqlite"
    c.JupyterHub.cookie_secret_file = f"{work}/jupyterhub_cookie_secret"
    c.JupyterHub.pid_file = f"{work}/jupyterhub.pid"
    c.JupyterHub.cleanup_servers = True
    c.ConfigurableHTTPProxy.command = [demo["proxy"]]
    c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{demo['proxy_api_port']}"
    c.JupyterHub.authenticator_class = "dummy"  # any user name, one shared password
    c.DummyAuthenticator.password = demo["password"]
    c.Authenticator.admin_users = {"admin"}
    c.JupyterHub.default_url = "/hub/home"
    # The local cluster's pods run this environment's jupyterhub-singleuser; small servers.
    c.KubeSpawner.cmd = ["jupyterhub-singleuser"]
    c.KubeSpawner.args = ["--allow-root"] if demo["allow_root"] else []
    c.KubeSpawner.mem_guarantee = "1G"
    c.KubeSpawner.cpu_guarantee = 0.1
    c.KubeSpawner.start_timeout = 180
    # Each student's home (and checkpoints) in a directory of their own, as a home volume would be.
    c.KubeSpawner.working_dir = f"{work}/home/{{username}}"
    # HOME too: the servers' and kernels' files (~/.local/share/jupyter/runtime, ~/.ipython) went to the
    # admin's own home and stayed there, run after run; here they go with the demo's directory.
    c.KubeSpawner.environment = {"ELASTICHUB_CHECKPOINT_DIR": f"{work}/home/{{username}}/.elastichub/checkpoints",
                                 "HOME": f"{work}/home/{{username}}"}

    def make_home(spawner):
        os.makedirs(f"{work}/home/{spawner.user.name}", exist_ok=True)

    c.Spawner.pre_spawn_hook = make_home
    c.KubeSpawner.profile_list = []
    # The orchestrator: the local cluster's cloud pool, Tmon/Tcool scaled down from 15 s / 580 s.
    c.JupyterHub.services[0]["url"] = f"http://127.0.0.1:{demo['service_port']}"
    # A managed service starts with a clean environment: it reads this block too.
    c.JupyterHub.services[0]["environment"] = {"ELASTICHUB_DEMO": os.environ["ELASTICHUB_DEMO"]}
    c.JupyterHub.services.append({"name": "elastichub-demo", "api_token": demo["token"]})
    c.JupyterHub.load_roles.append({
        "name": "elastichub-demo", "services": ["elastichub-demo"],
        "scopes": ["admin:users", "admin:servers", "tokens", "access:servers", "read:users", "access:services"]})
    c.ElasticOrchestrator.tmon = demo["tmon"]
    c.ElasticOrchestrator.tcool = demo["tcool"]
    c.ElasticOrchestrator.theta_out = demo["theta_out"]
    c.ElasticOrchestrator.policy_options = {"boot_s": demo["boot_s"]}
    c.ElasticOrchestrator.kubeconfig = demo["kubeconfig"]
    c.ElasticOrchestrator.cloud_driver = "elastichub.localcluster.cloud:LocalClusterNodeDriver"
    c.ElasticOrchestrator.cloud_driver_kwargs = {"host": demo["cluster_host"], "port": demo["cluster_port"]}
    c.ElasticOrchestrator.cloud_vm_tags = {}
    c.ElasticOrchestrator.cloud_node_mapping = "name"
    c.ElasticOrchestrator.proxy_url = f"http://127.0.0.1:{demo['port']}"
    c.ElasticOrchestrator.boot_timeout = max(120, 2 * demo["boot_s"])  # `--boot-delay 290`, as the paper's cloud
    # Each session that ends, as a trace for `elastichub simulate --trace history.csv --tune`.
    c.ElasticOrchestrator.history_file = f"{work}/history.csv"
    c.ElasticOrchestrator.busy_timeout = 60
