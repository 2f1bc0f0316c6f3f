"""Fuzz tests (hypothesis): bad input of every kind gets a typed error, never a crash."""
