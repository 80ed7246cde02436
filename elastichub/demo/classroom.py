"""A class, played by simulated students against the demo's hub.

Each student gets a token of their own from the hub (as a login would), starts
their server through the hub's API, opens an "Elastic Python" notebook over
the real kernel websocket and builds some state: random arrays, a
DataFrame, a fitted model, a function. The class is a burst: more students
than on-prem holds, so the orchestrator boots a cloud VM for the late ones.
Then most leave; the orchestrator moves the rest off the cloud and stops the
VMs; every moved student's kernel is checked against what it held before.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Callable

from .notebook import Notebook, NotebookError
from .stage import Stage
from .view import server_nodes

STATE = """
import hashlib
import numpy as np
import pandas as pd
rng = np.random.default_rng()
arrays = [rng.random((200, 100)) for _ in range(3)]
df = pd.DataFrame({"hours": rng.random(300) * 10, "score": rng.integers(0, 100, 300)})
try:
    from sklearn.linear_model import LinearRegression
    model = LinearRegression().fit(df[["hours"]], df["score"])
    predict = lambda h: model.predict(pd.DataFrame({"hours": [h]}))[0]
except ImportError:  # no scikit-learn in this image: a polynomial fit is a model too
    model = np.polyfit(df["hours"], df["score"], 2)
    predict = lambda h: np.polyval(model, h)
def grade(h):
    return round(float(predict(h)), 6)
"""
# What must come back identical after a move.
DIGEST = ("print(hashlib.sha256(b''.join(a.tobytes() for a in arrays)).hexdigest()[:16], "
          "hashlib.sha256(df.to_json().encode()).hexdigest()[:16], grade(4.5), len(df))")


@dataclass
class Student:
    name: str
    token: str = ""
    phase: str = "at home"  # waiting for a server, working, left, moved, checked
    requested_at: float | None = None
    ready_at: float | None = None
    digest: str = ""
    node: str | None = None
    after_move: str | None = None  # the digest once moved
    kernel_id: str | None = None  # the notebook's kernel; a live move keeps it
    error: str = ""

    @property
    def wait_s(self) -> float | None:
        if self.requested_at is None or self.ready_at is None:
            return None
        return self.ready_at - self.requested_at


@dataclass
class ClassSettings:
    students: int = 10
    stay: int = 4  # students still working when the class ends (the rest leave)
    arrival_gap_s: float = 0.7
    settle_timeout_s: float = 300.0


@dataclass
class Classroom:
    stage: Stage
    settings: ClassSettings = field(default_factory=ClassSettings)
    say: Callable[[str], None] = print

    def __post_init__(self) -> None:
        self.students = [Student(f"student{i:02d}") for i in range(1, self.settings.students + 1)]

    async def _user_api(self, student: Student, method: str, path: str, body=None):
        return await self.stage.api(method, path, body, token=student.token)

    async def enrol(self) -> None:
        for s in self.students:
            await self.stage.api("POST", f"/users/{s.name}")
            code, token = await self.stage.api("POST", f"/users/{s.name}/tokens",
                                               {"note": "elastichub demo student", "expires_in": 3600})
            if code not in (200, 201):
                raise RuntimeError(f"cannot log {s.name} in: {code} {token}")
            s.token = token["token"]

    async def arrive(self, s: Student) -> None:
        s.phase, s.requested_at = "waiting for a server", time.time()
        code, body = await self._user_api(s, "POST", f"/users/{s.name}/server")
        if code not in (201, 202):
            raise RuntimeError(f"{s.name}'s server did not start: {code} {body}")
        while True:
            code, user = await self._user_api(s, "GET", f"/users/{s.name}")
            server = (user or {}).get("servers", {}).get("") if code == 200 else None
            if server and server.get("ready"):
                break
            if server is None and time.time() - s.requested_at > 5:
                raise RuntimeError(f"{s.name}'s server failed to start")
            await asyncio.sleep(0.5)
        s.ready_at = time.time()
        nb = await Notebook(self.stage.url, s.name, s.token, "lesson.ipynb").open()
        s.kernel_id = nb.kernel_id
        try:
            out = await nb.run(STATE)
            if out["status"] != "ok":
                raise RuntimeError(f"{s.name}'s cell failed: {out['error']}")
            s.digest = (await nb.run(DIGEST))["stdout"].strip()
        finally:
            nb.close()
        s.phase = "working"

    async def class_starts(self) -> None:
        self.say(f"the class starts: {len(self.students)} students arrive within "
                 f"{self.settings.arrival_gap_s * len(self.students):.0f} s")
        tasks = []
        for s in self.students:
            tasks.append(asyncio.create_task(self.arrive(s)))
            await asyncio.sleep(self.settings.arrival_gap_s)
        results = await asyncio.gather(*tasks, return_exceptions=True)
        for s, r in zip(self.students, results):
            if isinstance(r, BaseException):
                s.error, s.phase = str(r), "failed"
        if all(s.error for s in self.students):
            raise RuntimeError("no student got a server: " + self.students[0].error)

    def locate(self, status: dict) -> None:
        where = server_nodes(status)
        for s in self.students:
            s.node = where.get(s.name)

    async def class_ends(self) -> None:
        """Everyone leaves but `stay` students, the ones on cloud nodes first among those who stay."""
        status = await self.stage.orchestrator_status() or {"nodes": []}
        self.locate(status)
        cloud = {n["name"] for n in status["nodes"] if n["tier"] == "cloud"}
        working = [s for s in self.students if s.phase == "working"]
        stay = sorted(working, key=lambda s: (s.node not in cloud, s.name))[:self.settings.stay]
        leave = [s for s in working if s not in stay]
        self.say(f"the class ends: {len(leave)} students leave, {len(stay)} keep working "
                 f"({sum(1 for s in stay if s.node in cloud)} of them on cloud nodes)")
        for s in leave:
            await self._user_api(s, "DELETE", f"/users/{s.name}/server")
            s.phase = "left"

    async def wait_cloud_released(self) -> dict:
        """Until no cloud VM runs and no migration is in flight (or the timeout)."""
        deadline = time.time() + self.settings.settle_timeout_s
        status = {}
        while time.time() < deadline:
            status = await self.stage.orchestrator_status() or status
            if status and status["pool"].get("ready", 0) == 0 and status["pool"].get("booting", 0) == 0 \
                    and status["pool"].get("cordoned", 0) == 0 and not status["migrations"]["in_flight"]:
                return status
            await asyncio.sleep(1.0)
        self.say(f"the cloud was not released within {self.settings.settle_timeout_s:g} s")
        return status

    async def check_moved(self, status: dict) -> list[dict]:
        """Re-open each moved student's notebook: is every variable as it was?"""
        moves = [m for m in status["migrations"]["recent"] if m["outcome"] == "moved"]
        by_name = {s.name: s for s in self.students}
        checked = []
        for m in moves:
            s = by_name.get(m["server"])
            if s is None:
                continue
            kernel = None
            try:
                nb = await Notebook(self.stage.url, s.name, s.token, "lesson.ipynb").open(create=False)
                kernel = nb.kernel_id
                try:
                    s.after_move = (await nb.run(DIGEST))["stdout"].strip()
                finally:
                    nb.close()
            except (NotebookError, asyncio.TimeoutError) as e:
                s.error = f"cannot check after the move: {e}"
            identical = bool(s.digest) and s.after_move == s.digest
            s.phase = "moved, state identical" if identical else "moved, STATE DIFFERS"
            checked.append({"user": s.name, "from_node": m["from"], "to_node": m["to"],
                            "method": m.get("method", "restart"), "downtime_s": m["downtime_s"],
                            "state_identical": identical, "same_kernel": kernel is not None and kernel == s.kernel_id,
                            "checkpoint": m.get("checkpoint", {})})
        return checked
