#!/usr/bin/env bash
# Guard on a real project: download an sdist from PyPI, make it a git repo, index it with the
# embedded FalkorDB, make an edit, and show what Guard sees. Usage: scripts/demo.sh [pkg==ver]
set -euo pipefail
spec=${1:-flask==3.1.2}
work=$(mktemp -d "${TMPDIR:-/tmp}/guard-demo.XXXXXX")
echo "== downloading $spec into $work"
python -m pip download -q --no-deps --no-binary :all: "$spec" -d "$work"
tar -xzf "$work"/*.tar.gz -C "$work"
repo=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
git -C "$repo" init -q
git -C "$repo" add -A
git -C "$repo" -c user.name=guard -c user.email=guard@example.invalid commit -qm "sdist"
echo "== a virtualenv for the project's own tests"
python -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q -e "$repo" "pytest<9" coverage
echo "== guard ingest-coverage: index with libcst, run the suite with per-test coverage"
echo "   (the embedded FalkorDB starts by itself under $repo/.guard)"
guard ingest-coverage "$repo" --python "$work/venv/bin/python"
guard stats --repo "$repo"
echo "== editing a source function that tests execute, plus a comment elsewhere"
git -C "$repo" ls-files '*.py' | grep -v -E '(^|/)(tests?|docs|examples?)/' > "$work/files"
python - "$repo" "$work/files" <<'PY'
import ast, sys
from guard_core.api import Guard

repo = sys.argv[1]
with Guard.open(repo) as guard:
    for name in open(sys.argv[2], encoding="utf-8").read().split():
        path = f"{repo}/{name}"
        src = open(path, encoding="utf-8").read()
        fns = [n for n in ast.parse(src).body
               if isinstance(n, ast.FunctionDef) and len(n.body) > 1
               and guard.covering_tests(f"{name}::{n.name}")]
        if not fns:
            continue
        fn = fns[0]
        lines = src.splitlines(keepends=True)
        last = fn.body[-1]
        indent = " " * last.col_offset
        # a real behaviour change: the function now returns None before its last statement
        lines.insert(last.lineno - 1, f"{indent}return None  # edited by the guard demo\n")
        lines.insert(0, "# a comment changes nothing\n")
        open(path, "w", encoding="utf-8").write("".join(lines))
        print(f"edited {name}::{fn.name}")
        break
PY
guard changes --repo "$repo"
echo "== guard check: which tests this edit needs, and why"
guard check --repo "$repo"
echo "== guard run: run them"
guard run --repo "$repo" || true
guard server stop --repo "$repo"
echo "== done; the repository is kept at $repo"
