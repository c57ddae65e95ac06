"""Imports only point down (tablehall → gateway → ratings → workers → workers.games) and never go round in
a circle: checked on the repository, and the checker itself checked on a small tree built to break both."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import REPO
from tests.layering import problems

CLEAN = {
    "tablehall/__init__.py": "",
    "tablehall/cli.py": "import argparse\nfrom gateway import front\n",
    "gateway/__init__.py": "from .front import Front\n",
    "gateway/front.py": "from ratings.jobs import rate\nfrom workers import host\nclass Front: ...\n",
    "gateway/rulebook.py": "TEXT = 'the rules'\n",
    "ratings/__init__.py": "",
    "ratings/jobs.py": "import celery\n\ndef rate():\n    from workers.games import rules\n",
    "workers/__init__.py": "",
    "workers/errors.py": "import grpc\nclass E(Exception): ...\n",
    "workers/host.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import metrics\n",
    "workers/metrics.py": "import prometheus_client\n",
    "workers/games/__init__.py": "",
    "workers/games/rules.py": "import json\nfrom . import clock\nfrom .clock import Bank\n",
    "workers/games/clock.py": "from __future__ import annotations\nclass Bank: ...\n",
}
"""A tree that keeps the rules: every layer imports down, the core only the standard library and itself."""

BROKEN = {
    "ratings/jobs.py": "import celery\n\ndef rate():\n    from gateway.rulebook import TEXT\n",
    "workers/metrics.py": "import prometheus_client\nfrom .host import MatchHost\n",
    "workers/games/rules.py": "import json\nimport grpc\nfrom ..errors import E\n",
}
"""The same tree with a climb inside a function, a circle through a type-only relative import, and a
core that imports a service library and a module above it."""


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_the_repository_imports_only_down_and_in_no_circle() -> None:
    assert problems(REPO) == []


def test_a_tree_that_keeps_the_rules_passes(tmp_path: Path) -> None:
    assert problems(tree(tmp_path, CLEAN)) == []


def test_the_checker_names_each_climb_and_circle(tmp_path: Path) -> None:
    found = problems(tree(tmp_path, {**CLEAN, **BROKEN}))
    *climbing, circle = found
    assert climbing == [
        "ratings/jobs.py:4: from gateway.rulebook import TEXT  (ratings may not import gateway)",
        "workers/games/rules.py:2: import grpc  (workers.games imports only the standard library and itself)",
        "workers/games/rules.py:3: from ..errors import E  (workers.games may not import workers)",
    ]
    assert circle.startswith("import cycle: ")
    assert "workers.host → workers.metrics (workers/host.py:3: from . import metrics)" in circle
    assert "workers.metrics → workers.host (workers/metrics.py:2: from .host import MatchHost)" in circle
