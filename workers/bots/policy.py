"""The random and greedy policies, working only from a seat's view JSON (the dict the service sends).

Greedy play:
- Spectacular Bid: the play whose count (`view["counts"]`) is the highest positive multiple of 5, else a
  random play; in the lead auction it declines or accepts (never pays for the lead); it always draws
  when drawing is all it can do.
- 501♠ (a simple heuristic): look at the cards before bidding; bid the minimum when the hand's card
  points plus marriages (K+Q of a suit: 20) reach 40, else pass; declare the suit with the most cards
  (then points) as trump at the bid, giving away the two least valuable non-trump cards; in tricks,
  announce a marriage when leading if possible, otherwise lead the highest card; when following, win
  with the cheapest winning card, else throw the cheapest card.
Random play picks uniformly among the legal actions (501 bids: the minimum, or pass).
"""

from __future__ import annotations

import random
from typing import Any

from workers.games.catalog import FIVE_OH_ONE

View = dict[str, Any]
Action = dict[str, Any]

NEVER = frozenset({"resign", "abandon"})
RANKS = "ATKQJ9"
"""501♠ ranks, highest first (F-1)."""
VALUES = {"A": 11, "T": 10, "K": 4, "Q": 3, "J": 2, "9": 0}


def is_over(view: View) -> bool:
    """True once the match has ended (either game)."""
    return view.get("status", "in_progress") != "in_progress" or view.get("phase") == "over"


def choose(view: View, rng: random.Random, greedy: bool) -> Action | None:
    """One action from `view["legal"]` for this seat, or None when there is nothing to do now."""
    if is_over(view):
        return None
    if view.get("game") == FIVE_OH_ONE:
        return _choose_501(view, rng, greedy)
    return _choose_sb(view, rng, greedy)


# --- Spectacular Bid ---------------------------------------------------------------------------


def _choose_sb(view: View, rng: random.Random, greedy: bool) -> Action | None:
    legal: list[Action] = view.get("legal", [])
    counts: list[int | None] = view.get("counts", [None] * len(legal))
    options = [(a, c) for a, c in zip(legal, counts, strict=False) if a.get("do") not in NEVER]
    by_kind = {a["do"]: a for a, _ in options}
    if "ready" in by_kind:
        return by_kind["ready"]
    if "reveal" in by_kind:
        # a bot only takes the device when the clock waits for it (shared device)
        return by_kind["reveal"] if view.get("hand_over") else None
    if not options:
        return None
    plays = [(a, c) for a, c in options if a["do"] == "play"]
    if greedy and plays:
        scoring = [(a, c) for a, c in plays if c is not None and c > 0 and c % 5 == 0]
        if scoring:
            best = max(c for _, c in scoring if c is not None)
            return rng.choice([a for a, c in scoring if c == best])
        return rng.choice([a for a, _ in plays])
    if greedy:
        for kind in ("decline", "accept", "draw"):
            if kind in by_kind:
                return by_kind[kind]
    return rng.choice([a for a, _ in options])


# --- 501♠ ----------------------------------------------------------------------------------------


def _rank(card: str) -> int:
    return len(RANKS) - RANKS.index(card[0])


def _value(card: str) -> int:
    return VALUES[card[0]]


def _marriages(hand: list[str]) -> list[str]:
    return [suit for suit in "SHDC" if f"K{suit}" in hand and f"Q{suit}" in hand]


def _choose_501(view: View, rng: random.Random, greedy: bool) -> Action | None:
    legal: list[Action] = [a for a in view.get("legal", []) if a.get("do") not in NEVER]
    if not legal:
        return None
    kinds = {a["do"]: a for a in legal}
    if view.get("turn") != view.get("seat"):
        return None  # only `look` is possible out of turn: decide at our turn
    hand: list[str] = view.get("hand") or []
    if "declare" in kinds:
        return declaration(kinds["declare"], hand, view, rng, greedy)
    if "pass" in kinds or "bid" in kinds:
        if greedy and "look" in kinds:
            return kinds["look"]
        lowest = kinds["bid"]["amount"]["min"] if "bid" in kinds else None
        choices: list[Action] = [a for a in legal if a["do"] in ("look", "pass")]
        if lowest is not None:
            choices.append({"do": "bid", "amount": lowest})
        if not greedy:
            return rng.choice(choices)
        strength = sum(map(_value, hand)) + 20 * len(_marriages(hand))
        if lowest is not None and strength >= 40 and lowest <= 66 + strength // 4:
            return {"do": "bid", "amount": lowest}
        return kinds.get("pass") or rng.choice(choices)
    plays = [a for a in legal if a["do"] == "play"]
    if not plays:
        return rng.choice(legal)
    if not greedy:
        return rng.choice(plays)
    return _trick_play(plays, view)


def declaration(
    summary: Action, hand: list[str], view: View, rng: random.Random, greedy: bool, trump: str | None = None
) -> Action:
    """A concrete `declare` from the legal summary: at the bid, the trump given or chosen, and one card
    for each opponent (greedy: the least valuable cards outside trump and marriages)."""
    to: list[int] = summary["give"]["to"]
    target = int(view.get("bid") or summary["target"]["min"])
    if not greedy:
        trump = trump or rng.choice(summary["trump"])
        given = rng.sample(hand, len(to))
    else:
        if trump is None:
            trump = max("SHDC", key=lambda s: (sum(c[1] == s for c in hand), sum(_value(c) for c in hand if c[1] == s)))
        keep = {f"{r}{s}" for s in _marriages(hand) for r in "KQ"}
        spare = sorted(hand, key=lambda c: (c[1] == trump, c in keep, _value(c), _rank(c)))
        given = spare[: len(to)]
    give = {str(seat): card for seat, card in zip(to, given, strict=True)}
    return {"do": "declare", "trump": trump, "target": target, "give": give}


def _trick_play(plays: list[Action], view: View) -> Action:
    trick: list[dict[str, Any]] = view.get("trick", [])
    trump = view.get("trump")
    if not trick:
        announced = [a for a in plays if a.get("marriage")]
        if announced:
            return max(announced, key=lambda a: 1 if a["card"][1] == trump else 0)
        return max(plays, key=lambda a: (_rank(a["card"]), _value(a["card"])))
    led = trick[0]["card"][1]

    def strength(card: str) -> tuple[int, int]:
        return (2 if card[1] == trump else 1 if card[1] == led else 0, _rank(card))

    best = max(strength(t["card"]) for t in trick)
    winners = [a for a in plays if strength(a["card"]) > best]
    if winners:
        return min(winners, key=lambda a: strength(a["card"]))
    return min(plays, key=lambda a: (_value(a["card"]), _rank(a["card"])))
