"""Client CPU per Kubernetes request: what one status patch costs the process that sends it.

The listener's JobStarted → Running is one status patch, and the listener's CPU per JobStarted
sets how fast a batch of them is written (``bench/results/listener.md``). This script measures
that request alone: a minimal HTTP/1.1 server in another process, pinned to the other core,
answers every request with the same EphemeralRunner (so the server costs the client nothing but
the wait), and the client process's own CPU time (``time.process_time``) is divided by the
requests it sent, one after another on one kept-alive connection. Rows:

- ``KubeClient.patch_merge``: scaleset's production path (rate limiter unbounded): the access
  record, the URL, the body encoded, httpx2's request, the answer decoded into a ``KubeObject``.
- The same over TLS, as scaleset talks to every API server (HTTPS, with the embedded API server's
  own throwaway CA and serving certificate): what TLS adds to a request on a kept-alive connection.
- httpx2 alone, the same request built two ways: a path relative to the client's base URL with
  the query as ``params`` (what ``KubeClient`` did before it built the URL itself), and the
  whole URL with its query already encoded (what it does now); the body is read, not decoded.
- httpcore2 alone, the same request: httpx2's own transport (its connection pool and HTTP/1.1
  over h11), called directly with the headers httpx2 sends, as ``KubeClient`` could call it
  without leaving its one HTTP stack: what httpx2's request and response models add on top.
- aiohttp's client, the same request: a reference for what the HTTP layer can cost in Python
  (aiohttp serves the probes and the embedded servers; it is not scaleset's client).
- The send syscalls: how many ``socket.send`` calls each request makes (httpx2 writes the
  headers and the body separately), counted with a wrapped socket in one extra round.

Each row: the median over ``--rounds`` rounds (min–max) of ``--requests`` requests; within a
round the rows take turns, so a drift of the machine touches them alike. CPU time includes
the kernel's work for the client's own sends and receives.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import ssl
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpcore2
import httpx2
from _report import command_line, header, run_scope

from scaleset.embedded.apiserver._tls import ServingCertificate, make_serving_certificate
from scaleset.kube.client import ClientSettings, KubeClient
from scaleset.kube.objects import ObjectKey
from scaleset.kube.resources import EPHEMERAL_RUNNER

RESULTS = Path(__file__).parent / "results"
NAMESPACE = "arc-runners"
RUNNER = "arc-runner-set-x7k2p-runner-4qz9m"
PATH = f"/apis/actions.github.com/v1alpha1/namespaces/{NAMESPACE}/ephemeralrunners/{RUNNER}/status"
FIELD_MANAGER = "scaleset-listener"
PATCH = {
    "status": {
        "phase": "Running",
        "jobRequestId": 123456789,
        "jobRepositoryName": "acme/widgets",
        "workflowRunId": 987654321,
        "jobDisplayName": "build (ubuntu-latest)",
        "jobWorkflowRef": "acme/widgets/.github/workflows/ci.yml@refs/heads/main",
    }
}


def runner_body() -> bytes:
    """An EphemeralRunner as a status patch returns it (about the size of the real one)."""
    runner = {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        "metadata": {
            "name": RUNNER,
            "namespace": NAMESPACE,
            "uid": "8c1f7a52-4a0e-4f0e-9d5a-6f1b2d3c4e5f",
            "resourceVersion": "48213",
            "generation": 1,
            "creationTimestamp": "2026-12-03T12:00:00Z",
            "finalizers": [
                "ephemeralrunner.actions.github.com/finalizer",
                "ephemeralrunner.actions.github.com/runner-registration-finalizer",
            ],
            "labels": {
                "actions.github.com/scale-set-name": "arc-runner-set",
                "actions.github.com/scale-set-namespace": NAMESPACE,
                "app.kubernetes.io/component": "runner",
                "app.kubernetes.io/part-of": "gha-runner-scale-set",
            },
            "annotations": {"actions.github.com/patch-id": "7"},
            "ownerReferences": [
                {
                    "apiVersion": "actions.github.com/v1alpha1",
                    "kind": "EphemeralRunnerSet",
                    "name": "arc-runner-set-x7k2p",
                    "uid": "0b6c2f0e-1d2a-4c3b-8e7f-9a8b7c6d5e4f",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "githubConfigUrl": "https://github.com/acme",
            "githubConfigSecret": "github-app",
            "runnerScaleSetId": 42,
            "spec": {
                "containers": [
                    {
                        "name": "runner",
                        "image": "ghcr.io/actions/actions-runner:2.330.0",
                        "command": ["/home/runner/run.sh"],
                        "resources": {"limits": {"cpu": "2", "memory": "4Gi"}},
                    }
                ],
                "restartPolicy": "Never",
            },
        },
        "status": {
            **PATCH["status"],
            "runnerId": 4711,
            "runnerName": RUNNER,
            "ready": True,
        },
    }
    return json.dumps(runner).encode()


def _serve(port_out: Any, core: int | None, serving: ServingCertificate) -> None:
    """Keep-alive HTTP/1.1 servers, one plain and one over TLS with ``serving``'s certificate,
    that answer every request with the same runner; sends both ports."""
    if core is not None:
        os.sched_setaffinity(0, {core})
    body = runner_body()
    answer = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    tls = serving.server_context()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if length:
                    await reader.readexactly(length)
                writer.write(answer)
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            writer.close()

    async def main() -> None:
        plain = await asyncio.start_server(handle, "127.0.0.1", 0)
        secure = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)
        port_out.send((plain.sockets[0].getsockname()[1], secure.sockets[0].getsockname()[1]))
        async with plain, secure:
            await asyncio.gather(plain.serve_forever(), secure.serve_forever())

    asyncio.run(main())


Send = Callable[[], Awaitable[None]]


async def cpu_per_request(sends: list[Send], requests: int, rounds: int) -> list[list[float]]:
    """Client CPU µs per request of each of ``sends``, one figure per round; the rows take
    turns within each round (so a drift of the machine touches them alike), after one warm-up
    round."""
    for send in sends:
        for _ in range(min(requests, 200)):
            await send()
    figures: list[list[float]] = [[] for _ in sends]
    for _ in range(rounds):
        for index, send in enumerate(sends):
            start = time.process_time()
            for _ in range(requests):
                await send()
            figures[index].append((time.process_time() - start) / requests * 1e6)
    return figures


class SendCounter:
    """Counts ``socket.send``/``sendmsg`` calls of this process while it is entered."""

    def __init__(self) -> None:
        self.calls = 0
        self._saved: list[tuple[type, str, Any]] = []

    def __enter__(self) -> SendCounter:
        import socket

        for name in ("send", "sendmsg"):
            original = getattr(socket.socket, name)
            self._saved.append((socket.socket, name, original))

            def counted(sock: Any, *args: Any, _original: Any = original) -> Any:
                self.calls += 1
                return _original(sock, *args)

            setattr(socket.socket, name, counted)
        return self

    def __exit__(self, *_: object) -> None:
        for owner, name, original in self._saved:
            setattr(owner, name, original)


async def sends_per_request(send: Send, requests: int) -> float:
    """``socket.send`` calls per request (asyncio's transports write with ``socket.send``)."""
    with SendCounter() as counter:
        for _ in range(requests):
            await send()
    return counter.calls / requests


async def bench(
    port: int, tls_port: int, trust: ssl.SSLContext, requests: int, rounds: int
) -> list[tuple[str, list[float], float]]:
    base = f"http://127.0.0.1:{port}"
    patch_body = json.dumps(PATCH).encode()
    content_type = {"Content-Type": "application/merge-patch+json"}
    rows: list[tuple[str, list[float], float]] = []

    http = httpx2.AsyncClient(base_url=base, trust_env=False)
    kube = KubeClient(http, settings=ClientSettings(qps=1e9, burst=1_000_000_000))
    key = ObjectKey(NAMESPACE, RUNNER)

    async def production() -> None:
        await kube.patch_merge(EPHEMERAL_RUNNER, key, PATCH, status=True)

    secure_http = httpx2.AsyncClient(
        base_url=f"https://127.0.0.1:{tls_port}", verify=trust, trust_env=False
    )
    secure_kube = KubeClient(secure_http, settings=ClientSettings(qps=1e9, burst=1_000_000_000))

    async def production_tls() -> None:
        await secure_kube.patch_merge(EPHEMERAL_RUNNER, key, PATCH, status=True)

    bare = httpx2.AsyncClient(
        base_url=base, trust_env=False, headers={"Accept": "application/json"}
    )

    async def relative() -> None:
        request = bare.build_request(
            "PATCH",
            PATH,
            params={"fieldManager": FIELD_MANAGER},
            content=patch_body,
            headers=content_type,
        )
        response = await bare.send(request)
        response.read()

    absolute_url = f"{base}{PATH}?fieldManager={FIELD_MANAGER}"

    async def absolute() -> None:
        request = bare.build_request(
            "PATCH", absolute_url, content=patch_body, headers=content_type
        )
        response = await bare.send(request)
        response.read()

    pool = httpcore2.AsyncConnectionPool()
    core_headers = [
        (b"Host", f"127.0.0.1:{port}".encode()),
        (b"Accept", b"application/json"),
        (b"Content-Type", b"application/merge-patch+json"),
        (b"Content-Length", str(len(patch_body)).encode()),
    ]

    async def transport() -> None:
        response = await pool.request(
            "PATCH", absolute_url, headers=core_headers, content=patch_body
        )
        await response.aread()

    session = aiohttp.ClientSession(headers={"Accept": "application/json"})

    async def aiohttp_client() -> None:
        async with session.patch(absolute_url, data=patch_body, headers=content_type) as response:
            await response.read()

    named: list[tuple[str, Send]] = [
        ("scaleset `KubeClient.patch_merge` (status), the whole production path", production),
        ("the same over TLS, as to every API server", production_tls),
        ("httpx2 alone: path relative to the base URL, query as `params`", relative),
        ("httpx2 alone: the whole URL, query already encoded", absolute),
        ("httpcore2 alone (httpx2's transport), the same whole URL and headers", transport),
        ("aiohttp's client (a reference; not scaleset's client)", aiohttp_client),
    ]
    try:
        figures = await cpu_per_request([send for _, send in named], requests, rounds)
        for (name, send), row in zip(named, figures, strict=True):
            rows.append((name, row, await sends_per_request(send, 200)))
    finally:
        await kube.close()
        await secure_kube.close()
        await bare.aclose()
        await pool.aclose()
        await session.close()
    return rows


def _more_or_less(difference: float) -> str:
    return (
        f"{difference:.0f} µs more than" if difference >= 0 else f"{-difference:.0f} µs less than"
    )


def write(
    rows: list[tuple[str, list[float], float]],
    requests: int,
    rounds: int,
    out: Path,
    command: str,
    scope: str,
    load: float,
) -> None:
    lines = [
        "# Client CPU per Kubernetes request",
        "",
        *[line for line in (__doc__ or "").strip().split("\n")[2:]],
        "",
        *header(command, scope, load_at_start=load),
        f"- rounds: {rounds}, each row {requests} requests a round, the rows taking turns (after a "
        "warm-up); one request at a time on one kept-alive connection; the server in its own "
        "process on the other core",
        "",
        "| request | client CPU per request, median (min–max) | socket sends per request |",
        "| --- | ---: | ---: |",
    ]
    medians: dict[str, float] = {}
    for name, figures, sends in rows:
        median = statistics.median(figures)
        medians[name] = median
        lines.append(
            f"| {name} | {median:.0f} µs ({min(figures):.0f}–{max(figures):.0f}) | {sends:.1f} |"
        )
    production, secure, relative, absolute, core, reference = (medians[name] for name, _, _ in rows)
    lines += [
        "",
        f"- Over TLS, scaleset's whole path costs {_more_or_less(secure - production)} over "
        f"plain HTTP ({secure:.0f} µs against {production:.0f} µs"
        + (f": TLS is {(secure - production) / secure:.0%} of it" if secure > production else "")
        + "). The rows after it are plain HTTP: they compare the HTTP layers, which TLS sits "
        "under.",
        f"- Building the URL whole instead of from a relative path and `params` saves "
        f"{relative - absolute:.0f} µs of {relative:.0f} µs per request in httpx2 alone "
        f"({(relative - absolute) / relative:.0%}).",
        "- scaleset's whole path (the access record, the body's JSON encoding, the answer "
        "decoded into a `KubeObject`, the request metrics) costs "
        f"{_more_or_less(production - absolute)} httpx2's bare request built the same way "
        f"({production:.0f} µs against {absolute:.0f} µs).",
        f"- httpx2's request and response models cost {_more_or_less(absolute - core)} its "
        f"transport called directly ({absolute:.0f} µs against {core:.0f} µs, "
        f"{(absolute - core) / absolute:.0%} of httpx2's request): what calling httpcore2 "
        "directly would save per request while staying on the one HTTP stack.",
        f"- httpx2's bare request costs {absolute / reference:.1f}× aiohttp's client for the "
        f"same request ({absolute:.0f} µs against {reference:.0f} µs); httpcore2's "
        f"{core / reference:.1f}×.",
        "",
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    print(f"wrote {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--requests", type=int, default=1000, help="requests per round and row")
    parser.add_argument("--rounds", type=int, default=15, help="rounds (each row once a round)")
    parser.add_argument("--quick", action="store_true", help="2 rounds of 200: a smoke test")
    parser.add_argument("--output", type=Path, default=None, help="where the table goes")
    args = parser.parse_args(argv)
    scope = run_scope(parser, argv)
    command = command_line("bench/kube_request_cpu.py", argv)
    load = os.getloadavg()[0]
    if args.quick:
        args.requests, args.rounds = 200, 2
    if args.requests < 1 or args.rounds < 1:
        parser.error("--requests and --rounds must be >= 1")
    cores = sorted(os.sched_getaffinity(0))
    server_core = cores[-1] if len(cores) > 1 else None
    if server_core is not None:
        os.sched_setaffinity(0, {cores[0]})
    serving = make_serving_certificate("127.0.0.1")
    trust = ssl.create_default_context(cadata=serving.ca_pem.decode())
    receive, send = multiprocessing.Pipe(duplex=False)
    server = multiprocessing.Process(target=_serve, args=(send, server_core, serving), daemon=True)
    server.start()
    try:
        port, tls_port = receive.recv()
        rows = asyncio.run(bench(port, tls_port, trust, args.requests, args.rounds))
    finally:
        server.terminate()
        server.join()
    out = args.output or RESULTS / f"kube_request_cpu{'-quick' * args.quick}.md"
    write(rows, args.requests, args.rounds, out, command, scope, load)
    return 0


if __name__ == "__main__":
    sys.exit(main())
