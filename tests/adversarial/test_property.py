"""Property: whatever a member sends and declares, what the broker approves passes the judge.

Hypothesis draws small tables (5-60 rows, 2-6 columns of random kinds: low-cardinality
categories, integers, unique ids, unique e-mails), random declarations (each column a
quasi-identifier, sensitive, or undeclared), a random format (CSV, JSON, Parquet) and
``anonymize`` none or auto, and sends them SN -> FR. Deterministic (``derandomize``), 25
examples plus three explicit ones that the seed policies approve as sent (one per format), no
shrinking (each example is a real transfer; the first failing one is reported).

Whenever the broker approves, on the bytes fr-research received:

* no identifier column, no original id or e-mail anywhere in the bytes;
* k >= 3 over every delivered, non-constant column not declared sensitive ("attacker-known":
  decided here, not by what the broker inferred), and, when several columns are declared
  sensitive, also over all delivered columns but one sensitive column at a time (declaring a
  column sensitive must not let it identify people together with the others);
* the delivery is in the format that came in, and when approved without anonymization it is
  exactly the measured table: the same rows, as a multiset, as the upload parsed the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from tests.adversarial import judge
from tests.adversarial.conftest import assert_clean_refusal
from tests.adversarial.tables import emails, national_ids, rng, serialize

KINDS = ("category", "int", "id", "email")
# Drawn with these weights, so that a fair share of tables can be approved as they are.
KIND_DRAWS = ("category", "category", "category", "int", "id", "email")
ROLES = ("qi", "sensitive", "none")
MEDIA = {"csv": "text/csv", "json": "application/json", "parquet": "application/vnd.apache.parquet"}


@dataclass(frozen=True)
class Scenario:
    rows: int
    kinds: tuple[str, ...]
    roles: tuple[str, ...]
    cardinalities: tuple[int, ...]
    fmt: str
    anonymize: str
    seed: int

    def table(self) -> tuple[pd.DataFrame, list[str]]:
        """The table, and its unique identifying values (ids, e-mails) as secrets."""
        r = rng(self.seed)
        columns, secrets = {}, []
        for index, (kind, cardinality) in enumerate(
            zip(self.kinds, self.cardinalities, strict=True)
        ):
            name = f"{kind}_{index}"
            if kind == "category":
                values = [f"v{int(v)}" for v in r.integers(0, cardinality, self.rows)]
            elif kind == "int":
                values = [int(v) for v in r.integers(0, 100, self.rows)]
            elif kind == "id":
                values = [f"ID{v}" for v in national_ids(self.rows, seed=self.seed + index)]
                secrets += values
            else:
                values = emails(self.rows, seed=self.seed + index)
                secrets += values
            columns[name] = values
        return pd.DataFrame(columns), secrets

    def declared(self, role: str) -> list[str]:
        pairs = enumerate(zip(self.kinds, self.roles, strict=True))
        return [f"{kind}_{i}" for i, (kind, r) in pairs if r == role]


@st.composite
def scenarios(draw) -> Scenario:
    width = draw(st.integers(2, 6))
    return Scenario(
        rows=draw(st.integers(5, 60)),
        kinds=tuple(draw(st.lists(st.sampled_from(KIND_DRAWS), min_size=width, max_size=width))),
        roles=tuple(draw(st.lists(st.sampled_from(ROLES), min_size=width, max_size=width))),
        cardinalities=tuple(draw(st.lists(st.integers(2, 4), min_size=width, max_size=width))),
        fmt=draw(st.sampled_from(("csv", "json", "parquet"))),
        anonymize=draw(st.sampled_from(("none", "auto"))),
        seed=draw(st.integers(0, 10_000)),
    )


def attacker_known(delivered: pd.DataFrame, sensitive: list[str]) -> list[list[str]]:
    """Column sets an attacker may know: all but the sensitive ones, and with several sensitive
    columns, all but one sensitive column at a time (constant columns split nothing)."""
    present = [
        c for c in delivered.columns if judge.keyed(delivered[[c]])[c].nunique(dropna=False) > 1
    ]
    sets = [[c for c in present if c not in sensitive]]
    in_delivery = [s for s in sensitive if s in present]
    if len(in_delivery) > 1:
        sets += [[c for c in present if c != s] for s in in_delivery]
    return sets


def canonical_rows(frame: pd.DataFrame, columns: list[str]) -> list[tuple[str, ...]]:
    return sorted(tuple(judge._key(v)[1] for v in row) for row in frame[columns].itertuples(False))


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenario=scenarios())
@example(
    scenario=Scenario(60, ("category", "category"), ("qi", "sensitive"), (2, 3), "csv", "none", 1)
)
@example(scenario=Scenario(60, ("category", "int"), ("qi", "sensitive"), (2, 3), "json", "none", 2))
@example(
    scenario=Scenario(
        60, ("category", "category"), ("none", "sensitive"), (2, 3), "parquet", "none", 3
    )
)
def test_whatever_is_approved_passes_the_judge(broker, scenario):
    """Random tables, declarations, formats and anonymize modes: an approval is never a leak,
    and an approval without anonymization delivers exactly the measured table, re-serialized in
    the format that came in."""
    frame, secrets = scenario.table()
    data, filename = serialize(frame, scenario.fmt)
    sensitive = scenario.declared("sensitive")
    response = broker.post(
        data,
        filename,
        quasi_identifiers=scenario.declared("qi") or None,
        sensitive=sensitive or None,
        anonymize=scenario.anonymize,
    )
    if response.status_code != 200:
        print(f"{scenario} -> HTTP {response.status_code}")  # shown with pytest -s
        assert_clean_refusal(response)
        return
    answer = response.json()
    print(f"{scenario} -> {answer['status']}")  # shown with pytest -s
    if answer["status"] != "approved":
        broker.assert_not_delivered(answer)
        return

    headers, body = broker.delivered_for(answer["id"])
    delivered = judge.parse(headers["content-type"], body)
    problems = judge.verdict(
        headers, body, known_sets=attacker_known(delivered, sensitive), secrets=secrets
    )
    assert problems == [], f"{scenario}: approved, and the judge finds:\n- " + "\n- ".join(problems)
    assert judge.kind(headers["content-type"]) == scenario.fmt, (
        f"sent as {scenario.fmt}, delivered as {headers['content-type']}"
    )
    if not answer["dataset"].get("anonymized"):
        original = judge.parse(MEDIA[scenario.fmt], data)
        assert sorted(delivered.columns) == sorted(original.columns)
        columns = list(original.columns)
        assert canonical_rows(delivered, columns) == canonical_rows(original, columns), (
            f"{scenario}: approved as sent, but the delivered rows are not the measured table"
        )
