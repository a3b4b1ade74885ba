"""A Guard plug-in that replaces the test runner: pytest runs under a wrapper command.

Some suites only run inside a wrapper — ``xvfb-run -a`` for GUI tests, ``nice -n 10`` on a
shared box, ``timeout 900`` in CI, a container launcher. This runner is the built-in one with
the wrapper in front of its command line, so Guard's outcome report and the evidence refresh
still work. Install the package and choose it in the project's ``pyproject.toml``::

    [tool.guard]
    runner = "wrapped"

The wrapper comes from ``GUARD_RUN_WRAPPER`` (split like a shell would, no shell runs it).
Registering under the built-in's name, ``pytest``, would replace it without the setting.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence

from guard_adapters.pytest.runner import PytestRunner
from guard_core import hookimpl
from guard_core.config import Settings
from guard_core.errors import ConfigError
from guard_core.plugins import AdapterRegistry


class WrappedRunner(PytestRunner):
    """The built-in pytest runner, started through ``wrapper``."""

    def __init__(self, settings: Settings, wrapper: Sequence[str]) -> None:
        super().__init__(settings)
        self.wrapper = list(wrapper)

    def command(self, tests: Sequence[str] | None, *, measuring: bool) -> list[str]:
        return [*self.wrapper, *super().command(tests, measuring=measuring)]


def wrapped_runner(settings: Settings) -> WrappedRunner:
    wrapper = shlex.split(os.environ.get("GUARD_RUN_WRAPPER", ""))
    if not wrapper:
        raise ConfigError(
            "the wrapped runner needs a wrapper command",
            hint="set GUARD_RUN_WRAPPER, for example to 'xvfb-run -a'",
        )
    return WrappedRunner(settings, wrapper)


@hookimpl
def guard_register_adapters(registry: AdapterRegistry) -> None:
    registry.add_runner("wrapped", wrapped_runner)
