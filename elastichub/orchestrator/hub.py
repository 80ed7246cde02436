"""JupyterHub through its REST API, and single-user servers through its proxy.

Everything the orchestrator does to a user's server goes through here, with
the service's own token (the scopes its role grants), so the hub stays the
one authority on servers: it sees every stop and start the orchestrator asks
for, exactly as if an admin had clicked them. The server itself is only ever
sent a token of its user's that reaches it alone (server_token).
"""

from __future__ import annotations

import json
import logging
import re
import ssl
import time
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from ..checkpoint_client import CheckpointOutcome, one_line, request_checkpoint

log = logging.getLogger(__name__)

PAGINATION = "application/jupyterhub-pagination+json"


class HubError(Exception):
    """A hub or single-user server call failed; the message names it."""

    def __init__(self, message: str, code: int = 0):
        super().__init__(message)
        self.code = code


# What the orchestrator's role grants (jupyterhub_config_example.py), and
# what it needs of them: finding the servers, stopping and starting them,
# reaching each one (its kernels, terminals, checkpoints, live moves), and
# reading which pod the hub serves each from (the spawner's state: a live
# move whose destination pod is gone since tells by it whether it switched).
# `tokens`: a student's server is never sent the service's own token (its code, and any extension the
# student adds, sees every request's headers): each call to it carries a token of its user's that reaches
# that one server only (server_token).
ROLE_SCOPES = ("list:users", "read:users", "servers", "access:servers", "admin:server_state", "tokens")
NEEDED_SCOPES = ("list:users", "read:users", "read:servers", "start:servers", "delete:servers", "access:servers",
                 "admin:server_state", "tokens")
# Lifetime of a server's token; renewed once a third of it is gone, so a
# request (a checkpoint may take half an hour) never starts on one about to expire.
SERVER_TOKEN_S = 3 * 3600

# Requests in flight at once from the hub client's own HTTP client, not tornado's process-wide one (ten,
# shared with the status page's HubOAuth): there a request queued past its connect timeout failed. Each
# drain, pre-drain check and re-read of unmovable servers asks HUB_FANOUT (fanout.py) servers at once,
# several of them run together (one drain per node), and a checkpoint holds its request while it is
# written (up to its timeout). Past this many, requests wait for a turn, then fail as above.
HTTP_MAX_CLIENTS = 64

# What to do about an https hub (or proxy) whose certificate the orchestrator does not trust: the
# standard variable OpenSSL reads, set where the orchestrator starts.
UNTRUSTED = ("its certificate is not one this host trusts (self-signed, or a private CA's): name a PEM file "
             "with the CA's certificate in SSL_CERT_FILE in the orchestrator's environment (for a hub-managed "
             "service, in the service's 'environment'; the file replaces the system's CAs), or use the hub's http "
             "address inside the cluster")


def _excerpt(payload) -> str:
    """An answer that is no JSON (a proxy's HTML error page) on one line, short: a log line stays one."""
    text = payload.decode(errors="replace") if isinstance(payload, (bytes, bytearray)) else str(payload)
    return " ".join(text.split())[:200]


def missing_scopes(granted) -> list[str]:
    """The scopes a move needs that `granted` (expanded, as GET /hub/api/user
    answers) lacks. A scope limited by a filter (`servers!group=class`) is
    the admin's choice of reach: it counts."""
    have = {str(s).split("!", 1)[0] for s in granted}
    return [s for s in NEEDED_SCOPES if s not in have]


@dataclass(frozen=True)
class HubServer:
    user: str
    name: str  # "" for the default server
    ready: bool
    pending: str | None  # "spawn", "stop" or None
    url: str  # the hub's URL of the server: /user/alice/, or https://alice.hub.example.org/user/alice/ (subdomains)
    user_options: dict
    started: str | None
    last_activity: str | None
    # The spawner's state (scope admin:server_state); None: the hub's answer held none.
    state: dict | None = field(default=None, hash=False, compare=False)

    @property
    def key(self) -> str:
        return f"{self.user}/{self.name}" if self.name else self.user

    @property
    def path(self) -> str:
        """The server's path prefix (/user/alice/): its URL's path, also where the hub gives a whole URL."""
        return urlsplit(self.url).path

    @property
    def host(self) -> str:
        """The Host its requests name, "" without subdomains. With c.JupyterHub.subdomain_host the hub
        gives each user's server a URL at a host of its own (alice.hub.example.org), and the proxy routes
        by Host and path: the path alone, at the proxy's address, reaches the hub, not the server."""
        return urlsplit(self.url).netloc


class ServerBase(str):
    """A server's base URL on the proxy, and the Host its requests name there (HubServer.host)."""

    host: str

    def __new__(cls, url: str, host: str = ""):
        base = super().__new__(cls, url)
        base.host = host
        return base


def server_api_path(user: str, name: str) -> str:
    """/users/NAME/server or /users/NAME/servers/SNAME (hub API, unprefixed)."""
    base = f"/users/{quote(user, safe='')}"
    return f"{base}/servers/{quote(name, safe='')}" if name else f"{base}/server"


def proxied_url(proxy_url: str, server_url: str) -> str:
    """Where the proxy at `proxy_url` serves a server whose hub URL is
    `server_url` (a path that carries the hub's base_url: /jhub/user/NAME/).
    The hub's public URL with its base_url is as good as the bare origin:
    the base_url is not repeated."""
    proxy = proxy_url.rstrip("/")
    prefix = urlsplit(proxy).path
    if prefix and (server_url == prefix or server_url.startswith(prefix + "/")):
        server_url = server_url[len(prefix):]
    return proxy + server_url


def parse_server(user: str, name: str, raw: dict) -> HubServer:
    if not isinstance(raw, dict):
        raise HubError(f"the hub's model of server {user}/{name} is not an object: {raw!r}")
    state = raw.get("state")
    return HubServer(user=user, name=name, ready=bool(raw.get("ready")), pending=raw.get("pending"),
                     url=str(raw.get("url") or ""), user_options=dict(raw.get("user_options") or {}),
                     started=raw.get("started"), last_activity=raw.get("last_activity"),
                     state=state if isinstance(state, dict) else None)


class HubClient:
    """`api_url`: the hub API (JUPYTERHUB_API_URL, ends in /hub/api);
    `proxy_url`: where the proxy serves /user/... (the hub's public URL);
    `ssl_context`: presented on every https request (internal_ssl: the hub asks for it)."""

    def __init__(self, api_url: str, proxy_url: str, token: str, *, timeout: float = 30.0,
                 ssl_context: ssl.SSLContext | None = None):
        self.api_url = api_url.rstrip("/")
        self.proxy_url = proxy_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.ssl_context = ssl_context  # internal_ssl: the hub's certificate for this service (tls.py)
        self.http = AsyncHTTPClient(force_instance=True, max_clients=HTTP_MAX_CLIENTS)  # close() ends it
        self.me: dict = {}  # the hub's model of the token's owner (check())
        self._server_tokens: dict[tuple[str, str], tuple[str, float]] = {}  # (user, name) -> (token, minted at)
        self._token_lifetime_s = SERVER_TOKEN_S  # lowered to the hub's token_expires_in_max_seconds
        self.clock = time.monotonic  # times the tokens' renewal

    async def close(self) -> None:
        """At shutdown: the client's connections and its resolver."""
        self.http.close()

    async def _fetch(self, url: str, method: str = "GET", body=None, *, timeout: float | None = None,
                     accept: str = "application/json", token: str | None = None,
                     host: str = "") -> tuple[int, object, dict]:
        headers = {"Authorization": f"token {token or self.token}", "Accept": accept}
        if host:  # a user's subdomain, asked of the proxy (HubServer.host)
            headers["Host"] = host
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        elif method in ("POST", "PUT", "PATCH"):
            data = ""
        request = HTTPRequest(url, method=method, headers=headers, body=data, allow_nonstandard_methods=True,
                              request_timeout=timeout or self.timeout, connect_timeout=10,
                              ssl_options=self.ssl_context)
        try:
            resp = await self.http.fetch(request, raise_error=False)
        except ssl.SSLCertVerificationError as e:
            raise HubError(f"{method} {url}: {e}: {UNTRUSTED}") from None
        except (OSError, HTTPClientError) as e:
            raise HubError(f"{method} {url}: {e}") from None
        if resp.code == 599:
            raise HubError(f"{method} {url}: {resp.error}")
        payload: object = None
        if resp.body:
            try:
                payload = json.loads(resp.body)
            except ValueError:
                payload = resp.body.decode("utf-8", "replace")
        return resp.code, payload, dict(resp.headers)

    async def _api(self, method: str, path: str, body=None, ok=(200,), **kw):
        code, payload, _ = await self._fetch(self.api_url + path, method, body, **kw)
        if code not in ok:
            message = payload.get("message") if isinstance(payload, dict) else _excerpt(payload)
            raise HubError(f"{method} {path}: {code} {message}", code)
        return code, payload

    def page_scopes(self) -> set[str]:
        """Who may read the status page, when the hub did not say (an
        orchestrator run outside the hub's process management): whoever may
        access this service, or, run with a user's token, the hub's admins.
        Without scopes, HubOAuth lets in any user of the hub."""
        if self.me.get("kind") == "service" and self.me.get("name"):
            return {f"access:services!service={self.me['name']}"}
        return {"admin-ui"}

    async def check(self) -> str:
        """The hub's version; raises HubError when it cannot be reached,
        refuses the token, or the token's role lacks a scope a move needs
        (found at start rather than by the first drain, after a cordon)."""
        try:
            _, info = await self._api("GET", "/")
        except HubError as e:
            if e.code != 404:
                raise
            info = e
        if not (isinstance(info, dict) and "version" in info):
            # A URL without the hub's base_url (or the hub's public page): its pages answer, not its API.
            said = "404" if isinstance(info, HubError) else "a web page" if isinstance(info, str) else _excerpt(info)
            raise HubError(f"no JupyterHub API at {self.api_url}/ (it answers {said}): the hub serves it under "
                           "its base_url, at BASE_URL/hub/api (e.g. http://hub:8081/jhub/hub/api for base_url "
                           "'/jhub/'), as JUPYTERHUB_API_URL gives it to a managed service", 404)
        try:
            _, me = await self._api("GET", "/user")
        except HubError as e:
            if e.code != 403:  # JupyterHub answers an unknown or expired token 403, without a message
                raise
            raise HubError("the hub does not accept the API token (403 on GET /user): a managed service gets "
                           "JUPYTERHUB_API_TOKEN from the hub; otherwise set ElasticOrchestrator.api_token to a "
                           "token the hub issued (and check it has not expired)", 403) from None
        self.me = me if isinstance(me, dict) else {}
        granted = me.get("scopes") if isinstance(me, dict) else None
        if isinstance(granted, list):  # JupyterHub 2+: the token's scopes, expanded
            missing = missing_scopes(granted)
            if missing:
                raise HubError(f"the token of {me.get('name', '?')!r} lacks the scope(s) {', '.join(missing)}; "
                               f"its role needs {', '.join(ROLE_SCOPES)}", 403)
        await self._api("GET", "/users?limit=1")
        return str(info["version"])

    async def proxy_problem(self) -> str | None:
        """Why `proxy_url` cannot lead to the hub's proxy, when nothing answers there at all (the default
        127.0.0.1:8000 in a hub's pod): every drain would cordon a node and then reach no kernel. Only a
        connection that fails says so: as a managed service the orchestrator starts before the hub has
        its routes on the proxy, whose answers cannot be judged yet (and a service that fails its start
        ends the hub's)."""
        url = proxied_url(self.proxy_url, urlsplit(self.api_url).path.rstrip("/") + "/")
        try:
            await self._fetch(url)
        except HubError as e:
            return (f"ElasticOrchestrator.proxy_url {self.proxy_url}: nothing answers there ({e}); users' servers "
                    "are reached through the hub's proxy, so no server can be moved: set it to where the proxy "
                    "serves /user/ (zero-to-jupyterhub: http://proxy-public, or http://proxy-http:8000 with "
                    "autohttps; or $ELASTICHUB_PROXY_URL)")
        return None

    async def servers(self) -> dict[str, HubServer]:
        """Every active server (running, starting or stopping), by key."""
        servers: dict[str, HubServer] = {}
        offset = 0
        while True:
            _, page = await self._api("GET", f"/users?state=active&offset={offset}&limit=200", accept=PAGINATION)
            if isinstance(page, dict):
                items, pagination = page.get("items"), page.get("_pagination") or {}
            else:  # a hub without pagination answers a plain list
                items, pagination = page, {}
            if not isinstance(items, list):
                raise HubError(f"GET /users: unexpected answer {str(page)[:200]!r}")
            for user in items:
                for name, raw in (user.get("servers") or {}).items():
                    server = parse_server(user["name"], name, raw)
                    servers[server.key] = server
            nxt = pagination.get("next")
            if not nxt:
                return servers
            offset = int(nxt.get("offset", offset + len(items)))

    async def server(self, user: str, name: str) -> HubServer | None:
        """The hub's model of one server; None when it is not running (or the user is gone)."""
        try:
            _, model = await self._api("GET", f"/users/{quote(user, safe='')}")
        except HubError as e:
            if e.code == 404:
                return None
            raise
        raw = (model.get("servers") or {}).get(name) if isinstance(model, dict) else None
        return None if raw is None else parse_server(user, name, raw)

    async def stop(self, user: str, name: str) -> None:
        await self._api("DELETE", server_api_path(user, name), ok=(202, 204))

    async def start(self, user: str, name: str, user_options: dict) -> None:
        # 400 "already running" is the goal reached (a retried start).
        try:
            await self._api("POST", server_api_path(user, name), body=user_options or None, ok=(201, 202))
        except HubError as e:
            if e.code == 400 and "already" in str(e):
                return
            raise

    # -- the single-user server, through the proxy ---------------------------------------

    async def server_token(self, user: str, name: str) -> str:
        """A token of `user`'s that reaches their server `name` only
        (``access:servers!server=user/name``), minted through the hub API and
        kept until a third of its lifetime is gone. The service's own token
        reaches every server: sent to a student's, it would be theirs."""
        key, now = (user, name), self.clock()
        token, minted = self._server_tokens.get(key, ("", 0.0))
        if token and now - minted < self._token_lifetime_s / 3:
            return token
        # Tokens past their renewal are never handed out again: forgotten, so the cache holds the servers
        # called lately, not every server a hub of thousands of users ever ran.
        for old in [k for k, (_, at) in self._server_tokens.items() if now - at >= self._token_lifetime_s / 3]:
            del self._server_tokens[old]
        path = f"/users/{quote(user, safe='')}/tokens"
        while True:  # ends: each retry lowers the lifetime
            body = {"scopes": [f"access:servers!server={user}/{name}"], "expires_in": self._token_lifetime_s,
                    "note": f"elastichub orchestrator: calls to server {user}/{name}"}
            try:
                _, model = await self._api("POST", path, body, ok=(200, 201))
                break
            except HubError as e:
                # c.JupyterHub.token_expires_in_max_seconds below our lifetime: the hub names its cap.
                cap = re.search(r"must not exceed (\d+)", str(e)) if e.code == 400 else None
                if cap and 0 < int(cap.group(1)) < self._token_lifetime_s:
                    self._token_lifetime_s = int(cap.group(1))
                    continue
                why = " (the orchestrator's role needs the scope tokens)" if e.code == 403 else ""
                raise HubError(f"cannot get a token for server {user}/{name}{why}: {e}", e.code) from None
        token = model.get("token") if isinstance(model, dict) else None
        if not isinstance(token, str) or not token:
            raise HubError(f"POST /users/{user}/tokens: the hub's answer holds no token")
        self._server_tokens[key] = (token, self.clock())
        return token

    async def _server_fetch(self, owner: tuple[str, str], url: str, method: str = "GET", body=None, *,
                            timeout: float | None = None) -> tuple[int, object, dict]:
        """`_fetch` from `owner`'s server with its token (at the Host of `url`, a ServerBase's). A token
        the server refuses (its user revoked it on their token page, or the hub lost it) is minted
        again, once: a kept token must not hold up their moves for an hour."""
        host = getattr(url, "host", "")
        answer = await self._fetch(url, method, body, timeout=timeout, token=await self.server_token(*owner),
                                   host=host)
        if answer[0] not in (401, 403):
            return answer
        self._server_tokens.pop(owner, None)
        return await self._fetch(url, method, body, timeout=timeout, token=await self.server_token(*owner),
                                 host=host)

    def _server_url(self, server: HubServer, path: str) -> ServerBase:
        return ServerBase(self.proxy_base(server).rstrip("/") + path, server.host)

    async def kernels(self, server: HubServer) -> list[dict]:
        """Jupyter Server's kernel list (id, execution_state, last_activity)."""
        owner = (server.user, server.name)
        code, payload, _ = await self._server_fetch(owner, self._server_url(server, "/api/kernels"))
        if code != 200 or not isinstance(payload, list):
            raise HubError(f"kernels of {server.key}: {code} {_excerpt(payload)}", code)
        return payload

    async def terminals(self, server: HubServer) -> list[dict]:
        """Jupyter Server's terminals (name, last_activity), each with the
        `processes` its shell started (the kernel package's extension; None
        where it cannot tell); [] where terminals are off."""
        owner = (server.user, server.name)
        code, payload, _ = await self._server_fetch(owner, self._server_url(server, "/api/terminals"))
        if code == 404:
            return []
        if code != 200 or not isinstance(payload, list) or not all(isinstance(t, dict) for t in payload):
            raise HubError(f"terminals of {server.key}: {code} {_excerpt(payload)}", code)
        if not payload:
            return payload
        code, running, _ = await self._server_fetch(owner, self._server_url(server, "/api/elastichub/terminals"))
        if code == 404:  # an image without the kernel package: activity alone tells
            running = []
        elif code != 200 or not isinstance(running, list) or not all(isinstance(t, dict) for t in running):
            raise HubError(f"terminal processes of {server.key}: {code} {_excerpt(running)}", code)
        processes = {t.get("name"): t.get("processes") for t in running}
        return [dict(t, processes=processes.get(t.get("name"))) for t in payload]

    def proxy_base(self, server: HubServer) -> ServerBase:
        """Where the proxy serves this server (its route: whichever pod serves it)."""
        return ServerBase(proxied_url(self.proxy_url, server.path).rstrip("/") + "/", server.host)

    async def server_call(self, base: str, method: str, path: str, body=None, *, owner: tuple[str, str],
                          timeout: float | None = None):
        """The API of `owner`'s (user, server name) single-user server at
        `base` (the proxy route, proxy_base's, or one pod directly during a
        live move), with a token for that server only."""
        url = ServerBase(base.rstrip("/") + path, getattr(base, "host", ""))
        code, payload, _ = await self._server_fetch(owner, url, method, body, timeout=timeout)
        if code != 200:
            message = one_line(payload.get("message")) if isinstance(payload, dict) else _excerpt(payload)
            raise HubError(f"{method} {path} at {base}: {code} {message}", code)
        return payload

    async def checkpoint(self, server: HubServer, timeout: float, hold_s: float | None = None) -> CheckpointOutcome:
        """Have the server checkpoint every kernel (the kernel package's
        endpoint, through the proxy, as the spawner does before a stop);
        `hold_s`: each kernel then holds new cells until the stop, at most
        that long, so none starts after the checkpoint to be cut off by the
        stop (the stop answers it "did not run"; `end_hold` lets them run)."""
        owner = (server.user, server.name)
        outcome = await request_checkpoint(self.http, self._server_url(server, "/"), await self.server_token(*owner),
                                           timeout, hold_s, ssl_options=self.ssl_context, host=server.host)
        if not outcome.ok:  # the token may be why (revoked): the next try mints another
            self._server_tokens.pop(owner, None)
        return outcome

    async def end_hold(self, server: HubServer) -> None:
        """The cells a restart move's checkpoint held run now (the server is
        not stopped yet: a cell waits, or a terminal is in use). A failure
        is only logged: each kernel's hold ends by itself at its lease."""
        try:
            await self.server_call(self.proxy_base(server), "POST", "/api/elastichub/live", {"phase": "thaw"},
                                   owner=(server.user, server.name), timeout=30)
        except HubError as e:
            log.info("the kernels of %s hold their cells until their lease ends: %s", server.key, e)
