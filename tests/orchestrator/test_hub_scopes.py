"""Which scopes a move needs, read off the expanded scopes GET /hub/api/user answers."""

from elastichub.orchestrator.hub import missing_scopes


def test_the_example_roles_scopes_expanded_are_enough():
    expanded = ["list:users", "read:users", "read:users:name", "read:users:activity", "servers", "read:servers",
                "start:servers", "delete:servers", "access:servers", "admin:server_state", "tokens", "read:tokens"]
    assert missing_scopes(expanded) == []


def test_a_broader_role_is_enough_and_a_filter_is_the_admins_choice():
    assert missing_scopes(["admin:users", "list:users", "read:users", "admin:servers", "admin:server_state", "servers",
                           "read:servers", "start:servers", "delete:servers", "access:servers!group=students",
                           "tokens!group=students"]) == []


def test_what_is_missing_is_named():
    assert missing_scopes(["list:users", "read:users", "read:servers"]) == [
        "start:servers", "delete:servers", "access:servers", "admin:server_state", "tokens"]
    assert missing_scopes([]) == ["list:users", "read:users", "read:servers", "start:servers", "delete:servers",
                                  "access:servers", "admin:server_state", "tokens"]
    # A role of the scopes a live move needed before it read the hub's record of which pod serves a server.
    assert missing_scopes(["list:users", "read:users", "servers", "read:servers", "start:servers", "delete:servers",
                           "access:servers"]) == ["admin:server_state", "tokens"]
    # A role from before the orchestrator called each server with a token of that server's only.
    assert missing_scopes(["list:users", "read:users", "servers", "read:servers", "start:servers", "delete:servers",
                           "access:servers", "admin:server_state"]) == ["tokens"]
