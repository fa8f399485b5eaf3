"""``python -m pinbench`` runs the CLI."""

from pinbench.entry import entrypoint

entrypoint()
