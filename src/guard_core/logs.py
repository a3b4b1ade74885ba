"""Loggers for the library: structlog bound loggers over stdlib ``logging``.

Nothing here configures logging. The ``guard`` stdlib logger has a ``NullHandler``, so a host
that embeds Guard sees nothing unless it asks; the CLI attaches a renderer to stderr. structlog
is imported on the first log call only: it costs a fifth of a second of start-up, and most
``guard check`` runs log nothing.
"""

from __future__ import annotations

import logging
from typing import Any

logging.getLogger("guard").addHandler(logging.NullHandler())


class _LazyLogger:
    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, method: str) -> Any:
        if self._logger is None:
            if not logging.getLogger(self._name).isEnabledFor(logging.CRITICAL):
                return lambda *args, **kwargs: None
            import structlog

            self._logger = structlog.wrap_logger(
                logging.getLogger(self._name),
                processors=[
                    structlog.stdlib.filter_by_level,
                    structlog.stdlib.add_log_level,
                    structlog.stdlib.render_to_log_kwargs,
                ],
                wrapper_class=structlog.stdlib.BoundLogger,
            )
        return getattr(self._logger, method)


def get_logger(name: str) -> Any:
    """A structlog logger writing through ``logging.getLogger(name)`` (name under ``guard.``)."""
    return _LazyLogger(name)
