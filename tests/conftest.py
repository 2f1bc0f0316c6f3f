"""Root test configuration: the shared pytest plugins every suite uses, and hypothesis without
its per-example deadline (a timed assertion: a cold first example, e.g. the first pydantic
validation of a model, took 324 ms against the 200 ms default and failed a property that holds)."""

from hypothesis import settings

settings.register_profile("scaleset", deadline=None)
settings.load_profile("scaleset")

pytest_plugins = [
    "tests.plugins.kube_backends",
    "tests.plugins.secret_guard",
    "tests.plugins.shared_subtree_guard",
    "tests.plugins.task_guard",
]
