"""User options that KubeSpawner's profile_list cannot take, found before it tries.

Through the hub's REST API (POST /users/{name}/server, {"profile": ..., ...}) a caller sends any JSON: a
profile slug that does not exist, a choice not listed, a typed value its option's validation_regex refuses or
that it takes no typed value for, a value of the wrong JSON type. KubeSpawner then raised a ValueError,
KeyError or TypeError, a traceback in the hub's log and a 500 to the caller; each is named here instead,
answered 400 (the caller's mistake) as a value typed into the form's free field is (spawnerchecks.bad_choice).
The checks follow KubeSpawner's own reading of the options (load_user_options, _load_profile): a falsy value
is no value, a typed value wins over a listed choice, and with no profile named the default profile's options
are read too.
"""

from __future__ import annotations

import re

_JSON_TYPES = ((bool, "true/false"), (str, "a string"), ((int, float), "a number"), (list, "an array"),
               (dict, "an object"))

TYPED = "--unlisted-choice"  # KubeSpawner's key of a value typed into an option's free field


def _json_type(value) -> str:
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), type(value).__name__)


def _listed(names) -> str:
    return ", ".join(repr(n) for n in names) or "none"


def options_problem(user_options: dict, profile_list: list) -> tuple[str, object, str, bool] | None:
    """(option, value, why, typing helps) of the first user option `profile_list` (initialized, as
    KubeSpawner's load_user_options has it) cannot take; None when it takes them all. `why` begins
    with the value's repr (spawnerchecks.bad_choice says what follows it)."""
    if not profile_list:  # KubeSpawner ignores the options then
        return None
    slug = user_options.get("profile")
    if slug:
        slugs = [p.get("slug") for p in profile_list]
        if not isinstance(slug, str):
            return "profile", slug, f"{slug!r} is {_json_type(slug)}, not a profile's name", False
        if slug not in slugs:
            return "profile", slug, f"{slug!r} is no profile here: the profiles are {_listed(slugs)}", False
        profile = next(p for p in profile_list if p.get("slug") == slug)
    else:
        profile = next((p for p in profile_list if p.get("default")), profile_list[0])
    for name, option in (profile.get("profile_options") or {}).items():
        problem = _option_problem(name, option, user_options.get(name + TYPED), user_options.get(name))
        if problem is not None:
            return problem
    return None


def _option_problem(name: str, option: dict, typed, choice) -> tuple[str, object, str, bool] | None:
    other = option.get("unlisted_choice") or {}
    choices = option.get("choices") or {}
    if typed:
        if not isinstance(typed, str):
            return name, typed, f"{typed!r} is {_json_type(typed)}, not a string", True
        if not other.get("enabled"):
            return name, typed, f"{typed!r} is a typed value, and {name} takes none: its choices are " \
                                f"{_listed(choices)}", False
        regex = other.get("validation_regex")
        if regex and not re.match(regex, typed):
            said = other.get("validation_message") or f"it must match {regex!r}"
            return name, typed, f"{typed!r} is not of the form asked for: {said}", True
        return None
    if choice:
        if not isinstance(choice, str):
            return name, choice, f"{choice!r} is {_json_type(choice)}, not one of {name}'s choices", False
        if choice not in choices:
            return name, choice, f"{choice!r} is not one of {name}'s choices: {_listed(choices)}", \
                bool(other.get("enabled"))
        return None
    if not choices and other.get("enabled"):  # nothing to default to: the value must be typed
        return name, "", f"{''!r} is no value, and {name} has no listed choice to fall back on", True
    return None
