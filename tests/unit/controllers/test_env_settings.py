"""``scaleset.controllers.env_settings``: a variable declared once gives the setting, its
documented default and its error (naming the variable)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from scaleset.controllers.env_settings import (
    EnvSetting,
    EnvSettings,
    positive_whole,
    seconds,
    seconds_or_off,
)


@dataclass(frozen=True)
class Inner:
    count: int = 4


@dataclass(frozen=True)
class Tunables:
    wait: float = 30.0
    age: float | None = None
    inner: Inner = field(default_factory=Inner)

    def __post_init__(self) -> None:
        if self.wait < 0:
            raise ValueError("the wait must not be negative")


DECLARED = EnvSettings(
    Tunables(),
    (
        EnvSetting("X_WAIT", "wait", seconds, "How long."),
        EnvSetting("X_AGE", "age", seconds_or_off, "How old; 0: off."),
        EnvSetting("X_COUNT", "inner.count", positive_whole, "How many."),
    ),
)


def test_unset_or_blank_variables_keep_the_defaults() -> None:
    assert DECLARED.read({}) == Tunables()
    assert DECLARED.read({"X_WAIT": "  "}) == Tunables()


def test_each_variable_sets_its_field_nested_ones_too() -> None:
    read = DECLARED.read({"X_WAIT": "45", "X_AGE": "0", "X_COUNT": "9"})

    assert read == Tunables(wait=45.0, age=None, inner=Inner(9))


def test_the_documented_default_is_the_settings_default() -> None:
    shown = {v.name: v.default for v in DECLARED.documented()}

    assert shown == {"X_WAIT": "30", "X_AGE": "unset", "X_COUNT": "4"}


@pytest.mark.parametrize(
    ("variable", "text"), [("X_WAIT", "soon"), ("X_WAIT", "-1"), ("X_COUNT", "2.5")]
)
def test_a_value_that_cannot_be_used_names_the_variable(variable: str, text: str) -> None:
    with pytest.raises(ValueError, match=f"^{variable}={text!r} "):
        DECLARED.read({variable: text})
