"""The `elastichub` command: one subcommand per module, wired here.

Each subcommand module exposes `add_arguments(parser)` and `run(args) -> int`
and keeps its heavy imports inside `run`, so `elastichub --help` stays fast.
The services (`orchestrator`) are traitlets Applications, as JupyterHub's
are: their arguments go to the Application unparsed.
Bad input raises `UsageError`; it is printed as one line naming the problem,
with exit status 2, never as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__

# name -> (module, one-line help)
SUBCOMMANDS = {
    "demo": (
        "elastichub.demo.cli",
        "the whole system on one machine: a local cluster, JupyterHub, the orchestrator and a class of students",
    ),
    "simulate": (
        "elastichub.simulator.cli",
        "simulate the scaling policy on a workload and report cloud node-hours and waiting times",
    ),
    "trace": (
        "elastichub.simulator.hublog",
        "a trace for `simulate --trace` from JupyterHub's log: the history a hub has before ElasticHub runs",
    ),
    "localcluster": (
        "elastichub.localcluster.cli",
        "run a local Kubernetes cluster (API emulator, scheduler, kubelet, cloud pool) in the foreground",
    ),
    "rbac": (
        "elastichub.orchestrator.rbac",
        "print the Kubernetes roles ElasticHub needs beyond KubeSpawner's, for kubectl apply -f -",
    ),
}
# name -> (module with main(argv) -> int, one-line help): traitlets Applications
APPLICATIONS = {
    "orchestrator": (
        "elastichub.orchestrator.app",
        "run the orchestrator service (the live Tmon/Tcool loop); --help-all lists its settings",
    ),
}


class UsageError(Exception):
    """Bad input from the user (an option, a file): reported in one line."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="elastichub",
        description="ElasticHub: an elastic JupyterHub that bursts to cloud nodes and gives them back.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (_, help_text) in APPLICATIONS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(p)
        p.set_defaults(_run=module.run, _parser=p)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in APPLICATIONS:
        return importlib.import_module(APPLICATIONS[argv[0]][0]).main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except UsageError as e:
        args._parser.exit(2, f"{args._parser.prog}: error: {e}\n")
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
