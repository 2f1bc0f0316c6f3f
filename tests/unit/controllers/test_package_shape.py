"""Every reconciler package has the same parts with the same roles (docs/architecture.md, "A
reconciler: observed → plan → apply"): a newcomer finds a controller's settings, metrics, plan
and apply at the same path in each."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from pathlib import Path

import pytest

from scaleset.controllers import registry
from scaleset.controllers.decisions import DecisionMetrics

CONTROLLERS = Path(importlib.import_module("scaleset.controllers").__file__ or "").parent
ARCHITECTURE = Path(__file__).resolve().parents[3] / "docs" / "architecture.md"

PARTS = ("actions", "apply", "metrics", "observed", "plan", "reconciler", "settings", "setup")

PACKAGES = sorted(
    path.name for path in CONTROLLERS.iterdir() if path.is_dir() and (path / "__init__.py").exists()
)


def test_every_package_is_a_registered_reconciler() -> None:
    registered = {spec.setup.__module__.split(".")[2] for spec in registry.REGISTERED}
    assert set(PACKAGES) == registered


def test_the_architecture_page_lists_the_parts_every_package_has() -> None:
    section = ARCHITECTURE.read_text().split("## A reconciler: observed → plan → apply", 1)[1]
    section = section.split("\n## ", 1)[0]
    listed = tuple(sorted(re.findall(r"^- `(\w+)\.py` — ", section, flags=re.M)))
    assert listed == PARTS


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_has_every_part(package: str) -> None:
    present = {path.stem for path in (CONTROLLERS / package).glob("*.py")}
    assert set(PARTS) <= present, f"{package} lacks {sorted(set(PARTS) - present)}"


@pytest.mark.parametrize("package", PACKAGES)
def test_settings_are_a_frozen_settings_class_that_setup_builds_with(package: str) -> None:
    settings = importlib.import_module(f"scaleset.controllers.{package}.settings").Settings
    assert dataclasses.is_dataclass(settings)
    assert settings.__dataclass_params__.frozen  # type: ignore[attr-defined]
    setup = importlib.import_module(f"scaleset.controllers.{package}.setup")
    parameter = inspect.signature(setup.build).parameters["settings"]
    assert parameter.kind is inspect.Parameter.KEYWORD_ONLY
    assert parameter.annotation == "Settings"


@pytest.mark.parametrize("package", PACKAGES)
def test_metrics_declare_the_controllers_counters(package: str) -> None:
    metrics = importlib.import_module(f"scaleset.controllers.{package}.metrics")
    declared = [
        value
        for value in vars(metrics).values()
        if isinstance(value, type) and value.__module__ == metrics.__name__
    ]
    assert declared, f"{package}.metrics declares no metrics class"
    if package != "ephemeralrunnerset":  # its counter carries the set's name (the page says why)
        (counter,) = [cls for cls in declared if issubclass(cls, DecisionMetrics)]
        # one spelling: the class names the counter, prometheus_client adds ``_total``
        assert re.fullmatch(r"scaleset_[a-z_]+_decisions", counter.name), counter.name
