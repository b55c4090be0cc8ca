"""The combination search's defaults, in a module that imports nothing.

The command line shows them in its help; kept apart from :mod:`broker.metrics.combinations`
(which needs numpy and the engines) so that ``fedbroker analyze --help`` loads no numerical
library.
"""

# Largest attribute combination searched for identifying ones (the seed's Mmaq of several
# attributes); 0 skips the search.
DEFAULT_MAX_SIZE = 3
# Share of rows unique on a combination from which it counts as identifying.
DEFAULT_UNIQUE_THRESHOLD = 0.1
