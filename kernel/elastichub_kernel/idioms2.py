"""More notebook idioms plain pickling loses (idioms.py continued; hooked
into `idioms.reduce_for`, same shape: a reduce per type and its rebuild):

- an object of a notebook class with a ``__new__`` of its own: pickle calls
  that ``__new__`` again, with the arguments its base gives
  (``class Point(tuple): def __new__(cls, x, y)`` got ``((1, 2),)`` and
  failed; a counter or a registry kept in ``__new__`` counted every object
  again). Made by the base's ``__new__`` (``tuple``, ``int``, ``float``,
  ``complex``, ``str``, ``bytes``, ``frozenset``, ``object``) with the
  value, then its ``__dict__``, as pickle makes any other object; so is
  one over a library class that leaves making and pickling to those
  (``class Parser(argparse.ArgumentParser)`` with a ``__new__``), after
  any idiom of that library class;
- ``tempfile.NamedTemporaryFile(delete=False)``: its file is opened again
  as an open file is (idioms.py). Its wrapper's ``__getattr__`` answered
  pickle's look-up of ``__setstate__`` before it had a file (``KeyError:
  'file'``). One with ``delete=True`` still open is not restorable: its
  file goes with the kernel;
- ``tempfile.TemporaryDirectory``: its folder is removed when the kernel
  that made it stops, files and all; one whose folder is gone fails by
  name, never comes back pointing nowhere;
- ``weakref.finalize``: its callback lives in a class-level registry, not
  in the object, and came back dead without a word. A TemporaryDirectory's
  own is made again over it; any other ran when the old kernel stopped
  (a finalizer runs once), so it comes back spent, said in the restore
  report;
- a PIL image opened from a file (``Image.open``): Pillow pickles its pixels
  only, and the file's frames and attributes were missing
  (``gif.n_frames``, ``png.text`` raised). Opened again on the file, at its
  frame, when the file is unchanged and the frame's pixels are as saved;
  otherwise an ``Image`` of its pixels, said in the restore report;
- an iterator over a dict (``iter(d)``, ``iter(d.items())``, ``reversed``):
  an iterator over the restored dict again, at the same place (pickle's is
  a list iterator over a copy of what was left).
"""

from __future__ import annotations

import copyreg
import gc
import os
import pickle
import sys

from . import idioms, idioms3


def reduce_for(kind: type):
    """The reduce for `kind`, or None (idioms.reduce_for asks last)."""
    if _notebook_new(kind):
        return _past_notebook_new
    if idioms._is_class_of(kind, "tempfile", "_TemporaryFileWrapper"):
        return _named_temporary_file
    if idioms._is_class_of(kind, "tempfile", "TemporaryDirectory"):
        return _temporary_directory
    if idioms._is_class_of(kind, "weakref", "finalize"):
        return _finalize
    if idioms._is_class_of(kind, "PIL.ImageFile", "ImageFile"):  # PIL is imported only by a notebook that has one
        return _opened_image
    if kind in _DICT_ITERATORS:
        return _dict_iterator
    more = idioms3.reduce_for(kind)  # re.Match, and the later rounds' idioms
    if _notebook_new(kind, over_library=True):
        # an idiom of its library base first (its rebuild makes it past the notebook's __new__), else as pickle would
        return _past_notebook_new if more is None else either(more, _past_notebook_new)
    return more


def either(first, second):
    """A reduce trying `first`, then `second`."""
    return lambda obj, user_ns: first(obj, user_ns) or second(obj, user_ns)


# -- a notebook __new__ ------------------------------------------------------------------------

# Bases whose pickling (a __getnewargs__, or frozenset's reduce) gives their own
# __new__'s arguments, and so the object's value.
_NEW_BASES = frozenset({object, tuple, int, float, complex, str, bytes, frozenset})
# How a class asks to be made (a __getstate__/__setstate__ says only what follows).
_OWN_PICKLING = ("__reduce__", "__reduce_ex__", "__getnewargs__", "__getnewargs_ex__")


def _notebook_new(kind: type, over_library: bool = False) -> bool:
    """A notebook class with a ``__new__`` of its own over one of those
    bases, that leaves pickling to them (a named tuple gives its own
    ``__getnewargs__``: its ``__new__`` is called as it asks); `over_library`:
    over library classes that leave both making and pickling to those bases
    (``class Parser(argparse.ArgumentParser)``, whose objects pickle made by
    calling the notebook's ``__new__`` again)."""
    if kind.__module__ != "__main__":
        return False
    own = [c for c in kind.__mro__ if c.__module__ == "__main__"]
    bases = [c for c in kind.__mro__ if c not in own and c not in _NEW_BASES]
    if over_library:
        if not bases or any(name in vars(c) for c in bases for name in ("__new__", *_OWN_PICKLING)):
            return False
    elif bases:
        return False
    return any("__new__" in vars(c) for c in own) and not any(name in vars(c) for c in own for name in _OWN_PICKLING)


def new_past_notebook(cls, args=()):
    """``cls``'s object made by the first ``__new__`` up its MRO that is not
    the notebook's: its code ran when the object was first made."""
    maker = next(c for c in cls.__mro__ if c.__module__ != "__main__" and "__new__" in vars(c))
    return maker.__new__(cls, *args)


def _past_notebook_new(obj, user_ns):
    make, args, *rest = obj.__reduce_ex__(pickle.HIGHEST_PROTOCOL)
    if make is copyreg.__newobj__:  # copyreg calls cls.__new__(cls, *args)
        cls, args = args[0], args[1:]
    elif make is type(obj):  # frozenset's reduce calls the class
        cls = make
    else:
        return None
    return (_rebuild_past_notebook_new, (cls, tuple(args)), *rest)


def _rebuild_past_notebook_new(cls, args):
    return new_past_notebook(cls, args)


# -- tempfile ----------------------------------------------------------------------------------

def _named_temporary_file(wrapper, user_ns):
    file = vars(wrapper).get("file")
    if file is None:
        return None
    if wrapper.delete and not file.closed:
        raise TypeError(f"an open NamedTemporaryFile (delete=True) of {wrapper.name}: its file is deleted when "
                        "this kernel stops (use delete=False to keep it, or make it again after restore)")
    return _rebuild_named_temporary_file, (type(wrapper), file, wrapper.name)


def _rebuild_named_temporary_file(kind, file, name):
    # The file object is saved as an open file (reopened) or a closed one: it
    # deletes nothing when closed here (delete=True is only ever saved closed).
    return kind(file, name, False)


def _temporary_directory(tmp, user_ns):
    return _rebuild_temporary_directory, (type(tmp), tmp.name, os.path.isdir(tmp.name)), dict(vars(tmp))


def _rebuild_temporary_directory(kind, name, existed):
    if existed and not os.path.isdir(name):
        raise ValueError(f"temporary directory {name}: it is gone, with the files in it (a TemporaryDirectory "
                         "removes its folder when the kernel that made it stops); make it again")
    return kind.__new__(kind)  # its state (name, its finalizer) follows


# -- weakref.finalize ------------------------------------------------------------------------------

def _finalize(fin, user_ns):
    info = type(fin)._registry.get(fin)  # its target and callback: a class-level registry holds them
    target = info.weakref() if info is not None else None
    if target is None:
        return _dead_finalize, (type(fin),)
    if not _is_temporary_directory_cleanup(info.func):
        # A finalizer runs at most once, and the old kernel's exit ran this one (atexit): armed
        # again, its callback (a side effect of the notebook's) would run a second time.
        return _spent_finalize, (type(fin), getattr(info.func, "__qualname__", type(info.func).__name__))
    return _rebuild_finalize, (type(fin), target, info.func, info.args, info.kwargs or {}, info.atexit)


def _is_temporary_directory_cleanup(func) -> bool:
    """A TemporaryDirectory's own cleanup: its folder outlived the old kernel
    (else the directory fails by name), so the cleanup has not run."""
    tempfile = sys.modules.get("tempfile")  # never imported here: no TemporaryDirectory without it
    cleanup = getattr(getattr(tempfile, "TemporaryDirectory", None), "_cleanup", None)
    return cleanup is not None and getattr(func, "__func__", None) is cleanup.__func__


def _spent_finalize(kind, callback):
    idioms._note(f"a weakref.finalize of {callback}() is restored spent: its callback ran when the old kernel "
                 "stopped, and a finalizer runs once")
    return object.__new__(kind)


# The finalizers armed again in the loader's pass (loader.py), None outside one: a pass that
# starts over drops what it built, and must not let their cleanups run (`disarm`).
armed: list | None = None


def _rebuild_finalize(kind, target, func, args, kwargs, atexit):
    fin = kind(target, func, *args, **kwargs)
    fin.atexit = atexit
    if armed is not None:
        armed.append(fin)
    return fin


def disarm(finalizers) -> None:
    """Never run these: their objects were built by a load pass that dropped them."""
    for fin in finalizers:
        fin.detach()


def _dead_finalize(kind):
    return object.__new__(kind)  # in no registry: dead, as it was


# -- PIL images opened from a file ------------------------------------------------------------

def _opened_image(img, user_ns):
    pixels = img.__getstate__()  # Pillow's own pickle: [info, mode, size, palette, bytes]
    name = getattr(img, "filename", "")
    opened = None
    if isinstance(name, str) and name and os.path.isfile(name):
        stat = os.stat(name)
        opened = (os.path.abspath(name), name, stat.st_size, stat.st_mtime_ns, img.tell())
    return _reopen_image, (type(img), opened, pixels)


def _reopen_image(kind, opened, pixels):
    from PIL import Image

    why = "it was not opened from a file"
    if opened is not None:
        path, name, size, mtime_ns, frame = opened
        try:
            idioms._as_saved(f"image file {path}", path, size, mtime_ns)
            img = Image.open(path)
        except (ValueError, OSError) as exc:
            why = str(exc)
        else:
            try:
                why = f"{path} opens as another kind of image now"
                if type(img) is kind:
                    img.seek(frame)
                    if [img.mode, img.size, img.tobytes()] == [pixels[1], pixels[2], pixels[4]]:
                        img.info, img.filename = pixels[0], name
                        return img
                    why = f"its pixels were changed since it was opened from {path}"
            except (ValueError, OSError, EOFError) as exc:
                why = f"{path} cannot be read as it was ({exc})"
            img.close()
    img = Image.Image.__new__(Image.Image)
    img.__setstate__(pixels)
    idioms._note(f"the {kind.__name__} came back as an Image of its pixels only ({why}): its frames, file and "
                 "format's attributes are not carried (open the file again for those)")
    return img


# -- dict iterators -------------------------------------------------------------------------------

_DICT_ITERATORS = {type(iter(view)): (which, False) for which, view in (("keys", {}.keys()), ("values", {}.values()),
                                                                     ("items", {}.items()))}
_DICT_ITERATORS.update({type(reversed(view)): (which, True)
                        for which, view in (("keys", {}.keys()), ("values", {}.values()), ("items", {}.items()))})


def _dict_iterator(it, user_ns):
    which, backwards = _DICT_ITERATORS[type(it)]
    mapping = next((r for r in gc.get_referents(it) if isinstance(r, dict)), None)  # gone once exhausted
    if mapping is None:
        return _rebuild_dict_iterator, ({}, which, backwards, 0, 0)
    try:
        left = len(it.__reduce__()[1][0])  # what it has left (read from a copy of it)
    except RuntimeError:  # the dict changed size during the iteration: it only raises that
        return _broken_dict_iterator, (which, backwards)
    # Entries stay in order: what is left is the last `left` items.
    return _rebuild_dict_iterator, (mapping, which, backwards, len(mapping) - left, len(mapping))


def _dict_iter(mapping, which, backwards):
    view = getattr(dict, which)(mapping)  # dict's own view, whatever a subclass's keys() gives
    return reversed(view) if backwards else iter(view)


def _rebuild_dict_iterator(mapping, which, backwards, done, size):
    if len(mapping) != size:
        raise ValueError("an iterator over a dict that holds it cannot be made again before that dict is whole")
    it = _dict_iter(mapping, which, backwards)
    for _ in range(done):
        next(it)
    return it


def _broken_dict_iterator(which, backwards):
    mapping = {0: 0}
    it = _dict_iter(mapping, which, backwards)
    mapping[1] = 1
    return it
