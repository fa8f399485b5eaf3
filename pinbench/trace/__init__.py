"""Model execution inspection: trace levels across the stack on one timeline.

A traced run records model-level spans (load, preprocess, the cold first prediction, warm-up,
every timed ``predict``, postprocess), the framework's own operator events, and CPU/memory
(and GPU, through NVML) samples, merged onto one clock as Chrome trace-event JSON that is
stored in the blob store beside the run. ``levels`` says what each level records,
``timeline`` builds the file, ``ops`` reads the per-operator table out of it.
"""
