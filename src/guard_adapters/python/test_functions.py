"""Which regions of a test module pytest collects as tests, by its own rules."""

from __future__ import annotations

import ast

from guard_adapters.pytest.layout import PytestLayout
from guard_adapters.python.regions import ModuleRegions
from guard_core.index_model import TestNode
from guard_core.model import RegionKind, node_id


def collected_test_ids(path: str, regions: ModuleRegions, layout: PytestLayout) -> dict[str, str]:
    """Region id -> pytest node id, for the regions of ``path`` that may be test functions
    (a class with a base may be a ``unittest.TestCase`` whatever its name)."""
    return {
        node_id(path, t.qualname.replace("::", ".")): t.id
        for t in collected_tests(path, regions, layout, loose=True)
    }


def collected_tests(
    path: str, regions: ModuleRegions, layout: PytestLayout, loose: bool = False
) -> tuple[TestNode, ...]:
    """Test functions by pytest's rules: ``test*`` functions, and ``test*`` methods of
    ``Test*`` classes (nested too) that define no ``__init__``."""
    classes = {r.id: r for r in regions.regions.values() if r.kind is RegionKind.CLASS_BODY}
    with_init = {
        r.parent for r in regions.functions() if r.name == "__init__" and r.parent in classes
    }
    tests = []
    for r in regions.functions():
        if not layout.is_test_function(r.name) or "#" in r.qualname:
            continue
        chain: list[str] = []
        parent = r.parent
        ok = True
        while parent in classes:
            cls = classes[parent]
            maybe_case = loose and isinstance(cls.node, ast.ClassDef) and bool(cls.node.bases)
            if not (layout.is_test_class(cls.name) or maybe_case) or parent in with_init:
                ok = False
                break
            chain.insert(0, cls.name)
            parent = cls.parent
        if not ok or (
            parent
            and parent in regions.regions
            and regions.regions[parent].kind is RegionKind.FUNCTION
        ):
            continue
        qual = "::".join([*chain, r.name])
        tests.append(
            TestNode(
                id=node_id(path, qual),
                file=path,
                name=r.name,
                qualname=qual,
                start=r.start,
                end=r.end,
            )
        )
    return tuple(tests)
