"""A notebook's ``sqlite3`` connections, cursors and rows, saved from their
parts (hooked into `idioms.reduce_for`, same shape: a reduce per type and
its rebuild). A database in memory (a SQL
course's tables) is saved whole (``Connection.serialize``), a database
file is opened again (never created: a file gone fails the variable by
name), attached databases too, with the connection's settings. What a
connection cannot tell (functions, collations, ``detect_types``),
uncommitted changes of a file and temporary tables are said in the
restore report; a cursor comes back as a new one on its connection.

Checkpoints written before this module was split out of idioms.py name its
rebuilds there: idioms.py keeps those names.
"""

from __future__ import annotations

import pickle

from . import idioms


def _sqlite_state(conn):
    import sqlite3

    try:
        schemas = conn.execute("PRAGMA database_list").fetchall()
    except sqlite3.ProgrammingError as exc:
        if "closed" in str(exc):
            return None
        raise
    databases, temp_tables = [], 0
    for _, schema, path in schemas:  # main first
        if schema == "temp":
            temp_tables = conn.execute("SELECT count(*) FROM temp.sqlite_master WHERE type = 'table'").fetchone()[0]
        elif path:
            databases.append((schema, path, None))
        else:  # in memory: the database is its content, written out of band (no copy in the pickle)
            databases.append((schema, None, pickle.PickleBuffer(conn.serialize(name=schema))))
    settings = {"isolation_level": conn.isolation_level, "row_factory": conn.row_factory,
                "text_factory": conn.text_factory}
    autocommit = getattr(conn, "autocommit", None)  # Python 3.12+
    if autocommit is not None and autocommit != getattr(sqlite3, "LEGACY_TRANSACTION_CONTROL", None):
        settings["autocommit"] = autocommit
    return {"databases": databases, "settings": settings, "in_transaction": conn.in_transaction,
            "temp_tables": temp_tables}


def _sqlite_connection(conn, user_ns):
    state = idioms.on_cells_thread(lambda: _sqlite_state(conn))
    attrs = getattr(conn, "__dict__", None)  # a factory class of the notebook's
    return _reconnect, (type(conn), state), dict(attrs) if attrs else None, None, None, idioms._set_attrs


def _reconnect(kind, state):
    return idioms.on_cells_thread(lambda: _connect(kind, state))  # a live move's delta is applied on the control thread


def _connect(kind, state):
    import sqlite3

    if state is None:  # closed when saved: closed again
        conn = sqlite3.connect(":memory:", factory=kind)
        conn.close()
        return conn
    (_, path, image), *attached = state["databases"]
    try:
        conn = sqlite3.connect(":memory:" if path is None else _file_uri(path), uri=True, factory=kind)
    except sqlite3.Error as exc:
        raise ValueError(f"sqlite3 database {path}: the file cannot be opened ({exc})") from None
    if image is not None:
        conn.deserialize(image)
    for schema, path, image in attached:
        name = '"' + schema.replace('"', '""') + '"'
        try:
            conn.execute(f"ATTACH DATABASE ? AS {name}", (":memory:" if path is None else _file_uri(path),))
        except sqlite3.Error as exc:
            raise ValueError(f"sqlite3 database {path} (attached as {schema}): the file cannot be opened "
                             f"({exc})") from None
        if image is not None:
            conn.deserialize(image, name=schema)
    for name, value in state["settings"].items():  # isolation_level before autocommit
        setattr(conn, name, value)
    files = [path for _, path, _ in state["databases"] if path]
    places = ", ".join(path or "in memory" for _, path, _ in state["databases"])
    said = [f"the sqlite3 connection is open again ({places}); functions, "
            "collations and detect_types set on it are not carried: make those calls again if you made any"]
    if state["in_transaction"]:
        if files:
            said.append("changes it had not committed to a file are lost")
        if len(files) < len(state["databases"]):
            said.append("its open transaction in memory comes back committed")
    if state["temp_tables"]:
        said.append(f"its {state['temp_tables']} temporary table(s) are not carried")
    idioms._note("; ".join(said))
    return conn


def _file_uri(path: str) -> str:
    from urllib.parse import quote

    return f"file:{quote(path)}?mode=rw"  # rw: a file gone is an error, never a new empty database


def _cursor_state(cur):
    return cur.row_factory, cur.arraysize, cur.description is not None


def _sqlite_cursor(cur, user_ns):
    row_factory, arraysize, had_rows = idioms.on_cells_thread(lambda: _cursor_state(cur))
    return _new_cursor, (cur.connection, row_factory, arraysize, had_rows)


def _new_cursor(conn, row_factory, arraysize, had_rows):
    return idioms.on_cells_thread(lambda: _cursor(conn, row_factory, arraysize, had_rows))


def _cursor(conn, row_factory, arraysize, had_rows):
    import sqlite3

    try:
        cur = conn.cursor()
    except sqlite3.ProgrammingError:  # its connection was closed
        spare = sqlite3.connect(":memory:")
        cur = spare.cursor()
        spare.close()
    cur.row_factory, cur.arraysize = row_factory, arraysize
    if had_rows:
        idioms._note("a new cursor on the same connection: rows of its last query not fetched yet are not carried")
    return cur


def _sqlite_row(row, user_ns):
    keys = row.keys()
    return (_rebuild_row, (tuple(keys), tuple(row))) if keys else None


def _rebuild_row(keys, values):
    import sqlite3

    # A Row takes its column names from a cursor's description: any query
    # with those names gives one.
    conn = sqlite3.connect(":memory:")
    try:
        cursor = conn.execute("SELECT " + ", ".join('NULL AS "' + k.replace('"', '""') + '"' for k in keys))
        return sqlite3.Row(cursor, values)
    finally:
        conn.close()
