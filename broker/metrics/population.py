"""The population sizes of a sample's equivalence classes, from a population table.

Journalist and marketer risk (:mod:`broker.metrics.anonymity`) need, for each class of the
dataset, the number of rows of a population table (a register, a census extract: ARX calls it the
superset) holding the same quasi-identifier values. Both tables are seen through count tables, so
the population may sit in any engine: each column's values are matched through the two engines'
dictionaries (values as written), then each class's tuple of codes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from broker.columns.roles import require_columns
from broker.engines.base import CountTable, Engine, dictionary_of


def population_class_sizes(classes: CountTable, sample: Engine, population: Engine) -> np.ndarray:
    """For each tuple of ``classes`` (a count table of ``sample``), its rows in ``population``.

    Raises ``ValueError`` naming a quasi-identifier the population lacks, or a class of the
    sample the population does not hold: the population must contain the sample.

    Examples
    --------
    >>> from broker.engines.pandas import PandasEngine
    >>> sample = PandasEngine(pd.DataFrame({"zip": ["750", "130", "750"]}))
    >>> population = PandasEngine(pd.DataFrame({"zip": ["130"] * 4 + ["750"] * 6 + ["690"]}))
    >>> [classes] = sample.counts([["zip"]])
    >>> dict(zip(sample.dictionary("zip")[classes.codes("zip")], population_class_sizes(
    ...     classes, sample, population).tolist()))
    {'750': 6, '130': 4}
    """
    columns = list(classes.columns)
    require_columns(population.columns, columns, "Quasi-identifier (in the population table)")
    [table] = population.counts([columns])
    mapped = []
    for name in columns:
        known = pd.Index(dictionary_of(population.dictionary(name)))
        mapped.append(
            known.get_indexer(dictionary_of(sample.dictionary(name)))[classes.codes(name)]
        )
    found = pd.MultiIndex.from_arrays([table.codes(c) for c in columns]).get_indexer(
        pd.MultiIndex.from_arrays(mapped)
    )
    absent = np.flatnonzero((found < 0) | np.any(np.array(mapped) < 0, axis=0))
    if absent.size:
        values = {c: sample.dictionary(c)[classes.codes(c)[absent[0]]] for c in columns}
        raise ValueError(
            f"The population table holds no row with {values}, a class of the dataset: it must "
            "contain the dataset"
        )
    return table.rows[found]
