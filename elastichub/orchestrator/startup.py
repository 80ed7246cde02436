"""What stops `elastichub orchestrator` at start, and the checks of its
configuration that traitlets does not make."""

from __future__ import annotations

import difflib


class StartupError(Exception):
    """Something the orchestrator needs is missing or unreachable at start: one line says what."""


def check_names(config, settings: list[str], class_name: str) -> None:
    """A misspelt setting (`c.ElasticOrchestrator.dryrun = True`) or class
    name is an error: traitlets only warns, and the orchestrator would run on
    the default, a dry run left real without a word. `config`: the loaded
    traitlets config; `settings`: the names of the class's settings."""
    for key in config.get(class_name, {}):
        if key not in settings:
            hint = difflib.get_close_matches(key, settings, n=1)
            raise StartupError(f"{class_name}.{key}: no such setting"
                               + (f" (did you mean {hint[0]}?)" if hint else "; --help-all lists them"))
    for section in config:
        if section != class_name and difflib.get_close_matches(section, [class_name], n=1, cutoff=0.8):
            raise StartupError(f"{section}.{', '.join(config[section]) or '...'}: no class {section} "
                               f"(did you mean {class_name}?)")
