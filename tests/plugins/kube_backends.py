"""API-server backends for tests: the embedded server, and a real one (SCALESET_TEST_KUBECONFIG)."""
