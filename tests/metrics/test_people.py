"""k and l counted in people: a person key, identical rows, and the worst case for rare tuples."""

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.engines.pandas import PandasEngine
from broker.engines.people import _positions
from broker.fsla.evaluate import evaluate
from broker.fsla.results import TransferContext
from broker.metrics.report import ReportOptions, report_of
from tests.fsla.test_evaluate import record

# Two women with a birth date each, each sent three times with three diagnoses; a third woman
# born the same year as the second, sent once.
SENT = pd.DataFrame(
    {
        "born": ["1983-04-12", "12/04/1983", "1983-04-12 08:30", "1990-01-05", "1990-01-05",
                 "1990-01-05", "1990"],
        "sex": ["F"] * 7,
        "diagnosis": ["flu", "hiv", "cold", "flu", "asthma", "cold", "flu"],
        "person": ["a", "a", "a", "b", "b", "b", "c"],
    }
)  # fmt: skip


def measured(frame, quasi=("born", "sex"), person_key=None):
    key = None if person_key is None else frame[person_key]
    engine = PandasEngine(frame.drop(columns=["person"]), person_key=key)
    return report_of(engine, list(quasi), ["diagnosis"], ReportOptions(max_combination_size=0))


def test_without_a_key_the_rows_of_a_rare_tuple_are_one_person():
    report = measured(SENT.assign(born=SENT["born"].str[:10].where(SENT.index < 6, "1990")))
    assert report.people_counted_by == "worst_case"
    assert (report.rare_tuples, report.rare_tuple_rows) == (2, 6)
    anonymity = report.quasi_identifiers.anonymity
    assert (anonymity.k, anonymity.k_people) == (1, 1)  # "1990" is one row
    [diagnosis] = report.sensitive
    assert (diagnosis.k, diagnosis.l_diversity) == (1, 1)


def test_one_date_written_three_ways_is_one_tuple():
    report = measured(SENT.iloc[:3])
    assert (report.rare_tuples, report.rare_tuple_rows) == (1, 3)
    # As written, three classes of one row each: k = 1 in rows already.
    assert report.quasi_identifiers.anonymity.k_people == 1


def test_l_counts_no_more_values_than_people():
    three_times = SENT.iloc[3:6]  # one person, three diagnoses, one rare tuple
    [diagnosis] = measured(three_times).sensitive
    assert diagnosis.l_diversity == 1
    [as_keyed] = measured(three_times, person_key="person").sensitive
    assert as_keyed.l_diversity == 1  # the key says the same: one person


def test_a_person_key_only_merges():
    twins = pd.DataFrame(
        {
            "born": ["1990-01-05"] * 4,
            "sex": ["F"] * 4,
            "diagnosis": ["flu", "hiv", "flu", "cold"],
            "person": ["a", "a", "b", "b"],
        }
    )
    assert measured(twins).quasi_identifiers.anonymity.k_people == 1  # at worst
    # Two keys on one rare tuple look the same as one person's copies with a fresh key each:
    # the key cannot split what the worst case joins.
    keyed = measured(twins, person_key="person")
    assert keyed.people_counted_by == "person_key"
    assert keyed.quasi_identifiers.anonymity.k_people == 1
    # It joins what nothing else would: person a's two rows of a coarse tuple.
    coarse = pd.DataFrame(
        {
            "born": ["1990"] * 3,
            "sex": ["F"] * 3,
            "diagnosis": ["flu", "hiv", "cold"],
            "person": ["a", "a", "b"],
        }
    )
    assert measured(coarse).quasi_identifiers.anonymity.k_people == 3  # rows, as before
    keyed = measured(coarse, person_key="person")
    assert keyed.quasi_identifiers.anonymity.k_people == 2
    assert keyed.sensitive[0].l_diversity == 2  # three values, two people


def test_coarse_repeats_are_counted_as_before():
    coarse = pd.DataFrame(
        {
            "age_band": ["30-39"] * 4 + ["40-49"] * 4,
            "sex": ["F", "M"] * 4,
            "diagnosis": ["flu", "hiv", "cold", "asthma"] * 2,
            "person": list("abcdefgh"),
        }
    )
    report = measured(coarse, quasi=("age_band", "sex"))
    assert (report.people_counted_by, report.rare_tuples) == ("identical_rows", 0)
    assert report.quasi_identifiers.anonymity.k_people == 2
    assert report.sensitive[0].l_diversity == 2


def test_a_failing_k_says_the_worst_case_and_that_a_key_would_not_split_it():
    context = TransferContext("SN", "FR", "research", ("born", "sex"), ("diagnosis",))
    source = record("SN", export={"identifiers_allowed": True, "min_k": 2})
    decision = evaluate(measured(SENT.iloc[3:6]), context, source, record("FR"))
    [k] = [r for r in decision.failed if r.rule == "min_k"]
    assert "k = 1 people at worst (3 counted in rows" in k.detail
    assert "rare tuple(s)" in k.detail and "a person key would not split them" in k.detail
    # Three fresh keys on the one person's three rows: the same count, and it says why.
    lying = SENT.iloc[3:6].assign(person=["x1", "x2", "x3"])
    decision = evaluate(measured(lying, person_key="person"), context, source, record("FR"))
    [k] = [r for r in decision.failed if r.rule == "min_k"]
    assert "k = 1 people by the declared person key, which only joins rows" in k.detail
    assert "whatever the key says" in k.detail


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda width: st.tuples(
            st.lists(st.lists(st.integers(0, 6), min_size=width, max_size=width), max_size=20),
            st.lists(st.lists(st.integers(0, 6), min_size=width, max_size=width), max_size=30),
        )
    )
)
def test_rare_tuples_are_found_in_a_count_table_as_a_multiindex_finds_them(drawn):
    rare, table = drawn
    width = len((rare or table or [[0]])[0])
    rare = list(dict.fromkeys(map(tuple, rare)))  # the rare tuples are distinct
    known = [np.array([t[i] for t in rare], dtype=np.int64) for i in range(width)]
    asked = [np.array([t[i] for t in table], dtype=np.int64) for i in range(width)]
    found = _positions(known, asked)
    if rare:
        index = pd.MultiIndex.from_arrays(known)
        expected = index.get_indexer(pd.MultiIndex.from_arrays(asked))
    else:
        expected = np.full(len(table), -1)
    assert found.tolist() == expected.tolist()


def test_rare_tuples_with_codes_too_wide_for_one_key_are_found_all_the_same():
    known = [np.array([2**40, 0]), np.array([2**40, 1]), np.array([3, 4])]
    asked = [np.array([0, 2**40, 0]), np.array([1, 2**40, 1]), np.array([4, 3, 5])]
    assert _positions(known, asked).tolist() == [1, 0, -1]
