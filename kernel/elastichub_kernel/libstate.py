"""The options a session sets in its libraries, mostly for what it shows:
pandas' (``pd.set_option("display.max_columns", None)``), matplotlib's
``rcParams`` (``plt.rcParams["figure.figsize"] = (12, 6)``, a style or a
seaborn theme) and scikit-learn's (``set_config(transform_output="pandas")``,
per thread: read and set on the cells' thread); and, for what it computes,
numpy's print and floating-point error options (``np.set_printoptions(
precision=3, suppress=True)``, ``np.seterr(divide="ignore")``) and
decimal's context (``getcontext().prec = 50``). They live in the library,
not in a variable: without this a moved notebook's tables were cut short,
its plots small again, its pipelines' output arrays, its arrays printed
to eight digits and its decimals computed to 28, without a word. So do
the methods ``tqdm.pandas()`` puts on pandas' classes (``progress_apply``,
``progress_map``, a groupby's): a call inside tqdm no cell's code shows,
so the moved notebook's next ``df.progress_apply`` raised AttributeError.
They are saved as the functions tqdm made (pickled: its bar class and
settings are in them) and put back on the same classes. So are plotly's
``pio.templates.default``/``pio.renderers.default``, polars' ``pl.Config``
settings kept inside its compiled core (``set_float_precision``: those it
keeps in ``POLARS_*`` variables move with the environment) and
``xr.set_options(...)``: a moved notebook's next figure, table or
computation (``keep_attrs``) came out differently, without a word. These
three keep no copy of their defaults, so all their options are saved and
a restore sets those that differ from what the library has here. polars'
random seed cannot be read back: a notebook that called
``pl.set_random_seed`` is told its stream did not move (note_cell_code).

Saved with the session's context (context.py) as the options that differ
from the library's defaults, for the libraries the session loaded (none is
imported here), and set again once the variables are loaded (the library
is imported again by then). A matplotlib value JSON cannot hold (a
cycler) is saved as its rc text, as a matplotlibrc file holds it; any other
is pickled as the variables are (``pd.options.display.float_format =
"{:.2f}".format``, a numpy ``formatter`` of the notebook's lambdas: before,
a moved notebook's tables and arrays printed in full precision again), and
one that cannot be is named as not carried.

pyplot's backend, once the session's first plot loaded it, is saved too
(as ``"pyplot": {"set": {"backend": ...}}``) and loaded again by the
restore: loading it is what sets up IPython's display of figures
(matplotlib_inline's integration), so a Figure kept in a variable shows as
a plot again, not as ``<Figure size ...>`` text, with the backend the
session used (``%matplotlib widget`` stays so).

numpy's and decimal's options belong to the execution context the cells
run in (a ``contextvars.Context``, since numpy 2; decimal's always), which
the checkpoint, written on the kernel's control thread, cannot see. So the
kernel notes them after each cell (``note_cells_context``), in that
context, and sets restored ones again before the next cell
(``apply_to_cells_context``); so too the notebook's own ContextVars
(idioms6.py).
"""

from __future__ import annotations

import ast
import base64
import importlib
import json
import pickle
import sys
import types
import warnings

from . import idioms, idioms6
from .messages import describe_error  # not serializer's module: it loads cloudpickle, a name a notebook may own

LIBRARIES = ("pandas", "matplotlib", "sklearn", "tqdm", "plotly.io", "polars", "xarray")
IN_CELLS_CONTEXT = ("numpy", "decimal")  # options read and set in the cells' execution context

# The IN_CELLS_CONTEXT options as the last cell left them (None outside a
# kernel: read where capture runs), and those a restore still has to set
# in the cells' context.
_seen_in_cells: dict | None = None
_to_apply: dict = {}
# polars' random stream has no getter (pl.set_random_seed only sets it): a notebook that seeded it is told a
# move cannot carry it; one that never did draws unseeded anyway, and hears nothing.
POLARS_SEED = "random_seed"
_polars_seeded = False
# decimal's current context where the cells run, as the last cell left it (a
# variable holding it, `ctx = decimal.getcontext()`, is saved as such), and
# the names whose restored value is to be made that context again.
_cells_decimal = None
_decimal_holders: tuple = ()


def cells_decimal_context():
    """decimal's context of the cells (None before the session loads decimal)."""
    return _cells_decimal


def holding_cells_decimal_context(ns: dict, names) -> list:
    """The names among ``names`` holding decimal's context of the cells."""
    current = _cells_decimal
    return [] if current is None else [name for name in names if ns[name] is current]


def make_cells_decimal_context(ns: dict, names) -> None:
    """Before the next cell: the restored context held by ``ns[names[0]]``
    becomes decimal's current one in the cells' context (setcontext), as
    the one it was saved from was: `ctx.prec = 3` changes the arithmetic."""
    global _decimal_holders
    _decimal_holders = (ns, list(names)) if names else ()


def capture() -> dict:
    """{"library_options": {library: {"set": {option: value}, "unsaved": [option]}}}, or {}."""
    saved = _read(LIBRARIES)
    backend = _pyplot_backend()
    if backend is not None:
        saved["pyplot"] = {"set": {"backend": backend}}
    saved.update(_read(IN_CELLS_CONTEXT) if _seen_in_cells is None else _seen_in_cells)
    if _polars_seeded and "polars" in sys.modules:
        saved.setdefault("polars", {}).setdefault("unsaved", []).append(POLARS_SEED)
    return {"library_options": saved} if saved else {}


def note_cell_code(code: str, ns: dict) -> None:
    """After a cell: whether it called polars' set_random_seed (under any name it is bound to). Nothing is
    parsed unless polars is loaded and the cell's text names the function."""
    global _polars_seeded
    polars = sys.modules.get("polars")
    if _polars_seeded or polars is None or "set_random_seed" not in code:
        return
    target = getattr(polars, "set_random_seed", None)
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return
    _polars_seeded = target is not None and any(
        isinstance(node, ast.Call) and _bound_to(node.func, ns) is target for node in ast.walk(tree))


def _bound_to(node, ns: dict):
    """What `name` or `module.attr...` names in the namespace; attributes are read of modules only (no
    notebook code runs)."""
    if isinstance(node, ast.Name):
        return ns.get(node.id)
    owner = _bound_to(node.value, ns) if isinstance(node, ast.Attribute) else None
    if isinstance(owner, types.ModuleType):
        try:
            return getattr(owner, node.attr, None)
        except Exception:  # a module's own __getattr__ refusing
            return None
    return None


def note_cells_context() -> None:
    """Read numpy's and decimal's options where the cells run (the kernel
    calls this after each cell: microseconds, and nothing unless the
    session loaded them). A restore queued during the cell (%elastic_restore)
    set them in this context already, and the cell may have changed them
    since: nothing is left to apply."""
    global _seen_in_cells, _cells_decimal
    _seen_in_cells = _read(IN_CELLS_CONTEXT)
    _to_apply.clear()
    decimal = sys.modules.get("decimal")
    _cells_decimal = decimal.getcontext() if decimal is not None else None
    idioms6.note_cells_context()  # the notebook's ContextVars' values


def apply_to_cells_context() -> None:
    """Set the restored options of IN_CELLS_CONTEXT in the context this
    runs in (the kernel calls this before a cell)."""
    global _to_apply, _decimal_holders
    idioms6.apply_to_cells_context()  # restored ContextVars' values
    pending, _to_apply = _to_apply, {}
    for name, changed in pending.items():
        module = sys.modules.get(name)
        if module is not None:
            try:
                _SET_TOGETHER[name](module, changed["set"])
            except Exception:  # restore() set them once and said what failed
                pass
    holders, _decimal_holders = _decimal_holders, ()
    decimal = sys.modules.get("decimal")
    if holders and decimal is not None:
        ns, names = holders
        held = ns.get(names[0])
        if isinstance(held, decimal.Context):  # still what the restore bound
            decimal.setcontext(held)


def _read(libraries) -> dict:
    saved = {}
    for name in libraries:
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
    return saved


def _put(out: dict, key: str, value, as_text: bool = False) -> None:
    if _plain(value):
        out.setdefault("set", {})[key] = list(value) if isinstance(value, tuple) else value
    elif as_text:
        out.setdefault("set", {})[key] = str(value)
    else:
        pickled = _pickled(value)
        if pickled is None:
            out.setdefault("unsaved", []).append(key)
        else:
            out.setdefault("pickled", {})[key] = pickled


def _pickled(value) -> str | None:
    """`value` pickled (a notebook function by value, as the variables are), as base64 text; None when it
    cannot be."""
    from .ownimports import dependency

    try:
        return base64.b64encode(dependency("cloudpickle").dumps(value, protocol=5)).decode("ascii")
    except Exception:  # a formatter holding an open file, a lock...: named as not carried
        return None


def _unpickled(name: str, changed: dict, problems: list) -> dict:
    """The options `changed` sets, its pickled ones loaded; one that does not load is named in `problems`."""
    options = dict(changed.get("set", {}))
    for key, text in changed.get("pickled", {}).items():
        try:
            options[key] = pickle.loads(base64.b64decode(text, validate=True))
        except Exception as exc:  # a function of a module this node lacks, a damaged text
            problems.append(f"the {name} option {key} was not set again (its saved value does not load: "
                            f"{describe_error(exc)}): set it again")
    return options


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


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


# Where tqdm.pandas() puts its methods (DataFrame, Series, the groupby and window classes)
_TQDM_PANDAS_MODULES = ("pandas.core.frame", "pandas.core.series", "pandas.core.groupby.generic",
                        "pandas.core.groupby.groupby", "pandas.core.window.rolling", "pandas.core.window.expanding")


def _tqdm_pandas(tqdm) -> dict:
    """{"module:Class.method": the function} of what tqdm.pandas() set on pandas' classes."""
    out: dict = {}
    seen: set = set()
    for name in _TQDM_PANDAS_MODULES:
        module = sys.modules.get(name)  # none imported here: a session without pandas has none
        # by the name the module gives it: pandas sets DataFrame.__module__ to "pandas"
        for owner, cls in list(vars(module).items()) if module is not None else ():
            if not isinstance(cls, type) or id(cls) in seen:
                continue
            seen.add(id(cls))
            for attr, value in list(vars(cls).items()):
                if attr.startswith("progress_") and str(getattr(value, "__module__", "")).startswith("tqdm"):
                    _put(out, f"{name}:{owner}.{attr}", value)
    return out


def _set_tqdm_pandas(key: str, function) -> None:
    name, path = key.split(":", 1)
    owner, attr = path.rsplit(".", 1)
    if name not in _TQDM_PANDAS_MODULES or not attr.startswith("progress_"):
        raise ValueError(f"{key} is not where tqdm.pandas() puts its methods")
    setattr(getattr(importlib.import_module(name), owner), attr, function)


_PLOTLY_IO = ("templates", "renderers")  # the registries whose .default a notebook sets


def _plotly_io(pio) -> dict:
    out: dict = {}
    # The templates the notebook registered (pio.templates["course"] = go.layout.Template(...)), before the default
    # that may name them: those a new registry lacks (plotly's own load lazily, by name)
    own = set(pio.templates) - set(type(pio.templates)())
    for name in sorted(own):
        _put(out, f"templates[{name}]", pio.templates[name])
    for registry in _PLOTLY_IO:
        _put(out, f"{registry}.default", getattr(pio, registry).default)  # a name, or a Template: pickled
    return out


def _set_plotly_io(pio, key: str, value) -> None:
    if key.startswith("templates[") and key.endswith("]"):
        pio.templates[key[len("templates["):-1]] = value
        return
    registry, attr = key.split(".", 1)
    if registry not in _PLOTLY_IO or attr != "default":
        raise ValueError(f"{key} is not one of plotly.io's defaults")
    setattr(getattr(pio, registry), attr, value)


def _polars(pl) -> dict:
    out: dict = {}
    for key, value in pl.Config.state(if_set=True).items():
        if key.startswith("set_"):  # kept in polars' core; the rest are POLARS_* environment variables
            _put(out, key, value)
    return out


def _set_polars(pl, key: str, value) -> None:
    if not key.startswith("set_"):
        raise ValueError(f"{key} is not a pl.Config setting")
    getattr(pl.Config, key)(value)


def _xarray(xr) -> dict:
    out: dict = {}
    for key, value in xr.get_options().items():
        _put(out, key, value)
    return out


def _pyplot_backend() -> str | None:
    """The backend pyplot loaded (None before the session's first plot, or without pyplot)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None or getattr(pyplot, "_backend_mod", None) is None:
        return None
    backend = dict.get(sys.modules["matplotlib"].rcParams, "backend")  # dict.get: resolves nothing
    return backend if isinstance(backend, str) else None


def restore_before_load(saved: dict) -> None:
    """Make the session's pyplot backend matplotlib's choice before the
    variables load: a figure that was open in pyplot registers with pyplot
    again while it loads, and that loads the backend."""
    backend = (saved.get("library_options") or {}).get("pyplot", {}).get("set", {}).get("backend")
    if not isinstance(backend, str) or _pyplot_backend() is not None:
        return
    try:
        import matplotlib

        matplotlib.rcParams["backend"] = backend
    except Exception:  # not installed, or a name it refuses: _restore_backend, after the load, says so
        pass


def _restore_backend(backend: str) -> list[str]:
    """Load pyplot's backend as the session had it: its display hooks (the
    inline backend's figure formatter) are set up by loading it."""
    now = _pyplot_backend()
    if now is not None and now.lower() == backend.lower():
        return []
    if now is not None:  # a figure restored into pyplot loaded the kernel's default already
        return [f"matplotlib's backend is {now} here, the session used {backend}: plt.switch_backend({backend!r}) "
                "sets it again (it closes the open figures)"]
    try:
        pyplot = importlib.import_module("matplotlib.pyplot")
        idioms.on_cells_thread(lambda: pyplot.switch_backend(backend))
    except Exception as exc:  # a backend missing here, or one needing a GUI this node has not
        return [f"matplotlib's backend {backend} was not loaded again ({describe_error(exc)}): figures may "
                "display as text until a plot sets a backend"]
    return []


def _sklearn(sklearn) -> dict:
    from sklearn import _config  # where scikit-learn keeps its defaults

    # Per thread: read on the cells' (the checkpoint is written on the control thread)
    now = idioms.on_cells_thread(sklearn.get_config)
    out: dict = {}
    for key, value in now.items():
        if key in _config._global_config and value != _config._global_config[key]:
            _put(out, key, value)
    return out


# numpy's documented defaults (numpy 1 keeps them in a global, numpy 2 in a
# context variable: a constant serves both).
_NUMPY_PRINT = {"edgeitems": 3, "threshold": 1000, "floatmode": "maxprec", "precision": 8, "suppress": False,
                "linewidth": 75, "nanstr": "nan", "infstr": "inf", "sign": "-", "formatter": None, "legacy": False}
_NUMPY_ERR = {"divide": "warn", "over": "warn", "under": "ignore", "invalid": "warn"}
_DECIMAL_FIELDS = ("prec", "rounding", "Emin", "Emax", "capitals", "clamp")
_DEFAULTS: dict = {}


def _numpy(np) -> dict:
    out: dict = {}
    for key, value in np.get_printoptions().items():
        if value != _NUMPY_PRINT.get(key):
            _put(out, key, value)
    for key, value in np.geterr().items():
        if value != _NUMPY_ERR[key]:
            _put(out, "err." + key, value)
    if np.geterrcall() is not None:
        out.setdefault("unsaved", []).append("seterrcall")
    return out


def _set_numpy(np, options: dict) -> None:
    np.set_printoptions(**{k: v for k, v in options.items() if not k.startswith("err.")})
    np.seterr(**{k[4:]: v for k, v in options.items() if k.startswith("err.")})


def _decimal_state(context) -> dict:
    state = {key: getattr(context, key) for key in _DECIMAL_FIELDS}
    for kind in ("traps", "flags"):
        state[kind] = sorted(signal.__name__ for signal, on in getattr(context, kind).items() if on)
    return state


def _decimal(decimal) -> dict:
    if "decimal" not in _DEFAULTS:  # read after every cell: the default once
        _DEFAULTS["decimal"] = _decimal_state(decimal.Context())  # a new Context copies DefaultContext
    default = _DEFAULTS["decimal"]
    changed = {key: value for key, value in _decimal_state(decimal.getcontext()).items() if value != default[key]}
    return {"set": changed} if changed else {}


def _set_decimal(decimal, options: dict) -> None:
    state = _decimal_state(decimal.getcontext())
    state.update(options)
    signals = {signal.__name__: signal for signal in decimal.Context().traps}
    for kind in ("traps", "flags"):
        unknown = sorted(set(state[kind]) - set(signals))
        if unknown:
            raise ValueError(f"{kind}: not a decimal signal: {', '.join(map(str, unknown))}")
        state[kind] = [signals[name] for name in state[kind]]
    decimal.setcontext(decimal.Context(**state))


_READERS = {"pandas": _pandas, "matplotlib": _matplotlib, "sklearn": _sklearn, "numpy": _numpy,
            "decimal": _decimal, "tqdm": _tqdm_pandas, "plotly.io": _plotly_io, "polars": _polars, "xarray": _xarray}
# Saved whole (no defaults to compare with): a restore sets what differs from the library's options here.
_WHOLE = ("plotly.io", "polars", "xarray")
_SETTERS = {
    "pandas": lambda pd, key, value: pd.set_option(key, value),
    "matplotlib": lambda mpl, key, value: mpl.rcParams.__setitem__(key, value),
    "sklearn": lambda sklearn, key, value: idioms.on_cells_thread(lambda: sklearn.set_config(**{key: value})),
    "tqdm": lambda tqdm, key, value: _set_tqdm_pandas(key, value),
    "plotly.io": _set_plotly_io,
    "polars": _set_polars,
    "xarray": lambda xr, key, value: xr.set_options(**{key: value}),
}
# IN_CELLS_CONTEXT's options depend on each other (numpy's legacy mode and
# the rest; decimal's are one Context): set in one call.
_SET_TOGETHER = {"numpy": _set_numpy, "decimal": _set_decimal}


def restore(saved: dict) -> list[str]:
    """Set the options again (numpy's and decimal's here, and again before
    the next cell, in the cells' context); problems as lines."""
    problems = []
    libraries = dict(saved.get("library_options", {}))
    backend = libraries.pop("pyplot", {}).get("set", {}).get("backend")
    if isinstance(backend, str):
        # First: the inline backend sets its own rc when loaded; the session's values go over it.
        problems += _restore_backend(backend)
    for name, changed in libraries.items():
        try:
            module = importlib.import_module(name)  # the session had loaded it
        except ImportError as exc:
            problems.append(f"{name}'s options were not set again ({exc})")
            continue
        options = _unpickled(name, changed, problems)
        if name in _WHOLE:
            options = _differing(name, module, options)
        if name in IN_CELLS_CONTEXT:
            problems += _restore_in_cells(name, module, options, changed)
        else:
            # a registration (templates[name]) first: an option set after it may name it
            for key, value in sorted(options.items(), key=lambda item: not item[0].endswith("]")):
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        _SETTERS[name](module, key, value)
                except Exception as exc:  # a library's validator: anything may refuse
                    # a validator's first line: plotly's lists every form the value may take, forty lines
                    problems.append(f"the {name} option {key} = {_short(value)} was not set again "
                                    f"({describe_error(exc)})")
        for key in changed.get("unsaved", []):
            problems.append(_not_carried(name, key))
    return problems


def _not_carried(name: str, key: str) -> str:
    global _polars_seeded
    if (name, key) != ("polars", POLARS_SEED):
        return f"the {name} option {key} is not carried (its value cannot be saved): set it again"
    _polars_seeded = True  # this session's stream is not the seeded one either: the next move says so again
    return ("polars' random stream is not carried: the notebook seeded it (pl.set_random_seed) and polars cannot "
            "say where the stream had got to, so a shuffle, sample or random value without a seed= of its own draws "
            "differently than before the move; call pl.set_random_seed again (the stream starts over) or pass seed=")


def _differing(name: str, module, options: dict) -> dict:
    """Those of `options` the library (a _WHOLE one) has otherwise here: an option equal already is left as is,
    so one this version lacks or refuses is named only when the session had changed it."""
    try:
        here = _READERS[name](module).get("set", {})
    except Exception:  # a version that keeps them otherwise: each one is set (and named if refused)
        return options
    return {key: value for key, value in options.items() if key not in here or here[key] != value}


def _restore_in_cells(name: str, module, options: dict, saved: dict) -> list[str]:
    """Set `options` of an IN_CELLS_CONTEXT library now (a value recomputed
    while restoring sees them) and queue them for the cells' context;
    `saved` is how they were saved (a checkpoint before the next cell saves that)."""
    global _seen_in_cells
    if not options:
        return []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _SET_TOGETHER[name](module, options)
    except Exception as exc:  # the library refused one of them: none is set
        return [f"the {name} options {_short(options)} were not set again ({describe_error(exc)})"]
    _to_apply[name] = {"set": options}
    if _seen_in_cells is not None:  # in a kernel: what the next cell will see
        _seen_in_cells = {**_seen_in_cells, name: {k: v for k, v in saved.items() if k != "unsaved"}}
    return []


_SAVED = ("set", "unsaved", "pickled")  # of each library
# What this kernel saves (forward.py): a newer kernel's library, or field of one, is left out, named.
SHAPE = {name: dict.fromkeys(_SAVED) for name in (*LIBRARIES, *IN_CELLS_CONTEXT, "pyplot")}


def checked(options) -> None:
    """ValueError when ``options`` (the context's "library_options") is malformed."""
    if not isinstance(options, dict) or set(options) - set(SHAPE):
        raise ValueError("library_options")
    for name, changed in options.items():
        pickled = changed.get("pickled", {}) if isinstance(changed, dict) else None
        if not (isinstance(pickled, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                  for k, v in pickled.items())):
            raise ValueError(f"library_options: {name}")
        if not (isinstance(changed, dict) and not set(changed) - set(_SAVED)
                and isinstance(changed.get("set", {}), dict) and all(isinstance(k, str) for k in changed.get("set", {}))
                and isinstance(changed.get("unsaved", []), list)
                and all(isinstance(k, str) for k in changed.get("unsaved", []))):
            raise ValueError(f"library_options: {name}")
