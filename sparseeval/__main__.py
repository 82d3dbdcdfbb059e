"""`python -m sparseeval ...` runs the console script."""

import sys

from .cli import main

sys.exit(main())
