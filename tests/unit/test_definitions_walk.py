"""The decorator scan finds every def and class however deeply statements nest them."""

from __future__ import annotations

import ast

from guard_adapters.python.decorators import _definitions

SOURCE = """
@deco
def top(): pass

if X:
    @a
    def in_if(): pass
else:
    class InElse:
        @b
        def method(self):
            @c
            def inner(): pass
try:
    def in_try(): pass
except E:
    def in_except(): pass
else:
    def in_try_else(): pass
finally:
    def in_finally(): pass
with ctx():
    async def in_with(): pass
for i in x:
    pass
else:
    def in_for_else(): pass
while y:
    def in_while(): pass
match v:
    case 1:
        def in_case(): pass
f = lambda: 0
"""


def test_every_definition_is_found() -> None:
    tree = ast.parse(SOURCE)
    expected = {
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    assert {n.name for n in _definitions(tree.body)} == expected
    assert len(expected) == 13
