"""Engines: where the rows live and how they are counted (see :mod:`broker.engines.base`)."""
