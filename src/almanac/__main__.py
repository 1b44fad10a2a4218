"""``python -m almanac``: the ``almanac`` command."""

import sys

from almanac.cli import main

sys.exit(main())
