"""`python -m sparseeval ...` runs the console script."""

import sys

from sparseeval.cli import main

sys.exit(main())
