"""The demo's controller manager in a process of its own, so the soak can ``kill -9`` it.

``python -m scaleset.demo.controller_worker OPTIONS_JSON``: runs ``scaleset controller``'s
``serve`` with the options the demo gives (``ControllerOptions`` fields as JSON, the kubeconfig
as a path; the environment carries the controllers' ``SCALESET_*`` settings) until SIGTERM (a
graceful stop: lease released) or SIGKILL (nothing runs: no drain, no finally block, the lease
held until it expires — what a node failure or an OOM kill does). It logs as the demo does
(warnings, and the registration pass's rare decisions), and it exits when the demo process that
started it is gone, so a crashed demo leaves no controller behind.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

from scaleset import logs
from scaleset.controllers import manager_process
from scaleset.controllers.options import ControllerOptions

PARENT_CHECK_SECONDS = 1.0


def options_to_json(options: ControllerOptions) -> str:
    data: dict[str, Any] = dict(vars(options))
    data["kubeconfig"] = None if options.kubeconfig is None else str(options.kubeconfig)
    return json.dumps(data)


def options_from_json(text: str) -> ControllerOptions:
    data: dict[str, Any] = json.loads(text)
    if data.get("kubeconfig") is not None:
        data["kubeconfig"] = Path(data["kubeconfig"])
    for name in ("watch_namespaces", "image_pull_secrets", "exclude_label_propagation_prefixes"):
        data[name] = tuple(data.get(name) or ())
    data["ignored"] = tuple(tuple(pair) for pair in data.get("ignored") or ())
    return ControllerOptions(**data)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m scaleset.demo.controller_worker OPTIONS_JSON", file=sys.stderr)
        return 2
    options = options_from_json(argv[0])
    manager_process.validate(options)
    logs.configure(options.log_level, "text")
    logging.getLogger("scaleset.controllers.registrationpass").setLevel(logging.INFO)
    return asyncio.run(_serve_while_parent_lives(options, os.getppid()))


async def _serve_while_parent_lives(options: ControllerOptions, parent: int) -> int:
    serving = asyncio.create_task(manager_process.serve(options))
    while not serving.done():
        await asyncio.wait({serving}, timeout=PARENT_CHECK_SECONDS)
        if os.getppid() != parent:  # the demo is gone: nobody will stop us
            os.kill(os.getpid(), signal.SIGTERM)  # the handler of ``serve`` stops the manager
            break
    return await serving


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
