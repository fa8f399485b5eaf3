"""Content addressing: sha256 digests, the blob store, and the verified-state cache."""
