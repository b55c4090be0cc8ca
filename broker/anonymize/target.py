"""What a plan aims at (:class:`Target`) and what it returns (:class:`Remedy`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from broker.anonymize.loss import InformationLoss
from broker.anonymize.partition import Link
from broker.anonymize.steps import Step
from broker.anonymize.verify import Check
from broker.columns.roles import require_columns, require_distinct_roles
from broker.engines.base import Engine, RecodePlan
from broker.metrics.content import looks_sensitive

Acceptance = Callable[[pd.DataFrame], "str | None"]
"""The caller's own check of an anonymized frame: None when it accepts it, else why not (for the
broker, an F-SLA evaluation of its report). A refusal raises k, like a failed t."""


@dataclass(frozen=True)
class Target:
    """What the data that leaves must satisfy (the stricter of export and import rules)."""

    quasi_identifiers: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()
    k: int | None = None
    l: int | None = None
    t: float | None = None
    max_mmaq_index: dict[str, float] = field(default_factory=dict)
    max_suppression: float = 0.05
    hierarchies: dict[str, dict[str, str]] = field(default_factory=dict)
    # Who each row of the frame is (labellings, one code per row), so that labels name only
    # categories that k people hold: a village of one person sent ten times stays unnamed.
    people: tuple[np.ndarray, ...] = ()
    # Why the target asks what it asks, in words, for the steps' reasons: a dropped column's
    # name -> why it is dropped, and "k" -> where k comes from (the rule that set it).
    reasons: dict[str, str] = field(default_factory=dict)
    # One-column steps applied first, to any column that leaves (not only quasi-identifiers):
    # dates, postcodes and ages made as coarse as the rules on identifying precision allow.
    precision: tuple[Step, ...] = ()

    def check(self, frame: pd.DataFrame) -> None:
        """Raise ``ValueError`` naming what makes this target malformed for ``frame``."""
        self.check_table(frame.columns, len(frame))
        if not frame.index.is_unique:
            raise ValueError(
                "The dataset's row labels repeat: reset its index (rows are matched by label)"
            )

    def check_table(self, columns: Sequence[str], rows: int) -> None:
        """:meth:`check` for a table known by its columns and number of rows (an engine's)."""
        if rows == 0:
            raise ValueError("The dataset has no rows: there is nothing to anonymize")
        require_columns(columns, self.quasi_identifiers, "Quasi-identifier")
        require_columns(columns, self.sensitive, "Sensitive attribute")
        require_columns(columns, list(self.hierarchies), "Hierarchy column")
        require_columns(columns, [step.column for step in self.precision], "Precision column")
        require_distinct_roles(self.quasi_identifiers, self.sensitive)
        for name, value in (("k", self.k), ("l", self.l)):
            if value is not None and (not isinstance(value, int | np.integer) or value < 1):
                raise ValueError(f"Target {name} must be an integer >= 1, got {value!r}")
        if self.t is not None and not 0.0 <= self.t <= 1.0:
            raise ValueError(f"Target t must be in [0, 1], got {self.t!r}")
        if not 0.0 <= self.max_suppression <= 1.0:
            raise ValueError(f"max_suppression must be in [0, 1], got {self.max_suppression!r}")
        for name, bound in self.max_mmaq_index.items():
            if not (isinstance(bound, int | float) and 0.0 <= bound <= 1.0):
                raise ValueError(f"The mmaq_index bound of column {name!r} must be in [0, 1]")
        if (self.l is not None or self.t is not None) and not self.sensitive:
            raise ValueError(no_sensitive_declared(columns))


def dropped_because(target: Target, name: str) -> str:
    """Why ``name`` is dropped: the target's reason, else that it was asked."""
    return target.reasons.get(name) or f"{name} is one of the columns the target drops"


def no_sensitive_declared(columns: Sequence[str]) -> str:
    """The error for l or t asked without a sensitive attribute: where to declare one, and which
    columns look sensitive (a guess from their names, said to be one)."""
    guessed = looks_sensitive(list(columns))
    shown = ", ".join(guessed[:10]) + (
        f" and {len(guessed) - 10} more" if len(guessed) > 10 else ""
    )
    hint = (
        f"; columns that look sensitive (a guess from their names): {shown}"
        if guessed
        else "; no column's name looks sensitive (diagnosis, religion, income, ...), so name them"
    )
    return (
        "l and t apply to sensitive attributes, and none is declared: list them in the "
        "`sensitive` form field of a transfer or an analysis (`--sensitive` on the command "
        f"line){hint}"
    )


@dataclass(frozen=True, eq=False)
class Remedy:
    """The planner's answer.

    Attributes
    ----------
    satisfied : bool
        True only if every check passed on the re-measured output.
    reason : str or None
        Why the target could not be met (None when satisfied).
    steps : tuple of Step
        What was applied, in order.
    frame : DataFrame or None
        The data that may leave (methods mondrian and generalization planned on a frame), None
        for partition, for a plan made on an engine's counts, or when not satisfied.
    tables : dict of str to DataFrame, or None
        The linked tables (method partition), None otherwise or when not satisfied.
    links : tuple of Link
    suppressed_rows : int
    information_loss : InformationLoss or None
        Against the input; None when nothing was produced.
    checks : tuple of Check
        Every verified rule of the last attempt, passed or not.
    notes : tuple of str
        What a reader should know (bounds ignored, what partition does not hide).
    recode : RecodePlan or None
        For a plan made on an engine's counts: what the engine applied (the steps as value ->
        label maps).
    engine : Engine or None
        For a plan made on an engine's counts: the recoded table, verified, that may leave.
    attempts : int
        How many times the method ran (k doubles between attempts); for generalization, how
        many generalizations were measured (the climb bisects along the rungs it would climb).
    out_of_time : bool
        True when the search stopped at its deadline; ``reason`` is then the last failure.
    """

    satisfied: bool
    reason: str | None
    steps: tuple[Step, ...]
    frame: pd.DataFrame | None = None
    tables: dict[str, pd.DataFrame] | None = None
    links: tuple[Link, ...] = ()
    suppressed_rows: int = 0
    information_loss: InformationLoss | None = None
    checks: tuple[Check, ...] = ()
    notes: tuple[str, ...] = ()
    recode: RecodePlan | None = None
    engine: Engine | None = None
    attempts: int = 0
    out_of_time: bool = False

    def as_dict(self) -> dict:
        """Everything but the data, JSON-serializable."""
        return {
            "satisfied": self.satisfied,
            "reason": self.reason,
            "steps": [step.as_dict() for step in self.steps],
            "links": [link.as_dict() for link in self.links],
            "suppressed_rows": self.suppressed_rows,
            "information_loss": self.information_loss.as_dict() if self.information_loss else None,
            "checks": [check.as_dict() for check in self.checks],
            "notes": list(self.notes),
        }
