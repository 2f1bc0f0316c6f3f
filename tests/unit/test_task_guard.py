"""The task guard (``tests/plugins/task_guard.py``) fails a test that leaves an asyncio task
behind, and only such a test: run on a small test file in a pytest of its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SUITE = """
import asyncio


async def test_leaves_a_failed_task_behind():
    async def fail():
        raise RuntimeError("Cannot send a request, as the client has been closed.")

    asyncio.ensure_future(fail())  # nobody awaits it
    await asyncio.sleep(0.01)


async def test_awaits_its_task():
    async def fail():
        raise RuntimeError("seen")

    task = asyncio.ensure_future(fail())
    await asyncio.gather(task, return_exceptions=True)


def test_without_a_loop():
    assert True
"""


def _run(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_suite.py").write_text(SUITE, encoding="utf-8")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.plugins.task_guard",
            "-o",
            "asyncio_mode=auto",
            "--rootdir",
            str(tmp_path),
            "-c",
            str(tmp_path / "pytest.ini"),
            str(tmp_path / "test_suite.py"),
        ],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_task_exception_never_retrieved_fails_the_test_that_left_it(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    result = _run(tmp_path)
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert "ERROR at teardown of test_leaves_a_failed_task_behind" in out, out
    assert "Task exception was never retrieved" in out, out
    assert "Cannot send a request, as the client has been closed." in out, out
    assert "3 passed, 1 error" in out, out
