"""``python -m ragpulse.collector.cli``: the same as the ``ragpulse`` command."""

import sys

from .main import main

sys.exit(main())
