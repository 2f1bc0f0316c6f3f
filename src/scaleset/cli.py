"""The ``scaleset`` command line: one entry point, one subcommand per process or tool.

Each subcommand is a thin shell over the module that does the work; the imports are lazy so that
``scaleset --help`` stays fast and a component's dependencies load only when it runs. The
container image leaves out the packages of the development commands (demo, simulate, apiserver,
fake-github, dev): each of them checks first (``_require``) and says so in one line. The embedded
servers also need the packages of scaleset's ``demo`` extra (``DEMO_EXTRA``), which a checkout
installed without it lacks: those commands say so in one line too.
"""

from __future__ import annotations

import importlib.util
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


DEMO_EXTRA = ("aiohttp", "jsonpatch")
"""What pyproject's ``demo`` extra installs (tests/unit/test_cli.py holds the two equal): the
embedded servers' packages, which the product does not import."""


def _require(package: str, command: str, *, extra: tuple[str, ...] = ()) -> None:
    """Exit 1 with one line, not a traceback, when ``package`` is not installed (the container
    image holds the product only and leaves out the demo, the simulator, the embedded API server
    and fake GitHub, and the developer tools: .dockerignore), or when one of ``extra``, the
    packages of the ``demo`` extra that it needs, is not."""
    if importlib.util.find_spec(package) is None:
        typer.echo(
            f"scaleset {command}: not in this image, which holds only the controller, the "
            "listener, crds and doctor; run it from a scaleset checkout "
            "(pip install -e '.[demo]')",
            err=True,
        )
        raise typer.Exit(code=1)
    missing = [name for name in extra if importlib.util.find_spec(name) is None]
    if missing:
        typer.echo(
            f"scaleset {command}: needs {' and '.join(missing)}, which scaleset's demo extra "
            "installs: pip install -e '.[demo]' in a checkout",
            err=True,
        )
        raise typer.Exit(code=1)


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
        str, typer.Option(help="Metrics path passed to listeners (empty: /metrics).")
    ] = "/metrics",
    runner_max_concurrent_reconciles: Annotated[
        int | None,
        typer.Option(
            help="Workers of the EphemeralRunner controller (ARC 0.14's flag; default 2)."
        ),
    ] = None,
    default_max_concurrent_reconciles: Annotated[
        int | None,
        typer.Option(
            help="Workers of each of ARC's four controllers that no flag of its own sets."
        ),
    ] = None,
    autoscaling_runner_set_max_concurrent_reconciles: Annotated[
        int | None, typer.Option(help="Workers of the AutoscalingRunnerSet controller (default 1).")
    ] = None,
    autoscaling_listener_max_concurrent_reconciles: Annotated[
        int | None, typer.Option(help="Workers of the AutoscalingListener controller (default 1).")
    ] = None,
    ephemeral_runner_set_max_concurrent_reconciles: Annotated[
        int | None, typer.Option(help="Workers of the EphemeralRunnerSet controller (default 2).")
    ] = None,
    ephemeral_runner_max_concurrent_reconciles: Annotated[
        int | None, typer.Option(help="Workers of the EphemeralRunner controller (default 2).")
    ] = None,
    workers: Annotated[
        list[str] | None,
        typer.Option(
            "--workers",
            help="Workers of one controller, NAME=N (repeatable), e.g. ephemeralrunnerset=4; "
            "wins over the *-max-concurrent-reconciles flags.",
        ),
    ] = None,
    k8s_client_rate_limiter_qps: Annotated[
        float,
        typer.Option(
            help="API client requests per second, watches excepted. While requests wait for "
            "it, controllers and namespaces take turns: one scale set's burst (a scale-up's "
            "runner creations) does not hold back the requests that start those runners, nor "
            "another namespace's."
        ),
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
            help="Queue every object again this often (Go duration, e.g. 1m; 0 disables). "
            "A rotated GitHub Secret reaches its listener at once where the controller may "
            "watch Secrets in the runner namespace, else at the next resync."
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
    pprof_addr: Annotated[
        str,
        typer.Option(help="Accepted for ARC compatibility and ignored, with a warning (no pprof)."),
    ] = "",
    update_strategy: Annotated[
        str,
        typer.Option(
            help="Accepted for ARC compatibility and ignored, with a warning: scaleset updates "
            "a scale set's runner set in place and never deletes a busy runner to apply a change."
        ),
    ] = "",
    ignored_values: Annotated[
        str,
        typer.Option(
            envvar="SCALESET_IGNORED_VALUES",
            help="Chart values the chart took for ARC compatibility but ignores, as JSON "
            '([{"key": ..., "why": ...}]; the chart sets it): each is logged as a warning at '
            "start.",
        ),
    ] = "",
    allow_http_github_url: Annotated[
        bool,
        typer.Option(
            help="Accept githubConfigUrl over plain http (a test GitHub). Without it such a "
            "scale set is refused: its credentials would cross the network in clear text."
        ),
    ] = False,
    allow_full_listener_template: Annotated[
        bool,
        typer.Option(
            help="Merge every field of a scale set's listenerTemplate into its listener pod, as "
            "ARC does (any image, command, container or volume in the controller's namespace). "
            "Without it only scheduling, resources, env and security settings that tighten "
            "are accepted."
        ),
    ] = False,
) -> None:
    """Run the controller manager (see the command's help)."""
    from scaleset.controllers import manager_process as process

    per_controller = {
        "autoscalingrunnerset": autoscaling_runner_set_max_concurrent_reconciles,
        "autoscalinglistener": autoscaling_listener_max_concurrent_reconciles,
        "ephemeralrunnerset": ephemeral_runner_set_max_concurrent_reconciles,
        "ephemeralrunner": ephemeral_runner_max_concurrent_reconciles,
    }
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
            # ARC's chart renders an empty endpoint for a metrics block without one
            listener_metrics_endpoint=listener_metrics_endpoint or "/metrics",
            runner_max_concurrent_reconciles=runner_max_concurrent_reconciles,
            max_concurrent_reconciles={
                name: count for name, count in per_controller.items() if count is not None
            },
            default_max_concurrent_reconciles=default_max_concurrent_reconciles,
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
            ignored=process.ignored_settings(
                update_strategy=update_strategy, pprof_addr=pprof_addr, chart=ignored_values
            ),
            allow_http_github_url=allow_http_github_url,
            allow_full_listener_template=allow_full_listener_template,
        )
    except process.OptionsError as error:
        raise typer.Exit(code=process.report_invalid(error, log_format)) from None
    raise typer.Exit(code=process.run(options))


@app.command(
    help=(
        "Run one scale set's listener: long-polls GitHub's message queue, records JobStarted / "
        "JobCompleted on the runners and patches the EphemeralRunnerSet's desired count. Reads "
        "ARC's listener config JSON from $LISTENER_CONFIG_PATH.\n\n"
        "\b\nExit codes:\n"
        "  0   stopped by SIGTERM/SIGINT (message session handed over to the next listener)\n"
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


CHAOS_HELP = (
    ("none", "no faults"),
    ("spot", "evict an idle and a busy runner's pod"),
    ("hang", "a runner hangs after its job"),
    ("oom", "a busy runner is OOM-killed"),
    ("restarts", "the listener killed, the controller restarted, the controller killed"),
    ("outage", "GitHub answers 503 for a while"),
    ("all", "every single fault below, once each"),
    ("evict-idle", "an idle runner's pod is evicted"),
    ("evict-busy", "a busy runner's pod is evicted"),
    ("hang-after-job", "the next runner to take a job hangs after it"),
    ("oom-busy", "a busy runner is OOM-killed"),
    ("kill-listener", "the listener process is killed"),
    ("restart-controller", "the controller manager is stopped and started again"),
    ("kill-controller", "the controller manager is killed without releasing its lease"),
    ("github-outage", "GitHub answers 503 to everything for a while"),
    ("github-5xx-burst", "GitHub answers 500 to everything for a few seconds"),
    ("mq-token-expiry", "the listener's message-queue token expires"),
    ("stale-session-restart", "the listener restarts while GitHub keeps its old session"),
    ("watch-expiry", "the API server expires the watches (410 Gone)"),
    ("soak", "rates and a schedule instead of single faults (below)"),
)
"""Every ``--chaos`` name with what it does (``tests/unit/test_cli.py`` holds the names equal to
the demo's profiles)."""

DEMO_EPILOG = (
    "\b\nChaos profiles (--chaos NAME):\n"
    + "\n".join(f"  {name:<22}{what}" for name, what in CHAOS_HELP)
    + "\n\n--chaos soak: 10 % of jobs lose their runner to a spot eviction, 5 % to an OOM kill, "
    "5 % of runners hang after their job, 2 % of API writes fail (409/500/503), plus 3 listener "
    "kills, 2 controller kills, a GitHub 5xx burst, a one-minute GitHub outage, a message-queue "
    "token expiry, a stale-session restart and a watch expiry during a burst; it defaults to "
    "1000 jobs over 120 s on 0:40 runners. --seeds N runs N seeds from --seed (a fresh system "
    "each) and prints one table of the figures per seed.\n\n"
    "Exit codes: 0 every invariant held (on every seed); 1 an invariant broke (named in the "
    "report) or the system could not start; 2 bad options."
)


def _check_demo_numbers(
    jobs: int | None, duration: float | None, grace: float, seeds: int, parallel: int
) -> None:
    """Raise ``ValueError`` naming the first demo option out of its range."""
    if jobs is not None and jobs < 0:
        raise ValueError(f"--jobs must be 0 or more (got {jobs})")
    if duration is not None and duration <= 0:
        raise ValueError(f"--duration must be more than 0 seconds (got {duration:g})")
    if grace < 0:
        raise ValueError(f"--grace must be 0 seconds or more (got {grace:g})")
    if seeds < 1:
        raise ValueError(f"--seeds must be 1 or more (got {seeds})")
    if parallel < 1:
        raise ValueError(f"--parallel must be 1 or more (got {parallel})")


@app.command(epilog=DEMO_EPILOG)
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
    chaos: Annotated[
        str, typer.Option(help="Fault profile (the names are listed below).")
    ] = "none",
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
    window: Annotated[
        list[str] | None,
        typer.Option(
            help="A warm window of the scale set, 'DAYS HH:MM-HH:MM ZONE min=N' (e.g. 'Mon-Fri "
            "08:00-18:00 Europe/Berlin min=4'; days optional); repeatable; checked like "
            "spec.warmWindows. The runners settle at the minimum in force at the end."
        ),
    ] = None,
) -> None:
    """Run the whole system locally: embedded API server, embedded GitHub Actions service and
    simulated nodes, drive a job workload through it, check the lifecycle invariants on ground
    truth throughout, and print a report."""
    _require("scaleset.demo", "demo", extra=DEMO_EXTRA)
    import asyncio
    import os
    import tempfile

    from scaleset import logs
    from scaleset.demo.run import demo_options, run_demo, run_seeds

    try:
        _check_demo_numbers(jobs, duration, grace, seeds, parallel)
        if kubeconfig is not None and not kubeconfig.is_file():
            raise ValueError(f"--kubeconfig {kubeconfig}: no such file")
        options = demo_options(
            chaos=chaos,
            jobs=jobs,
            duration=duration,
            runners=runners,
            seed=seed,
            grace=grace,
            kubeconfig=kubeconfig,
            report_html=report,
            windows=tuple(window or ()),
        )
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


@app.command(
    epilog=(
        "Policies (--policy, repeatable; default: arc, windows when --window is given, "
        "headroom): arc is ARC's rule, min(minRunners + assigned jobs, maxRunners), with "
        "--min-runners (arc:N for another minimum); windows is scheduled warm capacity, each "
        "--window's minimum while it is open and --min-runners outside; headroom adds warm "
        "runners for the jobs expected while a runner starts, at the arrival rate of the last "
        "--headroom-lookback minutes; windows+headroom adds that headroom to the windows. Each "
        "drives the real listener scaler and the real EphemeralRunnerSet plan.\n\n"
        "Trace formats, the model and an example: docs/simulate.md.\n\n"
        "Exit codes: 0 simulated; 2 bad options or an unreadable trace."
    )
)
def simulate(
    trace: Annotated[
        Path | None,
        typer.Option(help="A job trace: CSV (queued_at,duration,labels) or JSON (a list)."),
    ] = None,
    github_jobs: Annotated[
        list[Path] | None,
        typer.Option(
            "--github-jobs",
            metavar="<path>",
            help="Saved answers of GitHub's list-jobs REST call for workflow runs "
            "(created_at, started_at, completed_at, labels); repeatable.",
        ),
    ] = None,
    synthetic_weekday: Annotated[
        bool,
        typer.Option(
            "--synthetic-weekday",
            help="Simulate a generated bursty working day (about 2,000 jobs: morning ramp, "
            "merge storms, quiet night), the same for the same --seed.",
        ),
    ] = False,
    seed: Annotated[int, typer.Option(help="Seed of the synthetic weekday.")] = 1,
    day: Annotated[
        str, typer.Option("--date", help="Date of the synthetic weekday (YYYY-MM-DD).")
    ] = "2027-01-13",
    zone: Annotated[
        str, typer.Option(help="IANA time zone the synthetic weekday's hours are in.")
    ] = "UTC",
    labels: Annotated[
        str,
        typer.Option(help="The scale set's labels (space-separated): only jobs it takes count."),
    ] = "",
    policy: Annotated[
        list[str] | None,
        typer.Option(metavar="<str>", help="A policy to compare (see below); repeatable."),
    ] = None,
    min_runners: Annotated[int, typer.Option(help="The static minRunners.")] = 0,
    max_runners: Annotated[int, typer.Option(help="maxRunners.")] = 100,
    window: Annotated[
        list[str] | None,
        typer.Option(
            metavar="<str>",
            help="A warm window, 'DAYS HH:MM-HH:MM ZONE min=N' (e.g. 'Mon-Fri 08:00-18:00 "
            "Europe/Berlin min=4'; days optional); repeatable; checked like spec.warmWindows.",
        ),
    ] = None,
    headroom_lookback: Annotated[
        float, typer.Option(help="headroom: minutes of arrivals the rate is taken over.")
    ] = 10.0,
    headroom_cover: Annotated[
        float, typer.Option(help="headroom: seconds of expected arrivals kept warm.")
    ] = 90.0,
    headroom_factor: Annotated[
        float, typer.Option(help="headroom: multiplies the warm runners it asks for.")
    ] = 1.0,
    pod_start: Annotated[
        float,
        typer.Option(
            help="Seconds from a runner pod on a ready node to its runner online (image pull, "
            "start, registration)."
        ),
    ] = 60.0,
    node_scale_up: Annotated[
        float, typer.Option(help="Seconds until a new node is ready (with --runners-per-node).")
    ] = 0.0,
    runners_per_node: Annotated[
        int,
        typer.Option(help="Runner pods a node holds; 0: no node model, every pod has a node."),
    ] = 0,
    jit_rate: Annotated[
        float, typer.Option(help="JIT configs GitHub generates a second (its ceiling).")
    ] = 3.0,
    html: Annotated[
        Path | None,
        typer.Option("--html", help="Also write a self-contained HTML page with the curves."),
    ] = None,
    write_trace: Annotated[
        Path | None,
        typer.Option(help="Write the simulated trace to this file (.csv, else JSON)."),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(help="Policies simulated at a time, one process each [default: CPUs]."),
    ] = None,
) -> None:
    """Replay a job trace through the real scaler and EphemeralRunnerSet decisions on virtual
    time, for each scaling policy, and compare them: queue time (p50, p95, max),
    runner-minutes, idle runner-minutes and JIT configs generated."""
    _require("scaleset.simulate", "simulate")
    import os
    from datetime import date

    from scaleset.api.warm_windows import known_zone
    from scaleset.simulate.model import Parameters
    from scaleset.simulate.policies import HeadroomSettings
    from scaleset.simulate.run import OptionError, SimulateOptions, run_command

    try:
        options = SimulateOptions(
            trace=trace,
            github_jobs=tuple(github_jobs or ()),
            synthetic_seed=seed if synthetic_weekday else None,
            synthetic_day=date.fromisoformat(day),
            synthetic_zone=zone,
            labels=tuple(labels.split()),
            policies=tuple(policy or ()),
            min_runners=min_runners,
            max_runners=max_runners,
            windows=tuple(window or ()),
            headroom=HeadroomSettings(
                lookback=headroom_lookback * 60.0, cover=headroom_cover, factor=headroom_factor
            ),
            parameters=Parameters(
                max_runners=max_runners,
                pod_start=pod_start,
                node_scale_up=node_scale_up,
                runners_per_node=runners_per_node,
                jit_rate=jit_rate,
            ),
            workers=workers if workers is not None else (os.cpu_count() or 1),
        )
        if min(pod_start, node_scale_up, headroom_cover) < 0 or jit_rate <= 0:
            raise OptionError("latencies must be 0 or more and --jit-rate above 0")
        if headroom_lookback <= 0 or runners_per_node < 0:
            raise OptionError("--headroom-lookback must be above 0, --runners-per-node 0 or more")
        if zone != "UTC" and not known_zone(zone):
            raise OptionError(f"--zone {zone!r}: not an IANA time zone")
        code = run_command(options, echo=typer.echo, html_path=html, trace_out=write_trace)
    except ValueError as error:  # OptionError, TraceError, a bad --date
        typer.echo(f"scaleset simulate: {error}", err=True)
        raise typer.Exit(code=2) from None
    raise typer.Exit(code=code)


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
    if output_dir.exists() and not output_dir.is_dir():
        typer.echo(f"scaleset crds: --output-dir {output_dir}: not a directory", err=True)
        raise typer.Exit(code=1)
    try:
        written = crd_generator.write_files(output_dir)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        typer.echo(f"scaleset crds: --output-dir {output_dir}: cannot write: {reason}", err=True)
        raise typer.Exit(code=1) from None
    for path in written:
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
    _require("scaleset.embedded", "apiserver", extra=DEMO_EXTRA)
    import asyncio

    if not 0 <= port <= 65535:
        typer.echo(f"scaleset apiserver: --port must be 0-65535 (got {port})", err=True)
        raise typer.Exit(code=2)

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
    _require("scaleset.embedded", "fake-github", extra=DEMO_EXTRA)
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
    context: Annotated[
        str | None,
        typer.Option(help="Kubeconfig context to use (default: its current context)."),
    ] = None,
    namespace: Annotated[
        str | None,
        typer.Option(help="Look at this namespace only (default: every namespace)."),
    ] = None,
    output: Annotated[str, typer.Option(help="table or json.")] = "table",
    github_host: Annotated[
        list[str] | None,
        typer.Option(
            "--github-host",
            metavar="HOST[:PORT]",
            help="A GitHub Enterprise Server host the doctor may send your GitHub credentials "
            "to (repeatable). github.com and *.ghe.com need no flag; always over https.",
        ),
    ] = None,
    github_ca_file: Annotated[
        Path | None,
        typer.Option(help="PEM CA certificates to trust for GitHub (a GHES with a private CA)."),
    ] = None,
    github_app_id: Annotated[
        str | None,
        typer.Option(help="GitHub App id or client id (instead of $GITHUB_TOKEN)."),
    ] = None,
    github_app_installation_id: Annotated[
        int | None, typer.Option(help="The GitHub App's installation id.")
    ] = None,
    github_app_private_key_file: Annotated[
        Path | None, typer.Option(help="The GitHub App's private key (PEM file).")
    ] = None,
) -> None:
    """Diagnose a cluster's runner scale sets (ARC-managed ones too), read-only: the controller
    missing or not leading; scale sets whose Valid, ScaleSetRegistered or ControllerConflict
    condition is bad; listeners missing, crash-looping or two for one scale set; runner
    versions GitHub refuses as deprecated; runners whose pod is gone, or was recreated from a
    used JIT config; Running with no job; registrations missing on GitHub; runners stuck
    deleting; terminal runners holding slots; idle runners past an age; CRDs missing
    scaleset's fields (ARC's still installed); githubConfigUrls that are not GitHub. Prints
    each finding with a suggested action.

    The registration check needs GitHub credentials with read access to the
    org/repo/enterprise runners: a token in $GITHUB_TOKEN, or a GitHub App (all three
    --github-app-* options; they win over $GITHUB_TOKEN). They are sent only over https to
    github.com, *.ghe.com and the hosts named with --github-host: a URL naming any other host
    gets nothing and is a finding. Without credentials the other checks run and the doctor
    says which it skipped.

    Exit code: 0 healthy, 1 findings, 2 bad options (kubeconfig, context, GitHub options),
    3 could not look: the API server unreachable or refusing, the namespace missing, every
    read refused, or no scale set there (one line says which)."""
    import os

    from scaleset.doctor.main import BadOption, GitHubOptions, run_doctor

    try:
        code = run_doctor(
            kubeconfig=kubeconfig,
            context=context,
            namespace=namespace,
            output=output,
            environ=os.environ,
            echo=typer.echo,
            github=GitHubOptions(
                hosts=tuple(github_host or ()),
                ca_file=github_ca_file,
                app_id=github_app_id,
                app_installation_id=github_app_installation_id,
                app_private_key_file=github_app_private_key_file,
            ),
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
    _require("scaleset.devtools", "dev real-apiserver")
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
    _require("scaleset.devtools", "dev real-apiserver")
    from scaleset.devtools import real_apiserver

    with _harness_errors():
        harness = real_apiserver.start(
            state_dir or real_apiserver.default_state_dir(), _progress(), ready_timeout_s=timeout
        )
    typer.echo(real_apiserver.env_line(harness))


@real_apiserver_app.command("stop")
def real_apiserver_stop(state_dir: StateDirOption = None) -> None:
    """Stop the harness's own etcd + kube-apiserver (nothing to do is fine)."""
    _require("scaleset.devtools", "dev real-apiserver")
    from scaleset.devtools import real_apiserver

    report = _progress()
    with _harness_errors():
        stopped = real_apiserver.stop(state_dir or real_apiserver.default_state_dir(), report)
    report("stopped" if stopped else "not running")


@real_apiserver_app.command("env")
def real_apiserver_env(state_dir: StateDirOption = None) -> None:
    """Print `export SCALESET_TEST_KUBECONFIG=...` for the running harness (exit 1 if none)."""
    _require("scaleset.devtools", "dev real-apiserver")
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
    _require("scaleset.devtools", "dev config-reference")
    from scaleset.controllers.registry import environment_variables
    from scaleset.devtools import config_reference as reference

    command = typer.main.get_command(app)
    assert isinstance(command, typer.core.TyperGroup)
    text = reference.generate(charts, command.commands["controller"], environment_variables())
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
