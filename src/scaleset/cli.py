"""The ``scaleset`` command line: one entry point, one subcommand per process or tool.

Each subcommand is a thin shell over the module that does the work; the imports are lazy so that
``scaleset --help`` stays fast and a component's dependencies load only when it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NoReturn

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
)

dev_app = typer.Typer(
    help="Developer tools: the real kube-apiserver test harness.",
    no_args_is_help=True,
)
app.add_typer(dev_app, name="dev")


def _not_available(command: str, issue: str) -> NoReturn:
    """Exit 2 with one line for a subcommand whose issue is not done yet."""
    typer.echo(f"scaleset {command}: not available yet ({issue})", err=True)
    raise typer.Exit(code=2)


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


@app.command()
def controller() -> None:
    """Run the controller manager (AutoscalingRunnerSet, EphemeralRunnerSet, EphemeralRunner and
    AutoscalingListener reconcilers, leader-elected)."""
    _not_available("controller", "needs the controller runtime and the four controllers")


@app.command()
def listener() -> None:
    """Run one scale set's listener: long-polls GitHub and patches its EphemeralRunnerSet."""
    _not_available("listener", "needs the listener issue")


@app.command()
def demo() -> None:
    """Run the whole system locally: embedded API server, embedded GitHub Actions service and
    simulated nodes, drive a job workload through it and print a report."""
    _not_available("demo", "needs the controllers, the listener and the simulated kubelet")


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


@app.command()
def apiserver() -> None:
    """Serve the embedded Kubernetes API server on loopback (for kubectl, tests and the demo)."""
    _not_available("apiserver", "needs the embedded API server issue")


@app.command("fake-github")
def fake_github() -> None:
    """Serve the embedded fake GitHub + Actions scale-set service on loopback."""
    _not_available("fake-github", "needs the GitHub client and fake service issue")


@app.command()
def doctor() -> None:
    """Check a cluster's scale sets for leaked runners, stale registrations and outdated CRDs."""
    _not_available("doctor", "needs the orphans/doctor issue")


def main() -> None:
    """Console entry point."""
    app()
