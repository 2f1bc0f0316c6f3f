"""The ``scaleset`` command line: one entry point, one subcommand per process or tool.

Each subcommand is a thin shell over the module that does the work; the imports are lazy so that
``scaleset --help`` stays fast and a component's dependencies load only when it runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from scaleset import __version__

app = typer.Typer(
    name="scaleset",
    help=(
        "Autoscale ephemeral GitHub Actions runners on Kubernetes. A drop-in replacement for "
        "actions-runner-controller's runner scale sets (actions.github.com/v1alpha1)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # plain click help: rich panels truncate long option names on narrow terminals
    rich_markup_mode=None,
)

dev_app = typer.Typer(
    help="Developer tools: the real kube-apiserver test harness, the configuration reference.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(dev_app, name="dev")


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"scaleset {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version_callback, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """Autoscale ephemeral GitHub Actions runners on Kubernetes."""


@app.command(
    help=(
        "Run the controller manager: leader election (always on), informers for the "
        "actions.github.com kinds, /healthz, /readyz and /metrics, and the four reconcilers "
        "(AutoscalingRunnerSet, EphemeralRunnerSet, EphemeralRunner, AutoscalingListener). "
        "It refuses to start, naming the fix, when the installed CRDs lack the fields it "
        "writes (ARC's older CRDs)."
    ),
)
def controller(
    kubeconfig: Annotated[
        Path | None,
        typer.Option(
            help="Kubeconfig file (default: in-cluster, then $KUBECONFIG, ~/.kube/config)."
        ),
    ] = None,
    context: Annotated[str | None, typer.Option(help="Kubeconfig context to use.")] = None,
    controller_namespace: Annotated[
        str,
        typer.Option(
            "--controller-namespace",
            envvar="CONTROLLER_MANAGER_POD_NAMESPACE",
            help="Namespace the controller runs in (listeners live here). Required.",
        ),
    ] = "",
    listener_image: Annotated[
        str,
        typer.Option(
            "--listener-image",
            envvar="CONTROLLER_MANAGER_CONTAINER_IMAGE",
            help="Image of listener pods. Required.",
        ),
    ] = "",
    auto_scaling_runner_set_only: Annotated[
        bool,
        typer.Option(
            "--auto-scaling-runner-set-only",
            help="Accepted for ARC compatibility (scaleset only has this mode).",
        ),
    ] = False,
    log_level: Annotated[str, typer.Option(help="debug, info, warn or error.")] = "debug",
    log_format: Annotated[str, typer.Option(help="text or json.")] = "text",
    metrics_addr: Annotated[
        str, typer.Option(help="Address of /metrics (Go syntax, e.g. :8080); 0 disables.")
    ] = ":8080",
    listener_metrics_addr: Annotated[
        str, typer.Option(help="Metrics address passed to listeners; 0 disables.")
    ] = ":8080",
    listener_metrics_endpoint: Annotated[
        str, typer.Option(help="Metrics path passed to listeners.")
    ] = "/metrics",
    runner_max_concurrent_reconciles: Annotated[
        int, typer.Option(help="Workers of the EphemeralRunner controller.")
    ] = 2,
    workers: Annotated[
        list[str] | None,
        typer.Option(
            "--workers",
            help="Workers of one controller, NAME=N (repeatable), e.g. ephemeralrunnerset=4.",
        ),
    ] = None,
    k8s_client_rate_limiter_qps: Annotated[
        float, typer.Option(help="API client requests per second.")
    ] = 20.0,
    k8s_client_rate_limiter_burst: Annotated[int, typer.Option(help="API client burst.")] = 30,
    watch_single_namespace: Annotated[
        str, typer.Option(help="Watch only this namespace (plus the controller's).")
    ] = "",
    watch_namespace: Annotated[
        list[str] | None,
        typer.Option(
            "--watch-namespace",
            "--namespaces",
            help="Namespaces to watch (repeatable or comma-separated; default: all).",
        ),
    ] = None,
    enable_leader_election: Annotated[
        bool,
        typer.Option(help="Accepted for ARC compatibility: scaleset always elects a leader."),
    ] = True,
    leader_election_id: Annotated[
        str, typer.Option(help="Name of the coordination.k8s.io Lease.")
    ] = "actions-runner-controller",
    leader_election_namespace: Annotated[
        str, typer.Option(help="Namespace of the Lease (default: the controller's).")
    ] = "",
    lease_duration: Annotated[float, typer.Option(help="Lease duration, seconds.")] = 15.0,
    renew_deadline: Annotated[float, typer.Option(help="Renew deadline, seconds.")] = 10.0,
    retry_period: Annotated[float, typer.Option(help="Lease retry period, seconds.")] = 2.0,
    identity: Annotated[
        str, typer.Option(help="Leader-election identity (default: <hostname>_<uuid>).")
    ] = "",
    health_probe_bind_address: Annotated[
        str, typer.Option(help="Address of /healthz and /readyz (Go syntax); 0 disables.")
    ] = ":8081",
    workqueue_rate_limiter: Annotated[
        str, typer.Option(help="bucket_rate_limiter (default) or typed_rate_limiter.")
    ] = "",
    sync_period: Annotated[
        str,
        typer.Option(
            help="Queue every object again this often (Go duration, e.g. 1m; 0 disables)."
        ),
    ] = "1m",
    auto_scaler_image_pull_secrets: Annotated[
        list[str] | None, typer.Option(help="Pull secrets for listener pods (repeatable).")
    ] = None,
    exclude_label_propagation_prefix: Annotated[
        list[str] | None,
        typer.Option(help="Label prefixes not copied to internal objects (repeatable)."),
    ] = None,
    graceful_shutdown_timeout: Annotated[
        float, typer.Option(help="Seconds in-flight reconciles get on SIGTERM.")
    ] = 30.0,
    pprof_addr: Annotated[str, typer.Option(help="Accepted for ARC compatibility; unused.")] = "",
) -> None:
    """Run the controller manager (see the command's help)."""
    from scaleset.controllers import manager_process as process

    try:
        options = process.ControllerOptions(
            controller_namespace=controller_namespace,
            listener_image=listener_image,
            kubeconfig=kubeconfig,
            context=context,
            log_level=log_level,
            log_format=log_format,
            metrics_addr=metrics_addr,
            listener_metrics_addr=listener_metrics_addr,
            listener_metrics_endpoint=listener_metrics_endpoint,
            runner_max_concurrent_reconciles=runner_max_concurrent_reconciles,
            k8s_client_qps=k8s_client_rate_limiter_qps,
            k8s_client_burst=k8s_client_rate_limiter_burst,
            watch_single_namespace=watch_single_namespace,
            watch_namespaces=process.split_list(watch_namespace or []),
            leader_election_id=leader_election_id,
            leader_election_namespace=leader_election_namespace,
            lease_duration=lease_duration,
            renew_deadline=renew_deadline,
            retry_period=retry_period,
            identity=identity,
            health_probe_bind_address=health_probe_bind_address,
            workers=process.parse_workers(workers or []),
            workqueue_rate_limiter=workqueue_rate_limiter,
            sync_period=process.parse_duration(sync_period),
            image_pull_secrets=process.split_list(auto_scaler_image_pull_secrets or []),
            exclude_label_propagation_prefixes=process.split_list(
                exclude_label_propagation_prefix or []
            ),
            graceful_shutdown=graceful_shutdown_timeout,
        )
    except process.OptionsError as error:
        typer.echo(f"scaleset controller: {error}", err=True)
        raise typer.Exit(code=1) from None
    raise typer.Exit(code=process.run(options))


@app.command(
    help=(
        "Run one scale set's listener: long-polls GitHub's message queue, records JobStarted / "
        "JobCompleted on the runners and patches the EphemeralRunnerSet's desired count. Reads "
        "ARC's listener config JSON from $LISTENER_CONFIG_PATH.\n\n"
        "\b\nExit codes:\n"
        "  0   stopped by SIGTERM/SIGINT (message session deleted)\n"
        "  1   LISTENER_CONFIG_PATH unset, or the config unreadable/invalid\n"
        "  3   GitHub refuses: scale set not found or credentials rejected\n"
        "  4   the EphemeralRunnerSet does not exist\n"
        "  5   Kubernetes refuses: no credentials, or the runner set cannot be read/written\n"
        "  70  internal error (a bug)\n\n"
        "Everything else is retried inside the process with back-off."
    ),
)
def listener() -> None:
    """Run one scale set's listener (see the command's help)."""
    from scaleset.listener import main as listener_main

    raise typer.Exit(code=listener_main.run())


@app.command(
    epilog=(
        "Chaos profiles: none, spot (evict an idle and a busy runner), hang (a runner hangs "
        "after its job), oom (a busy runner is OOM-killed), restarts (listener killed, "
        "controller restarted, controller killed without releasing its lease), outage (GitHub "
        "answers 503 for a while), all; and each single fault by name: evict-idle, evict-busy, "
        "hang-after-job, oom-busy, kill-listener, restart-controller, kill-controller, "
        "github-outage.\n\n"
        "--chaos soak (issue 20): rates instead of single faults - 10 % of jobs lose their "
        "runner to a spot eviction, 5 % to an OOM kill, 5 % of runners hang after their job, 2 % "
        "of API writes fail (409/500/503) - plus 3 listener kills, 2 controller kills, a GitHub "
        "5xx burst, a GitHub outage (60 s), a message-queue token expiry, a stale-session "
        "restart and a watch expiry (410) during a burst; defaults to 1000 jobs over 120 s on "
        "0:40 runners. --seeds N runs N seeds from --seed (a fresh system each) and prints one "
        "table of the figures per seed.\n\n"
        "Exit codes: 0 every invariant held (on every seed); 1 an invariant broke (named in the "
        "report) or the system could not start; 2 bad options."
    )
)
def demo(
    jobs: Annotated[
        int | None, typer.Option(help="How many jobs the workload queues [default: 30].")
    ] = None,
    duration: Annotated[
        float | None,
        typer.Option(help="Seconds over which the jobs arrive (in bursts) [default: 30]."),
    ] = None,
    runners: Annotated[
        str | None,
        typer.Option(help="minRunners:maxRunners of the AutoscalingRunnerSet [default: 0:10]."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the workload and fault schedule.")] = 1,
    seeds: Annotated[
        int, typer.Option(help="Run this many seeds, from --seed on, and print one table.")
    ] = 1,
    parallel: Annotated[
        int, typer.Option(help="With --seeds: run this many seeds at a time (one process each).")
    ] = 1,
    log_dir: Annotated[
        Path | None, typer.Option(help="With --seeds: write each seed's output to DIR/seed-N.log.")
    ] = None,
    chaos: Annotated[str, typer.Option(help="Fault profile (see below).")] = "none",
    grace: Annotated[
        float,
        typer.Option(help="Seconds a runner may live after its job completed (L4 grace)."),
    ] = 5.0,
    kubeconfig: Annotated[
        Path | None,
        typer.Option(
            help="Run against this API server instead of the embedded one (the demo's "
            "simulated kubelet drives the pods there)."
        ),
    ] = None,
    report: Annotated[
        Path | None,
        typer.Option("--report", help="Also write a self-contained HTML report to this file."),
    ] = None,
) -> None:
    """Run the whole system locally: embedded API server, embedded GitHub Actions service and
    simulated nodes, drive a job workload through it, check the lifecycle invariants on ground
    truth throughout, and print a report."""
    import asyncio
    import os
    import tempfile

    from scaleset import logs
    from scaleset.demo.run import demo_options, run_demo, run_seeds

    try:
        options = demo_options(
            chaos=chaos,
            jobs=jobs,
            duration=duration,
            runners=runners,
            seed=seed,
            grace=grace,
            kubeconfig=kubeconfig,
            report_html=report,
        )
        if seeds < 1 or parallel < 1:
            raise ValueError("--seeds and --parallel must be 1 or more")
    except ValueError as error:
        typer.echo(f"scaleset demo: {error}", err=True)
        raise typer.Exit(code=2) from None
    # the components' own lines go to a file; the terminal shows the demo's progress and report
    log_fd, log_path = tempfile.mkstemp(prefix="scaleset-demo-", suffix=".log")
    log_file = os.fdopen(log_fd, "w", encoding="utf-8", buffering=1)
    logs.configure("info", "text", stream=log_file)
    typer.echo(f"component logs: {log_path}")
    if seeds == 1:
        raise typer.Exit(code=asyncio.run(run_demo(options)))
    chosen = list(range(seed, seed + seeds))
    raise typer.Exit(
        code=asyncio.run(run_seeds(options, chosen, log_dir=log_dir, parallel=parallel))
    )


@app.command()
def crds(
    output_dir: Annotated[
        Path | None,
        typer.Option(
            "--output-dir",
            help="Write one file per CRD into this directory (e.g. deploy/crds) instead of "
            "printing the YAML stream.",
        ),
    ] = None,
) -> None:
    """Print the four CustomResourceDefinitions (actions.github.com/v1alpha1) as YAML."""
    from scaleset.api import crds as crd_generator

    if output_dir is None:
        typer.echo(crd_generator.render_stream(), nl=False)
        return
    for path in crd_generator.write_files(output_dir):
        typer.echo(f"wrote {path}")


def _refuse_non_loopback(command: str, host: str, *, allowed: bool) -> None:
    """Exit 2 when ``host`` is not a loopback address and listening there was not asked for
    (``--allow-non-loopback``): the embedded servers are for one machine's user."""
    from scaleset.embedded.actions.standalone import is_loopback

    if not allowed and not is_loopback(host):
        typer.echo(
            f"scaleset {command}: {host} is not a loopback address; pass --allow-non-loopback "
            "to listen there anyway",
            err=True,
        )
        raise typer.Exit(code=2)


@app.command()
def apiserver(
    host: Annotated[
        str, typer.Option(help="Address to listen on (loopback unless --allow-non-loopback).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0: a free port).")] = 0,
    kubeconfig: Annotated[
        Path | None,
        typer.Option(
            help="Write the kubeconfig for this server to this file (default: a new private "
            "directory, removed on exit; its path is printed)."
        ),
    ] = None,
    token: Annotated[
        list[str] | None,
        typer.Option(
            help="Bearer token to accept (repeatable; default: a random token made for this "
            "start, written only into the kubeconfig, never printed)."
        ),
    ] = None,
    accept_any_token: Annotated[
        bool, typer.Option(help="Accept any bearer token instead of the configured ones.")
    ] = False,
    tls: Annotated[
        bool,
        typer.Option(help="Serve HTTPS with a throwaway CA (kubectl sends tokens only over TLS)."),
    ] = True,
    allow_non_loopback: Annotated[
        bool,
        typer.Option(
            help="Listen on a non-loopback --host: anyone who can reach it and has the token "
            "can change what it serves."
        ),
    ] = False,
) -> None:
    """Serve the embedded Kubernetes API server on loopback (for kubectl, tests and the demo).

    Every request, the /_scaleset control routes included, needs the bearer token in the
    kubeconfig."""
    import asyncio

    from scaleset.embedded.apiserver._standalone import serve_until_signalled

    _refuse_non_loopback("apiserver", host, allowed=allow_non_loopback)
    asyncio.run(
        serve_until_signalled(
            host=host,
            port=port,
            kubeconfig=kubeconfig,
            tokens=list(token or []),
            accept_any_token=accept_any_token,
            tls=tls,
            announce=lambda line: typer.echo(line, err=False),
        )
    )


@app.command("fake-github")
def fake_github(
    host: Annotated[
        str, typer.Option(help="Address to listen on (loopback unless --allow-non-loopback).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0 picks a free one).")] = 0,
    pat: Annotated[
        str | None,
        typer.Option(
            envvar="SCALESET_FAKE_GITHUB_PAT",
            help="A personal access token the fake accepts (never printed).",
            show_default=False,
        ),
    ] = None,
    org: Annotated[str, typer.Option(help="Organization for the printed config URL.")] = "acme",
    poll_hold: Annotated[
        float, typer.Option(help="Seconds a message poll is held before 202.")
    ] = 50.0,
    delivery: Annotated[
        str, typer.Option(help="Job delivery: 'assign' (github.com) or 'acquire' (GHES).")
    ] = "assign",
    allow_non_loopback: Annotated[
        bool,
        typer.Option(
            help="Listen on a non-loopback --host: anyone who can reach it can use the fake "
            "with its PATs, and with the control token, drive it."
        ),
    ] = False,
) -> None:
    """Serve the embedded fake GitHub + Actions scale-set service on loopback.

    Its control endpoint (/_fake) wants a token made for this start; the banner names the file
    that holds it."""
    import asyncio

    from scaleset.embedded.actions.service import JobDelivery
    from scaleset.embedded.actions.standalone import serve

    _refuse_non_loopback("fake-github", host, allowed=allow_non_loopback)
    if not 0 <= port <= 65535 or poll_hold < 0:
        typer.echo("scaleset fake-github: --port must be 0-65535, --poll-hold >= 0", err=True)
        raise typer.Exit(code=2)
    try:
        job_delivery = JobDelivery(delivery)
    except ValueError:
        typer.echo("scaleset fake-github: --delivery must be 'assign' or 'acquire'", err=True)
        raise typer.Exit(code=2) from None
    try:
        asyncio.run(
            serve(
                host=host,
                port=port,
                pat=pat,
                org=org,
                poll_hold_seconds=poll_hold,
                job_delivery=job_delivery,
                echo=lambda line: typer.echo(line),
            )
        )
    except OSError as error:
        typer.echo(f"scaleset fake-github: cannot listen on {host}:{port}: {error}", err=True)
        raise typer.Exit(code=1) from None


@app.command()
def doctor(
    kubeconfig: Annotated[
        Path | None,
        typer.Option(help="Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)."),
    ] = None,
    namespace: Annotated[
        str | None,
        typer.Option(help="Look at this namespace only (default: every namespace)."),
    ] = None,
    output: Annotated[str, typer.Option(help="table or json.")] = "table",
) -> None:
    """Diagnose a cluster's runner scale sets (ARC-managed ones too), read-only: runners whose
    pod was recreated from a used JIT config (pod much newer than its runner), Running with no
    job, registrations missing on GitHub, runners stuck deleting, terminal runners holding
    slots, idle runners past an age, CRDs missing scaleset's fields (ARC's still installed),
    two listeners for one scale set (session conflict), listener pods crash-looping. Prints
    each finding with a suggested action.

    The registration check needs a GitHub token in $GITHUB_TOKEN (read access to the
    org/repo/enterprise runners); without it the Kubernetes checks run and the doctor says
    which it skipped. Exit code: 0 healthy, 1 findings, 2 bad options, 3 nothing readable."""
    import os

    from scaleset.doctor.main import BadOption, run_doctor

    try:
        code = run_doctor(
            kubeconfig=kubeconfig,
            namespace=namespace,
            output=output,
            environ=os.environ,
            echo=typer.echo,
        )
    except BadOption as error:
        typer.echo(f"scaleset doctor: {error}", err=True)
        raise typer.Exit(code=2) from None
    raise typer.Exit(code=code)


real_apiserver_app = typer.Typer(
    help=(
        "A real kube-apiserver v1.20.2 + etcd on loopback for the test suites, built once from "
        "Debian's kubernetes source package and cached under ~/.cache/scaleset."
    ),
    no_args_is_help=True,
    rich_markup_mode=None,
)
dev_app.add_typer(real_apiserver_app, name="real-apiserver")

StateDirOption = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        help="Harness state directory (default $SCALESET_REAL_APISERVER_DIR or "
        "~/.local/state/scaleset/real-apiserver).",
    ),
]


def _progress() -> Callable[[str], None]:
    """Progress lines on stderr, each with the time elapsed since the command started."""
    started = time.monotonic()

    def report(message: str) -> None:
        typer.echo(f"[{time.monotonic() - started:6.1f}s] {message}", err=True)

    return report


@contextmanager
def _harness_errors() -> Iterator[None]:
    """Turn the harness's expected failures into one line on stderr and exit code 1."""
    from scaleset.devtools.apt import AptError
    from scaleset.devtools.build import BuildError
    from scaleset.devtools.real_apiserver import HarnessError

    try:
        yield
    except (AptError, BuildError, HarnessError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(code=1) from None


@real_apiserver_app.command("build")
def real_apiserver_build() -> None:
    """Build kube-apiserver (once; cached) and print the binary's path."""
    from scaleset.devtools.build import ensure_built

    with _harness_errors():
        typer.echo(str(ensure_built(_progress())))


@real_apiserver_app.command("start")
def real_apiserver_start(
    state_dir: StateDirOption = None,
    timeout: Annotated[
        float, typer.Option(help="Seconds to wait for /readyz before giving up.")
    ] = 120.0,
) -> None:
    """Start etcd + kube-apiserver (or reuse the running ones) and print the env line."""
    from scaleset.devtools import real_apiserver

    with _harness_errors():
        harness = real_apiserver.start(
            state_dir or real_apiserver.default_state_dir(), _progress(), ready_timeout_s=timeout
        )
    typer.echo(real_apiserver.env_line(harness))


@real_apiserver_app.command("stop")
def real_apiserver_stop(state_dir: StateDirOption = None) -> None:
    """Stop the harness's own etcd + kube-apiserver (nothing to do is fine)."""
    from scaleset.devtools import real_apiserver

    report = _progress()
    with _harness_errors():
        stopped = real_apiserver.stop(state_dir or real_apiserver.default_state_dir(), report)
    report("stopped" if stopped else "not running")


@real_apiserver_app.command("env")
def real_apiserver_env(state_dir: StateDirOption = None) -> None:
    """Print `export SCALESET_TEST_KUBECONFIG=...` for the running harness (exit 1 if none)."""
    from scaleset.devtools import real_apiserver

    harness = real_apiserver.status(state_dir or real_apiserver.default_state_dir())
    if harness is None:
        typer.echo(
            "error: the real kube-apiserver is not running; "
            "start it with `scaleset dev real-apiserver start`",
            err=True,
        )
        raise typer.Exit(code=1)
    typer.echo(real_apiserver.env_line(harness))


@dev_app.command("config-reference")
def config_reference(
    charts: Annotated[
        Path, typer.Option(help="Directory holding the charts (one per subdirectory).")
    ] = Path("deploy/charts"),
    output: Annotated[
        Path | None, typer.Option(help="Write the reference to this file (default: stdout).")
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="Exit 1 when --output differs from the reference.")
    ] = False,
) -> None:
    """Generate docs/configuration.md: chart values, controller flags, SCALESET_* variables."""
    from scaleset.devtools import config_reference as reference

    command = typer.main.get_command(app)
    assert isinstance(command, typer.core.TyperGroup)
    text = reference.generate(charts, command.commands["controller"])
    if output is None:
        if check:
            typer.echo("scaleset dev config-reference: --check needs --output", err=True)
            raise typer.Exit(code=2)
        typer.echo(text, nl=False)
        return
    if check:
        current = output.read_text() if output.is_file() else ""
        if current != text:
            typer.echo(f"{output} is out of date: run without --check to regenerate", err=True)
            raise typer.Exit(code=1)
        return
    output.write_text(text)


def main() -> None:
    """Console entry point."""
    app()
