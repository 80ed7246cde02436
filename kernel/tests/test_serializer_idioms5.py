"""The idioms of idioms6.py, through the serializer and the loader directly."""

import csv
import io

from elastichub_kernel import loader, serializer


def _round_trip(ns):
    dumped = serializer.dump_namespace(ns, list(ns), user_ns=ns)
    assert dumped.failed == {}
    return loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers), {"__name__": "__main__"})


def test_csv_readers_part_way_through_a_file_go_on_from_their_row(tmp_path):
    """`rows = csv.reader(f); header = next(rows)` and a DictReader read
    part-way failed their variable: "cannot pickle '_csv.reader' object"."""
    path = tmp_path / "marks.csv"
    path.write_text('name;mark\n"Ann\nLee";5\nBob;4\nCid;3\n', newline="")
    f = open(path, newline="")
    rows = csv.reader(f, delimiter=";")
    header = next(rows)
    assert next(rows) == ["Ann\nLee", "5"]  # a record over two lines: line_num counts both
    g = open(path, newline="")
    records = csv.DictReader(g, delimiter=";")
    next(records)
    lines = csv.reader(["a,b", "c,'d,e'"], quotechar="'")
    next(lines)
    values, failed, notes = _round_trip({"f": f, "rows": rows, "header": header, "records": records,
                                         "lines": lines, "fresh": csv.reader(io.StringIO("x,y\n"))})
    assert failed == {} and notes == {}
    rows, records = values["rows"], values["records"]
    assert rows.line_num == 3 and rows.dialect.delimiter == ";"
    assert next(rows) == ["Bob", "4"] and rows.line_num == 4
    assert values["f"].readline() == "Cid;3\n"  # the reader reads the restored file itself
    assert records.fieldnames == ["name", "mark"] and records.line_num == 3
    assert list(records) == [{"name": "Bob", "mark": "4"}, {"name": "Cid", "mark": "3"}]
    assert next(values["lines"]) == ["c", "d,e"] and list(values["fresh"]) == [["x", "y"]]
    # a restored reader is saved again as the reader it is
    again, failed, _ = _round_trip({"rows": csv.reader(io.StringIO("p\nq\n"))} | {"back": rows})
    assert failed == {} and again["back"].line_num == 4


def test_csv_writers_write_on_into_their_restored_file(tmp_path):
    path = tmp_path / "out.csv"
    f = open(path, "w", newline="")
    writer = csv.writer(f, delimiter="|", quoting=csv.QUOTE_ALL)
    writer.writerow(["a", 1])
    memory = io.StringIO()
    table = csv.DictWriter(memory, fieldnames=["x", "y"], lineterminator="\n")
    table.writeheader()
    values, failed, notes = _round_trip({"f": f, "writer": writer, "memory": memory, "table": table})
    assert failed == {} and notes == {}
    values["writer"].writerow(["b", 2])
    values["table"].writerow({"x": 1, "y": 2})
    values["f"].close()
    assert path.read_bytes() == b'"a"|"1"\r\n"b"|"2"\r\n'
    assert values["memory"].getvalue() == "x,y\n1,2\n"