"""The controller process has one GitHub access: ``build_manager`` makes one ``GitHubClients``
for every controller (one cache of clients, one policy on http URLs, one User-Agent) and has
the manager close it when it stops."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from scaleset.controllers.github_access import GitHubClients
from scaleset.controllers.manager_process import ControllerOptions, build_manager
from scaleset.kube.client import KubeClient


async def test_the_controller_process_builds_one_github_access(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[GitHubClients] = []
    build = GitHubClients.__init__

    def recording(self: GitHubClients, *args: Any, **kwargs: Any) -> None:
        build(self, *args, **kwargs)
        built.append(self)

    monkeypatch.setattr(GitHubClients, "__init__", recording)
    client = KubeClient(httpx2.AsyncClient(base_url="http://127.0.0.1:9"))  # never called
    try:
        options = ControllerOptions(
            controller_namespace="arc-systems",
            listener_image="scaleset:test",
            allow_http_github_url=True,
            metrics_addr="0",
        )
        build_manager(options, client)
        assert len(built) == 1, "one GitHub access for every controller"
        [github] = built
        assert github.options.allow_http_github_url
        assert github.options.system_info is not None
        assert github.options.system_info.subsystem == "gha-scale-set-controller"
    finally:
        await client.close()
