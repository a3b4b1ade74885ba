"""``python -m guard_adapters.cli`` is the ``guard`` command."""

from guard_adapters.cli.main import main

main()
