"""The encoded JIT runner configuration: what generatejitconfig returns and a runner consumes.

Like the real one, ``encodedJITConfig`` is base64 of a JSON object mapping runner config file
names (``.runner``, ``.credentials``, ``.credentials_rsaparams``) to their base64 contents (the
real runner writes each file out, see actions/runner ``Runner.cs``). The fake's ``.runner`` names
the runner, its scale set and the broker URL the runner talks to; the credential is a bearer
secret in ``.credentials_rsaparams`` where the real runner keeps an RSA key (assumption A-RUNNER).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

RUNNER_FILE = ".runner"
CREDENTIALS_FILE = ".credentials"
RSA_PARAMS_FILE = ".credentials_rsaparams"


class JitConfigError(ValueError):
    """The JIT config cannot be decoded. The message never quotes the config (it is a secret)."""


@dataclass(frozen=True)
class JitRunnerConfig:
    """What a runner learns from its JIT config."""

    runner_id: int
    runner_name: str
    scale_set_id: int
    runner_group_id: int
    runner_group_name: str
    server_url: str
    """The tenant (Actions service) URL."""
    broker_url: str
    """Where the runner opens its session and takes its job (ends with ``/``)."""
    github_url: str
    work_folder: str
    credential: str = field(repr=False)


def _b64_json(value: dict[str, Any]) -> str:
    return base64.b64encode(json.dumps(value).encode()).decode()


def encode_jit_config(config: JitRunnerConfig) -> str:
    runner_file = {
        "AgentId": config.runner_id,
        "AgentName": config.runner_name,
        "PoolId": config.runner_group_id,
        "PoolName": config.runner_group_name,
        "RunnerScaleSetId": config.scale_set_id,
        "ServerUrl": config.server_url,
        "ServerUrlV2": config.broker_url,
        "UseV2Flow": True,
        "GitHubUrl": config.github_url,
        "WorkFolder": config.work_folder or "_work",
        "Ephemeral": True,
        "DisableUpdate": True,
    }
    credentials_file = {
        "Scheme": "OAuth",
        "Data": {
            "clientId": f"runner-{config.runner_id}",
            "authorizationUrl": config.broker_url + "oauth2/token",
            "requireFipsCryptography": "False",
        },
    }
    rsa_file = {"fakeRunnerCredential": config.credential}
    files = {
        RUNNER_FILE: _b64_json(runner_file),
        CREDENTIALS_FILE: _b64_json(credentials_file),
        RSA_PARAMS_FILE: _b64_json(rsa_file),
    }
    return base64.b64encode(json.dumps(files).encode()).decode()


def _decode_file(files: dict[str, Any], name: str) -> dict[str, Any]:
    raw = files.get(name)
    if not isinstance(raw, str):
        raise JitConfigError(f"JIT config has no {name} file")
    try:
        decoded = json.loads(base64.b64decode(raw, validate=True))
    except (binascii.Error, ValueError):
        raise JitConfigError(f"JIT config file {name} is not base64 JSON") from None
    if not isinstance(decoded, dict):
        raise JitConfigError(f"JIT config file {name} is not a JSON object")
    return decoded


def decode_jit_config(encoded: str) -> JitRunnerConfig:
    """Decode ``ACTIONS_RUNNER_INPUT_JITCONFIG``; raises ``JitConfigError`` on anything odd."""
    if not encoded:
        raise JitConfigError("JIT config is empty")
    try:
        files = json.loads(base64.b64decode(encoded.strip(), validate=True))
    except (binascii.Error, ValueError):
        raise JitConfigError("JIT config is not base64 JSON") from None
    if not isinstance(files, dict):
        raise JitConfigError("JIT config is not a JSON object")
    runner = _decode_file(files, RUNNER_FILE)
    rsa = _decode_file(files, RSA_PARAMS_FILE)
    try:
        return JitRunnerConfig(
            runner_id=int(runner["AgentId"]),
            runner_name=str(runner["AgentName"]),
            scale_set_id=int(runner["RunnerScaleSetId"]),
            runner_group_id=int(runner["PoolId"]),
            runner_group_name=str(runner["PoolName"]),
            server_url=str(runner["ServerUrl"]),
            broker_url=str(runner["ServerUrlV2"]),
            github_url=str(runner["GitHubUrl"]),
            work_folder=str(runner["WorkFolder"]),
            credential=str(rsa["fakeRunnerCredential"]),
        )
    except (KeyError, TypeError, ValueError):
        raise JitConfigError("JIT config lacks a runner setting") from None
