"""The numbered list of actions a seat may take now, and the typed commands of the terminal client.

Spectacular Bid's `legal` lists every action; 501♠ summarizes bids and declarations as ranges, so the
menu offers the minimum bid and one ready-made declaration per trump, and the player may type others:
`bid 85`, `declare H 100 JS 9D` (trump, target, then one card for each opponent in seat order).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tablehall import bots
from tablehall.render import five_label, sb_label
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
        summary = next(a for a in view.get("legal", []) if a.get("do") == "declare")
        to: list[int] = summary["give"]["to"]
        if len(words) != 3 + len(to) or not words[2].isdigit():
            raise BadInput(f"write: declare TRUMP TARGET then {len(to)} cards, e.g. declare H 100 JS 9D")
        gifts = [w.upper() for w in words[3:]]
        give = {str(seat): c for seat, c in zip(to, gifts, strict=True)}
        return {"do": "declare", "trump": words[1].upper(), "target": int(words[2]), "give": give}
    raise BadInput(
        f"{text.strip()!r} is not a choice: type a number (1 to {len(items)}), r for the rules, q to {quit_words(view)}"
    )
