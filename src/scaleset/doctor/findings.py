"""What the doctor reports: findings (one problem, where, and what to do), the checks it could
not run (and why), and — when it could not look at all — what it could not reach."""

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
    could_not_look: str = ""
    """One line naming what the doctor could not reach or find (the API server, the
    namespace, any scale set); when set, nothing may be called healthy."""

    @property
    def healthy(self) -> bool:
        return not self.findings and not self.could_not_look and bool(self.checked)

    def to_json(self) -> dict[str, Any]:
        return {
            "healthy": self.healthy,
            "could_not_look": self.could_not_look or None,
            "findings": [f.to_json() for f in self.findings],
            "skipped": [asdict(s) for s in self.skipped],
            "checked": list(self.checked),
        }
