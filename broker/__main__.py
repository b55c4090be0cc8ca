"""``python -m broker``: start the broker (same as ``fedbroker serve``)."""

import sys

from broker.cli import main

if __name__ == "__main__":
    sys.exit(main(["serve", *sys.argv[1:]]))
