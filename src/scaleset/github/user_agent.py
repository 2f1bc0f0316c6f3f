"""The User-Agent the client sends: a JSON object, as the scaleset Go client does (§1.7)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from scaleset import __version__


@dataclass(frozen=True)
class SystemInfo:
    """Who is calling. The listener uses subsystem "ghalistener" and its scale set id; the
    controller "gha-scale-set-controller" and 0 until the scale set exists."""

    system: str = "scaleset"
    version: str = __version__
    commit_sha: str = "unknown"
    scale_set_id: int = 0
    subsystem: str = ""


def user_agent(info: SystemInfo) -> str:
    return json.dumps(
        {
            "system": info.system,
            "version": info.version,
            "commit_sha": info.commit_sha,
            "scale_set_id": info.scale_set_id,
            "subsystem": info.subsystem,
            "build_version": __version__,
            "build_commit_sha": "unknown",
            "kind": "scaleset",
        },
        separators=(",", ":"),
    )
