"""Dotted module names of repository files, as Python imports them."""

from __future__ import annotations

from pathlib import Path

from guard_adapters.python.modules import module_name


def test_a_folder_without_init_inside_a_package_is_a_namespace_subpackage(tmp_path: Path) -> None:
    for path in ("src/pkg/__init__.py", "src/pkg/sansio/app.py", "tests/test_a.py",
                 "tests/apps/cli/__init__.py", "tests/apps/cli/app.py"):  # fmt: skip
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    assert module_name(tmp_path, "src/pkg/sansio/app.py") == "pkg.sansio.app"
    assert module_name(tmp_path, "src/pkg/__init__.py") == "pkg"
    assert module_name(tmp_path, "tests/test_a.py") == "test_a"  # pytest's rootdir insertion
    assert module_name(tmp_path, "tests/apps/cli/app.py") == "cli.app"
