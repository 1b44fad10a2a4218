"""``python -m almanac.cli``: the ``almanac`` command."""

import sys

from almanac.cli import main

sys.exit(main())
