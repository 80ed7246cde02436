"""Prometheus metrics of the orchestrator (served at /services/<name>/metrics).

A registry of its own, so a process that embeds the orchestrator (tests,
the demo) never mixes its numbers with anyone else's.
"""

from __future__ import annotations

from collections import Counter as Tally

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics

from ..policy import ClusterSnapshot, NodeStatus, Tier, occupancy

# Every label value a counter is incremented with: their series exist (at 0)
# from the first scrape, so `increase(...[5m]) > 0` sees the first failure too.
ACTIONS = ("scale-out", "scale-in")
MOVE_OUTCOMES = ("moved", "skipped", "aborted", "failed", "interrupted")
MOVE_METHODS = ("live", "restart")
CYCLE_STAGES = ("cycle", "cloud", "boot", "drain", "tell", "movable", "unmark")


class Metrics:
    def __init__(self) -> None:
        # The *_created series (one per counter and histogram) only double
        # what a scrape shows; the orchestrator's process is its own.
        disable_created_metrics()
        self.registry = r = CollectorRegistry(auto_describe=True)
        self.nodes = Gauge("elastichub_nodes", "Worker nodes by tier and status", ["tier", "status"], registry=r)
        self.cloud_vms_on = Gauge("elastichub_cloud_vms_running",
                                  "Cloud VMs that cost money now (started, booting, running or stopping)",
                                  registry=r)
        self.cloud_node_seconds = Counter("elastichub_cloud_node_seconds",
                                          "Cloud VM-seconds run, as observed each cycle (the bill)", registry=r)
        self.occupancy = Gauge("elastichub_occupancy_ratio",
                               "Requests over allocatable of the active nodes (eq. 1), 0..1", ["resource"], registry=r)
        self.theta_out = Gauge("elastichub_theta_out_ratio", "The scale-out threshold in force, 0..1", registry=r)
        self.pending = Gauge("elastichub_pending_servers", "Single-user servers waiting for a node", registry=r)
        self.decision_seconds = Histogram(
            "elastichub_decision_seconds", "Time of one observe + decide step (the policy included)",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5), registry=r)
        self.actions = Counter("elastichub_scale_actions", "Scaling actions taken", ["action"], registry=r)
        self.migrations = Counter("elastichub_migrations", "Server moves by outcome and method",
                                  ["outcome", "method"], registry=r)
        self.migration_downtime = Histogram(
            "elastichub_migration_downtime_seconds",
            "What a move costs the user: live, the pause (freeze to route switch); restart, stop to answering again",
            ["method"], buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300), registry=r)
        self.boot_failures = Counter("elastichub_boot_failures", "Cloud VMs whose node was not Ready in time",
                                     registry=r)
        self.cycle_errors = Counter("elastichub_cycle_errors", "Cycles that failed (and were retried)",
                                    ["stage"], registry=r)
        self.problems = Gauge("elastichub_problems",
                              "Problems that need an admin's eye now (api/status lists them)", registry=r)
        for action in ACTIONS:
            self.actions.labels(action)
        for outcome in MOVE_OUTCOMES:
            for method in MOVE_METHODS:
                self.migrations.labels(outcome, method)
        for stage in CYCLE_STAGES:
            self.cycle_errors.labels(stage)

    def observed(self, snapshot: ClusterSnapshot, vms_on: int, theta_out: float) -> float:
        """The gauges of one cycle's snapshot; returns the active nodes' RAM occupancy (percent)."""
        # Every tier and status, 0 where no node has it: a series that vanished instead never fired an
        # alert such as `elastichub_nodes{tier="on-prem",status="ready"} < 1` (every on-prem node down).
        counts = Tally((n.tier, n.status) for n in snapshot.nodes)
        for tier in Tier:
            for status in NodeStatus:
                self.nodes.labels(tier.value, status.value).set(counts[tier, status])
        self.cloud_vms_on.set(vms_on)
        active = snapshot.active_nodes
        ram = occupancy(active, "ram")
        self.occupancy.labels("ram").set(ram / 100)
        self.occupancy.labels("cpu").set(occupancy(active, "cpu") / 100)
        self.theta_out.set(theta_out / 100)
        self.pending.set(len(snapshot.pending))
        return ram
