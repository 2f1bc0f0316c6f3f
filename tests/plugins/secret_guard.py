"""Autouse guard: fails any test whose logs or raised errors contain a secret used by the fakes."""
