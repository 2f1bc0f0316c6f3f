"""``scaleset demo``: the whole system on the embedded default, judged on ground truth.

Modules: ``workload`` (jobs and faults, deterministic per seed), ``system`` (the embedded API
server, fake GitHub, simulated kubelet and the controller manager wired as a cluster),
``truth`` (ground truth and the invariants, checked throughout the run), ``report`` (the
figures, as text and as a self-contained HTML page), ``run`` (the driver).
"""
