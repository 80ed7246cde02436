"""Notebook idioms of a twelfth round (idioms7.reduce_for asks here last;
same shape: a reduce per type and its rebuild):

- an ``argparse`` parser, group or action holding one of argparse's string
  constants (``SUPPRESS``: the help action's default, a hidden option's
  help, ``argument_default=SUPPRESS``): argparse tests them by identity
  (``default is not SUPPRESS``), and pickle gave back an equal string of its
  own, so the restored parser's ``parse_args`` put ``help='==SUPPRESS=='``
  in every Namespace and printed hidden options in its help. They are saved
  by name and are argparse's own again;
- ``ctypes`` types a cell made: an array type (``(c_int * 5)(...)``,
  ``create_string_buffer``) is saved as its item type and length, made
  again by ``*`` (pickle saved it as a class of its own, which failed the
  restore: "PyCArrayType has no attribute '__mul__'"), a pointer type as
  ``POINTER(item type)``, a byte-swapped one (a ``BigEndianStructure``'s
  field) as its plain type's ``__ctype_be__``, and ctypes' metaclasses,
  which ``_ctypes`` does not name, as the types of the classes ctypes
  names (``type(ctypes.Structure)``). A notebook ``Structure`` or ``Union``
  class (and so its objects) was refused, its fields' descriptors with it:
  its layout (``_pack_``, ``_anonymous_``, then ``_fields_``) is set on the
  made class as a cell sets it, and ctypes makes the fields (not again on
  a class this process made already: a second ``%elastic_restore``);
- a ``typing.TypedDict`` made by a call (``Movie = TypedDict("Movie",
  {"title": str})``) has no ``__orig_bases__``: pickle made it over
  ``dict``, which TypedDict's metaclass refuses, and the restore failed. It
  is made over ``TypedDict``, as the class syntax's; a ``ParamSpec`` or
  ``TypeVarTuple`` of the notebook's (``P = ParamSpec("P")``), which typing
  pickles by its name, was looked up in the namespace it was being loaded
  into, and failed: it is made again from its name and bounds; so is an
  object of a notebook class whose ``__reduce__`` gives its name (a
  sentinel, ``MISSING = _Missing()``, pickled by name as Python's own are):
  saved by value, with its state, and every holder gets it again;
- ``multiprocessing`` objects: a shared ``Value`` or ``Array`` (``counter =
  mp.Value("i", 0)``) no process holds the lock of comes back in new shared
  memory with its value (the processes it was shared with ended with the
  old kernel), and so does a ``RawValue``, ``RawArray`` or ``Value(...,
  lock=False)``, which pickle refused (its memory map). A ``shared_memory.
  SharedMemory`` or ``ShareableList`` was saved as its segment's name: on
  another node the segment is not there, and the restore failed; it is
  saved with its bytes (its items) and made again in a new segment. The
  others are named in plain words with what to do, not by
  multiprocessing's "should only be shared between processes through
  inheritance" or "Pickling an AuthenticationString object is disallowed":
  a Manager and the dicts and lists it shares (their values live in its
  process; pickled, they failed the restore trying to reach it, a partial
  restore), a queue, a lock or event, a process, and an open ``Pipe`` end,
  which pickle saved as its file descriptor's number: restored, it read,
  wrote or closed whatever the new kernel had opened under that number;
- Pillow: an ``ImageDraw.Draw(img)`` kept to draw on in later cells: made
  again on its restored image, with its settings (pickle refused its C
  drawing object); a font loaded from bytes (``ImageFont.load_default(size=
  24)``, ``truetype(io.BytesIO(data))``, the font ``draw.text`` keeps):
  Pillow saved its stream, read to its end, and the restore failed ("cannot
  open resource"); it is made again from the bytes it was read from;
- a ``json.JSONDecoder`` (a subclass with an ``object_hook``, kept to decode
  a course's records): its scanner, a C object made of the decoder's
  settings, is made again from them (pickle refused it);
- an ``ElementTree.iterparse`` kept in a variable is named in plain words
  with what to do, not by pickle's "cannot pickle 'generator' object": its
  parser's place in the file cannot be read back. (The elements it gave,
  held in variables, are carried);
- an ``asyncio`` Task or Future (``task = asyncio.create_task(...)``; ``await
  task`` in a later cell) is named with what to do, not by pickle's "cannot
  pickle '_asyncio.Task' object": a done one, keep its result; one not
  done runs in the old kernel's event loop.
"""

from __future__ import annotations

import importlib
import sys

from . import idioms, idioms2, idioms6, idioms9

# Libraries that test their own string constants by identity: their objects' attributes holding one are saved
# by the constant's name.
_SENTINEL_MODULES = ("argparse",)


def reduce_for(kind: type):
    """The reduce for `kind`, or None (idioms7.reduce_for asks last)."""
    if kind is type:
        return _ctypes_metaclass
    if idioms._is_class_of(kind, "json.decoder", "JSONDecoder") and _plain_state(kind):
        return _json_decoder
    if kind.__module__ == "xml.etree.ElementTree" and kind.__name__ == "IterParseIterator":
        return _iterparse
    if idioms._is_class_of(kind, "_asyncio", "Future") or idioms._is_class_of(kind, "asyncio.futures", "Future"):
        return _asyncio_future
    if kind.__module__ == "__main__" and any(name in vars(c) for c in kind.__mro__ if c.__module__ == "__main__"
                                             for name in ("__reduce__", "__reduce_ex__")):
        return _named_in_notebook
    if kind.__name__ in ("ParamSpec", "TypeVarTuple") and kind.__module__ in ("typing", "typing_extensions"):
        return _type_variable
    if idioms._is_class_of(kind, "PIL.ImageDraw", "ImageDraw"):  # PIL is imported only by a notebook using it
        return _image_draw
    if idioms._is_class_of(kind, "PIL.ImageFont", "FreeTypeFont"):
        return _font_from_bytes
    if idioms._is_class_of(kind, "_ctypes", "_CData"):  # before the next: RawArray's types are multiprocessing's
        return _raw_shared
    if any(str(c.__module__).startswith("multiprocessing.") for c in kind.__mro__):
        return _multiprocessing_reduce(kind)
    if idioms._is_class_of(kind, "_ctypes", "PyCArrayType"):
        return _ctypes_array_type
    if idioms._is_class_of(kind, "_ctypes", "PyCSimpleType"):
        return _swapped_simple_type
    if idioms._is_class_of(kind, "_ctypes", "PyCPointerType"):
        return _ctypes_pointer_type
    if any(c.__module__ in _SENTINEL_MODULES for c in kind.__mro__) and _plain_state(kind):
        return _with_sentinels
    return idioms9.reduce_for(kind)  # progress bars and widgets


def _plain_state(kind: type) -> bool:
    """Whether pickle saves `kind`'s objects as their class and instance dict (so a reduce of its dict may
    stand for it)."""
    return kind.__reduce_ex__ is object.__reduce_ex__ and kind.__reduce__ is object.__reduce__ \
        and getattr(kind, "__getstate__", object.__getstate__) is object.__getstate__ \
        and getattr(kind, "__setstate__", None) is None and "__slots__" not in vars(kind)


# -- a library's string constants tested by identity -------------------------------------------

def _with_sentinels(obj, user_ns):
    state = getattr(obj, "__dict__", None)
    if not isinstance(state, dict):
        return None
    owner = next(c.__module__ for c in type(obj).__mro__ if c.__module__ in _SENTINEL_MODULES)
    constants = _constants(owner)
    marked = {key: constants[id(value)] for key, value in state.items() if id(value) in constants}
    if not marked:
        return None  # pickled as usual
    plain = {key: value for key, value in state.items() if key not in marked}
    return idioms2.new_past_notebook, (type(obj),), (plain, owner, marked), None, None, _set_with_sentinels


def _constants(module: str) -> dict:
    """{id(constant): name} of `module`'s own string constants (SUPPRESS, OPTIONAL...)."""
    namespace = vars(sys.modules[module])
    return {id(value): name for name, value in namespace.items() if type(value) is str and name.isupper()}


def _set_with_sentinels(obj, state):
    plain, owner, marked = state
    module = importlib.import_module(owner)  # imported already: the class's own load did
    obj.__dict__.update(plain)
    obj.__dict__.update({key: getattr(module, name) for key, name in marked.items()})
    return obj



# -- ctypes types made by a cell -------------------------------------------------------------------

def _ctypes_array_type(kind, user_ns):
    if not isinstance(kind, type) or kind._type_ * kind._length_ is not kind:
        return None  # a class of its own over an array type: pickled as a class
    return _array_type, (kind._type_, kind._length_, kind.__module__)


def _array_type(item, length, module):
    return _named(item * length, module)  # ctypes keeps one type per (item, length): every holder gets the same


def _ctypes_pointer_type(kind, user_ns):
    import ctypes  # imported already: a ctypes type exists

    if not isinstance(kind, type) or ctypes.POINTER(kind._type_) is not kind:
        return None
    return _pointer_type, (kind._type_, kind.__module__)


def _pointer_type(item, module):
    import ctypes

    return _named(ctypes.POINTER(item), module)


def _named(kind, module):
    """`kind` with the module its cell gave it: made here, it would say this module's name in its repr."""
    if kind.__module__ == __name__:
        kind.__module__ = module
    return kind


def _swapped_simple_type(kind, user_ns):
    native, swapped = ("__ctype_le__", "__ctype_be__") if sys.byteorder == "little" else \
        ("__ctype_be__", "__ctype_le__")
    plain = getattr(kind, native, kind)
    if not isinstance(kind, type) or plain is kind or getattr(plain, swapped, None) is not kind:
        return None  # a plain one: by name
    return getattr, (plain, swapped)


# ctypes' metaclasses, which _ctypes does not name: pickle found them nowhere, saved them as classes of their own,
# and the ctypes classes made of those failed to load. Each is the type of a class ctypes names.
_METACLASSES = {"PyCStructType": "Structure", "UnionType": "Union", "PyCArrayType": "Array",
                "PyCPointerType": "_Pointer", "PyCSimpleType": "_SimpleCData", "PyCFuncPtrType": "_CFuncPtr"}


def _ctypes_metaclass(cls, user_ns):
    if cls.__module__ != "_ctypes" or cls.__name__ not in _METACLASSES:
        return None  # any other class: one dict lookup
    return _ctypes_meta, (cls.__name__,)


def _ctypes_meta(name):
    import ctypes

    return type(getattr(ctypes, _METACLASSES[name]))


# Set in this order: ctypes reads the others when _fields_ is set, and makes the layout then.
_LAYOUT = ("_pack_", "_align_", "_anonymous_", "_fields_")


def ctypes_class_state(cls, state: dict, rest: list) -> tuple:
    """A notebook ``Structure``'s (``Union``'s) class state and the rest of cloudpickle's reduce (`rest`: items,
    pairs, setter): without the fields' descriptors (pickle refuses them; setting ``_fields_`` makes them), its
    layout set last, in order; another class's as they are."""
    if not (idioms._is_class_of(type(cls), "_ctypes", "PyCStructType")
            or idioms._is_class_of(type(cls), "_ctypes", "UnionType")):
        return state, rest
    kept = {k: v for k, v in state.items()
            if k not in _LAYOUT and not (type(v).__module__ == "_ctypes" and type(v).__name__ == "CField")}
    return {**kept, **{k: state[k] for k in _LAYOUT if k in state}}, [*rest[:2], _set_ctypes_class_state]


def _set_ctypes_class_state(cls, state):
    from .serializer import cloudpickle

    attrs, slots = state
    if "_fields_" in vars(cls):
        # the class this process made already (a second %elastic_restore: cloudpickle finds it by its id); its
        # layout is final, and setting it again raised "_fields_ is final", failing the class and its objects
        attrs = {k: v for k, v in attrs.items() if k not in _LAYOUT}
    return cloudpickle.cloudpickle._class_setstate(cls, (attrs, slots))


# -- a TypedDict made by a call -----------------------------------------------------------------

def typed_dict_args(cls, args: tuple) -> tuple:
    """cloudpickle's skeleton arguments (metaclass, name, bases, ...) for a notebook class; a TypedDict made by a
    call gets TypedDict for base, where its bases (dict) fail its metaclass."""
    meta = type(cls)
    if meta.__name__ != "_TypedDictMeta" or "__orig_bases__" in vars(cls):
        return args
    typed_dict = getattr(sys.modules.get(meta.__module__), "TypedDict", None)  # typing's, or typing_extensions'
    return args if typed_dict is None else (*args[:2], (typed_dict,), *args[3:])


def _type_variable(var, user_ns):
    module, name = var.__module__, var.__name__
    if module != "__main__" and getattr(sys.modules.get(module), name, None) is var:
        return None  # a module's: found by its name, as typing pickles it
    bounds = {k: vars(var)[f"__{k}__"] for k in ("bound", "covariant", "contravariant") if f"__{k}__" in vars(var)}
    return _made_type_variable, (type(var), name, bounds, module)


def _made_type_variable(kind, name, bounds, module):
    var = kind(name, **bounds)
    var.__module__ = module  # made here it would name this module
    return var


def _named_in_notebook(obj, user_ns):
    if not isinstance(obj.__reduce_ex__(5), str):
        return None  # its class's own reduce: pickle calls it
    # a name in the namespace the restore is loading (the variable itself): its class and state instead
    return idioms2.new_past_notebook, (type(obj),), obj.__getstate__()


# -- multiprocessing ------------------------------------------------------------------------

_AGAIN = "make it again after restore"
_SHARED = "a multiprocessing {name} (the old kernel's processes share it): " + _AGAIN
_MP_REASONS = {  # "module.qualname" of a class in the MRO: what it is, what to do (pickle's words follow)
    "multiprocessing.managers.BaseProxy": "a {name} a multiprocessing Manager shares (held in its process, gone "
                                          "with the old kernel): keep a copy, e.g. dict(x), or " + _AGAIN,
    "multiprocessing.managers.BaseManager": "a multiprocessing Manager (a process of the old kernel's): " + _AGAIN,
    "multiprocessing.queues.Queue": "a multiprocessing queue (its items are in a pipe of the old kernel's): "
                                    + _AGAIN,
    "multiprocessing.queues.SimpleQueue": "a multiprocessing queue (its items are in a pipe of the old "
                                          "kernel's): " + _AGAIN,
    "multiprocessing.connection._ConnectionBase": "an open multiprocessing Pipe end (a channel of the old "
                                                  "kernel's): make the Pipe again after restore",
    "multiprocessing.synchronize.SemLock": _SHARED,
    "multiprocessing.synchronize.Condition": _SHARED,
    "multiprocessing.synchronize.Event": _SHARED,
    "multiprocessing.synchronize.Barrier": _SHARED,
    "multiprocessing.process.BaseProcess": "a multiprocessing Process (of the old kernel): " + _AGAIN,
}


def _multiprocessing_reduce(kind):
    names = [f"{c.__module__}.{c.__qualname__}" for c in kind.__mro__]
    if "multiprocessing.sharedctypes.SynchronizedBase" in names:
        return _shared_value
    if "multiprocessing.shared_memory.SharedMemory" in names:
        return _shared_memory
    if "multiprocessing.shared_memory.ShareableList" in names:
        return _shareable_list
    reason = next((_MP_REASONS[n] for n in names if n in _MP_REASONS), None)
    if reason is None:
        return None  # a Pool: typeprobe names it; anything else pickles as it does

    def refuse(obj, user_ns):
        if "multiprocessing.connection._ConnectionBase" in names and obj.closed:
            return None  # a closed one holds no descriptor: its attributes
        raise idioms6.refused(obj, reason.format(name=kind.__name__.removesuffix("Proxy").lower()
                                                 if "Proxy" in kind.__name__ else kind.__name__))
    return refuse


def _shared_value(value, user_ns):
    semlock = getattr(value.get_lock(), "_semlock", None)
    if semlock is not None and hasattr(semlock, "_get_value") and semlock._get_value() == 0:
        raise idioms6.refused(value, f"a multiprocessing {_SHARED_NAMES.get(type(value).__name__, 'Value')} whose "
                              "lock is held (by a process or a cell): release it, or " + _AGAIN)
    shared = value.get_obj()  # a ctypes object over the shared memory: a plain copy is its type and bytes
    return _in_shared_memory, (type(shared).from_buffer_copy(shared),)


_SHARED_NAMES = {"Synchronized": "Value", "SynchronizedArray": "Array", "SynchronizedString": "Array"}


def _raw_shared(obj, user_ns):
    wrapper = getattr(obj, "__dict__", {}).get("_wrapper")
    if type(wrapper).__module__ != "multiprocessing.heap":
        return None  # a ctypes object of the process's own memory: ctypes pickles its bytes
    return _raw_in_shared_memory, (type(obj).from_buffer_copy(obj),)


def _raw_in_shared_memory(obj):
    from multiprocessing import sharedctypes

    return sharedctypes.copy(obj)  # as RawValue() and RawArray() make it


def _in_shared_memory(obj):
    from multiprocessing import sharedctypes

    return sharedctypes.synchronized(sharedctypes.copy(obj))  # with a new lock, as Value() and Array() make it


# -- Pillow ------------------------------------------------------------------------------------

_DRAW_MADE = ("palette", "_image", "im", "draw", "ink")  # what ImageDraw.__init__ makes of its image and mode


def _image_draw(draw, user_ns):
    image = vars(draw).get("_image")
    if image is None or getattr(image, "im", None) is not draw.im:
        # drawn on by itself, or its image's pixels replaced since (thumbnail): made again it would draw on the image
        raise idioms6.refused(draw, "an ImageDraw whose image it no longer draws on: make it again after restore")
    settings = {k: v for k, v in vars(draw).items() if k not in _DRAW_MADE}
    return _made_draw, (type(draw), image, draw.mode), settings, None, None, idioms._set_attrs


def _made_draw(kind, image, mode):
    return kind(image, mode)


def _font_from_bytes(font, user_ns):
    data = vars(font).get("font_bytes")
    if not isinstance(data, bytes) or isinstance(font.path, (str, bytes)) or hasattr(font.path, "__fspath__"):
        return None  # a font file: Pillow opens it again by its path
    own = {k: v for k, v in vars(font).items() if k not in ("path", "size", "index", "encoding", "layout_engine",
                                                             "font_bytes", "font")}
    return (_made_font, (type(font), data, font.size, font.index, font.encoding, font.layout_engine), own or None,
            None, None, idioms._set_attrs if own else None)


def _made_font(kind, data, size, index, encoding, layout_engine):
    import io

    return kind(io.BytesIO(data), size, index, encoding, layout_engine)


# -- json ------------------------------------------------------------------------------------

def _json_decoder(decoder, user_ns):
    state = getattr(decoder, "__dict__", None)
    if not isinstance(state, dict) or type(state.get("scan_once")).__module__ != "_json":
        return None  # no scanner of json's C code: pickled as it is
    state = {k: v for k, v in state.items() if k != "scan_once"}
    return idioms2.new_past_notebook, (type(decoder),), state, None, None, _set_decoder


def _set_decoder(decoder, state):
    from json import scanner

    decoder.__dict__.update(state)
    decoder.scan_once = scanner.make_scanner(decoder)  # as JSONDecoder.__init__ makes it, from the settings
    return decoder


# -- xml.etree.ElementTree.iterparse ------------------------------------------------------------

def _iterparse(it, user_ns):
    gen = getattr(type(it).__next__, "__self__", None)  # its class's __next__ is its generator's
    if getattr(gen, "gi_frame", True) is None:
        raise idioms6.refused(it, "an ElementTree.iterparse read to its end: keep its root (root = it.root), "
                              "or make it again after restore")
    raise idioms6.refused(it, "an ElementTree.iterparse part-way (its parser's place in the file cannot be "
                          "read back): make it again after restore")


# -- asyncio -----------------------------------------------------------------------------------

def _asyncio_future(future, user_ns):
    what = "Task" if any(c.__name__ == "Task" for c in type(future).__mro__) else "Future"
    if not future.done():
        raise idioms6.refused(future, f"an asyncio {what} not done (it runs in the old kernel's event loop): make "
                              "it again after restore")
    if future.cancelled():
        raise idioms6.refused(future, f"a cancelled asyncio {what} (of the old kernel's event loop): make it again "
                              "after restore if it is still needed")
    raise idioms6.refused(future, f"a done asyncio {what} (of the old kernel's event loop): keep its result in a "
                          "variable (r = x.result()), or make it again after restore")


def _shared_memory(shm, user_ns):
    if shm.buf is None:
        raise idioms6.refused(shm, "a SharedMemory closed in the old kernel (its segment is that node's): make it "
                              "again after restore")
    return _new_shared_memory, (type(shm), bytes(shm.buf))


def _new_shared_memory(kind, data):
    shm = kind(create=True, size=max(len(data), 1))  # a new segment: the old one was the old node's
    shm.buf[:len(data)] = data
    return shm


def _shareable_list(items, user_ns):
    if items.shm.buf is None:
        raise idioms6.refused(items, "a ShareableList closed in the old kernel: make it again after restore")
    return type(items), (list(items),)  # a new segment, its slots sized to the items it holds now
