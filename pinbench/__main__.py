"""``python -m pinbench`` runs the CLI."""

from pinbench.cli import entrypoint

entrypoint()
