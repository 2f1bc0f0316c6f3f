"""The lenient base model every API type derives from, and the field types it uses.

Why lenient: an object in the API server is whatever a user, ARC or an older controller wrote.
A controller must be able to load a bad object, keep serving the others, and say which field is
wrong (lifecycle.md L8). So parsing never fails on a field with the wrong type: that field's raw
value is set aside (kept for the round trip, reported by ``validate()``) and the typed attribute
keeps its default.

Rules every model follows:
- JSON names are camelCase (``alias_generator`` plus explicit aliases where Go's JSON tags are not
  plain camelCase, e.g. ``githubServerTLS``, ``patchID``).
- Unknown fields are kept (``extra="allow"``) at every level, so a load/dump round trip loses
  nothing ARC or a newer Kubernetes wrote.
- Types are strict: ``"5"`` is not silently turned into ``5`` (that would rewrite the object on the
  next write); it is set aside as invalid instead, and dumped back unchanged.
- Dump with :func:`to_json` (by alias, ``exclude_unset``): what was read is what is written,
  and a field ARC's schema requires is always written (its default when it was never set), in
  every object that is written at all — Go serialises them without ``omitempty``, and the CRDs
  reject an object that lacks one.

``CrdHint`` carries what the CRD generator needs beyond the Python type (a minimum, a format,
"required in ARC's schema", "keep unknown fields"). It never affects parsing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from typing import Annotated, Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    PlainSerializer,
    PlainValidator,
    PrivateAttr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import to_jsonable_python


@dataclass(frozen=True)
class CrdHint:
    """Schema facts for the CRD generator that the Python type cannot express.

    ``required``: listed in the parent's ``required`` (as ARC's schema does); parsing still
    treats the field as optional. ``preserve_unknown``: an opaque object whose every field the API
    server keeps (pod templates). ``extra``: more OpenAPI keywords (name, value), copied
    verbatim. Hints are hashable because they live in ``Annotated`` metadata.
    """

    minimum: int | None = None
    format: str | None = None
    required: bool = False
    preserve_unknown: bool = False
    extra: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def keywords(cls, keywords: dict[str, Any]) -> CrdHint:
        """A hint that adds the given OpenAPI keywords (values must be hashable)."""
        return cls(extra=tuple(sorted(keywords.items())))


@dataclass(frozen=True)
class InvalidValue:
    """A field value that did not have the declared type; kept so nothing is lost on write.

    ``problem`` is pydantic's message for it; it never contains the value itself, so it is safe
    to put into an Event or a condition. ``repr`` omits the raw value for the same reason.
    """

    raw: Any = field(repr=False)
    problem: str
    location: tuple[str | int, ...] = ()


def parse_kube_time(value: object) -> datetime:
    """Parse a Kubernetes timestamp (RFC 3339, ``Z`` or an offset) into an aware UTC datetime."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError as error:
            raise ValueError("not an RFC 3339 timestamp") from error
    else:
        raise ValueError("expected an RFC 3339 timestamp string")
    if parsed.tzinfo is None:
        raise ValueError("timestamp has no time zone")
    if not parsed.utcoffset():
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError as error:
        raise ValueError("timestamp out of range") from error


def format_kube_time(value: datetime) -> str:
    """Format like ``metav1.Time``: UTC, ``Z``, whole seconds (microseconds only when present)."""
    utc = value.astimezone(UTC) if value.utcoffset() else value
    timespec = "microseconds" if utc.microsecond else "seconds"
    return utc.replace(tzinfo=None).isoformat(timespec=timespec) + "Z"


KubeTime = Annotated[
    datetime,
    PlainValidator(parse_kube_time),
    PlainSerializer(format_kube_time, return_type=str),
    CrdHint(format="date-time"),
]
"""A timestamp field: an aware UTC ``datetime`` in Python, RFC 3339 with ``Z`` on the wire."""

PodTemplate = Annotated[dict[str, Any], CrdHint(preserve_unknown=True)]
"""A pod template (or an inlined part of one), kept as raw JSON so every Kubernetes field, of
every Kubernetes version, survives unchanged. Helpers in ``scaleset.api.pods`` read it."""

Number = int | float
"""A JSON number that keeps its spelling: ``1`` stays ``1`` and ``0.5`` stays ``0.5``."""


class ApiModel(BaseModel):
    """Base of every API type: camelCase names, unknown fields kept, wrong types set aside."""

    model_config = ConfigDict(
        extra="allow",
        strict=True,
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )

    _invalid: dict[str, InvalidValue] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _set_aside_invalid_fields(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        try:
            return handler(data)
        except ValidationError as error:
            if not isinstance(data, dict):
                raise
            invalid: dict[str, InvalidValue] = {}
            for detail in error.errors(include_url=False, include_input=False):
                location = detail["loc"]
                key = location[0] if location else None
                if isinstance(key, str) and key in data and key not in invalid:
                    invalid[key] = InvalidValue(data[key], detail["msg"], tuple(location[1:]))
            if not invalid:
                raise
            model = handler({k: v for k, v in data.items() if k not in invalid})
            model._invalid.update(invalid)
            return model

    @model_serializer(mode="wrap")
    def _restore_invalid_fields(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> Any:
        data = handler(self)
        if not isinstance(data, dict):
            return data
        if self._invalid:
            for key, value in self._invalid.items():
                data.setdefault(key, value.raw)
        by_alias = info.by_alias is not False
        for name, alias in _required_fields(type(self)):
            key = alias if by_alias else name
            if key not in data:
                data[key] = to_jsonable_python(getattr(self, name), by_alias=by_alias)
        return data

    def invalid_fields(self) -> dict[str, InvalidValue]:
        """Fields of this object (not of nested ones) whose value had the wrong type, by JSON
        name. Use ``scaleset.api.validation.validate`` for the whole tree with paths."""
        return dict(self._invalid)


@cache
def _required_fields(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    """(name, JSON name) of the fields ARC's schema requires (``CrdHint(required=True)``)."""
    return tuple(
        (name, info.alias or name)
        for name, info in model.model_fields.items()
        if any(isinstance(hint, CrdHint) and hint.required for hint in info.metadata)
    )


def to_json(model: ApiModel) -> dict[str, Any]:
    """The JSON object for ``model``: camelCase names, only the fields that were read or set,
    plus every field ARC's schema requires (``CrdHint(required=True)``, e.g. ``spec.patchID``,
    ``status.currentReplicas``) in each object that is written at all, so the API server never
    rejects what we send; unknown and invalid fields included as they came. A whole object (one
    with ``apiVersion`` and ``kind`` fields) always carries both, so one built in Python can be
    sent as it is."""
    data: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_unset=True)
    fields = type(model).model_fields
    for name in ("api_version", "kind"):
        if name in fields and name not in model.model_fields_set:
            data.setdefault(fields[name].alias or name, getattr(model, name))
    return data


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    return value


def same_json(a: ApiModel, b: ApiModel) -> bool:
    """Whether ``a`` and ``b`` are stored alike by the API server: their ``to_json`` objects
    equal once null-valued keys are dropped (at any depth of nested objects, not inside lists).

    A field set to ``None`` is sent as ``null``, which a merge patch turns into "absent": a model
    that cleared a field the server never had is not a change, and writing it would cost an API
    call (and, with a resourceVersion precondition on a stale cache, a conflict) for nothing.
    """
    return bool(_without_nulls(to_json(a)) == _without_nulls(to_json(b)))
