"""The one generalization planner, on count tables, chooses what a plain climb on the rows chooses.

:func:`datafly_on_rows` below is the generalization method written the simple way: every
candidate is applied to the rows (``apply_steps``) and measured on the rows (``verify``), one rung
at a time. The planner (``plan_remedy(frame, method="generalization")``, which plans on a pandas
engine's counts, and ``plan_on_engine`` on DuckDB's) must choose the same steps, reach the same
checks and, on a frame, produce the same rows; the output is checked again with pycanon.
"""

import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pycanon import anonymity as pycanon

from broker.anonymize import (
    Step,
    Target,
    apply_steps,
    generalize_quantiles,
    information_loss,
    plan_on_engine,
    plan_remedy,
)
from broker.anonymize.generalization import quantile_labels
from broker.anonymize.ladder import rungs
from broker.anonymize.verify import describe, verify
from broker.engines.duckdb import DuckDBEngine, write
from broker.engines.pandas import PandasEngine
from broker.metrics.mmaq import mmaq
from tests.anonymize.helpers import read_fixture
from tests.anonymize.test_planner import generated

ENGINES = {"pandas": PandasEngine, "duckdb": DuckDBEngine.from_frame}


def datafly_on_rows(frame: pd.DataFrame, target: Target):
    """The generalization method on the rows: the steps, the last checks and the output (None
    when a check fails). Each rung is applied to the rows and every candidate measured there."""
    drop = [name for name in target.drop if name in frame.columns]
    qis = [name for name in target.quasi_identifiers if name not in drop]
    sensitive = [name for name in target.sensitive if name not in drop]
    steps = [Step(name, "drop") for name in drop]
    steps += [step for step in target.precision if step.column in frame.columns]
    work = apply_steps(frame, steps).frame
    for name, bound in target.max_mmaq_index.items():
        if name in (*drop, *qis, *sensitive) or mmaq(work, name).mmaq_index <= bound:
            continue
        for step in rungs(pd.Series(work[name].unique()), name, target.hierarchies.get(name)):
            candidate = apply_steps(work, [step]).frame
            if mmaq(candidate, name).mmaq_index <= bound:
                break
        steps.append(step)
        work = candidate
    climbing = any(v is not None for v in (target.k, target.l, target.t)) or any(
        name in target.max_mmaq_index for name in qis
    )
    ladders = [
        rungs(pd.Series(work[q].unique()), q, target.hierarchies.get(q)) if climbing else []
        for q in qis
    ]
    levels = [0] * len(qis)
    while True:
        climbed = [ladders[i][n - 1] for i, n in enumerate(levels) if n]
        out = apply_steps(work, climbed).frame
        checks = verify(out, target, qis, sensitive, drop, 0, len(frame))
        failing = [check for check in checks if not check.passed]
        candidates = [i for i in range(len(qis)) if levels[i] < len(ladders[i])]
        if all(check.rule == "mmaq_index" for check in failing):
            candidates = [i for i in candidates if qis[i] in {c.attribute for c in failing}]
        if not failing or not candidates:
            return [*steps, *climbed], checks, None if failing else out
        levels[max(candidates, key=lambda i: (out[qis[i]].nunique(dropna=False), -i))] += 1


def assert_same_plan(frame: pd.DataFrame, target: Target, engine_name: str):
    steps, checks, out = datafly_on_rows(frame, target)
    on_rows = plan_remedy(frame, target, method="generalization")
    assert on_rows.steps == tuple(steps)
    assert on_rows.satisfied == (out is not None)
    failing = [check for check in checks if not check.passed]
    assert on_rows.reason == (describe(failing) if failing else None)
    if out is None:
        assert on_rows.frame is None
    else:
        pd.testing.assert_frame_equal(on_rows.frame, out, check_dtype=False)
    on_counts = plan_on_engine(ENGINES[engine_name](frame), target)
    assert on_counts.steps == on_rows.steps
    assert on_counts.satisfied == on_rows.satisfied
    assert on_counts.reason == on_rows.reason
    for remedy in (on_rows, on_counts):
        assert [(c.rule, c.attribute, c.passed) for c in remedy.checks] == [
            (c.rule, c.attribute, c.passed) for c in checks
        ]
        for ours, theirs in zip(remedy.checks, checks, strict=True):
            if theirs.measured is None:  # the drop checks
                assert ours.measured is None
            else:
                assert ours.measured == pytest.approx(theirs.measured, rel=1e-12, abs=1e-12)
    return on_rows, on_counts


def published(remedy) -> pd.DataFrame:
    """The recoded table as the engine writes it."""
    columns = remedy.engine.columns
    dictionaries = {c: remedy.engine.dictionary(c) for c in columns}
    [table] = remedy.engine.counts([columns])
    values = {c: dictionaries[c].to_numpy(dtype=object)[table.codes(c)] for c in columns}
    rows = np.repeat(np.arange(table.size), table.rows)
    return pd.DataFrame(values).iloc[rows].reset_index(drop=True)


# --- quantile bins from counts --------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([-3.5, 0.0, 1.0, 2.0, 7.25, 1e15, 1e15 + 2.0, 40.0]), st.integers(1, 9)
        ),
        min_size=1,
        max_size=8,
        unique_by=lambda pair: pair[0],
    ),
    st.integers(1, 12),
)
def test_quantile_labels_from_counts_are_those_of_the_rows(pairs, bins):
    numbers = np.array([n for n, _ in pairs])
    rows = np.array([r for _, r in pairs])
    frame = pd.DataFrame({"x": [str(n) for n, r in pairs for _ in range(r)]})
    first_rows = np.cumsum(np.append(0, rows[:-1]))
    expected = generalize_quantiles(frame, "x", bins)["x"].to_numpy()[first_rows].tolist()
    assert quantile_labels(numbers, rows, bins).tolist() == expected


def test_quantile_labels_by_hand():
    # Rows 1, 1, 1, 2, 9, 9 (N = 6): thirds at virtual indexes 0, 5/3, 10/3, 5 give edges
    # 1, 1, 2 + (9 - 2) / 3, 9; the equal edges merge: bins [1, 4.33], (4.33, 9].
    labels = quantile_labels(np.array([9.0, 1.0, 2.0]), np.array([2, 3, 1]), 3)
    assert labels.tolist() == ["9", "1-2", "1-2"]
    labels = quantile_labels(np.array([9.0, 1.0, 2.0]), np.array([2, 3, 1]), 2)
    assert labels.tolist() == ["2-9", "1", "2-9"]  # median 1.5: (1.5, 9] holds 2 and 9


# --- the count path chooses as the frame path -----------------------------------------------------

TARGETS = [
    Target(quasi_identifiers=("age", "sex", "zip"), sensitive=("disease",), drop=("NIN",), k=5),
    Target(
        quasi_identifiers=("age", "sex", "zip"), sensitive=("disease",), drop=("NIN",), k=4, l=3
    ),
    Target(
        quasi_identifiers=("age", "sex", "zip", "admitted", "income"),
        sensitive=("disease",),
        drop=("NIN",),
        k=5,
        t=0.3,
    ),
    Target(
        quasi_identifiers=("age", "sex"),
        sensitive=("disease",),
        k=3,
        t=0.2,
        max_mmaq_index={"zip": 0.05, "income": 0.1, "sex": 0.01, "disease": 0.1},
    ),
    Target(quasi_identifiers=("zip", "admitted"), max_mmaq_index={"zip": 0.2, "admitted": 0.05}),
]


@pytest.mark.parametrize("engine_name", sorted(ENGINES))
@pytest.mark.parametrize("target", TARGETS, ids=range(len(TARGETS)))
def test_the_same_generalization_on_counts_as_on_rows(engine_name, target):
    frame = generated(1500, seed=3)
    on_rows, on_counts = assert_same_plan(frame, target, engine_name)
    assert on_counts.satisfied
    out = published(on_counts)
    assert sorted(map(tuple, out.to_numpy().tolist())) == sorted(
        map(tuple, on_rows.frame.to_numpy().tolist())
    )


@pytest.mark.parametrize("engine_name", sorted(ENGINES))
def test_the_same_generalization_on_the_fixtures(engine_name):
    cases = [
        ("patients_original.csv", ("Age", "Gender"), ("Disease",), ("NIN", "Name"), 3, 2, None),
        ("patients_original.csv", ("Age", "Gender"), ("Disease",), ("NIN", "Name"), 2, None, 0.5),
        ("census_sample.csv", ("Age", "Gender", "ZipCode"), ("Salary",), (), 2, None, None),
        ("census_sample.csv", ("Age", "ZipCode", "MaritalStatus"), ("Salary",), (), 3, 2, None),
        ("patients_published.csv", ("Age", "Gender"), ("Disease",), (), 2, 2, None),
    ]
    for name, qis, sensitive, drop, k, l, t in cases:
        frame = read_fixture(name)
        target = Target(quasi_identifiers=qis, sensitive=sensitive, drop=drop, k=k, l=l, t=t)
        assert_same_plan(frame, target, engine_name)


TEXT = st.sampled_from(["a", "b", "c", "d", "", "é"])


@st.composite
def tables(draw):
    rows = draw(st.integers(4, 60))
    ages = draw(st.lists(st.integers(0, 99), min_size=rows, max_size=rows))
    zips = draw(
        st.lists(
            st.sampled_from(["57001", "57002", "57140", "75001"]), min_size=rows, max_size=rows
        )
    )
    kinds = draw(st.lists(TEXT, min_size=rows, max_size=rows))
    sensitive = draw(
        st.lists(st.sampled_from(["flu", "hiv", "cold"]), min_size=rows, max_size=rows)
    )
    return pd.DataFrame(
        {"age": [str(a) for a in ages], "zip": zips, "kind": kinds, "disease": sensitive}
    )


@settings(max_examples=60, deadline=None)
@given(
    tables(),
    st.integers(1, 8),
    st.one_of(st.none(), st.integers(1, 3)),
    st.one_of(st.none(), st.sampled_from([0.0, 0.1, 0.4])),
    st.sampled_from(sorted(ENGINES)),
)
def test_the_same_generalization_on_generated_tables(frame, k, l, t, engine_name):
    target = Target(quasi_identifiers=("age", "zip", "kind"), sensitive=("disease",), k=k, l=l, t=t)
    _on_rows, on_counts = assert_same_plan(frame, target, engine_name)
    if on_counts.satisfied:
        out = published(on_counts)
        assert pycanon.k_anonymity(out, ["age", "zip", "kind"]) >= k
        if l is not None:
            assert pycanon.l_diversity(out, ["age", "zip", "kind"], ["disease"]) >= l


CITIES = {"Dakar": "Senegal", "Thies": "Senegal", "Lyon": "France", "Lille": "France"}


@st.composite
def two_sensitive(draw):
    rows = draw(st.integers(4, 50))

    def column(values):
        return draw(st.lists(st.sampled_from(values), min_size=rows, max_size=rows))

    return pd.DataFrame(
        {
            "age": [
                str(a) for a in draw(st.lists(st.integers(0, 99), min_size=rows, max_size=rows))
            ],
            "city": column([*CITIES, "Touba", ""]),
            "disease": column(["flu", "hiv", "cold"]),
            "income": column(["10", "20", "35", "80"]),
        }
    )


@settings(max_examples=60, deadline=None)
@given(
    two_sensitive(),
    st.integers(1, 6),
    st.one_of(st.none(), st.integers(1, 3)),
    st.one_of(st.none(), st.sampled_from([0.1, 0.5])),
    st.one_of(st.none(), st.sampled_from([0.01, 0.2])),
    st.sampled_from(sorted(ENGINES)),
)
def test_the_same_generalization_with_two_sensitive_attributes_and_a_hierarchy(
    frame, k, l, t, bound, engine_name
):
    # The city's ladder is not a chain of coarsenings (Senegal at the first rung, then prefixes
    # of the city again: "Dak*", "Thi*"), so this climb goes one rung at a time.
    target = Target(
        quasi_identifiers=("age", "city"),
        sensitive=("disease", "income"),
        k=k,
        l=l,
        t=t,
        max_mmaq_index={} if bound is None else {"age": bound, "city": bound},
        hierarchies={"city": CITIES},
    )
    assert_same_plan(frame, target, engine_name)


def test_the_same_generalization_when_the_codes_overflow_one_key():
    # Eight quasi-identifiers of about 330 distinct values each: 330^8 > 2^63 tuple keys.
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({f"x{i}": rng.integers(0, 1000, 400).astype(str) for i in range(8)})
    frame["disease"] = rng.choice(["flu", "hiv", "cold"], 400)
    qis = tuple(f"x{i}" for i in range(8))
    target = Target(quasi_identifiers=qis, sensitive=("disease",), k=3, l=2)
    _on_rows, on_counts = assert_same_plan(frame, target, "duckdb")
    assert on_counts.satisfied


def test_progress_is_told_each_generalization_measured():
    frame = generated(1500, seed=3)
    calls = []
    remedy = plan_on_engine(PandasEngine(frame), TARGETS[2], progress=calls.append)
    assert remedy.satisfied
    assert calls == list(range(1, remedy.attempts + 1)) and remedy.attempts > 1


# --- verified, and checked by pycanon ---------------------------------------------------------


def test_the_written_output_is_k_anonymous_l_diverse_and_t_close_for_pycanon(tmp_path):
    frame = generated(3000, seed=11)
    target = Target(
        quasi_identifiers=("age", "sex", "zip"),
        sensitive=("disease",),
        drop=("NIN",),
        k=10,
        l=3,
        t=0.2,
    )
    remedy = plan_on_engine(DuckDBEngine.from_frame(frame), target)
    assert remedy.satisfied and remedy.frame is None
    path = tmp_path / "out.csv"
    write(remedy.engine, path, "csv")
    out = pd.read_csv(path, dtype=str, keep_default_na=False)
    assert len(out) == 3000 and "NIN" not in out.columns
    qis = ["age", "sex", "zip"]
    assert pycanon.k_anonymity(out, qis) >= 10
    assert pycanon.l_diversity(out, qis, ["disease"]) >= 3
    assert pycanon.t_closeness(out, qis, ["disease"]) <= 0.2 + 1e-9
    # Every published value is what the plan says of its original one.
    ages = remedy.recode.labels["age"]
    assert sorted(out["age"]) == sorted(ages.get(a, a) for a in frame["age"])


def test_k_by_hand():
    # Ages 21 23 24 35 36 38 52 57 (8 values: quantile bins 4 then 2) and sex (2 values). Age
    # climbs first (more distinct values): quartile edges 21, 23.75, 35.5, 41.5, 57 leave
    # (21-23, F) and (21-23, M) alone; the median 35.5 then gives two bins, four classes of 2.
    frame = pd.DataFrame(
        {"age": ["21", "24", "35", "38", "52", "57", "23", "36"], "sex": list("FFMMFFMM")}
    )
    remedy = plan_on_engine(PandasEngine(frame), Target(quasi_identifiers=("age", "sex"), k=2))
    assert remedy.satisfied
    assert [(s.column, s.method, s.parameters) for s in remedy.steps] == [
        ("age", "quantile", {"bins": 2}),
    ]
    assert remedy.recode.labels["age"] == {
        **dict.fromkeys(["21", "23", "24", "35"], "21-35"),
        **dict.fromkeys(["36", "38", "52", "57"], "36-57"),
    }
    [classes] = remedy.engine.counts([["age", "sex"]])
    assert sorted(classes.rows.tolist()) == [2, 2, 2, 2]


def test_an_engine_that_recodes_wrongly_is_caught_before_the_remedy_is_offered():
    class Forgetful(PandasEngine):
        def recode(self, plan):
            return PandasEngine(self.frame.drop(columns=list(plan.drop)))  # ignores the labels

    frame = generated(500)
    target = Target(quasi_identifiers=("age", "zip"), drop=("NIN",), k=5)
    remedy = plan_on_engine(Forgetful(frame), target)
    assert not remedy.satisfied and remedy.engine is None and remedy.recode is None
    assert remedy.reason.startswith("Target not reached: k is ")


def test_a_target_no_generalization_reaches_says_why():
    frame = read_fixture("patients_original.csv")
    target = Target(quasi_identifiers=("Age",), sensitive=("Disease",), k=2, l=10)
    remedy = plan_on_engine(PandasEngine(frame), target)
    on_rows = plan_remedy(frame, target, method="generalization")
    assert not remedy.satisfied and remedy.reason == on_rows.reason
    assert "l of 'Disease'" in remedy.reason and "limit 10" in remedy.reason


# --- Mondrian and partition need the whole table --------------------------------------------------


@pytest.mark.parametrize("method", ["mondrian", "partition"])
def test_mondrian_and_partition_are_refused_above_the_bound(method):
    frame = read_fixture("patients_original.csv")
    target = Target(quasi_identifiers=("Age", "Gender"), sensitive=("Disease",), k=3)
    remedy = plan_on_engine(PandasEngine(frame), target, method, whole_table_rows=8)
    assert not remedy.satisfied
    assert remedy.reason == (
        f"{method} needs the whole table in memory: 9 rows exceed the bound of 8; "
        "use generalization, which plans on counts"
    )
    loaded = plan_on_engine(
        PandasEngine(frame), target, method, whole_table_rows=9, load=lambda: frame
    )
    assert loaded.satisfied


def test_mondrian_within_the_bound_needs_the_rows():
    frame = read_fixture("patients_original.csv")
    with pytest.raises(ValueError, match="mondrian needs the rows"):
        plan_on_engine(PandasEngine(frame), Target(quasi_identifiers=("Age",), k=3), "mondrian")


# --- what the frame path adds: the rows, their information loss, the caller's acceptance ---------


def test_a_generalization_on_a_frame_measures_its_loss_against_the_input():
    frame = generated(400, seed=3)
    target = TARGETS[3]  # k, t, and mmaq bounds on quasi-identifiers and other attributes
    _steps, _checks, out = datafly_on_rows(frame, target)
    remedy = plan_remedy(frame, target, method="generalization")
    assert remedy.satisfied and remedy.recode is None and remedy.engine is None
    generalized = [s.column for s in remedy.steps if s.column not in target.quasi_identifiers]
    assert generalized == ["zip", "income"]  # the bounded attributes that are not quasi ones
    expected = information_loss(frame, out, ["age", "sex", "zip", "income"])
    assert remedy.information_loss == expected
    assert 0 < remedy.information_loss.utility_percent < 100


def test_a_generalization_the_caller_refuses_is_not_offered():
    frame = generated(400, seed=3)
    shown = []

    def refuse(anonymized: pd.DataFrame) -> str:
        shown.append(anonymized)
        return "the caller's rules still fail"

    remedy = plan_remedy(frame, TARGETS[0], method="generalization", accept=refuse)
    assert not remedy.satisfied and remedy.reason == "the caller's rules still fail"
    assert remedy.frame is None and remedy.information_loss is None and remedy.attempts > 1
    assert all(check.passed for check in remedy.checks)  # the target was met, the caller said no
    _steps, _checks, out = datafly_on_rows(frame, TARGETS[0])
    [anonymized] = shown  # asked once, about the rows the plan gives
    pd.testing.assert_frame_equal(anonymized, out, check_dtype=False)
    accepted = plan_remedy(frame, TARGETS[0], method="generalization", accept=lambda _: None)
    assert accepted.satisfied and accepted.steps == remedy.steps


def test_a_generalization_past_its_deadline_says_so():
    frame = generated(400, seed=3)
    remedy = plan_remedy(frame, TARGETS[1], method="generalization", deadline=time.monotonic() - 1)
    assert not remedy.satisfied and remedy.out_of_time and remedy.frame is None
    assert remedy.attempts == 1  # the first generalization measured, none after the deadline
    assert remedy.reason.startswith("Target not reached: k is ")
