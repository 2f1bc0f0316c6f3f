"""Property: the fake finds a runner by name exactly as GitHub's rule says, whatever was
registered and removed before: a name (case-insensitive) belongs to at most one registered
runner of a tenant, is free again once that runner is removed, and never reaches another
tenant. The service keeps an index for the lookup; this checks it against the rule stated over
every runner it has ever registered."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from scaleset.clock import ManualClock
from scaleset.embedded.actions.errors import FakeHttpError
from scaleset.embedded.actions.model import Label, Runner, Scope, ScopeKind
from scaleset.embedded.actions.service import ActionsService

NAMES = st.sampled_from(["r1", "R1", "r2", "runner-A", "RUNNER-a"])
ORGS = ("acme", "other")


class RunnerNames(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.service = ActionsService(ManualClock())
        self.tenants = [
            self.service.tenant_for_scope(Scope(ScopeKind.ORGANIZATION, org)).id for org in ORGS
        ]
        self.scale_sets: dict[int, list[int]] = {tenant: [] for tenant in self.tenants}
        for tenant in self.tenants:
            self.add_scale_set(tenant)

    def add_scale_set(self, tenant: int) -> None:
        name = f"set-{sum(len(s) for s in self.scale_sets.values())}"
        self.scale_sets[tenant].append(
            self.service.create_scale_set(
                tenant,
                name=name,
                runner_group_id=1,
                labels=[Label(name, "System")],
                runner_setting={},
            ).id
        )

    def by_the_rule(self, tenant: int, name: str) -> list[Runner]:
        return [
            r
            for r in self.service.runners.values()
            if r.tenant_id == tenant and r.registered and r.name.casefold() == name.casefold()
        ]

    @rule(which=st.integers(0, 1), name=NAMES)
    def register(self, which: int, name: str) -> None:
        tenant = self.tenants[which]
        scale_set = self.scale_sets[tenant][-1]
        if self.by_the_rule(tenant, name):
            with pytest.raises(FakeHttpError) as refused:
                self.service.generate_jit_runner(tenant, scale_set, name=name, work_folder="")
            assert refused.value.status == 409
        else:
            self.service.generate_jit_runner(tenant, scale_set, name=name, work_folder="")

    @rule(which=st.integers(0, 1), name=NAMES)
    def remove(self, which: int, name: str) -> None:
        tenant = self.tenants[which]
        for runner in self.by_the_rule(tenant, name):
            self.service.remove_runner(tenant, runner.id)

    @rule(which=st.integers(0, 1))
    def delete_the_newest_scale_set(self, which: int) -> None:
        tenant = self.tenants[which]
        with contextlib.suppress(FakeHttpError):
            self.service.delete_scale_set(tenant, self.scale_sets[tenant].pop())
        self.add_scale_set(tenant)

    @invariant()
    def a_lookup_by_name_follows_the_rule(self) -> None:
        for tenant in getattr(self, "tenants", []):
            for name in ("r1", "R1", "r2", "runner-a", "ghost"):
                found = self.service.runners_named(tenant, name)
                assert found == self.by_the_rule(tenant, name)
                assert len(found) <= 1


TestRunnerNames = RunnerNames.TestCase
