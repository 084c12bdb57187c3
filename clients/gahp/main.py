"""Entry point of `boinc-gahp`, the process HTCondor's gridmanager starts (BOINC_GAHP).

stdout belongs to the protocol alone: the real descriptor is duplicated for the
protocol writer and descriptor 1 is pointed at stderr, so a stray print or a library
writing to stdout can never corrupt a reply line.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from clients.gahp.config import Config, ConfigError, load_config
from clients.gahp.engine import BANNER, Engine, Writer, serve
from clients.gahp.rest import GatewayClient, Project

log = logging.getLogger("clients.gahp")


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="boinc-gahp",
        description="BOINC GAHP server for HTCondor's gridmanager, backed by boinc-gateway.",
    )
    parser.add_argument("--config", help="TOML configuration file (default: see docs)")
    parser.add_argument("--log-file", help="log here instead of stderr")
    parser.add_argument("--log-level", help="DEBUG, INFO, WARNING or ERROR")
    parser.add_argument("--version", action="store_true", help="print the banner and exit")
    return parser.parse_args(argv)


def _setup_logging(config: Config, log_file: str | None, level: str | None) -> None:
    path = log_file or config.log_file
    handler: logging.Handler = (
        logging.FileHandler(path, encoding="utf-8") if path else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(
        logging.Formatter("%(asctime)s boinc-gahp[%(process)d] %(levelname)s %(name)s: %(message)s")
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel((level or config.log_level).upper())
    if root.level > logging.DEBUG:
        # httpx logs every request at INFO; the shim logs what matters itself.
        logging.getLogger("httpx").setLevel(logging.WARNING)


async def _session(engine: Engine, client: GatewayClient) -> int:
    try:
        return await serve(engine, sys.stdin.fileno())
    finally:
        try:
            await asyncio.wait_for(client.aclose(), timeout=2.0)
        except (TimeoutError, OSError) as exc:
            log.debug("closing the HTTP client: %s", exc)


def main(argv: list[str] | None = None) -> None:
    """Run the GAHP server on stdin/stdout until EOF or QUIT."""
    args = _arguments(argv)
    if args.version:
        print(BANNER)
        return
    # Buffered, so a large write to a pipe is never cut short; Writer flushes every line.
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    problem = None
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        # Exiting would put every job on hold with an opaque reason; run on defaults.
        config, problem = Config(), str(exc)
    try:
        _setup_logging(config, args.log_file, args.log_level)
    except (OSError, ValueError) as exc:
        logging.basicConfig(stream=sys.stderr, level=logging.INFO)
        log.error("bad log settings, logging to stderr: %s", exc)
    if problem:
        log.error("%s; using defaults", problem)
    default = Project(config.url, config.token) if config.url and config.token else None
    client = GatewayClient(retries=config.http_retries)
    engine = Engine(Writer(protocol), config, client, project=default)
    loop = asyncio.new_event_loop()
    status = 0
    try:
        status = loop.run_until_complete(_session(engine, client))
    except KeyboardInterrupt:
        status = 130
    logging.shutdown()
    # Work still in flight (uploads, hashing in worker threads) is abandoned on purpose:
    # the gridmanager expects a prompt exit at EOF, and joining threads could take minutes.
    os._exit(status)


if __name__ == "__main__":
    main()
