"""`elastichub demo`: the whole system on one machine.

A local cluster, JupyterHub configured by `jupyterhub_config_example.py`
(ElasticSpawner, configurable-http-proxy, the orchestrator as a managed
service), and a class of simulated students: a burst that needs a cloud VM,
then most students leave and the orchestrator moves the rest back on-prem
with their kernel state. Exit status 1 if any moved student's state differs.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--students", type=int, default=10, metavar="N",
                        help="students in the class (default 10: more than the on-prem nodes hold; "
                             "at most 16: what all the nodes hold)")
    parser.add_argument("--stay", type=int, default=4, metavar="N",
                        help="students still working when the class ends (default 4)")
    parser.add_argument("--json", action="store_true",
                        help="print the summary as one JSON object (the live view goes to stderr)")
    parser.add_argument("--interactive", action="store_true",
                        help="keep the hub running after the class, for a person to log in; Ctrl-C ends it")
    parser.add_argument("--port", type=int, default=0, metavar="N",
                        help="the hub's port on 127.0.0.1 (default: any free port; --interactive: 8000)")
    parser.add_argument("--boot-delay", type=float, default=5.0, metavar="S",
                        help="seconds a cloud VM takes to boot (default 5; the paper measured 290)")
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="the hub config to run (default: the repository's jupyterhub_config_example.py)")
    parser.add_argument("--workdir", type=Path, metavar="DIR",
                        help="keep the hub's files and logs here (default: a temporary directory, removed); "
                             "one demo at a time per directory, and the history grows run after run")


def run(args: argparse.Namespace) -> int:
    import asyncio
    import math

    from ..cli import UsageError
    from .play import DemoSettings, play
    from .stage import EXAMPLE_CONFIG, EXAMPLE_CONFIG_SERVERS

    if args.students < 1 or not 0 <= args.stay <= args.students:
        raise UsageError("--students must be >= 1 and --stay between 0 and --students")
    if args.config is None and args.students > EXAMPLE_CONFIG_SERVERS:
        # the rest waited for a server that could never start, and the demo failed minutes later
        raise UsageError(f"--students {args.students}: the demo's cluster holds {EXAMPLE_CONFIG_SERVERS} servers "
                         f"(2 on-prem and 2 cloud nodes, 4 each): give at most {EXAMPLE_CONFIG_SERVERS}")
    if not 0 <= args.boot_delay < math.inf:  # nan fails too: a cloud VM that never boots hangs the class
        raise UsageError("--boot-delay must be a number of seconds >= 0")
    if not 0 <= args.port <= 65535:  # else the hub failed to bind and the demo waited 90 s for it
        raise UsageError(f"--port {args.port}: not a port (0-65535; 0: any free port)")
    if args.config is not None and args.config.is_dir():
        raise UsageError(f"--config {args.config}: is a directory, not a hub config file")
    if args.config is not None and not args.config.is_file():
        raise UsageError(f"--config {args.config}: no such file")
    port = args.port or (8000 if args.interactive else 0)
    # The hub runs in the work directory: paths given relative to here are made absolute
    settings = DemoSettings(students=args.students, stay=args.stay, json=args.json, interactive=args.interactive,
                            port=port, boot_delay=args.boot_delay,
                            config=args.config.resolve() if args.config else EXAMPLE_CONFIG,
                            workdir=args.workdir.resolve() if args.workdir else None)
    return asyncio.run(play(settings))
