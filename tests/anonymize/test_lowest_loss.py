"""The optimal search (broker.anonymize.ladder.lowest_loss) against brute force: on random
lattices with random costs and any pass/fail pattern, it returns the cheapest passing
generalization (ties to the smallest levels), measuring each at most once."""

import itertools
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.anonymize.ladder import lowest_loss
from broker.anonymize.steps import Step


@dataclass(frozen=True)
class Passed:
    passed: bool


@st.composite
def lattices(draw):
    """Ladders of 1 to 3 rungs, each level's cost, and which generalizations pass."""
    depths = draw(st.lists(st.integers(1, 3), min_size=1, max_size=4))
    costs = [draw(st.lists(st.integers(0, 50), min_size=d + 1, max_size=d + 1)) for d in depths]
    nodes = list(itertools.product(*(range(d + 1) for d in depths)))
    return depths, costs, draw(st.sets(st.sampled_from(nodes)))


@settings(max_examples=300, deadline=None)
@given(lattices())
def test_the_first_passing_generalization_is_the_cheapest(lattice):
    depths, costs, passing = lattice
    ladders = [[Step("c", "mask")] * depth for depth in depths]
    measured = []

    def evaluate(levels):
        measured.append(tuple(levels))
        return [Passed(tuple(levels) in passing)]

    def loss(i, level):
        # Costs grow along a ladder (information only goes), as non-uniform entropy does.
        return float(sum(costs[i][: level + 1]))

    levels, checks, stopped, count = lowest_loss(ladders, evaluate, loss)
    nodes = list(itertools.product(*(range(d + 1) for d in depths)))
    total = {node: sum(loss(i, level) for i, level in enumerate(node)) for node in nodes}
    reachable_passing = [node for node in nodes if node in passing]
    assert len(measured) == len(set(measured)) == count
    if not reachable_passing:  # every node measured; the coarsest's failing checks say why
        assert not stopped and count == len(nodes)
        assert levels == list(depths) and [c.passed for c in checks] == [False]
        return
    best = min(total[node] for node in reachable_passing)
    assert not stopped and tuple(levels) in passing
    assert total[tuple(levels)] == best
