"""The Dask engine on a real (local) cluster gives the in-memory report, people included."""

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from distributed import Client, LocalCluster, get_task_stream

from broker.engines.dask import DaskEngine
from broker.engines.pandas import PandasEngine, People
from broker.metrics.report import ReportOptions, report_of
from tests.engines.close import close


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def _table(rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    return pd.DataFrame(
        {
            "person": rng.integers(0, rows // 2, rows).astype(str),
            "age": rng.integers(18, 90, rows).astype(str),
            "zip": rng.choice(["75001", "75002", "13001", "69001", ""], rows),
            "sex": rng.choice(["F", "M"], rows),
            "disease": rng.choice(["flu", "hiv", "cold", "measles"], rows),
        }
    ).astype(object)


def test_a_cluster_report_is_the_in_memory_report(client):
    frame = _table(3000)
    measured = frame.drop(columns=["person"])
    distributed = DaskEngine.from_dask(dd.from_pandas(measured, npartitions=6))
    with dask.config.set(scheduler="dask.distributed"), get_task_stream(client) as tasks:
        ours = report_of(
            distributed, ["age", "zip", "sex"], ["disease"], ReportOptions(max_combination_size=2)
        )
    assert {task["worker"] for task in tasks.data} == set(client.scheduler_info()["workers"])
    theirs = report_of(
        PandasEngine(measured),
        ["age", "zip", "sex"],
        ["disease"],
        ReportOptions(max_combination_size=2),
    )
    assert close(ours.as_dict(), theirs.as_dict())


def test_a_person_key_counts_people_on_the_cluster_as_in_memory(client):
    frame = _table(2000)
    measured = frame.drop(columns=["person"])
    in_memory = PandasEngine(measured, people=People.of(measured, frame["person"]))
    distributed = DaskEngine.from_dask(dd.from_pandas(frame, npartitions=4), person_key="person")
    with dask.config.set(scheduler="dask.distributed"):
        ours = report_of(
            distributed, ["age", "sex"], ["disease"], ReportOptions(max_combination_size=0)
        )
    theirs = report_of(
        in_memory, ["age", "sex"], ["disease"], ReportOptions(max_combination_size=0)
    )
    assert ours.people_counted_by == "person_key"
    assert close(ours.as_dict(), theirs.as_dict())
