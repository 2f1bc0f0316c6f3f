"""Property: the statistics a scale set reports always agree with its real jobs and runners,
whatever happens in whatever order (spec §2.4, §6.1: assigned >= running, busy + idle =
registered). Driven straight against the fake's state machine, many random histories fast."""

from __future__ import annotations

import contextlib

from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule

from scaleset.clock import ManualClock
from scaleset.embedded.actions.errors import FakeHttpError
from scaleset.embedded.actions.model import BUSY_JOB_STATES, JobState, Label, Scope, ScopeKind
from scaleset.embedded.actions.service import ActionsService, JobDelivery, ServiceSettings

LABELS = ["arc", "gpu", "arm"]


class ServiceHistory(RuleBasedStateMachine):
    runners = Bundle("runners")
    jobs = Bundle("jobs")

    @initialize(delivery=st.sampled_from(list(JobDelivery)), capacity=st.none() | st.integers(0, 4))
    def start(self, delivery: JobDelivery, capacity: int | None) -> None:
        self.time = ManualClock()
        self.service = ActionsService(
            self.time,
            ServiceSettings(job_delivery=delivery, runner_session_timeout_seconds=60),
            real_monotonic=self.time.monotonic,
        )
        tenant = self.service.tenant_for_scope(Scope(ScopeKind.ORGANIZATION, "acme"))
        self.tenant_id = tenant.id
        self.scale_sets = [
            self.service.create_scale_set(
                tenant.id,
                name=label,
                runner_group_id=1,
                labels=[Label(label, "System")],
                runner_setting={},
            ).id
            for label in LABELS[:2]
        ]
        self.sessions = {
            s: self.service.create_session(tenant.id, s, "listener") for s in self.scale_sets
        }
        for session in self.sessions.values():
            self.service.note_poll(session, capacity)
        self.names = 0
        self.credentials: dict[int, str] = {}

    @rule(target=jobs, label=st.sampled_from(LABELS), duration=st.floats(0, 100))
    def queue_job(self, label: str, duration: float) -> int:
        return self.service.queue_job(
            [label], owner="acme", repository="app", duration_seconds=duration
        ).id

    @rule(target=runners, which=st.integers(0, 1))
    def register_runner(self, which: int) -> int:
        self.names += 1
        runner, credential = self.service.generate_jit_runner(
            self.tenant_id, self.scale_sets[which], name=f"r{self.names}", work_folder=""
        )
        self.credentials[runner.id] = credential
        return runner.id

    @rule(runner_id=runners)
    def runner_connects_and_takes_a_job(self, runner_id: int) -> None:
        runner = self.service.runners[runner_id]
        if not runner.registered:
            return
        if runner.session is None:
            with contextlib.suppress(FakeHttpError):
                self.service.open_runner_session(self.credentials[runner_id])
        if runner.session is not None:
            self.service.dispatch_job(runner)

    @rule(runner_id=runners)
    def runner_starts(self, runner_id: int) -> None:
        runner = self.service.runners[runner_id]
        if runner.job_request_id is not None:
            self.service.job_started(runner, runner.job_request_id)

    @rule(runner_id=runners, result=st.sampled_from(["success", "failure"]))
    def runner_completes(self, runner_id: int, result: str) -> None:
        runner = self.service.runners[runner_id]
        if runner.job_request_id is not None:
            self.service.job_completed(runner, runner.job_request_id, result)

    @rule(runner_id=runners, force=st.booleans())
    def remove_runner(self, runner_id: int, force: bool) -> None:
        with contextlib.suppress(FakeHttpError):
            self.service.remove_runner(self.tenant_id, runner_id, force=force)

    @rule(job_id=jobs)
    def cancel(self, job_id: int) -> None:
        self.service.cancel_job(job_id)

    @rule(job_ids=st.lists(jobs, max_size=4), which=st.integers(0, 1))
    def acquire(self, job_ids: list[int], which: int) -> None:
        scale_set_id = self.scale_sets[which]
        self.service.acquire_jobs(self.sessions[scale_set_id], scale_set_id, job_ids)

    @rule(which=st.integers(0, 1), capacity=st.none() | st.integers(0, 6))
    def listener_polls(self, which: int, capacity: int | None) -> None:
        session = self.sessions[self.scale_sets[which]]
        self.service.note_poll(session, capacity)
        message = self.service.take_message(session, 0)
        if message is not None:
            self.service.delete_message(session, message.id)

    @rule(seconds=st.floats(0, 120))
    def time_passes(self, seconds: float) -> None:
        self.time.advance(seconds)
        for session in self.sessions.values():
            self.service.touch_session(session)
        self.service.sweep(strict=True)

    @invariant()
    def statistics_match_the_world(self) -> None:
        service = self.service
        for scale_set_id in self.scale_sets:
            stats = service.statistics(scale_set_id)
            jobs = [j for j in service.jobs.values() if j.scale_set_id == scale_set_id]
            runners = [
                r
                for r in service.runners.values()
                if r.scale_set_id == scale_set_id and r.registered
            ]
            assert stats.total_assigned_jobs >= stats.total_running_jobs >= 0
            assert (
                stats.total_busy_runners + stats.total_idle_runners
                == stats.total_registered_runners
            )
            assert stats.total_registered_runners == len(runners)
            assert stats.total_running_jobs == sum(j.state is JobState.RUNNING for j in jobs)
            assert stats.total_available_jobs == sum(j.state is JobState.AVAILABLE for j in jobs)
            assert stats.total_busy_runners <= stats.total_assigned_jobs
            assert stats.total_acquired_jobs <= stats.total_assigned_jobs

    @invariant()
    def a_busy_job_and_its_runner_point_at_each_other(self) -> None:
        for job in self.service.jobs.values():
            if job.state in BUSY_JOB_STATES:
                runner = self.service.runners[job.runner_id or 0]
                assert runner.registered
                assert runner.job_request_id == job.id
        for runner in self.service.runners.values():
            if runner.job_request_id is not None:
                assert runner.registered
                assert self.service.jobs[runner.job_request_id].state in BUSY_JOB_STATES

    @invariant()
    def completed_jobs_have_a_result_and_no_runner_holds_them(self) -> None:
        held = {r.job_request_id for r in self.service.runners.values()}
        for job in self.service.jobs.values():
            if job.state is JobState.COMPLETED:
                assert job.result
                assert job.id not in held


ServiceHistory.TestCase.settings = hypothesis_settings(
    max_examples=150, stateful_step_count=40, deadline=None
)
TestServiceHistory = ServiceHistory.TestCase
