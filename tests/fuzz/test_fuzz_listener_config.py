"""Fuzz target 2: the listener's config file (``scaleset.listener.config.parse_config``), and
the other input the listener reads at start, its state annotation on the EphemeralRunnerSet.

Malformed JSON, wrong types, nulls, missing keys, huge values and mutations of a config ARC
generates (PAT and GitHub App variants) either load or raise ``ListenerConfigError`` whose
message starts with the key it is about; never another exception, and never the PAT or any
part of the private key in the message or in the loaded config's repr.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from hypothesis import given
from hypothesis import strategies as st

from scaleset.api.listener_state import ListenerState
from scaleset.listener.config import ListenerConfig, ListenerConfigError, parse_config
from tests.fuzz.strategies import fuzz_settings, json_objects, json_values, mutated, tricky_text
from tests.plugins.secret_guard import register_secret

PAT = register_secret("ghp_fuzzListenerConfig0123456789abcdefXYZ")
PEM = register_secret(
    rsa.generate_private_key(public_exponent=65537, key_size=2048)
    .private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    .decode()
)
PEM_LINES = [line for line in PEM.splitlines() if len(line) >= 16]
KEYS = frozenset(ListenerConfig.model_fields) | {"config"}

EXAMPLES = 400  # per test
DEPTHS = st.one_of(st.integers(1, 3000), st.sampled_from([100_000]))
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

PAT_CONFIG: dict[str, Any] = {
    "configure_url": "https://github.com/acme",
    "vault_type": "",
    "vault_lookup_key": "",
    "github_app_id": "",
    "github_app_installation_id": 0,
    "github_app_private_key": "",
    "github_token": PAT,
    "ephemeral_runner_set_namespace": "arc-runners",
    "ephemeral_runner_set_name": "arc-runner-set-7xkzq",
    "max_runners": 2147483647,
    "min_runners": 0,
    "runner_scale_set_id": 1,
    "runner_scale_set_name": "arc-runner-set",
    "server_root_ca": "",
    "log_level": "debug",
    "log_format": "text",
    "metrics_addr": ":8080",
    "metrics_endpoint": "/metrics",
    "metrics": {
        "counters": {"gha_started_jobs_total": {"labels": ["repository"]}},
        "gauges": {"gha_assigned_jobs": {"labels": []}},
        "histograms": {"gha_job_startup_duration_seconds": {"labels": [], "buckets": [1, 2.5]}},
    },
}
APP_CONFIG = {
    **PAT_CONFIG,
    "github_token": "",
    "github_app_id": "12345",
    "github_app_installation_id": 678,
    "github_app_private_key": PEM,
}
SECRET_VALUES = st.sampled_from(
    [PAT, PEM, PEM[:200], PEM.replace("RSA ", ""), PEM.replace("\n", ""), PEM + PEM, PAT + "\n"]
)
secret_forms = st.one_of(
    SECRET_VALUES,
    SECRET_VALUES.map(lambda value: [value]),
    SECRET_VALUES.map(lambda value: {"value": value}),
    SECRET_VALUES.map(lambda value: value.encode().hex()),
)


def _check(document: Any) -> None:
    """Load ``document``: a config, or a ``ListenerConfigError`` naming a key, never a secret."""
    try:
        config = parse_config(document)
    except ListenerConfigError as raised:
        error = raised
    else:
        _no_secret(repr(config))
        _no_secret(str(config))
        return
    message = str(error)
    key = message.split(":", 1)[0].split(" ", 1)[0].split(".", 1)[0]
    assert key in KEYS, f"the error names no key: {message[:120]!r}"
    _no_secret(message)
    _no_secret(repr(error))
    assert error.__cause__ is None, "the cause (with the input) is kept on the error"


def _has_secret(text: str) -> bool:
    return PAT in text or any(line in text for line in PEM_LINES)


def _no_secret(text: str) -> None:
    assert not _has_secret(text), "a credential reached the error text or repr"


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    """A config ARC could have written, mutated, with secrets placed where they do not belong."""
    config = draw(mutated(draw(st.sampled_from([PAT_CONFIG, APP_CONFIG])), max_mutations=3))
    if draw(st.booleans()):
        key = draw(st.sampled_from(["github_token", "github_app_private_key"]))
        config[key] = draw(secret_forms)
    return config


@fuzz_settings(EXAMPLES)
@given(document=documents())
def test_a_mutated_config_object_loads_or_names_its_key(document: dict[str, Any]) -> None:
    _check(document)


@fuzz_settings(EXAMPLES)
@given(document=documents(), how=st.sampled_from(["json", "bytes", "truncated", "padded"]))
def test_a_mutated_config_file_loads_or_names_its_key(document: dict[str, Any], how: str) -> None:
    text = json.dumps(document)
    if how == "bytes":
        _check(text.encode())
    elif how == "truncated":
        _check(text[: len(text) // 2])
    elif how == "padded":
        _check(text + "}")
    else:
        _check(text)


@fuzz_settings(EXAMPLES)
@given(
    document=st.one_of(
        json_objects,
        json_values,
        tricky_text,
        st.binary(max_size=200),
        DEPTHS.map(lambda depth: "[" * depth + "]" * depth),
        DEPTHS.map(lambda depth: '{"metrics":' * depth + "1" + "}" * depth),
        st.sampled_from(["", "null", "[]", '"x"', "1" * 5000, "\ufeff{}", '{"a":1}garbage']),
    )
)
def test_any_document_loads_or_names_its_key(document: Any) -> None:
    if isinstance(document, str | bytes | dict):
        _check(document)
    else:
        _check(json.dumps(document))


def test_a_deeply_nested_config_file_is_a_config_error() -> None:
    """Found by test_any_document_loads_or_names_its_key: ``"[" * 1990 + "]" * 1990`` made
    ``json.loads`` raise RecursionError out of ``parse_config``."""
    with pytest.raises(ListenerConfigError, match=r"^config is not valid JSON: nested too deeply"):
        parse_config("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ListenerConfigError, match=r"^config is not valid JSON: nested too deeply"):
        parse_config(('{"metrics":' * 100_000 + "1" + "}" * 100_000).encode())


# --- the listener's state annotation (its other input read at start) --------------------------

STATE = {"sessionId": "s-1", "owner": "pod-a", "lastMessageId": 5, "patchSeq": 3, "lastTarget": 2}


@fuzz_settings(EXAMPLES)
@given(
    text=st.one_of(
        st.none(),
        tricky_text,
        json_values.map(json.dumps),
        mutated(STATE).map(json.dumps),
        DEPTHS.map(lambda depth: "[" * depth + "]" * depth),
    )
)
def test_a_listener_state_annotation_reads_or_starts_afresh(text: str | None) -> None:
    state = ListenerState.from_annotation(text)
    assert ListenerState.from_annotation(state.to_annotation()) == state


def test_a_deeply_nested_listener_state_annotation_starts_afresh() -> None:
    """Found with the fuzz above: ``"[" * 100_000 + "]" * 100_000`` as the ERS annotation
    ``scaleset.dev/listener-state`` made ``json.loads`` raise RecursionError out of
    ``ListenerState.from_annotation`` (the listener could not start)."""
    assert ListenerState.from_annotation("[" * 100_000 + "]" * 100_000) == ListenerState()
