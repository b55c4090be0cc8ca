"""Anonymization steps: what was done to a table, as data that can be stored and replayed.

A :class:`Step` names a method and its parameters; :data:`METHODS` maps each method to the
function that applies it, and :func:`apply_steps` replays a list of steps, deterministically.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from broker.anonymize.generalization import (
    coarsen_dates,
    generalize_date,
    generalize_hierarchy,
    generalize_prefix,
    generalize_quantiles,
    generalize_range,
    top_code,
    truncate_postcodes,
)
from broker.anonymize.mondrian import mondrian
from broker.anonymize.partition import Link, partition
from broker.anonymize.suppression import drop_columns, mask

MONDRIAN = "mondrian"
PARTITION = "partition"
GENERALIZATION = "generalization"  # a planner method: its steps are the one-column ones below
OPTIMAL = "optimal"  # the same steps, the generalization of least information loss


@dataclass(frozen=True)
class Step:
    """One transformation: ``method`` applied to ``column`` (None for Mondrian and partition).

    Methods and their parameters: ``drop`` {}, ``mask`` {"rows"?}, ``range`` {"width",
    "origin"?}, ``quantile`` {"bins"}, ``date`` {"level"}, ``prefix`` {"keep"}, ``hierarchy``
    {"hierarchy", "levels", "unknown"}, ``date_precision`` {"level"}, ``postcode_prefix``
    {"keep"}, ``top_code`` {"max_age"}, ``mondrian`` {"quasi_identifiers", "k", "sensitive",
    "l", "max_suppression"}, ``partition`` {"quasi_identifiers", "groups", "k", "l",
    "max_suppression"}.

    ``reason`` says why the planner chose the step (what failed, which rule asked for it), in
    words for the member reading the remedy; it plays no part in replaying the step.
    """

    column: str | None
    method: str
    parameters: dict = field(default_factory=dict)
    reason: str | None = field(default=None, compare=False)

    def as_dict(self) -> dict:
        """JSON-serializable form (lists for sequences)."""
        return {
            "column": self.column,
            "method": self.method,
            "parameters": json.loads(json.dumps(self.parameters)),
            "reason": self.reason,
        }

    def because(self, reason: str) -> Step:
        """This step with ``reason`` as why it was chosen."""
        return dataclasses.replace(self, reason=reason)

    @classmethod
    def from_dict(cls, data: Mapping) -> Step:
        """The inverse of :meth:`as_dict`."""
        unknown = set(data) - {"column", "method", "parameters", "reason"}
        if unknown:
            raise ValueError(f"Unknown step field {sorted(unknown)[0]!r}")
        if "method" not in data:
            raise ValueError("A step needs a 'method'")
        return cls(
            data.get("column"),
            data["method"],
            dict(data.get("parameters") or {}),
            data.get("reason"),
        )


@dataclass(frozen=True, eq=False)
class Anonymized:
    """Result of :func:`apply_steps`: a frame, or linked tables when a partition step ran."""

    frame: pd.DataFrame | None
    tables: dict[str, pd.DataFrame] | None
    links: tuple[Link, ...]
    suppressed_rows: int


# The methods that transform one column: method -> (frame, column, parameters) -> frame.
METHODS: dict[str, Callable[[pd.DataFrame, str, dict], pd.DataFrame]] = {
    "drop": lambda frame, column, p: drop_columns(frame, [column]),
    "mask": lambda frame, column, p: mask(frame, column, p.get("rows")),
    "range": lambda frame, column, p: generalize_range(
        frame, column, p["width"], p.get("origin", 0.0)
    ),
    "quantile": lambda frame, column, p: generalize_quantiles(frame, column, p["bins"]),
    "date": lambda frame, column, p: generalize_date(frame, column, p.get("level", "month")),
    "prefix": lambda frame, column, p: generalize_prefix(frame, column, p["keep"]),
    # Identifying precision, reading every writing of a date, postcode or age
    # (broker.columns.precision).
    "date_precision": lambda frame, column, p: coarsen_dates(frame, column, p["level"]),
    "postcode_prefix": lambda frame, column, p: truncate_postcodes(frame, column, p["keep"]),
    "top_code": lambda frame, column, p: top_code(frame, column, p["max_age"]),
    "hierarchy": lambda frame, column, p: generalize_hierarchy(
        frame, column, p["hierarchy"], p.get("levels", 1), p.get("unknown", "error")
    ),
}


def apply_steps(frame: pd.DataFrame, steps: Sequence[Step | Mapping]) -> Anonymized:
    """Replay ``steps`` on ``frame``, deterministically.

    Mondrian and partition are deterministic, so replaying them re-runs them with the same
    parameters. Quantile bins are computed on the data, so they match on the same data.

    Parameters
    ----------
    frame : DataFrame
    steps : sequence of Step or of their ``as_dict()`` form

    Returns
    -------
    Anonymized

    Raises
    ------
    ValueError
        Unknown method, a step after a partition (which must come last), or the step's own
        errors (unknown column, non-numeric values, ...).

    Examples
    --------
    >>> frame = pd.DataFrame({"NIN": ["1", "2", "3"], "Age": ["28", "34", "51"]})
    >>> steps = [Step("NIN", "drop"), Step("Age", "range", {"width": 10})]
    >>> apply_steps(frame, steps).frame["Age"].tolist()
    ['20-30', '30-40', '50-60']
    """
    current, suppressed = frame, 0
    tables, links = None, ()
    for raw in steps:
        step = raw if isinstance(raw, Step) else Step.from_dict(raw)
        if tables is not None:
            raise ValueError("A partition step must be the last step")
        p = dict(step.parameters)
        if step.method in METHODS:
            current = METHODS[step.method](current, step.column, p)
        elif step.method == MONDRIAN:
            result = mondrian(
                current,
                p["quasi_identifiers"],
                p["k"],
                sensitive=p.get("sensitive", ()),
                l=p.get("l"),
                max_suppression=p.get("max_suppression", 0.0),
            )
            current, suppressed = result.frame, suppressed + result.suppressed_rows
        elif step.method == PARTITION:
            result = partition(
                current,
                p["quasi_identifiers"],
                k=p["k"],
                groups=p["groups"],
                l=p.get("l"),
                max_suppression=p.get("max_suppression", 0.0),
            )
            tables, links = result.tables, result.links
            suppressed += result.suppressed_rows
        else:
            raise ValueError(
                f"Unknown anonymization method {step.method!r} for column {step.column!r}"
            )
    if tables is not None:
        return Anonymized(None, tables, links, suppressed)
    return Anonymized(current, None, (), suppressed)


def shown_parameters(parameters: Mapping[str, Any]) -> str:
    """A step's parameters for people: ``levels = 2``; a mapping (a hierarchy's table, a
    label map) by its size rather than its thousands of entries; a list joined."""
    parts = []
    for name, value in parameters.items():
        if isinstance(value, Mapping):
            value = f"{len(value):,} values"
        elif isinstance(value, list | tuple):
            value = ", ".join(map(str, value))
        parts.append(f"{name} = {value}")
    return ", ".join(parts)
