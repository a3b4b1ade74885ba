"""Fixtures of the integration tests (besides the embedded server of ``tests/conftest.py``)."""

from tests.integration.tcp_server import tcp_url

__all__ = ["tcp_url"]
