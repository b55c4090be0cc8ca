"""The climb: bisection along the rungs climbed while k, l or t fails gives the levels, checks and
end that climbing one rung at a time gives, when those checks only improve as rungs are climbed."""

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.anonymize.ladder import climb
from broker.anonymize.steps import Step
from broker.anonymize.verify import Check


@st.composite
def searches(draw):
    """Ladders, distinct labels by rung, and checks that only improve as rungs are climbed: k
    passes once the weighted rungs reach a threshold; each mmaq bound once its attribute has
    climbed far enough."""
    lengths = draw(st.lists(st.integers(1, 6), min_size=1, max_size=4))
    distinct = {
        (i, level): draw(st.integers(1, 9))
        for i, length in enumerate(lengths)
        for level in range(length + 1)
    }
    weights = draw(st.lists(st.integers(0, 3), min_size=len(lengths), max_size=len(lengths)))
    threshold = draw(st.integers(0, sum(w * n for w, n in zip(weights, lengths, strict=True)) + 1))
    bounds = [draw(st.integers(0, length)) for length in lengths]
    return lengths, distinct, weights, threshold, bounds


@settings(max_examples=300, deadline=None)
@given(searches())
def test_bisection_climbs_to_the_levels_of_one_rung_at_a_time(search):
    lengths, distinct, weights, threshold, bounds = search
    names = [f"q{i}" for i in range(len(lengths))]
    ladders = [[Step(name, "mask")] * length for name, length in zip(names, lengths, strict=True)]

    def evaluate(levels):
        reached = sum(w * n for w, n in zip(weights, levels, strict=True))
        checks = [Check("k", None, threshold, reached, reached >= threshold)]
        return checks + [
            Check("mmaq_index", name, bound, level, level >= bound)
            for name, level, bound in zip(names, levels, bounds, strict=True)
        ]

    def run(coarsening):
        calls = []
        found = climb(
            names,
            ladders,
            evaluate,
            lambda i, level: distinct[(i, level)],
            progress=calls.append,
            coarsening=coarsening,
        )
        assert calls == list(range(1, len(calls) + 1))  # once per generalization measured
        return found

    levels, checks, out_of_time = run(coarsening=False)
    assert run(coarsening=True) == (levels, checks, out_of_time)
    assert not out_of_time
