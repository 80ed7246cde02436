"""Discrete-event simulator of an elastic hybrid JupyterHub cluster.

It drives the very policy code the live orchestrator runs
(`elastichub.policy`), with modelled delays, on a generated workload or a
replayed trace, and reports cloud node-hours and waiting times.
"""

from .engine import RunResult, Simulation, SimulationError, simulate
from .params import ClusterParams
from .runner import MODES, RunSpec, plan_runs, run_all, summary
from .workload import WORKLOADS, LifetimeModel, Request, Workload, make_workload, register_workload

__all__ = [
    "ClusterParams",
    "LifetimeModel",
    "MODES",
    "Request",
    "RunResult",
    "RunSpec",
    "Simulation",
    "SimulationError",
    "WORKLOADS",
    "Workload",
    "make_workload",
    "plan_runs",
    "register_workload",
    "run_all",
    "simulate",
    "summary",
]
