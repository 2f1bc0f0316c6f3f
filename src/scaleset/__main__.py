"""Lets ``python -m scaleset`` run the command-line interface."""

from scaleset.cli import main

main()
