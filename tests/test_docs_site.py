"""The documentation site: it builds with ``mkdocs build --strict`` (a broken link or anchor
fails it), the step reference is the schema's own, every shell block says whether a test runs
it, and the README stays short."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from pinbench.registry.step_reference import markdown

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

# A shell block is preceded by one of these: run by a test (named: it must exist and read the
# page), or a reference listing that is not a sequence to run as written (a reason given).
MARK = re.compile(r"<!-- (?:run by (?P<test>tests/\S+\.py)|not run: (?P<reason>[^>]+)) -->\n$")


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).with_name("mkdocs")
    done = subprocess.run(
        # no --quiet: it hides the warnings --strict is there to fail on (a dead anchor)
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stdout + done.stderr
    assert (tmp_path / "site" / "steps" / "index.html").is_file()


def test_every_code_fence_is_closed() -> None:
    """A fence left open swallows the headings after it (and the anchors linking to them)."""
    for page in PAGES:
        fences = [
            n
            for n, line in enumerate(page.read_text().splitlines(), 1)
            if line.lstrip().startswith("```")
        ]
        assert len(fences) % 2 == 0, (
            f"{page.relative_to(ROOT)}: a fence opened at line {fences[-1]}"
        )


def test_the_step_reference_is_generated_from_the_schema() -> None:
    committed = (ROOT / "docs" / "steps.md").read_text()
    assert committed == markdown(), (
        "regenerate: .venv/bin/python -m pinbench.registry.step_reference > docs/steps.md"
    )


def test_every_step_and_output_section_has_a_heading_in_the_navigation() -> None:
    from pinbench.registry.manifest import json_schemas

    defs = json_schemas()["model"]["$defs"]
    headings = set(re.findall(r"^### `(\w+)`$", (ROOT / "docs" / "steps.md").read_text(), re.M))
    steps = {*defs["InputStep"]["properties"], *defs["OutputStep"]["properties"]}
    assert steps <= headings
    assert "steps.md" in (ROOT / "mkdocs.yml").read_text()


def test_every_shell_block_is_run_by_a_test_or_says_why_not() -> None:
    unmarked = []
    for page in PAGES:
        text = page.read_text()
        for found in re.finditer(r"^```(?:sh|bash|console|shell)\n", text, re.M):
            before = text[: found.start()]
            mark = MARK.search(before)
            where = f"{page.relative_to(ROOT)}:{before.count(chr(10)) + 1}"
            if mark is None:
                unmarked.append(where)
            elif mark["test"]:
                test = ROOT / mark["test"]
                assert test.is_file(), f"{where}: {mark['test']} does not exist"
                assert str(page.relative_to(ROOT)) in test.read_text(), (
                    f"{where}: {mark['test']} does not read {page.relative_to(ROOT)}"
                )
    assert unmarked == [], "shell blocks with no <!-- run by ... --> or <!-- not run: ... -->"


def test_the_readme_is_short_and_links_the_site() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).is_file(), link
