"""``guard mcp``: Guard's tools over the Model Context Protocol (stdio), for any MCP host.

Needs the optional ``mcp`` extra (``pip install 'guard-graph[mcp]'``). One :class:`Guard` is
opened on first use and kept, so the graph connection stays warm between calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from guard_core.api import Guard
from guard_core.errors import GuardError

INSTRUCTIONS = (
    "Guard selects the pytest tests an edit can affect. Call `check` after editing to see which "
    "tests must run and why; call `run` before reporting completion (exit_code 0 = pass)."
)


def _server_class() -> Any:
    try:  # mcp 2.x
        from mcp.server.mcpserver import MCPServer

        return MCPServer
    except ImportError:  # mcp 1.x
        from mcp.server.fastmcp import FastMCP  # type: ignore[attr-defined,unused-ignore]

        return FastMCP


class GuardTools:
    """The tool implementations, independent of the transport (and testable without it)."""

    def __init__(self, repo: Path, opener: Any) -> None:
        self.repo = repo
        self.opener = opener
        self._guard: Guard | None = None

    @property
    def guard(self) -> Guard:
        if self._guard is None:
            self._guard = self.opener(self.repo)
        return self._guard

    def check(self, base: str | None = None) -> dict[str, Any]:
        return self.guard.check(base).to_json()

    def run(self, base: str | None = None) -> dict[str, Any]:
        report = self.guard.run(base, stream=False)
        outcomes = report.result.record.outcomes if report.result else ()
        return {
            "exit_code": report.exit_code,
            "failed": report.failed,
            "ran": len(outcomes),
            "evidence": report.refreshed,
            "notes": list(report.notes),
            "messages": {o.test: o.message[-1500:] for o in outcomes if o.test in report.failed},
            "decision": report.decision.to_json(),
        }

    def covering_tests(self, function_id: str) -> dict[str, Any]:
        edges = self.guard.covering_tests(function_id)
        return {
            "function": function_id,
            "tests": [
                {"test": e.test, "confidence": e.confidence, "source": e.source} for e in edges
            ],
        }

    def callers(
        self, function_id: str, hops: int = 2, min_confidence: float = 0.0
    ) -> dict[str, Any]:
        found = self.guard.callers(function_id, hops, min_confidence)
        return {
            "function": function_id,
            "callers": [{"id": c.id, "hops": c.hops, "confidence": c.confidence} for c in found],
        }

    def feedback(self, function_id: str, test_id: str) -> dict[str, Any]:
        self.guard.feedback(function_id, test_id)
        return {"recorded": True, "function": function_id, "test": test_id}


def build_server(tools: GuardTools) -> Any:
    server = _server_class()(name="guard", instructions=INSTRUCTIONS)

    def guarded(fn: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
            try:
                return dict(fn(*args, **kwargs))
            except GuardError as exc:  # a clear tool error, never a traceback
                raise ValueError(
                    f"{exc.message}" + (f" (hint: {exc.hint})" if exc.hint else "")
                ) from exc

        return call

    @server.tool(
        description="Which tests the working tree's changes need, and why "
        "(the guard.decision/1 object). Runs nothing."
    )
    def check(base: str | None = None) -> dict[str, Any]:
        return guarded(tools.check)(base)

    @server.tool(
        description="Check, then run the selected tests with pytest. exit_code 0 when "
        "they pass, 1 when a test fails, 2 when pytest could not run."
    )
    def run(base: str | None = None) -> dict[str, Any]:
        return guarded(tools.run)(base)

    @server.tool(
        description="The tests that executed a function, most confident first. "
        "function_id looks like 'src/pkg/mod.py::Class.method'."
    )
    def covering_tests(function_id: str) -> dict[str, Any]:
        return guarded(tools.covering_tests)(function_id)

    @server.tool(description="Functions that call function_id within `hops` static call edges.")
    def callers(function_id: str, hops: int = 2, min_confidence: float = 0.0) -> dict[str, Any]:
        return guarded(tools.callers)(function_id, hops, min_confidence)

    @server.tool(
        description="Record that test_id failed when function_id changed and Guard "
        "did not select it; later decisions select it."
    )
    def feedback(function_id: str, test_id: str) -> dict[str, Any]:
        return guarded(tools.feedback)(function_id, test_id)

    return server


def serve(repo: Path, opener: Any) -> None:
    tools = GuardTools(repo, opener)
    try:
        build_server(tools).run("stdio")
    finally:
        if tools._guard is not None:
            tools._guard.close()
