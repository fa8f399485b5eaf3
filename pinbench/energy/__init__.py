"""Energy of a timed region (RAPL through powercap, NVML on a GPU) and a system's declared
price: the figures behind J/inference and $ per 1,000 inferences (``meter``, ``price``)."""
