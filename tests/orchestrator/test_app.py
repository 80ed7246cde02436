"""`elastichub orchestrator` as an admin runs it: bad settings and unreachable
APIs end it at start with one line naming the problem and a non-zero status."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from unittest.mock import Mock

import pytest
from podtools import cluster_config

from elastichub.orchestrator.hub import HubClient

pytestmark = [pytest.mark.timeout(60)]


def orchestrator(*args: str, cwd=None, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "elastichub", "orchestrator", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout)


def one_error_line(result) -> str:
    assert result.returncode != 0, result
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower() or "CRITICAL" in line]
    assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr
    return errors[0]


@pytest.mark.parametrize("args, named", [
    (["--policy=nope"], "unknown policy 'nope'"),
    (["--tmon=-1"], "tmon must be > 0"),
    (["--theta-out=lots"], "theta_out"),
    (["--theta-out=0.8"], "0.8 looks like a fraction and would start cloud nodes at 0.8 % occupancy: use 80"),
    (["--theta-out=0"], "ElasticOrchestrator.theta_out must be above 0 (a percentage of RAM occupancy, 80 means 80 %)"),
    (["--theta-out=-5"], "ElasticOrchestrator.theta_out must be above 0 (a percentage of RAM occupancy, 80 means 80 %), "
                         "got -5"),
    (["--ElasticOrchestrator.watch_timeout=-1"], "watch_timeout must be > 0 seconds and at most a year"),
    (["--ElasticOrchestrator.page_refresh=0"], "page_refresh must be > 0 seconds and at most a year (31536000 "
                                               "seconds), not 0"),
    (["--ElasticOrchestrator.history_hours=-1"], "history_hours must be > 0 hours and at most a year (8760 hours), "
                                                 "not -1.0"),
    (["--ElasticOrchestrator.history_hours=inf"], "history_hours must be > 0 hours and at most a year (8760 hours), "
                                                  "not inf"),
    (["--ElasticOrchestrator.tcool=1e300"], "tcool must be > 0 seconds and at most a year"),
    (["--ElasticOrchestrator.drain_concurrency=0"], "The value of the 'drain_concurrency' trait of an "
                                                    "ElasticOrchestrator instance should not be less than 1"),
    (["--ElasticOrchestrator.drain_concurrency=64"], "'drain_concurrency' trait of an ElasticOrchestrator instance "
                                                     "should not be greater than 16"),
    # a VM stopped at 120 s that takes 290 s to boot: every scale-out a failure, every VM in back-off
    (["--ElasticOrchestrator.boot_timeout=120"], "ElasticOrchestrator.boot_timeout (120 s) is below the boot time the "
                                                 "policy plans with (policy_options boot_s, 290 s): every VM would"),
    (["--ElasticOrchestrator.boot_backoff=100", "--ElasticOrchestrator.boot_backoff_max=1"],
     "boot_backoff_max (1 s) is below boot_backoff (100 s), the first back-off it caps"),
    (["--theta-out=800"], "theta_out is a percentage of RAM occupancy, at most 100; at 800 no cloud node would"),
    (["--ElasticOrchestrator.cloud_node_mapping=label"], "cloud_node_mapping"),
    (["--ElasticOrchestrator.cloud_vm_tags={'pool': 1}"], "ElasticOrchestrator.cloud_vm_tags: 'pool': 1 is not text: a "
                                                         "VM's tags are text, write 'pool': '1'"),
    (["--ElasticOrchestrator.cloud_node_memory=big"], "cloud_node_memory"),
    (["--ElasticOrchestrator.cloud_node_memory=0"], "ElasticOrchestrator.cloud_node_memory: '0' is nothing; a pool "
                                                    "VM's allocatable must be above 0"),
    (["--ElasticOrchestrator.cloud_node_cpu=0m"], "ElasticOrchestrator.cloud_node_cpu: '0m' is nothing"),
    (["--ElasticOrchestrator.cloud_node_memory=16"], "ElasticOrchestrator.cloud_node_memory: '16' is 16 bytes, less "
                                                     "than any node has (without a unit a quantity is bytes"),
    (["--cloud-driver=nosuchcloud"], "unknown libcloud compute provider 'nosuchcloud'"),
    (["--cloud-driver=nosuchmodule:Driver"], "cannot be imported"),
    (["--ElasticOrchestrator.policy_options={'theta_in': -3}"], "theta_in"),
    (["--ElasticOrchestrator.policy_options={'theta_in': 0.05}"],
     "theta_in is a percentage (5 means a gap of 5 % of on-prem below theta_out); 0.05 looks like a fraction and "
     "would keep a gap of 0.05 %: use 5"),
    (["--ElasticOrchestrator.policy_options={'theta_in': 95}"],
     "theta_in 95 is the gap below theta_out kept after a scale-in: above theta_out 80 no node would ever be"),
    (["--ElasticOrchestrator.policy_options={'no_such_option': 1}"],
     "policy 'elastic' has no option 'no_such_option': its options are boot_s, delay_after_add_s"),
    (["--policy=paper", "--ElasticOrchestrator.policy_options={'boot_s': 290}"],
     "policy 'paper' has no option 'boot_s': it takes none"),
    (["--ElasticOrchestrator.policy_options={'schedule': []}"], "policy_options: 'schedule' is not set here: the "
                                                                "timetable is ElasticOrchestrator.calendar_file"),
    (["--policy=calendar"], "policy 'calendar' needs ElasticOrchestrator.calendar_file"),
    (["--ElasticOrchestrator.calendar_file=absent.csv"], "calendar_file: cannot read absent.csv"),
    (["--ElasticOrchestrator.calendar_file=t.csv", "--ElasticOrchestrator.calendar_timezone=Mars/Olympus"],
     "calendar_timezone: unknown time zone 'Mars/Olympus'"),
    (["--ElasticOrchestrator.calendar_file=bad.csv"], "calendar file bad.csv row 2: column 'day' must be a weekday"),
    (["--ElasticOrchestrator.calendar_file=past.csv"], "calendar_file past.csv: no class today or later"),
    (["--policy=paper", "--ElasticOrchestrator.calendar_file=t.csv"], "policy 'paper' takes no timetable"),
    (["--ElasticOrchestrator.history_file=no/such/dir/h.csv"],
     "history_file: cannot write no/such/dir/h.csv (No such file or directory)"),
    (["--ElasticOrchestrator.history_file=t.csv"], "ElasticOrchestrator.history_file: t.csv holds the columns "
                                                    "'day,time,users,cpu,ram_gib', not a history's"),
    (["--ElasticOrchestrator.tier_label=my tier"], "tier_label: 'my tier' is not a Kubernetes label key"),
    (["--ElasticOrchestrator.onprem_tier=cloud"], "onprem_tier: 'cloud' is the other tier's value too"),
    (["--ElasticOrchestrator.cloud_tier=Cloud Nodes"], "cloud_tier: 'Cloud Nodes' is not a Kubernetes label value"),
    # a port out of range was a traceback once the hub answered; no scheme served on port 80
    (["--ElasticOrchestrator.service_url=http://127.0.0.1:99999"],
     "ElasticOrchestrator.service_url: 'http://127.0.0.1:99999': Port out of range 0-65535"),
    (["--ElasticOrchestrator.service_url=hub:10101"],
     "ElasticOrchestrator.service_url: 'hub:10101' is not an http(s) URL with a host"),
    (["--ElasticOrchestrator.proxy_url=proxy-public"],
     "ElasticOrchestrator.proxy_url: 'proxy-public' is not an http(s) URL with a host"),
    (["--config=absent.py"], "--config absent.py: no such file"),
    (["--config=conf.d"], "--config conf.d: a directory, not a config file"),
    (["--kubeconfig=absent.yaml"], "ElasticOrchestrator.kubeconfig absent.yaml: no such file"),
    (["--cloud-driver=ec2"], "cloud driver 'ec2' rejected its arguments: TypeError: EC2NodeDriver.__init__() missing 1 "
                             "required positional argument: 'key' (no credentials given: set ELASTICHUB_CLOUD_KEY"),
    # the hub's config file read by the service, which gets a clean environment: not silently the defaults
    (["--config=hub.py"], "config file hub.py failed (KeyError: 'GITHUB_CLIENT_SECRET'): nothing of it is used"),
    (["--config=typed.py"], "The 'theta_out' trait of an ElasticOrchestrator instance expected a float"),
    # a misspelt setting or class: traitlets only warned, and the orchestrator ran on the default (no dry run)
    (["--ElasticOrchestrator.dryrun=True"], "ElasticOrchestrator.dryrun: no such setting (did you mean dry_run?)"),
    (["--config=misspelt.py"], "ElasticOrchestrator.thetaout: no such setting (did you mean theta_out?)"),
    (["--config=misnamed.py"], "ElasticOrchestartor.dry_run: no class ElasticOrchestartor (did you mean "
                               "ElasticOrchestrator?)"),
])
def test_bad_settings_are_one_line_naming_them(args, named, tmp_path):
    (tmp_path / "t.csv").write_text("day,time,users,cpu,ram_gib\nTue,10:00,100,1,2\n")
    (tmp_path / "bad.csv").write_text("day,time,users,cpu,ram_gib\nTue,10:00,100,1,2\nTuesdays,10:00,1,1,2\n")
    (tmp_path / "past.csv").write_text("day,time,users,cpu,ram_gib\n2020-01-14,10:00,40,1,2\n")
    (tmp_path / "hub.py").write_text("import os\nc.ElasticOrchestrator.dry_run = True\n"
                                     "c.GitHubOAuthenticator.client_secret = os.environ['GITHUB_CLIENT_SECRET']\n")
    (tmp_path / "typed.py").write_text("c.ElasticOrchestrator.theta_out = 'high'\n")
    (tmp_path / "misspelt.py").write_text("c.ElasticOrchestrator.log_level = 'DEBUG'\n"
                                          "c.ElasticOrchestrator.thetaout = 85\n")
    (tmp_path / "misnamed.py").write_text("c.ElasticOrchestartor.dry_run = True\n")
    (tmp_path / "conf.d").mkdir()
    assert named in one_error_line(orchestrator(*args, cwd=tmp_path))


def test_no_kubeconfig_outside_a_pod_is_named_not_taken_for_an_empty_file(tmp_path):
    # An admin's first --dry-run on a machine without one was told "Invalid kube-config file.
    # Expected key current-context", after a stray "Config not found" line.
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "absent.yaml")}
    result = subprocess.run([sys.executable, "-m", "elastichub", "orchestrator", "--dry-run"], capture_output=True,
                            text=True, cwd=tmp_path, env=env, timeout=30)
    line = one_error_line(result)
    assert f"no Kubernetes configuration: {tmp_path / 'absent.yaml'} does not exist, and this is not a pod" in line
    assert "current-context" not in result.stderr and "Config not found" not in result.stderr


def test_a_config_file_that_does_not_run_is_named_without_a_hint_that_does_not_apply(tmp_path):
    # The clean-environment hint is for a file reading os.environ (a KeyError), not for a typo.
    (tmp_path / "typo.py").write_text("c.ElasticOrchestrator.theta_out = (85\n")
    line = one_error_line(orchestrator("--config=typo.py", cwd=tmp_path))
    assert "config file typo.py failed (SyntaxError" in line and line.endswith("nothing of it is used."), line


def test_a_timetable_gives_the_calendar_strategy_its_classes(tmp_path):
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from elastichub.orchestrator.app import ElasticOrchestrator

    (tmp_path / "t.csv").write_text("day,time,users,cpu,ram_gib,name\nTue,10:00,100,1,2,stats\n")
    app = ElasticOrchestrator(policy="calendar", calendar_file=str(tmp_path / "t.csv"),
                              calendar_timezone="Europe/Berlin", policy_options={"boot_s": 120})
    monday = datetime(2027, 1, 11, 12, 0, tzinfo=ZoneInfo("Europe/Berlin")).timestamp()
    strategy = app.build_strategy(now=monday)
    assert strategy.name == "calendar" and strategy.config.theta_out == app.theta_out
    names = [c.name for c in strategy.schedule_at(monday)]
    assert names == ["stats 2027-01-12 10:00"] and strategy.schedule_at(monday)[0].users == 100
    # the status API lists the classes of the coming day
    from elastichub.orchestrator.timetable import classes_ahead

    def classes(now):
        return classes_ahead(strategy, now)

    tuesday_10 = monday + 22 * 3600
    # shown at the timetable's local time, whatever the zone of the orchestrator's process (UTC in a pod)
    assert classes(monday) == [{"name": "stats 2027-01-12 10:00", "start": tuesday_10, "users": 100,
                                "local": "Tue 10:00"}]
    assert classes(monday - 3 * 3600) == []  # more than a day ahead
    assert len(classes(tuesday_10 + 300)) == 1 and classes(tuesday_10 + 601) == []  # while students arrive
    # a workshop next month only: nothing to boot for today, and no reason to refuse to start
    (tmp_path / "later.csv").write_text("day,time,users,cpu,ram_gib\n2027-02-20,09:00,40,1,2\n")
    app.calendar_file = str(tmp_path / "later.csv")
    assert app.build_strategy(now=monday).schedule_at(monday) == ()


def test_an_unreachable_kubernetes_api_is_named(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    from elastichub.localcluster.apiserver import write_kubeconfig
    write_kubeconfig(str(kubeconfig), "http://127.0.0.1:9")  # nothing listens on the discard port
    line = one_error_line(orchestrator(f"--kubeconfig={kubeconfig}", cwd=tmp_path))
    assert "cannot reach the Kubernetes API at http://127.0.0.1:9" in line


async def test_an_unreachable_cloud_or_hub_is_named(cluster_factory, tmp_path):
    import asyncio

    cluster = await cluster_factory(cluster_config(onprem=1, cloud=1))
    base = [f"--kubeconfig={cluster.kubeconfig}", "--cloud-driver=elastichub.localcluster.cloud:LocalClusterNodeDriver"]
    cloud_down = await asyncio.to_thread(orchestrator, *base, "--ElasticOrchestrator.cloud_driver_kwargs={'port': 9}",
                                         "--ElasticOrchestrator.cloud_timeout=5", cwd=tmp_path)
    assert "cannot reach the cloud (elastichub.localcluster.cloud:LocalClusterNodeDriver)" in one_error_line(cloud_down)
    good_cloud = f"--ElasticOrchestrator.cloud_driver_kwargs={{'port': {cluster.port}}}"
    no_token = await asyncio.to_thread(orchestrator, *base, good_cloud, cwd=tmp_path)
    assert "no hub API token" in one_error_line(no_token)
    hub_down = await asyncio.to_thread(orchestrator, *base, good_cloud, "--ElasticOrchestrator.api_token=x",
                                       "--ElasticOrchestrator.hub_api_url=http://127.0.0.1:9/hub/api", cwd=tmp_path)
    assert "cannot use the hub API at http://127.0.0.1:9/hub/api" in one_error_line(hub_down)


def test_generate_config_writes_every_setting_with_its_help(tmp_path):
    result = orchestrator("--generate-config", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "elastichub_orchestrator_config.py").read_text()
    for trait in ("theta_out", "tmon", "tcool", "cloud_driver", "boot_timeout", "busy_timeout", "dry_run"):
        assert f"c.ElasticOrchestrator.{trait}" in text
    assert "Scale-out threshold" in text
    again = orchestrator("--generate-config", cwd=tmp_path)
    assert "exists already" in one_error_line(again)


def test_help_all_lists_the_settings():
    result = orchestrator("--help-all")
    assert result.returncode == 0
    assert "--ElasticOrchestrator.theta_out" in result.stdout and "--ElasticOrchestrator.cloud_driver" in result.stdout


def test_the_web_handlers_check_tokens_with_the_apps_hub_settings(monkeypatch):
    """Not with HubOAuth's defaults from the environment: an orchestrator run
    outside the hub has none there."""
    from jupyterhub.services.auth import HubOAuth
    from tornado.httputil import HTTPHeaders, HTTPServerRequest, RequestStartLine

    from elastichub.orchestrator import web

    monkeypatch.delenv("JUPYTERHUB_API_URL", raising=False)
    auth = HubOAuth(api_token="t0k3n", api_url="http://hub.example:8081/hub/api")
    app = web.make_app(Mock(), "/services/o/", cookie_secret=b"s" * 32, hub_auth=auth)
    for handler in (web.StatusAPIHandler, web.StatusPageHandler, web.MetricsHandler, web.OAuthCallbackHandler):
        request = HTTPServerRequest(start_line=RequestStartLine("GET", "/services/o/api/status", "HTTP/1.1"),
                                    headers=HTTPHeaders({"Host": "hub.example"}), connection=Mock())
        h = handler(app, request)
        assert h.hub_auth is auth and h.hub_auth.api_url == "http://hub.example:8081/hub/api"


def test_a_service_url_already_in_use_is_one_line_naming_it():
    """A second orchestrator with the same service_url (one run by hand
    beside the hub's): its port is taken; a traceback used to say so."""
    import socket
    from elastichub.orchestrator.app import ElasticOrchestrator, StartupError

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        app = ElasticOrchestrator(service_url=f"http://127.0.0.1:{port}", api_token="t",
                                  hub_api_url="http://127.0.0.1:1/hub/api")
        with pytest.raises(StartupError, match=rf"cannot serve at ElasticOrchestrator.service_url "
                                               rf"http://127.0.0.1:{port}: Address already in use \(another"):
            app._serve(Mock(hub=HubClient("http://127.0.0.1:1/hub/api", "http://127.0.0.1:1", "t")))


@pytest.mark.parametrize("owner, allowed", [
    ({"kind": "service", "name": "elastichub"}, "access:services!service=elastichub"),
    ({"kind": "user", "name": "ops-admin"}, "admin-ui")])
async def test_run_outside_the_hub_its_page_is_not_open_to_every_user_of_the_hub(monkeypatch, owner, allowed):
    """Outside the hub's process management the hub sets no access scopes in
    the environment, and HubOAuth then let any user's token read every
    user's servers, nodes and errors."""
    from jupyterhub.services.auth import UserNotAllowed

    from elastichub.demo.stage import free_port
    from elastichub.orchestrator.app import ElasticOrchestrator
    from elastichub.orchestrator.web import StatusAPIHandler

    for name in ("JUPYTERHUB_OAUTH_ACCESS_SCOPES", "JUPYTERHUB_OAUTH_SCOPES", "JUPYTERHUB_SERVICE_NAME"):
        monkeypatch.delenv(name, raising=False)
    hub = HubClient("http://127.0.0.1:1/hub/api", "http://127.0.0.1:1", "t")
    hub.me = owner
    app = ElasticOrchestrator(service_url=f"http://127.0.0.1:{free_port()}", api_token="t",
                              hub_api_url="http://127.0.0.1:1/hub/api")
    server = app._serve(Mock(hub=hub))
    try:
        handler = StatusAPIHandler.__new__(StatusAPIHandler)
        handler.hub_auth = server.request_callback.settings["hub_auth"]
        assert handler.hub_auth.access_scopes == {allowed}
        student = {"name": "student42", "kind": "user", "admin": False,
                   "scopes": ["read:users!user=student42", "access:servers!user=student42"]}
        with pytest.raises(UserNotAllowed):
            handler.check_hub_user(student)
        assert handler.check_hub_user(dict(student, name="teacher", scopes=[allowed])) is not None
    finally:
        server.stop()


def test_a_managed_service_in_a_pod_reaches_the_api_server_without_the_hubs_environment(tmp_path):
    """JupyterHub starts a managed service with a few of its variables only:
    KUBERNETES_SERVICE_HOST/PORT are not among them, and the orchestrator
    looked for ~/.kube/config in the hub's pod and stopped."""
    from kubernetes_asyncio import client, config

    from elastichub.orchestrator.kube import in_cluster_environ

    token, cert = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("sa-token")
    cert.write_text("-----BEGIN CERTIFICATE-----\n")
    service_env = {"PATH": "/usr/bin", "JUPYTERHUB_API_TOKEN": "t"}  # what a managed service gets
    environ = in_cluster_environ(service_env, str(token))
    cfg = client.Configuration()
    config.load_incluster_config(client_configuration=cfg, token_filename=str(token), cert_filename=str(cert),
                                 environ=environ)
    assert cfg.host == "https://kubernetes.default.svc:443"
    assert in_cluster_environ({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"},
                              str(token))["KUBERNETES_SERVICE_HOST"] == "10.0.0.1"  # as given, when given
    assert in_cluster_environ(service_env, str(tmp_path / "absent")) is None  # not in a pod: a kubeconfig


async def test_a_service_url_naming_a_service_in_front_of_the_pod_listens_on_every_interface():
    """zero-to-jupyterhub's url "http://hub:10101" names the hub's Service,
    whose address is not the pod's: binding it failed."""
    import socket
    from tornado.httpclient import AsyncHTTPClient

    from elastichub.orchestrator.app import ElasticOrchestrator

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = ElasticOrchestrator(service_url=f"http://192.0.2.1:{port}", api_token="t",  # TEST-NET: not ours
                              hub_api_url="http://127.0.0.1:1/hub/api")
    server = app._serve(Mock(health=lambda: (True, ""), cycles=1, last_cycle_at=1.0,
                             hub=HubClient("http://127.0.0.1:1/hub/api", "http://127.0.0.1:1", "t")))
    try:
        answer = await AsyncHTTPClient().fetch(f"http://127.0.0.1:{port}{app.service_prefix}health",
                                               raise_error=False)
        assert answer.code == 200, answer
    finally:
        server.stop()


def test_a_bad_url_from_the_environment_is_one_line_naming_the_variable(tmp_path):
    import os

    env = {**os.environ, "JUPYTERHUB_SERVICE_URL": "hub:10101"}
    result = subprocess.run([sys.executable, "-m", "elastichub", "orchestrator", "--kubeconfig=absent.yaml"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=30, env=env)
    assert ("ElasticOrchestrator.service_url: 'hub:10101' is not an http(s) URL with a host (e.g. "
            "http://127.0.0.1:10101) (from $JUPYTERHUB_SERVICE_URL)") in one_error_line(result)


async def test_a_token_in_a_url_is_never_written_to_the_orchestrators_log(caplog):
    """A student who tries their token in the URL of the API gets a 403 (the
    hub's auth ignores tokens in URLs); tornado's request log printed the
    URL with the token in it, into the hub pod's log."""
    from jupyterhub.services.auth import HubOAuth
    from tornado.httpclient import AsyncHTTPClient
    from tornado.httpserver import HTTPServer
    from tornado.testing import bind_unused_port

    from elastichub.orchestrator import web

    auth = HubOAuth(api_token="t", api_url="http://127.0.0.1:1/hub/api", access_scopes={"admin-ui"})
    server = HTTPServer(web.make_app(Mock(), "/services/o/", cookie_secret=b"s" * 32, hub_auth=auth))
    sock, port = bind_unused_port()
    server.add_sockets([sock])
    try:
        with caplog.at_level("DEBUG"):
            resp = await AsyncHTTPClient().fetch(f"http://127.0.0.1:{port}/services/o/api/status?token=s3cr3t-student"
                                                 "&x=1", raise_error=False)
        assert resp.code == 403
        assert "s3cr3t" not in caplog.text
        assert "403 GET /services/o/api/status?token=[secret]&x=1" in caplog.text
    finally:
        server.stop()


async def test_run_outside_the_hub_its_page_sends_the_browser_to_the_hubs_oauth_past_the_base_url(monkeypatch):
    """An external service (a `url`, no `command`) gets none of the hub's environment: HubOAuth's
    defaults sent the browser to /hub/api/oauth2/authorize, without a client id, to come back to
    /oauth_callback, none of which a hub at base_url /jhub/ (or any hub) accepts."""
    from urllib.parse import parse_qs, urlsplit

    from tornado.httpclient import AsyncHTTPClient

    from elastichub.demo.stage import free_port
    from elastichub.orchestrator.app import ElasticOrchestrator

    for name in [n for n in os.environ if n.startswith("JUPYTERHUB_")]:
        monkeypatch.delenv(name)
    hub = HubClient("http://hub.internal:8081/jhub/hub/api", "http://127.0.0.1:1", "t")
    hub.me = {"kind": "service", "name": "orch"}
    port = free_port()
    app = ElasticOrchestrator(service_url=f"http://127.0.0.1:{port}", api_token="t", hub_api_url=hub.api_url,
                              service_prefix="/jhub/services/orch/")
    server = app._serve(Mock(hub=hub))
    try:
        answer = await AsyncHTTPClient().fetch(f"http://127.0.0.1:{port}/jhub/services/orch/", raise_error=False,
                                               follow_redirects=False)
    finally:
        server.stop()
    assert answer.code == 302
    where = urlsplit(answer.headers["Location"])
    query = parse_qs(where.query)
    assert where.path == "/jhub/hub/api/oauth2/authorize"
    assert query["client_id"] == ["service-orch"] and query["redirect_uri"] == ["/jhub/services/orch/oauth_callback"]


RUNS_UNTIL_STOPPED = """
import asyncio
from elastichub.orchestrator.app import ElasticOrchestrator

class Orchestrator(ElasticOrchestrator):
    async def run(self):  # the loop, which a stop cancels; its clean-up is where a drain finishes its move
        print("running", flush=True)
        try:
            await asyncio.sleep(60)
        finally:
            print("cleaned up", flush=True)

app = Orchestrator()
app.initialize([])
app.start()
"""


@pytest.mark.parametrize("hangup_ignored", [False, True])
def test_a_hangup_stops_it_as_sigterm_does_unless_nohup_ignores_it(tmp_path, hangup_ignored):
    """SIGHUP (the admin's ssh session ended under a foreground run) killed it at once: a drain's
    move was cut, and the server it had stopped waited for a next run. Under nohup it runs on."""
    import signal

    ignore = (lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN)) if hangup_ignored else None
    proc = subprocess.Popen([sys.executable, "-c", RUNS_UNTIL_STOPPED], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=ignore)
    try:
        assert proc.stdout.readline() == "running\n"
        proc.send_signal(signal.SIGHUP)
        if hangup_ignored:
            with pytest.raises(subprocess.TimeoutExpired):
                proc.wait(2)
            proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0 and out == "cleaned up\n", (proc.returncode, out, err)
    assert ("SIGTERM: stopping" if hangup_ignored else "SIGHUP: stopping") in err and "stopped" in err


class FakeHubAPI:
    """GET /hub/api/user as JupyterHub answers it: the model of the token's owner, by the token. It runs
    on the test's event loop: it can answer only while that loop runs."""

    def __init__(self, owners: dict):
        from tornado import httpserver, web

        from elastichub.demo.stage import free_port

        owners_ = owners

        class User(web.RequestHandler):
            def get(self):
                token = self.request.headers["Authorization"].split()[-1]
                self.write({"kind": "service", "name": token, "scopes": owners_[token]})

        self.server = httpserver.HTTPServer(web.Application([(r"/hub/api/user", User)]))
        port = free_port()
        self.server.listen(port, "127.0.0.1")
        self.url = f"http://127.0.0.1:{port}/hub/api"


def serve_orchestrator(monkeypatch, hub_api: str, **settings):
    """(the orchestrator's web server run as outside the hub, its base URL), on a controller stand-in."""
    from elastichub.demo.stage import free_port
    from elastichub.orchestrator.app import ElasticOrchestrator
    from elastichub.orchestrator.controller import Controller
    from elastichub.policy import PolicyConfig, make_strategy

    for name in [n for n in os.environ if n.startswith("JUPYTERHUB_")]:
        monkeypatch.delenv(name)
    client = HubClient(hub_api, "http://127.0.0.1:1", "t")
    client.me = {"kind": "service", "name": "orch"}
    port = free_port()
    controller = Controller(make_strategy("elastic", PolicyConfig()), None, None, None, client, None)
    server = ElasticOrchestrator(service_url=f"http://127.0.0.1:{port}", api_token="t", hub_api_url=hub_api,
                                 **settings)._serve(controller)
    return server, f"http://127.0.0.1:{port}/"


async def test_checking_a_token_with_the_hub_does_not_stop_the_event_loop(monkeypatch):
    """HubAuthenticated's current_user asked the hub from a thread the event loop waited on: while a
    slow hub answered, the Tmon loop, drains and live moves stood still (here, a hub on the same loop
    could never answer)."""
    from tornado.httpclient import AsyncHTTPClient

    hub = FakeHubAPI({"admin-token": ["access:services!service=orch"], "student": ["read:users!user=student"]})
    server, base = serve_orchestrator(monkeypatch, hub.url)
    try:
        async def get(path, token):
            return await AsyncHTTPClient().fetch(base + path, raise_error=False, follow_redirects=False,
                                                 headers={"Authorization": f"token {token}"})
        answer = await get("api/status", "admin-token")
        assert answer.code == 200 and json.loads(answer.body)["policy"] == "elastic"
        refused = await get("api/status", "student")
        assert refused.code == 403 and "hub token" in json.loads(refused.body)["message"]
        assert (await get("", "student")).code == 403  # the page: no login loop for a user it refuses
        assert (await get("", "admin-token")).code == 200
    finally:
        server.stop()
        hub.server.stop()


async def test_with_authenticate_metrics_prometheus_scrapes_with_the_hubs_metrics_scope(monkeypatch):
    """The token Prometheus scrapes the hub's /hub/metrics with holds read:metrics: /metrics refused
    it, asking for access to the whole service (its status API and page) instead."""
    from tornado.httpclient import AsyncHTTPClient

    hub = FakeHubAPI({"scrape": ["read:metrics"], "student": ["read:users!user=student"]})
    server, base = serve_orchestrator(monkeypatch, hub.url, authenticate_metrics=True)
    try:
        async def get(path, token):
            return await AsyncHTTPClient().fetch(base + path, raise_error=False, follow_redirects=False,
                                                 headers={"Authorization": f"Bearer {token}"})
        scraped = await get("metrics", "scrape")
        assert scraped.code == 200 and b"elastichub_problems" in scraped.body
        assert (await get("metrics", "student")).code == 403
        assert (await get("api/status", "scrape")).code == 403  # the metrics, nothing more
    finally:
        server.stop()
        hub.server.stop()


@pytest.mark.parametrize("given", ["environment", "config"])
async def test_a_token_read_from_a_file_with_its_newline_is_taken_without_it(monkeypatch, given):
    """A token read from a Kubernetes Secret or a file ends in a newline: sent as it was, the hub
    check stopped the start with a ValueError traceback quoting the token."""
    from tornado import httpserver, web

    from elastichub.demo.stage import free_port
    from elastichub.orchestrator.app import ElasticOrchestrator
    from elastichub.orchestrator.hub import NEEDED_SCOPES

    class Hub(web.RequestHandler):
        def get(self, path):
            assert self.request.headers["Authorization"] == "token s3cr3t"
            self.write({"/": {"version": "5.3.0"}, "/user": {"kind": "service", "name": "o", "scopes": NEEDED_SCOPES},
                        "/users": {"items": []}}[path])

    server = httpserver.HTTPServer(web.Application([(r"/hub/api(/[a-z]*)", Hub)]))
    port = free_port()
    server.listen(port, "127.0.0.1")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "s3cr3t\n" if given == "environment" else "")
    app = ElasticOrchestrator(hub_api_url=f"http://127.0.0.1:{port}/hub/api",
                              **({"api_token": "s3cr3t\r\n"} if given == "config" else {}))
    try:
        assert await HubClient(app.hub_api_url, "http://127.0.0.1:1", app.api_token).check() == "5.3.0"
    finally:
        server.stop()


def test_a_service_declared_without_a_url_is_told_it_serves_no_page(tmp_path, monkeypatch):
    """Declared without a `url`, the hub gives the service no JUPYTERHUB_SERVICE_URL: the orchestrator
    served no page, API or metrics, and said nothing of it (the hub answered 404 for them)."""
    monkeypatch.delenv("JUPYTERHUB_SERVICE_URL", raising=False)
    result = orchestrator("--kubeconfig=absent.yaml", cwd=tmp_path)
    assert "WARNING] no service_url ($JUPYTERHUB_SERVICE_URL): no status page, API or /metrics; give the service " \
        "a 'url' in c.JupyterHub.services" in result.stderr
    served = orchestrator("--kubeconfig=absent.yaml", "--ElasticOrchestrator.service_url=http://127.0.0.1:10101",
                          cwd=tmp_path)
    assert "no service_url" not in served.stderr and "absent.yaml: no such file" in served.stderr


async def test_a_cluster_it_cannot_list_the_pods_of_is_one_line_naming_why(monkeypatch):
    """The hub's role without `list pods` cluster-wide (elastichub rbac not applied): the nodes listed,
    the pods never did, and after 60 s the start ended in a TimeoutError traceback."""
    from types import SimpleNamespace

    from kubernetes_asyncio.client.exceptions import ApiException

    from elastichub.orchestrator import app as app_module
    from elastichub.orchestrator.app import ElasticOrchestrator, StartupError
    from elastichub.orchestrator.kube import Informer

    async def nodes(**kwargs):
        raise ApiException(status=0, reason="not watched here")  # listed once below, then quiet

    async def pods(**kwargs):
        raise ApiException(status=403, reason='pods is forbidden: User "system:serviceaccount:jhub:hub" cannot list '
                                              'resource "pods" in API group "" at the cluster scope')

    listed = Informer("nodes", nodes, dict, str)
    listed.synced.set()
    forbidden = Informer("pods", pods, dict, str)

    async def build_controller(self):
        async def close():
            pass
        return SimpleNamespace(nodes=listed, pods=forbidden, close=close), []

    monkeypatch.setattr(app_module, "SYNC_TIMEOUT", 1.0, raising=False)
    monkeypatch.setattr(ElasticOrchestrator, "build_controller", build_controller)
    with pytest.raises(StartupError) as refused:
        await ElasticOrchestrator().run()
    assert str(refused.value) == ('cannot read the cluster\'s pods (403 pods is forbidden: User '
                                  '"system:serviceaccount:jhub:hub" cannot list resource "pods" in API group "" at the '
                                  'cluster scope) within 1 s; `elastichub rbac` prints the permissions the '
                                  'orchestrator needs')
