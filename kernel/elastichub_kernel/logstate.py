"""The logging set-up a session makes: ``logging.basicConfig(level=logging.INFO)``,
``logging.getLogger("transformers").setLevel(logging.ERROR)`` to quiet a
library, a ``FileHandler`` writing a training log. It lives in the
process, not in a variable: without this a moved notebook's ``log.info``
printed nothing, and the quieted library spoke again, without a word.

Saved with the session's context (context.py) as what changed since the
kernel started: loggers' levels, ``propagate`` and ``disabled``, the
handlers added to them, and ``logging.disable``. Set again once the
variables are loaded, after their modules, which set their own loggers up
at import. A handler is carried when it is a ``StreamHandler`` to the
notebook's output, a ``FileHandler`` (opened again to append: the log so
far stays) or a ``NullHandler``, with its level and a plain ``Formatter``;
any other (a rotating file, an HTTP handler, one with filters or a
formatter class of its own) is named as not carried, unless its library
set one of its kind up again at import. A handler already there, the same,
is not added twice (a library adds its own again when imported).
"""

from __future__ import annotations

import logging
import sys

from .forward import ANY, Kinds, Values

_STYLES = {"PercentStyle": "%", "StrFormatStyle": "{", "StringTemplateStyle": "$"}
_DEFAULT = (logging.NOTSET, True, False, ())  # a logger the session created


def _loggers():
    yield "", logging.root
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger):
            yield name, logger


def baseline() -> dict:
    """The loggers at start: (level, propagate, disabled, handlers)."""
    return {"disable": logging.root.manager.disable,
            "loggers": {name: (lg.level, lg.propagate, lg.disabled, tuple(lg.handlers)) for name, lg in _loggers()}}


def capture(start: dict | None) -> dict:
    """{"logging": ...} with the session's changes, or {} when none."""
    if start is None:
        return {}
    saved: dict = {}
    if logging.root.manager.disable != start["disable"]:
        saved["disable"] = logging.root.manager.disable
    loggers = {}
    for name, logger in _loggers():
        level, propagate, disabled, handlers = start["loggers"].get(name, _DEFAULT)
        entry: dict = {}
        if logger.level != level:
            entry["level"] = logger.level
        if logger.propagate != propagate:
            entry["propagate"] = logger.propagate
        if logger.disabled != disabled:
            entry["disabled"] = logger.disabled
        added = [h for h in logger.handlers if not any(h is old for old in handlers)]
        if added:
            entry["handlers"] = [describe(h) for h in added]
        if entry:
            loggers[name] = entry
    if loggers:
        saved["loggers"] = loggers
    return {"logging": saved} if saved else {}


def describe(handler: logging.Handler) -> dict:
    """A handler as JSON: what builds it again, or {"unsupported": why}."""
    kind = type(handler)
    if handler.filters:
        return {"unsupported": f"{kind.__name__} with filters", "type": kind.__name__}
    formatter = handler.formatter
    out: dict = {"level": handler.level}
    if formatter is not None:
        style = _STYLES.get(type(getattr(formatter, "_style", None)).__name__)
        if type(formatter) is not logging.Formatter or style is None:
            return {"unsupported": f"{kind.__name__} with a {type(formatter).__name__}", "type": kind.__name__}
        out["format"] = [formatter._fmt, formatter.datefmt, style]
    if kind is logging.FileHandler:
        out.update(kind="file", path=handler.baseFilename, encoding=handler.encoding)
    elif kind is logging.StreamHandler and handler.stream in (sys.stdout, sys.stderr):
        out.update(kind="stream", to="stdout" if handler.stream is sys.stdout else "stderr")
    elif kind is logging.NullHandler:
        out.update(kind="null")
    else:
        return {"unsupported": kind.__name__ + (" to another stream" if kind is logging.StreamHandler else ""),
                "type": kind.__name__}
    return out


def _build(spec: dict) -> logging.Handler:
    if spec["kind"] == "file":
        handler: logging.Handler = logging.FileHandler(spec["path"], mode="a", encoding=spec["encoding"])
    elif spec["kind"] == "stream":
        handler = logging.StreamHandler(sys.stdout if spec["to"] == "stdout" else sys.stderr)
    else:
        handler = logging.NullHandler()
    handler.setLevel(spec["level"])
    if "format" in spec:
        fmt, datefmt, style = spec["format"]
        handler.setFormatter(logging.Formatter(fmt, datefmt, style))
    return handler


def restore(saved: dict) -> list[str]:
    """Set the session's logging up again; problems as lines."""
    config = saved.get("logging")
    if not config:
        return []
    if "disable" in config:
        logging.disable(config["disable"])
    problems = []
    for name, entry in config.get("loggers", {}).items():
        logger = logging.getLogger(name) if name else logging.root
        label = f"logger {name!r}" if name else "the root logger"
        if "level" in entry:
            logger.setLevel(entry["level"])
        if "propagate" in entry:
            logger.propagate = entry["propagate"]
        if "disabled" in entry:
            logger.disabled = entry["disabled"]
        for spec in entry.get("handlers", []):
            if "unsupported" in spec:
                if not any(type(h).__name__ == spec["type"] for h in logger.handlers):  # else its library's, again
                    problems.append(f"logging: {spec['unsupported']}, a handler of {label}, is not carried (set "
                                    "it up again)")
            elif not any(describe(h) == spec for h in logger.handlers):
                try:
                    logger.addHandler(_build(spec))
                except (OSError, ValueError) as exc:
                    problems.append(f"logging: the {spec['kind']} handler of {label} was not set up again ({exc})")
    return problems


# A handler's fields by its kind, besides "kind", "level" and "format" (and those of one not carried).
_KIND_FIELDS = {"file": {"path", "encoding"}, "stream": {"to"}, "null": set()}
_LOGGER_FIELDS = ("level", "propagate", "disabled", "handlers")
# What this kernel saves (forward.py): a newer kernel's logger field, handler field or kind is left out, named.
# A stream handler writing to a stream this kernel does not know is a newer kernel's too: left out, named.
_STREAMS = ("stdout", "stderr")
_HANDLER = Values(lambda h: isinstance(h, dict) and h.get("kind") == "stream" and isinstance(h.get("to"), str),
                  lambda h: h["to"] in _STREAMS, lambda h, where: f"{where}: a handler writing to {h['to']}",
                  shape=dict.fromkeys({"kind", "level", "format", "unsupported", "type",
                                       *set().union(*_KIND_FIELDS.values())}))
SHAPE = {"disable": None, "loggers": {ANY: {**dict.fromkeys(_LOGGER_FIELDS), "handlers": [Kinds(
    "kind", _KIND_FIELDS.__contains__, _HANDLER)]}}}


def checked(config) -> None:
    """ValueError when ``config`` (the context's "logging") is malformed."""
    if not isinstance(config, dict) or set(config) - set(SHAPE):
        raise ValueError("logging")
    if not _int(config.get("disable", 0)):
        raise ValueError("logging: disable")
    loggers = config.get("loggers", {})
    if not isinstance(loggers, dict):
        raise ValueError("logging: loggers")
    for name, entry in loggers.items():
        if not (isinstance(name, str) and isinstance(entry, dict)
                and not set(entry) - set(_LOGGER_FIELDS)
                and _int(entry.get("level", 0)) and isinstance(entry.get("propagate", True), bool)
                and isinstance(entry.get("disabled", False), bool)
                and isinstance(entry.get("handlers", []), list)
                and all(_handler_spec(h) for h in entry.get("handlers", []))):
            raise ValueError(f"logging: logger {name!r}")


def _int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _handler_spec(spec) -> bool:
    if not isinstance(spec, dict):
        return False
    if "unsupported" in spec:
        return set(spec) == {"unsupported", "type"} and all(isinstance(v, str) for v in spec.values())
    fmt = spec.get("format", ["", None, "%"])
    fields = _KIND_FIELDS.get(spec.get("kind"))
    return (fields is not None and set(spec) - {"kind", "level", "format"} == fields and _int(spec.get("level"))
            and isinstance(fmt, list) and len(fmt) == 3 and isinstance(fmt[0], str)
            and (fmt[1] is None or isinstance(fmt[1], str)) and fmt[2] in _STYLES.values()
            and (spec["kind"] != "file" or (isinstance(spec["path"], str)
                                           and (spec["encoding"] is None or isinstance(spec["encoding"], str))))
            and (spec["kind"] != "stream" or spec["to"] in _STREAMS))
