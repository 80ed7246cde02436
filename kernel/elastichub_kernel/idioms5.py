"""Notebook idioms of an eighth probe round (idioms4.reduce_for asks here
last; same shape: a reduce per type and its rebuild):

- a ``struct.Struct`` (``header = struct.Struct("<IHf")``, kept to pack and
  unpack records in later cells of a course on binary files or networks):
  made again from its format (a subclass's attributes too); pickle refused
  it ("cannot pickle '_struct.Struct' object");
- a ``random.SystemRandom`` (``secrets.SystemRandom()``, a course's dice or
  password examples): it draws from the operating system and has no state
  to save, so it is made again with its attributes (the ``gauss()`` value it
  keeps for the next call, a subclass's own); pickle refused it ("System
  entropy source does not have state");
- a ``random.Random`` of a class of the notebook's (``class Dice(random.
  Random)`` whose ``__init__(self, sides, seed=None)`` keeps ``sides``) or
  one given attributes: Random's own pickling makes it again with
  ``Dice()``, no arguments, which failed the variable at every restore
  (the checkpoint said nothing), and carries its generator's state but not
  its attributes, which were lost. Made again without ``__init__``, with
  its state and its attributes. A class with its own ``__reduce__`` keeps it;
- an object of a notebook class with an ``__init__`` of its own over a
  library class whose pickling calls the class again with the library's
  arguments (``class LRU(OrderedDict): def __init__(self, cap)``, ``class
  Stack(deque): def __init__(self, limit)``, a ``Counter`` with an owner):
  that ``__init__`` got the library's arguments, which failed the variable
  at every restore though its checkpoint said nothing (``missing 1
  required positional argument: 'cap'``), or took them for its own. Made
  by the library class's ``__new__`` and ``__init__`` with them, then its
  items and attributes, as pickle makes any other object (idioms2 does
  the same for a notebook ``__new__``);
- numpy's ``a.flat`` kept as an iterator (``cells = grid.flat``, read with
  ``next(cells)`` across cells of a simulation): made again over its array
  (the same array, shared as saved) at the same place; pickle refused it
  ("cannot pickle 'numpy.flatiter' object");
- what a cell leaves part-way through and no Python can read back: a hash
  being fed (``h = hashlib.sha256()``, ``h.update(chunk)`` in a loop over a
  file; ``hmac.new``), a compressor or decompressor stream
  (``zlib.compressobj()``, ``bz2.BZ2Compressor()``), a ``re.finditer()``
  iterator not read to its end. They were named with pickle's words
  ("cannot pickle '_hashlib.HASH' object", "'_sre.SRE_Scanner'"), which
  say neither what the variable is nor what to do; the reason says both.
"""

from __future__ import annotations

import collections
import itertools
import pickle

from . import idioms, idioms2, idioms6


# Modules of hashlib's hash objects (OpenSSL's, or Python's own builtins: their names vary by version).
_HASH_MODULES = frozenset({"_hashlib", "_md5", "_sha1", "_sha2", "_sha256", "_sha512", "_sha3", "_blake2", "hmac"})
_STREAM_CLASSES = frozenset({"zlib.Compress", "zlib.Decompress", "_bz2.BZ2Compressor", "_bz2.BZ2Decompressor",
                             "_lzma.LZMACompressor", "_lzma.LZMADecompressor"})


def in_progress_reason(obj) -> str | None:
    """Why `obj`, something part-way through whose state no Python API
    reads, cannot be carried (typeprobe asks), or None."""
    kind = type(obj)
    if kind.__module__ in _HASH_MODULES and hasattr(obj, "hexdigest"):
        return (f"a {getattr(obj, 'name', 'hash')} hash being computed (its state cannot be read: keep its "
                "hexdigest(), or hash the data again after restore)")
    if f"{kind.__module__}.{kind.__qualname__}" in _STREAM_CLASSES:
        return ("a compression stream part-way through (its state cannot be read: compress or decompress the data "
                "again after restore)")
    if kind.__name__ == "callable_iterator" and kind.__module__ == "builtins":
        search = obj.__reduce__()[1][0]  # (iter, (callable, sentinel)); ((),) once read to its end: it pickles
        if type(getattr(search, "__self__", None)).__name__ == "SRE_Scanner":
            return ("a re.finditer() iterator part-way through (re keeps its place hidden: call finditer again "
                    "after restore, or keep list(...) of it)")
    return None


def reduce_for(kind: type):
    """The reduce for `kind`, or None (idioms4.reduce_for asks last)."""
    if idioms._is_class_of(kind, "_struct", "Struct"):  # struct.Struct's module is _struct
        return _struct
    if kind.__name__ == "flatiter" and kind.__module__ == "numpy":  # numpy is never imported here
        return _flat_iterator
    if _random_pickled_by_random(kind):
        return _random
    if _notebook_init_over_library_pickling(kind):
        return _past_notebook_init
    return idioms6.reduce_for(kind)  # a tenth round's (csv readers and writers, ...)


def _struct(s, user_ns):
    return _made_struct, (type(s), s.format, dict(getattr(s, "__dict__", None) or {}))


def _made_struct(kind, fmt, attrs):
    # By Struct's own __new__ and __init__: a subclass's __init__ may take other arguments.
    base = next(c for c in kind.__mro__ if c.__module__ == "_struct")
    s = base.__new__(kind, fmt)
    base.__init__(s, fmt)
    if attrs:
        s.__dict__.update(attrs)
    return s


def _random_pickled_by_random(kind: type) -> bool:
    base = next((c for c in kind.__mro__ if c.__module__ == "random" and c.__name__ == "Random"), None)
    return base is not None and kind.__reduce__ is base.__reduce__


def _random(r, user_ns):
    # SystemRandom's getstate() refuses: its draws are the OS's, its state only its attributes.
    system = idioms._is_class_of(type(r), "random", "SystemRandom")
    return _made_random, (type(r), None if system else r.getstate(), dict(r.__dict__))


def _made_random(kind, state, attrs):
    r = kind.__new__(kind)  # not kind(): a notebook's __init__ may ask for arguments, or draw
    if state is not None:
        r.setstate(state)
    r.__dict__.update(attrs)
    return r


def _notebook_init_over_library_pickling(kind: type) -> bool:
    if kind.__module__ != "__main__":
        return False
    own = [c for c in kind.__mro__ if c.__module__ == "__main__"]
    base = next(c for c in kind.__mro__ if c not in own)
    # A base pickled by object's own reduce makes it by __new__ (copyreg), never calling the class.
    own_pickling = base.__reduce__ is not object.__reduce__ or base.__reduce_ex__ is not object.__reduce_ex__
    return (own_pickling and any("__init__" in vars(c) for c in own)
            and not any(name in vars(c) for c in own for name in (*idioms2._OWN_PICKLING, "__new__")))


def _past_notebook_init(obj, user_ns):
    make, args, *rest = obj.__reduce_ex__(pickle.HIGHEST_PROTOCOL)
    if make is not type(obj):
        return None
    attrs = getattr(obj, "__dict__", None)
    if attrs and (not rest or rest[0] is None):  # Counter's reduce gives its counts only
        rest = [dict(attrs), *rest[1:]]
    return (_made_past_notebook_init, (make, tuple(args)), *rest)


def _made_past_notebook_init(cls, args):
    base = next(c for c in cls.__mro__ if c.__module__ != "__main__")
    maker = next(c for c in cls.__mro__ if c.__module__ != "__main__" and "__new__" in vars(c))
    obj = maker.__new__(cls) if maker is object else maker.__new__(cls, *args)
    base.__init__(obj, *args)  # the library's __init__ with its own arguments, never the notebook's
    return obj


def _flat_iterator(it, user_ns):
    return _made_flat_iterator, (it.base, it.index)


def _made_flat_iterator(array, index):
    it = array.flat
    # Consumed at C speed: a flatiter's place can only be moved by reading.
    collections.deque(itertools.islice(it, index), maxlen=0)
    return it
