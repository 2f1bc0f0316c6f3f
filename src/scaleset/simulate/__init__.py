"""``scaleset simulate``: prove a scaling policy on a job trace before it costs money.

A trace (``trace``: CSV or JSON; ``github_import``: GitHub's list-jobs answers; ``synthetic``: a
generated bursty weekday) is replayed on virtual time through a discrete-event model of GitHub,
the listener and Kubernetes (``model``) that calls the real listener ``Scaler`` and the real
EphemeralRunnerSet ``plan``; each policy (``policies``: ARC's rule, scheduled warm windows, a
rate-following headroom) gets the same trace, and ``report`` compares them in a table and an
HTML page with the curves. ``run`` is the command.
"""
