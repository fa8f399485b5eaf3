"""Network transformations, validated (Deep500's level 1).

A transformation changes how a network is executed (micro-batching) or its graph (onnxruntime's
graph optimizations); each is run beside the untransformed network on the same inputs and
judged by the error between them (``compare``), with its time and peak memory. Nothing here
imports a framework at module level.
"""
