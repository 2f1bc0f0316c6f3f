"""What a container starts with: its environment and the files of its Secret/ConfigMap volumes.

Resolved from the API at container start, as the kubelet does, so what is wrong at that moment
fails the start the way it fails on a real node:

- **Environment** (``resolve_environment``): ``envFrom`` (``secretRef``/``configMapRef`` with
  ``prefix``), then ``env`` in order, with ``value`` (``$(VAR)`` references expanded, ``$$``
  escapes), ``valueFrom.secretKeyRef``, ``configMapKeyRef`` and ``fieldRef`` (metadata.name,
  metadata.namespace, metadata.uid, metadata.labels['k'], metadata.annotations['k'],
  spec.nodeName, spec.serviceAccountName, status.hostIP, status.podIP, status.podIPs).
  A missing object or key that is not ``optional`` raises ``ContainerConfigError`` with the
  kubelet's message (``secret "x" not found``, ``couldn't find key k in Secret ns/x``): the
  container then waits with reason ``CreateContainerConfigError``. ``HOSTNAME`` is the pod
  name, as the container runtime sets it. ``resourceFieldRef`` is not supported (it fails the
  start with ``ContainerConfigError``).
- **Volumes** (``resolve_volumes``): ``secret``, ``configMap`` and the secret/configMap sources
  of ``projected`` volumes become files (all keys, or ``items`` with their ``path``). A missing
  object or ``items`` key that is not ``optional`` raises ``VolumeMountError``: on a real node the
  pod then stays ``ContainerCreating`` with a ``FailedMount`` event, never
  ``CreateContainerConfigError``. Other volume types mount empty.
- ``container_files`` maps a container's ``volumeMounts`` onto absolute file paths.

Object reads go through a ``SourceReader`` (the kubelet passes one backed by GETs on the API);
values never appear in an exception text or a log line.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any, Literal, Protocol

SourceKind = Literal["Secret", "ConfigMap"]
_ENV_FROM: tuple[tuple[str, SourceKind], ...] = (
    ("secretRef", "Secret"),
    ("configMapRef", "ConfigMap"),
)
_PROJECTED: tuple[tuple[str, SourceKind], ...] = (("secret", "Secret"), ("configMap", "ConfigMap"))


class ContainerConfigError(Exception):
    """The container cannot be configured; ``message`` is what the kubelet reports."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class VolumeMountError(Exception):
    """A volume cannot be set up; ``message`` is the ``FailedMount`` event text."""

    def __init__(self, volume: str, cause: str) -> None:
        self.volume = volume
        self.cause = cause
        self.message = f'MountVolume.SetUp failed for volume "{volume}" : {cause}'
        super().__init__(self.message)


class SourceReader(Protocol):
    """Reads a Secret's or ConfigMap's data, decoded; ``None`` when it does not exist."""

    async def read(
        self, kind: SourceKind, namespace: str, name: str
    ) -> Mapping[str, bytes] | None: ...


def decode_data(obj: Mapping[str, Any], kind: SourceKind) -> dict[str, bytes]:
    """``data`` (base64 for Secrets, text for ConfigMaps) plus ``binaryData``/``stringData``."""
    values: dict[str, bytes] = {}
    data = obj.get("data")
    if isinstance(data, Mapping):
        for key, value in data.items():
            if not isinstance(value, str):
                continue
            if kind == "Secret":
                try:
                    values[str(key)] = base64.b64decode(value, validate=True)
                except (binascii.Error, ValueError):
                    continue
            else:
                values[str(key)] = value.encode()
    binary = obj.get("binaryData")
    if kind == "ConfigMap" and isinstance(binary, Mapping):
        for key, value in binary.items():
            if isinstance(value, str):
                try:
                    values[str(key)] = base64.b64decode(value, validate=True)
                except (binascii.Error, ValueError):
                    continue
    return values


def _not_found(kind: SourceKind, name: str) -> str:
    return f'{kind.lower()} "{name}" not found'


def _text(value: bytes) -> str:
    return value.decode("utf-8", errors="replace")


# ------------------------------------------------------------------------------- environment

_FIELD_LABEL = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


def field_value(pod: Mapping[str, Any], path: str) -> str:
    """A ``fieldRef`` value of ``pod`` (the kubelet's supported paths)."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.hostIP": status.get("hostIP"),
        "status.podIP": status.get("podIP"),
    }
    if path in simple:
        return str(simple[path] or "")
    if path == "status.podIPs":
        ips = status.get("podIPs") or []
        return ",".join(str(ip.get("ip", "")) for ip in ips if isinstance(ip, Mapping))
    match = _FIELD_LABEL.match(path)
    if match:
        values = meta.get(match.group(1)) or {}
        return str(values.get(match.group(2), "")) if isinstance(values, Mapping) else ""
    if path in ("metadata.labels", "metadata.annotations"):
        values = meta.get(path.split(".", 1)[1]) or {}
        return "\n".join(f'{k}="{v}"' for k, v in sorted(values.items()))
    raise ContainerConfigError(f"unsupported fieldPath: {path}")


_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(value: str, defined: Mapping[str, str]) -> str:
    """``$(NAME)`` -> a variable defined earlier (kept as is when undefined); ``$$`` -> ``$``."""

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return defined.get(name, match.group(0))

    return _REFERENCE.sub(substitute, value)


async def _key_value(
    reader: SourceReader, kind: SourceKind, namespace: str, ref: Mapping[str, Any]
) -> str | None:
    name = str(ref.get("name", ""))
    key = str(ref.get("key", ""))
    optional = bool(ref.get("optional", False))
    data = await reader.read(kind, namespace, name)
    if data is None:
        if optional:
            return None
        raise ContainerConfigError(_not_found(kind, name))
    if key not in data:
        if optional:
            return None
        raise ContainerConfigError(f"couldn't find key {key} in {kind} {namespace}/{name}")
    return _text(data[key])


async def resolve_environment(
    pod: Mapping[str, Any], container: Mapping[str, Any], reader: SourceReader
) -> dict[str, str]:
    """The container's environment, or ``ContainerConfigError`` as the kubelet reports it."""
    namespace = str((pod.get("metadata") or {}).get("namespace", ""))
    env: dict[str, str] = {"HOSTNAME": str((pod.get("metadata") or {}).get("name", ""))}
    for source in container.get("envFrom") or []:
        if not isinstance(source, Mapping):
            continue
        prefix = str(source.get("prefix") or "")
        for field_name, kind in _ENV_FROM:
            ref = source.get(field_name)
            if not isinstance(ref, Mapping):
                continue
            name = str(ref.get("name", ""))
            data = await reader.read(kind, namespace, name)
            if data is None:
                if ref.get("optional"):
                    continue
                raise ContainerConfigError(_not_found(kind, name))
            for key, value in data.items():
                env[prefix + key] = _text(value)
    for entry in container.get("env") or []:
        if not isinstance(entry, Mapping) or not entry.get("name"):
            continue
        name = str(entry["name"])
        value_from = entry.get("valueFrom")
        if not isinstance(value_from, Mapping):
            env[name] = expand(str(entry.get("value") or ""), env)
            continue
        resolved: str | None
        if isinstance(value_from.get("secretKeyRef"), Mapping):
            resolved = await _key_value(reader, "Secret", namespace, value_from["secretKeyRef"])
        elif isinstance(value_from.get("configMapKeyRef"), Mapping):
            resolved = await _key_value(
                reader, "ConfigMap", namespace, value_from["configMapKeyRef"]
            )
        elif isinstance(value_from.get("fieldRef"), Mapping):
            resolved = field_value(pod, str(value_from["fieldRef"].get("fieldPath", "")))
        else:
            raise ContainerConfigError(f"unsupported valueFrom for environment variable {name}")
        if resolved is not None:
            env[name] = resolved
    return env


# ----------------------------------------------------------------------------------- volumes

VolumeFiles = dict[str, dict[str, bytes]]
"""Volume name -> relative file path -> content."""


async def _source_files(
    reader: SourceReader,
    kind: SourceKind,
    namespace: str,
    volume: str,
    name: str,
    items: object,
    optional: bool,
) -> dict[str, bytes]:
    data = await reader.read(kind, namespace, name)
    if data is None:
        if optional:
            return {}
        raise VolumeMountError(volume, _not_found(kind, name))
    if not isinstance(items, list) or not items:
        return dict(data)
    files: dict[str, bytes] = {}
    for item in items:
        if not isinstance(item, Mapping):
            continue
        key = str(item.get("key", ""))
        if key not in data:
            if optional:
                continue
            what = "secret" if kind == "Secret" else "configmap"
            noun = "secret key" if kind == "Secret" else "config key"
            raise VolumeMountError(volume, f"{what} references non-existent {noun}: {key}")
        files[str(item.get("path") or key)] = data[key]
    return files


async def resolve_volumes(pod: Mapping[str, Any], reader: SourceReader) -> VolumeFiles:
    """Files of every Secret/ConfigMap volume of ``pod``, or ``VolumeMountError``."""
    namespace = str((pod.get("metadata") or {}).get("namespace", ""))
    volumes: VolumeFiles = {}
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        if not isinstance(volume, Mapping):
            continue
        name = str(volume.get("name", ""))
        files: dict[str, bytes] = {}
        secret = volume.get("secret")
        config_map = volume.get("configMap")
        projected = volume.get("projected")
        if isinstance(secret, Mapping):
            files = await _source_files(
                reader,
                "Secret",
                namespace,
                name,
                str(secret.get("secretName", "")),
                secret.get("items"),
                bool(secret.get("optional", False)),
            )
        elif isinstance(config_map, Mapping):
            files = await _source_files(
                reader,
                "ConfigMap",
                namespace,
                name,
                str(config_map.get("name", "")),
                config_map.get("items"),
                bool(config_map.get("optional", False)),
            )
        elif isinstance(projected, Mapping):
            for source in projected.get("sources") or []:
                if not isinstance(source, Mapping):
                    continue
                for field_name, kind in _PROJECTED:
                    ref = source.get(field_name)
                    if isinstance(ref, Mapping):
                        files.update(
                            await _source_files(
                                reader,
                                kind,
                                namespace,
                                name,
                                str(ref.get("name", "")),
                                ref.get("items"),
                                bool(ref.get("optional", False)),
                            )
                        )
        volumes[name] = files
    return volumes


def container_files(container: Mapping[str, Any], volumes: VolumeFiles) -> dict[str, bytes]:
    """Absolute path -> content for the container's ``volumeMounts`` (``subPath``: one file)."""
    files: dict[str, bytes] = {}
    for mount in container.get("volumeMounts") or []:
        if not isinstance(mount, Mapping):
            continue
        contents = volumes.get(str(mount.get("name", "")))
        if not contents:
            continue
        mount_path = str(mount.get("mountPath", "")).rstrip("/")
        sub_path = str(mount.get("subPath") or "")
        if sub_path:
            if sub_path in contents:
                files[mount_path] = contents[sub_path]
            continue
        for relative, content in contents.items():
            files[f"{mount_path}/{relative}"] = content
    return files
