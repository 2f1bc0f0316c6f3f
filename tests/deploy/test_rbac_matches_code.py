"""The RBAC our Helm charts render equals what the code really requests, in both directions.

The demo system runs everything the controller manager and the listener do (``scenario``) on
the embedded API server, which logs every resource request with its User-Agent
(``scaleset-controller/…``, ``scaleset-listener/…``). Then, for the controller chart's
cluster-wide install and its single-namespace install (``flags.watchSingleNamespace``), each
with the runner scale set chart's manager Role in the runner namespace:

- every request the controller made is allowed by the rules bound to the controller's
  ServiceAccount, in the scope it was made in (a Role covers its namespace only; an
  all-namespaces list/watch or a cluster-scoped resource needs a ClusterRole);
- every verb × resource those rules grant is used by some request in its scope, or is listed in
  ``UNUSED_BUT_NEEDED`` with the reason the code needs it anyway (and where). Nothing is granted
  only because ARC's charts grant it: the charts grant what the code uses (least privilege), and
  each of ARC's rules they leave out is a documented difference from ARC's rendering;
- every ``UNUSED_BUT_NEEDED`` entry is granted in its namespaces in both modes (a chart that
  dropped one would break the code path the reason names);
- the controller holds, in the runner namespace, everything the listener Role it creates grants
  (kube-apiserver's RBAC escalation check refuses the Role otherwise);
- the listener's requests equal the Role the controller created for it (same two directions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from tests.deploy.controller_chart.rendering import TEST_IMAGE
from tests.deploy.scenario import (
    CONTROLLER,
    CONTROLLER_CHART,
    LISTENER,
    RUNNER_SET_CHART,
    Run,
    run_everything,
    runner_set_values,
)
from tests.support.access import (
    CLUSTER,
    Grant,
    Permission,
    allowed,
    bound_grants,
    describe,
    rule_allows,
    unused_grants,
)
from tests.support.helm import render

from scaleset.api import keys
from scaleset.controllers.autoscalinglistener.rbac import LISTENER_ROLE_GRANTS
from scaleset.demo.system import CONTROLLER_NAMESPACE, RUNNER_NAMESPACE, SCALE_SET_NAME
from scaleset.embedded.apiserver._access import AccessEntry

pytestmark = pytest.mark.timeout(600)

RELEASE = "arc"


@dataclass(frozen=True)
class Needed:
    """Why a grant no request in the run used is needed anyway, and in which namespaces (a
    ClusterRole's grant counts for all of them)."""

    reason: str
    namespaces: frozenset[str]


ESCALATION = Needed(
    "granted by the listener Role the controller creates in the runner namespace: Kubernetes "
    "lets a subject create a Role, or bind one, only with the permissions it holds itself (the "
    "RBAC escalation check; controllers/autoscalinglistener/rbac.py)",
    frozenset({RUNNER_NAMESPACE}),
)
OWNER_FINALIZERS = (
    "the controller creates objects whose ownerReference has blockOwnerDeletion: true (runner "
    "sets of a scale set, runners and the proxy Secret of a runner set, pods and Secrets of a "
    "runner, the listener's pod and Secrets); where the OwnerReferencesPermissionEnforcement "
    "admission plugin is on (OpenShift, hardened clusters) that needs update on the owner's "
    "finalizers subresource. The embedded server does not run the plugin, so no request shows it"
)
REPEATED_EVENT = Needed(
    "the event recorder patches an Event that repeats (its count) instead of creating another; "
    "whether a repeat falls in a given namespace during one run is chance",
    frozenset({RUNNER_NAMESPACE, CONTROLLER_NAMESPACE}),
)
FRESH_POD_READ = Needed(
    "the EphemeralRunner controller reads a runner's pod with a GET when its pod cache does not "
    "show a pod the runner may have (the cache lagging a creation, a pod deleted behind its "
    "back) and after a conflict (controllers/ephemeralrunner/reconciler.py observe); whether "
    "one falls in a run is chance: the cache usually has the pod",
    frozenset({RUNNER_NAMESPACE}),
)
UNUSED_BUT_NEEDED: dict[tuple[str, str, str], Needed] = {
    **{
        (verb, group, resource): ESCALATION
        for group, resource, verbs in LISTENER_ROLE_GRANTS
        for verb in verbs
    },
    **{
        ("update", keys.GROUP, f"{plural}/finalizers"): Needed(
            OWNER_FINALIZERS, frozenset({RUNNER_NAMESPACE})
        )
        for plural in ("autoscalingrunnersets", "ephemeralrunnersets", "ephemeralrunners")
    },
    ("update", keys.GROUP, "autoscalinglisteners/finalizers"): Needed(
        OWNER_FINALIZERS, frozenset({CONTROLLER_NAMESPACE})
    ),
    ("patch", "", "events"): REPEATED_EVENT,
    ("get", "", "pods"): FRESH_POD_READ,
}
"""``(verb, group, resource) -> why`` for grants no request in the run used but the code needs."""

DOUBLE_BUT_NEEDED: dict[tuple[str, str, str], str] = {
    (verb, "", "events"): (
        "the controller's charts grant events wherever the controller records them, because "
        "ARC's runner set chart (which a migrated install may keep, migrating-from-arc.md step "
        "5) grants no events in the runner namespace; scaleset's runner set chart grants them "
        "too, for a controller whose RBAC is limited to other namespaces"
    )
    for verb in ("create", "patch")
}
"""``(verb, group, resource) -> why`` for grants that only repeat another grant of the charts
in every request the run made, yet are needed."""

LISTENER_UNUSED_BUT_NEEDED: dict[tuple[str, str, str], str] = {
    ("get", keys.GROUP, "ephemeralrunners"): (
        "a JobStarted is first decided on the listener's watch cache of runners; a fresh read "
        "(get) follows only when the cache lacks the runner or is behind (409), which in one run "
        "is chance (listener/handlers.py)"
    ),
}
"""The same for the listener Role (the fresh read behind its cache)."""

MODES = {
    "cluster-wide": ((), {}),
    "single-namespace": (
        (RUNNER_NAMESPACE,),
        {"flags": {"watchSingleNamespace": RUNNER_NAMESPACE}},
    ),
}


@pytest.fixture(scope="module")
async def runs() -> dict[str, Run]:
    """One run of the whole system per install mode (each on its own embedded server)."""
    return {mode: await run_everything(watch) for mode, (watch, _) in MODES.items()}


def chart_grants(mode: str) -> list[Grant]:
    """What the two charts bind to the controller's ServiceAccount in ``mode``."""
    _, values = MODES[mode]
    controller = render(
        CONTROLLER_CHART,
        {**values, "image": TEST_IMAGE},
        name=RELEASE,
        namespace=CONTROLLER_NAMESPACE,
    )
    account = next(o for o in controller if o.get("kind") == "ServiceAccount")
    account_name = str(account["metadata"]["name"])
    runner_set = render(
        RUNNER_SET_CHART,
        runner_set_values(account_name, CONTROLLER_NAMESPACE),
        name=SCALE_SET_NAME,
        namespace=RUNNER_NAMESPACE,
    )
    return bound_grants([*controller, *runner_set], CONTROLLER_NAMESPACE, account_name)


def unexplained(
    unused: list[Permission], *lists: dict[tuple[str, str, str], Needed]
) -> list[Permission]:
    """The unused grants none of ``lists`` accounts for (a ClusterRole's grant is accounted for
    by an entry of any namespace)."""
    left = []
    for permission in unused:
        key = (permission.verb, permission.group, permission.resource)
        if not any(
            key in listed
            and (permission.scope == CLUSTER or permission.scope in listed[key].namespaces)
            for listed in lists
        ):
            left.append(permission)
    return left


@pytest.mark.parametrize("mode", list(MODES))
async def test_every_request_of_the_controller_is_allowed_by_the_charts(
    runs: dict[str, Run], mode: str
) -> None:
    grants = chart_grants(mode)
    used = runs[mode].of(CONTROLLER)
    assert used, "the run recorded no request of the controller"
    refused = sorted({describe(a) for a in used if not allowed(grants, a)})
    assert refused == [], "the charts do not allow:\n" + "\n".join(refused)


@pytest.mark.parametrize("mode", list(MODES))
async def test_every_rule_of_the_charts_is_used_by_the_controller(
    runs: dict[str, Run], mode: str
) -> None:
    grants = chart_grants(mode)
    unused = unexplained(unused_grants(grants, runs[mode].of(CONTROLLER)), UNUSED_BUT_NEEDED)
    assert unused == [], "granted, never requested, no reason listed:\n" + "\n".join(
        str(p) for p in unused
    )


def _single_rules(grant: Grant) -> list[tuple[tuple[str, str, str], dict[str, Any]]]:
    """Each (verb, group, resource) of a grant's rules, as a rule of its own."""
    singles = []
    for rule in grant.rules:
        for verb in rule.get("verbs") or []:
            for group in rule.get("apiGroups") or []:
                for resource in rule.get("resources") or []:
                    single = {
                        "verbs": [verb],
                        "apiGroups": [group],
                        "resources": [resource],
                        "resourceNames": list(rule.get("resourceNames") or ()),
                    }
                    singles.append(((str(verb), str(group), str(resource)), single))
    return singles


@pytest.mark.parametrize("mode", list(MODES))
async def test_no_grant_only_repeats_another(runs: dict[str, Run], mode: str) -> None:
    """Every grant the controller uses is the only one allowing some of those requests: a
    cluster-wide grant the runner set chart's Role already gives in each namespace it is used
    in (patching Roles, say) would let the controller do it everywhere for nothing."""
    grants = chart_grants(mode)
    used = runs[mode].of(CONTROLLER)
    repeated = []
    for grant in grants:
        others = [other for other in grants if other is not grant]
        for key, single in _single_rules(grant):
            hits = [a for a in used if grant.covers_scope(a.namespace) and rule_allows(single, a)]
            if hits and all(allowed(others, a) for a in hits) and key not in DOUBLE_BUT_NEEDED:
                repeated.append(f"{key[0]} {key[1] or 'core'}/{key[2]} in {grant.source}")
    assert repeated == [], "granted twice, needed once:\n" + "\n".join(sorted(set(repeated)))


@pytest.mark.parametrize("mode", list(MODES))
def test_every_needed_grant_is_granted(mode: str) -> None:
    """What ``UNUSED_BUT_NEEDED`` says the code needs, the charts grant, in every namespace the
    entry names."""
    grants = chart_grants(mode)
    missing = [
        f"{verb} {group or 'core'}/{resource} in {namespace}"
        for (verb, group, resource), needed in sorted(UNUSED_BUT_NEEDED.items())
        for namespace in sorted(needed.namespaces)
        if not allowed(grants, _as_request(verb, group, resource, namespace))
    ]
    assert missing == [], f"needed but not granted: {missing}"


@pytest.mark.parametrize("mode", list(MODES))
def test_the_controller_holds_what_it_grants_the_listener(mode: str) -> None:
    grants = chart_grants(mode)
    missing = [
        f"{verb} {group or 'core'}/{resource}"
        for group, resource, verbs in LISTENER_ROLE_GRANTS
        for verb in verbs
        if not allowed(grants, _as_request(verb, group, resource, RUNNER_NAMESPACE))
    ]
    assert missing == [], f"the listener Role would be refused (escalation): {missing}"


@pytest.mark.parametrize("mode", list(MODES))
async def test_the_listener_role_grants_exactly_what_the_listener_requests(
    runs: dict[str, Run], mode: str
) -> None:
    run = runs[mode]
    grants = bound_grants(run.listener_rbac, *run.listener_account)
    assert grants, "no Role bound to the listener's ServiceAccount"
    used = run.of(LISTENER)
    refused = sorted({describe(a) for a in used if not allowed(grants, a)})
    unused = [
        p
        for p in unused_grants(grants, used)
        if (p.verb, p.group, p.resource) not in LISTENER_UNUSED_BUT_NEEDED
    ]
    assert refused == [], f"the listener Role does not allow: {refused}"
    assert unused == [], f"the listener Role grants, unused: {[str(p) for p in unused]}"


def _as_request(verb: str, group: str, rbac_resource: str, namespace: str) -> AccessEntry:
    resource, _, subresource = rbac_resource.partition("/")
    return AccessEntry("", "", verb, group, resource, subresource, namespace, "")
