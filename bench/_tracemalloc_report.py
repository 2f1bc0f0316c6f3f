"""Where the traced bytes are: a report of the controller's tracemalloc snapshots.

``bench/controller_memory.py --tracemalloc DIR`` has the controller write snapshots to DIR
(``_controller_child.py``); this reads them, in the order taken, and prints:

- the traced total of each snapshot;
- the last snapshot grouped by the *call site in scaleset*: the innermost frame of each
  allocation's traceback that is in ``scaleset`` (so bytes a library allocates — a JSON decoder,
  an HTTP client — count where our code asked for them), with the library frame below it;
- the same grouping of the growth from the first snapshot to the last;
- with ``peak.bin`` (written when the traced bytes were highest, within 8 MB), what was alive at
  the peak and is gone by the last snapshot: the transient load that sets the high-water mark
  the allocator's arenas then keep;
- the last snapshot grouped by file (who allocated, libraries included).

    .venv/bin/python bench/_tracemalloc_report.py DIR [--top 30]
"""

from __future__ import annotations

import argparse
import re
import sys
import tracemalloc
from collections import Counter
from pathlib import Path

MB = 1024 * 1024
OURS = "/scaleset/"


def snapshots(directory: Path) -> list[tuple[str, tracemalloc.Snapshot]]:
    """The snapshots in ``directory``, in the order taken."""
    paths = sorted(directory.glob("snapshot-*.bin"), key=lambda p: int(p.stem.split("-")[1]))
    return [(path.stem, tracemalloc.Snapshot.load(str(path))) for path in paths]


def _short(filename: str) -> str:
    """``scaleset/x.py``, ``httpx2/y.py``, ``stdlib: json/decoder.py``: no machine paths."""
    for marker in ("/site-packages/", "/src/"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    stdlib = re.split(r"/lib/python3\.\d+/", filename, maxsplit=1)
    if len(stdlib) == 2:
        return f"stdlib: {stdlib[1]}"
    return filename


def call_site(trace: tracemalloc.Trace) -> str:
    """``scaleset/x.py:12 (via lib/y.py:34)``: the innermost scaleset frame, and the innermost
    frame of all if that is elsewhere; ``lib/y.py:34`` alone when no frame is ours."""
    frames = list(reversed(trace.traceback))  # most recent first
    innermost = frames[0]
    inner = f"{_short(innermost.filename)}:{innermost.lineno}"
    for frame in frames:
        if OURS in frame.filename and "/bench/" not in frame.filename:
            site = f"{_short(frame.filename)}:{frame.lineno}"
            return site if frame is innermost else f"{site} (via {inner})"
    return inner


def by_call_site(snapshot: tracemalloc.Snapshot) -> Counter[str]:
    sizes: Counter[str] = Counter()
    for trace in snapshot.traces:
        sizes[call_site(trace)] += trace.size
    return sizes


def by_file(snapshot: tracemalloc.Snapshot) -> Counter[str]:
    sizes: Counter[str] = Counter()
    for stat in snapshot.statistics("filename"):
        sizes[_short(stat.traceback[0].filename)] += stat.size
    return sizes


def _rows(sizes: Counter[str], top: int, *, signed: bool = False) -> list[str]:
    ranked = sorted(sizes.items(), key=lambda item: -abs(item[1]))[:top]
    sign = "+" if signed else ""
    rows = ["| where | MB |", "| --- | ---: |"]
    rows += [f"| `{where}` | {size / MB:{sign}.2f} |" for where, size in ranked]
    rest = sum(sizes.values()) - sum(size for _, size in ranked)
    rows.append(f"| everything else | {rest / MB:{sign}.2f} |")
    return rows


def report(directory: Path, top: int = 30, labels: dict[str, str] | None = None) -> str:
    """The report as Markdown (``labels``: what each snapshot's moment was, by its name)."""
    taken = snapshots(directory)
    if not taken:
        return f"no snapshots in {directory}\n"
    labels = labels or {}
    lines = ["Traced totals (Python allocations only; RSS adds the allocator's free arenas):", ""]
    for name, snap in taken:
        total = sum(stat.size for stat in snap.statistics("filename"))
        lines.append(f"- {name} ({labels.get(name, 'taken')}): {total / MB:.1f} MB")
    peak_path = directory / "peak.bin"
    peak = tracemalloc.Snapshot.load(str(peak_path)) if peak_path.exists() else None
    if peak is not None:
        total = sum(stat.size for stat in peak.statistics("filename"))
        lines.append(f"- peak (the most traced at once, within 8 MB): {total / MB:.1f} MB")
    last_name, last = taken[-1]
    lines += ["", f"By call site in scaleset, {last_name}:", "", *_rows(by_call_site(last), top)]
    # (title, minuend, subtrahend): growth since the first snapshot; what only the peak held
    changes: list[tuple[str, tracemalloc.Snapshot, tracemalloc.Snapshot]] = []
    if len(taken) > 1:
        first_name, first = taken[0]
        changes.append((f"Growth by call site, {first_name} → {last_name}:", last, first))
    if peak is not None:
        changes.append((f"Alive at the peak and gone by {last_name}:", peak, last))
    for title, minuend, subtrahend in changes:
        change = by_call_site(minuend)
        change.subtract(by_call_site(subtrahend))
        lines += ["", title, "", *_rows(change, top, signed=True)]
    lines += ["", f"By file, {last_name}:", "", *_rows(by_file(last), top)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args(argv)
    print(report(args.directory, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
