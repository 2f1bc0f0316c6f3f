"""The reconcilers and the ``scaleset controller`` process.

One module per reconciler, each with its pure ``plan`` beside its ``apply`` (see
docs/architecture.md); ``registry`` lists them for the manager; ``manager_process`` turns flags
and environment into a running ``Manager``; ``setup`` holds what a reconciler's ``setup``
function receives (its ``ProcessContext``, with the environment); ``env_settings`` is how a
setup declares the environment variables it reads; ``github_access`` builds the GitHub clients,
``proxy_credentials`` reads a proxy's credential Secret for every controller.
"""
