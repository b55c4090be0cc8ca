"""Settings errors in words: the variable and the form it expects (broker.wire.environment)."""

import pytest
from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from broker.wire.environment import describe


class Example(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="EXAMPLE_")

    hosts: list[str] = Field(default_factory=list)
    limits: dict[str, int] | None = None
    port: int = Field(8000, ge=1)
    name: str


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("EXAMPLE_HOSTS", "a.example.org", "EXAMPLE_HOSTS must be a JSON list"),
        ("EXAMPLE_LIMITS", "a=1", "EXAMPLE_LIMITS must be a JSON object"),
    ],
)
def test_a_value_that_is_not_json_names_the_variable_and_the_form(
    monkeypatch, variable, value, said
):
    monkeypatch.setenv(variable, value)
    monkeypatch.setenv("EXAMPLE_NAME", "x")
    with pytest.raises((SettingsError, ValidationError)) as caught:
        Example()
    assert describe(caught.value, "EXAMPLE_", Example).startswith(said)


def test_invalid_and_missing_values_are_named_together(monkeypatch):
    monkeypatch.setenv("EXAMPLE_PORT", "0")
    with pytest.raises(ValidationError) as caught:
        Example()
    assert describe(caught.value, "EXAMPLE_", Example) == (
        "EXAMPLE_PORT: Input should be greater than or equal to 1; EXAMPLE_NAME is not set"
    )
