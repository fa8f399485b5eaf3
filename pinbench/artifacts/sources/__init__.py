"""Where a file's bytes come from besides the local disk: ``https://`` (streamed, resumable),
``hf://ORG/REPO@REVISION/PATH`` (the Hugging Face Hub) and ``dvc://REPO@REV/PATH`` (a DVC
repository). Fetching pins the source (a branch or tag becomes a commit) and hashes the bytes
into the blob store's temp area; the caller checks them against what was declared or pinned.
"""
