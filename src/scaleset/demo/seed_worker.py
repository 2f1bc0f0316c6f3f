"""One seed of ``scaleset demo --seeds N --parallel K`` in a process of its own.

``python -m scaleset.demo.seed_worker OPTIONS_JSON FIGURES_PATH``: runs the demo with the
options (``DemoOptions`` fields as JSON; paths as strings), prints its usual output, writes the
seed's figures (``{"code": exit code, "row": the table row, "detail": its zombie hops and lost
job events}``) to ``FIGURES_PATH`` and exits with the demo's exit code. Separate processes let
seeds run side by side on more than one core (a seed mostly waits: on its runners' start-up, on
timers), each with a system of its own.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path

from scaleset import logs
from scaleset.demo.options import DemoOptions, options_from_json
from scaleset.demo.report import Report, seed_detail, seed_row
from scaleset.demo.run import run_demo_report


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(
            "usage: python -m scaleset.demo.seed_worker OPTIONS_JSON FIGURES_PATH", file=sys.stderr
        )
        return 2
    options = options_from_json(argv[0])
    logs.configure("warning", "text")
    # the registration pass's decisions are rare and say why a runner was ended: keep them
    logging.getLogger("scaleset.controllers.registrationpass").setLevel(logging.INFO)
    code, row, report = asyncio.run(_run(options))
    detail = seed_detail(report) if report is not None else {}
    Path(argv[1]).write_text(
        json.dumps({"code": code, "row": row, "detail": detail}), encoding="utf-8"
    )
    return code


async def _run(options: DemoOptions) -> tuple[int, dict[str, str], Report | None]:
    loop = asyncio.get_running_loop()
    began = loop.time()
    code, report = await run_demo_report(options)
    wall = loop.time() - began
    row = (
        seed_row(report, wall)
        if report is not None
        else {
            "seed": str(options.seed),
            "wall": f"{wall:.0f}",
            "ok": "DID NOT RUN",
        }
    )
    return code, row, report


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
