"""The lines every result file starts with: the machine, when, the exact command, and whether
this was the full run.

A figure quoted anywhere comes from a committed table of one full run. ``run_scope`` tells a
full run from a partial one by comparing what the command was given with the script's own
defaults (the full run is the script with no arguments): a smoke test (``--quick``) and any
changed argument make the table say **partial run**, naming what differs. ``header`` also
records the load at the start and at the end: a run that needs the machine alone says when it
did not have it.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

NOT_SCOPE = frozenset({"output", "help"})
"""Arguments that do not change what is measured (where the table goes)."""


def _flag(action: argparse.Action) -> str:
    longs = [option for option in action.option_strings if option.startswith("--")]
    return longs[0] if longs else action.dest


def _shown(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return "its default" if value is None else str(value)


def run_scope(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    *,
    diagnostics: Sequence[str] = (),
    variants: Sequence[str] = (),
) -> str:
    """``full run`` or ``**partial run**: …`` for the arguments ``argv`` gives ``parser``
    (``None``: the process's own), before the script adjusts them (``--quick`` and the like).
    ``diagnostics``: destinations of options that make the run a diagnosis (tracing, a
    profiler) whose figures are not results. ``variants``: destinations of options that choose
    which table the run fills (another API server: a table of its own), not how much of it:
    given alone, the run is still the full run of that table, and the scope names them."""
    given = vars(parser.parse_args(argv))
    changed: list[str] = []
    chosen: list[str] = []
    for action in parser._actions:  # argparse has no public list of them
        dest = action.dest
        if dest in NOT_SCOPE or dest not in given:
            continue
        if dest in variants:
            if given[dest] != parser.get_default(dest):
                chosen.append(f"`{_flag(action)}`")
            continue
        value, default = given[dest], parser.get_default(dest)
        if value == default:
            continue
        if isinstance(action, argparse._StoreTrueAction):
            changed.append(f"`{_flag(action)}`")
        else:
            changed.append(f"`{_flag(action)} {_shown(value)}` (full run: {_shown(default)})")
    traced = [d for d in diagnostics if given.get(d) not in (None, False)]
    if traced:
        return (
            "**a diagnosis, not a result** (with "
            + ", ".join(f"`--{d.replace('_', '-')}`" for d in traced)
            + "): its times, CPU and memory are not comparable with a run without it"
        )
    variant = f", the table of {' and '.join(chosen)}" if chosen else ""
    if not changed:
        return f"full run (the script's defaults{variant})"
    return "**partial run**: " + "; ".join(changed) + variant


def header(command: str, scope: str, *, load_at_start: float | None = None) -> list[str]:
    """The lines that make a result comparable: machine, date, exact command, the run's scope,
    and the load at its start and end (over the core count: the machine was not the run's
    alone)."""
    cores = os.cpu_count() or 1
    end = os.getloadavg()[0]
    start = end if load_at_start is None else load_at_start
    shared = max(start, end) > cores
    load = f"load {start:.1f} at the start, {end:.1f} at the end" + (
        f" (**more than its {cores} cores: the machine was shared**, times and CPU seconds "
        "run long)"
        if shared
        else ""
    )
    return [
        f"- machine: {platform.machine()}, {cores} cores, Python "
        f"{platform.python_version()}, {load}",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"- command: `{command}`",
        f"- scope: {scope}",
    ]


def command_line(script: str, argv: Sequence[str] | None) -> str:
    """The command that ran ``script`` with ``argv`` (``None``: the process's own arguments);
    an absolute path (a kubeconfig, a scratch directory) is shown as ``<path>``: result files
    name no place on the machine that ran them."""
    given = list(sys.argv[1:] if argv is None else argv)
    shown = [_hidden(arg) for arg in given]
    return " ".join(
        [".venv/bin/python", script, *(a if "<path>" in a else shlex.quote(a) for a in shown)]
    )


def _hidden(arg: str) -> str:
    if arg.startswith("/"):
        return "<path>"
    if arg.startswith("--") and "=/" in arg:
        return arg.split("=", 1)[0] + "=<path>"
    return arg


__all__ = ["command_line", "header", "run_scope"]
