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
echo "== guard ingest-static (embedded FalkorDB under $repo/.guard)"
guard ingest-static "$repo" --include-tests
guard stats --repo "$repo"
echo "== editing one source function, plus a comment elsewhere"
git -C "$repo" ls-files '*.py' | grep -v -E '(^|/)(tests?|docs|examples?)/' > "$work/files"
python - "$repo" "$work/files" <<'PY'
import ast, sys
repo = sys.argv[1]
for name in open(sys.argv[2], encoding="utf-8").read().split():
    path = f"{repo}/{name}"
    src = open(path, encoding="utf-8").read()
    fns = [n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef) and len(n.body) > 1]
    if not fns:
        continue
    fn = fns[0]
    lines = src.splitlines(keepends=True)
    last = lines[fn.end_lineno - 1]
    indent = last[: len(last) - len(last.lstrip())]
    lines.insert(fn.end_lineno, f"{indent}pass  # edited by the guard demo\n")
    lines.insert(0, "# a comment changes nothing\n")
    open(path, "w", encoding="utf-8").write("".join(lines))
    print(f"edited {name}::{fn.name}")
    break
PY
guard changes --repo "$repo"
guard server stop --repo "$repo"
echo "== done; the repository is kept at $repo"
