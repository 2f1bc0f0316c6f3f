"""Fails a test during which a subtree shared between cached objects was changed in place.

The informer's projections (``scaleset.kube.objects``) keep one copy of the subtrees many cached
objects repeat (a runner set's pod template, its runners' labels, annotations, finalizers and
owner references, the pods' labels): every record holding it sees a change made through any of
them, so a change in place would alter hundreds of cached objects at once. The product never
changes a cached object (it builds a patch instead); this guard holds it to that. It turns on
``SubtreeCache.check_unchanged``, which compares a kept subtree's encoding with the one it was
kept under each time it is handed out again, and fails the test in whose run a difference was
found, with the subtree as it was kept.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from scaleset.kube.objects import SubtreeCache


def pytest_configure(config: pytest.Config) -> None:
    SubtreeCache.check_unchanged = True


def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    SubtreeCache.changed.clear()  # found between tests: no test's


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    changed = list(SubtreeCache.changed)
    SubtreeCache.changed.clear()
    if changed:
        found = "; ".join(text[:300] for text in changed)
        original = report.longreprtext if report.longrepr is not None else ""
        report.outcome = "failed"
        report.longrepr = (
            f"{report.when}: a subtree shared between cached objects was changed in place "
            f"(build a patch instead); as it was kept: {found}"
            + (f"\n\n{original}" if original else "")
        )
    return report
