"""The numbered list of actions a seat may take now, and the typed commands of the terminal client.

Spectacular Bid's `legal` lists every action; 501♠ summarizes bids and declarations as ranges, so the
menu offers the minimum bid and one ready-made declaration per trump, and the player may type others:
`bid 85`, `declare H 100 J♠ 9♦` (trump, target, then one card for each opponent in seat order). Cards are
typed as they are shown (`10♣`), or with a letter for the suit (`10c`, `10C`) or the record's code (`TC`);
a card alone (`10♣`, or `play 10♣`) plays it, and `K♥ m` (or `marriage`) plays it announcing the marriage.
Trumps: `H`, `♥`, `hearts`, `NT`, `no-trump`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tablehall import bots
from tablehall.render import SUITS, TRUMP_NAMES, five_label, sb_label
from workers.games.catalog import FIVE_OH_ONE

View = dict[str, Any]
Action = dict[str, Any]

HIDDEN = frozenset({"resign"})
"""Never numbered: `q` resigns (see `quit_words`)."""
RESIGN = {"do": "resign"}


def quit_words(view: View) -> str:
    """What `q` does at this view: resign where the game allows it (Spectacular Bid), otherwise leave the
    table while the match goes on (501♠ has no resignation; `abandon` gives up a contract, not the game)."""
    return "resign" if RESIGN in view.get("legal", []) else "leave the table; the match goes on"


@dataclass(frozen=True, slots=True)
class Item:
    label: str
    action: Action


def menu(view: View, names: Sequence[str]) -> list[Item]:
    if bots.is_over(view):
        return []
    legal: list[Action] = [a for a in view.get("legal", []) if a.get("do") not in HIDDEN]
    if view.get("game") == FIVE_OH_ONE:
        return _menu_501(view, legal, names)
    counts = view.get("counts") or [None] * len(view.get("legal", []))
    items = []
    for action, count in zip(view.get("legal", []), counts, strict=False):
        if action.get("do") not in HIDDEN:
            items.append(Item(sb_label(action, count, view), action))
    return items


def _menu_501(view: View, legal: list[Action], names: Sequence[str]) -> list[Item]:
    items: list[Item] = []
    tail: list[Item] = []
    for action in legal:
        do = action["do"]
        if do == "bid":
            lowest = action["amount"]["min"]
            top = action["amount"]["max"]
            items.append(Item(f"bid {lowest}   (or type: bid N, {lowest}–{top})", {"do": "bid", "amount": lowest}))
        elif do == "declare":
            hand = view.get("hand") or []
            for trump in action["trump"]:
                made = bots.declaration(action, hand, view, random.Random(0), greedy=True, trump=trump)
                items.append(Item(five_label(made, names), made))
            items[-1] = Item(items[-1].label + "   (or type: declare TRUMP TARGET CARD CARD)", items[-1].action)
        elif do == "abandon":
            tail.append(Item(five_label(action, names), action))
        else:
            items.append(Item(five_label(action, names), action))
    return items + tail


class BadInput(ValueError):
    """What the player typed is not a choice; the message says what would be."""


def parse(text: str, items: Sequence[Item], view: View) -> Action:
    """The action a typed line asks for: a number from the menu, or a 501 `bid`/`declare` command."""
    words = text.split()
    if not words:
        raise BadInput("type the number of an action")
    if words[0].isdigit():
        index = int(words[0])
        if not 1 <= index <= len(items):
            raise BadInput(f"no action {index}: choose 1 to {len(items)}")
        return items[index - 1].action
    kinds = {item.action["do"] for item in items}
    head = words[0].lower()
    if head == "bid" and "bid" in kinds and len(words) == 2 and words[1].isdigit():
        return {"do": "bid", "amount": int(words[1])}
    if head == "declare" and "declare" in kinds:
        return _declare(words, view)
    if view.get("game") == FIVE_OH_ONE and "play" in kinds:
        played = _play(words[1:] if head == "play" else words, items)
        if played is not None:
            return played
    raise BadInput(
        f"{text.strip()!r} is not a choice: type a number (1 to {len(items)}), r for the rules, q to {quit_words(view)}"
    )


RANKS = {"A": "A", "K": "K", "Q": "Q", "J": "J", "9": "9", "10": "T", "T": "T"}
SUIT_OF = {**{s: s for s in SUITS}, **{symbol: s for s, symbol in SUITS.items()}}
TRUMPS = {
    **{code: code for code in TRUMP_NAMES},
    **{name.upper(): code for code, name in TRUMP_NAMES.items()},
    **{symbol: s for s, symbol in SUITS.items()},
    "NOTRUMP": "NT",
}


def card_code(text: str) -> str | None:
    """A card as typed: `10♣`, `10c`, `10C`, `TC`, `q♥`, `QH` → the record's code (`TC`, `QH`); None if no card."""
    typed = text.strip().upper()
    rank, suit = typed[:-1], typed[-1:]
    if rank in RANKS and suit in SUIT_OF:
        return RANKS[rank] + SUIT_OF[suit]
    return None


def _play(words: list[str], items: Sequence[Item]) -> Action | None:
    """`10♣` or `K♥ m`: the play of that card (with the marriage when asked) if it is on the menu."""
    if not words or len(words) > 2 or (code := card_code(words[0])) is None:
        return None
    marriage = len(words) == 2 and words[1].lower() in ("m", "marriage", "marry")
    if len(words) == 2 and not marriage:
        return None
    for item in items:
        action = item.action
        if action["do"] == "play" and action["card"] == code and bool(action.get("marriage")) == marriage:
            return action
    what = "with a marriage" if marriage else "now"
    raise BadInput(f"you cannot play {words[0]} {what}: choose one of the numbered plays")


def _declare(words: list[str], view: View) -> Action:
    summary = next(a for a in view.get("legal", []) if a.get("do") == "declare")
    to: list[int] = summary["give"]["to"]
    example = "declare H 100 J♠ 9♦"
    if len(words) != 3 + len(to) or not words[2].isdigit():
        raise BadInput(f"write: declare TRUMP TARGET then {len(to)} cards, e.g. {example}")
    trump = TRUMPS.get(words[1].upper())
    if trump is None:
        raise BadInput(f"{words[1]!r} is no trump: write H, D, C, S (or ♥ ♦ ♣ ♠, hearts …) or NT, e.g. {example}")
    gifts = [card_code(w) for w in words[3:]]
    unknown = [w for w, code in zip(words[3:], gifts, strict=True) if code is None]
    if unknown:
        raise BadInput(f"{unknown[0]!r} is no card: write it as shown (10♣, Q♥) or as 10c, TC, QH")
    give = {str(seat): c for seat, c in zip(to, gifts, strict=True)}
    return {"do": "declare", "trump": trump, "target": int(words[2]), "give": give}
