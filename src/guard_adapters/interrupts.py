"""Ctrl-C held back while a group of graph writes lands, so an interrupted ingest leaves
either the old state or the new one, never half of each."""

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
