"""The orchestrator as a hub-managed service: started by JupyterHub with a role
holding only its scopes; its status API, page and metrics under
/services/<name>/ behind the hub's auth; `--dry-run` decides and changes nothing."""

from __future__ import annotations

import json

import pytest
from hubtools import Hub, free_port
from orchestratortools import ORCHESTRATOR_SCOPES, ORCHESTRATOR_SERVICE, orchestrator_config, users_on_cloud
from podtools import cluster_config, node_of, until

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

# The orchestrator as the hub runs it (dry run), and the tester allowed to see its pages.
MANAGED = """
import sys
c.JupyterHub.services.append(
    {{"name": "elastichub-orchestrator", "url": "http://127.0.0.1:{port}",
      "command": [sys.executable, "-m", "elastichub", "orchestrator", "--config={config}", "--dry-run"],
      "environment": {{"PYTHONUNBUFFERED": "1"}}}})
c.JupyterHub.load_roles.append(
    {{"name": "elastichub-orchestrator", "services": ["elastichub-orchestrator"], "scopes": {scopes!r}}})
for role in c.JupyterHub.load_roles:
    if role["name"] == "tester":
        role["scopes"].append("access:services")
"""


@pytest.fixture
async def managed(cluster_factory, tmp_path):
    cluster = await cluster_factory(cluster_config(onprem=1, cloud=1))  # requests recorded in api_requests
    workdir = tmp_path / "hub"
    workdir.mkdir()
    hub = Hub(workdir, cluster.kubeconfig, ORCHESTRATOR_SERVICE, spawner_class="elastic")
    config = tmp_path / "elastichub_orchestrator_config.py"
    config.write_text(orchestrator_config(cluster, hub, managed=True))
    with open(hub.config_path, "a") as f:
        f.write(MANAGED.format(port=free_port(), config=config, scopes=ORCHESTRATOR_SCOPES))
    await hub.start()
    yield cluster, hub
    await hub.stop()


async def status(hub) -> dict:
    code, body = await hub.api("GET", "/services/elastichub-orchestrator/api/status")
    assert code == 200, (code, body)
    return body


async def test_the_managed_service_reports_decides_and_in_dry_run_changes_nothing(managed, api_requests):
    cluster, hub = managed
    digests = await users_on_cloud(cluster, hub, ["alice"])
    before = len(api_requests)
    cluster.store.delete("pods", "filler", "default")  # a scale-in is now due

    async def decided_scale_in():
        code, body = await hub.api("GET", "/services/elastichub-orchestrator/api/status")
        return code == 200 and any(d["action"] == "scale-in" for d in body["decisions"]) and body
    body = await until(decided_scale_in, timeout=60, step=0.5, what="a scale-in decision in the status API")
    assert body["dry_run"] is True and body["policy"] == "elastic" and body["theta_out"] == 80
    assert {n["name"]: n["status"] for n in body["nodes"]} == {"onprem-1": "ready", "cloud-1": "ready"}
    assert next(n for n in body["nodes"] if n["name"] == "cloud-1")["servers"] == ["alice"]
    taken = {d["taken"] for d in body["decisions"] if d["action"] == "scale-in"}
    assert taken == {"dry run"}, (taken, body["events"][-10:])
    # It reads the cloud every cycle (through the local cluster's API server, like the Kubernetes API).
    await until(lambda: any(p.startswith("/localcluster/v1/vms") for m, p, _ in api_requests[before:]),
                what="a cycle's read of the cloud after the load fell")

    # Dry run: only reads reached the cluster; alice is where she was, the VM runs.
    writes = [(m, p) for m, p, _ in api_requests[before:] if m not in ("GET", "HEAD")]
    assert writes == [], writes
    assert node_of(cluster.store, "jupyter-alice") == "cloud-1" and (await hub.server("alice"))["ready"]
    assert cluster.cloud.describe("cloud-1")["state"] == "running"
    assert not cluster.store.get("nodes", "cloud-1")["spec"].get("unschedulable")
    assert digests["alice"]

    code, page = await hub.api("GET", "/services/elastichub-orchestrator/")
    assert code == 200 and b"ElasticHub orchestrator" in page and b"cloud-1" in page
    code, metrics = await hub.api("GET", "/services/elastichub-orchestrator/metrics")
    text = metrics.decode()
    assert code == 200 and 'elastichub_nodes{status="ready",tier="cloud"} 1.0' in text
    assert "elastichub_decision_seconds_count" in text and 'elastichub_occupancy_ratio{resource="ram"}' in text
    # The threshold in force (the managed service runs the default 80 %).
    assert "elastichub_theta_out_ratio 0.8" in text and "_created" not in text
    # Without a valid token the API answers 403 with a reason an API client can read, not the
    # login redirect a browser gets from the page.
    code, refused = await hub.api("GET", "/services/elastichub-orchestrator/api/status", token="nope")
    assert code == 403 and "hub token" in refused["message"], (code, refused)


async def test_one_structured_log_line_per_decision(managed):
    cluster, hub = managed
    await until(lambda: "elastichub.orchestrator.decisions" in hub.log_text(100_000), timeout=60, step=0.5,
                what="a decision in the service's log")
    line = next(l for l in hub.log_text(100_000).splitlines() if "elastichub.orchestrator.decisions" in l)
    record = json.loads(line[line.index("{"):])
    assert {"action", "reason", "occupancy_ram", "pending", "decide_ms", "time"} <= set(record)


async def test_a_role_missing_a_scope_a_move_needs_is_named_at_start(cluster_factory, hub_factory, tmp_path):
    """Without access:servers the orchestrator could find and stop servers
    but never reach their kernels: every drain would cordon a node and then
    abort. It says so at start, in one line, instead."""
    import asyncio
    import subprocess
    import sys

    from orchestratortools import ORCHESTRATOR_TOKEN

    cluster = await cluster_factory(cluster_config(onprem=1, cloud=1))
    short = ORCHESTRATOR_SERVICE.replace('"access:servers"', '"read:hub"').replace("'access:servers'", "'read:hub'")
    assert short != ORCHESTRATOR_SERVICE
    hub = await hub_factory(cluster, short, spawner_class="elastic")
    config = tmp_path / "elastichub_orchestrator_config.py"
    config.write_text(orchestrator_config(cluster, hub))
    result = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "elastichub", "orchestrator",
                                                      f"--config={config}"],
                                     capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if "CRITICAL" in line or "error" in line.lower()]
    assert len(errors) == 1, result.stderr
    assert f"cannot use the hub API at {hub.url}/hub/api" in errors[0]
    assert "lacks the scope(s) access:servers; its role needs list:users, read:users, servers, access:servers, " \
        "admin:server_state" in errors[0]
    assert ORCHESTRATOR_TOKEN not in result.stderr

    # A token the hub never issued: said as such, not as "403 None".
    wrong = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "elastichub", "orchestrator", f"--config={config}",
                         "--ElasticOrchestrator.api_token=" + "0" * 32], capture_output=True, text=True, timeout=60)
    errors = [line for line in wrong.stderr.splitlines() if "CRITICAL" in line or "error" in line.lower()]
    assert wrong.returncode != 0 and len(errors) == 1 and "Traceback" not in wrong.stderr, wrong.stderr
    assert "the hub does not accept the API token (403 on GET /user)" in errors[0], errors


# The orchestrator as an external service (a `url`, no `command`): run by the admin, behind the hub's proxy
# at a base_url, its page reached by an admin's browser through the hub's OAuth.
EXTERNAL = """
c.JupyterHub.services[-1]["url"] = "http://127.0.0.1:{port}"
c.Authenticator.allow_all = True
c.Authenticator.admin_users = {{"ops"}}
"""


class Browser:
    """Cookies and redirects by hand, as a browser keeps them (tornado's client keeps none)."""

    def __init__(self, origin: str):
        from tornado.httpclient import AsyncHTTPClient

        self.origin, self.cookies, self.http = origin, {}, AsyncHTTPClient()

    async def get(self, url: str, method: str = "GET", body: str | None = None, hops: int = 10):
        from http.cookies import SimpleCookie
        from urllib.parse import urljoin

        for _ in range(hops):
            resp = await self.http.fetch(urljoin(self.origin, url), method=method, body=body, raise_error=False,
                                         follow_redirects=False, headers={"Cookie": "; ".join(
                                             f"{k}={v}" for k, v in self.cookies.items())})
            for header in resp.headers.get_list("Set-Cookie"):
                self.cookies.update({k: m.value for k, m in SimpleCookie(header).items()})
            if resp.code not in (301, 302, 303):
                return resp
            url, method, body = urljoin(resp.effective_url, resp.headers["Location"]), "GET", None
        raise AssertionError(f"more than {hops} redirects, the last to {url}")


async def test_an_external_service_behind_a_base_url_lets_an_admin_log_in_to_its_page(cluster_factory, hub_factory,
                                                                                     tmp_path):
    """Run outside the hub, the page sent the browser to /hub/api/oauth2/authorize (past the base_url)
    with no OAuth client id and /oauth_callback to come back to: no login ever came back."""
    import re
    from urllib.parse import urlencode

    from orchestratortools import ORCHESTRATOR_TOKEN, OrchestratorProcess

    cluster = await cluster_factory(cluster_config(onprem=1, cloud=1))
    port = free_port()
    hub = await hub_factory(cluster, ORCHESTRATOR_SERVICE + EXTERNAL.format(port=port), spawner_class="elastic",
                            base_url="/jhub/")
    orchestrator = OrchestratorProcess(cluster, hub, tmp_path, extra=(
        f"c.ElasticOrchestrator.service_url = 'http://127.0.0.1:{port}'\n"
        "c.ElasticOrchestrator.service_prefix = '/jhub/services/orchestrator/'\n"))
    assert f"{hub.url}/hub/api" in orchestrator.config.read_text() and ORCHESTRATOR_TOKEN
    await orchestrator.start("--dry-run")
    try:
        browser = Browser(hub.url)
        login = await browser.get("/jhub/hub/login")
        xsrf = re.search(rb'name="_xsrf" value="([^"]+)"', login.body).group(1).decode()
        home = await browser.get("/jhub/hub/login", "POST", urlencode({"username": "ops", "password": "x",
                                                                        "_xsrf": xsrf}))
        assert home.code == 200 and "/jhub/hub/" in home.effective_url, (home.code, home.effective_url)

        async def page():
            resp = await browser.get("/jhub/services/orchestrator/")
            if "/oauth2/authorize" in resp.effective_url:  # the hub asks the admin to let the service in
                assert resp.code == 200, (resp.code, resp.effective_url)
                fields = re.findall(rb'<input type="hidden" name="(\w+)" value="([^"]*)"', resp.body)
                resp = await browser.get(resp.effective_url, "POST", urlencode([(k, v) for k, v in fields]))
            return resp.code == 200 and resp
        page = await until(page, timeout=60, step=0.5, what="the status page after the hub's login")
        assert b"ElasticHub orchestrator" in page.body and b"cloud-1" in page.body, page.effective_url
        assert page.effective_url == f"{hub.url}/services/orchestrator/"
    finally:
        assert await orchestrator.stop() == 0 or orchestrator.log()
