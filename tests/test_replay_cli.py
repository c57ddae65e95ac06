"""`tablehall replay` on every crafted record under tests/records/ and on the worked examples (tests/examples/).

Conventions: `X.json` with `X.out.json` is the exact stdout (exit 1 when it holds "error", else 0);
`X.json` with `X.err.txt` is a malformed record: exit 2 and that text on stderr.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, RECORDS


def _cases() -> list[Path]:
    return sorted(p for p in RECORDS.glob("*.json") if not p.name.endswith(".out.json"))


def _run(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tablehall.cli", "replay", str(path)], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("record", _cases(), ids=lambda p: p.stem)
def test_crafted_record(record: Path) -> None:
    result = _run(record)
    assert "Traceback" not in result.stderr
    expected_out = record.with_name(record.stem + ".out.json")
    expected_err = record.with_name(record.stem + ".err.txt")
    if expected_err.exists():
        assert result.returncode == 2, result.stdout
        assert result.stdout == ""
        assert expected_err.read_text().strip().lower() in result.stderr.lower()
        return
    assert expected_out.exists(), f"{record.name} has neither .out.json nor .err.txt"
    expected = json.loads(expected_out.read_text())
    assert result.returncode == (1 if "error" in expected else 0), result.stderr
    printed = json.loads(result.stdout)
    if "error" in expected:
        assert printed["event"] == expected["event"]
        assert printed["state"] == expected["state"]
        assert isinstance(printed["error"], str) and printed["error"]
    else:
        assert printed == expected


def test_enough_crafted_records() -> None:
    names = [p.name for p in _cases()]
    assert sum(n.startswith("sb-") for n in names) >= 10
    assert sum(n.startswith("501-") for n in names) >= 10


@pytest.mark.parametrize("name", ["sb-opening", "501-seed-example"])
def test_worked_example(name: str) -> None:
    path = EXAMPLES / f"{name}.json"
    result = _run(path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == json.loads((EXAMPLES / f"{name}.out.json").read_text())


def test_not_json_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = _run(bad)
    assert result.returncode == 2
    assert "not JSON" in result.stderr and "Traceback" not in result.stderr


def test_missing_file_exits_2(tmp_path: Path) -> None:
    result = _run(tmp_path / "nowhere.json")
    assert result.returncode == 2
    assert "cannot read" in result.stderr


def test_record_from_stdin() -> None:
    text = (EXAMPLES / "sb-opening.json").read_text()
    result = subprocess.run(
        [sys.executable, "-m", "tablehall.cli", "replay", "-"], input=text, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0
    assert json.loads(result.stdout)["points"] == [155, 145]
