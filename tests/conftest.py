from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORDS = REPO / "tests" / "records"
"""Crafted records, each with its golden output (`X.out.json`) or the error it must give (`X.err.txt`)."""
EXAMPLES = REPO / "tests" / "examples"
"""The worked examples of docs/RECORDS.md, with the exact output `tablehall replay` prints for them."""
