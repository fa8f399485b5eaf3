"""Scaling out: agents on a Ray cluster, each a *system* with its hardware facts."""
