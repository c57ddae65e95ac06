"""What just happened at the table, in the table's own words, told from one seat's successive views.

`Narrator.see(view)` compares each view with the one before (every view of a seat's stream, in order) and
returns a `Told`: short lines for the moves (plays and what they counted, draws, bids, auctions and what
was paid, contracts, tricks, marriages) and, when a round or a hand has just ended, its summary (who went out
or the block with both hands and the payment; the auction; each 501♠ player's points, made or not, and the
deltas). Everything comes from views: a block's two hands are the viewer's own tiles and the tiles that are
neither on the layout nor in the viewer's hand (the boneyard is empty at a block, SB-6/SB-8).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tablehall.render import SUITS, TRUMP_NAMES, card, cards, hand_number, is_you, plural, result_line, seat_name, tile
from workers.games.catalog import FIVE_OH_ONE

View = dict[str, Any]
ALL_TILES = frozenset(frozenset((a, b)) for a in range(7) for b in range(a, 7))


@dataclass
class Told:
    lines: list[str] = field(default_factory=list)
    """The moves since the last view, one line each."""
    summary: list[str] = field(default_factory=list)
    """A round's or a hand's summary (the caller holds it on screen), then the result once the match is over."""


@dataclass
class Narrator:
    names: Sequence[str]
    me: int | None = None
    before: View | None = None
    start_points: list[int] = field(default_factory=list)
    """Spectacular Bid: the points when the current round was dealt."""

    def see(self, view: View) -> Told:
        told = Told()
        before, self.before = self.before, view
        if view.get("game") == FIVE_OH_ONE:
            self._five(before, view, told)
        else:
            self._sb(before, view, told)
        if _over(view) and (before is None or not _over(before)):
            told.summary.append(result_line(view, self.names, self.me))
        return told

    def name(self, seat: int | None) -> str:
        return seat_name(self.names, seat, self.me)

    def does(self, seat: int | None, word: str, third: str | None = None) -> str:
        """`You bid`, `Bot bids`, `Friend (you) bids`."""
        return f"{self.name(seat)} {word if is_you(self.names, seat) else (third or word + 's')}"

    def points(self, view: View, key: str = "points") -> str:
        return " · ".join(f"{self.name(s)} {p}" for s, p in enumerate(view[key]))

    # --- Spectacular Bid -----------------------------------------------------------------------

    def _sb(self, before: View | None, view: View, told: Told) -> None:
        if before is None or (view["round"] != before["round"] and view["phase"] != "deal"):
            self.start_points = list(view["points"])
            if view["round"] > 0 and (before is not None or view["phase"] == "ready"):  # not a join mid-round
                jockey = f"; {self.name(view['jockey'])} is the jockey" if view.get("jockey") is not None else ""
                told.lines.append(f"— Round {view['round']} is dealt: 7 tiles each, 14 in the boneyard{jockey} —")
            return
        if view["round"] == before["round"]:
            self._sb_moves(before, view, told)
        if len(view.get("past_rounds", [])) > len(before.get("past_rounds", [])):
            told.summary += self.round_summary(before, view)
        elif view.get("final_round") and not before.get("final_round"):
            told.summary += self.round_summary(before, view, final=True)  # the round that ended the match

    def _sb_moves(self, before: View, view: View, told: Told) -> None:
        mover = before.get("turn")
        drawn = before["boneyard_size"] - view["boneyard_size"]
        if drawn > 0:
            told.lines.append(f"{self.does(mover, 'draw')} {plural(drawn, 'tile')} ({view['boneyard_size']} left)")
        laid = _tiles_on(view["layout"]) - _tiles_on(before["layout"])
        for new in laid:
            told.lines.append(self._play_line(before, view, mover, new))
        auction, old = view.get("auction"), before.get("auction")
        if view["phase"] == "auction" and auction and auction != old:
            told.lines.append(f"{self.does(auction['bidder'], 'raise' if old else 'bid')} {auction['bid']}")
        if before["phase"] == "auction" and view["phase"] != "auction":
            told.lines.append(self._auction_line(before, view))

    def _play_line(self, before: View, view: View, mover: int | None, new: frozenset[int]) -> str:
        placed = _placed(view["layout"], new)
        where = f"on {placed[1]}" if placed[1] else "as the lead"
        count = view["layout"]["count"]
        line = f"{self.does(mover, 'play')} {tile(placed[0])} {where}: count {count}"
        if mover is not None:
            gained = view["points"][mover] - before["points"][mover]
            if gained > 0:
                line += f" — {self.does(mover, 'take')} {gained} ({self.points(view)})"
            elif count and count % 5 == 0:
                line += " — nothing left to take"
        return line

    def _auction_line(self, before: View, view: View) -> str:
        standing = before.get("auction")
        jockey = before.get("jockey")
        if not standing:
            other = None if jockey is None else 1 - jockey
            return f"{self.does(other, 'decline')}: {self.name(jockey)}, the jockey, leads free"
        bidder, bid = standing["bidder"], standing["bid"]
        paid = before["points"][bidder] - view["points"][bidder]
        line = f"{self.does(1 - bidder, 'accept')} {bid}: {self.does(bidder, 'pay')} {paid} for the lead"
        if paid < bid:
            line += f" (the jockey's 15 off {bid})"
        return line + f" ({self.points(view)})"

    def round_summary(self, before: View, view: View, final: bool = False) -> list[str]:
        past = view["final_round"] if final else view["past_rounds"][-1]
        number = len(view["past_rounds"]) + (1 if final else 0)
        out = [f"Round {number} over — {self._how(past, view)}"]
        if past["end"] == "block":
            out += self._block(before, view)
        elif past["end"] == "domino":
            out.append(f"  {self.name(past['domino_by'])} played the last tile; tiles left in hand pay nothing.")
        out.append("  " + self._auction_words(past))
        start = self.start_points or before["points"]
        moved = " · ".join(f"{self.name(s)} {p} ({_signed(p - start[s])})" for s, p in enumerate(view["points"]))
        out.append(f"  Points after round {number}: {moved}")
        if view.get("status", "in_progress") == "in_progress":
            nxt = (
                f"{self.name(past['domino_by'])} is the jockey of round {number + 1} (the lead and 15 off its auction)."
                if past["end"] == "domino"
                else f"Round {number + 1} opens with a forced lead (no jockey)."
            )
            out.append("  " + nxt)
        return out

    def _how(self, past: View, view: View) -> str:
        end = past["end"]
        loser = None if view.get("winner") is None else 1 - view["winner"]
        if end == "domino":
            return f"{self.name(past['domino_by'])} went out (domino)."
        if end == "block":
            return "blocked: nobody can play or draw."
        if end == "points":
            return f"{self.name(loser)}'s points ran out."
        if end == "time":
            return f"{self.name(loser)}'s clock ran out."
        if end == "resign":
            return f"{self.name(loser)} resigned."
        return f"{end}."

    def _block(self, before: View, view: View) -> list[str]:
        hands = _block_hands(view)
        out = []
        if hands is not None:
            sums = [sum(_pips(t) for t in hand) for hand in hands]
            shown = " · ".join(
                f"{self.name(s)} {' '.join(_tile(t) for t in hands[s]) or '—'} = {sums[s]}" for s in (0, 1)
            )
            out.append(f"  Hands: {shown}")
        gained = [view["points"][s] - before["points"][s] for s in (0, 1)]
        if max(gained) > 0:
            low = gained.index(max(gained))
            out.append(f"  {self.does(low, 'receive')} {gained[low]} from {self.name(1 - low)} (the lower hand).")
        else:
            out.append("  Nothing is paid.")
        return out

    def _auction_words(self, past: View) -> str:
        auction = past["auction"]
        if auction is None:
            return f"Lead: forced ({self.name(past['lead_by'])} led the highest tile)."
        if auction == "declined":
            return f"Auction: declined; {self.name(past['lead_by'])} led free."
        discount = f" (the jockey's 15 off {auction['bid']})" if auction["paid"] < auction["bid"] else ""
        bought = f"{self.name(auction['winner'])} bought the lead for {auction['bid']}"
        return f"Auction: {bought}, paid {auction['paid']}{discount}."

    # --- 501♠ ----------------------------------------------------------------------------------

    def _five(self, before: View | None, view: View, told: Told) -> None:
        if before is not None and len(view.get("hands", [])) > len(before.get("hands", [])):
            told.summary += self.hand_summary(view)  # the scored view no longer shows the hand's last moves
        elif before is not None and hand_number(view) == hand_number(before):
            self._five_moves(before, view, told)
        if view["phase"] == "bidding" and (before is None or before["phase"] != "bidding"):
            out = view.get("sitting_out")
            sits = "" if out is None else (" and sits out" if out == view["dealer"] else f"; {self.name(out)} sits out")
            told.lines.append(f"— Hand {hand_number(view)}: {self.does(view['dealer'], 'deal')}{sits} —")

    def _five_moves(self, before: View, view: View, told: Told) -> None:
        for call in view["calls"][len(before["calls"]) :]:
            seat = call["seat"]
            said = self.does(seat, "pass", "passes") if call.get("pass") else f"{self.does(seat, 'bid')} {call['bid']}"
            told.lines.append(said)
        if view.get("talon") is not None and before.get("talon") is None and view.get("declarer") is not None:
            won = f"{self.does(view['declarer'], 'win')} the bidding at {view['bid']}" + (
                " blind" if view["blind"] else ""
            )
            told.lines.append(f"{won}; the talon: {cards(view['talon'])}")
        if view.get("target") is not None and before.get("target") is None:
            trump = TRUMP_NAMES.get(view["trump"], view["trump"])
            told.lines.append(f"{self.does(view['declarer'], 'declare')} {trump}, target {view['target']}")
        for married in view.get("marriages", [])[len(before.get("marriages", [])) :]:
            suit = SUITS[married["suit"]]
            told.lines.append(f"{self.does(married['seat'], 'announce')} the {suit} marriage ({married['value']})")
        self._five_cards(before, view, told)

    def _five_cards(self, before: View, view: View, told: Told) -> None:
        done = view.get("tricks", [])[len(before.get("tricks", [])) :]
        seen = len(before.get("trick", []))  # cards of the open trick already told
        for number, trick in enumerate(done, len(before.get("tricks", [])) + 1):
            order = _trick_order(view, trick["leader"])
            for seat, code in list(zip(order, trick["cards"], strict=False))[seen:]:
                told.lines.append(f"{self.does(seat, 'play')} {card(code)}")
            seen = 0
            told.lines.append(f"  trick {number}: {cards(trick['cards'])} → {self.does(trick['winner'], 'win')} it")
        for played in view.get("trick", [])[seen:]:
            told.lines.append(f"{self.does(played['seat'], 'play')} {card(played['card'])}")

    def hand_summary(self, view: View) -> list[str]:
        hand = view["hands"][-1]
        number = len(view["hands"])
        declarer = hand["declarer"]
        out = [f"Hand {number} over — {self._contract_words(hand)}"]
        width = max(len(self.name(s)) for s in range(len(view["scores"])))
        for seat, score in enumerate(view["scores"]):
            delta = hand["deltas"][seat]
            role = " (declarer)" if seat == declarer else ""
            if seat == hand["dealer"] and len(view["scores"]) == 4:
                out.append(f"  {self.name(seat):<{width}}  sits out          {score}")
                continue
            took = f"took {hand['points'][seat]:>3}" if not hand["abandoned"] else "        "
            out.append(f"  {self.name(seat):<{width}}  {took}  {_signed(delta):>5}  {score - delta} → {score}{role}")
        return out

    def _contract_words(self, hand: View) -> str:
        declarer = hand["declarer"]
        if declarer is None:
            return "everyone passed: the hand scores nothing."
        blind = ", blind: doubled" if hand["blind"] else ""
        if hand["abandoned"]:
            return f"{self.does(declarer, 'abandon')} the hand (bid {hand['bid']}{blind}): each opponent −25."
        trump = TRUMP_NAMES.get(hand["trump"], hand["trump"])
        made = "made it" if hand["made"] else "fell short"
        return (
            f"{self.name(declarer)}'s contract: {hand['target']} in {trump} (bid {hand['bid']}{blind}) — "
            f"{self.name(declarer)} took {hand['points'][declarer]}: {made}."
        )


def _trick_order(view: View, leader: int) -> list[int]:
    seats = len(view["scores"])
    out = view.get("sitting_out")
    return [s for s in ((leader + i) % seats for i in range(seats)) if s != out][:3]


def _over(view: View) -> bool:
    return view.get("status", "in_progress") != "in_progress" or view.get("phase") == "over"


def _signed(n: int) -> str:
    return f"+{n}" if n > 0 else ("±0" if n == 0 else f"−{-n}")


def _pips(key: frozenset[int]) -> int:
    return sum(key) if len(key) == 2 else 2 * next(iter(key))


def _tiles_on(layout: View) -> set[frozenset[int]]:
    placed = [layout["lead"]] if layout.get("lead") else []
    for arm in layout["lines"].values():
        placed += arm
    return {_key(t) for t in placed}


def _key(text: str) -> frozenset[int]:
    a, _, b = text.partition("-")
    return frozenset((int(a), int(b)))


def _tile(key: frozenset[int]) -> str:
    pips = sorted(key, reverse=True)
    return tile(f"{pips[0]}-{pips[-1]}")


def _placed(layout: View, key: frozenset[int]) -> tuple[str, str | None]:
    """The tile as it lies and its end (None for the lead)."""
    for end, arm in layout["lines"].items():
        for text in arm:
            if _key(text) == key:
                return text, end
    return layout["lead"], None


def _block_hands(view: View) -> list[list[frozenset[int]]] | None:
    """At a block, both hands from one seat's view: its own tiles, and the rest of the set off the layout."""
    seat, hand = view.get("seat"), view.get("hand")
    if seat is None or hand is None or view["boneyard_size"]:
        return None
    mine = {_key(t) for t in hand}
    theirs = ALL_TILES - mine - _tiles_on(view["layout"])
    hands: list[list[frozenset[int]]] = [[], []]
    hands[seat] = sorted(mine, key=sorted)
    hands[1 - seat] = sorted(theirs, key=sorted)
    return hands
