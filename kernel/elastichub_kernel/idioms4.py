"""Notebook idioms of a seventh probe round (idioms3.reduce_for asks here
last; same shape: a reduce per type and its rebuild):

- a compressed file (``gzip.open``, ``bz2.open``, ``lzma.open``, binary or
  text) and a zip archive (``zipfile.ZipFile``). Closed, what ``with
  gzip.open(...) as f`` or ``with ZipFile(...) as z`` leaves, it comes back
  closed (a closed archive still lists its members: ``z.namelist()``).
  Open for reading, it is opened again on its file (unchanged since: size,
  mtime, else the variable fails by name) or over its in-memory bytes, at
  the same place. Open for writing it is named: what it compressed is not
  all in its file until it is closed. Before, every one, closed ones too,
  was 'not restorable' as "an open file handle". A member of an archive a
  ``with`` block closed (``with archive.open(name) as member:``) comes back
  closed; an open one is still named;
- ``numpy.load`` of an ``.npz`` file (an assignment's arrays): its archive
  and file as above; its ``.f`` attribute view (which refused pickling:
  "can't pickle 'BagObj'") is made again over it;
- an SQLAlchemy engine (``engine = create_engine("sqlite:///school.db")``,
  which each later ``pd.read_sql(query, engine)`` uses): made again from
  its URL, ``echo``, ``connect_args``, ``creator``, pool class and pool
  settings, and execution options (an engine of ``execution_options()``
  over its engine again); pickle stopped at its locks. Event listeners and
  the dialect's own arguments (``json_serializer``) are not carried. One
  of a database in memory is named: its tables live in it;
  an open connection of one (``conn = engine.connect()``) is connected
  again; a transaction it had begun (its first ``execute`` begins one) was
  rolled back with the old kernel, which the restore report says. A closed
  one (what ``with engine.connect() as conn`` leaves) pickles as it is;
- an ``io.StringIO`` or ``io.BytesIO`` a ``with`` block closed: closed
  again (its own pickling refused: "I/O operation on closed file");
- a ``concurrent.futures.Future`` that is done (``futures = [pool.submit(f,
  v) ...]``, read with ``.result()`` in later cells): done again, with its
  result or exception, or cancelled; pickle stopped at its lock and failed
  the whole list. One not done is named: its work runs in the old kernel;
- a ``ThreadPoolExecutor`` or ``ProcessPoolExecutor`` a ``with`` block shut
  down: made again (same ``max_workers``) and shut down; it was named 'a
  pool of workers' at every restore. A running one still is;
- a chunked CSV reader of pandas (``reader = pd.read_csv(path,
  chunksize=n)``, ``iterator=True``) that pandas opened on a file: opened
  again with the same options (its file unchanged) and read forward to the
  row it was at; pickle refused it ("non-trivial __cinit__"). A closed one,
  or one over a file object of the notebook's, is named;
- a part of a page BeautifulSoup parsed (``table = soup.find("table")``, a
  tag's ``.string``): BeautifulSoup saves a page as its markup, parsed
  again, so a part saved by itself came back a copy hanging apart from the
  page (``table.decompose()`` left ``soup`` as it was). Saved as the page
  and the part's place in it, and found there again (checked to be the
  same kind of part, else the variable fails by name);
- a text over bytes in memory (``io.TextIOWrapper(io.BytesIO(data))``): its
  bytes and place carried, as for a compressed file's text; closed, closed;
- a text file read with ``next()`` (``header = next(f)``, a ``for line in
  f`` left with ``break``): its ``tell()`` is off until it is read to its
  end, and it was 'not restorable'. Its place is found by reading: what is
  left, then the file again up to there (it is where it was, and tells);
  a text over a compressed file of a file on disk too (``gzip.open(path,
  "rt")``).
"""

from __future__ import annotations

import io
import os

from . import idioms, idioms3, idioms5

_COMPRESSED = {("gzip", "GzipFile"), ("bz2", "BZ2File"), ("lzma", "LZMAFile")}
_COMPRESSED_NAMES = frozenset(f"{module}.{name}" for module, name in _COMPRESSED)


def tried_file(obj, name: str) -> bool:
    """Whether a file object of type `name` (module.qualname) is saved here,
    or refused with why (typeprobe: tried, not refused as a file handle)."""
    return name in _COMPRESSED_NAMES or (name == "zipfile.ZipExtFile" and obj.closed)


def reduce_for(kind: type):
    """The reduce for `kind`, or None (idioms3.reduce_for asks last)."""
    if (kind.__module__, kind.__name__) in _COMPRESSED:
        return _compressed
    if kind.__module__ == "zipfile" and kind.__name__ == "ZipFile":
        return _zip_file
    if kind.__module__ == "zipfile" and kind.__name__ == "ZipExtFile":
        return _zip_member
    if kind.__name__ == "NpzFile" and kind.__module__.startswith("numpy."):  # numpy is never imported here
        return _npz_file
    if idioms._is_class_of(kind, "sqlalchemy.engine.base", "Engine"):  # nor sqlalchemy
        return _sqlalchemy_engine
    if kind.__module__ == "sqlalchemy.engine.base" and kind.__name__ == "Connection":
        return _sqlalchemy_connection
    if kind is io.StringIO or kind is io.BytesIO:
        return _memory_file
    if idioms._is_class_of(kind, "concurrent.futures._base", "Future"):
        return _future
    if kind.__module__ in _EXECUTOR_MODULES and kind.__name__.endswith("PoolExecutor"):
        return _executor
    if idioms._is_class_of(kind, "pandas.io.parsers.readers", "TextFileReader"):  # pandas is never imported here
        return _csv_reader
    if idioms._is_class_of(kind, "bs4.element", "PageElement") and not idioms._is_class_of(kind, "bs4",
                                                                                           "BeautifulSoup"):
        return _page_element
    return idioms5.reduce_for(kind)  # struct.Struct, random.Random, numpy flatiter


def text_over_no_file(f):
    """The reduce of a file object of the io module over no file of open()
    (idioms._file_handle asks): a text file over a compressed one, or over
    bytes in memory (``io.TextIOWrapper(io.BytesIO(downloaded))``)."""
    buffer = getattr(f, "buffer", None)
    if type(f).__name__ == "TextIOWrapper" and (type(buffer) is io.BytesIO or (
            type(buffer).__module__, type(buffer).__name__) in _COMPRESSED):
        return _text_over(f)
    raise TypeError("an open file handle over something other than a file (open it again after restore)")


def _source(f):
    """The file object a compressed file reads (gzip keeps two names)."""
    return f._fp if hasattr(f, "_fp") else (f.myfileobj or f.fileobj)


def _label(f) -> str:
    name = getattr(_source(f), "name", None) if not f.closed else getattr(f, "name", None)
    return f"{type(f).__module__}.{type(f).__name__}" + (f" of {name}" if isinstance(name, str) else "")


def _writing(what: str, unwritten: str = "what it compressed") -> TypeError:
    return TypeError(f"{what} is open for writing: {unwritten} is not in its file until it is closed "
                     "(close it, or write in a `with` block, then checkpoint)")


def _compressed(f, user_ns):
    kind = type(f)
    if f.closed:
        return _closed_compressed, (kind, getattr(f, "name", None), getattr(f, "mode", None))
    if not f.readable():
        raise _writing(_label(f))
    source, position = _source(f), f.tell()
    on_disk = _on_disk(source)
    if on_disk is None:  # in memory (BytesIO): carried as it is, read again from its start
        return _reopen_compressed, (kind, source, None, position)
    return _reopen_compressed, (kind, None, on_disk, position)


def _on_disk(source):
    """(path, the name it was opened by, size, mtime) of a file of open(); None for anything else."""
    raw = getattr(source, "raw", source)
    if type(raw).__module__ != "_io" or type(raw).__name__ != "FileIO" or not isinstance(raw.name, str):
        return None
    path = idioms._open_path(raw)  # where it is now; refuses a pipe or a deleted file by name
    stat = os.stat(path)
    return path, raw.name, stat.st_size, stat.st_mtime_ns


def _open_compressed(kind, fileobj):
    return kind(fileobj=fileobj, mode="rb") if kind.__name__ == "GzipFile" else kind(fileobj, "rb")


def _reopen_compressed(kind, source, on_disk, position):
    if on_disk is not None:
        path, name, size, mtime_ns = on_disk
        idioms._as_saved(f"compressed file {path}", path, size, mtime_ns)
        source = open(path, "rb")
        source.raw.name = name
    else:
        source.seek(0)  # a compressed stream starts at its file's start (gzip's own rewind seeks to 0)
    f = _open_compressed(kind, source)
    if on_disk is not None:
        if kind.__name__ == "GzipFile":
            f.myfileobj = source  # closed with it, as gzip.open's own file
        else:
            f._closefp = True
    f.seek(position)  # read forward again to where it was
    return f


def _closed_compressed(kind, name, mode):
    f = _open_compressed(kind, io.BytesIO())
    f.close()
    _named(f, name, mode)
    return f


def _named(f, name, mode):
    """gzip's name and mode (bz2 and lzma have none to set)."""
    if name is not None:
        f.name = name
    if mode is not None:
        f.mode = mode


def _zip_member(member, user_ns):
    if not member.closed:
        raise TypeError("an open file handle (reopen the file after restore)")  # typeprobe's words
    skip = ("_fileobj", "_decompressor", "_decrypter")  # the archive's shared file, decoders: spent
    return _closed_zip_member, (type(member), {k: v for k, v in vars(member).items() if k not in skip})


def _closed_zip_member(kind, state):
    member = kind.__new__(kind)
    vars(member).update(state)  # holds io's own closed flag: reads raise as they did
    member._fileobj = member._decompressor = member._decrypter = None
    return member


# -- text over a compressed file ------------------------------------------------------------

def _text_over(text):
    buffer = text.buffer
    if text.closed:
        return _closed_text, (type(buffer), getattr(buffer, "name", None), getattr(buffer, "mode", None),
                              text.encoding, text.errors)
    if not text.readable():
        raise _writing(_label(buffer))
    try:
        text.tell()
    except OSError as exc:  # next(text) turned tell() off
        on_disk = None if type(buffer) is io.BytesIO else _on_disk(_source(buffer))
        if on_disk is None:
            raise TypeError(f"a text over bytes in memory whose position cannot be read ({exc}): open it again "
                            "after restore") from None
        position_after_next(text, exc, on_disk[0], lambda path: type(buffer)(path, "rb"))
    newline = idioms3.text_newline(text)  # seeks it to where it is: what it read ahead is read again
    return _reopen_text, (buffer, text.encoding, text.errors, text.line_buffering, text.write_through, newline,
                          text.tell())


def _reopen_text(buffer, encoding, errors, line_buffering, write_through, newline, position):
    text = io.TextIOWrapper(buffer, encoding=encoding, errors=errors, newline=newline,
                            line_buffering=line_buffering, write_through=write_through)
    text.seek(position)
    return text


def _closed_text(kind, name, mode, encoding, errors):
    """Made over an open stand-in of its kind (a closed one cannot be wrapped), then closed with it."""
    buffer = io.BytesIO() if kind is io.BytesIO else _open_compressed(kind, io.BytesIO())
    text = io.TextIOWrapper(buffer, encoding=encoding, errors=errors)
    text.close()
    _named(buffer, name, mode)
    return text


def _memory_file(f, user_ns):
    return (_closed_memory_file, (type(f),)) if f.closed else None  # open: its own pickling


def _closed_memory_file(kind):
    f = kind()
    f.close()
    return f


def _future(fut, user_ns):
    if not fut.done():
        raise TypeError("a Future not done yet: its work runs in the old kernel's workers (submit it again after "
                        "restore)")
    if fut.cancelled():
        return _done_future, (type(fut), "cancelled", None)
    error = fut.exception(timeout=0)
    return _done_future, ((type(fut), "exception", error) if error is not None else
                          (type(fut), "result", fut.result(timeout=0)))


def _done_future(kind, how, value):
    fut = kind()
    if how == "cancelled":
        fut.cancel()
    elif how == "exception":
        fut.set_exception(value)
    else:
        fut.set_result(value)
    return fut


_EXECUTOR_MODULES = ("concurrent.futures.thread", "concurrent.futures.process")


def shut_down_executor(ex) -> bool:
    """Whether `ex` is a pool of concurrent.futures that was shut down (typeprobe: tried, not refused)."""
    return type(ex).__module__ in _EXECUTOR_MODULES and True in (getattr(ex, "_shutdown", None),
                                                                 getattr(ex, "_shutdown_thread", None))


def _executor(ex, user_ns):
    if not shut_down_executor(ex):
        raise TypeError("a pool of workers")
    return _shut_down_executor, (type(ex), ex._max_workers)


def _shut_down_executor(kind, workers):
    ex = kind(max_workers=workers)  # starts no worker: they start at the first submit
    ex.shutdown(wait=False)
    return ex


# -- a text file read with next() ---------------------------------------------------------

NEXT_READ_MAX = 256 << 20  # bytes read again, twice, to find the place of a file read with next()


def position_after_next(f, exc: OSError, path: str, opener=lambda path: open(path, "rb")):
    """``f.tell()`` of a text file whose tell() raised `exc`: after
    ``next(f)``, read to its end and again up to where it was. `opener`
    opens `path` to read the bytes `f` decodes (a compressed file's)."""
    if "next()" not in str(exc) or type(f).__name__ != "TextIOWrapper" or not f.readable():
        raise TypeError(f"an open file handle whose position cannot be read ({exc}); open it again after "
                        "restore") from None
    if os.path.getsize(path) > NEXT_READ_MAX:
        raise TypeError(f"a file read with next() ({exc}), over {NEXT_READ_MAX >> 20} MB: its place is found only "
                        "by reading it again (read it with f.readline(), or open it again after restore)") from None
    with opener(path) as raw:  # a text that cannot decode would leave f read to the failing line
        try:
            raw.read().decode(f.encoding, f.errors)
        except (UnicodeError, LookupError) as err:
            raise TypeError(f"a file read with next() ({exc}) whose text does not decode ({err}): its place cannot "
                            "be found; open it again after restore") from None
    left = len(f.read())
    f.seek(0)
    whole = len(f.read())
    f.seek(0)
    f.read(whole - left)
    return f.tell()


# -- zip archives ----------------------------------------------------------------------------

def _zip_file(z, user_ns):
    state = {k: v for k, v in vars(z).items() if k not in ("fp", "_lock")}  # its members' table, its settings
    if z.fp is None:  # closed
        return _rebuilt_zip, (type(z), state, None, None)
    if z.mode != "r" or getattr(z, "_writing", False):
        raise _writing(f"zip archive {z.filename}", "its table of contents")
    on_disk = None if z._filePassed else _on_disk(z.fp)
    if on_disk is None and not z._filePassed:
        raise TypeError(f"zip archive {z.filename} is read from something other than a file (open it again "
                        "after restore)")
    # A file object the notebook gave is carried as what it is (a BytesIO; open()'s, opened again).
    return _rebuilt_zip, (type(z), state, z.fp if on_disk is None else None, on_disk)


def _rebuilt_zip(kind, state, fp, on_disk):
    import threading

    z = kind.__new__(kind)
    vars(z).update(state)
    z._lock = threading.RLock()
    if on_disk is not None:
        path, name, size, mtime_ns = on_disk
        idioms._as_saved(f"zip archive {path}", path, size, mtime_ns)
        fp = open(path, "rb")
        fp.raw.name = name
    z.fp = fp
    if fp is not None:
        z._fileRefCnt = 1  # the archive's own use: its members open in the old kernel are not carried
    return z


def _npz_file(npz, user_ns):
    state = dict(vars(npz))
    bag = state.pop("f", None)  # None once closed
    return _rebuilt_npz, (type(npz), state, None if bag is None else type(bag))


def _rebuilt_npz(kind, state, bag_kind):
    npz = kind.__new__(kind)
    vars(npz).update(state)
    npz.f = None if bag_kind is None else bag_kind(npz)
    return npz


# -- SQLAlchemy engines -------------------------------------------------------------------------

def _sqlalchemy_engine(engine, user_ns):
    base = getattr(engine, "_proxied", None)  # engine.execution_options(...): options over its engine
    if base is not None:
        return _engine_with_options, (base, dict(engine._execution_options))
    url = engine.url
    if url.get_backend_name() == "sqlite" and (url.database or ":memory:").startswith((":memory:", "file::memory:")):
        raise TypeError(f"an SQLAlchemy engine of a database in memory ({url}): its tables live only in this "
                        "process (make them again after restore, or use a database file)")
    return _new_engine, (url.render_as_string(hide_password=False), engine.echo, type(engine.pool),
                         dict(engine._execution_options), _engine_arguments(engine))


def _engine_arguments(engine) -> dict:
    """The create_engine arguments an engine's parts tell: connect_args
    (what its connect function passes beyond its dialect's own), creator=,
    and its pool's settings."""
    pool, arguments = engine.pool, {}
    creator = getattr(pool, "_creator", None)
    code = getattr(creator, "__code__", None)
    if creator is not None and getattr(creator, "__module__", None) != "sqlalchemy.engine.create":
        arguments["creator"] = creator  # the notebook's own function (pickled as such)
    elif code is not None and "cparams" in code.co_freevars:
        given = creator.__closure__[code.co_freevars.index("cparams")].cell_contents
        own = engine.dialect.create_connect_args(engine.url)[1]
        extra = {k: v for k, v in given.items() if k not in own or own[k] != v}
        if extra:
            arguments["connect_args"] = extra
    if type(pool).__name__ == "QueuePool":
        arguments.update(pool_size=pool.size(), max_overflow=pool._max_overflow, pool_timeout=pool._timeout)
    return {**arguments, "pool_recycle": pool._recycle, "pool_pre_ping": pool._pre_ping}


def _new_engine(url, echo, poolclass, options, arguments=None):
    import sqlalchemy  # the saved state had it loaded

    engine = sqlalchemy.create_engine(url, echo=echo, poolclass=poolclass, **(arguments or {}))
    return engine.execution_options(**options) if options else engine


def _engine_with_options(base, options):
    return base.execution_options(**options)


def _sqlalchemy_connection(conn, user_ns):
    if conn.closed:
        return None  # its own pickling, its engine as above
    return _reconnect, (conn.engine, dict(conn.get_execution_options()), conn.in_transaction())


def _reconnect(engine, options, had_transaction):
    conn = engine.connect()
    if options:
        conn.execution_options(**options)  # in place
    if had_transaction:
        idioms._note("the SQLAlchemy connection is connected again; the transaction it had begun was rolled back "
                     "with the old kernel (what it executed since its last commit() is not in the database)")
    return conn


# -- pandas' chunked CSV reader -------------------------------------------------------------------

def _csv_reader(reader, user_ns):
    handles = reader.handles
    if handles is None or handles.handle.closed:
        raise TypeError("a closed CSV reader of pandas (read_csv with chunksize= or iterator=): make it again "
                        "after restore")
    on_disk = next(filter(None, map(_file_on_disk, getattr(handles, "created_handles", None) or [])), None)
    if on_disk is None:
        raise TypeError("a CSV reader of pandas over a file object the notebook opened: open both again after "
                        "restore")
    return _reopen_csv_reader, (type(reader), on_disk, reader.engine, reader.orig_options, reader._currow)


def _file_on_disk(handle):
    """_on_disk of the file of open() under `handle`'s layers (text, buffer, compressed), or None."""
    for _ in range(4):
        if type(handle).__module__ == "_io" and type(handle).__name__ == "FileIO":
            return _on_disk(handle)
        handle = next((getattr(handle, a) for a in ("buffer", "raw", "_fp", "fileobj") if hasattr(handle, a)), None)
    return None


def _reopen_csv_reader(kind, on_disk, engine, options, row):
    path, name, size, mtime_ns = on_disk
    idioms._as_saved(f"CSV file {path}", path, size, mtime_ns)
    reader = kind(path, engine=engine, **options)
    step = options.get("chunksize") or 10_000
    while reader._currow < row:  # read forward, a chunk at a time, to the row it was at
        at = reader._currow
        reader.read(min(step, row - at))
        if reader._currow == at:
            raise ValueError(f"CSV file {path}: it ends before row {row}, where its reader was")
    return reader


# -- parts of a page BeautifulSoup parsed ---------------------------------------------------------

_PLACES: dict = {}  # id(parent) -> {id(child): index}: rows = table.find_all("tr") costs one pass, not one each


def _place(parent, node) -> int:
    places = _PLACES.get(id(parent))
    i = None if places is None else places.get(id(node))
    if i is None or i >= len(parent.contents) or parent.contents[i] is not node:  # new, or stale
        if len(_PLACES) > 10_000:
            _PLACES.clear()
        places = _PLACES[id(parent)] = {id(child): k for k, child in enumerate(parent.contents)}
        i = places[id(node)]
    return i


def _page_element(element, user_ns):
    path, node = [], element
    while node.parent is not None:
        path.append(_place(node.parent, node))
        node = node.parent
    if not idioms._is_class_of(type(node), "bs4", "BeautifulSoup"):
        return None  # not in a parsed page (made by new_tag, or taken out of it): pickled as it is
    return _element_at, (node, path[::-1], type(element), getattr(element, "name", None), _text(element))


def _text(element):
    return str(element) if isinstance(element, str) else None  # a NavigableString's text; a Tag's is long


def _element_at(page, path, kind, name, text):
    node = page
    for i in path:
        node = node.contents[i] if i < len(getattr(node, "contents", ())) else None
    if node is None or type(node) is not kind or getattr(node, "name", None) != name or _text(node) != text:
        raise ValueError(f"a part of a parsed page ({kind.__name__} {name or text!r}) is not where it was once the "
                         "page was parsed again")
    return node
