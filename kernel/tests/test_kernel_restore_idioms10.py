"""Idioms of a twelfth round, checkpointed in one real kernel and restored
in the next."""

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/idioms10.ipynb"

PARSER = r'''
import argparse
parser = argparse.ArgumentParser(description="train a model")
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--debug-dump", help=argparse.SUPPRESS)
parser.add_argument("files", nargs="*")
args = parser.parse_args(["--lr", "0.5", "a.csv"])
'''
PARSER_PROBE = r'''
import json
print("FACTS" + json.dumps([vars(args), vars(parser.parse_args(["b.csv"])), "debug" in parser.format_help()]))
'''


def test_a_parsers_next_parse_args_gives_the_same_namespace(moved, run_cell):
    """After a move, `parser.parse_args([...])` gave Namespace(help='==SUPPRESS==', ...)
    and the help listed the hidden --debug-dump: argparse tests its SUPPRESS by identity."""
    reply, before, kc = moved(SESSION, PARSER, lambda kc: run_cell.facts(kc, PARSER_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    assert before == [{"lr": 0.5, "debug_dump": None, "files": ["a.csv"]},
                      {"lr": 0.1, "debug_dump": None, "files": ["b.csv"]}, False]
    assert run_cell.facts(kc, PARSER_PROBE) == before
