"""The Python SDK from many threads at once, cold: a fresh interpreter whose threads all make
their first calls together (decision 288). Such threads once crashed the interpreter
(a segmentation fault in msgspec's type setup under ``parse_manifest``); one call in the main
thread first avoided it, so each round is a new process and nothing is called before the
threads start.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pinbench
from pinbench.registry.manifest import load_manifest
from pinbench.registry.publish import publish

THREADS = 32
ROUNDS = 4

COLD = """
import json, sys, threading
import pinbench

home, threads = sys.argv[1], int(sys.argv[2])
asked = json.loads(sys.argv[3])
registry = pinbench.Registry(home=home)  # shared: its workspace is made by the first call
barrier = threading.Barrier(threads)
answers = [None] * threads

def ask(i):
    barrier.wait()
    lock = registry.lock(asked["requests"][i % len(asked["requests"])], source="(thread)")[0]
    again = registry.lockfile(lock.to_json())
    shown = registry.show(asked["refs"][i % len(asked["refs"])])
    answers[i] = [lock.digest, again.digest, shown["manifest_digest"]]

workers = [threading.Thread(target=ask, args=(i,)) for i in range(threads)]
for t in workers:
    t.start()
for t in workers:
    t.join()
registry.close()
print(json.dumps(answers))
"""


def _request(seed: int) -> dict[str, Any]:
    return {
        "model": "vision/digits-logreg@^1",
        "framework": "onnxruntime@*",
        "dataset": "sklearn-digits-test@^1",
        "scenario": {"name": "SingleStream", "mode": "accuracy", "seed": seed},
    }


def test_many_cold_threads_share_one_registry_without_a_crash(
    tmp_path: Path, catalog_dir: Path
) -> None:
    home = tmp_path / "home"
    with pinbench.Registry(home=home) as registry:
        registry.init()
        for path in sorted(catalog_dir.glob("*.yaml")):
            publish(registry.workspace(), load_manifest(path), manifest_dir=catalog_dir)
        requests = [_request(seed) for seed in range(4)]
        refs = [f"{p['kind']}/{p['name']}@{p['version']}" for p in registry.list()]
        digests = [registry.lock(r)[0].digest for r in requests]
        published = [registry.show(ref)["manifest_digest"] for ref in refs]
    expected = [
        [digests[i % len(requests)], digests[i % len(requests)], published[i % len(refs)]]
        for i in range(THREADS)
    ]
    asked = json.dumps({"requests": requests, "refs": refs})
    for _ in range(ROUNDS):
        done = subprocess.run(
            [sys.executable, "-X", "faulthandler", "-c", COLD, str(home), str(THREADS), asked],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert json.loads(done.stdout) == expected
