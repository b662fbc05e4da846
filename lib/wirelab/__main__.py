"""``python -m wirelab`` is the ``wirelab`` command."""
import sys

from .cli import main

sys.exit(main())
