"""The artifact registry: names, manifests, version ranges, resolution and publishing."""
