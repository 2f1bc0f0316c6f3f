"""ARC's listener config: an ARC-generated file loads unchanged, every
invalid value is refused with an error naming its key, and no credential ever shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from tests.plugins.secret_guard import register_secret

from scaleset.github import GitHubApp, PersonalAccessToken
from scaleset.listener.config import ListenerConfigError, load_config, parse_config

PAT = register_secret("ghp_listenerConfigTest0123456789abcdef")


@pytest.fixture(scope="module")
def app_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()
    return register_secret(pem)


OFFICE = {
    "days": ["Mon-Fri"],
    "start": "08:00",
    "end": "18:00",
    "timeZone": "Europe/Berlin",
    "minRunners": 2,
}


def arc_generated(**changes: Any) -> dict[str, Any]:
    """What ARC's controller writes (resourcebuilder.newScaleSetListenerConfig, Go's encoder:
    every non-omitempty key present, the embedded AppConfig inlined, ``metrics`` null)."""
    config: dict[str, Any] = {
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
        "metrics": None,
    }
    config.update(changes)
    return config


def test_an_arc_generated_pat_config_loads_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(arc_generated()) + "\n")  # Go's encoder ends with a newline
    config = load_config(path)
    assert config.ephemeral_runner_set_namespace == "arc-runners"
    assert config.ephemeral_runner_set_name == "arc-runner-set-7xkzq"
    assert (config.min_runners, config.max_runners) == (0, 2147483647)
    assert config.runner_scale_set_id == 1
    assert config.metrics is None
    assert isinstance(config.credentials(), PersonalAccessToken)
    assert config.github.organization == "acme"


def test_an_arc_generated_app_config_with_listener_metrics_loads(app_pem: str) -> None:
    config = parse_config(
        json.dumps(
            arc_generated(
                github_token="",
                github_app_id="123456",
                github_app_installation_id=654321,
                github_app_private_key=app_pem,
                metrics={
                    "counters": {"gha_started_jobs_total": {"labels": ["repository"]}},
                    "gauges": {"gha_assigned_jobs": {"labels": ["name", "namespace"]}},
                    "histograms": {
                        "gha_job_startup_duration_seconds": {
                            "labels": ["repository"],
                            "buckets": [1, 5, 30],
                        }
                    },
                },
            )
        )
    )
    credentials = config.credentials()
    assert isinstance(credentials, GitHubApp)
    assert (credentials.app_id, credentials.installation_id) == ("123456", 654321)
    assert config.metrics is not None
    assert config.metrics.histograms["gha_job_startup_duration_seconds"].buckets == (1, 5, 30)


def test_a_numeric_app_id_and_a_client_id_are_both_accepted(app_pem: str) -> None:
    for app_id in (123456, "Iv1.0123456789abcdef"):
        config = parse_config(
            arc_generated(
                github_token="",
                github_app_id=app_id,
                github_app_installation_id=1,
                github_app_private_key=app_pem,
            )
        )
        assert config.credentials().kind == "app"


def test_L8_nulls_and_unknown_keys_decode_as_go_does() -> None:
    config = parse_config(
        arc_generated(log_level=None, min_runners=None, server_root_ca=None, future_key={"x": 1})
    )
    assert config.min_runners == 0
    assert config.effective_log_level == "debug"


INVALID = [
    ({"configure_url": ""}, "configure_url"),
    ({"configure_url": "https://github.com"}, "configure_url"),
    ({"ephemeral_runner_set_namespace": ""}, "ephemeral_runner_set_namespace"),
    ({"ephemeral_runner_set_name": ""}, "ephemeral_runner_set_name"),
    ({"runner_scale_set_id": 0}, "runner_scale_set_id"),
    ({"min_runners": 5, "max_runners": 3}, "max_runners"),
    ({"max_runners": -1}, "max_runners"),
    ({"max_runners": 2147483648}, "max_runners"),
    ({"min_runners": -1}, "min_runners"),
    ({"max_runners": "lots"}, "max_runners"),
    ({"github_token": ""}, "github_token"),
    ({"vault_type": "hashicorp"}, "vault_type"),
    ({"vault_type": "azure_key_vault"}, "vault_lookup_key"),
    ({"vault_type": "azure_key_vault", "vault_lookup_key": "k"}, "vault_type"),
    ({"log_level": "loud"}, "log_level"),
    ({"log_format": "xml"}, "log_format"),
    ({"metrics_endpoint": "metrics"}, "metrics_endpoint"),
    (
        {"metrics": {"histograms": {"gha_job_startup_duration_seconds": {"buckets": [5, 1]}}}},
        "metrics.histograms.gha_job_startup_duration_seconds.buckets",
    ),
    ({"warm_windows": [{**OFFICE, "timeZone": "Mars/Olympus"}]}, "warm_windows[0].timeZone"),
    ({"warm_windows": [{**OFFICE, "start": 8}]}, "warm_windows[0].start"),
    ({"warm_windows": [{**OFFICE, "end": "25:00"}]}, "warm_windows[0].end"),
    (
        {"warm_windows": [{**OFFICE, "minRunners": 4}], "max_runners": 3},
        "warm_windows[0].minRunners",
    ),
    ({"warm_windows": [OFFICE, {**OFFICE, "start": "17:00", "end": "19:00"}]}, "warm_windows[1]"),
]


@pytest.mark.parametrize(("changes", "key"), INVALID, ids=[key for _, key in INVALID])
def test_L8_an_invalid_value_is_refused_naming_its_key(changes: dict[str, Any], key: str) -> None:
    with pytest.raises(ListenerConfigError) as caught:
        parse_config(arc_generated(**changes))
    assert str(caught.value).startswith(f"{key}:")


def test_both_credential_kinds_are_refused_without_quoting_them(app_pem: str) -> None:
    with pytest.raises(ListenerConfigError) as caught:
        parse_config(
            arc_generated(
                github_app_id="1", github_app_installation_id=2, github_app_private_key=app_pem
            )
        )
    assert str(caught.value).startswith("github_token:")
    assert PAT not in str(caught.value)


def test_a_bad_private_key_is_named_not_quoted() -> None:
    bad = register_secret("-----BEGIN RSA PRIVATE KEY-----\nnot really a key\n")
    with pytest.raises(ListenerConfigError) as caught:
        parse_config(
            arc_generated(
                github_token="",
                github_app_id="1",
                github_app_installation_id=2,
                github_app_private_key=bad,
            )
        )
    assert str(caught.value).startswith("github_app_private_key:")
    assert "not really" not in str(caught.value)


def test_missing_file_and_bad_json_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(ListenerConfigError, match="cannot read config"):
        load_config(tmp_path / "absent.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"configure_url": ')
    with pytest.raises(ListenerConfigError, match="not valid JSON"):
        load_config(broken)


def test_the_repr_shows_no_credential() -> None:
    config = parse_config(arc_generated())
    assert PAT not in repr(config)
    assert PAT not in str(config.model_dump())


def test_warm_windows_are_read_as_the_crd_spells_them_and_arc_files_have_none() -> None:
    assert parse_config(arc_generated()).windows == ()
    night = {"start": "22:00", "end": "06:00", "timeZone": "UTC", "minRunners": 1}
    config = parse_config(arc_generated(warm_windows=[OFFICE, night]))
    office, overnight = config.windows
    assert (office.index, office.days, office.start, office.end) == (
        0,
        frozenset(range(5)),
        480,
        1080,
    )
    assert (office.zone, office.min_runners) == ("Europe/Berlin", 2)
    assert (overnight.index, overnight.crosses_midnight, overnight.days) == (
        1,
        True,
        frozenset(range(7)),
    )
