"""Ctrl-C held back while a group of graph writes lands, so an interrupted ingest leaves
either the old state or the new one, never half of each; and a Ctrl-C told from the
exception Python wrapped it in. Standard library only: the entry point imports it first."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Run the block to its end even if SIGINT arrives, then raise ``KeyboardInterrupt``.

    Outside the main thread (where Python cannot change signal handlers) the block runs as
    it is: a handler installed there would not be called anyway."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def remember(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    previous: Any = signal.signal(signal.SIGINT, remember)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        raise KeyboardInterrupt


def interrupted(exc: BaseException) -> bool:
    """Whether a Ctrl-C caused ``exc``: Python wraps one that lands in some places (a class
    body's ``__set_name__`` while a module imports) in another exception."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
