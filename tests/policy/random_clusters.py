"""Random clusters for the policy's property tests (hypothesis strategies)."""

from hypothesis import strategies as st

from elastichub.policy import ClusterSnapshot, GiB, Node, NodeStatus, Resources, Server, Tier

NOW = 50_000.0  # the clock of the generated snapshots: servers started up to 4 h before


@st.composite
def clusters(draw):
    n_nodes = draw(st.integers(1, 9))
    nodes = []
    counter = 0
    for i in range(n_nodes):
        tier = draw(st.sampled_from([Tier.ONPREM, Tier.CLOUD]))
        statuses = list(NodeStatus) if tier is Tier.CLOUD else [
            NodeStatus.READY, NodeStatus.READY, NodeStatus.CORDONED, NodeStatus.NOT_READY]
        status = draw(st.sampled_from(statuses))
        alloc = Resources(draw(st.integers(2, 32)), draw(st.integers(4, 64)) * GiB)
        servers, used = [], Resources()
        if status in (NodeStatus.READY, NodeStatus.CORDONED):
            for _ in range(draw(st.integers(0, 6))):
                req = Resources(draw(st.integers(0, 4)) / 2, draw(st.integers(1, 8)) * GiB)
                if (used + req).fits_in(alloc):
                    counter += 1
                    started = NOW - draw(st.integers(0, 4 * 3600))
                    servers.append(Server(f"u{counter}", req, f"n{i}", started, started - draw(st.integers(0, 600))))
                    used = used + req
            extra = Resources(draw(st.integers(0, 2)) / 4, draw(st.integers(0, 2)) * GiB)  # system pods
            if (used + extra).fits_in(alloc):
                used = used + extra
        nodes.append(Node(f"n{i}", tier, alloc, used, tuple(servers), status))
    pending = tuple(
        Server(f"p{j}", Resources(draw(st.integers(0, 4)) / 2, draw(st.integers(1, 16)) * GiB), None,
               None, NOW - draw(st.integers(0, 900)), cloud_only=draw(st.booleans()))
        for j in range(draw(st.integers(0, 4)))
    )
    return ClusterSnapshot(tuple(nodes), pending)
