"""Fixtures of the listener suites: our ``KubeClient`` on both backends (``client``) with our
CRDs (``actions_crds``). Their helpers are in ``runners.py`` and ``world.py``."""

from __future__ import annotations

from tests.support.kube_fixtures import actions_crds, client

__all__ = ["actions_crds", "client"]
