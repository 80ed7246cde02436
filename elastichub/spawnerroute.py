"""Live moves, the hub's side: the orchestrator starts a server's destination
pod and annotates it `elastichub.io/route: requested`; the hub switches the
server to it (the proxy's route, then the hub's record of the server) and
answers on the same annotation. One task per hub watches every server's pods.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import ClassVar
from urllib.parse import urlparse

from . import podmeta, podspec


class RouteSwitch:
    """Mixed into ElasticSpawner: reads its reflector, proxy, record and log."""

    # Every server's spawner in this hub, by (user, server name): one task per
    # hub answers the orchestrator's route requests for all of them.
    _servers: ClassVar[weakref.WeakValueDictionary] = weakref.WeakValueDictionary()
    _route_watcher: ClassVar[asyncio.Task | None] = None
    _answering: ClassVar[set] = set()


    def _watch_route_requests(self) -> None:
        cls = RouteSwitch
        if cls._route_watcher is None or cls._route_watcher.done():
            cls._route_watcher = asyncio.ensure_future(cls._route_watch_loop(self.route_switch_interval, self.log))

    @classmethod
    async def _route_watch_loop(cls, interval: float, log) -> None:
        while True:
            try:
                reflectors = {id(r): r for s in list(cls._servers.values())
                              if (r := s.pod_reflector) is not None}
                for reflector in reflectors.values():
                    for pod in podspec.route_requests(list(reflector.pods.values())):
                        annotations = pod["metadata"]["annotations"]
                        spawner = cls._servers.get((annotations.get(podmeta.USER_ANNOTATION),
                                                    annotations.get(podmeta.SERVER_NAME_ANNOTATION, "")))
                        uid = pod["metadata"].get("uid")
                        if spawner is None or uid in cls._answering:
                            continue  # not a server of this hub; or being answered
                        cls._answering.add(uid)
                        task = asyncio.ensure_future(spawner._answer_route_request(pod))
                        task.add_done_callback(lambda _, uid=uid: cls._answering.discard(uid))
            except Exception:  # the watcher must outlive any one bad pod
                log.exception("ElasticHub route watcher")
            await asyncio.sleep(interval)

    async def _answer_route_request(self, pod: dict) -> None:
        """Make `pod` (a live move's destination, holding the server's state)
        this server's: the proxy route first, then the hub's record of the
        server (URL and pod name, so poll() and stop() follow the new pod).
        The hub never sees the server stopped: the source pod serves until
        the answer, and is deleted by the orchestrator only after it."""
        name = pod["metadata"]["name"]
        await self._profile_of_the_running_server()  # its profile's settings decide, as at its start
        if pod["metadata"]["annotations"].get(podmeta.ROUTE_ANNOTATION) == podmeta.ROUTE_SWITCHING:
            await self._answer_unfinished_switch(pod)
            return
        problem = podspec.route_request_problem(pod, self.user.name, self.name or "")
        if not problem and (self.server is None or self.pending):
            problem = f"the server is {self.pending or 'not running'} in the hub"
        if not problem and (self.services_enabled or self.internal_ssl):
            # A Service and a certificate are made per pod name at the start: the new pod has neither.
            problem = "live moves do not support services_enabled or internal_ssl (use move_method 'restart')"
        if not problem and not self.is_pod_running(pod):
            problem = f"pod {name} is not running and ready"
        expected = podmeta.ROUTE_REQUESTED
        if not problem and self.pod_name != name:
            # Claimed first: once the orchestrator has withdrawn the request (its timeout), the pod is
            # being deleted and the server must stay where it is.
            if not await self._swap_route(name, podmeta.ROUTE_REQUESTED, podmeta.ROUTE_SWITCHING):
                return
            expected = podmeta.ROUTE_SWITCHING
            problem = await self._switch_to(pod)
        await self._swap_route(name, expected, f"{podmeta.ROUTE_REFUSED}: {problem}" if problem
                               else podmeta.ROUTE_SWITCHED)

    async def _answer_unfinished_switch(self, pod: dict) -> None:
        """A switch a hub claimed and never answered (it stopped in between):
        the hub's record decides. It names the pod: switched. It does not:
        the route goes back to the pod it names, and the move is refused."""
        name = pod["metadata"]["name"]
        if self.pod_name == name:
            await self._swap_route(name, podmeta.ROUTE_SWITCHING, podmeta.ROUTE_SWITCHED)
            return
        if self.server is not None and not self.pending:
            try:
                await self.user.settings["proxy"].add_route(
                    self.proxy_spec, self.server.host, {"user": self.user.name, "server_name": self.name or ""})
            except Exception as e:  # asked again: the watcher finds the pod still "switching"
                self.log.warning("ElasticHub: could not route %s back to pod %s: %s", self._log_name,
                                 self.pod_name, e)
                return
        await self._swap_route(name, podmeta.ROUTE_SWITCHING,
                               f"{podmeta.ROUTE_REFUSED}: the hub stopped before it recorded the switch")

    async def _swap_route(self, pod_name: str, expected: str, answer: str) -> bool:
        """Set the pod's route annotation to `answer` if it still is `expected`."""
        try:
            await self.api.patch_namespaced_pod(
                pod_name, self.namespace, podspec.annotation_swap(podmeta.ROUTE_ANNOTATION, expected, answer))
            return True
        except Exception as e:
            if getattr(e, "status", None) == 422:  # the orchestrator withdrew the request meanwhile
                self.log.info("ElasticHub: the route request of pod %s was withdrawn before the hub's answer "
                              "(%s)", pod_name, answer)
            else:  # the orchestrator times out and asks the hub again after its restart
                self.log.warning("ElasticHub: could not answer the route request of pod %s: %s", pod_name, e)
            return False

    async def _switch_to(self, pod: dict) -> str | None:
        """The switch itself; returns why it did not happen (None: done)."""
        name, source = pod["metadata"]["name"], self.pod_name
        url = urlparse(self._get_pod_url(pod))
        target = f"{url.scheme}://{url.netloc}"
        proxy = self.user.settings.get("proxy")
        data = {"user": self.user.name, "server_name": self.name or ""}
        try:
            await proxy.add_route(self.proxy_spec, target, data)
        except Exception as e:
            return f"the proxy refused the new route ({type(e).__name__}: {e})"
        old = (self.server.ip, self.server.port)
        try:
            self.pod_name = name
            self.dns_name = self.dns_name_template.format(namespace=self.namespace, name=name)
            self.server.ip, self.server.port = url.hostname, url.port
            self.last_node = podspec.pod_node(pod) or self.last_node
            self._persist_state()
        except Exception as e:  # put the route back: the hub's record and the proxy must agree
            self.pod_name = source
            self.server.ip, self.server.port = old
            await proxy.add_route(self.proxy_spec, self.server.host, data)
            return f"the hub could not record the new pod ({type(e).__name__}: {e})"
        self.log.info("ElasticHub live move of %s: now served by pod %s (%s) instead of %s",
                      self._log_name, name, target, source)
        return None
