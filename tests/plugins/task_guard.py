"""Fails a test whose asyncio tasks were left behind: an exception nobody retrieved, or a task
destroyed while still pending.

asyncio reports both only when the task object is garbage-collected, through the event loop's
exception handler, which logs them on the ``asyncio`` logger at error level ("Task exception
was never retrieved", "Task was destroyed but it is pending!"). Either means a task nobody owns:
started and never awaited or cancelled, so its failure went unseen (a long poll left running
when its client was closed). Every task the product starts is owned, cancelled and awaited on
the way out; this guard holds the test suite to it.

An orphan that nothing references any more is reported at once; one held in a reference cycle
when the collector runs. So after each test's teardown the young generations are collected
(what the test allocated lately; a full collection after every test would cost about 0.1 s of
CPU each on this suite's heap, measured: tests/unit/api 27 s of CPU without the guard, 45 s
with full collections, 30 s with young ones), and any record seen fails that test's teardown
with the record's text and traceback. A full collection at the end of the session catches the
rest; records that appear after the last test fail the session. A record can come from an
earlier test (a task that was promoted to the old generation, or finished with an exception
only after its test ended): the message says so.
"""

from __future__ import annotations

import gc
import logging
import traceback
from collections.abc import Generator

import pytest

ORPHAN_MESSAGES = (
    "Task exception was never retrieved",
    "Future exception was never retrieved",
    "Task was destroyed but it is pending",
)


class _OrphanHandler(logging.Handler):
    """Keeps the text of every orphan report of the ``asyncio`` logger."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.found: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if not message.startswith(ORPHAN_MESSAGES):
            return
        text = message
        if record.exc_info and record.exc_info[1] is not None:
            text += "\n" + "".join(traceback.format_exception(*record.exc_info))
        self.found.append(text)

    def take(self) -> list[str]:
        found, self.found = self.found, []
        return found


_handler = _OrphanHandler()

YOUNG_GENERATIONS = 1
"""Collected after each test: generations 0 and 1."""


def _describe(found: list[str]) -> str:
    return (
        "task guard: an asyncio task was left behind (started, never awaited or cancelled; "
        "it may have been started by an earlier test)\n\n" + "\n\n".join(found)
    )


def pytest_configure(config: pytest.Config) -> None:
    logging.getLogger("asyncio").addHandler(_handler)


def pytest_unconfigure(config: pytest.Config) -> None:
    logging.getLogger("asyncio").removeHandler(_handler)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    try:
        return (yield)
    finally:
        gc.collect(YOUNG_GENERATIONS)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when != "teardown":
        return report
    found = _handler.take()
    if found:
        original = report.longreprtext if report.longrepr is not None else ""
        report.outcome = "failed"
        report.longrepr = _describe(found) + (f"\n\n{original}" if original else "")
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    gc.collect()
    found = _handler.take()
    if found:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(_describe(found), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
