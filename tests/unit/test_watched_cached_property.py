"""The collector's watched ``functools.cached_property``: every context that reads a value is
charged the fill that computed it, however the reads repeat, and a read that an earlier one
in the same context already charged costs no audit event (the collector's audit hook makes
each one a Python call)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from guard_adapters.pytest.memo import _REAL_CACHED_PROPERTY, MemoWatcher
from tests.unit.test_watched_dicts import Contexts


@pytest.fixture
def ctx() -> Contexts:
    return Contexts()


@pytest.fixture
def watcher(ctx: Contexts) -> Iterator[MemoWatcher]:
    memo = MemoWatcher(ctx.switch, ctx, lambda filename: filename == __file__)
    memo.install()
    try:
        yield memo
    finally:
        memo.uninstall()


def make_class(watcher: MemoWatcher) -> Any:
    class Config:
        def __init__(self, scale: int) -> None:
            self.scale = scale

        @functools.cached_property  # the watched one: installed by the fixture
        def size(self) -> int:
            return self.scale * 10

    assert type(Config.__dict__["size"]) is not _REAL_CACHED_PROPERTY
    return Config


def fills(watcher: MemoWatcher, reader: str) -> set[str]:
    return {label.rpartition("@")[2] for label in watcher.consumed[reader]}


def test_each_later_reader_is_charged_the_fill_of_the_value_it_read(
    watcher: MemoWatcher, ctx: Contexts
) -> None:
    config = make_class(watcher)
    first, second = config(1), config(2)
    assert first.size == 10  # filled in test_a
    ctx.switch("test_c")
    assert second.size == 20  # filled in test_c
    ctx.switch("test_b")
    for _ in range(3):  # the repeats take the short way: the charge must already be there
        assert first.size == 10
    assert fills(watcher, "test_b") == {"test_a"}
    ctx.switch("test_d")
    assert first.size == 10
    assert fills(watcher, "test_d") == {"test_a"}


def test_a_value_set_by_hand_after_a_charged_read_charges_every_fill(
    watcher: MemoWatcher, ctx: Contexts
) -> None:
    config = make_class(watcher)
    first, second = config(1), config(2)
    assert first.size == 10
    ctx.switch("test_c")
    assert second.size == 20
    ctx.switch("test_b")
    assert first.size == 10
    first.__dict__["size"] = 99  # not the fill's value any more: which fill made it is unknown
    assert first.size == 99
    assert fills(watcher, "test_b") == {"test_a", "test_c"}


def test_a_value_computed_again_is_charged_as_its_new_fill(
    watcher: MemoWatcher, ctx: Contexts
) -> None:
    config = make_class(watcher)
    item = config(1)
    assert item.size == 10  # test_a's fill
    ctx.switch("test_b")
    assert item.size == 10
    ctx.switch("test_c")
    item.__dict__.pop("size")  # the cache emptied behind the descriptor's back
    item.scale = 3
    assert item.size == 30  # test_c's fill
    ctx.switch("test_b")
    assert item.size == 30
    assert fills(watcher, "test_b") == {"test_a", "test_c"}
    ctx.switch("test_d")
    del item.size
    ctx.switch("test_e")
    assert item.size == 30  # test_e's own fill
    ctx.switch("test_f")
    assert item.size == 30
    assert fills(watcher, "test_f") == {"test_e"}


_events: list[str] = []
_counting: list[bool] = [False]


def _count(event: str, args: tuple[Any, ...]) -> None:
    if _counting[0]:
        _events.append(event)


def test_a_read_already_charged_in_its_context_raises_no_audit_event(
    watcher: MemoWatcher, ctx: Contexts
) -> None:
    if _count not in getattr(sys, "_guard_test_hooks", ()):
        sys.addaudithook(_count)  # a hook stays for the process: it counts only when asked
        sys._guard_test_hooks = (_count,)  # type: ignore[attr-defined]
    config = make_class(watcher)
    item = config(1)
    assert item.size == 10
    ctx.switch("test_b")
    assert item.size == 10
    _events.clear()
    _counting[0] = True
    try:
        for _ in range(100):
            assert item.size == 10
    finally:
        _counting[0] = False
    assert _events == []
