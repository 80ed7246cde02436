"""Forward compatibility of the checkpoint's context: what a newer kernel
added to it (a field, a key inside a field, a new kind of entry in a list)
is left out and named, the rest restored. The image may be rolled back
after a newer kernel saved; rejecting the whole context for one unknown
key dropped the session's directory, environment and every setting with it.

Each part of the context says what it knows as a *shape*, next to the
check of its values:

- ``None``: a value, checked as a whole by its module;
- a dict: an object with those keys, each value of the shape under it;
  under ``ANY``, the shape of any key's value (an open map: logger names);
- a one-item list: a list, each item of that shape;
- ``Kinds``: an entry whose tag (a key or an index) names its kind (a
  hook's place, a handler's kind): one of a kind this kernel lacks is left out;
- ``Values``: a value from a set this kernel knows (``%xmode``'s modes, a
  kind of saved cell output): one of the right type it does not know is a
  newer kernel's, left out (or, in a positional list, put as "not saved")
  and named as the student knows it (``%xmode Fancy``, ``Out[3]``).

Only the unknown is left out: a value of the wrong type is kept as it is,
for the module's check to reject with the field's name (a corrupt file is
not a newer one).
"""

from __future__ import annotations

ANY = object()
LEFT_OUT = object()  # what pruned returns for an entry of an unknown kind


class Kinds:
    """Entries told apart by ``tag``, known when ``known(tag's value)``; each of the shape ``shape``."""

    def __init__(self, tag, known, shape=None):
        self.tag, self.known, self.shape = tag, known, shape

    def unknown_kind(self, entry):
        """The entry's kind when it is a string this kernel does not know, else None."""
        try:
            kind = entry[self.tag]
        except (KeyError, IndexError, TypeError):
            return None
        return kind if isinstance(kind, str) and not self.known(kind) else None


class Values:
    """A value of a closed set: ``typed(value)`` and not ``known(value)`` is a newer kernel's, named
    ``shown(value, where)`` and replaced by ``instead`` (LEFT_OUT: dropped; in a positional list, what stands
    for "not saved" there, so the items after it keep their places); a known one is of the shape ``shape``."""

    def __init__(self, typed, known, shown, instead=LEFT_OUT, shape=None):
        self.typed, self.known, self.shown, self.instead, self.shape = typed, known, shown, instead, shape

    def newer(self, value) -> bool:
        try:
            return bool(self.typed(value)) and not self.known(value)
        except Exception:  # a check that does not fit the value: a wrong type, for the module's check
            return False


def pruned(value, shape, where: str, unknown: list):
    """``value`` without what ``shape`` does not know; each left out is added to ``unknown`` as "where: key"
    (as "key" at the top, ``where`` empty)."""
    if isinstance(shape, Kinds):
        kind = shape.unknown_kind(value)
        if kind is not None:
            unknown.append(_label(where, kind))
            return LEFT_OUT
        return pruned(value, shape.shape, where, unknown)
    if isinstance(shape, Values):
        if shape.newer(value):
            unknown.append(shape.shown(value, where))
            return shape.instead
        return pruned(value, shape.shape, where, unknown)
    if isinstance(shape, dict) and isinstance(value, dict):
        kept = {}
        for key, item in value.items():
            if key not in shape and ANY not in shape:
                unknown.append(_label(where, str(key)))
                continue
            # a key of an open map (a logger's name) is quoted: it may be empty, or hold a colon
            item = pruned(item, shape[key] if key in shape else shape[ANY],
                          _label(where, str(key) if key in shape else repr(key)), unknown)
            if item is not LEFT_OUT:
                kept[key] = item
        return kept
    if isinstance(shape, list) and isinstance(value, list):
        items = [pruned(item, shape[0], where, unknown) for item in value]
        return [item for item in items if item is not LEFT_OUT]
    return value


def _label(where: str, key: str) -> str:
    return f"{where}: {key}" if where else key


def known_part(saved: dict, shape: dict) -> tuple[dict, list[str]]:
    """(``saved`` without what ``shape`` does not know, the names of what was left out)."""
    unknown: list[str] = []
    return pruned(saved, shape, "", unknown), unknown
