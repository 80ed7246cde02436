"""The orchestrator's web surfaces, under the service's prefix (/services/<name>/):

- ``api/status``: the controller's status as JSON (hub token or OAuth cookie);
- ``/``: a status page for admins, behind hub OAuth (by default the scope
  ``access:services!service=<name>``, which the hub's admin role holds);
- ``metrics``: Prometheus text format (unauthenticated, like most exporters;
  ``authenticate_metrics`` puts it behind the hub's auth: ``read:metrics``);
- ``health``: 200 once the caches are synced and while the loop's cycles read the cluster and the cloud;
  503 with a one-line reason once the last such cycle is a few Tmon old.
"""

from __future__ import annotations

import html
import json
import logging
import os
import time
from urllib.parse import parse_qsl, urlencode, urlsplit

from jupyterhub.services.auth import HubOAuth, HubOAuthCallbackHandler, HubOAuthenticated, UserNotAllowed
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from tornado import web

log = logging.getLogger(__name__)
# Query parameters that carry a credential: a token typed into a URL (the hub's auth ignores it, tornado's
# request log printed it with the 403), OAuth's code and state on the callback.
_SECRET_PARAMS = {"token", "code", "state", "_xsrf"}


def scrub_uri(uri: str) -> str:
    """`uri` with the values of credential parameters replaced, fit for a log."""
    parts = urlsplit(uri)
    if not parts.query:
        return uri
    query = [(k, "[secret]" if k.lower() in _SECRET_PARAMS else v)
             for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    return parts._replace(query=urlencode(query, safe="[]")).geturl()


def log_request(handler: web.RequestHandler) -> None:
    """Tornado's request log line, with credentials scrubbed from the URL."""
    status, request = handler.get_status(), handler.request
    level = logging.DEBUG if status < 400 else logging.WARNING if status < 500 else logging.ERROR
    log.log(level, "%d %s %s (%s) %.1f ms", status, request.method, scrub_uri(request.uri or ""), request.remote_ip,
            1000 * request.request_time())


class _Base(HubOAuthenticated, web.RequestHandler):
    def initialize(self) -> None:
        # The app's HubOAuth (ElasticOrchestrator.hub_api_url / api_token):
        # without it HubOAuthenticated builds one from the environment only,
        # which an orchestrator run outside the hub does not have.
        self.hub_auth = self.settings["hub_auth"]

    refuse_not_allowed = False  # a hub user without the scopes: 403 here (the page), else no current_user

    async def prepare(self) -> None:
        # HubAuthenticated's current_user asks the hub from a thread that the event loop waits for: a slow
        # hub froze the Tmon loop, its drains and live moves at each token or cookie not in the cache.
        model = await self.hub_auth.get_user(self, sync=False)
        try:
            self.current_user = self.check_hub_user(model) if model else None
        except UserNotAllowed:
            if self.refuse_not_allowed:  # a login would come back refused, and again: say it at once
                raise web.HTTPError(403, "your hub account has no access to this service") from None
            self.current_user = None

    @property
    def controller(self):
        return self.settings["controller"]


class OAuthCallbackHandler(HubOAuthCallbackHandler):
    def initialize(self) -> None:
        self.hub_auth = self.settings["hub_auth"]


class StatusAPIHandler(_Base):
    def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        if self.current_user is None:
            # An API client gets a refusal it can read, as from the hub's own API,
            # not web.authenticated's redirect to a login page.
            self.set_status(403)
            self.finish(json.dumps({"status": 403, "message": "a hub token with access to this service is "
                                    "needed (Authorization: token <token>)"}))
            return
        self.finish(json.dumps(self.controller.status()))


class MetricsHandler(_Base):
    @property
    def hub_scopes(self):
        # With authenticate_metrics: the hub's own scope for metrics too, which the token Prometheus scrapes
        # the hub's /hub/metrics with holds; refused, it needed access to the whole service (its status API).
        return set(self.hub_auth.access_scopes or ()) | {"read:metrics"}

    async def prepare(self) -> None:
        if self.settings.get("authenticate_metrics"):  # else not a word to the hub, token or not
            await super().prepare()

    def get(self) -> None:
        if self.settings.get("authenticate_metrics") and self.current_user is None:
            raise web.HTTPError(403)
        self.set_header("Content-Type", CONTENT_TYPE_LATEST)
        self.finish(generate_latest(self.controller.metrics.registry))


class HealthHandler(web.RequestHandler):
    def get(self) -> None:
        c = self.settings["controller"]
        ok, reason = c.health()
        self.set_status(200 if ok else 503)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"ok": ok, "reason": reason, "cycles": c.cycles, "last_cycle_at": c.last_cycle_at}))


class StatusPageHandler(_Base):
    refuse_not_allowed = True

    @web.authenticated
    def get(self) -> None:
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(render_page(self.controller.status(), self.settings.get("page_refresh_s", 5)))


def hub_oauth(api_url: str, token: str, prefix: str, owner: dict) -> HubOAuth:
    """The pages' HubOAuth: what the hub's environment does not say (run outside the hub, as an external
    service, it says nothing) from the orchestrator's own settings. HubOAuth's defaults sent a browser to
    /hub/api/oauth2/authorize with no client id and /oauth_callback as where to come back, which no hub
    accepts, and past any base_url. `owner`: the hub's model of the token's owner (HubClient.me)."""
    settings: dict = {"api_token": token, "api_url": api_url, "base_url": prefix, "cache_max_age": 60}
    api_path = urlsplit(api_url).path.rstrip("/")
    if not os.environ.get("JUPYTERHUB_BASE_URL") and api_path.endswith("/api"):
        settings["hub_prefix"] = api_path[:-len("api")]  # /jhub/hub/api: the hub's pages are under /jhub/hub/
    if not os.environ.get("JUPYTERHUB_CLIENT_ID") and owner.get("kind") == "service" and owner.get("name"):
        settings["oauth_client_id"] = f"service-{owner['name']}"  # the hub's name for a service's OAuth client
    return HubOAuth(**settings)


def make_app(controller, prefix: str, *, cookie_secret: bytes, hub_auth, authenticate_metrics: bool = False,
             page_refresh_s: int = 5) -> web.Application:
    prefix = "/" + prefix.strip("/") + "/" if prefix.strip("/") else "/"
    return web.Application(
        [
            (prefix, StatusPageHandler),
            (prefix + "api/status", StatusAPIHandler),
            (prefix + "metrics", MetricsHandler),
            (prefix + "health", HealthHandler),
            (prefix + "oauth_callback", OAuthCallbackHandler),
        ],
        controller=controller, hub_auth=hub_auth, cookie_secret=cookie_secret, log_function=log_request,
        authenticate_metrics=authenticate_metrics, page_refresh_s=page_refresh_s,
    )


# -- the page ------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5em;color:#222;max-width:1200px}
h1{font-size:1.4em;margin:0 0 .2em} h2{font-size:1.1em;margin:1.4em 0 .4em}
.muted{color:#666;font-size:.9em} table{border-collapse:collapse;width:100%}
td,th{border-bottom:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top;font-size:.92em}
.bar{position:relative;background:#eee;height:14px;width:220px;border-radius:3px}
.fill{position:absolute;left:0;top:0;bottom:0;background:#4a90d9;border-radius:3px}
.theta{position:absolute;top:-3px;bottom:-3px;width:2px;background:#d0021b}
.tier-cloud{color:#8b5cf6} .tier-on-prem{color:#0b7a3e} .pill{display:inline-block;padding:0 .4em;
border-radius:8px;background:#eef;margin:0 .2em .2em 0;font-size:.85em} .pinned{background:#fde68a}
.status-draining,.status-booting{font-weight:bold;color:#b45309}
"""


def _bar(percent: float | None, theta: float | None) -> str:
    p = max(0.0, min(100.0, percent or 0.0))
    mark = f'<div class="theta" style="left:{min(theta, 100):.1f}%" title="theta_out {theta:g} %"></div>' \
        if theta is not None and theta <= 100 else ""
    return f'<div class="bar"><div class="fill" style="width:{p:.1f}%"></div>{mark}</div>'


def _seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.1f} s"


def _timeline_svg(points: list[dict], width: int = 1100, height: int = 160) -> str:
    """Cloud VMs running, servers waiting and moves in flight over the kept window."""
    if len(points) < 2:
        return '<p class="muted">The timeline fills in as the loop runs.</p>'
    t0, t1 = points[0]["time"], points[-1]["time"]
    span = max(t1 - t0, 1e-9)
    top = max(max(p["cloud_on"] for p in points), max(p["pending"] for p in points), 1)

    def xy(p, key):
        return f"{(p['time'] - t0) / span * (width - 40) + 30:.1f},{height - 20 - p[key] / top * (height - 40):.1f}"

    moving = "".join(f'<rect x="{(p["time"] - t0) / span * (width - 40) + 30:.1f}" y="10" width="3" '
                     f'height="{height - 30}" fill="#fde68a"/>' for p in points if p.get("moving"))
    lines = "".join(
        f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{" ".join(xy(p, key) for p in points)}"/>'
        for key, color in (("cloud_on", "#8b5cf6"), ("pending", "#d0021b")))
    minutes = span / 60
    return (f'<svg width="{width}" height="{height}" role="img" aria-label="timeline">{moving}{lines}'
            f'<text x="30" y="{height - 4}" font-size="11">-{minutes:.0f} min</text>'
            f'<text x="{width - 40}" y="{height - 4}" font-size="11">now</text>'
            f'<text x="0" y="14" font-size="11">{top}</text></svg>'
            '<p class="muted"><span style="color:#8b5cf6">&#9632;</span> cloud VMs running '
            '<span style="color:#d0021b">&#9632;</span> servers waiting '
            '<span style="color:#e5b000">&#9632;</span> migration in flight</p>')


def render_page(status: dict, refresh_s: int = 5) -> str:
    e = html.escape
    theta = status.get("theta_out")
    rows = []
    for n in status["nodes"]:
        state = "draining" if n["draining"] else n["status"]
        why = n.get("pinned_why") or {}
        servers = "".join(f'<span class="pill pinned" title="{e(why[s])}">{e(s)}</span>' if s in why else
                          f'<span class="pill">{e(s)}</span>' for s in n["servers"])
        servers = servers or '<span class="muted">none</span>'
        servers += "".join(f'<div class="muted">pinned: {e(s)}: {e(reason)}</div>' for s, reason in why.items())
        vm = f'{e(n["vm"]["id"])} ({e(n["vm"]["state"])})' if n["vm"] else ""
        gib = n["allocatable"]["ram"] / 2**30
        rows.append(
            f'<tr><td>{e(n["name"])}</td><td class="tier-{e(n["tier"])}">{e(n["tier"])}</td>'
            f'<td class="status-{e(state)}">{e(state)}</td><td>{_bar(n["occupancy_ram"], theta)}'
            f'<span class="muted">{(n["occupancy_ram"] or 0):.0f} % of {gib:.1f} GiB</span></td>'
            f'<td>{servers}</td><td class="muted">{vm}</td></tr>')
    decisions = "".join(
        f'<tr><td>{time.strftime("%H:%M:%S", time.localtime(d["time"]))}</td><td>{e(d["action"])}</td>'
        f'<td>{e(", ".join(d["nodes"]))}</td><td>{e(d.get("reason") or "")}</td><td>{e(d.get("taken") or "")}</td>'
        f'<td>{d.get("occupancy_ram") if d.get("occupancy_ram") is not None else ""}</td></tr>'
        for d in reversed([d for d in status["decisions"] if d["action"] != "none"][-15:]))
    moves = status["migrations"]["in_flight"] + list(reversed(status["migrations"]["recent"][-15:]))
    move_rows = "".join(
        f'<tr><td>{e(m["server"])}</td><td>{e(m["from"])}</td><td>{e(m["to"] or "")}</td><td>{e(m["outcome"])}</td>'
        f'<td>{e(m.get("method", ""))}</td><td>{_seconds(m["downtime_s"])}</td>'
        f'<td>{e(m["error"])}</td></tr>' for m in moves)
    events = "".join(f'<li>{time.strftime("%H:%M:%S", time.localtime(ev["time"]))} <b>{e(ev["kind"])}</b> '
                     f'{e(ev["message"])}</li>' for ev in reversed(status["events"][-12:]))
    occ = status["occupancy"]["ram"]
    pending = ", ".join(status["pending"]) or "none"
    classes = "".join(f'<li>{e(c["local"])} {e(c["name"])}: '
                      f'{c["users"]} students</li>' for c in status.get("classes", []))
    problems = "".join(f"<li>{e(p)}</li>" for p in status.get("problems", []))
    history = status.get("history")
    recorded = "" if history is None else (
        f' History: {history["written"]} session{"" if history["written"] == 1 else "s"} written to '
        f'<span title="{e(history["file"])}">{e(os.path.basename(history["file"]))}</span>'
        + (f', <b>{history["unwritten"]} waiting to be written</b>' if history["unwritten"] else "") + ".")
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>ElasticHub orchestrator</title>
<meta http-equiv="refresh" content="{int(refresh_s)}"><style>{_CSS}</style></head><body>
<h1>ElasticHub orchestrator</h1>
<p class="muted">policy <b>{e(str(status["policy"]))}</b>, theta_out {theta} %, Tmon {status["tmon"]} s,
Tcool {status["tcool"]} s{" &mdash; <b>dry run</b>: nothing is changed" if status["dry_run"] else ""}.
{status["cycles"]} cycles.{recorded} Times in {e(time.strftime("%Z", time.localtime(status["time"])))}.</p>
<h2>Occupancy of the active nodes (RAM requests)</h2>
{_bar(occ, theta)}<p>{occ:.1f} % against theta_out {theta} % &middot; waiting: {e(pending)}</p>
{f'<h2>Problems</h2><ul class="problems">{problems}</ul>' if problems else ""}
<h2>Nodes</h2><table><tr><th>node</th><th>tier</th><th>status</th><th>RAM requested</th><th>servers</th>
<th>VM</th></tr>{"".join(rows)}</table>
<h2>Timeline</h2>{_timeline_svg(status["timeline"])}
{f"<h2>Classes on the timetable, the coming day</h2><ul>{classes}</ul>" if classes else ""}
<h2>Decisions</h2><table><tr><th>time</th><th>action</th><th>nodes</th><th>why</th><th>taken</th>
<th>RAM %</th></tr>{decisions or '<tr><td colspan=6 class="muted">no scaling action yet</td></tr>'}</table>
<h2>Migrations</h2><table><tr><th>server</th><th>from</th><th>to</th><th>outcome</th><th>method</th>
<th>pause / downtime</th><th>note</th></tr>{move_rows or '<tr><td colspan=7 class="muted">none yet</td></tr>'}</table>
<h2>Events</h2><ul>{events or '<li class="muted">none</li>'}</ul>
</body></html>"""
