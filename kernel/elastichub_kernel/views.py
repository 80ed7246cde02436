"""Views of memory, saved so that they are views of the same memory again.

- A numpy view of an array the state holds (``v = a[10:20]``, ``a.T``, a
  view of a view, ``sliding_window_view(a, 5)``: its ``base`` chain goes
  through an ``as_strided`` helper) is saved as (base, offset, shape,
  strides, dtype) and restored as a view of the restored base: a write
  through one shows in the other, as before.
- One over a ``bytearray``/``array.array`` the state holds
  (``np.frombuffer(buf)``) is made over that object again.
- A view whose base is not held is a copy of its own elements, as plain
  pickle makes it; but one that covers less memory than its elements fill
  (a sliding window, ``broadcast_to``: 500x for windows of 500) is saved as
  the memory it covers and its strides: never blown up, and its windows
  still overlap.
- A masked array is saved as its data and mask arrays (views too) and its
  settings: a slice of a masked array shares both with it again.
- A ``memoryview`` (cloudpickle saves ``bytes``: silently another type) is
  made again over its exporter, at the same offset, with its format,
  shape, strides and read-only flag.

numpy is never imported here: arrays are told by their class, and only a
restore of a saved array (numpy was loaded then) imports it.
"""

from __future__ import annotations

import ctypes
import struct
import types
import weakref

from . import idioms

_SCAN_ITEMS = 1000
_SCAN_BUDGET = 20 * _SCAN_ITEMS
_CHAIN_LIMIT = 64


def is_ndarray(value) -> bool:
    """An exact numpy.ndarray, told by its class (numpy is never imported here)."""
    kind = type(value)
    return kind.__name__ == "ndarray" and kind.__module__ == "numpy"


def is_masked_array(kind: type) -> bool:
    return kind.__name__ == "MaskedArray" and kind.__module__ in ("numpy.ma", "numpy.ma.core")


def _held_buffer(value) -> bool:
    """A buffer a numpy array or a memoryview may be made over again."""
    kind = type(value)
    return kind in (bytearray, bytes) or (kind.__name__ == "array" and kind.__module__ == "array")


def array_root(array):
    """The last exact ndarray down the ``base`` chain: the array whose memory
    a view is in. The chain may pass through array subclasses (a masked
    array) and ``as_strided``'s helper (an ``__array_interface__`` and a
    ``base``): ``sliding_window_view(a, 5)`` is a view of ``a``."""
    root = array if is_ndarray(array) else None
    node = array
    for _ in range(_CHAIN_LIMIT):
        node = getattr(node, "base", None)
        if node is None or getattr(node, "__array_interface__", None) is None:
            break
        if is_ndarray(node):
            root = node
    return root


def _spans(item, root) -> bool:
    return root is item or (item.nbytes == root.nbytes and address(item) == address(root))


def saved_array_roots(values) -> set:
    """ids of what the saved state holds whole that views may be made over
    again: an array, or the root of an array spanning all of it (after a
    restore, ``a`` is a reshape of a flat array: its views are views of that
    one), the data and mask of a masked array, a bytearray, bytes or
    ``array.array``. Looked for in the values and two levels into their
    dicts, lists, tuples of up to ``_SCAN_ITEMS`` items and plain objects'
    attributes (``grid.cells``, ``runs["exp1"]["raw"]``), ``_SCAN_BUDGET``
    items in all (a list of a million floats is not walked at every
    checkpoint; a view whose base is not found is saved as a copy, as plain
    pickle would)."""
    roots = set()
    budget = _SCAN_BUDGET
    level = list(values)
    for depth in range(3):
        deeper = []
        for item in level:
            if is_ndarray(item) or is_masked_array(type(item)):
                for array in (item, vars(item).get("_mask")) if not is_ndarray(item) else (item,):
                    root = array_root(array)
                    if root is not None and _spans(array, root):
                        roots.add(id(root))
            elif _held_buffer(item):
                roots.add(id(item))
            elif type(item) is memoryview and _whole_of_buffer(item):
                # memoryview(bytearray(n)) is saved over its buffer whole: its slices (`head = buf[:4]`)
                # are made over that buffer again, not over copies that no longer see its writes
                roots.add(id(item.obj))
            elif depth < 2:
                try:
                    inner = _inside(item)
                except Exception:  # a class's own getattr of __reduce__...: the scan is a hint, never a failure
                    continue
                if inner and len(inner) <= min(_SCAN_ITEMS, budget):
                    budget -= len(inner)
                    deeper.extend(inner)
        level = deeper
    return roots


def _whole_of_buffer(view: memoryview) -> bool:
    exporter = view.obj
    if exporter is None or not _held_buffer(exporter):
        return False
    whole = memoryview(exporter)
    return whole.nbytes == view.nbytes and buffer_address(whole) == buffer_address(view)


def _inside(value) -> list | tuple:
    """What a value holds that pickle saves as it is: a dict's values, a list
    or tuple, the attributes of an object pickled by its __dict__."""
    kind = type(value)
    if kind is dict:
        return list(value.values())
    if kind in (list, tuple):
        return value
    if kind in (weakref.ProxyType, weakref.CallableProxyType):
        return ()  # its object's attributes (a dead one's raised ReferenceError: no checkpoint at all)
    try:  # never the notebook's __getattr__: a __slots__ class's `return self._d[k]` raised KeyError
        state = object.__getattribute__(value, "__dict__")
    except AttributeError:
        return ()
    if type(state) is not dict or isinstance(value, (type, types.ModuleType, types.FunctionType)):
        return ()
    if kind.__reduce_ex__ is not object.__reduce_ex__ or kind.__reduce__ is not object.__reduce__ \
            or getattr(kind, "__getstate__", object.__getstate__) is not object.__getstate__:
        return ()  # saved its own way: the arrays in its __dict__ may not be what it saves
    return list(state.values())


def address(array) -> int:
    return array.__array_interface__["data"][0]


def view_span(shape, strides, itemsize) -> tuple[int, int]:
    """Lowest and one-past-highest byte a view touches, from its first element."""
    low = high = 0
    for n, stride in zip(shape, strides):
        if n == 0:
            return 0, 0
        reach = (n - 1) * stride
        low, high = low + min(reach, 0), high + max(reach, 0)
    return low, high + itemsize


# -- numpy arrays ---------------------------------------------------------------------

def array_reduce(view, held: set):
    """The reduce of an exact ndarray that keeps it a view of what it views,
    or None (numpy's own: the array's elements)."""
    root = array_root(view)
    if view.dtype.hasobject or root.dtype.hasobject or root.size == 0:
        return None
    contiguous = root.flags.c_contiguous or root.flags.f_contiguous
    offset = address(view) - address(root)
    low, high = view_span(view.shape, view.strides, view.itemsize)
    inside = contiguous and offset + low >= 0 and offset + high <= root.nbytes
    if root is not view and id(root) in held and inside:
        return _rebuild_view, (root, offset, view.shape, view.strides, view.dtype, bool(view.flags.writeable))
    exporter = root.base.obj if type(root.base) is memoryview else root.base
    if exporter is not None and id(exporter) in held and _held_buffer(exporter):
        # np.frombuffer(buf): made over the restored buf again, so writes still reach it
        start = address(view) - buffer_address(exporter)
        if start + low >= 0 and start + high <= memoryview(exporter).nbytes:
            return _rebuild_over, (exporter, start, view.shape, view.strides, view.dtype,
                                   bool(view.flags.writeable))
    if inside and root is not view and high - low < view.nbytes:
        # its elements overlap (sliding windows, broadcast_to): the memory they
        # are in, not each window's copy (a 500-wide window: 500x the bytes)
        memory = root.ravel(order="K").view("u1")[offset + low:offset + high]
        return _rebuild_view, (memory, -low, view.shape, view.strides, view.dtype, bool(view.flags.writeable))
    if root is not view and (id(root) in held or id(exporter) in held):
        # a view the state's array or buffer is under, that cannot be made
        # over it again (as_strided past its memory, a base with gaps): said
        return _copy_said, (view.copy(order="K"), bool(view.flags.writeable), type(exporter if id(exporter) in held
                                                                                   else root).__name__)
    return None


def _rebuild_view(root, offset, shape, strides, dtype, writeable):
    """A view into the restored ``root``, exactly where it was."""
    import numpy  # already imported: ``root`` is an ndarray

    flat = root.ravel(order="K").view(numpy.uint8)  # a view: root is contiguous
    view = numpy.ndarray(shape, dtype, buffer=flat, offset=offset, strides=strides)
    if not writeable:
        view.flags.writeable = False
    return view


def _rebuild_over(exporter, offset, shape, strides, dtype, writeable):
    """An array over the restored bytearray (array.array, bytes), where it was."""
    import numpy  # the saved state had it loaded

    view = numpy.ndarray(shape, dtype, buffer=exporter, offset=offset, strides=strides)
    if not writeable:
        view.flags.writeable = False
    return view


def _copy_said(copy, writeable, base):
    idioms._note(f"a copy of its elements: it is a view of {'an' if base[0] in 'aeiou' else 'a'} {base} the state "
                 "holds, but not one that can be made over it again, so writes through one no longer show in the "
                 "other")
    if not writeable:
        copy.flags.writeable = False
    return copy


def read_only(array):
    array.flags.writeable = False
    return array


def masked_reduce(array):
    """A masked array as its data (an ndarray view of it, which stays a view
    of what it views) and its attributes (its mask, a view of its parent's
    mask for a slice). numpy's own reduce copies both."""
    ndarray = next(c for c in type(array).__mro__ if c.__name__ == "ndarray" and c.__module__ == "numpy")
    return _masked_from, (type(array), array.view(ndarray)), dict(vars(array)), None, None, _set_masked


def _masked_from(cls, data):
    return data.view(cls)


def _set_masked(array, attrs):
    vars(array).update(attrs)
    return array


# -- memoryview -----------------------------------------------------------------------

class _PyBuffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p)]


_PyBUF_FULL_RO = 0x100 | 0x10 | 0x08 | 0x04  # indirect, strides, nd, format: any exporter answers


def buffer_address(obj) -> int:
    """The address of the first element of a buffer (CPython's buffer
    protocol: Python itself has no way to read it, readonly buffers included)."""
    view = _PyBuffer()
    ctypes.pythonapi.PyObject_GetBuffer(ctypes.py_object(obj), ctypes.byref(view), _PyBUF_FULL_RO)
    try:
        return view.buf or 0
    finally:
        ctypes.pythonapi.PyBuffer_Release(ctypes.byref(view))


def memoryview_reduce(view, held: set):
    """A memoryview over its exporter again when the state holds the
    exporter (or it is an array, or the view covers all of it); otherwise
    over a copy of the bytes it covers. Raises TypeError for one whose
    layout a memoryview cannot be made with (a multi-dimensional strided
    view, a non-native format): named, never saved as something else."""
    exporter = view.obj
    layout = (view.format, view.shape, view.strides, view.readonly)
    low, high = view_span(view.shape, view.strides, view.itemsize)
    whole = memoryview(exporter) if exporter is not None else None
    if whole is not None and (whole.format, whole.shape, whole.strides) == layout[:3] \
            and buffer_address(whole) == buffer_address(view):
        # memoryview(x) itself (any layout, any format: an array's .T, a '>i4' array)
        return _memoryview_of, (exporter, view.readonly)
    if whole is not None and whole.c_contiguous:
        offset = buffer_address(view) - buffer_address(exporter)
        if (id(exporter) in held or is_ndarray(exporter) or (offset + low, offset + high) == (0, whole.nbytes)) \
                and _makes(view, exporter, offset):
            return _memoryview_over, (exporter, offset, *layout)
    # its exporter is not saved: the memory it covers
    copy = view.tobytes() if view.c_contiguous else _covered(view, low, high) if view.ndim == 1 else None
    data = None if copy is None else bytes(copy) if view.readonly else bytearray(copy)
    if data is None or not _makes(view, data, -low):
        raise TypeError(f"a memoryview of format {view.format!r}, shape {view.shape} and strides {view.strides} "
                        "cannot be made again")
    if exporter is not None and (id(exporter) in held or is_ndarray(exporter)):
        return _memoryview_said, (data, -low, *layout, type(exporter).__name__)
    return _memoryview_over, (data, -low, *layout)


def _memoryview_said(data, offset, fmt, shape, strides, readonly, exporter):
    idioms._note(f"a memoryview of a copy of its memory: it cannot be made over its {exporter} again (not "
                 "contiguous), so writes through one no longer show in the other")
    return _memoryview_over(data, offset, fmt, shape, strides, readonly)


def _memoryview_of(exporter, readonly):
    view = memoryview(exporter)
    return view.toreadonly() if readonly and not view.readonly else view


def _covered(view, low, high):
    """The bytes between a 1-D view's lowest and highest element."""
    exporter = view.obj
    try:
        whole = memoryview(exporter).cast("B")
    except TypeError:  # not C-contiguous
        return None
    offset = buffer_address(view) - buffer_address(exporter)
    return whole[offset + low:offset + high]


def _makes(view, exporter, offset) -> bool:
    """Whether `_memoryview_over` makes `view` again (tried here, on the
    live memory: no copy), where it is when made over its own exporter."""
    try:
        made = _memoryview_over(exporter, offset, view.format, view.shape, view.strides, view.readonly)
    except Exception:  # a format cast() does not take (struct.error, ValueError), a layout it cannot make
        return False
    with made:
        return (made.format, made.shape, made.strides, made.readonly) == (view.format, view.shape, view.strides,
                                                                          view.readonly) \
            and (exporter is not view.obj or view.nbytes == 0 or buffer_address(made) == buffer_address(view))


def _memoryview_over(exporter, offset, fmt, shape, strides, readonly):
    raw = memoryview(exporter).cast("B")
    itemsize = struct.calcsize(fmt)
    low, high = view_span(shape, strides, itemsize)
    c_strides, step = [], itemsize
    for n in reversed(shape):
        c_strides.insert(0, step)
        step *= n
    if tuple(strides) == tuple(c_strides) or 0 in shape:
        view = raw[offset:offset + high - low].cast(fmt, list(shape))
    elif len(shape) == 1 and strides[0] % itemsize == 0:
        # 1-D strided: the elements it covers, then every step-th of them
        covered = raw[offset + low:offset + high].cast(fmt)
        step, start = strides[0] // itemsize, -low // itemsize
        stop = start + shape[0] * step
        view = covered[start:stop if stop >= 0 else None:step]
    else:
        raise TypeError("a multi-dimensional strided memoryview")
    return view.toreadonly() if readonly and not view.readonly else view

