"""`tablehall demo`: the match told in the table's words with its summaries and a result with names, paced by
default (the pauses recorded, not timed), `--pace 0` without pauses, `--json` the outcome as before."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tablehall import demo
from tablehall.cli import main
from workers.games.records import replay

CLI = [sys.executable, "-m", "tablehall.cli"]
NAMES = ["Ana", "Bia", "Caio"]


def tablehall(*args: str) -> str:
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout


def told(tmp_path: Path, *args: str) -> tuple[str, dict[str, Any]]:
    """What the demo printed, and the outcome of the match it played (a replay of the record it wrote)."""
    record = tmp_path / "told.json"
    text = tablehall("demo", *args, "--record", str(record))
    return text, replay(json.loads(record.read_text())).outcome


def test_json_prints_the_outcome_alone(tmp_path: Path) -> None:
    record = tmp_path / "demo.json"
    printed = json.loads(tablehall("demo", "--game", "501", "--json", "--record", str(record)))
    assert printed == replay(json.loads(record.read_text())).outcome


def test_spectacular_bid_is_told_in_table_words_with_summaries_and_names(tmp_path: Path) -> None:
    text, outcome = told(tmp_path, "--pace", "0", "--seed", "11")
    assert "clocks_started" not in text and "(t " not in text and "table:" not in text
    assert re.search(r"^(Ana|Bia) plays \[\d\|\d\] as the lead: count \d+", text, re.M)
    assert re.search(r"^   ends: .* = count \d+.* · Clocks: Ana \d+:\d\d", text, re.M)
    assert re.search(r"takes \d+ \(Ana \d+ · Bia \d+\)", text)
    rounds = outcome["rounds"]
    assert len(re.findall(r"^Round \d+ over — ", text, re.M)) == len(rounds)  # the last one included
    for number, past in enumerate(rounds, 1):
        block = text[text.index(f"Round {number} over — ") :]
        if past["end"] == "domino":
            assert block.startswith(f"Round {number} over — {NAMES[past['domino_by']]} went out (domino).")
        if isinstance(past["auction"], dict):
            assert f"for {past['auction']['bid']}, paid {past['auction']['paid']}" in block.split("\n\n")[0]
    points = outcome["points"]
    reason = {"resign": "resignation"}.get(outcome["reason"], outcome["reason"])
    result = f"Match over: {NAMES[outcome['winner']]} won by {reason} (Ana {points[0]}, Bia {points[1]})"
    assert result in text


def test_501_is_told_in_table_words_with_hand_summaries_and_names(tmp_path: Path) -> None:
    text, outcome = told(tmp_path, "--game", "501", "--pace", "0", "--seed", "3")
    assert "contract (bid" not in text and "talon [" not in text
    assert re.search(r"^(Ana|Bia|Caio) wins the bidding at \d+( blind)?; the talon: \S+ \S+ \S+$", text, re.M)
    assert re.search(r"^(Ana|Bia|Caio) declares (spades|hearts|diamonds|clubs|no-trump), target \d+$", text, re.M)
    assert re.search(r"^  trick 1: \S+ \S+ \S+ → (Ana|Bia|Caio) wins it$", text, re.M)
    hands = re.findall(r"^Hand \d+ over — .*\n(?:  .*\n)*", text, re.M)
    assert len(hands) == len(outcome["hands"])
    for block, hand in zip(hands, outcome["hands"], strict=True):
        for seat, name in enumerate(NAMES):
            assert re.search(rf"^  {name} .* {hand['points'][seat]:>3} ", block, re.M) or hand["abandoned"], block
    scores = ", ".join(f"{name} {score}" for name, score in zip(NAMES, outcome["scores"], strict=True))
    winners = " and ".join(NAMES[s] for s in outcome["winners"])
    assert f"Match over: {winners} won ({scores})" in text


def test_the_demo_is_paced_by_default_and_longer_on_summaries(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(demo, "_pause", pauses.append)
    assert main(["demo", "--seed", "11"]) == 0
    told = capsys.readouterr().out
    assert set(pauses) <= {0, 0.6, 0.6 * demo.SUMMARY_PAUSES} and 0.6 in pauses
    # one long pause per round summary; the last round's is held together with the result
    assert pauses.count(0.6 * demo.SUMMARY_PAUSES) == len(re.findall(r"^Round \d+ over — ", told, re.M))
    paced = len(pauses)
    assert main(["demo", "--seed", "11", "--pace", "0"]) == 0
    assert len(pauses) > paced and set(pauses[paced:]) == {0}
