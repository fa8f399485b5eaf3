"""Framework images: a base from a local root filesystem, one image per framework built from
its hash-pinned requirements lock and a host-downloaded wheelhouse, published as ``image``
artifacts by digest, pushed to and pulled from registries by digest."""
