"""``python -m kaudit`` runs the command line."""

from kaudit.cli import main

# Guarded: `kaudit sweep` starts worker processes, which import the main module again.
if __name__ == "__main__":
    main()
