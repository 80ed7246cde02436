"""The ElasticHub orchestrator: the live Tmon/Tcool loop.

Every Tmon it observes the cluster (watch-backed caches of nodes and pods,
the hub's servers, the cloud's VMs), asks the shared policy what to do
(`elastichub.policy`, the same code the simulator runs) and takes the next
step: start cloud VMs, or drain a cloud node by moving its servers with
their kernel state and stop its VM. Every step of a drain is written on the
Node it drains, so a restarted orchestrator resumes or rolls back from the
cluster alone.

Modules: `records` (what the caches keep of each object), `kube`, `cloud`
and `hub` (the adapters), `observe` (records -> ClusterSnapshot, pure),
`drain` (the move protocol), `controller` (the loop), `web` and `metrics`
(surfaces), `app` (the traitlets Application that wires them).
"""
