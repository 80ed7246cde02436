"""End to end: user options a caller sends through the real JupyterHub's REST API that the profile_list
cannot take are answered 400 naming the option and why, with no traceback in the hub's log (KubeSpawner's
own ValueError/KeyError was a 500 and a traceback)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

PROFILES = [{"display_name": "CPU", "slug": "cpu", "default": True, "profile_options": {
    "image": {"display_name": "Image", "choices": {"base": {"display_name": "Base", "kubespawner_override": {}}},
              "unlisted_choice": {"enabled": True, "validation_regex": "^jupyter/.+:.+$",
                                  "kubespawner_override": {"image": "{value}"}}}}}]


async def test_options_the_profiles_cannot_take_are_a_400_naming_them_not_a_500(cluster_factory, hub_factory):
    cluster = await cluster_factory()
    hub = await hub_factory(cluster, f"c.KubeSpawner.profile_list = {PROFILES!r}\n", spawner_class="elastic")
    await hub.api("POST", "/hub/api/users/dana")
    for options, says in [
            ({"profile": "gpu"}, "Your choice 'gpu' for profile cannot be used: 'gpu' is no profile here"),
            ({"profile": "cpu", "image--unlisted-choice": "miner"}, "Your choice 'miner' for image cannot be used"),
            ({"profile": "cpu", "image": ["base"]}, "Your choice ['base'] for image cannot be used")]:
        code, body = await hub.api("POST", "/hub/api/users/dana/server", options)
        assert code == 400 and body["message"].startswith(says), (options, code, body)
    assert "Traceback" not in hub.log_text(10**6), hub.log_text()
