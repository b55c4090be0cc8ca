"""Declared roles: each name once, every name a column, one role per column."""

import pytest

from broker.columns.roles import RoleError, Roles, parse_names

COLUMNS = ["age", "sex", "zip", "disease", "patient_ref"]


def test_names_are_parsed_once_each_in_order():
    assert parse_names(" sex, age,,sex , ") == ("sex", "age")
    assert parse_names(None) == ()


def test_a_repeated_declaration_is_deduplicated():
    roles = Roles.declare(COLUMNS, ["sex", "sex", "age"], ["disease", "disease"], "patient_ref")
    assert roles == Roles(("sex", "age"), ("disease",), "patient_ref")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"quasi_identifiers": ["Age"]},
            r"'Age' is not a column .*did you mean 'age'.*'age', 'sex'",
        ),
        ({"sensitive": ["diagnosis"]}, "Sensitive attribute 'diagnosis' is not a column"),
        ({"sensitive": ["desease"]}, r"'desease' is not a column .*did you mean 'disease'\?"),
        ({"quasi_identifiers": ["zipp", "se x"]}, r"'zipp' .*did you mean 'zip'\?"),
        ({"person_key": "id"}, "Person key 'id' is not a column"),
        ({"quasi_identifiers": ["age"], "sensitive": ["age"]}, "both quasi-identifier"),
        ({"quasi_identifiers": ["patient_ref"], "person_key": "patient_ref"}, "person key"),
    ],
)
def test_bad_declarations_name_the_column(kwargs, message):
    with pytest.raises(RoleError, match=message):
        Roles.declare(COLUMNS, **kwargs)


def test_roles_without_dropped_columns():
    roles = Roles(("age", "zip"), ("disease",), "patient_ref")
    assert roles.without(["zip", "patient_ref"]) == Roles(("age",), ("disease",), None)
