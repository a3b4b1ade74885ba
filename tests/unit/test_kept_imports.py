"""The base's imports kept on disk between processes (guard_adapters.imports.kept): only the
key's own file is ever read back, and a bad file keeps nothing."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from guard_adapters.imports.kept import KeptImports
from guard_adapters.imports.probe import SubprocessImportProbe

RUN = {"state": {"pkg": {"X": "int:1"}}, "errors": {}}


def test_a_later_process_reads_back_what_was_kept_under_that_key_only(tmp_path: Path) -> None:
    KeptImports(tmp_path).keep("base-a", RUN, {"external m:T"})
    later = KeptImports(tmp_path)
    assert later.run("base-a") == RUN
    assert later.noise("base-a") == {"external m:T"}
    assert later.run("base-b") is None
    KeptImports(tmp_path).keep("base-b", RUN, None)
    assert KeptImports(tmp_path).noise("base-b") is None  # not learnt is not "none varies"


def test_a_file_that_is_not_the_keys_keeps_nothing(tmp_path: Path) -> None:
    KeptImports(tmp_path).keep("base-a", RUN, set())
    (file,) = tmp_path.glob("*.json")
    file.write_text("{not json")
    assert KeptImports(tmp_path).run("base-a") is None
    file.write_text('{"key": "base-other", "run": {"state": {}}}')
    assert KeptImports(tmp_path).run("base-a") is None


def test_only_the_newest_files_are_kept(tmp_path: Path) -> None:
    kept = KeptImports(tmp_path, limit=2)
    for at, key in enumerate(("one", "two"), start=1):  # written long ago, in that order
        kept.keep(key, RUN, None)
        written = max(tmp_path.glob("*.json"), key=lambda f: f.stat().st_mtime_ns)
        os.utime(written, (at, at))
    kept.keep("three", RUN, None)
    later = KeptImports(tmp_path, limit=2)
    assert len(list(tmp_path.glob("*.json"))) == 2
    assert later.run("one") is None
    assert later.run("two") == later.run("three") == RUN


def test_a_folder_that_cannot_be_written_keeps_in_memory(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    kept = KeptImports(blocked / "imports")  # under a file: never a folder
    kept.keep("base-a", RUN, None)
    assert kept.run("base-a") == RUN


def test_only_the_kept_files_are_ever_removed(tmp_path: Path) -> None:
    (tmp_path / "notes.json").write_text("{}")  # a shared state folder's other files
    kept = KeptImports(tmp_path, limit=1)
    for key in ("one", "two"):
        kept.keep(key, RUN, None)
    assert (tmp_path / "notes.json").exists()
    assert len(list(tmp_path.glob("*.json"))) == 2


def test_the_base_noise_is_learnt_from_two_imports_of_one_check(tmp_path: Path) -> None:
    """A base kept by an earlier process without what varies in it: both the base's imports
    run in this check, since what differs from an import days old is no noise."""
    probe = SubprocessImportProbe(tmp_path, sys.executable, kept=tmp_path / "kept")
    KeptImports(tmp_path / "kept").keep("base", RUN, None)
    jobs = [name for _, name, _ in probe._agains("", "base", {}, old_now=False)]
    assert jobs == ["again", "old-again", "old"]
    assert [name for _, name, _ in probe._agains("", "base", {}, old_now=True)] == [
        "again",
        "old-again",
    ]
