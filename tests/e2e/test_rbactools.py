"""The audit check itself: it reads requests as Kubernetes' authorizer does, and can fail."""

from rbactools import Z2JH_HUB_ROLE, attributes, forbidden

from elastichub.orchestrator.rbac import CLUSTER_RULES, NAMESPACE_RULES, cluster_rules


def test_requests_read_as_the_authorizer_reads_them():
    assert attributes("GET", "/api/v1/pods?watch=true&resourceVersion=5") == ("watch", "pods", None)
    assert attributes("GET", "/api/v1/pods?limit=1") == ("list", "pods", None)
    assert attributes("GET", "/api/v1/namespaces/jhub/pods/jupyter-a") == ("get", "pods", "jhub")
    assert attributes("PATCH", "/api/v1/nodes/cloud-1") == ("patch", "nodes", None)
    assert attributes("DELETE", "/api/v1/namespaces/jhub/pods") == ("deletecollection", "pods", "jhub")
    assert attributes("GET", "/api/v1/namespaces/jhub/pods/a/log") == ("get", "pods/log", "jhub")
    assert attributes("GET", "/api/v1/namespaces/jhub") == ("get", "namespaces", None)
    assert attributes("GET", "/version") is None and attributes("GET", "/localcluster/v1/vms") is None


def test_a_request_no_role_allows_is_named():
    live_move = [("PATCH", "/api/v1/namespaces/jhub/pods/jupyter-a"), ("PATCH", "/api/v1/nodes/cloud-1"),
                 ("GET", "/api/v1/pods?watch=1"), ("POST", "/api/v1/namespaces/other/pods")]
    assert forbidden(live_move, "jhub", CLUSTER_RULES, Z2JH_HUB_ROLE + NAMESPACE_RULES) == [
        "create pods in other (POST /api/v1/namespaces/other/pods)"]
    # zero-to-jupyterhub's hub Role alone: no nodes, no pods across namespaces, no patch.
    assert len(forbidden(live_move, "jhub", (), Z2JH_HUB_ROLE)) == 4


def test_with_user_namespaces_a_server_in_its_own_namespace_can_move():
    live_move_elsewhere = [("PATCH", "/api/v1/namespaces/jupyter-alice/pods/jupyter-alice-m1"),
                           ("POST", "/api/v1/namespaces/jupyter-alice/pods"),
                           ("DELETE", "/api/v1/namespaces/jupyter-alice/pods/jupyter-alice")]
    assert forbidden(live_move_elsewhere, "jhub", cluster_rules(user_namespaces=True), Z2JH_HUB_ROLE) == []
    assert len(forbidden(live_move_elsewhere, "jhub", cluster_rules(), Z2JH_HUB_ROLE + NAMESPACE_RULES)) == 3
