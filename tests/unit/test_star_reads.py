"""What the index says a module reads through its star imports (libcst, no store)."""

from __future__ import annotations

from guard_adapters.index.index import index_file
from guard_adapters.pytest.layout import PytestLayout


def refs(source: str) -> dict[str, set[str]]:
    raw = index_file("pkg/m.py", source.encode(), "pkg.m", PytestLayout(), False)
    return {f.qualname: set(f.refs) for f in raw.file.functions}


def test_a_star_import_binds_only_names_the_module_leaves_free() -> None:
    found = refs(
        "import os\nfrom pkg.base import *\n\nLIMIT = 2\n\n\n"
        "def f():\n    return helper(LIMIT) + len(os.sep)\n"
    )
    assert {"pkg.base.helper", "pkg.base.len", "pkg.base.os.sep"} <= found["f"]
    assert "pkg.base.*" not in found["f"]  # a name of its own (LIMIT) stays its own
    assert "pkg.base.LIMIT" not in found["f"]


def test_del_of_a_star_bound_name_reads_it() -> None:
    found = refs("from pkg.base import *\n\ndel helper\n")
    assert "pkg.base.helper" in found["<module>"]


def test_code_reading_names_by_computed_keys_reads_every_star_bound_name() -> None:
    found = refs("from pkg.base import *\n\n\ndef pick(name):\n    return globals()[name]\n")
    assert "pkg.base.*" in found["pick"]
