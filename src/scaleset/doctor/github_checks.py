"""The doctor's checks about GitHub (pure): where the objects point, and what GitHub lists."""

from __future__ import annotations

from collections import defaultdict

from scaleset.doctor import fields
from scaleset.doctor.findings import Finding
from scaleset.doctor.inventory import Inventory, JsonObject, Thresholds
from scaleset.doctor.runner_checks import TERMINAL


def config_urls(inventory: Inventory) -> dict[str, list[tuple[str, JsonObject]]]:
    """githubConfigUrl → the scale sets and runners that name it, with their kind (scale sets
    first)."""
    named: dict[str, list[tuple[str, JsonObject]]] = defaultdict(list)
    kinds = (("AutoscalingRunnerSet", inventory.scale_sets), ("EphemeralRunner", inventory.runners))
    for kind, objects in kinds:
        for obj in objects:
            url = fields.spec(obj).get("githubConfigUrl")
            if isinstance(url, str) and url:
                named[url].append((kind, obj))
    return named


def github_host_not_allowed(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    """A githubConfigUrl the doctor sends no credential to (``github_hosts``): one finding per
    namespace and URL, on the scale set that names it (or its first runner)."""
    found = []
    for url, objects in sorted(config_urls(inventory).items()):
        refusal = inventory.github_hosts.refusal(url)
        if refusal is None:
            continue
        by_namespace: dict[str, list[tuple[str, JsonObject]]] = defaultdict(list)
        for kind, obj in objects:
            by_namespace[fields.namespace_of(obj)].append((kind, obj))
        for items in by_namespace.values():
            kind, first = items[0]
            runners = sum(1 for item_kind, _ in items if item_kind == "EphemeralRunner")
            found.append(
                Finding(
                    "github-host-not-allowed",
                    fields.target(kind, first),
                    f"githubConfigUrl: {refusal}; the doctor sent it no credential "
                    f"({runners} runner(s) name it)",
                    "if this is your GitHub Enterprise Server, run the doctor with --github-host "
                    "<host> (https only); otherwise find out who wrote this URL — the "
                    "controller sends the namespace's GitHub Secret to it",
                )
            )
    return found


def registration_missing(inventory: Inventory, limits: Thresholds) -> list[Finding]:
    if inventory.registered_ids is None:
        return []
    found = []
    for runner in inventory.runners:
        # a runner with a job loses its registration when the job ends (ephemeral): not a leak
        if fields.deleting(runner) or fields.has_job(runner):
            continue
        if fields.status(runner).get("phase") in TERMINAL:
            continue
        runner_id = fields.status(runner).get("runnerId")
        url = str(fields.spec(runner).get("githubConfigUrl", ""))
        listed = inventory.registered_ids.get(url)
        if not isinstance(runner_id, int) or not runner_id or listed is None:
            continue
        if runner_id not in listed:
            found.append(
                Finding(
                    "registration-missing",
                    fields.target("EphemeralRunner", runner),
                    f"GitHub does not list runner id {runner_id}: its registration is gone, "
                    "the runner can never take a job",
                    f"replace the runner: {fields.delete_runner(runner)}",
                    "error",
                )
            )
    return found
