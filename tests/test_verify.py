"""Verifiable shuffles: a finished match's record opens every deal commitment; a tampered deal fails."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from gateway.server import start_gateway
from gateway.workers import Router
from tablehall.client import Client
from tests.conftest import EXAMPLES
from workers.host import MatchHost


async def finished_record(game: str, players: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Play until the first deal is committed and watched, then resign; return the record and commitments."""
    gateway = await start_gateway(Router([MatchHost()]), "127.0.0.1", 0)
    try:
        async with Client(f"127.0.0.1:{gateway.port}") as client:
            created = await client.create_match(game, players)
            seat = client.seat(created.match_id, created.tokens[0])
            published = [c.sha256 async for c in _first_commitments(seat)]
            await seat.act({"do": "resign"})
            return await client.record(created.match_id), published
    finally:
        await gateway.stop(0)


async def _first_commitments(seat: Any) -> Any:
    async for update in seat.updates(0):
        for commitment in update.commitments:
            yield commitment
        return


def verify(tmp_path: Path, record: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record))
    return subprocess.run(
        [sys.executable, "-m", "tablehall.cli", "verify", str(path)], capture_output=True, text=True, timeout=60
    )


def test_a_finished_match_verifies_and_its_commitments_were_published_before(tmp_path: Path) -> None:
    record, published = asyncio.run(finished_record("spectacular-bid", ["Ana", "Bia"]))
    assert [c["sha256"] for c in record["commitments"]] == published
    result = verify(tmp_path, record)
    assert result.returncode == 0, result.stderr
    assert "verified: 1 deal" in result.stdout


def test_a_tampered_deal_is_rejected(tmp_path: Path) -> None:
    record, _ = asyncio.run(finished_record("spectacular-bid", ["Ana", "Bia"]))
    deal = record["rounds"][0]
    deal["boneyard"][0], deal["boneyard"][1] = deal["boneyard"][1], deal["boneyard"][0]
    result = verify(tmp_path, record)
    assert result.returncode == 1
    assert "deal 0 does not match its commitment" in result.stderr


def test_a_record_without_commitments_cannot_be_verified(tmp_path: Path) -> None:
    result = verify(tmp_path, json.loads((EXAMPLES / "sb-opening.json").read_text()))
    assert result.returncode == 2 and "cannot be verified" in result.stderr
