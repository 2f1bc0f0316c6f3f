"""ServiceAccount admission of pod creates, as kube-apiserver 1.20 runs it in production.

kube-apiserver's ``ServiceAccount`` plugin (plugin/pkg/admission/serviceaccount), with the
bound service-account token volume (``BoundServiceAccountTokenVolume``, the default from 1.21
and what our real test server runs):

- only pod creates are admitted (not updates, not subresources);
- a mirror pod (annotation ``kubernetes.io/config.mirror``) is left as it is, and refused (403)
  if it names a ServiceAccount, references a Secret or projects a service-account token;
- otherwise an empty ``spec.serviceAccountName`` becomes ``default``, and the ServiceAccount must
  exist: 403 ``error looking up service account <ns>/<name>: serviceaccount "<name>" not
  found`` (the real plugin looks ``default`` up for about a second first, since the
  controller-manager creates it with the namespace; the server waits for its own controllers
  the same way before admitting);
- unless the pod (first) or the ServiceAccount says ``automountServiceAccountToken: false``,
  every init container and container without a mount at
  ``/var/run/secrets/kubernetes.io/serviceaccount`` gets a read-only mount of a projected
  ``kube-api-access-<5 chars>`` volume (token, the ``kube-root-ca.crt`` ConfigMap's ``ca.crt``,
  the namespace), added to the pod unless it already has a ``kube-api-access-*`` volume;
- a pod without ``imagePullSecrets`` gets the ServiceAccount's.

Admission runs after field ownership is taken, so managedFields do not name what it added. The
403 names the pod by ``metadata.name``, or by ``generateName`` when the name is generated.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from scaleset.embedded.apiserver._errors import ApiError, forbidden_error

JsonObj = dict[str, Any]
ServiceAccountLookup = Callable[[str, str], JsonObj | None]

DEFAULT_SERVICE_ACCOUNT = "default"
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
TOKEN_VOLUME_PREFIX = "kube-api-access-"  # noqa: S105 - a volume name, not a credential
TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"  # noqa: S105 - a path
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
ROOT_CA_KEY = "ca.crt"
TOKEN_EXPIRATION_SECONDS = 60 * 60 + 7  # serviceaccount.WarnOnlyBoundTokenExpirationSeconds
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # names.SimpleNameGenerator's alphabet


def token_volume(name: str) -> JsonObj:
    """The projected volume admission adds (as the server stores it: defaultMode defaulted)."""
    return {
        "name": name,
        "projected": {
            "sources": [
                {
                    "serviceAccountToken": {
                        "expirationSeconds": TOKEN_EXPIRATION_SECONDS,
                        "path": "token",
                    }
                },
                {
                    "configMap": {
                        "name": ROOT_CA_CONFIGMAP,
                        "items": [{"key": ROOT_CA_KEY, "path": ROOT_CA_KEY}],
                    }
                },
                {
                    "downwardAPI": {
                        "items": [
                            {
                                "path": "namespace",
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                            }
                        ]
                    }
                },
            ],
            "defaultMode": 420,
        },
    }


def admit_pod_create(pod: JsonObj, request_name: str, lookup: ServiceAccountLookup) -> None:
    """Mutate and check a pod being created (in place); ``ApiError`` 403 when refused.

    ``request_name`` is the name the request gave (or its generateName); ``lookup(namespace,
    name)`` returns the stored ServiceAccount or None.
    """
    spec = pod.get("spec")
    meta = pod.get("metadata") or {}
    if not isinstance(spec, dict):
        return
    namespace = str(meta.get("namespace", ""))
    annotations = meta.get("annotations") or {}
    if isinstance(annotations, dict) and MIRROR_POD_ANNOTATION in annotations:
        _check_mirror_pod(spec, request_name)
        return
    if not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = DEFAULT_SERVICE_ACCOUNT
        spec["serviceAccount"] = DEFAULT_SERVICE_ACCOUNT
    account_name = str(spec["serviceAccountName"])
    account = lookup(namespace, account_name)
    if account is None:
        raise _forbidden(
            request_name,
            f"error looking up service account {namespace}/{account_name}: "
            f'serviceaccount "{account_name}" not found',
        )
    if _should_automount(spec, account):
        _mount_token(spec)
    if not spec.get("imagePullSecrets"):
        pulls = [
            {"name": ref.get("name", "")}
            for ref in account.get("imagePullSecrets") or []
            if isinstance(ref, dict)
        ]
        if pulls:
            spec["imagePullSecrets"] = pulls


def _forbidden(name: str, why: str) -> ApiError:
    return forbidden_error("", "pods", name, why)


def _should_automount(spec: JsonObj, account: JsonObj) -> bool:
    if spec.get("automountServiceAccountToken") is not None:
        return bool(spec["automountServiceAccountToken"])
    if account.get("automountServiceAccountToken") is not None:
        return bool(account["automountServiceAccountToken"])
    return True


def _mount_token(spec: JsonObj) -> None:
    volumes = [v for v in spec.get("volumes") or [] if isinstance(v, dict)]
    existing = next(
        (str(v["name"]) for v in volumes if str(v.get("name", "")).startswith(TOKEN_VOLUME_PREFIX)),
        None,
    )
    volume_name = existing or TOKEN_VOLUME_PREFIX + "".join(
        secrets.choice(_NAME_ALPHABET) for _ in range(5)
    )
    mount = {"name": volume_name, "readOnly": True, "mountPath": TOKEN_MOUNT_PATH}
    needs_volume = False
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            if not isinstance(container, dict):
                continue
            mounts = container.get("volumeMounts") or []
            if any(isinstance(m, dict) and m.get("mountPath") == TOKEN_MOUNT_PATH for m in mounts):
                continue
            container["volumeMounts"] = [*mounts, dict(mount)]
            needs_volume = True
    if existing is None and needs_volume:
        spec["volumes"] = [*(spec.get("volumes") or []), token_volume(volume_name)]


def _check_mirror_pod(spec: JsonObj, request_name: str) -> None:
    if spec.get("serviceAccountName") or spec.get("serviceAccount"):
        raise _forbidden(request_name, "a mirror pod may not reference service accounts")
    if _references_a_secret(spec):
        raise _forbidden(request_name, "a mirror pod may not reference secrets")
    for volume in spec.get("volumes") or []:
        projected = volume.get("projected") if isinstance(volume, dict) else None
        sources = projected.get("sources") if isinstance(projected, dict) else None
        if any(isinstance(s, dict) and s.get("serviceAccountToken") for s in sources or []):
            raise _forbidden(
                request_name, "a mirror pod may not use ServiceAccountToken volume projections"
            )


def _references_a_secret(spec: JsonObj) -> bool:
    """podutil.VisitPodSecretNames, for the sources a pod of ours can carry."""
    if spec.get("imagePullSecrets"):
        return True
    for volume in spec.get("volumes") or []:
        if not isinstance(volume, dict):
            continue
        if isinstance(volume.get("secret"), dict):
            return True
        projected = volume.get("projected")
        if isinstance(projected, dict) and any(
            isinstance(s, dict) and s.get("secret") for s in projected.get("sources") or []
        ):
            return True
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(key) or []:
            if not isinstance(container, dict):
                continue
            env_from = container.get("envFrom") or []
            if any(isinstance(e, dict) and e.get("secretRef") for e in env_from):
                return True
            for env in container.get("env") or []:
                value_from = env.get("valueFrom") if isinstance(env, dict) else None
                if isinstance(value_from, dict) and value_from.get("secretKeyRef"):
                    return True
    return False
