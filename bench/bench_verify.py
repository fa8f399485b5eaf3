"""Hashing throughput of verification against ``openssl dgst -sha256``, and the verified cache.

What it measures, on one file of random bytes (1 GiB by default) whose pages are in the page
cache (it is read once before timing, so the disk is out of the comparison):

(a) full hash, each run side by side:
    * baseline: ``openssl dgst -sha256 FILE`` (a subprocess; its start-up is included, a few ms);
    * ``pinbench.artifacts.digest.hash_file(FILE)`` in-process;
    * the user path: the file is published (``publish()``) as part of a dataset into a fresh
      home, the verified-state cache is emptied (its rows deleted through a separate SQLite
      connection) and ``BlobStore.verify(digest)`` on a new ``BlobStore`` hashes the stored blob.
    Throughput is GB/s (10^9 bytes per second) and the ratio is pinbench's throughput over
    openssl's in the same run. Target: ratio >= 0.95.

(b) re-verify of the unchanged blob (the verified cache hits): mean time of one
    ``BlobStore.verify`` over many calls on a warm store, and on a new ``BlobStore`` per call
    (opening the cache's SQLite file included, as a new process would); speedup = the full
    ``BlobStore.verify`` of (a) over the per-call re-verify time. Target: speedup >= 100x.

(c) end to end: ``pinbench verify LOCKFILE`` (subprocess) of a lockfile pinning a model, a
    framework and the dataset above, once with the cache emptied and once with it full.
    Target (issue 20): with the cache emptied, openssl's time / pinbench's >= 0.8 (the CLI's
    start-up, the registry check and the hash together against openssl's hash).

Run: ``.venv/bin/python -m bench.bench_verify --runs 5`` (``--size-mib``, ``--json``).
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from bench._common import (
    MIB,
    VENV_BIN,
    Check,
    Report,
    check_runs,
    command_line,
    log,
    machine,
    parser,
    read_through,
    run_checked,
    run_timed,
    scratch,
    timed,
    write_random_file,
)
from pinbench.artifacts.digest import Digest, hash_file
from pinbench.artifacts.store import BlobStore
from pinbench.artifacts.verified import FileState
from pinbench.config import Settings
from pinbench.registry import service
from pinbench.registry.manifest import load_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request_file import load_request
from pinbench.workspace import Workspace
from tests.helpers import (
    dataset_manifest,
    dump,
    framework_manifest,
    model_manifest,
    tiny_onnx,
)

REVERIFY_CALLS = 2000
FRESH_STORE_CALLS = 200
TARGET_RATIO = 0.95
TARGET_SPEEDUP = 100.0
TARGET_CLI_RATIO = 0.8


def _entry(path: Path, digest: Digest, size: int) -> dict[str, Any]:
    return {"path": path.name, "sha256": digest.hex, "size": size}


def build_home(root: Path, big: Path, big_digest: Digest) -> tuple[Path, Path]:
    """Publish a framework, a model and a dataset holding ``big``; lock a request.

    Returns (home, lockfile path).
    """
    data = big.parent
    model_file = data / "model.onnx"
    model_file.write_bytes(tiny_onnx(b"bench"))  # publish checks an ONNX model is one
    labels = data / "labels.npy"
    labels.write_bytes(os.urandom(4096))
    manifests = [
        dump(root / "framework.yaml", framework_manifest("onnxruntime", "1.17.3")),
        dump(
            data / "model.yaml",
            model_manifest("bench/model", "1.0.0", [_entry(model_file, *hash_file(model_file))]),
        ),
        dump(
            data / "dataset.yaml",
            dataset_manifest(
                "bench/data",
                "1.0.0",
                [_entry(big, big_digest, big.stat().st_size), _entry(labels, *hash_file(labels))],
            ),
        ),
    ]
    request = dump(
        root / "request.yaml",
        {
            "model": "bench/model@^1",
            "framework": "onnxruntime@>=1.17 <2",
            "dataset": "bench/data@^1",
            "system": {"arch": "amd64", "device": "cpu"},
        },
    )
    home = root / "home"
    ws = Workspace(Settings(home=home, database_url=f"sqlite:///{home / 'pinbench.db'}"))
    try:
        ws.init()
        for path in manifests:
            publish(ws, load_manifest(path), manifest_dir=path.parent, publisher="bench")
        lockfile, _ = service.lock(ws, load_request(request))
    finally:
        ws.close()
    lock_path = root / "bench.lock"
    lockfile.write(lock_path)
    return home, lock_path


def clear_verified(home: Path) -> None:
    """Empty the verified-state cache, as if nothing had been hashed on this machine."""
    conn = sqlite3.connect(home / "cache" / "verified.sqlite", timeout=30)
    try:
        conn.execute("DELETE FROM entries")
        conn.commit()
    finally:
        conn.close()


def openssl_sha256(path: Path) -> tuple[float, str]:
    start = time.perf_counter()
    out = run_checked(["openssl", "dgst", "-sha256", "-r", str(path)])
    return time.perf_counter() - start, out.split()[0]


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "")
    p.add_argument("--size-mib", type=int, default=1024, help="size of the file (default 1024)")
    p.add_argument("--no-cli", action="store_true", help="skip the `pinbench verify` timing")
    args = p.parse_args(argv)
    runs = check_runs(args)
    size = int(args.size_mib) * MIB
    report = Report(
        title=f"verify: sha256 of a {args.size_mib} MiB file, pinbench vs openssl dgst -sha256",
        command=command_line("bench.bench_verify", argv),
        runs=runs,
        machine=machine(args.tmp),
    )
    gb = size / 1e9
    with scratch(args.tmp, "verify", keep=args.keep) as root:
        big = root / "data" / "blob.bin"
        log(f"writing {args.size_mib} MiB of random bytes to {big}")
        write_random_file(big, size)
        big_digest, _ = hash_file(big)
        log("publishing model + framework + dataset, locking a request")
        home, lock_path = build_home(root, big, big_digest)
        blob = BlobStore(home).path(big_digest)
        read_through(big)
        read_through(blob)
        env = {**os.environ, "PINBENCH_HOME": str(home)}
        env.pop("PINBENCH_DATABASE_URL", None)
        pinbench = str(VENV_BIN / "pinbench")

        for run in range(runs):
            log(f"run {run + 1}/{runs}")
            # (a) full hashes; alternate which goes first
            order = ["openssl", "hash_file"] if run % 2 == 0 else ["hash_file", "openssl"]
            t: dict[str, float] = {}
            for which in order:
                if which == "openssl":
                    t["openssl"], hexdigest = openssl_sha256(big)
                    if hexdigest != big_digest.hex:
                        raise RuntimeError(f"openssl digest {hexdigest} != {big_digest.hex}")
                else:
                    start = time.perf_counter()
                    d, _ = hash_file(big)
                    t["hash_file"] = time.perf_counter() - start
                    if d != big_digest:
                        raise RuntimeError("hash_file digest differs")
            clear_verified(home)
            store = BlobStore(home)
            if store.cache.lookup(blob.resolve(), _state(blob)) is not None:
                raise RuntimeError("the verified cache was not emptied")
            start = time.perf_counter()
            store.verify(big_digest, label="blob.bin", size=size)
            t["verify"] = time.perf_counter() - start
            if store.cache.lookup(blob.resolve(), _state(blob)) != big_digest:
                raise RuntimeError("BlobStore.verify did not record the blob: it did not hash")

            report.metric("openssl dgst -sha256 (baseline)", "s").values.append(t["openssl"])
            report.metric("hash_file", "s").values.append(t["hash_file"])
            report.metric("BlobStore.verify, cache empty", "s").values.append(t["verify"])
            report.metric("openssl throughput", "GB/s", better="higher").values.append(
                gb / t["openssl"]
            )
            report.metric("hash_file throughput", "GB/s", better="higher").values.append(
                gb / t["hash_file"]
            )
            report.metric("BlobStore.verify throughput", "GB/s", better="higher").values.append(
                gb / t["verify"]
            )
            report.metric("ratio hash_file / openssl", "x", better="higher").values.append(
                t["openssl"] / t["hash_file"]
            )
            report.metric("ratio BlobStore.verify / openssl", "x", better="higher").values.append(
                t["openssl"] / t["verify"]
            )

            # (b) re-verify through the cache
            def reverify(s: BlobStore = store) -> None:
                for _ in range(REVERIFY_CALLS):
                    s.verify(big_digest, label="blob.bin", size=size)

            per_call = timed(reverify) / REVERIFY_CALLS

            def reverify_fresh() -> None:
                for _ in range(FRESH_STORE_CALLS):
                    s = BlobStore(home)
                    s.verify(big_digest, label="blob.bin", size=size)
                    s.cache.close()

            per_fresh = timed(reverify_fresh) / FRESH_STORE_CALLS
            store.cache.close()
            report.metric("re-verify, cache hit (warm store)", "ms").values.append(per_call * 1e3)
            report.metric("re-verify, cache hit (new BlobStore)", "ms").values.append(
                per_fresh * 1e3
            )
            report.metric("speedup full verify / re-verify", "x", better="higher").values.append(
                t["verify"] / per_call
            )
            report.metric(
                "speedup full verify / re-verify (new BlobStore)", "x", better="higher"
            ).values.append(t["verify"] / per_fresh)

            # (c) the CLI end to end
            if not args.no_cli:
                clear_verified(home)
                full = run_timed([pinbench, "verify", str(lock_path)], env=env)
                cached = run_timed([pinbench, "verify", str(lock_path)], env=env)
                startup = run_timed([pinbench, "--help"], env=env)
                report.metric("`pinbench verify LOCK`, cache empty", "s").values.append(full)
                report.metric("`pinbench verify LOCK`, cache hit", "s").values.append(cached)
                report.metric("`pinbench --help` (CLI start-up)", "s").values.append(startup)
                report.metric(
                    "ratio `pinbench verify` / openssl", "x", better="higher"
                ).values.append(t["openssl"] / full)

    ratio = report.metric("ratio hash_file / openssl", "x").median
    ratio_verify = report.metric("ratio BlobStore.verify / openssl", "x").median
    speedup = report.metric("speedup full verify / re-verify", "x").median
    speedup_fresh = report.metric("speedup full verify / re-verify (new BlobStore)", "x").median
    report.checks += [
        Check(
            "hash_file / openssl throughput",
            ratio,
            "x",
            f">= {TARGET_RATIO}",
            ratio >= TARGET_RATIO,
        ),
        Check(
            "BlobStore.verify / openssl throughput",
            ratio_verify,
            "x",
            f">= {TARGET_RATIO}",
            ratio_verify >= TARGET_RATIO,
        ),
        Check(
            "re-verify speedup (warm store)",
            speedup,
            "x",
            f">= {TARGET_SPEEDUP:.0f}",
            speedup >= TARGET_SPEEDUP,
        ),
        Check(
            "re-verify speedup (new BlobStore)",
            speedup_fresh,
            "x",
            f">= {TARGET_SPEEDUP:.0f}",
            speedup_fresh >= TARGET_SPEEDUP,
        ),
    ]
    if not args.no_cli:
        cli_ratio = report.metric("ratio `pinbench verify` / openssl", "x").median
        report.checks.append(
            Check(
                "`pinbench verify LOCK` (cache empty, end to end) / openssl throughput",
                cli_ratio,
                "x",
                f">= {TARGET_CLI_RATIO}",
                cli_ratio >= TARGET_CLI_RATIO,
            )
        )
    report.notes += [
        "the file is in the page cache for every measurement (read once before timing)",
        "openssl's time includes starting its process (a few ms)",
        "ratios are computed per run (pinbench and openssl measured side by side) and the "
        "median of the per-run ratios is shown",
        f"re-verify: mean of {REVERIFY_CALLS} calls (warm store) and of {FRESH_STORE_CALLS} "
        "calls each on a new BlobStore (opens the cache's SQLite file)",
    ]
    if not args.no_cli:
        startup_median = report.metric("`pinbench --help` (CLI start-up)", "s").median
        report.notes.append(
            "`pinbench verify` checks 3 artifacts (the dataset file, a 64 KiB model file, a "
            "4 KiB labels file, 3 manifest digests); its cache-hit time is mostly CLI start-up "
            f"(`pinbench --help`: {startup_median:.3f} s)"
        )
    report.emit(args.json)
    return 0


def _state(path: Path) -> FileState:
    return FileState.of(path.stat())


if __name__ == "__main__":
    raise SystemExit(main())
