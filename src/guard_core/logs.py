"""Loggers for the library: structlog bound loggers over stdlib ``logging``.

Nothing here configures logging. The ``guard`` stdlib logger has a ``NullHandler``, so a host
that embeds Guard sees nothing unless it asks; the CLI attaches a renderer to stderr.
"""

from __future__ import annotations

import logging
from typing import Any

import structlog

logging.getLogger("guard").addHandler(logging.NullHandler())


def get_logger(name: str) -> Any:
    """A structlog logger writing through ``logging.getLogger(name)`` (name under ``guard.``)."""
    return structlog.wrap_logger(
        logging.getLogger(name),
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.stdlib.add_log_level,
            structlog.stdlib.render_to_log_kwargs,
        ],
        wrapper_class=structlog.stdlib.BoundLogger,
    )
