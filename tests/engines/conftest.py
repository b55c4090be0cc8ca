"""Dask runs its graphs in the calling thread here: the engine tests compute hundreds of tiny
graphs, where a thread pool's start-up is most of the time (test_dask.py runs a real cluster)."""

import dask
import pytest


@pytest.fixture(autouse=True)
def _dask_in_this_thread():
    with dask.config.set(scheduler="synchronous"):
        yield
