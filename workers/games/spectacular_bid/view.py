"""What one seat, or a spectator, may see of a Spectacular Bid match (SB-2: never a hidden tile)."""

from __future__ import annotations

from dataclasses import dataclass

from workers.games.engine import JSON, Seat
from workers.games.spectacular_bid.actions import Action, Play
from workers.games.spectacular_bid.layout import Layout
from workers.games.spectacular_bid.options import NAME
from workers.games.spectacular_bid.rules import legal_actions, next_deadline
from workers.games.spectacular_bid.state import Phase, Round, State
from workers.games.spectacular_bid.tiles import End, Tile, lead_rank, round_to_five
from workers.games.values import built_fast


@built_fast
@dataclass(frozen=True, slots=True)
class LayoutView:
    lead: str | None
    lines: tuple[tuple[str, tuple[str, ...]], ...]
    spinner: int | None
    open_ends: tuple[tuple[str, int], ...]
    count: int

    @staticmethod
    def of(layout: Layout) -> LayoutView:
        """The layout as every seat and spectator sees it: built once per layout, however many views of
        the same change ask (each seat's and the spectators'), from the last few layouts seen."""
        seen = _SEEN.get(id(layout))
        if seen is not None and seen[0] is layout:
            return seen[1]
        shown = LayoutView._built(layout)
        if len(_SEEN) >= _SEEN_MAX:
            del _SEEN[next(iter(_SEEN))]
        _SEEN[id(layout)] = (layout, shown)
        return shown

    @staticmethod
    def _built(layout: Layout) -> LayoutView:
        lead = layout.placements[0] if layout.placements else None
        lines: dict[End | None, list[str]] = {end: [] for end in End}
        for placed in layout.placements:  # one walk, each tile to its end's line (`Layout.line`'s order)
            lines.setdefault(placed.end, []).append(str(placed))
        return LayoutView(
            str(lead) if lead is not None else None,
            tuple((end.value, tuple(lines[end])) for end in End),
            layout.spinner,
            tuple((end.value, pip) for end, pip in layout.open_ends()),
            layout.count() if lead is not None else 0,
        )

    def to_json(self) -> dict[str, JSON]:
        return {
            "lead": self.lead,
            "lines": {end: list(tiles) for end, tiles in self.lines},
            "spinner": self.spinner,
            "open_ends": dict(self.open_ends),
            "count": self.count,
        }


_SEEN_MAX = 256
_SEEN: dict[int, tuple[Layout, LayoutView]] = {}
"""The views of the layouts seen last, by identity (each entry holds its layout, so an id is never reused
while it is here): a change's views for each seat and its spectators share one."""


@built_fast
@dataclass(frozen=True, slots=True)
class MatchView:
    seat: Seat | None
    status: str
    phase: str
    round: int
    turn: Seat | None
    points: tuple[int, int]
    banks_ms: tuple[int, int]
    clock_running: Seat | None
    decision_since_ms: int | None
    delay_ms: int
    deadline_ms: int | None
    hand: tuple[str, ...] | None
    hand_sizes: tuple[int, int]
    boneyard_size: int
    layout: LayoutView
    jockey: Seat | None
    leader: Seat | None
    auction: tuple[int, Seat] | None
    ready: tuple[Seat, ...]
    hand_over: bool
    winner: Seat | None
    reason: str | None
    void_reason: str | None
    legal: tuple[dict[str, JSON], ...]
    counts: tuple[int | None, ...]
    """For each legal action, the count of the ends after it if it is a play (what it would score)."""
    past_rounds: tuple[dict[str, JSON], ...]
    final_round: dict[str, JSON] | None = None
    """Once the match is over: the round it ended in, summed up as the past ones (None before)."""

    def to_json(self) -> dict[str, JSON]:
        return {
            "game": NAME,
            "seat": self.seat,
            "status": self.status,
            "phase": self.phase,
            "round": self.round,
            "turn": self.turn,
            "points": list(self.points),
            "banks_ms": list(self.banks_ms),
            "clock_running": self.clock_running,
            "decision_since_ms": self.decision_since_ms,
            "delay_ms": self.delay_ms,
            "deadline_ms": self.deadline_ms,
            "hand": list(self.hand) if self.hand is not None else None,
            "hand_sizes": list(self.hand_sizes),
            "boneyard_size": self.boneyard_size,
            "layout": self.layout.to_json(),
            "jockey": self.jockey,
            "leader": self.leader,
            "auction": {"bid": self.auction[0], "bidder": self.auction[1]} if self.auction else None,
            "ready": list(self.ready),
            "hand_over": self.hand_over,
            "winner": self.winner,
            "reason": self.reason,
            "void_reason": self.void_reason,
            "legal": list(self.legal),
            "counts": list(self.counts),
            "past_rounds": list(self.past_rounds),
            "final_round": self.final_round,
        }


def status(state: State) -> str:
    if state.void_reason is not None:
        return "voided"
    return "finished" if state.phase is Phase.OVER else "in_progress"


def view(state: State, seat: Seat | None) -> MatchView:
    # between rounds (the settlement, before the next deal) the round just ended stays on the table
    round = state.round if state.round is not None else (state.past[-1] if state.past else None)
    clock = state.clock
    hand = None
    if seat is not None and round is not None:
        hand = _shown_hand(round.hands[seat])
    auction = None
    if round is not None and round.auction is not None and round.auction.bid is not None:
        assert round.auction.bidder is not None
        auction = (round.auction.bid, round.auction.bidder)
    running = state.phase in (Phase.AUCTION, Phase.LEAD, Phase.PLAY)
    legal = legal_actions(state, seat) if seat is not None else []
    layout = round.layout if round is not None else Layout()
    return MatchView(
        seat=seat,
        status=status(state),
        phase=state.phase.value,
        round=len(state.past) + (state.round is not None),
        turn=state.turn if running else None,
        points=state.points,
        banks_ms=(clock.banks[0], clock.banks[1]),
        clock_running=clock.turn,
        decision_since_ms=clock.since if clock.turn is not None else None,
        delay_ms=clock.settings.delay,
        deadline_ms=next_deadline(state),
        hand=hand,
        hand_sizes=(len(round.hands[0]), len(round.hands[1])) if round else (0, 0),
        boneyard_size=len(round.boneyard) if round else 0,
        layout=LayoutView.of(layout),
        jockey=round.jockey if round else None,
        leader=round.leader if round else None,
        auction=auction,
        ready=tuple(sorted(state.ready)),
        hand_over=state.hand_over,
        winner=state.winner,
        reason=state.reason,
        void_reason=state.void_reason,
        legal=tuple(a.to_json() for a in legal),
        counts=tuple(_count_after(layout, a) for a in legal),
        past_rounds=_past(state.past),
        final_round=_summary(state.round, state.points, True)
        if state.phase is Phase.OVER and state.round is not None
        else None,
    )


_PAST: dict[int, tuple[tuple[Round, ...], tuple[dict[str, JSON], ...]]] = {}
"""The past rounds summed up, by the identity of the state's tuple of them (every view of every change
shares it until the next round ends): summed once, and the same tuple each time, which the typed view's
cache keys on (workers/typed_views). Readers never change a summary."""
KEPT = 4096


def _past(past: tuple[Round, ...]) -> tuple[dict[str, JSON], ...]:
    known = _PAST.get(id(past))
    if known is not None and known[0] is past:
        return known[1]
    summaries = tuple(_summary(r, (0, 0), False) for r in past)  # not final: the points play no part
    if len(_PAST) >= KEPT:
        _PAST.clear()
    _PAST[id(past)] = (past, summaries)  # the tuple is kept: its id is not reused while cached
    return summaries


def _summary(round: Round, points: tuple[int, int], final: bool) -> dict[str, JSON]:
    """A round as the record outcome sums it up, and for a block (SB-8) what decided the payment: both hand
    totals (public at the table once the round is blocked; never a tile) and who received how much."""
    out = round.summary()
    if round.end == "block":
        sums = [sum(t.pips for t in hand) for hand in round.hands]
        to = None if sums[0] == sums[1] else (Seat(0) if sums[0] < sums[1] else Seat(1))
        owed = 0 if to is None else round_to_five(sums[1 - to])
        # SB-1: nobody pays more than they hold; a payer who ran out paid what was left (the match's end)
        short = final and to is not None and points[1 - to] == 0
        out["block"] = {"sums": sums, "to": to, "owed": owed, "short": short}
    return out


def _count_after(layout: Layout, action: Action) -> int | None:
    if not isinstance(action, Play):
        return None
    if action.end is None:
        return action.tile.pips  # a lead: the lone tile counts once, both halves
    pip = layout.pip_at(action.end)
    assert pip is not None
    return layout.count_after(action.tile, action.end, pip)


_HANDS: dict[int, tuple[frozenset[Tile], tuple[str, ...]]] = {}
"""Each hand as a view shows it (highest lead rank first), by the identity of the round's frozenset: a
hand stays the same object over every change its holder does not play or draw."""


def _shown_hand(hand: frozenset[Tile]) -> tuple[str, ...]:
    known = _HANDS.get(id(hand))
    if known is not None and known[0] is hand:
        return known[1]
    shown = tuple([t.name for t in sorted(hand, key=lead_rank, reverse=True)])
    if len(_HANDS) >= KEPT:
        _HANDS.clear()
    _HANDS[id(hand)] = (hand, shown)  # the hand is kept: its id is not reused while cached
    return shown
