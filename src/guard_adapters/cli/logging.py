"""Logging set-up for the CLI only: the library itself never configures logging."""

from __future__ import annotations

import logging
import sys

import structlog


def configure(fmt: str = "console", verbose: int = 0) -> None:
    """Render the ``guard`` loggers to stderr (stdout belongs to --json and hook protocols)."""
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processor=renderer,
            foreign_pre_chain=[
                structlog.stdlib.add_log_level,
                structlog.processors.TimeStamper(fmt="iso"),
                structlog.stdlib.ExtraAdder(),
            ],
        )
    )
    logger = logging.getLogger("guard")
    logger.handlers = [h for h in logger.handlers if isinstance(h, logging.NullHandler)]
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING - 10 * min(verbose, 2))
