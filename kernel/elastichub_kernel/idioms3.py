"""More notebook idioms (idioms.py, idioms2.py continued; same shape: a
reduce per type and its rebuild):

- a ``re.Match`` (``m = re.search(...)``, ``hits = list(re.finditer(...))``):
  pickle refuses it, and every list holding one went with it. A match is
  a pure function of its pattern, string, ``pos``, ``endpos`` and where it
  matched: it is found again the way it was (``match``, ``search``,
  ``fullmatch`` or one of ``finditer``'s matches) and checked to be the same
  match (its groups' spans); else it fails by name;
- the process's standard streams (``out = sys.stdout``,
  ``eprint = functools.partial(print, file=sys.stderr)``): the kernel's
  streams, named "an open file handle" or failing as "cannot pickle
  '_hashlib.HMAC' object" (the kernel's stream holds its session's key).
  They come back as the new kernel's: what is printed shows in the
  notebook as before;
- a ``weakref.proxy`` (a tree's ``parent`` link): pickle went through it
  and saved a copy of its object, a strong and separate one (changes to
  the object no longer showed through it); a dead one failed the whole
  checkpoint (ReferenceError). A proxy to its object again (alive while
  the state holds it, as ``weakref.ref``, idioms.py), a dead one dead;
- an object of a notebook class with ``__slots__`` and a ``__getattr__``
  (``def __getattr__(self, k): return self._d[k]``): pickle's look-ups of
  ``__setstate__`` ran that ``__getattr__`` on an object with no slot set
  yet (RecursionError at restore). Its slots are set plainly (idioms.py's
  ``_state_set_plainly``, `slot_values`);
- a generator whose state is known without its frame: one run to its end
  (``for v in gen: ...`` leaves it so) comes back run to its end; a
  generator expression of one ``for`` (``(x * x for x in data)``), started
  or not, is that expression again over its iterator, where it was (it
  holds no other state); a notebook generator function's generator not
  started yet is that function called again with the same arguments (its
  body has not run). Any other generator is named, as before;
- the ``newline=`` a text file was opened with (``open(path, newline="")``,
  as the csv module asks): open() does not say it, and a file opened again
  without it read ``'a,b\\r\\n'`` as ``'a,b\\n'``. Read from the file
  object's references (`text_newline`), checked on this Python first.
"""

from __future__ import annotations

import copyreg
import dis
import gc
import inspect
import io
import re
import sys
import types
import weakref

from . import idioms4

_MATCH = type(re.match("", ""))


def reduce_for(kind: type):
    """The reduce for `kind`, or None (idioms2.reduce_for asks last)."""
    if kind is _MATCH:
        return _match
    if _kernel_stream(kind):
        return standard_stream_reduce
    if kind in _PROXIES:
        return _proxy
    if kind is types.GeneratorType:
        return _generator
    return idioms4.reduce_for(kind)  # compressed files, zip archives


# -- generators -------------------------------------------------------------------------------

def _generator_reduce(gen, user_ns):
    """How `gen` is made again, or None when its state is in its frame."""
    state = inspect.getgeneratorstate(gen)
    if state == inspect.GEN_CLOSED:
        return _spent_generator, (gen.__name__, gen.__qualname__)
    code, frame = gen.gi_code, gen.gi_frame
    if state == inspect.GEN_RUNNING or code.co_freevars or frame.f_globals is not user_ns:
        return None
    if code.co_name == "<genexpr>" and code.co_argcount == 1 and ".0" in frame.f_locals \
            and sum(i.opname == "FOR_ITER" for i in dis.get_instructions(code)) == 1:
        return _generator_again, (code, (frame.f_locals[".0"],), {})
    if state == inspect.GEN_CREATED and not code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        positional = code.co_varnames[:code.co_argcount]
        keywords = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
        return _generator_again, (code, tuple(frame.f_locals[n] for n in positional),
                                  {n: frame.f_locals[n] for n in keywords})
    return None


def restorable_generator(gen, user_ns) -> bool:
    return _generator_reduce(gen, user_ns) is not None


def _generator(gen, user_ns):
    reduced = _generator_reduce(gen, user_ns)
    if reduced is None:
        from .idioms6 import refused  # idioms6 imports this module

        # pickle's own words ("cannot pickle 'generator' object") named one inside a variable (a tqdm bar over
        # a generator, a dict of them) in terms no notebook writer knows; the variable itself is named so already
        raise refused(gen, "a generator part-way through (its paused execution state cannot be saved)")
    return reduced


def _spent_generator(name, qualname):
    gen = (_ for _ in ())
    next(gen, None)
    gen.__name__, gen.__qualname__ = name, qualname
    return gen


def _generator_again(code, args, kwargs):
    from .serializer import _target_namespace  # the namespace being restored: its globals

    return types.FunctionType(code, _target_namespace())(*args, **kwargs)


# -- weakref.proxy ------------------------------------------------------------------------

_PROXIES = (weakref.ProxyType, weakref.CallableProxyType)


def proxy_target(proxy):
    """The object `proxy` is a weak proxy of; None when it is dead. A bound
    method's __self__ is the object itself, not the proxy (checked)."""
    try:
        target = proxy.__sizeof__.__self__
    except ReferenceError:
        return None
    except AttributeError:  # a proxy of a class: its __sizeof__ is unbound
        target = None
    if target is None or not any(ref is proxy for ref in weakref.getweakrefs(target)):
        raise TypeError("a weakref.proxy whose object cannot be found (re-create it after restore)")
    return target


def _proxy(proxy, user_ns):
    return _rebuild_proxy, (proxy_target(proxy), type(proxy) is weakref.CallableProxyType)


class _Gone:
    """What a dead proxy pointed to: dead again at once, as it was."""


class _GoneFunction:
    def __call__(self):
        pass


def _rebuild_proxy(target, callable_):
    if target is None:
        return weakref.proxy(_GoneFunction() if callable_ else _Gone())
    return weakref.proxy(target)


# -- sys.stdout, sys.stderr, sys.stdin ----------------------------------------------------

STREAMS = ("stdout", "stderr", "stdin", "__stdout__", "__stderr__", "__stdin__")


def standard_stream(obj) -> str | None:
    """The name in sys of the standard stream `obj` is, or None. The kernel's own output stream is its
    name's while the notebook has sys.stdout pointing elsewhere (`old = sys.stdout; sys.stdout = buf`, a
    redirect_stdout left open): `old` was "an open file handle", the redirect's object failed with
    "cannot pickle '_hashlib.HMAC' object", and `sys.stdout = old` raised NameError after a move."""
    name = next((name for name in STREAMS if getattr(sys, name, None) is obj), None)
    if name is None and _kernel_stream(type(obj)) and getattr(obj, "name", None) in ("stdout", "stderr"):
        return obj.name
    return name


def kernel_stream(obj) -> bool:
    """`obj` is one of ipykernel's output streams (what sys.stdout is in a kernel's cells)."""
    return _kernel_stream(type(obj))


def _kernel_stream(kind: type) -> bool:
    return any(c.__module__ == "ipykernel.iostream" and c.__name__ == "OutStream" for c in kind.__mro__)


def standard_stream_reduce(obj, user_ns):
    name = standard_stream(obj)
    return None if name is None else (_current_stream, (name,))


def _current_stream(name):
    return getattr(sys, name)


# -- __slots__ set plainly ----------------------------------------------------------------

def slot_values(obj) -> dict:
    """The values of `obj`'s slots that are set, read past its class's __getattr__."""
    values = {}
    for name in copyreg._slotnames(type(obj)):
        try:
            values[name] = object.__getattribute__(obj, name)
        except AttributeError:  # a slot never set
            pass
    return values


def set_attrs_and_slots(obj, state):
    attrs, slots = state
    if attrs:
        obj.__dict__.update(attrs)
    for name, value in slots.items():
        object.__setattr__(obj, name, value)
    return obj


# -- re.Match -----------------------------------------------------------------------------

def _match(m, user_ns):
    return _rebuild_match, (m.re, m.string, m.pos, m.endpos, m.regs, m.lastindex)


# finditer's scan of the last match rebuilt from one: the matches of one
# `list(re.finditer(...))` come in order, and are found in one scan, not one each.
_scan: list = [None, None, None]  # (pattern, string, pos, endpos), its iterator, its last match


def _rebuild_match(pattern, string, pos, endpos, regs, lastindex):
    def same(m):
        return m is not None and m.regs == regs and m.lastindex == lastindex

    for find in (pattern.match, pattern.search, pattern.fullmatch):
        m = find(string, pos, endpos)
        if same(m):
            return m
    start = regs[0][0]
    key = (pattern, id(string), pos, endpos)
    if _scan[0] != key or _scan[2] is None or _scan[2].start() > start:
        _scan[:] = [key, pattern.finditer(string, pos, endpos), None]
    for m in _scan[1]:
        _scan[2] = m
        if same(m):
            return m
        if m.start() > start:
            break
    _scan[:] = [None, None, None]
    raise ValueError(f"the re.Match of {pattern.pattern!r} at {regs[0]} is not found again in its string "
                     "(the string was changed after the match)")


# -- newline= of a text file ------------------------------------------------------------

_NEWLINES = (None, "", "\n", "\r", "\r\n")


def _coder(obj) -> bool:
    return type(obj).__name__.endswith(("Decoder", "Encoder"))


def _read_newline(text):
    """The `newline=` of TextIOWrapper `text`, from the objects it holds:
    the first str after its encoder and decoder that is not its `errors`
    is the newline it was given (None gives none), or the decoded text it
    holds (none after a seek to where it is). A universal-newline decoder
    (newline None or '') holds '' only for ''."""
    if hasattr(text, "_readnl"):  # the pure-Python io (_pyio)
        return text._readnl
    held = gc.get_referents(text)
    coders = [i for i, obj in enumerate(held) if _coder(obj)]
    if not coders:
        raise LookupError("no encoder or decoder")
    after = [obj for obj in held[coders[-1] + 1:] if type(obj) is str and obj is not text.errors]
    first = after[0] if after else None
    if any(type(obj).__name__ == "IncrementalNewlineDecoder" for obj in held):
        return "" if first == "" else None
    return first if first in _NEWLINES else None


def _checked() -> bool:
    """Whether `_read_newline` reads each newline= right on this Python
    (the order of the objects a TextIOWrapper holds is CPython's)."""
    for newline in _NEWLINES:
        for data in (b"", b"a\r\nb\n"):
            f = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline=newline)
            f.readline()
            f.seek(f.tell())
            w = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline=newline)
            w.write("x\n")
            w.flush()
            if _read_newline(f) != newline or _read_newline(w) != newline:
                return False
    return True


_works: list = []


def text_newline(text):
    """`text`'s newline= (None, '', '\\n', '\\r' or '\\r\\n'); raises
    LookupError where this Python's file objects cannot tell it. A
    readable `text` is sought to where it is: the text it read ahead is
    dropped, to be read again (a seek is what the restore does)."""
    if not _works:
        _works.append(_checked())
    if not _works[0]:
        raise LookupError("the newline= of a text file cannot be read on this Python")
    if text.readable():
        text.seek(text.tell())
    return _read_newline(text)
