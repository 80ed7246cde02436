"""How the orchestrator reaches a hub's servers: the hub API path of a named
server, and the proxy URL of a server under a hub base_url."""

import pytest

from elastichub.orchestrator.hub import proxied_url, server_api_path


def test_default_and_named_servers_have_their_own_api_paths():
    assert server_api_path("alice", "") == "/users/alice/server"
    assert server_api_path("alice", "gpu") == "/users/alice/servers/gpu"
    assert server_api_path("a b@x.org", "my lab") == "/users/a%20b%40x.org/servers/my%20lab"


@pytest.mark.parametrize("proxy_url", ["http://hub.example", "http://hub.example/", "http://hub.example/jhub",
                                       "http://hub.example/jhub/"])
def test_the_base_url_counts_once_whether_proxy_url_has_it_or_not(proxy_url):
    assert proxied_url(proxy_url, "/jhub/user/alice/gpu/") == "http://hub.example/jhub/user/alice/gpu/"


def test_a_prefix_of_a_reverse_proxy_in_front_is_kept():
    # A path of proxy_url that the server's URL does not start with is the
    # address of the proxy itself (e.g. a load balancer that strips it).
    assert proxied_url("https://lb.example/hub", "/user/alice/") == "https://lb.example/hub/user/alice/"
    assert proxied_url("https://lb.example/jh", "/jhub/user/a/") == "https://lb.example/jh/jhub/user/a/"
