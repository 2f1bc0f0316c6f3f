"""Environment settings of the controller process, each declared once.

A controller's ``setup`` module declares the environment variables it reads as an
``EnvSettings``: its settings dataclass with their defaults, and one ``EnvSetting`` per variable
(its name, the field it sets, how its text is parsed, what it means). ``read`` builds the
settings from the environment the process context carries (a value the controller cannot use:
``ValueError`` naming the variable, which ``scaleset controller`` turns into one line and exit
1). ``documented`` gives each variable's name, default (read from the dataclass, so it is stated
once, where the code uses it) and meaning: ``scaleset dev config-reference`` renders those into
docs/configuration.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any, Generic, TypeVar

S = TypeVar("S")


@dataclass(frozen=True)
class EnvSetting:
    """One environment variable: ``name``; ``field``, the dotted path of the settings field it
    sets (``""``: read elsewhere, documented here only); ``parse``, its text to the field's
    value (``ValueError`` with the reason, e.g. "is not a number"); ``doc``, what it means;
    ``default``, the default as the documentation shows it when the field's value does not
    say it (a variable read elsewhere, or an unset field)."""

    name: str
    field: str
    parse: Callable[[str], object] | None
    doc: str
    default: str | None = None


@dataclass(frozen=True)
class DocumentedVariable:
    """What docs/configuration.md shows of a variable (names joined by ", ")."""

    name: str
    default: str
    description: str


@dataclass(frozen=True)
class EnvSettings(Generic[S]):
    """A controller's environment variables over its settings dataclass (``defaults``)."""

    defaults: S
    variables: tuple[EnvSetting, ...]

    def read(self, environ: Mapping[str, str]) -> S:
        """``defaults`` with the overrides ``environ`` gives (a value that cannot be used:
        ``ValueError`` naming the variable and the value)."""
        settings = self.defaults
        for variable in self.variables:
            text = environ.get(variable.name, "").strip()
            if not text or variable.parse is None or not variable.field:
                continue
            try:
                settings = _replaced(settings, variable.field.split("."), variable.parse(text))
            except ValueError as error:
                raise ValueError(f"{variable.name}={text!r} {error}") from None
        return settings

    def documented(self) -> tuple[DocumentedVariable, ...]:
        return tuple(
            DocumentedVariable(
                variable.name,
                variable.default
                if variable.default is not None
                else shown_default(_lookup(self.defaults, variable.field)),
                variable.doc,
            )
            for variable in self.variables
        )


def documentation_only(*variables: EnvSetting) -> EnvSettings[None]:
    """Variables read elsewhere (GitHub access, ARC's listener entrypoint): documented here."""
    return EnvSettings(None, variables)


def documented(declarations: Iterable[EnvSettings[Any]]) -> tuple[DocumentedVariable, ...]:
    return tuple(entry for declaration in declarations for entry in declaration.documented())


def shown_default(value: object) -> str:
    """A default as docs/configuration.md shows it: ``30`` for 30.0, ``unset`` for None."""
    if value is None:
        return "unset"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _lookup(settings: object, path: str) -> object:
    value = settings
    for part in path.split("."):
        value = getattr(value, part)
    return value


def _replaced(settings: Any, path: list[str], value: object) -> Any:
    """``settings`` with the field at ``path`` set (its checks run: ``ValueError``)."""
    head, *rest = path
    if head not in _field_names(settings):
        raise TypeError(f"{type(settings).__name__} has no field {head!r}")
    inner = _replaced(getattr(settings, head), rest, value) if rest else value
    try:
        return replace(settings, **{head: inner})
    except ValueError as error:
        raise ValueError(f"is out of range ({error})") from None


def _field_names(settings: object) -> set[str]:
    if isinstance(settings, type) or not is_dataclass(settings):
        return set()
    return {f.name for f in fields(settings)}


# --- parsers: text -> value, or ValueError with the reason ------------------------------------


def seconds(text: str) -> float:
    """Any number of seconds (the settings' own checks bound it)."""
    try:
        return float(text)
    except ValueError:
        raise ValueError("is not a number of seconds") from None


def positive_seconds(text: str) -> float:
    value = _finite(text)
    if value <= 0:
        raise ValueError("must be more than zero")
    return value


def seconds_or_off(text: str) -> float | None:
    """Zero or more seconds; 0 is off (``None``)."""
    value = _finite(text)
    if value < 0:
        raise ValueError("must be zero or more")
    return value or None


def whole_or_zero(text: str) -> int:
    value = _finite(text)
    if value < 0:
        raise ValueError("must be zero or more")
    if value != int(value):
        raise ValueError("is not a whole number")
    return int(value)


def positive_whole(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ValueError("is not a positive whole number")
    return int(text)


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError("is not a number") from None
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value
