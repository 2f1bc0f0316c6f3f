"""Prints a doctor ``Report``: a table (one line per finding, then its suggested action; then
the checks that were skipped and why; or the one line saying what the doctor could not look
at) or JSON (``Report.to_json``)."""

from __future__ import annotations

import json

from scaleset.doctor.findings import Report


def as_json(report: Report) -> str:
    return json.dumps(report.to_json(), indent=2, sort_keys=True)


def as_table(report: Report) -> str:
    lines: list[str] = []
    if report.findings:
        rows = [("SEVERITY", "CHECK", "OBJECT", "DETAIL")] + [
            (f.severity, f.check, f.target, f.detail) for f in report.findings
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        for index, row in enumerate(rows):
            cells = [cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)]
            lines.append("  ".join([*cells, row[3]]))
            if index:
                lines.append(" " * (sum(widths) + 6) + f"-> {report.findings[index - 1].action}")
    elif report.healthy:
        lines.append(f"healthy: no findings ({len(report.checked)} checks ran)")
    if report.could_not_look:
        lines.append(f"could not look: {report.could_not_look}")
        if not report.checked:
            return "\n".join(lines)
    for skipped in report.skipped:
        lines.append(f"skipped {skipped.check}: {skipped.why}")
    return "\n".join(lines)
