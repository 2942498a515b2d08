import sys

from oversmooth.cli import main

sys.exit(main())
