"""`python -m robotsgate check | lint | report ...`"""

import sys

from robotsgate.cli import main

sys.exit(main())
