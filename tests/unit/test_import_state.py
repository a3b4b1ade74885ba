"""Comparing two import probes' results: the names whose state differs, or unknown (None) when
anything but the repository's own globals differs."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from guard_adapters.imports.probe import compare_states

BASE: dict[str, Any] = {
    "state": {
        "pkg.mod": {
            "X": "x1",
            "C": "c1",
            "C.<frame>": "frame1",
            "C.LIMIT": "limit1",
            "C.run": "run1",
            "inst": "inst1",
        },
        "pkg": {"mod": "module"},
    },
    "external": {"json": "j1"},
    "process": {"atexit": "0"},
    "errors": {},
}


def test_the_same_state_changes_no_name() -> None:
    assert compare_states(BASE, copy.deepcopy(BASE)).changed == frozenset()


def test_a_global_that_differs_is_changed() -> None:
    new = copy.deepcopy(BASE)
    new["state"]["pkg.mod"]["X"] = "x2"
    assert compare_states(BASE, new).changed == {"pkg.mod.X"}


def test_a_new_global_is_changed() -> None:
    new = copy.deepcopy(BASE)
    new["state"]["pkg.mod"]["helper"] = "h"
    assert compare_states(BASE, new).changed == {"pkg.mod.helper"}


def test_a_class_whose_member_differs_is_read_through_that_member() -> None:
    new = copy.deepcopy(BASE)
    new["state"]["pkg.mod"] |= {"C": "c2", "C.LIMIT": "limit2", "inst": "inst2"}
    assert compare_states(BASE, new).changed == {"pkg.mod.C.LIMIT", "pkg.mod.inst"}


def test_a_class_whose_frame_differs_is_changed_as_a_whole() -> None:
    new = copy.deepcopy(BASE)
    new["state"]["pkg.mod"] |= {"C": "c2", "C.<frame>": "frame2"}
    assert compare_states(BASE, new).changed == {"pkg.mod.C"}


def test_a_removed_member_is_changed() -> None:
    new = copy.deepcopy(BASE)
    new["state"]["pkg.mod"]["C"] = "c2"
    del new["state"]["pkg.mod"]["C.run"]
    assert compare_states(BASE, new).changed == {"pkg.mod.C.run"}


@pytest.mark.parametrize(
    "part, edit",
    [
        ("errors", {"pkg.mod": "ImportError: gone"}),
        ("external", {"json": "j2"}),
        ("process", {"atexit": "1"}),
        ("external", {"json": "j1", "csv": "c"}),
    ],
    ids=["an-import-fails", "a-dependency-written", "process-state", "another-module-imported"],
)
def test_anything_outside_the_repository_globals_makes_the_state_unknown(
    part: str, edit: dict[str, str]
) -> None:
    new = copy.deepcopy(BASE)
    new[part] = edit
    for old, now in ((BASE, new), (new, BASE)):
        state = compare_states(old, now)
        assert state.changed is None
        assert state.detail


def test_a_module_failing_alike_before_and_after_makes_the_state_unknown() -> None:
    """The tests imported it; the probe could not, so its state was not compared."""
    failing = copy.deepcopy(BASE)
    failing["errors"] = {"pkg.mod": "imported from /site-packages/pkg, outside the repository"}
    assert compare_states(failing, copy.deepcopy(failing)).changed is None
