"""A fresh clone stands alone: no file of the repository points outside it, every link in its documents
resolves inside it, and a clone with nothing beside it runs the tests of the worked examples."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

OUTSIDE = [
    re.compile(re.escape(".." + "/shared")),
    re.compile(re.escape("/work" + "/")),
    re.compile(r"parent\s*/\s*['\"]" + "shared"),
    re.compile(r"\.parent" + r"\.parent\b"),
    re.compile(r"parents\[" + r"[2-9]\]"),
]
"""Ways a file could reach past the repository's root (written in pieces so this file does not match)."""
LINK = re.compile(r"\]\(([^)\s]+)\)")


def repository_files() -> list[Path]:
    """Every file of the repository (tracked, or new and not ignored)."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(REPO), "ls-files", "--cached", "--others", "--exclude-standard"],
            capture_output=True, text=True, check=True, timeout=60,
        ).stdout.splitlines()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the repository's file list is unknown")
    return [REPO / name for name in listed if (REPO / name).is_file()]


def text_of(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


def test_no_file_points_outside_the_repository() -> None:
    found = []
    for path in repository_files():
        text = text_of(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if any(pattern.search(line) for pattern in OUTSIDE):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()[:100]}")
    assert found == []


def test_every_link_in_the_documents_stays_inside_and_resolves() -> None:
    broken = []
    for path in repository_files():
        if path.suffix != ".md" or "node_modules" in path.parts:
            continue
        for target in LINK.findall(text_of(path) or ""):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a web address, or a heading of the same page
            resolved = (path.parent / target.split("#")[0]).resolve()
            if not resolved.is_relative_to(REPO) or not resolved.exists():
                broken.append(f"{path.relative_to(REPO)}: {target}")
    assert broken == []


def test_a_fresh_clone_with_nothing_beside_it_runs_the_worked_examples(tmp_path: Path) -> None:
    """What a newcomer does: clone (the committed tree) anywhere and run the tests. The clone's own code and
    examples are the ones used; there is no `shared/` (or anything else) beside it."""
    repository_files()  # skips when this is no git checkout
    clone = tmp_path / "alone" / "tablehall"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True, timeout=120)
    assert sorted(p.name for p in clone.parent.iterdir()) == ["tablehall"]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)
    probe = "import tests.conftest, workers.games; print(tests.conftest.REPO, workers.games.__file__)"
    whose = subprocess.run(
        [sys.executable, "-c", probe], cwd=clone, env=env, capture_output=True, text=True, timeout=60
    )
    assert whose.returncode == 0, whose.stderr
    assert whose.stdout.split()[0] == str(clone) and whose.stdout.split()[1].startswith(str(clone))
    tests = ["tests/test_replay_cli.py", "-k", "worked_example or stdin or crafted", "tests/test_501_records.py"]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        cwd=clone, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]  # 5 would be "no tests ran"
