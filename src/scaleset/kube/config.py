"""Where the API server is and how to authenticate: kubeconfig file or in-cluster service account.

``load_config`` resolves the configuration the way kubectl users expect (explicit file, then
in-cluster, then ``$KUBECONFIG``, then ``~/.kube/config``) and turns every problem into one
``KubeConfigError`` line. ``build_http_client`` makes the httpx2 client lightkube would make (TLS
from the kubeconfig, client certificates, exec/basic/token auth) with two changes: a service
account token file is followed as it rotates (``TokenFileAuth``), and extra headers (impersonation
in tests) and the transport (fault injection in tests) can be supplied.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from pathlib import Path

import httpx2
import yaml
from lightkube.config import client_adapter
from lightkube.config.kubeconfig import SERVICE_ACCOUNT, KubeConfig, SingleConfig
from lightkube.config.models import User
from lightkube.core.exceptions import ConfigError

from scaleset.clock import Clock
from scaleset.kube.auth import DEFAULT_REFRESH_SECONDS, TokenFileAuth
from scaleset.kube.errors import KubeConfigError


def load_config(
    kubeconfig: str | Path | None = None,
    *,
    context: str | None = None,
    service_account_dir: str | Path = SERVICE_ACCOUNT,
) -> SingleConfig:
    """Resolve the API server configuration, or raise ``KubeConfigError`` with one clear line."""
    try:
        if kubeconfig is not None:
            config = _from_file(Path(kubeconfig))
        elif os.environ.get("KUBERNETES_SERVICE_HOST") and Path(service_account_dir).is_dir():
            config = KubeConfig.from_service_account(service_account_dir)
        else:
            config = _from_file(Path(os.environ.get("KUBECONFIG", "~/.kube/config")))
        single = config.get(context)
    except KubeConfigError:
        raise
    except ConfigError as error:
        raise KubeConfigError(f"kubeconfig: {error}") from None
    except (KeyError, TypeError, ValueError) as error:
        raise KubeConfigError(f"kubeconfig: malformed ({type(error).__name__}: {error})") from None
    if single is None:  # pragma: no cover - lightkube returns None only with a default given
        raise KubeConfigError("kubeconfig: no current context")
    if not single.cluster.server:
        raise KubeConfigError(f"kubeconfig: context {single.context_name!r} has no server")
    return single


def _from_file(path: Path) -> KubeConfig:
    path = path.expanduser()
    if not path.is_file():
        raise KubeConfigError(f"kubeconfig {path} not found")
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        detail = " ".join(str(error).split())  # YAML errors span lines; logs want one
        raise KubeConfigError(f"kubeconfig {path} unreadable: {detail}") from None
    if not isinstance(document, dict) or "clusters" not in document or "contexts" not in document:
        raise KubeConfigError(f"kubeconfig {path} has no clusters/contexts")
    return KubeConfig.from_dict(document, fname=path)


DEFAULT_MAX_CONNECTIONS = 100
"""Connections the API client's request pool opens at most."""


def build_http_client(
    config: SingleConfig,
    *,
    timeout: float,
    transport: httpx2.AsyncBaseTransport | None = None,
    headers: Mapping[str, str] | None = None,
    max_connections: int | None = DEFAULT_MAX_CONNECTIONS,
    max_keepalive_connections: int | None = 20,
    clock: Clock | None = None,
    token_refresh_seconds: float = DEFAULT_REFRESH_SECONDS,
) -> httpx2.AsyncClient:
    """The httpx2 client for ``config`` (base URL, TLS, auth), with our token-file auth.

    ``max_connections`` bounds its connection pool (``None``: no bound); ignored when a
    ``transport`` is given (the transport owns the pool)."""
    if config.user is None:
        config = config._replace(user=User())
    user = config.user
    assert user is not None
    try:
        verify: ssl.SSLContext = client_adapter.verify_cluster(
            config.cluster, user, config.abs_file, trust_env=False
        )
        auth: httpx2.Auth | None
        if user.token_file is not None:
            auth = TokenFileAuth(
                config.abs_file(user.token_file),
                refresh_seconds=token_refresh_seconds,
                clock=clock,
            )
        else:
            auth = client_adapter.user_auth(user)
    except ConfigError as error:
        raise KubeConfigError(f"kubeconfig: {error}") from None
    except (OSError, ssl.SSLError) as error:
        raise KubeConfigError(f"kubeconfig: TLS material unusable: {error}") from None
    return httpx2.AsyncClient(
        base_url=config.cluster.server,
        verify=verify,
        auth=auth,
        timeout=httpx2.Timeout(timeout),
        transport=transport,
        headers=dict(headers or {}),
        limits=httpx2.Limits(
            max_connections=max_connections, max_keepalive_connections=max_keepalive_connections
        ),
        trust_env=False,
    )
