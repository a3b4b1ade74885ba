"""``python -m guard_adapters.cli`` is the ``guard`` command."""

from guard_adapters.cli.fast import main

main()
