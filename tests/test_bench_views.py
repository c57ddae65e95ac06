"""`tablehall bench views` as a real process: a small run prints both forms of both games' views."""

from __future__ import annotations

from tests.test_cli_edges import run


def test_a_small_bench_prints_each_games_typed_and_json_figures() -> None:
    ran = run("bench", "views", "--matches", "1", stdin="")
    assert ran.code == 0, ran.err[-3000:]
    assert "Traceback" not in ran.err
    words = ran.out.split()  # a narrow terminal wraps the table's cells
    assert all(word in words for word in ("JSON", "typed", "501", "build", "bytes")), ran.out
    assert ran.out.count("typed") == 2 and ran.out.count("JSON") == 2, ran.out
