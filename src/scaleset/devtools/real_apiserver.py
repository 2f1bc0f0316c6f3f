"""The real kube-apiserver test harness: start etcd + kube-apiserver on loopback, stop them, and
tell tests where they are (``SCALESET_TEST_KUBECONFIG``).

Everything of one harness lives in a state directory: credentials (``pki/``), pid files that
record each process's identity, logs, ``state.json`` and the ``kubeconfig``. ``start`` is
idempotent (a healthy harness is reused), ``stop`` signals only the processes its pid files
identify. etcd keeps its data on tmpfs when ``/dev/shm`` is available.

There is no controller-manager, scheduler or kubelet: no garbage collection, namespaces never
finish terminating, no pod ever runs. Authorization is RBAC and the admin token is in
``system:masters``.

Admission is kube-apiserver's default set, ServiceAccount included, as in production: a pod
that names no ServiceAccount gets ``default``, and a pod whose ServiceAccount does not exist is
refused (403). Since no token controller mints token Secrets, the harness runs the bound token
volume (``BoundServiceAccountTokenVolume``, alpha in 1.20, the default from 1.21): admission
mounts a projected ``kube-api-access-*`` volume that needs no Secret. What the controller-manager
would put into each namespace — the ``default`` ServiceAccount and the ``kube-root-ca.crt``
ConfigMap (``namespace_defaults``) — ``start`` creates in the initial namespaces and the test
fixtures create in each test namespace.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shlex
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
import yaml

from scaleset.devtools.apt import Report, ensure_packages
from scaleset.devtools.build import ensure_built
from scaleset.devtools.pki import ADMIN_USER, Pki, generate_pki
from scaleset.devtools.procs import (
    ProcessRecord,
    is_alive,
    read_record,
    record_for,
    terminate,
    write_record,
)

RUN_PACKAGES = ("etcd-server",)
ETCD_BINARY = "/usr/bin/etcd"
ENV_VAR = "SCALESET_TEST_KUBECONFIG"
STATE_DIR_ENV = "SCALESET_REAL_APISERVER_DIR"
START_ATTEMPTS = 3
ETCD_READY_TIMEOUT_S = 60.0
APISERVER_READY_TIMEOUT_S = 120.0
PORT_IN_USE = "address already in use"
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class HarnessError(RuntimeError):
    """The harness could not start or stop; the message names the log file to read."""


@dataclass(frozen=True)
class StatePaths:
    """The files of one harness state directory."""

    root: Path

    @property
    def pki(self) -> Pki:
        return Pki(self.root / "pki")

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def state(self) -> Path:
        return self.root / "state.json"

    @property
    def etcd_pid(self) -> Path:
        return self.root / "etcd.pid"

    @property
    def apiserver_pid(self) -> Path:
        return self.root / "kube-apiserver.pid"

    @property
    def etcd_log(self) -> Path:
        return self.root / "etcd.log"

    @property
    def apiserver_log(self) -> Path:
        return self.root / "kube-apiserver.log"

    @property
    def lock(self) -> Path:
        return self.root / ".lock"


@dataclass(frozen=True)
class RunningHarness:
    """A started harness: where to reach it."""

    url: str
    kubeconfig: Path
    state_dir: Path


def default_state_dir() -> Path:
    """``$SCALESET_REAL_APISERVER_DIR``, else ``${XDG_STATE_HOME:-~/.local/state}/scaleset/
    real-apiserver``."""
    explicit = os.environ.get(STATE_DIR_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "scaleset" / "real-apiserver"


def env_line(harness: RunningHarness) -> str:
    """The shell line that points the test suites at this harness."""
    return f"export {ENV_VAR}={shlex.quote(str(harness.kubeconfig))}"


# --- functional core ----------------------------------------------------------------------------


def kubeconfig_document(url: str, ca_pem: bytes, token: str) -> dict[str, object]:
    """A kubeconfig for ``url`` trusting ``ca_pem`` and authenticating with ``token``."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "scaleset-real",
                "cluster": {
                    "server": url,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": ADMIN_USER, "user": {"token": token}}],
        "contexts": [
            {
                "name": "scaleset-real",
                "context": {"cluster": "scaleset-real", "user": ADMIN_USER, "namespace": "default"},
            }
        ],
        "current-context": "scaleset-real",
    }


@dataclass(frozen=True)
class NamespaceDefault:
    """One object kube-controller-manager keeps in every namespace (a core/v1 kind)."""

    plural: str
    name: str
    body: dict[str, object]


def namespace_defaults(ca_pem: str) -> list[NamespaceDefault]:
    """What kube-controller-manager creates in every namespace: the ServiceAccount controller's
    ``default`` ServiceAccount and the root-CA publisher's ``kube-root-ca.crt`` ConfigMap."""
    return [
        NamespaceDefault(
            "serviceaccounts",
            "default",
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}},
        ),
        NamespaceDefault(
            "configmaps",
            "kube-root-ca.crt",
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "kube-root-ca.crt"},
                "data": {"ca.crt": ca_pem},
            },
        ),
    ]


def etcd_command(data_dir: Path, client_port: int, peer_port: int) -> list[str]:
    client = f"http://127.0.0.1:{client_port}"
    peer = f"http://127.0.0.1:{peer_port}"
    return [
        ETCD_BINARY,
        "--name=scaleset",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=scaleset={peer}",
        "--initial-cluster-state=new",
        "--listen-metrics-urls=",
        "--log-level=warn",
    ]


def apiserver_command(
    binary: Path, pki: Pki, etcd_url: str, port: int, cert_dir: Path
) -> list[str]:
    return [
        str(binary),
        f"--etcd-servers={etcd_url}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={port}",
        "--insecure-port=0",
        f"--cert-dir={cert_dir}",
        f"--tls-cert-file={pki.serving_cert}",
        f"--tls-private-key-file={pki.serving_key}",
        f"--client-ca-file={pki.ca_cert}",
        f"--token-auth-file={pki.token_file}",
        f"--service-account-key-file={pki.sa_public_key}",
        f"--service-account-signing-key-file={pki.sa_private_key}",
        "--service-account-issuer=https://kubernetes.default.svc",
        "--authorization-mode=RBAC",
        "--endpoint-reconciler-type=none",
        # ServiceAccount admission is on (the default plugin set), as in every production
        # cluster. 1.20's default token mode would refuse pods until a token controller had
        # minted each ServiceAccount's token Secret; the bound-token volume (the default from
        # 1.21) needs no Secret: admission mounts a projected token volume instead.
        "--feature-gates=BoundServiceAccountTokenVolume=true",
        "--allow-privileged=true",
        "--profiling=false",
    ]


# --- imperative shell ---------------------------------------------------------------------------


@contextmanager
def _locked(paths: StatePaths) -> Iterator[None]:
    paths.root.mkdir(parents=True, exist_ok=True)
    with paths.lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _spawn(command: list[str], log_path: Path) -> ProcessRecord:
    with log_path.open("wb") as log:  # one log per attempt: errors quote this attempt only
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return record_for(process.pid, command[0])


def _log_tail(path: Path, lines: int = 8) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join("    " + line for line in text.splitlines()[-lines:])


def _ssl_context(ca_cert: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca_cert))


def _wait_until(
    check_ready: httpx2.Client,
    url: str,
    record: ProcessRecord,
    timeout_s: float,
) -> str | None:
    """Poll ``url`` until it answers 200 (→ None), the process dies (→ "exited") or the bound
    passes (→ "timeout")."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not is_alive(record):
            return "exited"
        with contextlib.suppress(httpx2.HTTPError):
            if check_ready.get(url).status_code == 200:
                return None
        time.sleep(0.1)
    return "timeout"


def _etcd_data_dir() -> Path:
    shm = Path("/dev/shm")  # noqa: S108 - tmpfs for etcd's data; mkdtemp makes a private dir
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix="scaleset-etcd-", dir=base))


def read_state(paths: StatePaths) -> dict[str, str] | None:
    try:
        data = json.loads(paths.state.read_text())
    except (OSError, ValueError):
        return None
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else None


def status(state_dir: Path) -> RunningHarness | None:
    """The harness in ``state_dir`` if both of its processes are alive and it answers /readyz."""
    paths = StatePaths(state_dir)
    state = read_state(paths)
    records = [read_record(paths.etcd_pid), read_record(paths.apiserver_pid)]
    if state is None or any(r is None or not is_alive(r) for r in records):
        return None
    try:
        token = paths.pki.admin_token.read_text().strip()
    except OSError:
        return None
    with httpx2.Client(
        verify=_ssl_context(paths.pki.ca_cert),
        headers={"Authorization": f"Bearer {token}"},
        timeout=5.0,
    ) as client:
        try:
            ready = client.get(f"{state['url']}/readyz").status_code == 200
        except httpx2.HTTPError:
            ready = False
    if not ready:
        return None
    return RunningHarness(url=state["url"], kubeconfig=paths.kubeconfig, state_dir=state_dir)


def start(
    state_dir: Path,
    report: Report,
    ready_timeout_s: float = APISERVER_READY_TIMEOUT_S,
) -> RunningHarness:
    """Start (or reuse) etcd + kube-apiserver for ``state_dir``; return where they listen."""
    ensure_packages(RUN_PACKAGES, report)
    binary = ensure_built(report)
    paths = StatePaths(state_dir)
    with _locked(paths):
        running = status(state_dir)
        if running is not None:
            report(f"real kube-apiserver already running at {running.url}")
            return running
        _stop_locked(paths, report)
        started = time.monotonic()
        pki = generate_pki(paths.pki.root)
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                harness = _start_once(paths, pki, binary, report, ready_timeout_s)
            except BaseException:
                _stop_locked(paths, report)  # never leave half a harness running
                raise
            if harness is not None:
                report(
                    f"real kube-apiserver ready at {harness.url} "
                    f"in {time.monotonic() - started:.1f}s"
                )
                return harness
            report(f"a loopback port was taken meanwhile; retrying ({attempt}/{START_ATTEMPTS})")
            _stop_locked(paths, report)
        raise HarnessError(
            f"could not bind free loopback ports after {START_ATTEMPTS} attempts; "
            f"see {paths.etcd_log} and {paths.apiserver_log}"
        )


def _start_once(
    paths: StatePaths, pki: Pki, binary: Path, report: Report, ready_timeout_s: float
) -> RunningHarness | None:
    """One attempt; ``None`` means a port was taken (retry), other failures raise."""
    etcd_port, peer_port, api_port = _free_port(), _free_port(), _free_port()
    etcd_url = f"http://127.0.0.1:{etcd_port}"
    url = f"https://127.0.0.1:{api_port}"
    data_dir = _etcd_data_dir()
    state = {"url": url, "etcd_url": etcd_url, "etcd_data": str(data_dir)}
    paths.state.write_text(json.dumps(state))
    token = pki.admin_token.read_text().strip()
    kubeconfig = kubeconfig_document(url, pki.ca_cert.read_bytes(), token)
    fd = os.open(paths.kubeconfig, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(kubeconfig, f)

    report(f"starting etcd on {etcd_url} (data in {data_dir})")
    etcd = _spawn(etcd_command(data_dir, etcd_port, peer_port), paths.etcd_log)
    write_record(paths.etcd_pid, etcd)
    with httpx2.Client(timeout=2.0) as plain:
        outcome = _wait_until(plain, f"{etcd_url}/health", etcd, ETCD_READY_TIMEOUT_S)
    if outcome is not None:
        if outcome == "exited" and PORT_IN_USE in paths.etcd_log.read_text(errors="replace"):
            return None
        raise HarnessError(
            f"etcd {'exited' if outcome == 'exited' else 'was not healthy'} "
            f"(see {paths.etcd_log}):\n{_log_tail(paths.etcd_log)}"
        )

    report(f"starting kube-apiserver on {url}")
    apiserver = _spawn(
        apiserver_command(binary, pki, etcd_url, api_port, paths.root / "apiserver-certs"),
        paths.apiserver_log,
    )
    write_record(paths.apiserver_pid, apiserver)
    with httpx2.Client(
        verify=_ssl_context(pki.ca_cert),
        headers={"Authorization": f"Bearer {token}"},
        timeout=5.0,
    ) as client:
        outcome = _wait_until(client, f"{url}/readyz", apiserver, ready_timeout_s)
        if outcome is None:
            _provide_namespace_defaults(client, url, pki.ca_cert.read_text())
    if outcome is not None:
        log_text = paths.apiserver_log.read_text(errors="replace")
        if outcome == "exited" and PORT_IN_USE in log_text:
            return None
        raise HarnessError(
            f"kube-apiserver {'exited' if outcome == 'exited' else 'not ready'} after start "
            f"(see {paths.apiserver_log}):\n{_log_tail(paths.apiserver_log)}"
        )
    return RunningHarness(url=url, kubeconfig=paths.kubeconfig, state_dir=paths.root)


def _provide_namespace_defaults(client: httpx2.Client, url: str, ca_pem: str) -> None:
    """Stand in for the missing controller-manager in the namespaces the server starts with."""
    for namespace in INITIAL_NAMESPACES:
        # the server's own controllers create these namespaces soon after start; whoever comes
        # first creates it, the other sees AlreadyExists
        client.post(f"{url}/api/v1/namespaces", json={"metadata": {"name": namespace}})
        for default in namespace_defaults(ca_pem):
            created = client.post(
                f"{url}/api/v1/namespaces/{namespace}/{default.plural}", json=default.body
            )
            if created.status_code not in (201, 409):
                raise HarnessError(
                    f"could not create {default.plural}/{default.name} in {namespace}: "
                    f"{created.status_code} {created.text[:300]}"
                )


def stop(state_dir: Path, report: Report) -> bool:
    """Stop the harness in ``state_dir``; True if a process was stopped (False: nothing ran)."""
    paths = StatePaths(state_dir)
    if not paths.root.is_dir():
        return False
    with _locked(paths):
        return _stop_locked(paths, report)


def _stop_locked(paths: StatePaths, report: Report) -> bool:
    stopped = False
    for name, pid_file in (("kube-apiserver", paths.apiserver_pid), ("etcd", paths.etcd_pid)):
        record = read_record(pid_file)
        if record is not None and terminate(record):
            report(f"stopped {name} (pid {record.pid})")
            stopped = True
        pid_file.unlink(missing_ok=True)
    state = read_state(paths)
    if state is not None:
        data_dir = Path(state.get("etcd_data", ""))
        if data_dir.name.startswith("scaleset-etcd-"):
            shutil.rmtree(data_dir, ignore_errors=True)
    paths.state.unlink(missing_ok=True)
    paths.kubeconfig.unlink(missing_ok=True)
    return stopped
