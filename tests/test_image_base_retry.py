"""Building the base image tries a transient mirror failure again, and nothing else
(``pinbench/images/retried.py``). The command is a real program: a script that fails its first
N runs printing what debootstrap prints, then succeeds; only the waits are recorded instead of
slept.
"""

from __future__ import annotations

import stat
import tarfile
from pathlib import Path

import pytest

from pinbench.images import base
from pinbench.images.retried import BACKOFF, TRANSIENT, run_retried
from tests.helpers import need_root
from tests.system_programs import system_folder

FLAKY = r"""#!/bin/sh
# fails its first $FAILS runs printing $SAYS on stderr, then makes the target folder: like
# debootstrap's, the argument before the last (SUITE TARGET MIRROR)
runs=$(cat "$COUNTER" 2>/dev/null || echo 0)
runs=$((runs + 1))
echo "$runs" > "$COUNTER"
if [ "$runs" -le "$FAILS" ]; then
    echo "I: Retrieving InRelease"
    echo "$SAYS" >&2
    exit 1
fi
target=$(eval echo "\${$(($# - 1))}")
mkdir -p "$target/etc" && echo bookworm > "$target/etc/debian_version"
"""


def _flaky(tmp: Path, fails: int, says: str) -> Path:
    """The flaky program at ``tmp/bin/debootstrap``, its settings written into it (the base
    image's build gives debootstrap none of the caller's environment); its run counter."""
    import shlex

    script = tmp / "bin" / "debootstrap"
    script.parent.mkdir(parents=True)
    counter = tmp / "runs"
    settings = f"COUNTER={shlex.quote(str(counter))}\nFAILS={fails}\nSAYS={shlex.quote(says)}\n"
    script.write_text(FLAKY.replace("#!/bin/sh\n", "#!/bin/sh\n" + settings, 1))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return counter


MIRROR_SYNC = "E: Couldn't find these debs: 0"
CASES = [
    # (fails, what it prints, tries, runs, succeeds, why)
    (2, MIRROR_SYNC, 4, 3, True, "the mirror sync the operator saw: gone on the third try"),
    (1, "E: Failed getting release file http://deb.debian.org/debian/dists/bookworm/Release",
     4, 2, True, "the Release file could not be fetched for a moment"),
    (1, "wget: unable to resolve host address: Temporary failure resolving 'deb.debian.org'",
     4, 2, True, "a name lookup that failed for a moment"),
    (9, MIRROR_SYNC, 3, 3, False, "still failing: bounded, three tries in all"),
    (9, "E: No such script: /usr/share/debootstrap/scripts/nosuch", 4, 1, False,
     "an unknown suite fails the same way every time: not tried again"),
    (9, "E: Release signed by unknown key (key id 6ED0E7B82643E131)", 4, 1, False,
     "a bad signature is not transient"),
    (9, "tar: write error: No space left on device", 4, 1, False, "a full disk is not transient"),
]  # fmt: skip


@pytest.mark.parametrize(("fails", "says", "tries", "runs", "succeeds", "why"), CASES)
def test_only_a_transient_mirror_failure_is_tried_again(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fails: int,
    says: str,
    tries: int,
    runs: int,
    succeeds: bool,
    why: str,
) -> None:
    counter = _flaky(tmp_path, fails, says)
    program = str(tmp_path / "bin" / "debootstrap")
    said: list[str] = []
    waits: list[float] = []
    done = run_retried(
        lambda n: [program, "bookworm", str(tmp_path / f"root-{n}"), "mirror"],
        what="debootstrap",
        say=said.append,
        tries=tries,
        sleep=waits.append,
    )
    assert int(counter.read_text()) == runs, why
    assert (done.process.returncode == 0) == succeeds, why
    assert done.tries == runs, why
    assert (tmp_path / f"root-{runs}" / "etc").is_dir() == succeeds, "made by the last try"
    assert len(said) == len(waits) == runs - 1, why
    for n, (line, wait) in enumerate(zip(said, waits, strict=True), start=1):
        cause = next(c for printed, c in TRANSIENT if printed in says)
        assert line.startswith(f"debootstrap failed: {cause}; trying again in "), line
        assert line.endswith(f"(try {n + 1} of {tries})"), line
        assert 0 <= wait <= min(BACKOFF.cap_s, BACKOFF.first_s * 2 ** (n - 1)), (n, wait)
    if not succeeds:
        transient = any(printed in says for printed, _ in TRANSIENT)
        assert (done.transient is not None) == transient, why


def test_the_base_image_s_rootfs_survives_a_mirror_sync_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through ``images.base`` with the flaky program first of the system's folders (it is
    never taken from PATH, ``pinbench.programs``): the tarball is made from the try that
    succeeded, and each retry is one line of progress (stderr in the CLI)."""
    need_root("building the base image")
    counter = _flaky(tmp_path, 2, MIRROR_SYNC)
    system_folder(tmp_path / "bin", monkeypatch, before_the_systems=True)
    said: list[str] = []
    tarball = tmp_path / "cache" / "rootfs-bookworm.tar"
    base._debootstrap(tarball, said.append, sleep=lambda _: None)
    assert counter.read_text().strip() == "3"
    with tarfile.open(tarball) as tar:
        assert "./etc/debian_version" in tar.getnames()
    retries = [line for line in said if "trying again" in line]
    assert [line.rsplit("(", 1)[1] for line in retries] == ["try 2 of 4)", "try 3 of 4)"]


def test_a_permanent_failure_is_refused_at_once_naming_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_root("building the base image")
    counter = _flaky(tmp_path, 9, "E: No such script: /usr/share/debootstrap/scripts/x")
    system_folder(tmp_path / "bin", monkeypatch, before_the_systems=True)
    with pytest.raises(base.BaseImageFailed) as failed:
        base._debootstrap(tmp_path / "rootfs.tar", lambda _: None, sleep=lambda _: None)
    assert counter.read_text().strip() == "1"
    assert "not tried again (not a transient mirror error)" in failed.value.reason
    assert "No such script" in failed.value.reason
    assert not (tmp_path / "rootfs.tar").exists()
