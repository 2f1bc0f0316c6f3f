"""The secret guard itself: its checks, and a real pytest run proving it fails leaking tests."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tests.plugins.secret_guard import SecretRegistry, exception_texts, mask

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_find_leaks_reports_place_and_masks_the_secret() -> None:
    registry = SecretRegistry()
    secret = registry.register("ghs_abcdefghijklmnop")
    leaks = registry.find_leaks([("log", f"token={secret}"), ("other", "nothing here")])
    assert [(leak.where, leak.masked) for leak in leaks] == [("log", "ghs…(20 chars)")]
    assert secret not in leaks[0].masked


def test_sources_are_polled_at_check_time() -> None:
    registry = SecretRegistry()
    issued: list[str] = []
    registry.add_source(lambda: issued)
    assert registry.find_leaks([("log", "mq-token-123456")]) == []
    issued.append("mq-token-123456")
    assert len(registry.find_leaks([("log", "mq-token-123456")])) == 1


def test_short_values_are_refused() -> None:
    with pytest.raises(ValueError, match="shorter"):
        SecretRegistry().register("abc")


def test_redact_replaces_every_occurrence() -> None:
    registry = SecretRegistry()
    secret = registry.register("supersecretvalue")
    assert registry.redact(f"a {secret} b {secret}") == f"a {mask(secret)} b {mask(secret)}"


def test_exception_texts_follow_causes_contexts_groups_and_notes() -> None:
    inner = ValueError("inner-secret-cause")
    try:
        try:
            raise inner
        except ValueError as error:
            raise RuntimeError("outer") from error
    except RuntimeError as outer:
        group = ExceptionGroup("group", [outer, KeyError("grouped-secret")])
        group.add_note("noted-secret-here")
        texts = " ".join(text for _, text in exception_texts(group))
    for fragment in ("inner-secret-cause", "grouped-secret", "noted-secret-here", "outer"):
        assert fragment in texts


def test_assert_clean_fails_on_a_leaking_exception() -> None:
    registry = SecretRegistry()
    secret = registry.register("leaky-token-value")
    with pytest.raises(pytest.fail.Exception) as caught:
        registry.assert_clean(RuntimeError(f"boom {secret}"))
    assert secret not in str(caught.value)
    registry.assert_clean(RuntimeError("boom"))


INNER_TESTS = """
import logging

import pytest
import structlog

from tests.plugins.secret_guard import register_secret

# no credential shape (no ghp_ prefix, never after "token"/"Bearer"): the logs' own masking
# cannot recognise it, so only the guard stands between it and the report
SECRET = register_secret("innerleak-0123456789-value")


def test_clean():
    logging.getLogger("app").debug("token %s", "***")


def test_debug_log_leak():
    logging.getLogger("app.deep").debug("sending %s", SECRET)


def test_extra_field_leak():
    logging.getLogger("app").info("request", extra={"authorization": SECRET})


def test_exception_leak():
    raise RuntimeError("request failed with " + SECRET)


def test_chained_exception_leak():
    try:
        raise KeyError(SECRET)
    except KeyError as error:
        raise RuntimeError("clean text") from error


def test_logged_traceback_leak():
    try:
        raise ValueError(SECRET)
    except ValueError:
        logging.getLogger("app").exception("it failed")


def test_print_leak():
    print("debug:", SECRET)


def test_structlog_through_stdlib_leak():
    structlog.configure(
        processors=[structlog.processors.KeyValueRenderer()],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    try:
        structlog.get_logger("app").info("auth", token=SECRET)
    finally:
        structlog.reset_defaults()


def test_teardown_leak(request):
    request.addfinalizer(lambda: logging.getLogger("app").warning("late %s", SECRET))
"""


def test_guard_fails_leaking_tests_in_a_real_run(tmp_path: Path) -> None:
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(INNER_TESTS))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.plugins.secret_guard",
            "-p",
            "no:cacheprovider",
            "-v",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_inner.py"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = result.stdout + result.stderr
    assert "innerleak-0123456789-value" not in output, "the guard's own report leaked the secret"
    assert "test_inner.py::test_clean PASSED" in output
    for name in (
        "test_debug_log_leak",
        "test_extra_field_leak",
        "test_exception_leak",
        "test_chained_exception_leak",
        "test_logged_traceback_leak",
        "test_print_leak",
        "test_structlog_through_stdlib_leak",
    ):
        assert f"test_inner.py::{name} FAILED" in output, name
        assert f"test_inner.py::{name} ERROR" not in output, f"{name} reported twice"
    assert "test_inner.py::test_teardown_leak ERROR" in output
    assert "secret guard: a registered secret leaked" in output
    assert "inn…(26 chars)" in output
    assert result.returncode == 1


STORED_TESTS = """
import httpx2

from scaleset.embedded.apiserver import DEFAULT_TOKEN, serve_in_thread
from tests.plugins.secret_guard import register_secret

SECRET = register_secret("ghp_storedleak_0123456789")
EVENT = {
    "metadata": {"name": "e1", "namespace": "default"},
    "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
    "reason": "Failed",
    "type": "Warning",
}
POD = {
    "metadata": {"name": "p", "namespace": "default"},
    "spec": {"containers": [{"name": "runner", "image": "busybox"}]},
}


def server_call(method, path, body, content_type="application/json"):
    with serve_in_thread() as running:
        with httpx2.Client(
            base_url=running.url, headers={"Authorization": f"Bearer {DEFAULT_TOKEN}"}
        ) as http:
            if method == "PATCH":
                assert http.post("/api/v1/namespaces/default/pods", json=POD).status_code == 201
            answer = http.request(
                method, path, json=body, headers={"Content-Type": content_type}
            )
            assert answer.status_code < 300, answer.text
            # what the client read back is not what the guard looks at: forget it
            answer = None


def test_clean_event():
    server_call("POST", "/api/v1/namespaces/default/events", {**EVENT, "message": "fine"})


def test_event_message_leak():
    server_call(
        "POST", "/api/v1/namespaces/default/events", {**EVENT, "message": "token " + SECRET}
    )


def test_status_condition_leak():
    status = {"conditions": [{"type": "Ready", "status": "False", "message": "key " + SECRET}]}
    server_call(
        "PATCH",
        "/api/v1/namespaces/default/pods/p/status",
        {"status": status},
        "application/merge-patch+json",
    )


def test_unregistered_fake_secret_in_an_event():
    # a fake GitHub's credentials count as secrets even where no test registered them
    import asyncio

    from scaleset.embedded.actions import FakeGitHub

    async def with_a_fake():
        async with FakeGitHub() as fake:
            fake.add_pat("ghp_fakesOwnSecret0123456789")
            server_call(
                "POST",
                "/api/v1/namespaces/default/events",
                {**EVENT, "message": "config ghp_fakesOwnSecret0123456789"},
            )

    asyncio.run(with_a_fake())


def test_termination_message_leak():
    terminated = {"exitCode": 1, "message": "runner said " + SECRET}
    status = {
        "containerStatuses": [
            {"name": "runner", "image": "busybox", "imageID": "", "ready": False,
             "restartCount": 0, "state": {"terminated": terminated}}
        ]
    }
    server_call(
        "PATCH",
        "/api/v1/namespaces/default/pods/p/status",
        {"status": status},
        "application/merge-patch+json",
    )
"""


def test_guard_also_fails_secrets_the_embedded_api_server_stored(tmp_path: Path) -> None:
    """Events, status conditions and container termination messages are read by people
    (kubectl describe, dashboards): the guard sees what the embedded API server stored in them,
    as each write lands, deleted objects included."""
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(STORED_TESTS))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.plugins.secret_guard",
            "-p",
            "no:cacheprovider",
            "-v",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_inner.py"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = result.stdout + result.stderr
    assert "ghp_storedleak_0123456789" not in output, "the guard's own report leaked the secret"
    assert "ghp_fakesOwnSecret0123456789" not in output
    assert "test_inner.py::test_clean_event PASSED" in output, output
    for name in (
        "test_event_message_leak",
        "test_status_condition_leak",
        "test_termination_message_leak",
        "test_unregistered_fake_secret_in_an_event",
    ):
        assert f"test_inner.py::{name} FAILED" in output, name
    assert "stored Event default/e1 message" in output
    assert "stored Pod default/p status.conditions[Ready].message" in output
    terminated = "status.containerStatuses[runner].state.terminated.message"
    assert f"stored Pod default/p {terminated}" in output
