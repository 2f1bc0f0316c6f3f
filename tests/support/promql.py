"""Metric names in PromQL expressions and in Prometheus text expositions, for dashboard tests.

- ``metric_names(expr)``: the metric names a PromQL expression selects. A small tokenizer, not a
  parser: string literals, label matchers (``{...}``), ranges and subqueries (``[...]``),
  grouping clauses (``by (...)``, ``without``, ``on``, ``ignoring``, ``group_left/right``),
  Grafana variables (``$x``, ``${x}``, ``[[x]]``), durations (``offset 1h``) and numbers are
  removed; of the identifiers left, a function or aggregation (followed by ``(``) or a keyword
  is not a metric. A selector written only as ``{__name__=...}`` is refused (``ValueError``):
  its name cannot be checked.
- ``label_values_metric(query)``: the metric of a Grafana ``label_values(metric, label)``
  variable query (``None`` for ``label_values(label)`` and other queries).
- ``exposed_names(text)``: every sample name a ``/metrics`` page can carry, from its ``# TYPE``
  lines (a counter ``x_total``; a histogram ``x_bucket``, ``x_count``, ``x_sum``; a summary
  ``x``, ``x_count``, ``x_sum``; ``x_created`` for each of them) and its sample lines — so a
  labelled metric that has no series yet still counts as exported.
"""

from __future__ import annotations

import re

_IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GROUPING = re.compile(
    r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", re.IGNORECASE
)
_VARIABLE = re.compile(r"\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\[\[[^\]]*\]\]")
_DURATION = re.compile(r"(?<![A-Za-z0-9_:])(?:\d+(?:ms|s|m|h|d|w|y))+(?![A-Za-z0-9_:])")
_NUMBER = re.compile(r"(?<![A-Za-z0-9_:])(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:e[+-]?\d+)?)")
KEYWORDS = frozenset(
    {
        "and",
        "or",
        "unless",
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "bool",
        "offset",
        "atan2",
        "inf",
        "nan",
    }
)


def metric_names(expr: str) -> set[str]:
    """The metric names ``expr`` selects."""
    text = _VARIABLE.sub(" ", expr)
    if re.search(r"__name__", text):
        raise ValueError(f"a selector by __name__ cannot be checked: {expr!r}")
    text = _STRING.sub('""', text)
    text = re.sub(r"\{[^{}]*\}", " ", text)
    text = re.sub(r"\[[^\[\]]*\]", " ", text)
    text = _GROUPING.sub(" ", text)
    text = re.sub(r"@\s*(?:start|end)\s*\(\s*\)", " ", text)
    text = _DURATION.sub(" ", text)
    text = _NUMBER.sub(" ", text)
    names: set[str] = set()
    for match in _IDENTIFIER.finditer(text):
        word = match.group(0)
        rest = text[match.end() :].lstrip()
        if rest.startswith("("):
            continue  # a function or an aggregation
        if word.lower() in KEYWORDS:
            continue
        names.add(word)
    return names


def label_values_metric(query: str) -> str | None:
    """``label_values(metric{...}, label)`` -> ``metric``."""
    found = re.fullmatch(r"\s*label_values\(\s*([^,]+?)\s*,\s*[A-Za-z_]\w*\s*\)\s*", query)
    if found is None:
        return None
    names = metric_names(found.group(1))
    if len(names) != 1:
        raise ValueError(f"label_values over no single metric: {query!r}")
    return names.pop()


def exposed_names(text: str) -> set[str]:
    """Every sample name the exposition ``text`` declares or carries."""
    names: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            parts = line.split()
            if len(parts) < 4:
                continue
            name, kind = parts[2], parts[3]
            names.add(name)
            base = name.removesuffix("_total") if kind == "counter" else name
            names.add(f"{base}_created")
            if kind == "histogram":
                names.update({f"{name}_bucket", f"{name}_count", f"{name}_sum"})
            elif kind == "summary":
                names.update({f"{name}_count", f"{name}_sum"})
        elif line and not line.startswith("#"):
            match = _IDENTIFIER.match(line)
            if match is not None:
                names.add(match.group(0))
    return names
