"""Leader election over a coordination.k8s.io/v1 Lease, with client-go's safety rules.

Always on: even one replica runs two controllers side by side during a rolling update.

- **Timings** as client-go enforces them: ``lease_duration > renew_deadline >
  retry_period * 1.2`` (``JITTER_FACTOR``), all positive, or ``LeaderElectionConfig`` refuses them.
- **Expiry by local observation**: a candidate never compares the lease's ``renewTime`` with its
  own wall clock (clocks skew). It notes, on its monotonic clock, when it last *saw the record
  change* — stamped when the read *returned*, so a slow read cannot make the lease look older
  than it is; the lease is expired when the record has not changed for ``leaseDurationSeconds``
  since.
- **Renewal in one request** (client-go's fast path): while it leads, the leader writes its
  renewal on the lease it last wrote, guarded by that write's ``resourceVersion``, without a read
  first; only a 409 (or 404) sends it to read the lease and decide again.
- **Renewal with a deadline**: the leader renews every ``retry_period``. If no renewal succeeds
  within ``renew_deadline`` of the last successful one (measured from when that request was sent),
  ``hold()`` raises ``LeadershipLost`` — before any other candidate can consider the lease expired
  (``renew_deadline < lease_duration``) — so the caller cancels its in-flight work in time. Each
  attempt, and each pause between attempts, is bounded by what is left of the deadline (computed
  afresh after every attempt), so neither a hung request nor a pause can extend leadership.
- **Release** (on SIGTERM): the holder writes ``holderIdentity: ""`` and
  ``leaseDurationSeconds: 1`` (client-go's ReleaseOnCancel), so a successor starts at once. A
  candidate stopped while its acquiring write was in flight releases too: the write may have
  landed even though the answer was never read.

Writes are PUTs carrying the lease's ``resourceVersion`` (optimistic lock; ARC's leader-election
Role grants get/create/update on leases, no patch).
"""

from __future__ import annotations

import math
import random
import socket
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, NoReturn

from scaleset.clock import Clock, SystemClock, run_with_deadline
from scaleset.kube.client import KubeClient
from scaleset.kube.conflict import retry_on_conflict
from scaleset.kube.errors import AlreadyExists, Conflict, KubeError, NotFound
from scaleset.kube.metrics import RuntimeMetrics, default_metrics
from scaleset.kube.objects import JsonObject, KubeObject, ObjectKey
from scaleset.kube.resources import LEASE
from scaleset.logs import get_logger

log = get_logger(__name__)


JITTER_FACTOR = 1.2
"""client-go's ``JitterFactor``: the renew deadline must exceed ``retry_period * JITTER_FACTOR``."""


class LeadershipLost(Exception):
    """The lease could not be renewed within the renew deadline (or was taken over)."""


@dataclass(frozen=True)
class LeaderElectionConfig:
    """Which lease, who we are, and client-go's timings (15 s / 10 s / 2 s by default)."""

    lease_name: str
    namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        timings = (
            f"lease duration {self.lease_duration:g}s, renew deadline {self.renew_deadline:g}s, "
            f"retry period {self.retry_period:g}s"
        )
        if min(self.lease_duration, self.renew_deadline, self.retry_period) <= 0:
            raise ValueError(f"{timings}: each must be greater than zero")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError(
                f"{timings}: the lease duration must be greater than the renew deadline"
            )
        if self.renew_deadline <= self.retry_period * JITTER_FACTOR:
            raise ValueError(
                f"{timings}: the renew deadline must be greater than the retry period "
                f"x {JITTER_FACTOR} (client-go's JitterFactor)"
            )
        if not self.identity:
            raise ValueError("leader election needs an identity")


def default_identity() -> str:
    """``<hostname>_<uuid>`` — unique per process, readable in ``kubectl get lease``."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class LeaseRecord(NamedTuple):
    """The fields of ``Lease.spec`` that election uses."""

    holder: str
    duration_seconds: int
    acquire_time: str
    renew_time: str
    transitions: int

    @classmethod
    def from_lease(cls, lease: KubeObject) -> LeaseRecord:
        spec = lease.spec
        return cls(
            holder=str(spec.get("holderIdentity") or ""),
            duration_seconds=_int(spec.get("leaseDurationSeconds")),
            acquire_time=str(spec.get("acquireTime") or ""),
            renew_time=str(spec.get("renewTime") or ""),
            transitions=_int(spec.get("leaseTransitions")),
        )

    def to_spec(self) -> JsonObject:
        spec: JsonObject = {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.duration_seconds,
            "renewTime": self.renew_time,
            "leaseTransitions": self.transitions,
        }
        if self.acquire_time:
            spec["acquireTime"] = self.acquire_time
        return spec


def micro_time(moment: datetime) -> str:
    """Kubernetes MicroTime: RFC 3339 with microseconds, UTC."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


class LeaderElector:
    """Acquires, holds and releases one Lease for ``config.identity``."""

    def __init__(
        self,
        client: KubeClient,
        config: LeaderElectionConfig,
        *,
        clock: Clock | None = None,
        metrics: RuntimeMetrics | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.config = config
        self._clock = clock or SystemClock()
        self._metrics = metrics or default_metrics()
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self._key = ObjectKey(config.namespace, config.lease_name)
        self._lease: KubeObject | None = None
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0
        self._last_renew = 0.0
        self._is_leader = False
        self._may_hold = False  # a write naming us was sent: the lease may be ours
        self._gauge = self._metrics.leader_status.labels(config.lease_name)
        self._gauge.set(0)

    @property
    def is_leader(self) -> bool:
        return self._is_leader

    @property
    def observed_holder(self) -> str:
        return self._observed.holder if self._observed else ""

    async def acquire(self) -> None:
        """Return once this process holds the lease (tries every ``retry_period``, jittered)."""
        logged_holder = None
        while True:
            if await self._attempt(self.config.lease_duration):
                self._set_leader(True)
                log.info(
                    "became leader",
                    lease=str(self._key),
                    identity=self.config.identity,
                )
                return
            if self.observed_holder != logged_holder:
                logged_holder = self.observed_holder
                log.info(
                    "waiting for leadership",
                    lease=str(self._key),
                    holder=logged_holder or "(none)",
                )
            await self._clock.sleep(self.config.retry_period * (1.0 + 0.2 * self._rng.random()))

    async def hold(self) -> NoReturn:
        """Renew until a renewal misses the deadline; then raise ``LeadershipLost``."""
        if not self._is_leader:
            raise LeadershipLost("not the leader")
        while True:
            await self._clock.sleep(self.config.retry_period)
            while True:
                remaining = self._last_renew + self.config.renew_deadline - self._clock.monotonic()
                if remaining <= 0:
                    self._set_leader(False)
                    log.error(
                        "leadership lost: lease not renewed within the renew deadline",
                        lease=str(self._key),
                        renew_deadline=self.config.renew_deadline,
                    )
                    raise LeadershipLost(f"lease {self._key} not renewed in time")
                if await self._attempt(remaining):
                    break
                if self._observed is not None and self._observed.holder not in (
                    "",
                    self.config.identity,
                ):
                    self._set_leader(False)
                    log.error("leadership lost: lease taken over", holder=self._observed.holder)
                    raise LeadershipLost(f"lease {self._key} taken by {self._observed.holder}")
                # the attempt took time: what is left of the deadline bounds the pause
                left = self._last_renew + self.config.renew_deadline - self._clock.monotonic()
                await self._clock.sleep(min(self.config.retry_period, max(0.0, left)))

    async def release(self) -> None:
        """Give the lease up at once (holder cleared, duration 1 s) if we still hold it.

        A read-decide-write under ``retry_on_conflict``: a renewal cancelled by the shutdown may
        have reached the server without us learning its new resourceVersion, so the release
        re-reads the lease and gives it up only while it still names us."""
        was_leader = self._is_leader
        self._set_leader(False)
        if not was_leader and not self._may_hold:
            return

        async def release_once() -> bool:
            try:
                lease = await self.client.get(LEASE, self._key)
            except NotFound:
                return False  # an acquiring create that never landed
            current = LeaseRecord.from_lease(lease)
            if current.holder != self.config.identity:
                return False  # already someone else's (or free): nothing of ours to give up
            now = micro_time(self._clock.now())
            record = LeaseRecord(
                holder="",
                duration_seconds=1,
                acquire_time=now,
                renew_time=now,
                transitions=current.transitions,
            )
            await self._write(lease, record)
            return True

        try:
            released = await run_with_deadline(
                self._clock,
                self.config.renew_deadline,
                retry_on_conflict(
                    release_once,
                    operation="release lease",
                    clock=self._clock,
                    metrics=self._metrics,
                ),
            )
        except (KubeError, TimeoutError) as error:
            log.warning("could not release the lease", lease=str(self._key), error=str(error))
            return
        self._may_hold = False
        if released:
            log.info("released leadership", lease=str(self._key))

    # ------------------------------------------------------------ internals

    def _set_leader(self, leading: bool) -> None:
        self._is_leader = leading
        self._gauge.set(1 if leading else 0)

    async def _attempt(self, budget: float) -> bool:
        started = self._clock.monotonic()
        try:
            acquired = await run_with_deadline(self._clock, budget, self._try_acquire_or_renew())
        except TimeoutError:
            log.warning("lease request timed out", lease=str(self._key))
            return False
        except KubeError as error:
            log.warning("lease request failed", lease=str(self._key), error=str(error))
            return False
        if acquired:
            self._last_renew = started
        return acquired

    async def _try_acquire_or_renew(self) -> bool:
        wall = micro_time(self._clock.now())
        me = self.config.identity
        duration = math.ceil(self.config.lease_duration)
        if await self._renew_optimistically(wall, duration):
            return True
        try:
            lease = await self.client.get(LEASE, self._key)
        except NotFound:
            record = LeaseRecord(me, duration, wall, wall, 0)
            self._may_hold = True
            try:
                created = await self.client.create(
                    LEASE,
                    {
                        "metadata": {
                            "name": self._key.name,
                            "namespace": self._key.namespace,
                        },
                        "spec": record.to_spec(),
                    },
                )
            except (AlreadyExists, Conflict):
                return False
            self._remember(created, self._clock.monotonic())
            return True
        now = self._clock.monotonic()  # when the record was seen: after the read returned
        record = LeaseRecord.from_lease(lease)
        if record != self._observed:
            self._observed = record
            self._observed_at = now
        self._lease = lease
        held_by_other = bool(record.holder) and record.holder != me
        lease_seconds = record.duration_seconds or duration
        if held_by_other and self._observed_at + lease_seconds > now:
            return False
        renewed = LeaseRecord(
            holder=me,
            duration_seconds=duration,
            acquire_time=record.acquire_time if record.holder == me else wall,
            renew_time=wall,
            transitions=record.transitions + (0 if record.holder == me else 1),
        )
        self._may_hold = True
        try:
            updated = await self._write(lease, renewed)
        except Conflict:
            return False
        self._remember(updated, self._clock.monotonic())
        return True

    async def _renew_optimistically(self, wall: str, duration: int) -> bool:
        """client-go's fast path: while we lead and our last record is within its duration,
        write the renewal on the lease as we last wrote it, without reading it first (one
        request per renewal). The write carries that lease's resourceVersion, so a lease that
        moved on since — renewed by a write whose answer we lost, or taken by another — answers
        409 (or 404 if deleted), and the caller reads it and decides afresh (the slow path)."""
        lease, observed = self._lease, self._observed
        if not self._is_leader or lease is None or observed is None:
            return False
        if observed.holder != self.config.identity:
            return False
        if self._observed_at + observed.duration_seconds <= self._clock.monotonic():
            return False
        renewed = observed._replace(duration_seconds=duration, renew_time=wall)
        try:
            updated = await self._write(lease, renewed)
        except (Conflict, NotFound):
            log.debug("lease changed since our last renewal; reading it", lease=str(self._key))
            return False
        self._remember(updated, self._clock.monotonic())
        return True

    async def _write(self, lease: KubeObject, record: LeaseRecord) -> KubeObject:
        body: JsonObject = {
            "metadata": {
                "name": lease.name,
                "namespace": lease.namespace,
                "resourceVersion": lease.resource_version,
            },
            "spec": record.to_spec(),
        }
        written = await self.client.replace(LEASE, body)
        self._lease = written
        return written

    def _remember(self, lease: KubeObject, now: float) -> None:
        self._lease = lease
        self._observed = LeaseRecord.from_lease(lease)
        self._observed_at = now


__all__ = [
    "LeaderElectionConfig",
    "LeaderElector",
    "LeadershipLost",
    "LeaseRecord",
    "default_identity",
    "micro_time",
]
