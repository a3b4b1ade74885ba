"""Agent-integrity checks on test files: did an edit make the suite pass by changing the tests?

Flags deleted tests, new skip/xfail marks, and test functions that lost assertions or now
assert a constant. They do not change the selection; they are shown to a human.
"""

from __future__ import annotations

import ast

from guard_core.model import IntegrityFlag

_SKIPS = {"skip", "skipif", "xfail", "skipIf", "skipUnless", "expectedFailure", "importorskip"}
_CHECKS = {"raises", "warns", "approx", "fail"}


def _tests(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    out: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
                "test"
            ):
                out[prefix + node.name] = node
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                visit(node.body, f"{prefix}{node.name}.")

    visit(tree.body, "")
    return out


def _skip_marks(node: ast.AST) -> int:
    return sum(
        (isinstance(n, ast.Attribute) and n.attr in _SKIPS)
        or (isinstance(n, ast.Name) and n.id in _SKIPS)
        for n in ast.walk(node)
    )


def _assertions(node: ast.AST) -> int:
    """``assert`` statements, ``self.assert*`` calls and pytest's raises/warns/approx/fail."""
    count = 0
    for n in ast.walk(node):
        if isinstance(n, ast.Assert):
            count += 1
        elif isinstance(n, ast.Call):
            name = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
            count += name.startswith("assert") or name in _CHECKS
    return count


def _trivial(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Assert) and isinstance(n.test, ast.Constant) and n.test.value
        for n in ast.walk(node)
    )


def _parse(data: bytes | None) -> ast.Module | None:
    if data is None:
        return None
    try:
        return ast.parse(data)
    except (SyntaxError, ValueError):
        return None


def integrity_flags(path: str, old: bytes | None, new: bytes | None) -> list[IntegrityFlag]:
    """What a change to the test file ``path`` did to its tests (old/new None: absent)."""
    before, after = _parse(old), _parse(new)
    if before is None:
        return []
    if after is None and new is not None:
        return []  # unparsable: the slicer reports that and the decision is run-all anyway
    old_tests = _tests(before)
    new_tests = _tests(after) if after is not None else {}
    flags = []
    removed = sorted(set(old_tests) - set(new_tests))
    if removed:
        flags.append(
            IntegrityFlag(
                path, "tests-removed", f"{len(removed)} test(s) removed: {', '.join(removed[:5])}"
            )
        )
    if after is None:
        return flags
    skipped = [
        n
        for n, f in new_tests.items()
        if _skip_marks(f) > (_skip_marks(old_tests[n]) if n in old_tests else 0)
    ]
    if skipped:
        flags.append(
            IntegrityFlag(path, "skip-added", f"skip/xfail added to {', '.join(skipped[:5])}")
        )
    elif _skip_marks(after) > _skip_marks(before):
        flags.append(IntegrityFlag(path, "skip-added", "a skip/xfail mark added at module level"))
    weakened = [
        n
        for n, f in new_tests.items()
        if n in old_tests
        and (
            _assertions(f) < _assertions(old_tests[n])
            or (_trivial(f) and not _trivial(old_tests[n]))
        )
    ]
    if weakened:
        flags.append(
            IntegrityFlag(
                path,
                "assertions-weakened",
                f"fewer or trivial assertions in {', '.join(weakened[:5])}",
            )
        )
    return flags
