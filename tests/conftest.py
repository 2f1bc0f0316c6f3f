"""Root test configuration: the shared pytest plugins every suite uses."""

pytest_plugins = [
    "tests.plugins.kube_backends",
    "tests.plugins.secret_guard",
    "tests.plugins.shared_subtree_guard",
    "tests.plugins.task_guard",
]
