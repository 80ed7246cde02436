"""User options sent through the hub's REST API that the profile_list cannot take: each is the caller's
mistake, answered 400 naming the option and why, not KubeSpawner's ValueError/KeyError/TypeError (a
traceback in the hub's log, a 500)."""

from __future__ import annotations

import pytest
from spawnertools import spawner
from tornado import web

IMAGE = {"display_name": "Image", "choices": {
    "base": {"display_name": "Base", "default": True, "kubespawner_override": {"image": "base:1"}},
    "sci": {"display_name": "Sci", "kubespawner_override": {"image": "sci:1"}}},
    "unlisted_choice": {"enabled": True, "validation_regex": "^jupyter/.+:.+$",
                        "kubespawner_override": {"image": "{value}"}}}
SIZE = {"display_name": "Size", "choices": {
    "s": {"display_name": "S", "default": True, "kubespawner_override": {"mem_limit": "1G"}},
    "l": {"display_name": "L", "kubespawner_override": {"mem_limit": "4G"}}}}
TAG = {"display_name": "Tag", "unlisted_choice": {"enabled": True, "validation_message": "a tag like 2024.1",
                                                  "validation_regex": r"^\d+\.\d+$",
                                                  "kubespawner_override": {"image": "base:{value}"}}}
PROFILES = [{"display_name": "CPU", "slug": "cpu", "default": True,
             "profile_options": {"image": IMAGE, "size": SIZE}},
            {"display_name": "Tagged", "slug": "tagged", "profile_options": {"tag": TAG}}]


def _sent(options: dict):
    s = spawner(profile_list=PROFILES)
    s.user_options = options
    return s


@pytest.mark.parametrize("options, says", [
    ({"profile": "gpu"}, "Your choice 'gpu' for profile cannot be used: 'gpu' is no profile here: the profiles "
                         "are 'cpu', 'tagged'. Pick one of the listed choices."),
    ({"profile": ["cpu"]}, "Your choice ['cpu'] for profile cannot be used: ['cpu'] is an array, not a profile's "
                           "name. Pick one of the listed choices."),
    ({"profile": "cpu", "image--unlisted-choice": "evil/miner"},
     "Your choice 'evil/miner' for image cannot be used: 'evil/miner' is not of the form asked for: it must "
     "match '^jupyter/.+:.+$'. Pick one of the listed choices, or type another value."),
    ({"profile": "tagged", "tag--unlisted-choice": "latest"},
     "Your choice 'latest' for tag cannot be used: 'latest' is not of the form asked for: a tag like 2024.1."),
    ({"profile": "cpu", "size--unlisted-choice": "8G"},
     "Your choice '8G' for size cannot be used: '8G' is a typed value, and size takes none: its choices are "
     "'s', 'l'. Pick one of the listed choices."),
    ({"profile": "cpu", "size": "xl"}, "Your choice 'xl' for size cannot be used: 'xl' is not one of size's "
                                       "choices: 's', 'l'. Pick one of the listed choices."),
    ({"size": "xl"}, "Your choice 'xl' for size cannot be used: 'xl' is not one of size's choices"),  # default
    ({"profile": "cpu", "size": 4}, "Your choice 4 for size cannot be used: 4 is a number, not one of size's "
                                    "choices"),
    ({"profile": "cpu", "image--unlisted-choice": {"x": 1}}, "Your choice {'x': 1} for image cannot be used: "
                                                             "{'x': 1} is an object, not a string"),
    ({"profile": "tagged"}, "Your choice '' for tag cannot be used: '' is no value, and tag has no listed "
                            "choice to fall back on"),
])
async def test_options_the_profiles_cannot_take_are_answered_400_naming_the_option(options, says):
    with pytest.raises(web.HTTPError) as err:
        await _sent(options).load_user_options()
    assert err.value.status_code == 400, err.value
    assert err.value.jupyterhub_message.startswith(says), err.value.jupyterhub_message


@pytest.mark.parametrize("options, image, memory", [
    ({}, "base:1", 2**30),
    ({"profile": "cpu", "image": "sci", "size": "l"}, "sci:1", 4 * 2**30),
    ({"profile": "cpu", "image--unlisted-choice": "jupyter/scipy:2024", "image": "sci"}, "jupyter/scipy:2024",
     2**30),  # a typed value wins over a listed one, as KubeSpawner reads them
    ({"profile": "cpu", "size": ""}, "base:1", 2**30),  # no value: the default
    ({"profile": "tagged", "tag--unlisted-choice": "2024.1"}, "base:2024.1", None),
])
async def test_options_the_profiles_take_are_applied_as_before(options, image, memory):
    s = _sent(options)
    await s.load_user_options()
    assert s.image == image
    if memory is not None:
        assert s.mem_limit == memory
