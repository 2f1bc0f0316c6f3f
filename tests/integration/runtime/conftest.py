"""Fixtures of the controller-runtime suite (defined in ``tests.support.kube_fixtures``)."""

from tests.support.kube_fixtures import actions_crds, client, proxy

__all__ = ["actions_crds", "client", "proxy"]
