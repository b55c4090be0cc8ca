"""``python -m demo`` (``make demo``): the whole federation on this machine; see
:mod:`demo.federation`."""

import sys

from demo.federation import main

if __name__ == "__main__":
    sys.exit(main())
