"""CSV files as admins hand them over: what a spreadsheet exports.

Traces, calendars and timetables are often edited in a spreadsheet, and in
many locales its "CSV" is split by ';' (the decimal separator being ','),
or saved as tab-separated text, with a byte-order mark: one reading for all.
"""

from __future__ import annotations

import codecs
import csv
import re
from typing import Iterator

_DECIMAL_COMMA = re.compile(r"\s*[-+]?\d+,\d+\s*")
# "3.600" in a file whose decimal separator is ',': 3600 with a thousands
# point, or 3.6 written the other way? Callers refuse it rather than guess.
GROUPED = re.compile(r"\s*[-+]?[1-9]\d{0,2}(\.\d{3})+\s*")


def decode(raw: bytes, name: object) -> str:
    """A CSV file's text: UTF-8 (a byte-order mark is skipped), or UTF-16
    with its mark (a spreadsheet's "Unicode text"). ValueError naming the
    file (`name`) and the line otherwise (a legacy code page's export)."""
    encoding = "utf-16" if raw[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) else "utf-8-sig"
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise ValueError(f"{name} line {line}: not {'UTF-16' if encoding == 'utf-16' else 'UTF-8'} text "
                         f"(byte {raw[e.start]:#04x}): save the file as CSV UTF-8") from None


def delimiter(header: str) -> str:
    """',' unless the header line has none and is split by ';' or tabs."""
    if "," not in header:
        for other in (";", "\t"):
            if other in header:
                return other
    return ","


def csv_rows(text: str) -> Iterator[list[str]]:
    """The rows of a CSV text (BOM already stripped), header first. In a
    file not split by ',', a number written with a decimal comma ("0,5")
    reads as one with a point: that is what the comma meant there."""
    lines = text.splitlines()
    sep = delimiter(lines[0] if lines else "")
    reader = csv.reader(lines, delimiter=sep)
    if sep == ",":
        return reader
    return ([cell.replace(",", ".") if _DECIMAL_COMMA.fullmatch(cell) else cell for cell in row] for row in reader)


def csv_dicts(text: str) -> Iterator[dict]:
    """The rows after the header as dicts by its names, lower-case and
    stripped as a trace's (a spreadsheet's "RAM_GiB" is the same column), as
    csv.DictReader makes them: a missing cell is None, extra cells go under
    None. Rows of blank cells (what a spreadsheet leaves below a table) are
    skipped, as empty lines are."""
    reader = csv_rows(text)
    header = next(reader, None)
    if header is None:
        return
    header = [name.strip().lower() for name in header]
    for row in reader:
        if all(not cell.strip() for cell in row):
            continue
        item = dict(zip(header, row))
        for name in header[len(row):]:
            item[name] = None
        if len(row) > len(header):
            item[None] = row[len(header):]
        yield item
