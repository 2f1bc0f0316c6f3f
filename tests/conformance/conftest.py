"""Conformance fixtures: the suite's Widget CRD (``widgets.py``) installed once per backend."""

from __future__ import annotations

from typing import Any

import pytest
from lightkube import AsyncClient
from tests.conformance.widgets import WIDGET_CRD, Widget, install_crd


@pytest.fixture(scope="session")
async def widgets(kube: AsyncClient) -> type[Any]:
    """Install the Widget CRD (once per backend) and return its lightkube resource class."""
    await install_crd(kube, WIDGET_CRD)
    return Widget
