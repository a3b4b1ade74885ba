"""Dotted module names of repository files, as Python imports them."""

from __future__ import annotations

import textwrap
from pathlib import Path

from guard_adapters.python.modules import from_imports, module_name, star_import_breaks
from guard_adapters.python.regions import extract_regions


def test_a_folder_without_init_inside_a_package_is_a_namespace_subpackage(tmp_path: Path) -> None:
    for path in ("src/pkg/__init__.py", "src/pkg/sansio/app.py", "tests/test_a.py",
                 "tests/apps/cli/__init__.py", "tests/apps/cli/app.py"):  # fmt: skip
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    assert module_name(tmp_path, "src/pkg/sansio/app.py") == "pkg.sansio.app"
    assert module_name(tmp_path, "src/pkg/__init__.py") == "pkg"
    assert module_name(tmp_path, "tests/test_a.py") == "test_a"  # pytest's rootdir insertion
    assert module_name(tmp_path, "tests/apps/cli/app.py") == "cli.app"


def test_imports_by_name_are_found_wherever_a_statement_can_hold_them() -> None:
    source = textwrap.dedent(
        """\
        from a import top
        try:
            from b import in_try
        except ImportError:
            from c import in_handler
        else:
            from d import in_else
        finally:
            from e import in_finally
        def f():
            if x:
                from .sibling import in_function
        class K:
            with ctx():
                from f import in_with
        match y:
            case 1:
                from g import in_case
        """
    )
    found = from_imports(extract_regions("pkg/mod.py", source), "pkg.mod")
    assert found == {
        "a.top", "b.in_try", "c.in_handler", "d.in_else", "e.in_finally",
        "pkg.sibling.in_function", "f.in_with", "g.in_case",
    }  # fmt: skip


def test_a_module_without_all_never_breaks_a_star_import_but_an_unbound_export_does() -> None:
    assert not star_import_breaks(extract_regions("m.py", "x = 1\n"))
    assert star_import_breaks(extract_regions("m.py", "__all__ = ['gone']\n"))
    assert star_import_breaks(extract_regions("m.py", "x = 1\n__all__ = ['x']\n__all__ += ['y']\n"))
    assert not star_import_breaks(extract_regions("m.py", "x = 1\n__all__ = ['x']\n"))
