"""Text views for the terminal client, the demo and the bot: a seat's view JSON as plain lines.

Nothing here talks to the service. Clocks are shown as they read *now*: the view carries match times
(milliseconds since the match was created), and `MatchTime` maps them onto this machine's clock. Every
player is shown by name, with "(you)" on the viewer's own seat.
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
LOW_BANK_MS = 15_000
"""Spectacular Bid: a running clock with less than this left (delay and bank) is shown as low."""
LOW_LIMIT_MS = 5_000
"""501♠: a decision with less than this left of its limit is shown as low."""


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


def plural(n: int, word: str, many: str | None = None) -> str:
    """`1 tile`, `2 tiles`."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def seat_name(names: Sequence[str], seat: int | None, me: int | None = None) -> str:
    """A player's name; the viewer's own seat says "(you)" unless the name already does."""
    if seat is None:
        return "nobody"
    name = names[seat] if 0 <= seat < len(names) else f"Player {seat + 1}"
    return f"{name} (you)" if seat == me and name.lower() != "you" else name


def is_you(names: Sequence[str], seat: int | None) -> bool:
    return seat is not None and 0 <= seat < len(names) and names[seat].lower() == "you"


def verb(names: Sequence[str], seat: int | None, word: str, third: str | None = None) -> str:
    """`You bid 20`, `Bot bids 20`: the name and the verb in agreement."""
    name = seat_name(names, seat)
    return f"{name} {word if is_you(names, seat) else (third or word + 's')}"


def _mmss(ms: float) -> str:
    tenths = round(max(0.0, ms) / 100)  # round first, so 59.96 s reads 1:00.0, never 0:60.0
    minutes, tenths = divmod(tenths, 600)
    return f"{minutes}:{tenths / 10:04.1f}"


def clock_text(ms: float) -> str:
    """A bank as a player reads it: 1:54 above ten seconds, tenths under ten (0:09.3)."""
    tenths = round(max(0.0, ms) / 100)
    if tenths < 100:
        return _mmss(ms)
    whole = tenths // 10
    return f"{whole // 60}:{whole % 60:02d}"


# --- Spectacular Bid ---------------------------------------------------------------------------


def tile(text: str) -> str:
    a, _, b = text.partition("-")
    return f"[{a}|{b}]"


def running_left(view: View, now: float | None) -> tuple[float, float] | None:
    """The running decision's delay and bank left at `now` (Spectacular Bid), or None when no clock runs."""
    running = view.get("clock_running")
    since = view.get("decision_since_ms")
    if running is None or since is None or now is None or "banks_ms" not in view:
        return None
    delay_left = view["delay_ms"] - (now - since)
    return max(0.0, delay_left), max(0.0, view["banks_ms"][running] - max(0.0, -delay_left))


def clocks(view: View, now: float | None) -> list[str]:
    """Each player's clock as it reads at `now`: the bank, and the running decision's delay."""
    out = []
    left = running_left(view, now)
    for seat, bank in enumerate(view["banks_ms"]):
        if seat == view.get("clock_running") and left is not None:
            delay, bank_left = left
            shown = clock_text(bank_left) + " ◀"
            out.append(f"{shown} delay {delay / 1000:.1f}s" if delay else shown)
        else:
            out.append(clock_text(bank))
    return out


def time_left(view: View, now: float | None) -> float | None:
    """What the player on move has left before their deadline (both games), or None."""
    deadline = view.get("deadline_ms")
    if view.get("clock_running") is None or deadline is None or now is None:
        return None
    return max(0.0, float(deadline) - now)


def is_low(view: View, now: float | None) -> bool:
    left = time_left(view, now)
    return left is not None and left < (LOW_LIMIT_MS if view.get("game") == FIVE_OH_ONE else LOW_BANK_MS)


def clock_line(view: View, names: Sequence[str], now: float | None, me: int | None = None) -> str:
    """Both games' clocks in one line ('' when the game has none running or set)."""
    if view.get("game") == FIVE_OH_ONE:
        left = time_left(view, now)
        if left is None:
            return ""
        line = f"Time to decide: {seat_name(names, view['clock_running'], me)} {left / 1000:.1f}s"
    else:
        stopped = "" if view.get("clock_running") is not None else " (stopped)"
        shown = " · ".join(f"{seat_name(names, s, me)} {c}" for s, c in enumerate(clocks(view, now)))
        line = f"Clocks{stopped}: {shown}"
    if is_low(view, now):
        line += f" — {seat_name(names, view['clock_running'], me)}: low on time!"
    return line


def end_values(layout: View) -> list[tuple[str, str, int]]:
    """Each end that has a tile on it, as the count adds it up: (end, shown, value).

    Display only: an arm with no tile shows nothing; a double at an end (or the spinner while one of its line
    sides is free) shows both its halves, so the values add up to the view's count."""
    if layout.get("lead") is None:
        return []
    lines: dict[str, list[str]] = layout["lines"]
    a, _, b = layout["lead"].partition("-")
    if not any(lines.values()):  # a tile alone on the table is counted once
        return [("lead", f"{a}+{b}", int(a) + int(b))]
    out = []
    ends: dict[str, int] = layout["open_ends"]
    for end, pip in sorted(ends.items(), key=lambda item: "WENS".index(item[0])):
        arm = lines.get(end) or []
        if not arm and end in ("N", "S"):
            continue
        outer = arm[-1].split("-") if arm else [a, b]
        double = outer[0] == outer[1]
        out.append((end, f"{pip}+{pip}" if double else str(pip), 2 * pip if double else pip))
    return out


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
    out = [f"Layout:  W … {main} … E"]
    if spinner is not None:
        for arm in ("N", "S"):
            if lines[arm]:
                out.append(f"  arm {arm}: " + " ".join(shown(t) for t in lines[arm]))
        out.append(f"  spinner: {tile(f'{spinner}-{spinner}')} (marked *)")
    count = layout["count"]
    ends = " + ".join(f"{end} {text}" for end, text, _ in end_values(layout)) or "none"
    scored = count > 0 and count % 5 == 0
    out.append(f"  ends: {ends} = count {count}" + (" — scores!" if scored else ""))
    return out


def sb_lines(view: View, names: Sequence[str], show_hand: bool = True) -> list[str]:
    me = view.get("seat") if show_hand else None
    turn = view.get("turn")
    out = [f"Spectacular Bid — round {view['round']}, {view['phase']}"]
    for seat, points in enumerate(view["points"]):
        mark = "▶" if seat == turn else " "
        tiles = plural(view["hand_sizes"][seat], "tile")
        out.append(f" {mark} {seat_name(names, seat, me)}: {points} points, {tiles}")
    out.append(f"Boneyard: {plural(view['boneyard_size'], 'tile')}")
    jockey = view.get("jockey")
    if jockey is not None:
        out.append(f"Jockey (lead privilege): {seat_name(names, jockey, me)}")
    auction = view.get("auction")
    if auction and view["phase"] == "auction":
        out.append(f"Auction: {verb(names, auction['bidder'], 'bid')} {auction['bid']}")
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


def hand_number(view: View) -> int:
    return len(view.get("hands", [])) + (view["phase"] not in ("deal", "over"))


def five_lines(view: View, names: Sequence[str], show_hand: bool = True, now: float | None = None) -> list[str]:
    me = view.get("seat") if show_hand else None
    out = [f"501♠ — hand {hand_number(view)}, dealer {seat_name(names, view['dealer'], me)}, {view['phase']}"]
    for seat, score in enumerate(view["scores"]):
        mark = "▶" if seat == view.get("turn") else " "
        out_note = " (sits out)" if seat == view.get("sitting_out") else ""
        out.append(f" {mark} {seat_name(names, seat, me)}: {score}{out_note}")
    calls = [f"{seat_name(names, c['seat'], me)} {'pass' if c.get('pass') else c['bid']}" for c in view["calls"]]
    if calls:
        out.append("Bids: " + " · ".join(calls))
    if view.get("talon") is not None:
        out.append("Talon: " + cards(view["talon"]))
    if view.get("declarer") is not None:
        contract = f"Contract: {seat_name(names, view['declarer'], me)}, bid {view['bid']}"
        if view.get("target") is not None:
            contract += f", target {view['target']}, trump {TRUMP_NAMES.get(view['trump'], view['trump'])}"
        out.append(contract + (" (blind: doubled)" if view.get("blind") else ""))
    if view.get("marriages"):
        shown = [f"{seat_name(names, m['seat'], me)} {SUITS[m['suit']]} {m['value']}" for m in view["marriages"]]
        out.append("Marriages: " + " · ".join(shown))
    if view.get("tricks"):
        last = view["tricks"][-1]
        winner = seat_name(names, last["winner"], me)
        out.append(f"Last trick ({len(view['tricks'])}/8): {cards(last['cards'])} → {winner}")
    if view["phase"] == "tricks":
        trick = " · ".join(f"{seat_name(names, t['seat'], me)} {card(t['card'])}" for t in view["trick"]) or "—"
        out.append(f"Trick: {trick}")
    if show_hand and view.get("seat") is not None and view["phase"] not in ("deal", "over"):
        hand = view.get("hand")
        out.append("Your cards: " + ("face down (blind)" if hand is None else cards(hand) or "—"))
    if now is not None and (line := clock_line(view, names, now, me)):
        out.append(line)
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


def view_lines(view: View, names: Sequence[str], show_hand: bool = True) -> list[str]:
    """The table as the viewer sees it, without the clocks (those tick on a line of their own)."""
    if view.get("game") == FIVE_OH_ONE:
        return five_lines(view, names, show_hand)
    return sb_lines(view, names, show_hand)


REASONS = {"points": "points", "time": "time", "resign": "resignation"}


def result_line(view: View, names: Sequence[str], me: int | None = None) -> str:
    """The match's result, with every player's name."""
    if view.get("status") == "voided":
        return f"Match over: voided ({view.get('void_reason')}), no result"
    if view.get("game") == FIVE_OH_ONE:
        winners = " and ".join(seat_name(names, s, me) for s in view.get("winners", [])) or "nobody"
        scores = ", ".join(f"{seat_name(names, s, me)} {v}" for s, v in enumerate(view["scores"]))
        return f"Match over: {winners} won ({scores})"
    points = ", ".join(f"{seat_name(names, s, me)} {p}" for s, p in enumerate(view["points"]))
    reason = REASONS.get(view.get("reason") or "", view.get("reason"))
    return f"Match over: {seat_name(names, view.get('winner'), me)} won by {reason} ({points})"


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
