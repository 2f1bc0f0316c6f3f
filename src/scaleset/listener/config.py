"""The listener's configuration: ARC's listener config JSON (``LISTENER_CONFIG_PATH``), read and
validated as ARC's ``ghalistener`` does, so a file ARC's controller generated
works unchanged.

Decoding follows Go's ``encoding/json`` where it matters: unknown keys are ignored, and a JSON
``null`` leaves a field at its zero value. Every error names the key it is about
(``ListenerConfigError("max_runners: ...")``). Credentials are ``SecretStr`` and validation
errors never quote an input, so neither a repr nor an error shows a token or a private key.

Ours on top: ``warm_windows``, the AutoscalingRunnerSet's ``spec.warmWindows`` (each item as the
CRD spells it: ``days``, ``start``, ``end``, ``timeZone``, ``minRunners``), checked as the CRD
field is (``scaleset.api.warm_windows``: times, zones, minimum up to ``max_runners``, no
overlaps); ``windows`` is the parsed list. ARC's listener ignores the key.

Deliberate differences from ARC-HEAD: an empty ``log_level`` / ``log_format`` means ``debug`` /
``text`` (ARC's controller always writes these two values; ARC-HEAD alone rejects empty ones),
and a negative ``min_runners`` is rejected. ``vault_type: azure_key_vault`` is validated like
ARC but not supported: loading such a file fails with a clear error (no Azure client here).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from scaleset.api import warm_windows
from scaleset.api.autoscalingrunnerset import WarmWindowSpec
from scaleset.api.config_url import GitHubConfigUrl, InvalidConfigUrl, parse_config_url
from scaleset.api.warm_windows import WarmWindow
from scaleset.github import Credentials, GitHubApp, InvalidCredentials, PersonalAccessToken
from scaleset.logs import parse_level

CONFIG_PATH_ENV = "LISTENER_CONFIG_PATH"
MAX_INT32 = 2_147_483_647
AZURE_KEY_VAULT = "azure_key_vault"
VAULT_TYPES = ("", AZURE_KEY_VAULT)


class ListenerConfigError(ValueError):
    """The config file is missing, unreadable or invalid; the message names the key."""


def _drop_nulls(value: Any) -> Any:
    """Go leaves a field at its zero value when the JSON says ``null``: drop such keys."""
    if isinstance(value, dict):
        return {key: item for key, item in value.items() if item is not None}
    return value


class _GoModel(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, hide_input_in_errors=True)

    @model_validator(mode="before")
    @classmethod
    def _nulls_are_zero_values(cls, data: Any) -> Any:
        return _drop_nulls(data)


class MetricSpec(_GoModel):
    """One metric of ``metrics``: its label keys and (histograms) its buckets."""

    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()


class MetricsSpec(_GoModel):
    """The ``metrics`` object: which of ARC's listener metrics to expose, with which labels."""

    counters: dict[str, MetricSpec] = Field(default_factory=dict)
    gauges: dict[str, MetricSpec] = Field(default_factory=dict)
    histograms: dict[str, MetricSpec] = Field(default_factory=dict)


class AzureKeyVault(_GoModel):
    tenant_id: str = ""
    client_id: str = ""
    url: str = ""
    certificate_path: str = ""


def _app_id(value: Any) -> Any:
    # ARC's field is a string (numeric app id or client id); accept a JSON number too.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


class ListenerConfig(_GoModel):
    """ARC's listener config (``cmd/ghalistener/config``), key for key."""

    configure_url: str = ""
    vault_type: str = ""
    vault_lookup_key: str = ""
    azure_key_vault: AzureKeyVault | None = None
    github_app_id: str = ""
    github_app_installation_id: int = 0
    github_app_private_key: SecretStr = SecretStr("")
    github_token: SecretStr = SecretStr("")
    ephemeral_runner_set_namespace: str = ""
    ephemeral_runner_set_name: str = ""
    max_runners: int = 0
    min_runners: int = 0
    runner_scale_set_id: int = 0
    runner_scale_set_name: str = ""
    server_root_ca: str = ""
    log_level: str = ""
    log_format: str = ""
    metrics_addr: str = ""
    metrics_endpoint: str = ""
    metrics: MetricsSpec | None = None
    warm_windows: tuple[WarmWindowSpec, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _app_id_as_text(cls, data: Any) -> Any:
        if isinstance(data, dict) and "github_app_id" in data:
            data = {**data, "github_app_id": _app_id(data["github_app_id"])}
        return data

    # --- derived values ------------------------------------------------------------------

    @property
    def effective_log_level(self) -> str:
        return self.log_level or "debug"

    @property
    def effective_log_format(self) -> str:
        return self.log_format or "text"

    @property
    def windows(self) -> tuple[WarmWindow, ...]:
        """The valid windows of ``warm_windows`` (``validate_config`` refuses invalid ones)."""
        return warm_windows.parse(self.warm_windows, "warm_windows")[0]

    @property
    def github(self) -> GitHubConfigUrl:
        return parse_config_url(self.configure_url)

    def credentials(self) -> Credentials:
        """The PAT or GitHub App credentials (validated by ``validate_config``)."""
        if self.github_token.get_secret_value():
            return PersonalAccessToken(token=self.github_token)
        return GitHubApp(
            app_id=self.github_app_id,
            installation_id=self.github_app_installation_id,
            private_key=self.github_app_private_key,
        )

    def __repr__(self) -> str:
        return (
            f"ListenerConfig(configure_url={self.configure_url!r}, "
            f"scale_set_id={self.runner_scale_set_id}, "
            f"ephemeral_runner_set={self.ephemeral_runner_set_namespace}/"
            f"{self.ephemeral_runner_set_name}, min={self.min_runners}, max={self.max_runners})"
        )

    __str__ = __repr__


def parse_config(document: Mapping[str, Any] | str | bytes) -> ListenerConfig:
    """Decode and validate a config document (JSON text or an already decoded object)."""
    if isinstance(document, str | bytes):
        try:
            document = json.loads(document)
        except ValueError as error:
            raise ListenerConfigError(f"config is not valid JSON: {_json_error(error)}") from None
        except RecursionError:
            raise ListenerConfigError("config is not valid JSON: nested too deeply") from None
    if not isinstance(document, Mapping):
        raise ListenerConfigError("config must be a JSON object")
    try:
        config = ListenerConfig.model_validate(dict(document))
    except ValidationError as error:
        raise ListenerConfigError(_describe(error)) from None
    validate_config(config)
    return config


def load_config(path: str | Path) -> ListenerConfig:
    """Read and validate the config file at ``path``."""
    try:
        text = Path(path).read_bytes()
    except OSError as error:
        raise ListenerConfigError(f"cannot read config {path}: {error.strerror}") from None
    return parse_config(text)


def validate_config(config: ListenerConfig) -> None:
    """Raise ``ListenerConfigError`` naming the first invalid key (ARC's rules, §5.8)."""
    if not config.configure_url:
        raise ListenerConfigError("configure_url: is required")
    try:
        parse_config_url(config.configure_url)
    except InvalidConfigUrl as error:
        raise ListenerConfigError(f"configure_url: {error}") from None
    if not config.ephemeral_runner_set_namespace:
        raise ListenerConfigError("ephemeral_runner_set_namespace: is required")
    if not config.ephemeral_runner_set_name:
        raise ListenerConfigError("ephemeral_runner_set_name: is required")
    if config.runner_scale_set_id == 0:
        raise ListenerConfigError("runner_scale_set_id: is required (non-zero)")
    if not 0 <= config.max_runners <= MAX_INT32:
        raise ListenerConfigError(f"max_runners: must be between 0 and {MAX_INT32}")
    if config.min_runners < 0:
        raise ListenerConfigError("min_runners: must not be negative")
    if config.max_runners < config.min_runners:
        raise ListenerConfigError(
            f"max_runners: {config.max_runners} is less than min_runners {config.min_runners}"
        )
    _validate_windows(config)
    if config.vault_type not in VAULT_TYPES:
        raise ListenerConfigError(
            f"vault_type: {config.vault_type[:40]!r} is not supported (empty or {AZURE_KEY_VAULT})"
        )
    if config.vault_type:
        if not config.vault_lookup_key:
            raise ListenerConfigError(
                f"vault_lookup_key: is required with vault_type {AZURE_KEY_VAULT}"
            )
        raise ListenerConfigError(
            f"vault_type: {AZURE_KEY_VAULT} is not supported by scaleset's listener yet; put the "
            "credentials in the config (github_token or github_app_*)"
        )
    _validate_credentials(config)
    for key, value in (("log_level", config.effective_log_level),):
        try:
            parse_level(value)
        except ValueError:
            raise ListenerConfigError(
                f"{key}: {value[:20]!r} is not debug, info, warn or error"
            ) from None
    if config.effective_log_format not in ("text", "json"):
        raise ListenerConfigError(f"log_format: {config.log_format[:20]!r} is not text or json")
    if config.metrics_endpoint and not config.metrics_endpoint.startswith("/"):
        raise ListenerConfigError("metrics_endpoint: must start with '/'")
    if config.metrics is not None:
        for name, spec in config.metrics.histograms.items():
            if any(not math.isfinite(b) for b in spec.buckets) or list(spec.buckets) != sorted(
                set(spec.buckets)
            ):
                raise ListenerConfigError(
                    f"metrics.histograms.{name}.buckets: must be finite and strictly increasing"
                )


def _validate_windows(config: ListenerConfig) -> None:
    """``warm_windows``: the first problem, as the CRD field's check names it."""
    for position, spec in enumerate(config.warm_windows):
        for key in spec.invalid_fields():
            raise ListenerConfigError(f"warm_windows[{position}].{key}: wrong type")
    windows, problems = warm_windows.parse(
        config.warm_windows, "warm_windows", max_runners=config.max_runners
    )
    overlap = warm_windows.overlap_problem(windows, "warm_windows")
    for problem in [*problems, *([overlap] if overlap is not None else [])]:
        raise ListenerConfigError(f"{problem.field}: {problem.message}")


def _validate_credentials(config: ListenerConfig) -> None:
    has_token = bool(config.github_token.get_secret_value())
    has_app = bool(
        config.github_app_id
        and config.github_app_installation_id > 0
        and config.github_app_private_key.get_secret_value()
    )
    if has_token and has_app:
        raise ListenerConfigError(
            "github_token: both a token and GitHub App credentials (github_app_id, "
            "github_app_installation_id, github_app_private_key) are set; give only one"
        )
    if not has_token and not has_app:
        missing = [
            key
            for key, present in (
                ("github_app_id", bool(config.github_app_id)),
                ("github_app_installation_id", config.github_app_installation_id > 0),
                ("github_app_private_key", bool(config.github_app_private_key.get_secret_value())),
            )
            if not present
        ]
        raise ListenerConfigError(
            "github_token: no credentials; give github_token, or all of github_app_id, "
            f"github_app_installation_id and github_app_private_key (missing: {', '.join(missing)})"
        )
    try:
        config.credentials()
    except (InvalidCredentials, ValidationError):
        raise ListenerConfigError(
            "github_app_private_key: is not a valid PEM RSA private key"
        ) from None


def _describe(error: ValidationError) -> str:
    """``key: problem`` for the first error, without the offending value."""
    first = error.errors(include_input=False, include_url=False)[0]
    location = ".".join(str(part) for part in first["loc"]) or "config"
    return f"{location}: {first['msg'].lower()}"


def _json_error(error: ValueError) -> str:
    if isinstance(error, json.JSONDecodeError):
        return f"{error.msg} at line {error.lineno} column {error.colno}"
    return type(error).__name__
