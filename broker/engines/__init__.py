"""Engines: where the rows live and how they are counted (see :mod:`broker.engines.base`).

Which one counts a file is decided by its size, the same way by the broker (an upload) and the
command line (``--engine auto``): a CSV larger than :data:`IN_MEMORY_MAX_BYTES` is counted out of
core by DuckDB, anything smaller (and JSON or Parquet, read whole) in memory by pandas.

Explained in ``docs/explanations/engines.md``.
"""

# The broker's default for BROKER_IN_MEMORY_MAX_BYTES, and the command line's threshold.
IN_MEMORY_MAX_BYTES = 64 * 1024**2
