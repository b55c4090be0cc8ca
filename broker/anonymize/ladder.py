"""The generalization ladder: the mildest generalization that brings an attribute under a bound.

For an attribute over its ``max_mmaq_index`` bound, generalizations are tried from the mildest to
the strongest, and the first that brings its ``mmaq_index`` under the bound is kept:

- a hierarchy given by the target: 1, 2, ... levels up (unknown values -> ``"*"``);
- codes (digit strings of one length, at least 3, such as zip codes): shorter prefixes;
- numbers: quantile bins, the largest power of two below the number of distinct values, then
  half as many, ..., down to 2;
- ISO 8601 dates: month, then year;
- code-like text (no blanks, at most 32 characters): shorter prefixes;
- last resort, always enough: mask the whole column with ``"*"``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from broker.anonymize._values import factorize, numeric_column
from broker.anonymize.generalization import generalize_date
from broker.anonymize.steps import Step, apply_steps
from broker.anonymize.suppression import mask
from broker.metrics.mmaq import mmaq


def generalize_until(work, name, bound, hierarchy):
    """The mildest generalization of ``name`` that brings its mmaq_index to ``bound`` or below."""
    for step in _ladder(work[name], name, hierarchy):
        try:
            candidate = apply_steps(work, [step]).frame
        except ValueError:
            continue
        if mmaq(candidate, name).mmaq_index <= bound:
            return step, candidate
    step = Step(name, "mask")
    return step, mask(work, name)


def _ladder(values: pd.Series, name: str, hierarchy: Mapping | None) -> list[Step]:
    steps = []
    if hierarchy:
        depth = _hierarchy_depth(hierarchy)
        steps += [
            Step(
                name,
                "hierarchy",
                {"hierarchy": dict(hierarchy), "levels": n, "unknown": "suppress"},
            )
            for n in range(1, depth + 1)
        ]
    _codes, uniques, _blank = factorize(values)
    text = pd.Series(np.asarray(uniques, dtype=object)).astype(str)
    lengths = text.str.len()
    if len(uniques) and _is_code(text, lengths):
        steps += [Step(name, "prefix", {"keep": n}) for n in range(int(lengths.max()) - 1, 0, -1)]
    elif numeric_column(values):
        steps += [
            Step(name, "quantile", {"bins": 2**n}) for n in range(10, 0, -1) if 2**n < len(uniques)
        ]
    elif len(uniques) and _is_date(values, name):
        steps += [Step(name, "date", {"level": "month"}), Step(name, "date", {"level": "year"})]
    elif len(uniques) and lengths.max() <= 32 and not text.str.contains(r"\s").any():
        steps += [Step(name, "prefix", {"keep": n}) for n in range(int(lengths.max()) - 1, 0, -1)]
    return steps


def _is_code(text: pd.Series, lengths: pd.Series) -> bool:
    """Digit strings all of one length >= 3 (zip codes, NINs): prefixes, not ranges."""
    return bool(lengths.min() == lengths.max() >= 3 and text.str.fullmatch(r"\d+").all())


def _is_date(values: pd.Series, name: str) -> bool:
    try:
        generalize_date(values.to_frame(name), name, "month")
    except ValueError:
        return False
    return True


def _hierarchy_depth(hierarchy: Mapping) -> int:
    parents = {str(a): str(b) for a, b in hierarchy.items()}
    depth = 1
    for start in parents:
        node, steps = start, 0
        while node in parents and steps <= len(parents):
            node, steps = parents[node], steps + 1
        depth = max(depth, steps)
    return depth
