"""API errors as kube-apiserver reports them: a ``Status`` body with the right code and reason.

Every failure the embedded server answers goes through :class:`ApiError`, so the wire shape is
decided in one place. Field-level problems are :class:`FieldError` values, rendered the way
``k8s.io/apimachinery/pkg/util/validation/field`` renders them (``metadata.name: Invalid value:
"x": detail``), and gathered into a 422 ``Invalid`` with ``details.causes``.

Exceptions::

    ApiError             any answer that is not a success (carries the Status body)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

JsonObj = dict[str, Any]

# field.ErrorType: (cause reason, text in messages)
_FIELD_TYPES: dict[str, tuple[str, str]] = {
    "NotFound": ("FieldValueNotFound", "Not found"),
    "Required": ("FieldValueRequired", "Required value"),
    "Duplicate": ("FieldValueDuplicate", "Duplicate value"),
    "Invalid": ("FieldValueInvalid", "Invalid value"),
    "NotSupported": ("FieldValueNotSupported", "Unsupported value"),
    "Forbidden": ("FieldValueForbidden", "Forbidden"),
    "TooLong": ("FieldValueTooLong", "Too long"),
    "TooMany": ("FieldValueTooMany", "Too many"),
    "Internal": ("InternalError", "Internal error"),
}
_NO_VALUE_TYPES = frozenset({"Required", "Forbidden", "TooLong", "Internal"})


class GoLiteral(str):
    """A bad value printed verbatim (e.g. ``0x0``, how Go prints an unset uint64 with %#v)."""


def _go_value(value: object) -> str:
    """Format a bad value the way Go's field errors do (%q for strings, %v for scalars)."""
    if isinstance(value, GoLiteral):
        return str(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "[]string{" + ", ".join(json.dumps(v) for v in value) + "}"
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True)
class FieldError:
    """One field problem: ``kind`` is a field.ErrorType name (Invalid, Required, Forbidden...)."""

    kind: str
    field: str
    value: object = None
    detail: str = ""

    @property
    def reason(self) -> str:
        return _FIELD_TYPES[self.kind][0]

    def body(self) -> str:
        text = _FIELD_TYPES[self.kind][1]
        if self.kind not in _NO_VALUE_TYPES:
            text = f"{text}: {_go_value(self.value)}"
        if self.detail:
            text = f"{text}: {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}" if self.field else self.body()


def invalid_value(field: str, value: object, detail: str) -> FieldError:
    return FieldError("Invalid", field, value, detail)


def required(field: str, detail: str = "") -> FieldError:
    return FieldError("Required", field, None, detail)


def forbidden(field: str, detail: str) -> FieldError:
    return FieldError("Forbidden", field, None, detail)


def not_supported(field: str, value: object, allowed: list[str]) -> FieldError:
    detail = "supported values: " + ", ".join(json.dumps(a) for a in allowed)
    return FieldError("NotSupported", field, value, detail)


def duplicate(field: str, value: object) -> FieldError:
    return FieldError("Duplicate", field, value)


def too_long(field: str, limit: int) -> FieldError:
    return FieldError("TooLong", field, None, f"must have at most {limit} bytes")


def field_not_found(field: str, value: object) -> FieldError:
    return FieldError("NotFound", field, value)


def aggregate(errors: list[FieldError]) -> str:
    """utilerrors.Aggregate.Error(): one message, or ``[a, b]`` for several."""
    texts: list[str] = []
    for err in errors:
        text = str(err)
        if text not in texts:
            texts.append(text)
    if len(texts) == 1:
        return texts[0]
    return "[" + ", ".join(texts) + "]"


class ApiError(Exception):
    """A non-success answer; ``status()`` is the ``Status`` object sent on the wire."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: JsonObj | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> JsonObj:
        body: JsonObj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body

    def __repr__(self) -> str:
        return f"ApiError({self.code}, {self.reason!r}, {self.message!r})"


def qualified(group: str, name: str) -> str:
    """GroupResource.String(): ``pods``, or ``roles.rbac.authorization.k8s.io`` with a group."""
    return f"{name}.{group}" if group else name


def _details(group: str, kind: str, name: str, **extra: Any) -> JsonObj:
    details: JsonObj = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if kind:
        details["kind"] = kind
    details.update(extra)
    return details


def not_found(group: str, resource: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f"{qualified(group, resource)} {json.dumps(name)} not found",
        _details(group, resource, name),
    )


def already_exists(
    group: str, resource: str, name: str, *, being_deleted: bool = False
) -> ApiError:
    message = f"{qualified(group, resource)} {json.dumps(name)} already exists"
    if being_deleted:
        message = f"object is being deleted: {message}"
    return ApiError(409, "AlreadyExists", message, _details(group, resource, name))


OPTIMISTIC_LOCK_MESSAGE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def conflict(group: str, resource: str, name: str, why: str = OPTIMISTIC_LOCK_MESSAGE) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f"Operation cannot be fulfilled on {qualified(group, resource)} {json.dumps(name)}: {why}",
        _details(group, resource, name),
    )


def uid_precondition_failed(
    group: str, resource: str, name: str, key: str, wanted: str, actual: str
) -> ApiError:
    """A PUT whose body names another ``metadata.uid``: the uid is a storage precondition (409).

    ``key`` is the object's etcd key and ``actual`` the stored uid ("" when there is no object).
    """
    why = (
        f"StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, "
        f"AdditionalErrorMsg: Precondition failed: UID in precondition: {wanted}, "
        f"UID in object meta: {actual}"
    )
    return conflict(group, resource, name, why)


def invalid(group: str, kind: str, name: str, errors: list[FieldError]) -> ApiError:
    causes = [{"reason": err.reason, "message": err.body(), "field": err.field} for err in errors]
    return ApiError(
        422,
        "Invalid",
        f"{qualified(group, kind)} {json.dumps(name)} is invalid: {aggregate(errors)}",
        _details(group, kind, name, causes=causes),
    )


def forbidden_error(
    group: str, resource: str, name: str, why: str, cause: JsonObj | None = None
) -> ApiError:
    details = _details(group, resource, name)
    if cause is not None:
        details["causes"] = [cause]
    return ApiError(
        403,
        "Forbidden",
        f"{qualified(group, resource)} {json.dumps(name)} is forbidden: {why}",
        details,
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def method_not_allowed() -> ApiError:
    return ApiError(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
        {},
    )


def unsupported_media_type(accepted: list[str]) -> ApiError:
    """A create or update body in a format the server does not decode."""
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{', '.join(accepted)}",
    )


def unsupported_patch_type() -> ApiError:
    """A PATCH whose Content-Type is not a patch type this resource accepts."""
    return ApiError(415, "UnsupportedMediaType", "415: Unsupported Media Type", {})


def internal_plain(message: str) -> ApiError:
    """A 500 whose Status carries no reason, as the real server answers some decode errors."""
    return ApiError(500, "", message)


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def too_large(limit: int) -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def resource_not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def internal(message: str) -> ApiError:
    return ApiError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        {"causes": [{"message": message}]},
    )


def too_large_resource_version(requested: int, current: int) -> ApiError:
    return ApiError(
        504,
        "Timeout",
        f"Timeout: Too large resource version: {requested}, current: {current}",
        {
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
    )


def injected(code: int, reason: str | None, message: str | None) -> ApiError:
    """An error a test asked the fault hooks to return."""
    default_reasons = {
        400: "BadRequest",
        401: "Unauthorized",
        403: "Forbidden",
        404: "NotFound",
        409: "Conflict",
        410: "Expired",
        422: "Invalid",
        429: "TooManyRequests",
        500: "InternalError",
        503: "ServiceUnavailable",
        504: "Timeout",
    }
    return ApiError(
        code,
        reason or default_reasons.get(code, "Unknown"),
        message or f"injected fault: status {code}",
        {"retryAfterSeconds": 1} if code in (429, 503) else None,
    )
