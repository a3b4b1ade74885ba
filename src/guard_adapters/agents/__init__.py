"""Agent integrations: Claude Code's Stop hook, the MCP server, and the project-instruction
files that Codex, Cursor and OpenCode read."""
