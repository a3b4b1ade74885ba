"""The docs stay true: the CLI reference matches the commands, every hook is documented with its
exact signature, and the getting-started page gives the README's commands."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import guard_core.hookspecs as hookspecs
from guard_adapters.cli.reference import render

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def hook_signatures() -> dict[str, str]:
    out = {}
    for name, fn in inspect.getmembers(hookspecs, inspect.isfunction):
        if name.startswith("guard_"):
            params = dict(fn.__annotations__)
            returns = params.pop("return")
            args = ", ".join(f"{k}: {v}" for k, v in params.items())
            out[name] = f"def {name}({args}) -> {returns}"
    return out


def test_cli_reference_matches_the_commands() -> None:
    assert (DOCS / "cli.md").read_text() == render(), (
        "docs/cli.md is stale: python -m guard_adapters.cli.reference > docs/cli.md"
    )


def test_every_command_is_in_the_reference() -> None:
    text = (DOCS / "cli.md").read_text()
    for command in ("check", "run", "init", "hook claude-stop", "mcp", "feedback", "callers"):
        assert f"## `guard {command}`" in text


def test_every_hook_is_documented_with_its_exact_signature() -> None:
    text = (DOCS / "plugins.md").read_text()
    signatures = hook_signatures()
    assert len(signatures) >= 3
    for name, signature in signatures.items():
        assert signature in text, f"{name} is missing from docs/plugins.md as {signature!r}"


def test_getting_started_gives_the_readme_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"```bash\n(.+?)\n```", readme)[:2]
    assert len(commands) == 2
    page = (DOCS / "getting-started.md").read_text()
    for command in commands:
        assert command in page


def test_one_page_per_agent_integration() -> None:
    for page in ("claude-code", "codex", "cursor", "opencode", "mcp", "python-api"):
        assert (DOCS / "agents" / f"{page}.md").stat().st_size > 200


def test_the_architecture_page_lists_every_builtin_rule_in_order() -> None:
    from guard_core.rules import builtin_rules

    text = (DOCS / "architecture.md").read_text()
    listed = re.findall(r"^   \| `([a-z-]+)` \| `rules/", text, flags=re.M)
    assert listed == [r.name for r in builtin_rules()]
