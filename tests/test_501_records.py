"""RULES.md F-10 as full records, and the crafted 501 records replayed through `replay`."""

from __future__ import annotations

from tests.f501 import load, run


def test_f10_worked_example_replays_exactly() -> None:
    expected = load("examples/501-seed-example.out.json")
    out = run(load("examples/501-seed-example.json"))
    assert out == expected
    assert out["scores"] == [701, 469, 481]
    assert out["hands"][0]["points"] == [88, 32, 20]  # 68 captured + a non-trump marriage of 20


def test_f10_made_contract_variant_is_301() -> None:
    """Had A (blind, target 100) made it: 501 − 2×100 = 301; defenders still pay their own points."""
    out = run(load("501-made-contract.json"))
    assert out["scores"] == [301, 501, 466]
    hand = out["hands"][0]
    assert hand["made"] is True and hand["blind"] is True
    assert hand["points"] == [125, 0, 35]  # 85 captured + 40 for the trump marriage
    assert sum(hand["points"]) == 120 + 40


def test_crafted_records_match_their_golden_outputs() -> None:
    from tests.conftest import RECORDS

    names = sorted(p.name for p in RECORDS.glob("501-*.json") if not p.name.endswith(".out.json"))
    checked = 0
    for name in names:
        golden = RECORDS / name.replace(".json", ".out.json")
        if golden.exists():
            assert run(load(name)) == load(golden.name), name
            checked += 1
    assert checked >= 10


def test_a_void_is_named_void_reason_in_both_games() -> None:
    """One name across games: a voided 501♠ game prints `void_reason`, as Spectacular Bid and both views do,
    beside the documented `status`, `scores`, `winners` and `hands` (no ad-hoc `void` or `reason: void`)."""
    five = run(load("501-void.json"))
    bid = run(load("sb-void.json"))
    assert (five["status"], five["void_reason"]) == (bid["status"], bid["void_reason"]) == ("voided", "worker_down")
    assert {"status", "scores", "winners", "hands"} <= five.keys()
    assert "void" not in five and "void" not in bid
    assert five.get("reason") is None
