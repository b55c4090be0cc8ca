"""plan_remedy reaches targets it can, verified, and says honestly when it cannot."""

import json

import numpy as np
import pandas as pd
import pytest
from pycanon import anonymity as pycanon

from broker.anonymize import Remedy, Step, Target, apply_steps, plan_remedy
from broker.metrics import k_anonymity, sensitive_measure
from broker.metrics.mmaq import mmaq
from tests.anonymize.helpers import read_fixture


def generated(rows: int = 400, seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "NIN": [f"{n:08d}" for n in rng.permutation(10**6)[:rows]],
            "age": rng.integers(18, 80, rows).astype(str),
            "sex": rng.choice(["F", "M"], rows),
            "zip": rng.choice([f"{z:05d}" for z in range(57000, 57400, 7)], rows),
            "income": np.round(rng.lognormal(10, 1, rows)).astype(int).astype(str),
            "admitted": pd.to_datetime("2020-01-01")
            + pd.to_timedelta(rng.integers(0, 1500, rows), "D"),
            "disease": rng.choice(["flu", "hiv", "cold", "measles", "cancer"], rows),
        }
    ).assign(admitted=lambda f: f["admitted"].dt.strftime("%Y-%m-%d"))


def check(remedy: Remedy, rule: str, attribute=None):
    return next(c for c in remedy.checks if c.rule == rule and c.attribute == attribute)


def test_paper_table1_target():
    frame = read_fixture("patients_original.csv")
    target = Target(
        quasi_identifiers=("Age", "Gender"), sensitive=("Disease",), drop=("NIN", "Name"), k=3
    )
    remedy = plan_remedy(frame, target)
    assert remedy.satisfied and remedy.reason is None
    assert [(s.column, s.method) for s in remedy.steps] == [
        ("NIN", "drop"),
        ("Name", "drop"),
        (None, "mondrian"),
    ]
    out = remedy.frame
    assert out.columns.tolist() == ["Age", "Gender", "Disease"]
    assert k_anonymity(out, ["Age", "Gender"]).k >= 3
    assert pycanon.k_anonymity(out, ["Age", "Gender"]) >= 3
    assert check(remedy, "k").measured >= 3 and check(remedy, "k").passed
    assert remedy.information_loss.suppressed_rows == 0
    assert remedy.information_loss.suppressed_cell_share == pytest.approx(2 / 5)


def test_k_larger_than_the_rows_is_reported_not_hidden():
    frame = read_fixture("patients_original.csv")
    remedy = plan_remedy(frame, Target(quasi_identifiers=("Age", "Gender"), k=20))
    assert not remedy.satisfied
    assert "k = 20 needs at least 20 rows and the dataset has 9" in remedy.reason
    assert remedy.frame is None and remedy.tables is None
    json.dumps(remedy.as_dict())


def test_l_the_table_cannot_reach():
    frame = read_fixture("patients_original.csv")
    target = Target(quasi_identifiers=("Age",), sensitive=("Gender",), k=2, l=3)
    remedy = plan_remedy(frame, target)
    assert not remedy.satisfied
    assert "fewer than l = 3 distinct values" in remedy.reason


def test_k_l_and_t_reached_and_verified_independently():
    frame = generated()
    target = Target(
        quasi_identifiers=("age", "sex", "zip"),
        sensitive=("disease",),
        drop=("NIN",),
        k=5,
        l=3,
        t=0.2,
    )
    remedy = plan_remedy(frame, target)
    assert remedy.satisfied, remedy.reason
    out = remedy.frame
    qis = ["age", "sex", "zip"]
    assert k_anonymity(out, qis).k >= 5
    measure = sensitive_measure(out, qis, "disease")
    assert measure.l_diversity >= 3 and measure.t_closeness <= 0.2
    assert pycanon.k_anonymity(out, qis) >= 5
    assert pycanon.l_diversity(out, qis, ["disease"]) >= 3
    assert pycanon.t_closeness(out, qis, ["disease"]) <= 0.2 + 1e-12
    assert all(c.passed for c in remedy.checks)
    # t forced k to grow beyond 5: the recorded step says by how much.
    mondrian_step = remedy.steps[-1]
    assert mondrian_step.method == "mondrian" and mondrian_step.parameters["k"] >= 5
    assert "NIN" not in out.columns


def test_t_that_no_split_can_meet_ends_with_one_class():
    frame = generated(60, 3)
    target = Target(quasi_identifiers=("age",), sensitive=("disease",), t=0.0)
    remedy = plan_remedy(frame, target)
    assert remedy.satisfied
    assert remedy.frame["age"].nunique() == 1
    # k doubles 2, 4, ..., 32: from 32 on, 60 rows cannot be cut into two halves of k.
    assert remedy.steps[-1].parameters["k"] == 32


@pytest.mark.parametrize(
    ("column", "bound", "method"),
    [
        ("income", 0.1, "quantile"),
        ("zip", 0.05, "prefix"),
        ("admitted", 0.05, "date"),
        ("NIN", 0.2, "prefix"),
    ],
)
def test_mmaq_bounds_generalize_the_mildest_way_that_works(column, bound, method):
    frame = generated()
    assert mmaq(frame, column).mmaq_index > bound
    remedy = plan_remedy(frame, Target(max_mmaq_index={column: bound}))
    assert remedy.satisfied, remedy.reason
    steps = [s for s in remedy.steps if s.column == column]
    assert [s.method for s in steps] == [method]
    assert mmaq(remedy.frame, column).mmaq_index <= bound
    assert check(remedy, "mmaq_index", column).passed


def test_mmaq_bound_on_free_text_masks_the_column():
    frame = generated().assign(note=lambda f: "patient " + f["NIN"])
    remedy = plan_remedy(frame, Target(max_mmaq_index={"note": 0.01}))
    assert remedy.satisfied
    assert remedy.steps == (Step("note", "mask"),)
    assert set(remedy.frame["note"]) == {"*"}


def test_mmaq_bound_through_a_given_hierarchy():
    frame = pd.DataFrame(
        {"city": ["Dakar", "Thiès", "Lyon", "Paris", "Dakar", "Lyon"] * 5, "x": ["1"] * 30}
    )
    tree = {"Dakar": "Sénégal", "Thiès": "Sénégal", "Lyon": "France", "Paris": "France"}
    target = Target(max_mmaq_index={"city": 0.02}, hierarchies={"city": tree})
    remedy = plan_remedy(frame, target)
    assert remedy.satisfied
    assert remedy.steps[0].method == "hierarchy"
    assert set(remedy.frame["city"]) == {"Sénégal", "France"}


def test_bounds_on_sensitive_attributes_are_not_applied_and_that_is_said():
    frame = generated()
    target = Target(
        quasi_identifiers=("age",), sensitive=("disease",), k=2, max_mmaq_index={"disease": 0.0}
    )
    remedy = plan_remedy(frame, target)
    assert remedy.satisfied
    assert any("judged by l and t" in note for note in remedy.notes)
    assert remedy.frame["disease"].equals(frame["disease"])


def test_quasi_identifier_mmaq_bound_grows_k():
    frame = generated()
    target = Target(quasi_identifiers=("age",), k=2, max_mmaq_index={"age": 0.02})
    remedy = plan_remedy(frame, target)
    assert remedy.satisfied
    assert mmaq(remedy.frame, "age").mmaq_index <= 0.02
    assert remedy.steps[-1].parameters["k"] > 2


def test_apply_steps_replays_a_remedy_exactly_also_from_json():
    frame = generated()
    target = Target(
        quasi_identifiers=("age", "sex"),
        sensitive=("disease",),
        drop=("NIN",),
        k=4,
        l=2,
        max_mmaq_index={"income": 0.1, "zip": 0.05},
    )
    remedy = plan_remedy(frame, target)
    assert remedy.satisfied
    replayed = apply_steps(frame, remedy.steps)
    pd.testing.assert_frame_equal(replayed.frame, remedy.frame)
    as_json = json.loads(json.dumps([step.as_dict() for step in remedy.steps]))
    pd.testing.assert_frame_equal(apply_steps(frame, as_json).frame, remedy.frame)
    assert [Step.from_dict(s) for s in as_json] == list(remedy.steps)


def test_partition_method():
    frame = generated()
    target = Target(
        quasi_identifiers=("age", "sex"), sensitive=("disease",), drop=("NIN",), k=5, l=3
    )
    remedy = plan_remedy(frame, target, method="partition")
    assert remedy.satisfied, remedy.reason
    assert remedy.frame is None
    assert set(remedy.tables) == {"quasi_identifiers", "sensitive_disease"}
    diseases = remedy.tables["sensitive_disease"]
    assert k_anonymity(diseases, ["group_id"]).k >= 5
    assert sensitive_measure(diseases, ["group_id"], "disease").l_diversity >= 3
    assert any("does not hide who is in the data" in note for note in remedy.notes)
    assert remedy.as_dict()["links"] == [
        {
            "table": "quasi_identifiers",
            "column": "group_disease",
            "references": "sensitive_disease",
            "referenced_column": "group_id",
        }
    ]
    replayed = apply_steps(frame, remedy.steps)
    for name, table in remedy.tables.items():
        pd.testing.assert_frame_equal(replayed.tables[name], table)
    assert 0 < remedy.information_loss.utility_percent < 100


def test_anonymity_without_quasi_identifiers_cannot_be_measured():
    remedy = plan_remedy(generated(), Target(k=5))
    assert not remedy.satisfied
    assert "quasi-identifiers" in remedy.reason


def test_nothing_to_do_is_satisfied_as_is():
    frame = generated()
    remedy = plan_remedy(frame, Target())
    assert remedy.satisfied and remedy.steps == ()
    pd.testing.assert_frame_equal(remedy.frame, frame)
    assert remedy.information_loss.utility_percent == 100.0


def test_dropped_columns_absent_from_the_frame_are_fine():
    remedy = plan_remedy(generated(), Target(drop=("Name",)))
    assert remedy.satisfied and remedy.steps == ()


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (Target(quasi_identifiers=("zip5",)), "Quasi-identifier 'zip5'"),
        (Target(sensitive=("dx",)), "Sensitive attribute 'dx'"),
        (Target(hierarchies={"town": {}}), "Hierarchy column 'town'"),
        (Target(quasi_identifiers=("age",), sensitive=("age",)), "both quasi-identifier"),
        (Target(k=0), "Target k must be an integer >= 1"),
        (Target(t=1.5), "Target t must be in"),
        (Target(max_suppression=-0.1), "max_suppression"),
        (Target(max_mmaq_index={"age": 2}), "bound of column 'age'"),
        (Target(quasi_identifiers=("age",), l=2), "l and t apply to sensitive attributes"),
    ],
)
def test_malformed_targets(target, message):
    with pytest.raises(ValueError, match=message):
        plan_remedy(generated(20), target)


def test_repeated_row_labels_are_refused():
    frame = generated(20).set_axis([0] * 20)
    with pytest.raises(ValueError, match="row labels repeat"):
        plan_remedy(frame, Target(quasi_identifiers=("age",), k=2))


def test_a_fine_bound_keeps_fine_bins():
    frame = pd.DataFrame({"v": [str(i) for i in range(1000)]})
    remedy = plan_remedy(frame, Target(max_mmaq_index={"v": 0.5}))
    assert remedy.satisfied
    assert remedy.steps == (Step("v", "quantile", {"bins": 512}),)


def test_unknown_method_and_step():
    with pytest.raises(ValueError, match="Unknown method 'anatomy'"):
        plan_remedy(generated(20), Target(), method="anatomy")
    with pytest.raises(ValueError, match="Unknown anonymization method 'blur' for column 'age'"):
        apply_steps(generated(20), [Step("age", "blur")])
    with pytest.raises(ValueError, match="Unknown step field 'columns'"):
        apply_steps(generated(20), [{"columns": "age", "method": "drop"}])


def test_every_step_says_why_and_a_raised_k_says_each_k_tried():
    frame = read_fixture("patients_original.csv")
    target = Target(
        quasi_identifiers=("Age", "Gender"),
        sensitive=("Disease",),
        drop=("NIN", "Name"),
        k=2,
        t=0.5,
        reasons={"NIN": "NIN is forbidden", "k": "k = 2 because min_k = 2"},
    )
    remedy = plan_remedy(frame, target)
    assert remedy.satisfied
    drop_nin, drop_name, mondrian_step = remedy.steps
    assert drop_nin.reason == "NIN is forbidden"
    assert drop_name.reason == "Name is one of the columns the target drops"
    assert mondrian_step.parameters["k"] == 8
    assert mondrian_step.reason.startswith(
        "k raised from 2 to 8 because at k = 2, 4 the result still failed: "
    )
    assert "t of 'Disease' is 0.5556, limit 0.5; k = 2 because min_k = 2" in mondrian_step.reason
    # The reason travels with the step and plays no part in replaying it.
    assert Step.from_dict(mondrian_step.as_dict()) == mondrian_step
    climbed = plan_remedy(frame, target, method="generalization").steps[-1]
    assert climbed.reason.startswith("Gender had 2 distinct values, 1 after this step")


def test_a_generalization_planned_on_counts_says_why_too():
    from broker.anonymize import plan_on_engine
    from broker.engines.pandas import PandasEngine

    frame = read_fixture("patients_original.csv")
    target = Target(
        quasi_identifiers=("Age", "Gender"), drop=("NIN", "Name"), k=3, reasons={"k": "min_k"}
    )
    remedy = plan_on_engine(PandasEngine(frame), target, "generalization")
    assert remedy.satisfied
    reasons = [step.reason for step in remedy.steps]
    assert reasons[:2] == [
        "NIN is one of the columns the target drops",
        "Name is one of the columns the target drops",
    ]
    assert all("(Datafly) until k = 3 holds (min_k)" in r for r in reasons[2:]) and reasons[2:]
