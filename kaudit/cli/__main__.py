"""``python -m kaudit.cli``: the ``kaudit`` command."""

from kaudit.cli import main

main()
