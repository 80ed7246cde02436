"""`elastichub localcluster`: run the local cluster in the foreground until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE",
                        help="cluster config (TOML: nodes, tiers, boot delay; see docs/localcluster.md). "
                             "Default: 2 on-prem nodes and a pool of 2 powered-off cloud nodes")
    parser.add_argument("--port", type=int, metavar="N",
                        help="API server port on 127.0.0.1 (0: any free port; default: the config's, else 6443)")
    parser.add_argument("--kubeconfig", metavar="PATH",
                        help="where to write the kubeconfig (default: the config's, "
                             "else ~/.kube/elastichub-localcluster.yaml)")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        help="log level of the cluster's own messages (default: INFO)")


def run(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    from ..cli import UsageError
    from .config import ConfigError, default_config, load_config

    try:
        config = load_config(args.config) if args.config else default_config()
    except ConfigError as e:
        raise UsageError(str(e)) from None
    if args.port is not None:
        if not 0 <= args.port <= 65535:
            raise UsageError(f"--port must be in 0..65535, not {args.port}")
        config = config.replace(port=args.port)
    if args.kubeconfig:
        config = config.replace(kubeconfig=args.kubeconfig)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return asyncio.run(_serve(config))


async def _serve(config) -> int:
    import asyncio
    import signal

    from ..cli import UsageError
    from .cluster import ClusterError, LocalCluster

    cluster = LocalCluster(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # Handlers first: a Ctrl-C while nodes and pods come up still stops the
    # cluster cleanly instead of raising KeyboardInterrupt mid-start.
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    started = False
    try:
        try:
            await cluster.start()
        except ClusterError as e:
            raise UsageError(str(e)) from None
        started = True
        nodes = ", ".join(f"{n.name} ({n.tier})" for n in config.nodes)
        print(f"local cluster ready at {cluster.url}\n  nodes: {nodes}\n"
              f"  export KUBECONFIG={cluster.kubeconfig}\n  stop with Ctrl-C", flush=True)
        await stop.wait()
    finally:
        if started:
            print("stopping: ending every pod process...", flush=True)
        await cluster.stop()  # also undoes a start that failed half-way
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    print("stopped", flush=True)
    return 0
