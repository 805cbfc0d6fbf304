"""``python -m kaudit`` runs the command line."""

from kaudit.cli import main

main()
