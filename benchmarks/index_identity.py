"""The static index built from the stdlib ``ast`` against libcst's reference, file by file.

For each target (a PyPI sdist, or a folder), indexes every ``.py`` file both ways and prints the
files whose facts differ (functions with their reads, statement reads and read lines, tests,
calls, imports, aliases), then the files compared and the seconds each indexer took, side by
side. Exit status 1 when any file differs.
Run: python benchmarks/index_identity.py [spec-or-folder ...]   (default: the eval targets)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.libcst_reference

from _targets import sdist_repo
from tests.libcst_reference import reference_index_file

from guard_adapters.index.index import RawIndex, index_file
from guard_adapters.pytest.layout import PytestLayout
from guard_adapters.python.modules import module_name

DEFAULT = (
    "flask==3.1.2",
    "jinja2==3.1.6",
    "click==8.1.8",
    "werkzeug==3.1.3",
    "itsdangerous==2.2.0",
    "toolz==1.0.0",
    "sqlparse==0.5.3",
    "more-itertools==10.5.0",
    "astroid==3.3.8",
)


def facts(raw: RawIndex) -> dict[str, object]:
    file = raw.file
    return {
        "parses": file.parse_error is None,
        "functions": file.functions,
        "tests": file.tests,
        "calls": raw.calls,
        "imports": raw.imports,
        "dotted": raw.dotted,
        "aliases": raw.aliases,
    }


def differences(a: dict[str, object], b: dict[str, object]) -> list[str]:
    out = []
    for key in a:
        if a[key] == b[key]:
            continue
        if key == "functions":
            for x, y in zip(a[key], b[key], strict=False):  # type: ignore[call-overload]
                if x != y:
                    out.append(f"  {x.id}: libcst {x!r}\n  {' ' * len(x.id)}  ast    {y!r}")
        else:
            out.append(f"  {key}: libcst {a[key]!r}\n  {' ' * len(key)}  ast    {b[key]!r}")
    return out


def compare(root: Path, layout: PytestLayout) -> tuple[int, int, float, float]:
    files = differ = 0
    seconds_ref = seconds_ast = 0.0
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if "/.venv" in f"/{rel}" or "-venv/" in rel:
            continue
        data = path.read_bytes()
        module = module_name(root, rel)
        is_test = layout.is_test_file(rel)
        started = time.perf_counter()
        try:
            reference = reference_index_file(rel, data, module, layout, is_test)
        except RecursionError:
            continue  # libcst's own limit on deeply nested literals
        middle = time.perf_counter()
        fast = index_file(rel, data, module, layout, is_test)
        seconds_ref += middle - started
        seconds_ast += time.perf_counter() - middle
        files += 1
        a, b = facts(reference), facts(fast)
        if not (a["parses"] and b["parses"]):
            if a["parses"] != b["parses"]:
                print(f"{root.name}/{rel}: parses with one only")
            continue
        found = differences(a, b)
        if found:
            differ += 1
            print(f"{root.name}/{rel}:", *found, sep="\n")
    return files, differ, seconds_ref, seconds_ast


def main(targets: list[str]) -> int:
    layout = PytestLayout()
    total = 0
    print(f"{'target':<28} {'files':>6} {'differ':>6} {'libcst s':>9} {'ast s':>7} {'ratio':>6}")
    for target in targets or DEFAULT:
        root = Path(target) if Path(target).is_dir() else sdist_repo(target)
        files, differ, ref, fast = compare(root, layout)
        total += differ
        ratio = ref / fast if fast else 0.0
        print(f"{root.name:<28} {files:>6} {differ:>6} {ref:>9.2f} {fast:>7.2f} {ratio:>5.1f}x")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
