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
    "outside": ["json"],
    "external": {"json:dumps": "j1"},
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
        ("external", {"json:dumps": "j2"}),
        ("process", {"atexit": "1"}),
        ("outside", ["csv", "json"]),
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


def test_what_differs_between_two_imports_of_the_same_code_is_noise() -> None:
    new = copy.deepcopy(BASE)
    new["external"]["json:dumps"] = "j2"
    assert compare_states(BASE, new, noise={"external json:dumps"}).changed == frozenset()
    assert compare_states(BASE, new, noise={"external json:loads"}).changed is None


def test_a_name_set_on_one_side_only_is_never_noise() -> None:
    new = copy.deepcopy(BASE)
    new["external"]["json:cache"] = "j2"
    assert compare_states(BASE, new, noise={"external json:cache"}).changed is None
    assert compare_states(new, BASE, noise={"external json:cache"}).changed is None


def test_a_module_imported_from_elsewhere_makes_the_state_unknown() -> None:
    """The tests imported the repository's file; the probe found another one."""
    failing = copy.deepcopy(BASE)
    failing["errors"] = {"pkg.mod": "was imported from /site-packages/pkg, outside the repository"}
    assert compare_states(failing, copy.deepcopy(failing)).changed is None


def test_a_module_failing_alike_before_and_after_is_compared_without_it() -> None:
    """A test expects it to fail: its body counts as run only in part (the digest leaves it
    out of ``ran``), so what it would have read stays everyone's."""
    failing = copy.deepcopy(BASE)
    failing["errors"] = {"pkg.broken": "ImportError: expected"}
    new = copy.deepcopy(failing)
    new["state"]["pkg.mod"]["X"] = "x2"
    assert compare_states(failing, new).changed == {"pkg.mod.X"}


def test_a_readable_state_is_needed() -> None:
    unreadable = copy.deepcopy(BASE)
    unreadable["unreadable"] = ["werkzeug.local.LocalProxy"]
    assert compare_states(BASE, unreadable).changed is None


def test_the_modules_pytests_rewriter_rewrote_differ_only_in_the_changed_files() -> None:
    """The base's import gets a changed test module's text past pytest's assertion rewriter:
    that module is rewritten on one side only. Any other module rewritten on one side only
    (an import now ahead of its ``register_assert_rewrite``) runs other assertions."""
    old = {**copy.deepcopy(BASE), "rewritten": ["/r/tests/test_a.py"]}
    new = {**copy.deepcopy(BASE), "rewritten": ["/r/tests/test_a.py", "/r/tests/test_b.py"]}
    assert compare_states(old, new, served={"/r/tests/test_b.py"}).changed == frozenset()
    unknown = compare_states(old, new, served={"/r/pkg/__init__.py"})
    assert unknown.changed is None and "rewriter" in unknown.detail
