"""Tests that a memo function serves: a function that keeps what it computed (a cache, a
lazily built singleton) hides the code that computed it from every later call that finds the
entry, so the memo's callers are selected with the code behind it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from guard_core.model import Reason, split_id
from guard_core.ports import EvidenceReader

if TYPE_CHECKING:  # the selection module uses this one
    from guard_core.selection import Selection

_MEMO_HOPS = 3


def select_memoised_callers(
    store: EvidenceReader,
    changed: Sequence[str],
    selection: Selection,
    min_confidence: float,
) -> None:
    """A function that serves results it stored earlier (``memo``) hides the code that
    computed them from every later call that finds the entry, in this test or a later one: a
    change in code it reaches through calls (``changed``: the judged ids) selects every test
    that called it, hit or miss."""
    memo = store.memo_callers(changed, _MEMO_HOPS) if changed else {}
    for e in store.covering_tests(sorted(memo), min_confidence, lines=False):
        selection.add(
            e.test,
            Reason(
                "memoised-caller",
                f"{e.function} may serve what {memo[e.function]} computed",
                e.confidence,
            ),
        )


def select_memo_users(
    store: EvidenceReader,
    readers: Mapping[str, set[str]],
    selection: Selection,
    min_confidence: float,
) -> None:
    """A reader that a memo function calls computed what the memo keeps (a singleton built
    from a module table the first time anyone asks): only the first test ran the reader,
    every later test is served the kept value. The memo's tests are the readers' too. The
    memo is found through calls, or, for a method, as a memo method of its own class or a
    memo function of its module (the calls ``cls._default.setup()``, ``_lexer.setup()``
    name no function the index can resolve)."""
    if not readers:
        return
    memo = store.memo_callers(sorted(readers), _MEMO_HOPS)
    owners = _classes_of(readers)
    by_file = store.functions_of_files({split_id(r)[0] for r in owners}) if owners else {}
    reader_of = {
        fid: reader
        for reader, owner in owners.items()
        for fid in by_file.get(split_id(reader)[0], [])
        if fid != reader and _class_of(fid) in (owner, None)
    }
    for fid, facts in store.function_facts(sorted(reader_of)).items():
        if facts.memo:
            memo.setdefault(fid, reader_of[fid])
    for e in store.covering_tests(sorted(memo), min_confidence, lines=False):
        reader = memo[e.function]
        selection.add(
            e.test,
            Reason(
                "memoised-caller",
                f"{e.function} may serve what {reader} computed from "
                f"{', '.join(sorted(readers[reader]))}",
                e.confidence,
            ),
        )


def _class_of(function_id: str) -> str | None:
    """``file::Class`` of a method id ``file::Class.method``; None for a module function."""
    path, qualname = split_id(function_id)
    owner, dot, _ = qualname.rpartition(".")
    return f"{path}::{owner}" if dot and owner else None


def _classes_of(ids: Iterable[str]) -> dict[str, str]:
    return {fid: owner for fid in ids if (owner := _class_of(fid)) is not None}
