"""What the doctor reports: findings (one problem, where, and what to do) and the checks it
could not run (and why)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Finding:
    """One problem: ``check`` is a stable id, ``target`` is ``Kind namespace/name``."""

    check: str
    target: str
    detail: str
    action: str
    severity: str = "warning"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Skipped:
    """A check that did not run, and why (no GitHub credentials, no permission, ...)."""

    check: str
    why: str


@dataclass(frozen=True)
class Report:
    findings: tuple[Finding, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    checked: tuple[str, ...] = field(default_factory=tuple)
    """The checks that ran."""

    @property
    def healthy(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        return {
            "healthy": self.healthy,
            "findings": [f.to_json() for f in self.findings],
            "skipped": [asdict(s) for s in self.skipped],
            "checked": list(self.checked),
        }
