"""CSV files as admins hand them over: what a spreadsheet exports.

Traces, calendars and timetables are often edited in a spreadsheet, and in
many locales its "CSV" is split by ';' (the decimal separator being ',') or
saved as tab-separated text, with a byte-order mark: one reading for all.
"""

from __future__ import annotations

import csv
from typing import Iterator


def delimiter(header: str) -> str:
    """',' unless the header line has none and is split by ';' or tabs."""
    if "," not in header:
        for other in (";", "\t"):
            if other in header:
                return other
    return ","


def dict_rows(text: str) -> Iterator[dict]:
    """The rows of a CSV text (BOM already stripped) as dicts by header name."""
    lines = text.splitlines()
    return csv.DictReader(lines, delimiter=delimiter(lines[0] if lines else ""))
