"""The idioms of idioms8.py, through the serializer and the loader directly."""

import argparse

from elastichub_kernel import loader, serializer


def _round_trip(ns):
    dumped = serializer.dump_namespace(ns, list(ns), user_ns=ns)
    assert dumped.failed == {}
    return loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers), {"__name__": "__main__"})


def test_argparse_constants_tested_by_identity_are_argparses_own_again():
    """A restored parser's parse_args put help='==SUPPRESS==' in every
    Namespace, and printed a hidden option in its help: argparse tests
    `default is not SUPPRESS`, and pickle gave back an equal string."""
    parser = argparse.ArgumentParser(prog="train", usage=argparse.SUPPRESS)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--secret", help=argparse.SUPPRESS)
    group = parser.add_argument_group("extra", argument_default=argparse.SUPPRESS)
    group.add_argument("--seed", type=int)
    values, failed, notes = _round_trip({"parser": parser, "group": group})
    assert failed == {} and notes == {}
    parser = values["parser"]
    assert vars(parser.parse_args(["--lr", "0.5"])) == {"lr": 0.5, "secret": None}
    assert "--secret" not in parser.format_help() and "--seed" in parser.format_help()
    assert parser.usage is argparse.SUPPRESS and values["group"] in parser._action_groups
