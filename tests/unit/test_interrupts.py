"""Ctrl-C during a group of writes: the group finishes, then the interrupt is raised."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from guard_adapters.interrupts import interrupts_deferred


def test_an_interrupt_inside_the_block_is_raised_after_the_block_ends() -> None:
    before = signal.getsignal(signal.SIGINT)
    done: list[str] = []
    with pytest.raises(KeyboardInterrupt), interrupts_deferred():
        os.kill(os.getpid(), signal.SIGINT)
        done.append("first write")
        done.append("last write")
    assert done == ["first write", "last write"]
    assert signal.getsignal(signal.SIGINT) is before


def test_without_an_interrupt_the_block_runs_and_nothing_is_raised() -> None:
    before = signal.getsignal(signal.SIGINT)
    with interrupts_deferred():
        pass
    assert signal.getsignal(signal.SIGINT) is before


def test_an_error_inside_the_block_propagates_and_restores_the_handler() -> None:
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(ValueError), interrupts_deferred():
        raise ValueError("write failed")
    assert signal.getsignal(signal.SIGINT) is before


def test_outside_the_main_thread_the_block_still_runs() -> None:
    ran: list[bool] = []

    def work() -> None:
        with interrupts_deferred():
            ran.append(True)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert ran == [True]
