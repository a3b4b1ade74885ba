"""Generate the frozen edits of ``split.json`` from the prepared targets, reproducibly (seeded).

Run once: ``python -m evals generate``; the result is committed. Every edit is a real change
an agent could make (see ``edits.KINDS``); whether it breaks a test is decided later, by
running the whole suite with it applied.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from evals.edits import Edit
from evals.targets import Prepared, git

Change = tuple[str, dict[str, str]]  # (description, {path: new text})
FLIP = {
    ast.Eq: "!=",
    ast.NotEq: "==",
    ast.Lt: ">=",
    ast.GtE: "<",
    ast.Gt: "<=",
    ast.LtE: ">",
    ast.Is: "is not",
    ast.IsNot: "is",
    ast.In: "not in",
    ast.NotIn: "in",
}
PER_KIND = 3
# top-up order, after fewest-so-far: the kinds the precision issue measures first
TOP_UP = (
    "multi-file",
    "test-file",
    "harmless",
    "rename",
    "signature",
    "decorator",
    "module-constant",
    "hierarchy-method",
    "new-helper",
    "data-file",
    "negate-condition",
    "flip-comparison",
    "change-constant",
    "return-none",
    "drop-statement",
)


class Source:
    """One Python file: its text, tree, and byte-exact replacement by ast positions."""

    def __init__(self, path: str, text: str) -> None:
        self.path, self.text = path, text
        self.tree = ast.parse(text)
        self.raw = text.encode()
        self.starts = [0]
        for line in self.raw.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))
        self.parents = {c: p for p in ast.walk(self.tree) for c in ast.iter_child_nodes(p)}

    def span(self, node: ast.AST) -> tuple[int, int]:
        where: Any = node  # every node handled here (expressions, statements) has a position
        return (
            self.starts[where.lineno - 1] + where.col_offset,
            self.starts[where.end_lineno - 1] + where.end_col_offset,
        )

    def segment(self, node: ast.AST) -> str:
        a, b = self.span(node)
        return self.raw[a:b].decode()

    def replace(self, start: int, end: int, new: str) -> str:
        return (self.raw[:start] + new.encode() + self.raw[end:]).decode()

    def functions(
        self,
    ) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.ClassDef | None]]:
        for node in self.tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield node, None
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        yield item, node

    def inside(self, predicate: Callable[[ast.AST], bool]) -> Iterator[tuple[ast.AST, str]]:
        """Nodes in function bodies matching ``predicate``, with the function's qualname."""
        for fn, cls in self.functions():
            qual = f"{cls.name}.{fn.name}" if cls else fn.name
            for stmt in fn.body:
                for node in ast.walk(stmt):
                    if predicate(node):
                        yield node, qual


def _docstring(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    parent = parents.get(node)
    return (
        isinstance(parent, ast.Expr)
        and isinstance(node, ast.Constant)
        and isinstance(node.value, str)
    )


def negate_condition(src: Source) -> Iterator[Change]:
    for node, qual in src.inside(lambda n: isinstance(n, ast.If | ast.While)):
        a, b = src.span(node.test)  # type: ignore[attr-defined]
        yield (
            f"negate a condition in {qual}",
            {src.path: src.replace(a, b, f"not ({src.segment(node.test)})")},  # type: ignore[attr-defined]
        )


def flip_comparison(src: Source) -> Iterator[Change]:
    def single(n: ast.AST) -> bool:
        return isinstance(n, ast.Compare) and len(n.ops) == 1 and type(n.ops[0]) in FLIP

    for node, qual in src.inside(single):
        yield (f"flip a comparison in {qual}", {src.path: _flipped(src, node)})  # type: ignore[arg-type]


def _flipped(src: Source, node: ast.Compare) -> str:
    _, a = src.span(node.left)
    b, _ = src.span(node.comparators[0])
    between = src.raw[a:b].decode()  # the operator, maybe with parentheses around it
    op = re.search(r"==|!=|<=|>=|<|>|\bis\s+not\b|\bis\b|\bnot\s+in\b|\bin\b", between)
    assert op is not None, between
    new = between[: op.start()] + FLIP[type(node.ops[0])] + between[op.end() :]
    return src.replace(a, b, new)


def change_constant(src: Source) -> Iterator[Change]:
    def literal(n: ast.AST) -> bool:
        return (
            isinstance(n, ast.Constant)
            and type(n.value) in (int, str)
            and n.value != ""
            and not isinstance(src.parents.get(n), ast.JoinedStr)
            and not _docstring(n, src.parents)
        )

    for node, qual in src.inside(literal):
        a, b = src.span(node)
        yield (f"change a constant in {qual}", {src.path: src.replace(a, b, _bumped(node))})  # type: ignore[arg-type]


def _bumped(node: ast.Constant) -> str:
    if isinstance(node.value, bool):
        return repr(not node.value)
    if isinstance(node.value, int | float):
        return repr(node.value + 1)
    if node.value is None:
        return "0"
    return repr(str(node.value) + "_x")


def return_none(src: Source) -> Iterator[Change]:
    def valued(n: ast.AST) -> bool:
        return (
            isinstance(n, ast.Return)
            and n.value is not None
            and not (isinstance(n.value, ast.Constant) and n.value.value is None)
        )

    for node, qual in src.inside(valued):
        a, b = src.span(node.value)  # type: ignore[attr-defined]
        yield (f"return None in {qual}", {src.path: src.replace(a, b, "None")})


def drop_statement(src: Source) -> Iterator[Change]:
    def droppable(n: ast.AST) -> bool:
        return (
            isinstance(n, ast.Expr | ast.Assign | ast.AugAssign)
            and n.lineno == n.end_lineno
            and not _docstring(getattr(n, "value", n), src.parents)
        )

    for node, qual in src.inside(droppable):
        a, b = src.span(node)
        yield (f"drop a statement in {qual}", {src.path: src.replace(a, b, "pass")})


BODY_MUTATIONS = {
    "negate-condition": negate_condition,
    "flip-comparison": flip_comparison,
    "change-constant": change_constant,
    "return-none": return_none,
    "drop-statement": drop_statement,
}


def module_constant(src: Source) -> Iterator[Change]:
    for node in src.tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and type(node.value.value) in (int, float, str, bool)
        ):
            a, b = src.span(node.value)
            yield (
                f"change module constant {node.targets[0].id}",
                {src.path: src.replace(a, b, _bumped(node.value))},
            )


def hierarchy_method(src: Source) -> Iterator[Change]:
    for fn, cls in src.functions():
        if cls is None or not cls.bases or fn.name.startswith("__"):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Return) and node.value is not None:
                a, b = src.span(node.value)
                yield (
                    f"return None in {cls.name}.{fn.name} (subclass method)",
                    {src.path: src.replace(a, b, "None")},
                )
                break


HELPER = """

def _evals_helper(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value.upper()
    return value
"""


def new_helper(src: Source) -> Iterator[Change]:
    for fn, cls in src.functions():
        returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None]
        if not returns or "_evals_helper" in src.text:
            continue
        a, b = src.span(returns[0].value)  # type: ignore[arg-type]
        wrapped = src.replace(a, b, f"_evals_helper({src.segment(returns[0].value)})")  # type: ignore[arg-type]
        qual = f"{cls.name}.{fn.name}" if cls else fn.name
        yield (f"new helper _evals_helper called from {qual}", {src.path: wrapped + HELPER})


def harmless(src: Source) -> Iterator[Change]:
    for fn, cls in src.functions():
        qual = f"{cls.name}.{fn.name}" if cls else fn.name
        doc = fn.body[0]
        if (
            isinstance(doc, ast.Expr)
            and isinstance(doc.value, ast.Constant)
            and isinstance(doc.value.value, str)
            and doc.lineno == doc.end_lineno
        ):
            a, b = src.span(doc.value)
            yield (
                f"reword the docstring of {qual}",
                {src.path: src.replace(a, b, repr(doc.value.value + " (reworded)"))},
            )
        else:
            first = fn.body[0]
            a, _ = src.span(first)
            indent = " " * first.col_offset
            yield (
                f"add a comment in {qual}",
                {src.path: src.replace(a, a, f"# reviewed by an agent\n{indent}")},
            )


def signature(src: Source) -> Iterator[Change]:
    for fn, cls in src.functions():
        qual = f"{cls.name}.{fn.name}" if cls else fn.name
        defaults = [
            d
            for d in (*fn.args.defaults, *fn.args.kw_defaults)
            if isinstance(d, ast.Constant) and type(d.value) in (int, bool, str)
        ]
        if defaults:
            a, b = src.span(defaults[0])
            yield (
                f"change a default argument of {qual}",
                {src.path: src.replace(a, b, _bumped(defaults[0]))},
            )


def decorator(src: Source) -> Iterator[Change]:
    for fn, cls in src.functions():
        for deco in fn.decorator_list:
            if src.segment(deco).split("(")[0].split(".")[-1] in ("overload", "override"):
                continue
            a, b = src.span(deco)
            line_start = src.raw.rfind(b"\n", 0, a) + 1
            line_end = src.raw.find(b"\n", b) + 1
            qual = f"{cls.name}.{fn.name}" if cls else fn.name
            yield (
                f"remove @{src.segment(deco)} from {qual}",
                {src.path: src.replace(line_start, line_end, "")},
            )


SOURCE_KINDS: dict[str, Callable[[Source], Iterator[Change]]] = {
    **BODY_MUTATIONS,
    "module-constant": module_constant,
    "hierarchy-method": hierarchy_method,
    "new-helper": new_helper,
    "harmless": harmless,
    "signature": signature,
    "decorator": decorator,
}


def test_file_edit(src: Source) -> Iterator[Change]:
    for node in ast.walk(src.tree):
        if (
            isinstance(node, ast.Assert)
            and isinstance(node.test, ast.Compare)
            and len(node.test.ops) == 1
            and type(node.test.ops[0]) in FLIP
        ):
            yield (
                f"flip an assertion in {src.path}:{node.lineno}",
                {src.path: _flipped(src, node.test)},
            )


def rename(sources: dict[str, Source], everything: dict[str, str]) -> Iterator[Change]:
    """Rename a module-level function and every whole-word use of it in the repository."""
    for src in sources.values():
        for fn, cls in src.functions():
            if cls is not None or len(fn.name) < 8 or fn.name.startswith("__"):
                continue
            word = re.compile(rf"\b{re.escape(fn.name)}\b")
            users = {p: t for p, t in everything.items() if word.search(t)}
            uses = sum(len(word.findall(t)) for t in users.values())
            if 2 <= uses <= 40 and len(users) >= 2:
                new = fn.name + "_renamed"
                yield (
                    f"rename {fn.name} to {new} in {len(users)} files",
                    {p: word.sub(new, t) for p, t in users.items()},
                )


def data_file(repo: Path, files: list[str]) -> Iterator[Change]:
    for path in files:
        if (
            path.endswith(".py")
            or "/" not in path
            or path.startswith(("docs/", ".", "requirements"))
            or ".egg-info/" in path
        ):
            continue
        try:
            text = (repo / path).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        match = re.search(r"[A-Za-z]{3,}", text)
        if match and len(text) < 200_000:
            new = text[: match.end()] + "x" + text[match.end() :]
            yield (f"change a word in the data file {path}", {path: new})


def generate(prepared: Prepared, seed: int) -> list[Edit]:
    repo, target = prepared.repo, prepared.target
    rng = random.Random(f"{seed}:{target.name}")
    files = sorted(git(repo, "ls-files").split("\n"))
    py = [f for f in files if f.endswith(".py")]
    texts = {p: (repo / p).read_text(encoding="utf-8") for p in py}
    sources = {
        p: Source(p, texts[p]) for p in py if p.startswith(target.sources) and not _is_test(p)
    }
    tests = {
        p: Source(p, texts[p]) for p in py if Path(p).name.startswith("test_") and p not in sources
    }

    def pick(pool: list[Change], count: int = PER_KIND) -> list[Change]:
        return rng.sample(pool, min(count, len(pool)))

    chosen: list[tuple[str, Change]] = []
    pools: dict[str, list[Change]] = {}
    for kind, make in SOURCE_KINDS.items():
        pools[kind] = [c for s in sources.values() for c in make(s)]
        chosen += [(kind, c) for c in pick(pools[kind])]
    pools["test-file"] = [c for s in tests.values() for c in test_file_edit(s)]
    chosen += [("test-file", c) for c in pick(pools["test-file"])]
    pools["rename"] = list(rename(sources, texts))
    chosen += [("rename", c) for c in pick(pools["rename"])]
    pools["data-file"] = list(data_file(repo, files))
    chosen += [("data-file", c) for c in pick(pools["data-file"])]
    singles = [c for s in sources.values() for make in BODY_MUTATIONS.values() for c in make(s)]
    for _ in range(PER_KIND):
        first, second = rng.sample(singles, 2)
        if set(first[1]) != set(second[1]):
            chosen.append(("multi-file", _pair(first, second)))
    # appended after the seeded first pass, from a second stream: earlier edits never move
    top_up_rng = random.Random(f"{seed}:{target.name}:top-up")
    chosen += top_up(chosen, pools, singles, target.min_edits, top_up_rng)
    return _as_edits(repo, target.name, chosen)


def _is_test(path: str) -> bool:
    """A file of a ``tests`` folder inside a package (toolz ships its tests there); a module
    named ``test_*`` outside one stays a source (astroid's ``test_utils.py``)."""
    return "tests" in Path(path).parts[:-1]


def _pair(first: Change, second: Change) -> Change:
    return (f"{first[0]}; {second[0]}", {**first[1], **second[1]})


def top_up(
    chosen: list[tuple[str, Change]],
    pools: dict[str, list[Change]],
    singles: list[Change],
    minimum: int,
    rng: random.Random,
) -> list[tuple[str, Change]]:
    """More edits until the target has ``minimum``: one at a time, to the kind with the fewest
    so far (ties in ``TOP_UP`` order), drawn from what its pool has not given yet."""

    def key(change: Change) -> tuple[tuple[str, str], ...]:
        return tuple(sorted(change[1].items()))

    taken = {key(c) for _, c in chosen}
    counts = {kind: sum(k == kind for k, _ in chosen) for kind in TOP_UP}
    extra: list[tuple[str, Change]] = []
    exhausted: set[str] = set()
    while len(chosen) + len(extra) < minimum and len(exhausted) < len(TOP_UP):
        kind = min((k for k in TOP_UP if k not in exhausted), key=lambda k: counts[k])
        if kind == "multi-file":
            pairs = (rng.sample(singles, 2) for _ in range(50 if len(singles) >= 2 else 0))
            left = [
                _pair(a, b)
                for a, b in pairs
                if set(a[1]) != set(b[1]) and key(_pair(a, b)) not in taken
            ][:1]
        else:
            left = [c for c in pools.get(kind, ()) if key(c) not in taken]
        if not left:
            exhausted.add(kind)
            continue
        change = rng.choice(left)
        taken.add(key(change))
        counts[kind] += 1
        extra.append((kind, change))
    return extra


def _as_edits(repo: Path, target: str, chosen: list[tuple[str, Change]]) -> list[Edit]:
    edits, counts = [], {}  # type: ignore[var-annotated]
    for kind, (description, new_texts) in chosen:
        for path, text in new_texts.items():
            if path.endswith(".py"):
                ast.parse(text)  # a generator bug, not an edit: fail loudly
            (repo / path).write_text(text, encoding="utf-8")
        diff = git(repo, "diff")
        git(repo, "checkout", "-q", "--", ".")
        if not diff.strip():
            continue  # the candidate changed nothing (a ``return None`` made ``return None``)
        counts[kind] = counts.get(kind, 0) + 1
        split = "held-out" if counts[kind] % 3 == 2 else "dev"  # the 2nd, 5th, 8th... of a kind
        edits.append(
            Edit(
                id=f"{target}-{kind}-{counts[kind]}",
                target=target,
                kind=kind,
                split=split,
                description=description,
                diff=diff,
                files=tuple(sorted(new_texts)),
            )
        )
    return edits
