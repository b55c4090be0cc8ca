"""One definition of an identifier: the remedy of a decision drops the columns the catalog drops
before it estimates the utility it advertises, and an offer keeps the same ones home
(broker.fsla.identifying)."""

import pandas as pd
import pytest

from broker.catalog import entries
from broker.catalog import service as catalog
from broker.engines.pandas import PandasEngine
from broker.fsla.evaluate import evaluate
from broker.fsla.models import FSLARecord, RuleSet
from broker.fsla.offers import Listing, Party, offer
from broker.fsla.remedy import target_for
from broker.fsla.results import TransferContext
from broker.metrics.report import ReportOptions, analyze

# 12 rows. By hand: "email" holds e-mails (a direct identifier); "name" is text, all distinct;
# "age" an ordered quasi-identifier, all distinct (generalized, kept); "code" a text
# quasi-identifier, all distinct (would become a list of its values: dropped); "born" declared
# sensitive, 10 of 12 rows hold a date no other row holds (singled out: dropped); "disease"
# sensitive, 3 values (kept); "sex" two values (kept).
FRAME = pd.DataFrame(
    {
        "email": [f"person{i}@example.org" for i in range(12)],
        "name": [f"Name{chr(65 + i)}" for i in range(12)],
        "age": [20 + 3 * i for i in range(12)],
        "code": [f"C{chr(65 + i)}X" for i in range(12)],
        "born": [f"19{50 + i}-0{1 + i % 9}-1{i % 9}" for i in range(10)] + ["1990-01-01"] * 2,
        "disease": ["flu", "cold", "hiv"] * 4,
        "sex": ["F", "M"] * 6,
    }
)
QI = ("age", "code", "sex")
SENSITIVE = ("born", "disease")
BY_HAND = {"email", "name", "code", "born"}


def record(code: str, rules: RuleSet) -> FSLARecord:
    return FSLARecord(
        jurisdiction=code,
        name=code,
        legal_basis="law",
        authority="authority",
        allowed_destinations=["*"],
        allowed_purposes=["research"],
        cross_border_export=rules,
    )


@pytest.mark.parametrize("k", [2, 3])
def test_the_remedy_and_the_catalog_drop_the_same_identifiers(monkeypatch, k):
    report = analyze(FRAME, list(QI), list(SENSITIVE), ReportOptions(max_combination_size=0))
    context = TransferContext("SN", "FR", "research", QI, SENSITIVE)
    source, destination = record("SN", RuleSet(min_k=k)), record("FR", RuleSet())
    decision = evaluate(report, context, source, destination)
    remedy = target_for(FRAME.__getitem__, decision, report, context, 0.05)
    assert set(remedy.drop) == BY_HAND

    planned = []

    def plan(frame, target):
        planned.append(target)
        raise ValueError("enough: only the target is compared")

    monkeypatch.setattr(catalog, "plan_remedy", plan)
    monkeypatch.setattr(catalog, "UTILITY_KS", (k,))
    catalog._utility(PandasEngine(FRAME), report, QI, SENSITIVE)
    [target] = planned
    assert set(target.drop) == set(remedy.drop)
    assert (target.quasi_identifiers, target.sensitive) == (
        remedy.quasi_identifiers,
        remedy.sensitive,
    )


@pytest.mark.parametrize("k", [2, 3])
def test_the_catalog_records_what_the_remedy_drops_and_offers_keep_it_home(k):
    report = analyze(FRAME, list(QI), list(SENSITIVE), ReportOptions(max_combination_size=0))
    summary = catalog._summary(report, QI, SENSITIVE, PandasEngine(FRAME)).stored()
    assert set(summary["dropped_at_k"][str(k)]) == BY_HAND
    columns = tuple((name, "other") for name in FRAME.columns if name not in QI + SENSITIVE)
    columns += tuple((q, "quasi_identifier") for q in QI)
    columns += tuple((s, "sensitive") for s in SENSITIVE)
    listing = Listing("provider", "SN", columns, summary=entries.summary_of(summary))
    provider = Party("provider", "SN", record("SN", RuleSet(min_k=k)))
    consumer = Party("consumer", "FR", record("FR", RuleSet()))
    found = offer(listing, provider, consumer, "research")
    assert set(found.terms.columns) == set(FRAME.columns) - BY_HAND
    assert any("'born' identifies the rows" in r for r in found.reasons)  # sensitive, too
