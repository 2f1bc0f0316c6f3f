"""The AutoscalingRunnerSet controller: a scale set's GitHub registration, its one
EphemeralRunnerSet and its AutoscalingListener, its status, and its deletion in order (L10).

``observed`` (frozen views of the scale set, its runner sets, listeners, chart objects, GitHub's
answers), ``desired`` (the runner set and listener as the scale set asks for them, and the patch
that gets there), ``plan`` (every decision, pure), ``actions`` (what plan can decide), ``apply``
(one action, one API call), ``arc_detection`` (is ARC's controller still running),
``reconciler`` (one reconcile: observe, plan, apply) and ``setup`` (registration on the
manager).
"""
