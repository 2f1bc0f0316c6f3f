"""Structured logs reach stdlib logging (caplog), carry stable keys, and never show secrets."""

from __future__ import annotations

import base64
import io
import json
import logging
from dataclasses import dataclass

import pytest

from scaleset import logs


def test_records_reach_caplog_with_structured_fields(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    log = logs.get_logger("scaleset.test")
    with logs.bound_context(controller="ephemeralrunner", namespace="ns", name="r1"):
        log.info("reconciled", reconcile_id="abc")
    [record] = [r for r in caplog.records if r.name == "scaleset.test"]
    fields = logs.event_fields(record)
    assert fields["event"] == "reconciled"
    assert fields["controller"] == "ephemeralrunner"
    assert fields["namespace"] == "ns"
    assert fields["name"] == "r1"
    assert fields["reconcile_id"] == "abc"


def test_secret_looking_keys_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    log = logs.get_logger("scaleset.test")
    log.info(
        "config",
        github_token="ghp_supersecretvalue",
        private_key="-----BEGIN RSA PRIVATE KEY-----",
        encoded_jit_config="eyJqaXQiOiJjb25maWcifQ==",
        headers={"Authorization": "Bearer abcdefghijklmnop"},
        password="pw12345678",
        jitter=0.5,
        runner_name="r1",
    )
    text = caplog.text
    for secret in ("ghp_supersecretvalue", "BEGIN RSA", "eyJqaXQi", "abcdefghijklmnop", "pw1234"):
        assert secret not in text
    fields = logs.event_fields(caplog.records[-1])
    assert fields["jitter"] == 0.5  # "jit" as a word part, not jitter
    assert fields["runner_name"] == "r1"
    assert fields["github_token"] == logs.REDACTED


def test_bearer_tokens_inside_messages_are_masked() -> None:
    masked = logs.redact_value("error", "401 for header Bearer abc.def-ghijklmnop")
    assert masked == "401 for header Bearer [REDACTED]"


def test_json_format_one_object_per_line() -> None:
    stream = io.StringIO()
    logs.configure("debug", "json", stream=stream)
    try:
        logs.get_logger("scaleset.test").warning("lease lost", lease="ns/x", token="t0ps3cr3t!")
        logging.getLogger("thirdparty").info("plain %s", "stdlib")
    finally:
        logging.getLogger().removeHandler(
            next(h for h in logging.getLogger().handlers if h.get_name() == "scaleset")
        )
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    ours = next(line for line in lines if line["event"] == "lease lost")
    assert ours["level"] == "warning"
    assert ours["lease"] == "ns/x"
    assert ours["token"] == logs.REDACTED
    assert "timestamp" in ours
    assert any(line["event"] == "plain stdlib" for line in lines)


def test_text_format_is_key_value() -> None:
    stream = io.StringIO()
    logs.configure("info", "text", stream=stream)
    try:
        logs.get_logger("scaleset.test").info("started", controllers="none")
        logs.get_logger("scaleset.test").debug("hidden at info")
    finally:
        logging.getLogger().removeHandler(
            next(h for h in logging.getLogger().handlers if h.get_name() == "scaleset")
        )
    out = stream.getvalue()
    assert "event='started'" in out
    assert "controllers='none'" in out
    assert "hidden at info" not in out


def test_levels_and_formats_are_validated() -> None:
    assert logs.parse_level("warn") == logging.WARNING
    with pytest.raises(ValueError, match="unknown log level"):
        logs.parse_level("verbose")
    with pytest.raises(ValueError, match="unknown log format"):
        logs.configure("info", "yaml")  # type: ignore[arg-type]


def test_secrets_in_a_logged_traceback_are_masked() -> None:
    """Redaction also runs on the traceback text, which format_exc_info renders after the
    first redaction pass: ours (structlog) and a third-party (stdlib) logger alike."""
    pat = "ghp_" + "T" * 36
    jwt_like = "eyJhbGciOiJSUzI1NiJ9.eyJleHAiOjE3MDAwMDAwMDB9.c2lnbmF0dXJl"
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEsecretkeybody\n-----END RSA PRIVATE KEY-----"
    stream = io.StringIO()
    logs.configure("debug", "json", stream=stream)
    try:
        try:
            raise RuntimeError(f"refused {pat} with Bearer s3cr3t-admin-token and {jwt_like}")
        except RuntimeError:
            logs.get_logger("scaleset.test").exception("call failed")
        try:
            raise ValueError(f"bad key {pem}")
        except ValueError:
            logging.getLogger("thirdparty").error("load failed", exc_info=True)
    finally:
        logging.getLogger().removeHandler(
            next(h for h in logging.getLogger().handlers if h.get_name() == "scaleset")
        )
    out = stream.getvalue()
    lines = [json.loads(line) for line in out.splitlines()]
    ours = next(line for line in lines if line["event"] == "call failed")
    theirs = next(line for line in lines if line["event"] == "load failed")
    assert "RuntimeError: refused" in ours["exception"]
    assert "ValueError: bad key" in theirs["exception"]
    for secret in (pat, "s3cr3t-admin-token", jwt_like, "MIIEsecretkeybody"):
        assert secret not in out
    assert logs.REDACTED in ours["exception"]
    assert logs.REDACTED in theirs["exception"]


def test_redact_text_masks_known_values_and_credential_shapes() -> None:
    text = "echo: Authorization: RemoteAuth AAAAregistration1234 for hunter2-password-value"
    masked = logs.redact_text(text, ["hunter2-password-value", "short"])
    assert "AAAAregistration1234" not in masked
    assert "hunter2-password-value" not in masked
    assert masked == f"echo: Authorization: RemoteAuth {logs.REDACTED} for {logs.REDACTED}"
    assert logs.redact_text("github_pat_" + "a" * 30) == logs.REDACTED


# --- every leaf of every record -------------------------------------------------------------

SECRET = "s3cr3t-admin-token-value"
PAT = "ghp_" + "Q" * 36


def jit_config() -> str:
    """A JIT config shaped like GitHub's: base64 of a JSON map of base64 runner files."""
    files = {
        ".runner": base64.b64encode(b'{"AgentId": 7, "AgentName": "runner-abcde"}').decode(),
        ".credentials": base64.b64encode(b'{"Scheme": "OAuth", "clientId": "x"}').decode(),
        ".credentials_rsaparams": base64.b64encode(b'{"d": "private-exponent"}').decode(),
    }
    return base64.b64encode(json.dumps(files).encode()).decode()


@dataclass
class Credentials:
    user: str
    token: str


STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "taskName",
}


def rendered(caplog: pytest.LogCaptureFixture) -> str:
    """What a plain stdlib handler (caplog's, the secret guard's) shows: the formatted message
    with its traceback, and every ``extra`` field."""
    return "\n".join(
        logging.Formatter("%(message)s").format(record)
        + repr({k: v for k, v in record.__dict__.items() if k not in STANDARD})
        for record in caplog.records
    )


@pytest.mark.parametrize(
    ("value", "secret"),
    [
        (ValueError(f"proxy refused Bearer {SECRET}"), SECRET),
        (f"Bearer {SECRET}".encode(), SECRET),
        (bytearray(PAT.encode()), PAT),
        ({"nested": [{"deeper": (f"token {SECRET}",)}]}, SECRET),
        ({"set": {PAT}}, PAT),
        (Credentials("bot", "plain-credential-value"), "plain-credential-value"),
        ("http://bot:hunter2-proxy-password@proxy.corp:3128", "hunter2-proxy-password"),
        ("https://x-access-token-abcdef123@github.com/acme/repo", "x-access-token-abcdef123"),
        (f"runner config {jit_config()}", jit_config()[:40]),
        (base64.b64encode(jit_config().encode()).decode(), jit_config()[:40]),
    ],
    ids=[
        "exception",
        "bytes",
        "bytearray",
        "nested",
        "set",
        "dataclass-field",
        "url-password",
        "url-user",
        "jit-config",
        "jit-config-in-a-secret",
    ],
)
def test_every_leaf_of_a_structured_record_is_masked(
    caplog: pytest.LogCaptureFixture, value: object, secret: str
) -> None:
    caplog.set_level(logging.INFO)
    logs.get_logger("scaleset.test").info("something happened", detail=value)
    assert secret not in rendered(caplog)
    assert logs.REDACTED in rendered(caplog)


def test_a_stdlib_record_is_masked_in_its_arguments_and_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Third-party loggers (httpx2, aiohttp) log through stdlib: the record itself is masked,
    so every handler sees it masked, not only the one ``configure`` installs."""
    caplog.set_level(logging.INFO)
    other = logging.getLogger("thirdparty")
    other.info("request to %s", "http://bot:hunter2-proxy-password@proxy.corp:3128/x")
    other.warning("answer %r and %s", f"Bearer {SECRET}".encode(), {"auth": f"token {PAT}"})
    try:
        raise RuntimeError(f"refused {PAT} with Bearer {SECRET}")
    except RuntimeError:
        other.exception("call failed")
        logs.get_logger("scaleset.test").exception("call failed")
    text = rendered(caplog)
    for secret in (SECRET, PAT, "hunter2-proxy-password"):
        assert secret not in text
    assert "RuntimeError: refused" in text  # the traceback is kept, masked


def test_masking_keeps_clean_values_as_they_are(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    logging.getLogger("thirdparty").info("%d runners at %s", 3, "http://proxy.corp:3128")
    error = ValueError("no secret here")
    logs.get_logger("scaleset.test").info("x", error=error, count=3, url="https://github.com/a")
    first, second = caplog.records
    assert first.getMessage() == "3 runners at http://proxy.corp:3128"
    fields = logs.event_fields(second)
    assert fields["error"] is error
    assert (fields["count"], fields["url"]) == (3, "https://github.com/a")
