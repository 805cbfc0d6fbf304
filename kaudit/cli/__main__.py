"""``python -m kaudit.cli``: the ``kaudit`` command."""

from kaudit.cli import main

# Guarded: `kaudit sweep` starts worker processes, which import the main module again.
if __name__ == "__main__":
    main()
