"""The options a session sets in its libraries, mostly for what it shows:
pandas' (``pd.set_option("display.max_columns", None)``), matplotlib's
``rcParams`` (``plt.rcParams["figure.figsize"] = (12, 6)``, a style or a
seaborn theme) and scikit-learn's (``set_config(transform_output="pandas")``,
per thread: read and set on the cells' thread). They live in the library,
not in a variable: without this a moved notebook's tables were cut short,
its plots small again and its pipelines' output arrays, without a word.

Saved with the session's context (context.py) as the options that differ
from the library's defaults, for the libraries the session loaded (none is
imported here), and set again once the variables are loaded (the library
is imported again by then). A matplotlib value JSON cannot hold (a
cycler) is saved as its rc text, as a matplotlibrc file holds it; a pandas
one is named as not carried. numpy's print options are not here: since
numpy 2 they belong to the cells' execution context, which the checkpoint,
written on the kernel's control thread, cannot read.
"""

from __future__ import annotations

import importlib
import json
import sys
import warnings

from . import idioms

LIBRARIES = ("pandas", "matplotlib", "sklearn")


def capture() -> dict:
    """{"library_options": {library: {"set": {option: value}, "unsaved": [option]}}}, or {}."""
    saved = {}
    for name in LIBRARIES:
        module = sys.modules.get(name)
        if module is None:
            continue
        try:
            with warnings.catch_warnings():  # reading a deprecated option warns
                warnings.simplefilter("ignore")
                changed = _READERS[name](module)
        except Exception:  # a version whose options are kept otherwise: nothing to say, nothing saved
            continue
        if changed:
            saved[name] = changed
    return {"library_options": saved} if saved else {}


def _put(out: dict, key: str, value, as_text: bool = False) -> None:
    if _plain(value):
        out.setdefault("set", {})[key] = list(value) if isinstance(value, tuple) else value
    elif as_text:
        out.setdefault("set", {})[key] = str(value)
    else:
        out.setdefault("unsaved", []).append(key)


def _plain(value) -> bool:
    try:
        return json.loads(json.dumps(value, allow_nan=False)) == (list(value) if isinstance(value, tuple) else value)
    except (TypeError, ValueError):
        return False


def _pandas(pd) -> dict:
    from pandas._config import config  # where pandas keeps its options and their defaults

    out: dict = {}
    for key, option in config._registered_options.items():
        if key not in config._deprecated_options:
            value = pd.get_option(key)
            if value != option.defval:
                _put(out, key, value)
    return out


def _matplotlib(mpl) -> dict:
    out: dict = {}
    for key, value in dict.items(mpl.rcParams):
        if key.startswith("backend") or key == "interactive":  # the kernel's own, set at its start
            continue
        if value != dict.get(mpl.rcParamsDefault, key):
            _put(out, key, value, as_text=True)  # rc text (a cycler) is what matplotlibrc files hold
    return out


def _sklearn(sklearn) -> dict:
    from sklearn import _config  # where scikit-learn keeps its defaults

    # Per thread: read on the cells' (the checkpoint is written on the control thread)
    now = idioms.on_cells_thread(sklearn.get_config)
    out: dict = {}
    for key, value in now.items():
        if key in _config._global_config and value != _config._global_config[key]:
            _put(out, key, value)
    return out


_READERS = {"pandas": _pandas, "matplotlib": _matplotlib, "sklearn": _sklearn}
_SETTERS = {
    "pandas": lambda pd, key, value: pd.set_option(key, value),
    "matplotlib": lambda mpl, key, value: mpl.rcParams.__setitem__(key, value),
    "sklearn": lambda sklearn, key, value: idioms.on_cells_thread(lambda: sklearn.set_config(**{key: value})),
}


def restore(saved: dict) -> list[str]:
    """Set the options again; problems as lines."""
    problems = []
    for name, changed in saved.get("library_options", {}).items():
        try:
            module = importlib.import_module(name)  # the session had loaded it
        except ImportError as exc:
            problems.append(f"{name}'s options were not set again ({exc})")
            continue
        for key, value in changed.get("set", {}).items():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    _SETTERS[name](module, key, value)
            except Exception as exc:  # a library's validator: anything may refuse
                problems.append(f"the {name} option {key} = {value!r} was not set again ({type(exc).__name__}: "
                                f"{exc})")
        for key in changed.get("unsaved", []):
            problems.append(f"the {name} option {key} is not carried (its value cannot be saved): set it again")
    return problems


def checked(options) -> None:
    """ValueError when ``options`` (the context's "library_options") is malformed."""
    if not isinstance(options, dict) or set(options) - set(LIBRARIES):
        raise ValueError("library_options")
    for name, changed in options.items():
        if not (isinstance(changed, dict) and not set(changed) - {"set", "unsaved"}
                and isinstance(changed.get("set", {}), dict) and all(isinstance(k, str) for k in changed.get("set", {}))
                and isinstance(changed.get("unsaved", []), list)
                and all(isinstance(k, str) for k in changed.get("unsaved", []))):
            raise ValueError(f"library_options: {name}")
