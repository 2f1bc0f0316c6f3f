"""Label and field selectors: parsing (``labels.Parse``, ``fields.ParseSelector``) and matching.

A parse error is a 400 BadRequest, as the real server answers a list or watch with a bad selector.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from scaleset.embedded.apiserver import _names
from scaleset.embedded.apiserver._errors import ApiError, bad_request

_SPECIAL = "!=(),<>"


@dataclass(frozen=True)
class LabelRequirement:
    key: str
    operator: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.operator in ("=", "in"):
            return present and value in self.values
        if self.operator in ("!=", "notin"):
            return not present or value not in self.values
        if self.operator == "exists":
            return present
        if self.operator == "!":
            return not present
        if not present or value is None:
            return False
        try:
            number = int(value)
        except ValueError:
            return False
        bound = int(self.values[0])
        return number > bound if self.operator == "gt" else number < bound


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[LabelRequirement, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(req.matches(labels) for req in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


class _InvalidRequirement(ValueError):
    """A well-formed requirement with an invalid key or value."""


def _tokenize(text: str) -> list[tuple[str, str]]:
    """(kind, text) tokens: ident, op, lparen, rparen, comma."""
    tokens: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch == "(":
            tokens.append(("lparen", ch))
            i += 1
        elif ch == ")":
            tokens.append(("rparen", ch))
            i += 1
        elif ch == ",":
            tokens.append(("comma", ch))
            i += 1
        elif ch in "!=<>":
            two = text[i : i + 2]
            if two in ("!=", "=="):
                tokens.append(("op", two))
                i += 2
            else:
                tokens.append(("op", ch))
                i += 1
        else:
            start = i
            while i < len(text) and not text[i].isspace() and text[i] not in _SPECIAL:
                i += 1
            tokens.append(("ident", text[start:i]))
    return tokens


class _LabelParser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.pos = 0

    def _peek(self) -> tuple[str, str]:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ("end", "")

    def _next(self) -> tuple[str, str]:
        token = self._peek()
        self.pos += 1
        return token

    def parse(self) -> LabelSelector:
        reqs: list[LabelRequirement] = []
        while self._peek()[0] != "end":
            if self._peek()[0] != "ident" and self._peek() != ("op", "!"):
                raise ValueError(
                    f"found '{self._peek()[1]}', expected: !, identifier, or 'end of string'"
                )
            try:
                reqs.append(self._requirement())
            except ValueError as exc:
                raise _InvalidRequirement(str(exc)) from None
            kind, text = self._next()
            if kind == "end":
                break
            if kind != "comma":
                raise ValueError(f"found '{text}', expected: ',' or 'end of string'")
            after_kind, after_text = self._peek()
            if after_kind != "ident" and (after_kind, after_text) != ("op", "!"):
                raise ValueError(f"found '{after_text}', expected: identifier after ','")
        return LabelSelector(tuple(reqs))

    def _requirement(self) -> LabelRequirement:
        kind, text = self._next()
        if kind == "op" and text == "!":
            kind, key = self._next()
            if kind != "ident":
                raise ValueError(f"found '{key}', expected: identifier")
            self._check_key(key)
            return LabelRequirement(key, "!", ())
        if kind != "ident":
            raise ValueError(f"found '{text}', expected: !, identifier, or 'end of string'")
        key = text
        self._check_key(key)
        op_kind, op = self._peek()
        if op_kind in ("comma", "end"):
            return LabelRequirement(key, "exists", ())
        self.pos += 1
        if op_kind == "ident" and op in ("in", "notin"):
            values = self._set_values()
            return LabelRequirement(key, op, values)
        if op_kind == "op" and op in ("=", "==", "!="):
            value_kind, value = self._peek()
            if value_kind == "ident":
                self.pos += 1
            elif value_kind in ("comma", "end"):
                value = ""
            else:
                raise ValueError(f"found '{value}', expected: identifier")
            self._check_value(value)
            return LabelRequirement(key, "!=" if op == "!=" else "=", (value,))
        if op_kind == "op" and op in ("<", ">"):
            value_kind, value = self._next()
            if value_kind != "ident":
                raise ValueError(f"found '{value}', expected: identifier")
            try:
                int(value)
            except ValueError:
                raise ValueError(
                    f"for 'Gt', 'Lt' operators, the value must be an integer: {value}"
                ) from None
            return LabelRequirement(key, "gt" if op == ">" else "lt", (value,))
        raise ValueError(f"found '{op}', expected: '=', '!=', '==', 'in', notin'")

    def _set_values(self) -> tuple[str, ...]:
        kind, text = self._next()
        if kind != "lparen":
            raise ValueError(f"found '{text}', expected: '('")
        values: list[str] = []
        while True:
            kind, text = self._next()
            if kind == "rparen" and not values:
                break
            if kind == "ident":
                self._check_value(text)
                values.append(text)
                kind, text = self._next()
            elif kind in ("comma", "rparen"):
                values.append("")
            else:
                raise ValueError(f"found '{text}', expected: ',', ')' or identifier")
            if kind == "rparen":
                break
            if kind != "comma":
                raise ValueError(f"found '{text}', expected: ',' or ')'")
        return tuple(values)

    @staticmethod
    def _check_key(key: str) -> None:
        errs = _names.qualified_name(key)
        if errs:
            raise _InvalidRequirement(f'invalid label key "{key}": {"; ".join(errs)}')

    @staticmethod
    def _check_value(value: str) -> None:
        errs = _names.label_value(value)
        if errs:
            raise _InvalidRequirement(f'invalid label value: "{value}": at key: {"; ".join(errs)}')


def parse_label_selector(text: str | None) -> LabelSelector:
    if not text:
        return LabelSelector(())
    try:
        return _LabelParser(text).parse()
    except _InvalidRequirement as exc:
        raise bad_request(f"unable to parse requirement: {exc}") from None
    except ValueError as exc:
        raise bad_request(str(exc)) from None


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    equal: bool
    value: str


@dataclass(frozen=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...]

    def matches(self, fields: Mapping[str, str]) -> bool:
        for req in self.requirements:
            actual = fields.get(req.field, "")
            if (actual == req.value) != req.equal:
                return False
        return True

    @property
    def empty(self) -> bool:
        return not self.requirements

    def exact(self, field: str) -> str | None:
        """The value an ``=`` requirement pins ``field`` to, if any."""
        for req in self.requirements:
            if req.field == field and req.equal:
                return req.value
        return None


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            current.append(text[i : i + 2])
            i += 2
            continue
        if ch == sep:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    return parts


def _unescape(value: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\\":
            if i + 1 >= len(value):
                raise ValueError(f"invalid trailing escape sequence: {value!r}")
            nxt = value[i + 1]
            if nxt not in "\\,=!":
                raise ValueError(f"invalid escape sequence: \\{nxt}")
            out.append(nxt)
            i += 2
            continue
        if ch in ",=":
            raise ValueError(f"invalid field selector value, unescaped '{ch}' not allowed")
        out.append(ch)
        i += 1
    return "".join(out)


def _parse_field_term(term: str) -> FieldRequirement:
    i = 0
    while i < len(term):
        if term[i] == "\\":
            i += 2
            continue
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                field, value = term[:i], term[i + len(op) :]
                return FieldRequirement(field, op != "!=", _unescape(value))
        i += 1
    raise ValueError(f"invalid selector: '{term}'; can't understand '{term}'")


def parse_field_selector(
    text: str | None, supported: Callable[[str], str | None], unsupported_style: str = "known"
) -> FieldSelector:
    """Parse and check each field against the kind's supported labels.

    ``supported(field)`` returns the canonical field name, or None when the kind has no such field
    label (a 400 ``field label not supported``).
    """
    if not text:
        return FieldSelector(())
    reqs: list[FieldRequirement] = []
    try:
        for term in _split_unescaped(text, ","):
            if not term:
                continue
            req = _parse_field_term(term)
            canonical = supported(req.field)
            if canonical is None:
                if unsupported_style == "unsupported":
                    message = f"field label not supported: {req.field}"
                else:
                    message = (
                        f'"{req.field}" is not a known field selector: only "metadata.name", '
                        '"metadata.namespace"'
                    )
                raise ApiError(400, "BadRequest", message)
            reqs.append(FieldRequirement(canonical, req.equal, req.value))
    except ValueError as exc:
        raise bad_request(str(exc)) from None
    return FieldSelector(tuple(reqs))


def dig(obj: Mapping[str, Any], path: str) -> str:
    """The string value at a dotted path, as field selectors see it ("" when absent)."""
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return ""
        node = node.get(part)
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)
