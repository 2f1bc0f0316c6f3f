"""Names of the objects users see, computed exactly as ARC computes them, so a listener or proxy
Secret that ARC created is found under the same name.

``h8(s)``: FNV-1a (32 bit) of the UTF-8 bytes, printed in decimal, each character mapped through
Kubernetes' ``SafeEncodeString`` (alphabet ``bcdfghjklmnpqrstvwxz2456789``, index = code point
mod 27), first 8 characters.
"""

from __future__ import annotations

from scaleset.api import keys
from scaleset.api.config_url import parse_config_url

_FNV32_OFFSET_BASIS = 0x811C9DC5
_FNV32_PRIME = 0x01000193
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_LABEL_VALUE_MAX = 63
_TRIM_SUFFIX = "-trim"


def fnv1a_32(data: bytes) -> int:
    """FNV-1a, 32 bit."""
    value = _FNV32_OFFSET_BASIS
    for byte in data:
        value = ((value ^ byte) * _FNV32_PRIME) & 0xFFFFFFFF
    return value


def safe_encode(text: str) -> str:
    """Kubernetes ``rand.SafeEncodeString``: map each character into a vowel-free alphabet."""
    return "".join(_SAFE_ALPHABET[ord(char) % len(_SAFE_ALPHABET)] for char in text)


def fnv_hash_string(text: str) -> str:
    """ARC's ``hash.FNVHashString``: safe-encoded decimal FNV-1a-32 (up to 10 characters)."""
    return safe_encode(str(fnv1a_32(text.encode())))


def h8(text: str) -> str:
    """The 8-character name suffix ARC derives from ``text``."""
    return fnv_hash_string(text)[:8]


def ephemeral_runner_set_name(autoscaling_runner_set_name: str) -> str:
    """The EphemeralRunnerSet of an AutoscalingRunnerSet has the same name (ARC HEAD)."""
    return autoscaling_runner_set_name


def ephemeral_runner_generate_name(ephemeral_runner_set_name: str) -> str:
    """``metadata.generateName`` of the EphemeralRunners of a set."""
    return f"{ephemeral_runner_set_name}-runner-"


def runner_pod_name(ephemeral_runner_name: str) -> str:
    """The runner pod is named like its EphemeralRunner."""
    return ephemeral_runner_name


def jit_secret_name(ephemeral_runner_name: str) -> str:
    """The JIT config Secret is named like its EphemeralRunner."""
    return ephemeral_runner_name


def ephemeral_runner_set_proxy_secret_name(ephemeral_runner_set_name: str, namespace: str) -> str:
    """The runners' proxy Secret: ``<ERS>-<h8(namespace)>-runner-proxy``."""
    return f"{ephemeral_runner_set_name}-{h8(namespace)}-runner-proxy"


def listener_name(
    autoscaling_runner_set_name: str, namespace: str, runner_group: str, github_config_url: str
) -> str:
    """The AutoscalingListener (and its pod and ServiceAccount in the controller namespace, and
    its Role and RoleBinding in the scale set's namespace):
    ``<ARS>-<h8(namespace@runnerGroup@githubConfigUrl)>-listener``, all three taken from the
    AutoscalingRunnerSet as written (``spec.runnerGroup`` may be empty)."""
    suffix = h8(f"{namespace}@{runner_group}@{github_config_url}")
    return f"{autoscaling_runner_set_name}-{suffix}-listener"


def legacy_listener_name(autoscaling_runner_set_name: str, namespace: str) -> str:
    """The listener name ARC used before 0.13.1 (``<ARS>-<h8(namespace)>-listener``), e.g.
    ``arc-runner-set-754b578d-listener`` in namespace ``arc-runners``. Only for finding listeners
    an older ARC left behind."""
    return f"{autoscaling_runner_set_name}-{h8(namespace)}-listener"


def listener_config_secret_name(listener: str) -> str:
    """The listener's config Secret (key ``config.json``) in the controller namespace."""
    return f"{listener}-config"


def listener_proxy_secret_name(listener: str) -> str:
    """The listener's proxy Secret in the controller namespace."""
    return f"{listener}-proxy"


def url_label_value(value: str) -> str:
    """ARC's label value for an enterprise/organization/repository name: longer than 63
    characters → first 58 + ``-trim``; otherwise ``-_.`` trimmed from both ends."""
    if len(value) > _LABEL_VALUE_MAX:
        return value[: _LABEL_VALUE_MAX - len(_TRIM_SUFFIX)] + _TRIM_SUFFIX
    return value.strip("-_.")


def github_url_labels(github_config_url: str) -> dict[str, str]:
    """The ``actions.github.com/{enterprise,organization,repository}`` labels ARC derives from
    the config URL. Raises ``InvalidConfigUrl`` like the parser."""
    parsed = parse_config_url(github_config_url)
    labels: dict[str, str] = {}
    if parsed.enterprise:
        labels[keys.ENTERPRISE_LABEL] = url_label_value(parsed.enterprise)
    if parsed.organization:
        labels[keys.ORGANIZATION_LABEL] = url_label_value(parsed.organization)
    if parsed.repository:
        labels[keys.REPOSITORY_LABEL] = url_label_value(parsed.repository)
    return labels
