"""Structured logs (structlog): key-value on a terminal, JSON with BGW_LOG_JSON=1."""

from __future__ import annotations

import logging
import sys

import structlog


def configure(level: str = "INFO", json: bool = False) -> None:
    """Configure structlog and the stdlib root logger once per process."""
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    logging.basicConfig(
        level=level.upper(), stream=sys.stderr, format="%(levelname)s %(name)s %(message)s"
    )
    logging.getLogger("uvicorn.access").disabled = True
