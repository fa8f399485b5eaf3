"""The sandbox every worker process runs in (issue 71, invariant 17): bubblewrap.

Confine, don't watch: a worker runs the system under test (a framework, a model whose format
carries operations of its own, code a user allowed for one run), and what it could write or
read beside its inputs cannot all be listed and checked afterwards. So it is started in a
filesystem that holds nothing else:

- its own user, PID, IPC, UTS, network and cgroup namespaces (``--unshare-all``), as uid and
  gid 65534 with no capabilities, no further user namespaces (``--disable-userns``), a new
  terminal session, and killed with the process that started it (``--die-with-parent``); its
  PID namespace ends every process it started when its first one ends, so nothing outlives
  the run;
- read-only: the system's libraries (``/usr`` and the merged-usr links), the few ``/etc``
  files the dynamic linker and the C library read, the CPU topology under ``/sys``, the
  interpreter's own prefix and its environment (the venv), and the run's folder at
  ``MOUNT`` (``/pinbench``): the job file, the model's files, the samples (at neutral names,
  ``data/NNNNNN``), the worker's own copy of the evaluator;
- writable: the run's ``out`` folder (its answers, checked by the host before it reads them:
  ``results.read_results``), a cache of its own for the run (``cache``: copies in, its own
  dataset's new entries kept by ``consented.adopt_cache``) and an empty ``/tmp``;
- never: ``PINBENCH_HOME`` (its keys, database, blob store and caches), the dataset's ground
  truth, other environments, ``$HOME``, the host's ``/proc`` and processes, the network.

Where bubblewrap is missing or cannot start (no unprivileged user namespaces), the run refuses
in one line naming the fix; ``--sandbox none`` runs it as before and the run is recorded
``unsandboxed``.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pinbench.registry.lockfile import Lockfile
    from pinbench.worker.job import Evidence

MOUNT = "/pinbench"
"""Where the run's folder is seen inside the sandbox."""
UID = 65534
"""The sandbox's user and group: ``nobody``, with no capabilities."""
SYSTEM = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin")
"""The system's programs and libraries, read-only (on a merged-usr system all but ``/usr`` are
links into it, and are made as links)."""
ETC = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/alternatives",
    "/etc/nsswitch.conf",
)
"""What of ``/etc`` a worker reads: the dynamic linker's cache and the time zone."""
SYS = ("/sys/devices/system/cpu", "/sys/class/powercap")
"""What of ``/sys`` a worker reads: the CPU topology thread pools size themselves by, and the
RAPL energy counters (``energy.rapl``), read-only."""
DEVICES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/dri")
"""Accelerator devices bound where present (with each ``/dev/nvidiaN``): a framework on a GPU
machine needs them, and they give no way to the host's files."""
ENV = ("PATH", "LANG", "LC_ALL", "TZ", "OMP_NUM_THREADS")
"""The host's environment variables a sandboxed worker sees; every other one is left out."""
PASSWD = "nobody:x:65534:65534:nobody:/tmp:/usr/sbin/nologin\n"
GROUP = "nogroup:x:65534:\n"
MODES = ("bwrap", "none")
"""``--sandbox``: bubblewrap (the default), or none (the run is recorded unsandboxed)."""
FIX = (
    "install bubblewrap (Debian, as root: apt-get install -y bubblewrap, as `make demo` and "
    "scripts/install-system-deps.sh do) and allow unprivileged user namespaces (sysctl "
    "kernel.unprivileged_userns_clone=1; on Ubuntu kernel.apparmor_restrict_unprivileged_userns"
    "=0); `pinbench doctor` tells what this machine lacks; or run with --sandbox none (the run "
    "is recorded unsandboxed)"
)


class SandboxUnavailable(UserError):
    """The sandbox could not start here; ``reason`` says why (bubblewrap's own words), and the
    message how to let it (``fix``: ``FIX`` by default)."""

    def __init__(self, *, reason: str, fix: str = FIX) -> None:
        super().__init__(f"the sandbox could not start: {reason}; {fix}")
        self.reason = reason
        self.fix = fix


NOT_ALLOWED = ("namespace", "not permitted", "No permissions", "Permission denied")
"""Words of bubblewrap's errors that say the machine does not let it make a sandbox (``FIX``);
any other error of its is about what pinbench asked of it."""
OTHER = (
    "this is pinbench's error, not your machine's: please report it, and meanwhile run with "
    "--sandbox none (the run is recorded unsandboxed)"
)


class UnknownSandbox(UserError):
    def __init__(self, *, sandbox: str) -> None:
        super().__init__(f"--sandbox must be one of {', '.join(MODES)}, got {sandbox!r}")
        self.sandbox = sandbox


def check_mode(sandbox: str) -> str:
    if sandbox not in MODES:
        raise UnknownSandbox(sandbox=sandbox)
    return sandbox


def bwrap() -> str:
    """bubblewrap where the system keeps it, owned by root and written by no one else
    (``pinbench.programs``): never the first ``bwrap`` on PATH, which anyone who sets PATH
    chooses; else the refusal naming what was found and the fix."""
    from pinbench.programs import ProgramUnavailable, system_program

    try:
        return str(system_program("bwrap"))
    except ProgramUnavailable as exc:
        raise SandboxUnavailable(reason=f"bubblewrap (bwrap) is {exc.reason}") from None


def record_sandbox(environment: dict[str, Any], sandboxed: bool, network: bool = False) -> None:
    """What a run records of its sandbox: ``bwrap`` or ``none``, for bubblewrap the program
    that made it (``bwrap``: its path, sha256 and version), and ``sandbox_network``: ``shared``
    where the sandbox kept the machine's network (``Confinement.network``)."""
    from pinbench.programs import identity

    environment["sandbox"] = "bwrap" if sandboxed else "none"
    environment.pop("bwrap", None)
    environment.pop("sandbox_network", None)
    if network:
        environment["sandbox_network"] = "shared"
    if sandboxed:
        environment["bwrap"] = identity(Path(bwrap())).to_json()


def probe(scratch: Path, hidden: list[Path], timeout_s: float = 30.0) -> None:
    """Start a sandbox as a run's worker is started (``wrap``), running this interpreter on
    nothing, in a folder made under ``scratch`` and removed; ``SandboxUnavailable`` when it
    does not start or end well (``pinbench doctor``, a server's check before it queues a run)."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="sandbox-probe-", dir=scratch) as folder:
        confinement = Confinement(Path(folder))
        confinement.prepare()
        argv, env = wrap(
            confinement,
            sys.executable,
            [sys.executable, "-c", ""],
            hidden=hidden,
            pythonpath="",
            cwd=MOUNT,
        )
        try:
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout_s)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxUnavailable(reason=f"bubblewrap did not run: {exc}") from exc
    if done.returncode != 0:
        tail = done.stderr.splitlines()[-20:]
        refusal = failed_to_start(done.returncode, tail)
        if refusal is not None:
            raise refusal
        last = tail[-1] if tail else "no output"
        raise SandboxUnavailable(reason=f"a sandbox ended with {done.returncode}: {last}")


@dataclass(frozen=True, slots=True)
class Confinement:
    """One sandbox: the host folder ``root`` (absolute) seen read-only at ``MOUNT``, and the
    ``writable`` folders under it (made by ``prepare``) the worker may write."""

    root: Path
    writable: tuple[str, ...] = ("out", "cache")
    network: bool = False
    """The machine's network kept (``--share-net``), for a training run's ranks that meet
    other systems' (``training.distributed.placement``); everything else stays confined."""

    def inside(self, path: Path | str) -> str:
        """Where the host's ``path`` (under ``root``) is inside the sandbox."""
        rel = Path(path).relative_to(self.root)
        return MOUNT if rel == Path(".") else f"{MOUNT}/{rel.as_posix()}"

    def prepare(self) -> None:
        """The writable folders and the sandbox's own ``passwd`` and ``group`` files."""
        for name in self.writable:
            (self.root / name).mkdir(exist_ok=True)
        etc = self.root / "etc"
        etc.mkdir(exist_ok=True)
        (etc / "passwd").write_text(PASSWD)
        (etc / "group").write_text(GROUP)


def interpreter_roots(python: Path | str) -> list[Path]:
    """The folders an interpreter needs besides the system's: its environment (a venv: the
    folder of its ``pyvenv.cfg``) and the installation it was made from, found without
    running it."""
    exe = Path(python)
    roots: list[Path] = []
    venv = exe.parent.parent
    cfg = venv / "pyvenv.cfg"
    if cfg.is_file():
        roots.append(venv.resolve())
        for line in cfg.read_text(errors="replace").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                roots.append(Path(value.strip()).resolve().parent)
    roots.append(Path(os.path.realpath(exe)).parent.parent)
    if Path(python) == Path(sys.executable):
        roots += [Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)]
    unique: list[Path] = []
    for root in (r.resolve() for r in roots):
        if root not in unique and not any(root.is_relative_to(s) for s in map(Path, SYSTEM)):
            unique.append(root)
    return unique


def _check_roots(roots: list[Path], hidden: list[Path]) -> None:
    """An interpreter folder that holds what the sandbox hides (the home, the blob store) or is
    the filesystem's root would hand it over: refused."""
    for root in roots:
        if root == Path("/"):
            raise SandboxUnavailable(reason="the interpreter's prefix is the filesystem's root")
        for secret in hidden:
            if secret.is_relative_to(root):
                raise SandboxUnavailable(
                    reason=f"the interpreter's folder {root} holds {secret}, which a worker may "
                    "not see; use an interpreter installed elsewhere"
                )


def wrap(
    confinement: Confinement,
    python: Path | str,
    argv: list[str],
    *,
    hidden: list[Path],
    pythonpath: str,
    cwd: str,
    binds: Sequence[tuple[Path, str]] = (),
) -> tuple[list[str], dict[str, str]]:
    """The command and environment that run ``argv`` (the interpreter first) in the sandbox:
    ``pythonpath`` and ``cwd`` are paths inside it. ``binds``: host files or folders (the
    worker's side of pinbench) bound read-only at paths inside (empty entries of the run's)."""
    roots = interpreter_roots(python)
    _check_roots(roots, [h.resolve() for h in hidden])
    root = confinement.root
    args = [
        bwrap(),
        "--unshare-all",
        *(["--share-net"] if confinement.network else []),
        "--unshare-user",
        "--disable-userns",
        "--uid",
        str(UID),
        "--gid",
        str(UID),
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
    ]
    for top in SYSTEM:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for path in (*ETC, *SYS):
        args += ["--ro-bind-try", path, path]
    args += ["--ro-bind", str(root / "etc" / "passwd"), "/etc/passwd"]
    args += ["--ro-bind", str(root / "etc" / "group"), "/etc/group"]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    gpus = sorted(str(p) for p in Path("/dev").glob("nvidia[0-9]*"))
    for device in (*gpus, *DEVICES):
        args += ["--dev-bind-try", device, device]
    for prefix in roots:  # after /tmp's tmpfs: an environment may live under /tmp
        args += ["--ro-bind", str(prefix), str(prefix)]
    args += ["--ro-bind", str(root), MOUNT]
    for name in confinement.writable:
        args += ["--bind", str(root / name), f"{MOUNT}/{name}"]
    for host, at in binds:
        args += ["--ro-bind", str(host), at]
    args += ["--chdir", cwd, "--", *argv]
    env = {k: os.environ[k] for k in ENV if k in os.environ}
    env.update(
        PYTHONPATH=pythonpath,
        PYTHONNOUSERSITE="1",
        PYTHONDONTWRITEBYTECODE="1",
        HOME="/tmp",
        TMPDIR="/tmp",
        NUMBA_CACHE_DIR="/tmp/numba",
        TF_CPP_MIN_LOG_LEVEL="2",
    )
    return args, env


BWRAP_LINE = "bwrap: "
"""How bubblewrap's own errors begin (it exits 1 before the worker starts)."""


def failed_to_start(status: int, tail: list[str]) -> SandboxUnavailable | None:
    """The refusal for a sandbox that did not start: bubblewrap's own error line in the output
    of a worker that ended with status 1 before writing anything."""
    if status != 1:
        return None
    line = next((t for t in tail if t.startswith(BWRAP_LINE)), None)
    if line is None:
        return None
    reason = line[len(BWRAP_LINE) :].strip()
    fix = FIX if any(w.lower() in reason.lower() for w in NOT_ALLOWED) else OTHER
    return SandboxUnavailable(reason=reason, fix=fix)


DATA_ONLY = frozenset(
    {
        "onnx",
        "safetensors",
        "hf-folder",
        "tflite",
        "torch-state-dict",
        "ort-genai",
        "ctranslate2",
        "openvino",
        "gguf",
    }
)
"""Model formats that are data a framework reads: a graph of the framework's own operators,
tensors for an architecture pinbench or transformers defines. Every other format runs
operations of its own (TorchScript and torch.export programs, SavedModel's and GraphDef's file
operations, Keras layers, pickles), and so does a ``torch-state-dict`` model's ``builder``."""


def runs_its_own_operations(lock: Lockfile, *, allow_pickle: bool = False) -> bool:
    """Whether ``lock``'s system under test runs operations its publisher wrote (beside
    processing code, ``processing.consent.needs_code``): a model or chain stage in a format
    other than ``DATA_ONLY``, a builder, a pickle the run may unpickle. The local runner runs
    such a model in the sandbox, never in the process that scores and records."""
    model = lock.body.model
    chain = lock.body.chain
    formats = [model.format] if model is not None else []
    formats += [stage.format for stage in chain.stages] if chain is not None else []
    builder = model is not None and model.builder is not None
    pickled = allow_pickle and model is not None and model.trusted
    return builder or pickled or any(f not in DATA_ONLY for f in formats)


def _counters_here() -> bool:
    """Whether this machine has an energy counter the host can read."""
    from pinbench.energy.meter import EnergyMeter

    with EnergyMeter.open() as meter:
        return bool(meter.counters)


def publishes_files(lock: Lockfile) -> bool:
    """Whether ``lock``'s system under test is a publisher's files (a model, a chain's
    stages), which only a sandbox opens (or a run marked UNSANDBOXED)."""
    return lock.body.model is not None or lock.body.chain is not None


UNSANDBOXED_METRIC = "unsandboxed_bool"
"""1 on a run whose publisher's files (a model's, a chain's stages') or code were opened outside
a sandbox or container (``--sandbox none``: a framework's parser is code pinbench did not
write, decision 310): shown ``UNSANDBOXED`` wherever its figures are (``run_figures.marks``).
Absent otherwise."""
CODE_METRIC = "code_bool"
"""1 on a run that ran code its user allowed beside the model: shown ``+code``."""


def sandbox_marks(lock: Lockfile, evidence: Evidence, *, allow_code: bool, here: bool) -> None:
    """The host's marks of how the system under test ran; whatever the worker sent under these
    names goes. ``here``: the run ran on this machine, whose energy counters the host reads: a
    worker process's energy figure where the host reads none is dropped (and named); an
    in-process run's are the host's own measure."""
    from pinbench.processing.consent import needs_code

    for name in (UNSANDBOXED_METRIC, CODE_METRIC):
        evidence.metrics.pop(name, None)
    worker = "inside" in evidence.environment  # measured by another process (a worker's word)
    energy = any(k.startswith("energy_") for k in evidence.metrics)
    if here and worker and energy and not _counters_here():
        injected = sorted(k for k in evidence.metrics if k.startswith("energy_"))
        for name in injected:
            del evidence.metrics[name]
        from pinbench.evaluator.dropped import name_dropped

        name_dropped(evidence.details, injected)
    code = allow_code and needs_code(lock)
    opened = code or publishes_files(lock)
    if opened and evidence.environment.get("sandbox") not in ("bwrap", "container"):
        evidence.metrics[UNSANDBOXED_METRIC] = 1.0
    if code:
        evidence.metrics[CODE_METRIC] = 1.0
