"""Support code shared by the test suites (importable; never a conftest).

- ``waiting.eventually``: THE bounded wait on a condition (no fixed sleeps anywhere else);
  ``waiting.eventually_sync`` is the same for synchronous tests;
- ``kube``: our production ``KubeClient`` pointed at a test backend, object bodies, CRDs;
- ``kube_fixtures``: the ``client``/``proxy``/``actions_crds`` fixtures (re-exported by the
  conftest of each suite that uses them);
- ``managers``: a ``Manager`` on the ``ManualClock`` (``manual_manager``), run/stop helpers,
  lease reads, child processes killed with SIGKILL;
- ``virtual_time``: driving a ``ManualClock`` while a real server answers (``InFlight``,
  ``run_until``, ``advance_to``);
- ``netfaults``: faults below HTTP (a TCP proxy that cuts, silences or partitions; an in-stream
  410 transport).
"""

from tests.support.waiting import eventually, eventually_sync

__all__ = ["eventually", "eventually_sync"]
