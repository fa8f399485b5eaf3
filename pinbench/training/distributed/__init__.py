"""Distributed training (Deep500's level 3): one training spec run by several workers that
communicate through ``torch.distributed`` (gloo, on the CPU).

``spec.DistributedSpec`` is the request's ``distributed`` section (scheme, workers, model
averaging period), pinned in the lockfile; ``schemes`` holds the communication schemes
(allreduce, pssgd, mavg and the native ``DistributedDataParallel``) with their byte
accounting; ``worker`` is one rank's loop; ``launch`` starts the ranks as processes on
127.0.0.1 and assembles their records into a ``TrainingResult`` and a ``DistributedRecord``.
Design: docs/decisions/0155-*.md.

The package itself imports nothing, so a request naming a distributed run is parsed without
NumPy or PyTorch.
"""
