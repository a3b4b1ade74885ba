"""Annotations in the index: a local variable's is never evaluated and reads nothing; every
other one reads its names, even under ``from __future__ import annotations``, which only defers
them (``get_type_hints``, a dataclass-like base or ``singledispatch`` evaluate them by name)
(libcst, no store)."""

from __future__ import annotations

from guard_adapters.index.index import index_file
from guard_adapters.pytest.layout import PytestLayout

LAZY = "from __future__ import annotations\n"
HEAD = "from pkg.client import Client\n\n\n"


def refs(source: str) -> dict[str, set[str]]:
    raw = index_file("pkg/m.py", source.encode(), "pkg.m", PytestLayout(), False)
    return {f.qualname: set(f.refs) for f in raw.file.functions}


def test_a_local_variable_annotation_is_never_read() -> None:
    found = refs(HEAD + "def f():\n    x: Client = 1\n    return x\n")
    assert "pkg.client.Client" not in found["f"]


def test_deferred_annotations_still_read() -> None:
    for head in (LAZY + HEAD, HEAD):
        found = refs(
            head + "class App:\n    client: type[Client] | None = None\n\n"
            "    def make(self, c: Client) -> Client:\n        return c\n\n\n"
            "def view(c: Client) -> None:\n    x: Client = c\n"
        )
        assert "pkg.client.Client" in found["App.<body>"]  # a field and a method's signature
        assert "pkg.client.Client" in found["<module>"]  # view's signature
        assert "pkg.client.Client" not in found["view"]  # its local annotation
