"""``python -m broker.cli``: the ``fedbroker`` command."""

import sys

from broker.cli.app import main

if __name__ == "__main__":
    sys.exit(main())
