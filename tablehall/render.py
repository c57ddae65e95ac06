"""Text views for the terminal client and the bot: a seat's view JSON as plain lines.

Nothing here talks to the service. Clocks are shown as they read *now*: the view carries match times
(milliseconds since the match was created), and `MatchTime` maps them onto this machine's clock.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from workers.games.catalog import FIVE_OH_ONE

View = dict[str, Any]
Action = dict[str, Any]

SUITS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
TRUMP_NAMES = {"S": "spades", "H": "hearts", "D": "diamonds", "C": "clubs", "NT": "no-trump"}


class MatchTime:
    """This machine's estimate of the match's own time (ms since creation).

    Each update whose decision started at `decision_since_ms` reached us after that instant, so
    `local - decision_since_ms` bounds the offset from above; the smallest bound seen is kept (it is
    late by no more than one network hop, which makes a shown clock a hair generous, never short).
    """

    def __init__(self, created_local_ms: float | None = None) -> None:
        self.offset = created_local_ms

    @staticmethod
    def local_ms() -> float:
        return time.monotonic() * 1000

    def observe(self, view: View) -> None:
        since = view.get("decision_since_ms")
        if since is not None:
            bound = self.local_ms() - since
            self.offset = bound if self.offset is None else min(self.offset, bound)

    def now(self) -> float | None:
        return None if self.offset is None else self.local_ms() - self.offset


def seat_name(names: Sequence[str], seat: int | None) -> str:
    if seat is None:
        return "nobody"
    return names[seat] if 0 <= seat < len(names) else f"seat {seat}"


def _mmss(ms: float) -> str:
    tenths = round(max(0.0, ms) / 100)  # round first, so 59.96 s reads 1:00.0, never 0:60.0
    minutes, tenths = divmod(tenths, 600)
    return f"{minutes}:{tenths / 10:04.1f}"


# --- Spectacular Bid ---------------------------------------------------------------------------


def tile(text: str) -> str:
    a, _, b = text.partition("-")
    return f"[{a}|{b}]"


def clocks(view: View, now: float | None) -> list[str]:
    """Each player's bank, and the running decision's delay, as they read at `now`."""
    out = []
    running = view.get("clock_running")
    for seat, bank in enumerate(view["banks_ms"]):
        if seat == running and view.get("decision_since_ms") is not None and now is not None:
            elapsed = now - view["decision_since_ms"]
            delay_left = view["delay_ms"] - elapsed
            bank_left = bank - max(0.0, -delay_left)
            out.append(f"bank {_mmss(bank_left)} ▶ delay {max(0.0, delay_left) / 1000:.1f}s")
        else:
            out.append(f"bank {_mmss(bank)}" + (" (stopped)" if running is None else ""))
    return out


def clock_line(view: View, names: Sequence[str], now: float | None) -> str:
    return "clocks: " + " · ".join(f"{seat_name(names, s)} {c}" for s, c in enumerate(clocks(view, now)))


def layout_lines(layout: View) -> list[str]:
    if layout.get("lead") is None:
        return ["Layout: empty"]
    spinner = layout.get("spinner")
    lines: dict[str, list[str]] = layout["lines"]

    def shown(t: str, flip: bool = False) -> str:
        a, _, b = t.partition("-")
        text = tile(f"{b}-{a}") if flip else tile(t)
        return f"{text}*" if spinner is not None and a == b == str(spinner) else text

    west = [shown(t, flip=True) for t in reversed(lines["W"])]
    east = [shown(t) for t in lines["E"]]
    main = " ".join([*west, f"({shown(layout['lead'])})", *east])
    ends = " · ".join(f"{end} {pip}" for end, pip in layout["open_ends"].items()) or "none"
    out = [f"Layout:  W … {main} … E"]
    if spinner is not None:
        for arm in ("N", "S"):
            arm_tiles = " ".join(shown(t) for t in lines[arm]) or "—"
            out.append(f"  arm {arm}: {arm_tiles}")
        out.append(f"  spinner: {tile(f'{spinner}-{spinner}')} (marked *)")
    count = layout["count"]
    scored = count > 0 and count % 5 == 0
    out.append(f"  open ends: {ends}   count {count}" + (" — scores!" if scored else ""))
    return out


def sb_lines(view: View, names: Sequence[str], now: float | None, show_hand: bool = True) -> list[str]:
    me = view.get("seat")
    turn = view.get("turn")
    out = [f"Spectacular Bid — round {view['round']}, {view['phase']}"]
    for seat, (points, clock) in enumerate(zip(view["points"], clocks(view, now), strict=True)):
        mark = "▶" if seat == turn else " "
        you = " (you)" if seat == me and show_hand else ""
        tiles = view["hand_sizes"][seat]
        out.append(f" {mark} {seat_name(names, seat)}{you}: {points} pts, {tiles} tiles, {clock}")
    out.append(f"Boneyard: {view['boneyard_size']} tile{'' if view['boneyard_size'] == 1 else 's'}")
    jockey = view.get("jockey")
    if jockey is not None:
        out.append(f"Jockey (lead privilege): {seat_name(names, jockey)}")
    auction = view.get("auction")
    if auction:
        out.append(f"Auction: {seat_name(names, auction['bidder'])} bids {auction['bid']}")
    out += layout_lines(view["layout"])
    if show_hand and view.get("hand") is not None:
        out.append("Your hand: " + " ".join(tile(t) for t in view["hand"]))
    if view.get("hand_over"):
        out.append(f"Waiting for {seat_name(names, turn)} to take the device and reveal (clock stopped)")
    return out


def sb_label(action: Action, count: int | None, view: View) -> str:
    do = action["do"]
    if do == "play":
        where = f"on {action['end']}" if action.get("end") else f"as the lead ({action['tile'][0]} at W)"
        scores = f", scores {count}" if count and count % 5 == 0 else ""
        return f"play {tile(action['tile'])} {where} → count {count}{scores}"
    if do == "draw":
        return f"draw from the boneyard ({view['boneyard_size']} left)"
    labels = {
        "ready": "Continue (ready to start the clocks)",
        "reveal": "reveal my tiles (take the device)",
        "decline": "decline (the jockey leads free)",
        "accept": "accept the bid",
    }
    if do in ("bid", "raise"):
        return f"{do} {action['amount']}"
    return labels.get(do, str(do))


# --- 501♠ ----------------------------------------------------------------------------------------


def card(code: str) -> str:
    rank = "10" if code[0] == "T" else code[0]
    return f"{rank}{SUITS.get(code[1], code[1])}"


def cards(codes: Sequence[str]) -> str:
    return " ".join(card(c) for c in codes)


def five_lines(view: View, names: Sequence[str], show_hand: bool = True, now: float | None = None) -> list[str]:
    me = view.get("seat")
    hand_no = len(view.get("hands", [])) + (view["phase"] not in ("deal", "over"))
    out = [f"501♠ — hand {hand_no}, dealer {seat_name(names, view['dealer'])}, {view['phase']}"]
    for seat, score in enumerate(view["scores"]):
        mark = "▶" if seat == view.get("turn") else " "
        you = " (you)" if seat == me and show_hand else ""
        out_note = " (sits out)" if seat == view.get("sitting_out") else ""
        out.append(f" {mark} {seat_name(names, seat)}{you}: {score}{out_note}")
    calls = [f"{seat_name(names, c['seat'])} {'pass' if c.get('pass') else c['bid']}" for c in view["calls"]]
    if calls:
        out.append("Bids: " + " · ".join(calls))
    if view.get("talon") is not None:
        out.append("Talon: " + cards(view["talon"]))
    if view.get("declarer") is not None:
        contract = f"Contract: {seat_name(names, view['declarer'])}, bid {view['bid']}"
        if view.get("target") is not None:
            contract += f", target {view['target']}, trump {TRUMP_NAMES.get(view['trump'], view['trump'])}"
        out.append(contract + (" (blind: doubled)" if view.get("blind") else ""))
    if view.get("marriages"):
        shown = [f"{seat_name(names, m['seat'])} {SUITS[m['suit']]} {m['value']}" for m in view["marriages"]]
        out.append("Marriages: " + " · ".join(shown))
    if view.get("tricks"):
        last = view["tricks"][-1]
        out.append(f"Last trick ({len(view['tricks'])}/8): {cards(last['cards'])} → {seat_name(names, last['winner'])}")
    if view["phase"] == "tricks":
        trick = " · ".join(f"{seat_name(names, t['seat'])} {card(t['card'])}" for t in view["trick"]) or "—"
        out.append(f"Trick: {trick}")
    if show_hand and me is not None and view["phase"] not in ("deal", "over"):
        hand = view.get("hand")
        out.append("Your cards: " + ("face down (blind)" if hand is None else cards(hand) or "—"))
    running, deadline = view.get("clock_running"), view.get("deadline_ms")
    if running is not None and deadline is not None and now is not None:
        out.append(f"Time to decide: {seat_name(names, running)} {max(0.0, deadline - now) / 1000:.1f}s")
    return out


def five_label(action: Action, names: Sequence[str]) -> str:
    do = action["do"]
    if do == "play":
        text = f"play {card(action['card'])}"
        return text + " announcing the marriage" if action.get("marriage") else text
    if do == "declare":
        gifts = ", ".join(f"{card(c)} to {seat_name(names, int(s))}" for s, c in action["give"].items())
        return f"declare {TRUMP_NAMES[action['trump']]}, target {action['target']}, give {gifts}"
    if do == "bid":
        return f"bid {action['amount']}"
    labels = {
        "look": "look at my cards (no more blind bid)",
        "pass": "pass (final)",
        "abandon": "abandon the hand (you add your bid, each opponent −25)",
    }
    return labels.get(do, str(do))


# --- both ------------------------------------------------------------------------------------------


def view_lines(view: View, names: Sequence[str], now: float | None, show_hand: bool = True) -> list[str]:
    if view.get("game") == FIVE_OH_ONE:
        return five_lines(view, names, show_hand, now)
    return sb_lines(view, names, now, show_hand)


def result_line(view: View, names: Sequence[str]) -> str:
    if view.get("game") == FIVE_OH_ONE:
        winners = " and ".join(seat_name(names, s) for s in view.get("winners", [])) or "nobody"
        scores = ", ".join(f"{seat_name(names, s)} {v}" for s, v in enumerate(view["scores"]))
        return f"Match over: {winners} won ({scores})"
    if view.get("status") == "voided":
        return f"Match over: voided ({view.get('void_reason')}), no result"
    points = ", ".join(f"{seat_name(names, s)} {p}" for s, p in enumerate(view["points"]))
    return f"Match over: {seat_name(names, view.get('winner'))} won by {view.get('reason')} ({points})"


def describe(action: Action, after: View) -> str:
    """One short line for a move just made (the bot's log)."""
    do = action["do"]
    if after.get("game") == FIVE_OH_ONE:
        if do == "play":
            return f"play {card(action['card'])}" + (" (marriage)" if action.get("marriage") else "")
        if do == "declare":
            return f"declare {TRUMP_NAMES[action['trump']]}, target {action['target']}"
        return f"bid {action['amount']}" if do == "bid" else do
    if do == "play":
        count = after["layout"]["count"]
        where = f" on {action['end']}" if action.get("end") else " (lead)"
        return f"play {tile(action['tile'])}{where}, count {count}" + (" — scores" if count and count % 5 == 0 else "")
    if do in ("bid", "raise"):
        return f"{do} {action['amount']}"
    return str(do)
