"""Writing manifests from files on the author's machine: a model's signature read from the
model itself (``model``), a framework's hash-pinned environment from pinbench's own locks
(``framework``). Each builds plain data that ``pinbench.registry.manifest`` validates; the
CLI (``pinbench manifest``) writes it as YAML."""
