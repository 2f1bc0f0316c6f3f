"""Tests of the scaleset-runner-set chart (deploy/charts/scaleset-runner-set)."""
