"""``write_chains``: the order a message's job events are written in (pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from scaleset.github.models import JobAssigned, JobCompleted, JobMessage, JobStarted
from scaleset.listener.handlers import write_chains

RUNNERS = ("r0", "r1", "r2", "r3")


def started(runner: str, request_id: int = 1) -> JobStarted:
    return JobStarted(runner_name=runner, runner_request_id=request_id)


def completed(runner: str, request_id: int = 1) -> JobCompleted:
    return JobCompleted(runner_name=runner, runner_request_id=request_id)


def test_runners_whose_job_ended_are_written_first() -> None:
    jobs: list[JobMessage] = [started("r0"), started("r1"), completed("r2"), started("r3")]
    assert write_chains(jobs) == [
        [completed("r2")],
        [started("r0")],
        [started("r1")],
        [started("r3")],
    ]


def test_a_runner_keeps_its_started_before_its_completed() -> None:
    jobs: list[JobMessage] = [started("r0"), started("r1"), completed("r1")]
    assert write_chains(jobs) == [[started("r1"), completed("r1")], [started("r0")]]


def test_other_job_types_write_nothing() -> None:
    assert write_chains([JobAssigned(runner_request_id=4)]) == []


events = st.lists(
    st.builds(
        lambda kind, runner, request_id: kind(runner_name=runner, runner_request_id=request_id),
        st.sampled_from([JobStarted, JobCompleted]),
        st.sampled_from(RUNNERS),
        st.integers(1, 5),
    ),
    max_size=20,
)


@given(events)
def test_every_event_once_each_runner_in_message_order_ended_runners_first(
    jobs: list[JobStarted | JobCompleted],
) -> None:
    chains = write_chains(list(jobs))
    assert sorted(len(c) for c in chains) == sorted(
        sum(1 for j in jobs if j.runner_name == r) for r in {j.runner_name for j in jobs}
    )
    for chain in chains:
        runner = chain[0].runner_name
        assert chain == [j for j in jobs if j.runner_name == runner]
    ended = [any(isinstance(e, JobCompleted) for e in chain) for chain in chains]
    assert ended == sorted(ended, reverse=True), "a runner with no JobCompleted came first"
