"""JSON merge patch against RFC 7396's own examples (Appendix A), and the path old -> new list."""

import pytest

from broker.fsla.changes import ABSENT, Change, changes, merge_patch

# RFC 7396, Appendix A: (original, patch, result)
RFC_7396_EXAMPLES = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("original", "patch", "result"), RFC_7396_EXAMPLES)
def test_merge_patch_follows_rfc_7396(original, patch, result):
    before = repr(original)
    assert merge_patch(original, patch) == result
    assert repr(original) == before  # the original is not modified


def test_changes_name_nested_paths_with_old_and_new():
    old = {"name": "SN", "x": {"min_k": 5, "max_t": None}, "p": ["a", "b"]}
    new = {"name": "SN", "x": {"min_k": 10, "max_t": 0.2}, "p": ["a"]}
    assert [str(c) for c in changes(old, new)] == [
        "x.min_k: 5 -> 10",
        "x.max_t: null -> 0.2",
        'p: ["a", "b"] -> ["a"]',
    ]


def test_changes_index_lists_of_objects():
    old = {"rule_sets": [{"min_k": 5}, {"min_k": 2}]}
    new = {"rule_sets": [{"min_k": 10}]}
    assert changes(old, new) == [
        Change("rule_sets[0].min_k", 5, 10),
        Change("rule_sets[1]", {"min_k": 2}, ABSENT),
    ]
    assert str(changes(old, new)[1]) == 'rule_sets[1]: {"min_k": 2} -> (absent)'


def test_changes_compare_as_json():
    assert changes({"k": 1}, {"k": 1.0}) == []
    assert changes({"b": True}, {"b": 1}) == [Change("b", True, 1)]
    assert changes({"a": 1}, {"a": 1, "b": None}) == [Change("b", ABSENT, None)]
    assert changes({}, {}) == []
