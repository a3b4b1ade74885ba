"""Logging set-up for the CLI only: the library itself never configures logging."""

from __future__ import annotations

import logging
import sys


class _RenderingHandler(logging.StreamHandler):  # type: ignore[type-arg,unused-ignore]
    """Renders with structlog to stderr; structlog is imported at the first record only."""

    def __init__(self, fmt: str) -> None:
        super().__init__(sys.stderr)
        self._fmt = fmt
        self._ready = False

    def emit(self, record: logging.LogRecord) -> None:
        if not self._ready:
            import structlog

            renderer: structlog.types.Processor = (
                structlog.processors.JSONRenderer()
                if self._fmt == "json"
                else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
            )
            self.setFormatter(
                structlog.stdlib.ProcessorFormatter(
                    processor=renderer,
                    foreign_pre_chain=[
                        structlog.stdlib.add_log_level,
                        structlog.processors.TimeStamper(fmt="iso"),
                        structlog.stdlib.ExtraAdder(),
                    ],
                )
            )
            self._ready = True
        super().emit(record)


def configure(fmt: str = "console", verbose: int = 0) -> None:
    """Render the ``guard`` loggers to stderr (stdout belongs to --json and hook protocols)."""
    logger = logging.getLogger("guard")
    logger.handlers = [h for h in logger.handlers if isinstance(h, logging.NullHandler)]
    logger.addHandler(_RenderingHandler(fmt))
    logger.setLevel(logging.WARNING - 10 * min(verbose, 2))
