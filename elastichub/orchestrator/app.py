"""`elastichub orchestrator`: the ElasticOrchestrator Application.

As jupyterhub-idle-culler does, the Application only wires configuration to
the logic (`Controller` and the adapters). Run it as a hub-managed service::

    c.JupyterHub.services = [{"name": "elastichub-orchestrator",
                              "command": ["elastichub", "orchestrator"],
                              "url": "http://127.0.0.1:10101"}]

or as a process of its own (JUPYTERHUB_API_URL and JUPYTERHUB_API_TOKEN in
its environment, or the matching traits). Every trait can be set in
``elastichub_orchestrator_config.py`` (``--generate-config`` writes one) or
on the command line (``--ElasticOrchestrator.theta_out=85``).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import secrets
import signal
import socket
import sys
import time
import zoneinfo
from urllib.parse import urlparse

from traitlets import Bool, CaselessStrEnum, Dict, Float, Integer, List, Unicode, default, validate
from traitlets.config import Application, TraitError

from .. import __version__, podmeta
from ..podspec import label_key_problem, tier_value_problem
from ..policy import PolicyConfig, Resources, make_strategy, option_names, theta_in_mistake, theta_out_mistake
from ..quantity import QuantityError, parse_cpu, parse_memory
from .controller import Controller, Settings
from .drain import DrainTimeouts
from .history import HistoryFile
from .startup import StartupError, check_names, kube_client
from .observe import ObserveConfig
from .timetable import TimetabledStrategy, TimetableFile, classes_around
from .tls import client_ssl, server_ssl
from .urls import URL_ENV, url_problem

SYNC_TIMEOUT = 60.0  # seconds for the first list of the nodes and of the pods


class ElasticOrchestrator(Application):
    name = "elastichub-orchestrator"
    version = __version__
    description = """Burst a JupyterHub on Kubernetes to cloud nodes before users wait, and give the
    nodes back as soon as on-prem has room, moving each user's server with its kernel state."""
    config_file_name = Unicode("elastichub_orchestrator_config.py", config=True,
                               help="The config file to load (a Python file setting c.ElasticOrchestrator.*).")
    generate_config = Bool(False, config=True, help="Write a default config file and exit.")

    aliases = {
        "config": "ElasticOrchestrator.config_file_name",
        "policy": "ElasticOrchestrator.policy",
        "theta-out": "ElasticOrchestrator.theta_out",
        "tmon": "ElasticOrchestrator.tmon",
        "tcool": "ElasticOrchestrator.tcool",
        "kubeconfig": "ElasticOrchestrator.kubeconfig",
        "cloud-driver": "ElasticOrchestrator.cloud_driver",
        "log-level": "Application.log_level",
    }
    flags = {
        "dry-run": ({"ElasticOrchestrator": {"dry_run": True}},
                    "Observe and decide every Tmon, log the decisions, change nothing."),
        "generate-config": ({"ElasticOrchestrator": {"generate_config": True}}, generate_config.help),
    }

    timetable_file: TimetableFile | None = None  # calendar_file, once read (not a setting)

    # -- the policy (the same names and meaning as `elastichub simulate`) ---------------------
    policy = Unicode("elastic", config=True, help="""Scaling strategy: 'elastic' (default), 'calendar' ('elastic'
        plus a class timetable, calendar_file: nodes are Ready when a class starts) or 'paper' (the published
        policy), as `elastichub simulate --policy` names them: tune on the simulator, run the same here.""")
    calendar_file = Unicode("", config=True, help="""Weekly class timetable, for policy 'calendar' (or 'elastic'):
        a CSV with the columns day (Mon..Sun, or a date YYYY-MM-DD for a one-off class), time (HH:MM, in
        calendar_timezone), users, cpu and ram_gib (each student's request), and optionally spread_s (how long
        the students take to arrive, default 600) and name. Read at start-up, and again each Tmon after it
        changes: an edit takes effect without a restart, and an edit that does not parse is refused (an event
        names the row and column) while the timetable in force stays.""")
    calendar_timezone = Unicode("UTC", config=True, help="""IANA time zone of calendar_file's times (e.g.
        'Europe/Berlin'): a class keeps its local time across daylight saving.""")
    theta_out = Float(80.0, config=True, help="""Scale-out threshold, percent of the RAM requests over the
        allocatable RAM of the active nodes (the paper's theta_out, eq. 2); at most 100 (a fraction such as 0.8 is
        refused: it would be 0.8 %).""")
    tmon = Float(15.0, config=True, help="Seconds between two observations (the paper's Tmon).")
    tcool = Float(580.0, config=True, help="Seconds after a scaling action before the next one (the paper's Tcool).")
    scale_out = Bool(True, config=True, help="Start cloud nodes at all (False: on-prem only, observe and report).")
    migration = Bool(True, config=True, help="""Move servers off cloud nodes to give them back early
        (False: only cloud nodes that emptied by themselves are stopped).""")
    policy_options = Dict(config=True, help="""Options of the strategy, as the policy names them
        (e.g. {"theta_in": 5, "boot_s": 290, "lifetime_mean_s": 3600} for 'elastic'); see the docs'
        strategies page.""")

    # -- Kubernetes -------------------------------------------------------------------------
    kubeconfig = Unicode("", config=True, help="""Kubeconfig file. Empty: the in-cluster service account when
        running in a pod, else $KUBECONFIG or ~/.kube/config.""")
    tier_label = Unicode(podmeta.TIER_LABEL, config=True, help="Node label that says a node's tier.")
    onprem_tier = Unicode("on-prem", config=True, help="Value of tier_label on on-prem nodes.")
    cloud_tier = Unicode("cloud", config=True, help="Value of tier_label on cloud nodes.")
    watch_timeout = Integer(300, config=True, help="Seconds of one watch request before it is renewed.")

    # -- the cloud --------------------------------------------------------------------------
    cloud_driver = Unicode("", config=True, help="""Apache Libcloud compute provider of the cloud pool: 'ec2',
        'gce', 'azure_arm', 'openstack', ... or 'module:Class' for a driver libcloud does not ship. Empty: no
        cloud (the loop observes and decides, and starts nothing).""")
    cloud_driver_args = List(config=True, help="""Positional arguments of the driver (usually key, secret).
        Empty: $ELASTICHUB_CLOUD_KEY and $ELASTICHUB_CLOUD_SECRET, where set.""")
    cloud_driver_kwargs = Dict(config=True, help="""Keyword arguments of the driver, e.g. {"region":
        "eu-west-1"} (EC2), {"datacenter": "us-central1-a", "project": "..."} (GCE).""")
    cloud_node_mapping = Unicode("name", config=True, help="""How a VM maps to its Kubernetes node: 'name' (the
        node is named like the VM) or 'tag:KEY' (the VM's tag/label KEY holds the node name).""")
    cloud_vm_name_prefix = Unicode("", config=True, help="Only VMs whose name starts with this are in the pool.")
    cloud_vm_tags = Dict(config=True, help="Only VMs carrying all these tags/labels are in the pool.")
    cloud_node_cpu = Unicode("4", config=True, help="""Allocatable CPU of a pool VM that has never registered
        as a node (a quantity); nodes that exist are read from Kubernetes.""")
    cloud_node_memory = Unicode("16Gi", config=True, help="Allocatable memory of such a VM (a quantity).")
    cloud_timeout = Float(120.0, config=True, help="Seconds one cloud call may take.")
    boot_timeout = Float(600.0, config=True, help="""Seconds from a VM's start to its node being Ready; past
        that the VM is stopped and kept out of the pool for a back-off.""")
    boot_backoff = Float(60.0, config=True, help="First back-off after a failed boot, doubling per failure.")
    boot_backoff_max = Float(3600.0, config=True, help="Longest back-off after failed boots.")

    # -- moving servers ---------------------------------------------------------------------
    shutdown_grace = Float(20.0, config=True, help="""At shutdown (SIGINT, SIGTERM), seconds a drain may take
        to finish a live move under way and the restart moves past their checkpoint (a stopped server is
        started elsewhere); restart moves not yet past it end at once. Keep it below what stops the process
        harder (the hub: 30 s to SIGTERM).""")
    busy_timeout = Float(300.0, config=True, help="""Seconds to wait for a kernel that is running a cell
        before a move; past that the node is given up for now (uncordoned) and tried in a later cycle.""")
    terminal_quiet = Float(120.0, config=True, help="""A terminal whose last input or output is more recent
        than this many seconds is in use, as is one whose shell runs a process: that process (a script, an
        install) cannot move with the server, so the move waits for it as for a running cell (busy_timeout).
        A terminal at its prompt and quieter than this is closed by the move.""")
    drain_concurrency = Integer(4, min=1, max=16, config=True, help="""Restart moves of one drain at once (1 to
        16), as far as the other nodes have room for them together (live moves go one at a time); 1: one at a time.""")
    checkpoint_timeout = Float(1800.0, config=True, help="Seconds one server's checkpoint may take.")
    stop_timeout = Float(180.0, config=True, help="Seconds for a server (or a VM) to stop.")
    start_timeout = Float(600.0, config=True, help="Seconds for a moved server to start and answer again.")
    move_method = CaselessStrEnum(["live", "restart"], "live", config=True, help="""How a server moves off a
        node being drained. "live" (make-before-break): a second pod of the server restores its kernels'
        state while the first serves; the user pauses only for the final delta and the route switch, and
        their open notebook tab keeps its kernels (same ids). Needs ElasticSpawner in the hub (it switches
        the route) and the pod permissions create/patch/delete. "restart" (break-before-make): checkpoint,
        stop, start elsewhere, restore; the tab sees its kernel die and restart. A server whose image lacks
        the kernel package moves by a restart either way.""")
    route_timeout = Float(30.0, config=True, help="""Live moves: seconds for the hub to switch a server to
        its destination pod; past that the move is undone (the source serves on).""")
    freeze_lease = Float(60.0, config=True, help="""Live moves: seconds a source kernel stays paused for the
        final step before it resumes by itself (so a crashed orchestrator never leaves a user's kernel
        paused). A cell that started just before the pause is waited for at most half of it.""")

    # -- JupyterHub -------------------------------------------------------------------------
    hub_api_url = Unicode(config=True, help="The hub's REST API. Default: $JUPYTERHUB_API_URL.")
    api_token = Unicode(config=True, help="""Token of this service. Default: $JUPYTERHUB_API_TOKEN. Its role
        needs the scopes list:users, read:users, servers, access:servers, admin:server_state (which pod
        serves a server: a live move whose destination pod is lost tells by it whether it switched) and
        tokens (each call to a user's server carries a token of that user's for that server only).""")
    proxy_url = Unicode(config=True, help="""Where the hub's proxy serves /user/... (reaching a user's
        server for its kernels and checkpoints): its address, with or without the hub's base_url.
        Default: $ELASTICHUB_PROXY_URL, else http://127.0.0.1:8000; on zero-to-jupyterhub http://proxy-public.""")
    service_url = Unicode(config=True, help="""Where to serve the status page, API and metrics.
        Default: $JUPYTERHUB_SERVICE_URL (set by the hub for a managed service); empty: no web server.""")
    service_prefix = Unicode(config=True, help="URL prefix. Default: $JUPYTERHUB_SERVICE_PREFIX or /.")
    authenticate_metrics = Bool(False, config=True, help="Require the hub's auth for /metrics too (read:metrics).")
    page_refresh = Integer(5, config=True, help="Seconds between refreshes of the status page.")
    history_hours = Float(6.0, config=True, help="Hours of timeline kept for the status page.")
    dry_run = Bool(False, config=True, help="Observe and decide, log the decisions, change nothing.")
    history_file = Unicode("", config=True, help="""Append each server session that ends to this CSV, in the
        format `elastichub simulate --trace` reads (arrival, duration_s, cpu, ram_gib, and user, server,
        waited_s): run with dry_run for a week or two, then let `elastichub simulate --trace FILE --tune`
        choose theta_out on your own hub's history. A session spans its moves. Empty: no history.""")

    @default("hub_api_url")
    def _hub_api_url(self):
        return os.environ.get("JUPYTERHUB_API_URL", "http://127.0.0.1:8081/hub/api")

    @default("api_token")
    def _api_token(self):
        return os.environ.get("JUPYTERHUB_API_TOKEN", "").strip()

    @validate("api_token")
    def _token(self, proposal):
        # Read from a file or a Secret, a token ends in a newline: in a header it stopped the start with a
        # traceback that quoted it, and failed every check of a page's visitor. No token holds whitespace.
        return proposal["value"].strip()

    @default("proxy_url")
    def _proxy_url(self):
        return os.environ.get("ELASTICHUB_PROXY_URL", "http://127.0.0.1:8000")

    @default("service_url")
    def _service_url(self):
        return os.environ.get("JUPYTERHUB_SERVICE_URL", "")

    @default("service_prefix")
    def _service_prefix(self):
        return os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/")

    @validate("tmon", "tcool", "boot_timeout", "boot_backoff", "boot_backoff_max", "busy_timeout",
              "checkpoint_timeout", "stop_timeout", "start_timeout", "cloud_timeout", "route_timeout",
              "freeze_lease", "terminal_quiet", "watch_timeout", "page_refresh", "history_hours", "shutdown_grace")
    def _positive(self, proposal):
        value, name = proposal["value"], proposal["trait"].name
        unit, year = ("hours", 365 * 24) if name == "history_hours" else ("seconds", 365 * 86400)
        if not 0 < value <= year:  # also refuses NaN, and inf (it would stop the start with a traceback)
            raise TraitError(f"ElasticOrchestrator.{name} must be > 0 {unit} and at most a year ({year} "
                             f"{unit}), not {value!r}")
        return value

    @validate("theta_out")
    def _theta_out(self, proposal):
        mistake = theta_out_mistake(proposal["value"])
        if mistake:
            raise TraitError(f"ElasticOrchestrator.{mistake}")
        return proposal["value"]

    @validate("tier_label")
    def _tier_label(self, proposal):
        problem = label_key_problem(proposal["value"])
        if problem:
            raise TraitError(f"ElasticOrchestrator.tier_label: {problem}")
        return proposal["value"]

    @validate("onprem_tier", "cloud_tier")
    def _tier(self, proposal):
        name, value = proposal["trait"].name, proposal["value"]
        problem = tier_value_problem(value, self.cloud_tier if name == "onprem_tier" else self.onprem_tier)
        if problem:
            raise TraitError(f"ElasticOrchestrator.{name}: {problem}")
        return value

    @validate("cloud_vm_tags")
    def _tags(self, proposal):
        # a VM's tags are text: {"pool": 1} never matched '1', and the pool was empty without a word
        for key, value in proposal["value"].items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise TraitError(f"ElasticOrchestrator.cloud_vm_tags: {key!r}: {value!r} is not text: a VM's tags are "
                                 f"text, write {str(key)!r}: {str(value)!r} (or what the cloud shows)")
        return proposal["value"]

    @validate("cloud_node_mapping")
    def _mapping(self, proposal):
        value = proposal["value"]
        if value != "name" and not (value.startswith("tag:") and len(value) > 4):
            raise TraitError(f"ElasticOrchestrator.cloud_node_mapping must be 'name' or 'tag:KEY', not {value!r}")
        return value

    @validate("hub_api_url", "proxy_url", "service_url")
    def _url(self, proposal):
        problem = url_problem(proposal["trait"].name, proposal["value"])
        if problem:
            raise TraitError(problem)
        return proposal["value"]

    # -- wiring -----------------------------------------------------------------------------

    def build_strategy(self, now: float | None = None):
        """The strategy, with the timetable of calendar_file if one is set
        (`now`: the clock it starts at, for the first day's classes)."""
        timetable = self.load_timetable()
        if "schedule" in self.policy_options:  # an empty one was dropped, others refused in internal terms
            raise StartupError("ElasticOrchestrator.policy_options: 'schedule' is not set here: the timetable is "
                               "ElasticOrchestrator.calendar_file, a CSV of day,time,users,cpu,ram_gib")
        mistake = theta_in_mistake(self.policy_options.get("theta_in"), self.theta_out)
        if mistake:
            raise StartupError(f"ElasticOrchestrator.policy_options: {mistake}")
        if self.policy == "calendar" and timetable is None:
            raise StartupError("ElasticOrchestrator.policy 'calendar' needs ElasticOrchestrator.calendar_file, "
                               "the weekly class timetable (or use policy 'elastic')")
        try:
            config = PolicyConfig(theta_out=self.theta_out, tmon=self.tmon, tcool=self.tcool,
                                  scale_out=self.scale_out, migration=self.migration)
            if timetable is None:
                return make_strategy(self.policy, config, **self.policy_options)
            entries, zone = timetable
            # what is still to come, so a timetable of past one-off dates only is named at start-up
            ahead = classes_around(entries, time.time() if now is None else now, zone, days_ahead=400,
                                   days_back=0)
            if not ahead:
                raise StartupError(f"ElasticOrchestrator.calendar_file {self.calendar_file}: no class "
                                   "today or later")
            takes = option_names(self.policy)
            if takes is not None and "schedule" not in takes:
                raise StartupError(f"ElasticOrchestrator.calendar_file: policy {self.policy!r} takes no "
                                   "timetable (use 'calendar' or 'elastic')")
            strategy = make_strategy(self.policy, config, **{**self.policy_options, "schedule": ahead})
            return TimetabledStrategy(strategy, entries, zone)
        except (ValueError, TypeError) as e:
            what = "policy / policy_options" + (" / calendar_file" if timetable is not None else "")
            raise StartupError(f"ElasticOrchestrator.{what}: {e}") from None

    def load_timetable(self):
        """(entries, zone) of calendar_file, or None without one; the file is
        kept in `timetable_file`, for the controller to follow its edits."""
        if not self.calendar_file:
            return None
        try:
            zone = zoneinfo.ZoneInfo(self.calendar_timezone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise StartupError(f"ElasticOrchestrator.calendar_timezone: unknown time zone "
                               f"{self.calendar_timezone!r} (an IANA name, e.g. 'Europe/Berlin')") from None
        self.timetable_file = TimetableFile(self.calendar_file)
        try:
            entries = self.timetable_file.load()
        except OSError as e:
            raise StartupError(f"ElasticOrchestrator.calendar_file: cannot read {self.calendar_file} "
                               f"({e.strerror or e})") from None
        except ValueError as e:
            raise StartupError(f"ElasticOrchestrator.calendar_file: {e}") from None
        return entries, zone

    def settings(self) -> Settings:
        if self.boot_backoff_max < self.boot_backoff:
            raise StartupError(f"ElasticOrchestrator.boot_backoff_max ({self.boot_backoff_max:g} s) is below "
                               f"boot_backoff ({self.boot_backoff:g} s), the first back-off it caps")
        try:
            default = Resources(parse_cpu(self.cloud_node_cpu) / 1000, float(parse_memory(self.cloud_node_memory)))
        except QuantityError as e:
            raise StartupError(f"ElasticOrchestrator.cloud_node_cpu / cloud_node_memory: {e}") from None
        for name, value in (("cloud_node_cpu", default.cpu), ("cloud_node_memory", default.ram)):
            if not value > 0:  # a node that adds nothing: every VM of the pool would be booted for one burst
                raise StartupError(f"ElasticOrchestrator.{name}: {getattr(self, name)!r} is nothing; a pool VM's "
                                   "allocatable must be above 0 (e.g. cloud_node_cpu '4', cloud_node_memory '16Gi')")
        if default.ram < 64 * 2**20:  # a quantity without unit is bytes: "16" for 16 GiB
            raise StartupError(f"ElasticOrchestrator.cloud_node_memory: {self.cloud_node_memory!r} is "
                               f"{default.ram:g} bytes, less than any node has (without a unit a quantity is "
                               "bytes: '16Gi' for 16 GiB)")
        return Settings(
            tmon=self.tmon, boot_timeout=self.boot_timeout, boot_backoff=self.boot_backoff,
            boot_backoff_max=self.boot_backoff_max, poll=min(1.0, self.tmon),
            drain=DrainTimeouts(busy=self.busy_timeout, checkpoint=self.checkpoint_timeout, stop=self.stop_timeout,
                                start=self.start_timeout, poll=min(1.0, self.tmon), route=self.route_timeout,
                                freeze_lease=self.freeze_lease, terminal_quiet=self.terminal_quiet,
                                concurrency=self.drain_concurrency),
            move_method=self.move_method,
            observe=ObserveConfig(self.onprem_tier, self.cloud_tier, default, self.tier_label),
            timeline_s=self.history_hours * 3600, dry_run=self.dry_run, shutdown_grace=self.shutdown_grace)

    def build_cloud(self):
        if not self.cloud_driver:
            self.log.warning("no cloud_driver configured: the orchestrator will decide but start no VM")
            return None
        from .cloud import CloudPool, load_driver

        args = list(self.cloud_driver_args)
        if not args and os.environ.get("ELASTICHUB_CLOUD_KEY"):  # stripped as api_token is
            args = [os.environ["ELASTICHUB_CLOUD_KEY"].strip()]
            if os.environ.get("ELASTICHUB_CLOUD_SECRET"):
                args.append(os.environ["ELASTICHUB_CLOUD_SECRET"].strip())
        try:
            driver = load_driver(self.cloud_driver, args, dict(self.cloud_driver_kwargs))
        except ValueError as e:
            raise StartupError(f"ElasticOrchestrator.cloud_driver: {e}") from None
        return CloudPool(driver, mapping=self.cloud_node_mapping, name_prefix=self.cloud_vm_name_prefix,
                         tags=dict(self.cloud_vm_tags), timeout=self.cloud_timeout)

    async def build_controller(self) -> tuple[Controller, list]:
        """Every adapter, checked once: an unreachable API fails here, in one line."""
        from .hub import HubClient, HubError
        from .kube import UNFINISHED_PODS, Informer, KubeNodes, KubePods, object_key, object_name
        from .records import node_record, pod_record

        strategy = self.build_strategy()
        settings = self.settings()
        boot_s = getattr(strategy, "boot_s", None)  # the boot time the policy plans with ('paper' has none)
        if boot_s is not None and self.boot_timeout < boot_s:
            raise StartupError(f"ElasticOrchestrator.boot_timeout ({self.boot_timeout:g} s) is below the boot time "
                               f"the policy plans with (policy_options boot_s, {boot_s:g} s): every VM would be "
                               "stopped before its node could be Ready; set boot_timeout above your cloud's boot time")
        for name in ("hub_api_url", "proxy_url", "service_url"):  # defaults from the environment are not validated
            problem = url_problem(name, getattr(self, name))
            if problem:
                raise StartupError(problem + f" (from ${URL_ENV[name]})")
        if not self.service_url:  # a service declared without a `url`: its pages are a 404 at the hub
            self.log.warning("no service_url ($JUPYTERHUB_SERVICE_URL): no status page, API or /metrics; give the "
                             "service a 'url' in c.JupyterHub.services (or set ElasticOrchestrator.service_url)")
        history = None
        if self.history_file:
            history = HistoryFile(self.history_file)
            try:
                history.check()
            except OSError as e:
                raise StartupError(f"ElasticOrchestrator.history_file: cannot write {self.history_file} "
                                   f"({e.strerror or e})") from None
            except ValueError as e:
                raise StartupError(f"ElasticOrchestrator.history_file: {e}") from None
        cloud = self.build_cloud()
        api, core = await kube_client(self.kubeconfig)
        closers = [api.close]
        try:
            await core.list_node(limit=1)
        except Exception as e:
            await api.close()
            raise StartupError(f"cannot reach the Kubernetes API at {api.configuration.host}: "
                               f"{type(e).__name__}: {e}") from None
        if cloud is not None:
            try:
                vms = await cloud.list()
            except Exception as e:
                await api.close()
                raise StartupError(f"cannot reach the cloud ({self.cloud_driver}): {e}") from None
            self.log.info("cloud pool: %d VM(s) (%s)", len(vms), ", ".join(f"{v.name}: {v.state}" for v in vms))
        if not self.api_token:
            await api.close()
            raise StartupError("no hub API token: set JUPYTERHUB_API_TOKEN (a managed service gets it) or "
                               "ElasticOrchestrator.api_token")
        hub = HubClient(self.hub_api_url, self.proxy_url, self.api_token, ssl_context=client_ssl(os.environ))
        try:
            version = await hub.check()
        except HubError as e:
            await api.close()
            await hub.close()
            raise StartupError(f"cannot use the hub API at {self.hub_api_url}: {e}") from None
        self.log.info("hub %s at %s; servers reached through %s", version, self.hub_api_url, self.proxy_url)
        if proxy_problem := await hub.proxy_problem():  # said only: a managed service's failed start ends the hub's
            self.log.warning(proxy_problem)
        nodes = Informer("nodes", core.list_node, lambda o: node_record(o, self.tier_label), object_name,
                         watch_timeout=self.watch_timeout, label_selector=self.tier_label)
        pods = Informer("pods", core.list_pod_for_all_namespaces, pod_record, object_key,
                        watch_timeout=self.watch_timeout, field_selector=UNFINISHED_PODS)
        controller = Controller(strategy, nodes, pods, KubeNodes(core), hub, cloud, settings,
                                kube_pods=KubePods(core), timetable=self.timetable_file, history=history)
        return controller, closers + [hub.close]

    async def run(self) -> None:
        controller, closers = await self.build_controller()
        informers = [asyncio.create_task(i.run(), name=f"informer-{i.name}")
                     for i in (controller.nodes, controller.pods)]
        server = None
        try:
            try:
                async with asyncio.timeout(SYNC_TIMEOUT):
                    await asyncio.gather(controller.nodes.synced.wait(), controller.pods.synced.wait())
            except TimeoutError:  # a role without list/watch of pods or nodes: a traceback said only that
                unread = [f"{i.name} ({i.last_error or 'no answer'})" for i in (controller.nodes, controller.pods)
                          if not i.synced.is_set()]
                raise StartupError(f"cannot read the cluster's {' and '.join(unread)} within {SYNC_TIMEOUT:g} s; "
                                   "`elastichub rbac` prints the permissions the orchestrator needs") from None
            if self.service_url:
                server = self._serve(controller)
            self.log.info("orchestrator running: policy %s, theta_out %g %%, Tmon %g s, Tcool %g s%s",
                          self.policy, self.theta_out, self.tmon, self.tcool, " (dry run)" if self.dry_run else "")
            await controller.run()
        finally:
            if server is not None:
                server.stop()
            await controller.close()
            for t in informers:
                t.cancel()
            await asyncio.gather(*informers, return_exceptions=True)
            for close in closers:
                await close()

    def _serve(self, controller):
        from tornado.httpserver import HTTPServer

        from .web import hub_oauth, make_app

        url = urlparse(self.service_url)
        hub_auth = hub_oauth(self.hub_api_url, self.api_token, self.service_prefix, controller.hub.me)
        if not hub_auth.access_scopes:  # not set by the hub: never "any user of the hub"
            hub_auth.access_scopes = controller.hub.page_scopes()
            self.log.info("status page: for tokens with %s", ", ".join(sorted(hub_auth.access_scopes)))
        app = make_app(controller, self.service_prefix, cookie_secret=secrets.token_bytes(32), hub_auth=hub_auth,
                       authenticate_metrics=self.authenticate_metrics, page_refresh_s=self.page_refresh)
        server = HTTPServer(app, ssl_options=server_ssl(self.service_url, os.environ))  # internal_ssl: https
        port, host = url.port or 80, url.hostname or ""
        try:
            try:
                server.listen(port, host)
            except OSError as e:
                if not (isinstance(e, socket.gaierror) or e.errno == errno.EADDRNOTAVAIL):
                    raise
                # The URL names a Service in front of this pod (zero-to-jupyterhub's "http://hub:10101"),
                # not an address of its own: listen on every interface, where the Service sends it.
                self.log.info("%s is not an address of this host: listening on port %d of every interface",
                              host, port)
                server.listen(port, "")
        except OSError as e:
            raise StartupError(f"cannot serve at ElasticOrchestrator.service_url {self.service_url}: "
                               f"{e.strerror or e} (another orchestrator running there?)") from None
        self.log.info("status page, API and metrics at %s%s", self.service_url.rstrip("/"), self.service_prefix)
        return server

    def start(self) -> None:
        if self.generate_config:
            self.write_default_config()
            return
        asyncio.run(self._main())

    def write_default_config(self) -> None:
        path = self.config_file_name
        if os.path.exists(path):
            raise StartupError(f"{path} exists already: not overwriting it")
        with open(path, "w") as f:
            f.write(self.generate_config_file())
        print(f"wrote {path}")

    async def _main(self) -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        # A managed service started from a background shell may inherit an
        # ignored SIGINT: install our handlers so the hub's stop is prompt.
        # SIGHUP (the shell it runs in lost its terminal) stops it as SIGTERM does, the move in flight
        # finished: its default ended it at once, a user's stopped server left for a next run. Not
        # where it is ignored (nohup): the admin asked it to outlive the terminal.
        hangup = () if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN else (signal.SIGHUP,)
        for sig in (signal.SIGINT, signal.SIGTERM, *hangup):
            loop.add_signal_handler(sig, self._stop_on, sig, task)
        try:
            await self.run()
        except asyncio.CancelledError:
            self.log.info("stopped")

    def _stop_on(self, sig: int, task: asyncio.Task) -> None:
        self.log.info("%s: stopping", signal.Signals(sig).name)
        task.cancel()

    # A config file that fails half-way must stop the start: run on the
    # defaults, the orchestrator would leave dry_run, the driver and the
    # thresholds behind without a word.
    raise_config_file_errors = True

    def initialize(self, argv=None) -> None:
        super().initialize(argv)
        if not self.generate_config:
            self._read_config_file()
        check_names(self.config, self.class_trait_names(config=True), self.__class__.__name__)
        # The modules log under "elastichub": through the Application's handler, at its level.
        package_log = logging.getLogger("elastichub")
        package_log.handlers = list(self.log.handlers)
        package_log.setLevel(self.log_level)
        package_log.propagate = False
        self.log.propagate = False

    def _read_config_file(self) -> None:
        path = self.config_file_name
        if not os.path.isfile(path):
            if "config_file_name" in self.cli_config.get("ElasticOrchestrator", {}):
                raise StartupError(f"--config {path}: " + ("a directory, not a config file" if os.path.isdir(path)
                                                           else "no such file"))
            return  # the default name, absent: the command line's settings alone
        try:
            self.load_config_file(path)
        except TraitError:
            raise
        except Exception as e:
            # A KeyError is what a file reading os.environ meets in a managed service's clean environment.
            hint = (" As a hub-managed service the orchestrator starts with a clean environment: give what the "
                    "file reads from os.environ in the service's 'environment', or the orchestrator a config file "
                    "of its own" if isinstance(e, KeyError) else "")
            raise StartupError(f"config file {path} failed ({type(e).__name__}: {e}): nothing of it is used."
                               + hint) from None

    @default("log_level")
    def _log_level(self):
        return logging.INFO

    @default("log_format")
    def _log_format(self):
        return "[%(name)s %(asctime)s %(levelname)s] %(message)s"


def main(argv: list[str] | None = None) -> int:
    """Run the orchestrator; a startup problem is one line on stderr and exit status 1."""
    try:
        app = ElasticOrchestrator.instance()
        app.initialize(argv)
        app.start()
    except (StartupError, TraitError) as e:
        print(f"elastichub orchestrator: error: {e}", file=sys.stderr)
        return 1
    return 0
