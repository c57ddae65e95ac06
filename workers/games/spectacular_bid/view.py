"""What one seat, or a spectator, may see of a Spectacular Bid match (SB-2: never a hidden tile)."""

from __future__ import annotations

from dataclasses import dataclass

from workers.games.engine import JSON, Seat
from workers.games.spectacular_bid.actions import Action, Play
from workers.games.spectacular_bid.layout import Layout, interned
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
        placements = layout.placements
        if not placements:
            return LayoutView(None, _NO_LINES, layout.spinner, (), 0)
        lines: tuple[list[str], ...] = tuple([] for _ in _ENDS)
        known = _LINE_OF
        for placed in placements[1:]:  # the lead, then each tile to its end's line (`Layout.line`'s order)
            line = known.get(id(placed))
            if line is None:  # not one of the interned placements (a layout read back from a snapshot)
                if placed.end is None:
                    continue
                line = (_ENDS.index(placed.end), str(placed))
            lines[line[0]].append(line[1])
        return LayoutView(
            str(placements[0]),
            tuple([(end._value_, tuple(tiles)) for end, tiles in zip(_ENDS, lines, strict=True)]),
            layout.spinner,
            tuple([(end._value_, pip) for end, pip in layout.ends]),
            layout.count(),
        )

    def to_json(self) -> dict[str, JSON]:
        return {
            "lead": self.lead,
            "lines": {end: list(tiles) for end, tiles in self.lines},
            "spinner": self.spinner,
            "open_ends": dict(self.open_ends),
            "count": self.count,
        }


_ENDS = tuple(End)
_NO_LINES = tuple((end._value_, ()) for end in _ENDS)
_LINE_OF = {id(placed): (_ENDS.index(placed.end), str(placed)) for placed in interned() if placed.end is not None}
"""Each interned placement's line (its end's index in `End`) and name, by identity (they live as long as the
process, so no other object takes their ids)."""
_SEEN_MAX = 256
_SEEN: dict[int, tuple[Layout, LayoutView]] = {}
"""The views of the layouts seen last, by identity (each entry holds its layout, so an id is never reused
while it is here): a change's views for each seat and its spectators share one."""


@built_fast
@dataclass(frozen=True, slots=True)
class TableView:
    """What every seat and spectator sees alike of one state: built once per state, however many viewers
    ask (each seat's view of a change holds the same one, and a typed view's shared bytes key on it)."""

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
    past_rounds: tuple[dict[str, JSON], ...]
    final_round: dict[str, JSON] | None
    """Once the match is over: the round it ended in, summed up as the past ones (None before)."""


@built_fast
@dataclass(frozen=True, slots=True)
class MatchView:
    """One viewer's view: the table everyone sees, and the viewer's own seat, hand and legal actions."""

    table: TableView
    seat: Seat | None
    hand: tuple[str, ...] | None
    legal: tuple[dict[str, JSON], ...]
    counts: tuple[int | None, ...]
    """For each legal action, the count of the ends after it if it is a play (what it would score)."""

    @property
    def status(self) -> str:
        return self.table.status

    @property
    def phase(self) -> str:
        return self.table.phase

    @property
    def round(self) -> int:
        return self.table.round

    @property
    def turn(self) -> Seat | None:
        return self.table.turn

    @property
    def points(self) -> tuple[int, int]:
        return self.table.points

    @property
    def banks_ms(self) -> tuple[int, int]:
        return self.table.banks_ms

    @property
    def clock_running(self) -> Seat | None:
        return self.table.clock_running

    @property
    def decision_since_ms(self) -> int | None:
        return self.table.decision_since_ms

    @property
    def delay_ms(self) -> int:
        return self.table.delay_ms

    @property
    def deadline_ms(self) -> int | None:
        return self.table.deadline_ms

    @property
    def hand_sizes(self) -> tuple[int, int]:
        return self.table.hand_sizes

    @property
    def boneyard_size(self) -> int:
        return self.table.boneyard_size

    @property
    def layout(self) -> LayoutView:
        return self.table.layout

    @property
    def jockey(self) -> Seat | None:
        return self.table.jockey

    @property
    def leader(self) -> Seat | None:
        return self.table.leader

    @property
    def auction(self) -> tuple[int, Seat] | None:
        return self.table.auction

    @property
    def ready(self) -> tuple[Seat, ...]:
        return self.table.ready

    @property
    def hand_over(self) -> bool:
        return self.table.hand_over

    @property
    def winner(self) -> Seat | None:
        return self.table.winner

    @property
    def reason(self) -> str | None:
        return self.table.reason

    @property
    def void_reason(self) -> str | None:
        return self.table.void_reason

    @property
    def past_rounds(self) -> tuple[dict[str, JSON], ...]:
        return self.table.past_rounds

    @property
    def final_round(self) -> dict[str, JSON] | None:
        return self.table.final_round

    def to_json(self) -> dict[str, JSON]:
        table = self.table
        return {
            "game": NAME,
            "seat": self.seat,
            "status": table.status,
            "phase": table.phase,
            "round": table.round,
            "turn": table.turn,
            "points": list(table.points),
            "banks_ms": list(table.banks_ms),
            "clock_running": table.clock_running,
            "decision_since_ms": table.decision_since_ms,
            "delay_ms": table.delay_ms,
            "deadline_ms": table.deadline_ms,
            "hand": list(self.hand) if self.hand is not None else None,
            "hand_sizes": list(table.hand_sizes),
            "boneyard_size": table.boneyard_size,
            "layout": table.layout.to_json(),
            "jockey": table.jockey,
            "leader": table.leader,
            "auction": {"bid": table.auction[0], "bidder": table.auction[1]} if table.auction else None,
            "ready": list(table.ready),
            "hand_over": table.hand_over,
            "winner": table.winner,
            "reason": table.reason,
            "void_reason": table.void_reason,
            "legal": list(self.legal),
            "counts": list(self.counts),
            "past_rounds": list(table.past_rounds),
            "final_round": table.final_round,
        }


def status(state: State) -> str:
    if state.void_reason is not None:
        return "voided"
    return "finished" if state.phase is Phase.OVER else "in_progress"


_AUCTION, _LEAD, _PLAY, _OVER = Phase.AUCTION, Phase.LEAD, Phase.PLAY, Phase.OVER
_EMPTY = Layout()


def view(state: State, seat: Seat | None) -> MatchView:
    # between rounds (the settlement, before the next deal) the round just ended stays on the table
    round = state.round if state.round is not None else (state.past[-1] if state.past else None)
    hand = None
    if seat is not None and round is not None:
        hand = _shown_hand(round.hands[seat])
    if seat is None:
        return MatchView(table_view(state), None, hand, (), ())
    legal = legal_actions(state, seat)
    layout = round.layout if round is not None else _EMPTY
    entries, counts = tuple([a.to_json() for a in legal]), tuple([_count_after(layout, a) for a in legal])
    return MatchView(table_view(state), seat, hand, entries, counts)


def table_view(state: State) -> TableView:
    """The table of `state` as everyone sees it: built once per state (both seats' views of a change and its
    spectators' share it), from the states seen last."""
    seen = _TABLES.get(id(state))
    if seen is not None and seen[0] is state:
        return seen[1]
    table = _table(state)
    if len(_TABLES) >= _TABLES_MAX:
        del _TABLES[next(iter(_TABLES))]
    _TABLES[id(state)] = (state, table)  # the state is kept: its id is not reused while it is here
    return table


_TABLES_MAX = 64
_TABLES: dict[int, tuple[State, TableView]] = {}


def _table(state: State) -> TableView:
    round = state.round if state.round is not None else (state.past[-1] if state.past else None)
    clock = state.clock
    auction = None
    if round is not None and round.auction is not None and round.auction.bid is not None:
        assert round.auction.bidder is not None
        auction = (round.auction.bid, round.auction.bidder)
    phase = state.phase
    over = phase is _OVER
    return TableView(
        status(state),
        phase.value,
        len(state.past) + (state.round is not None),
        state.turn if phase is _PLAY or phase is _AUCTION or phase is _LEAD else None,
        state.points,
        (clock.banks[0], clock.banks[1]),
        clock.turn,
        clock.since if clock.turn is not None else None,
        clock.settings.delay,
        next_deadline(state),
        (len(round.hands[0]), len(round.hands[1])) if round else (0, 0),
        len(round.boneyard) if round else 0,
        LayoutView.of(round.layout if round is not None else _EMPTY),
        round.jockey if round else None,
        round.leader if round else None,
        auction,
        tuple(sorted(state.ready)),
        state.hand_over,
        state.winner,
        state.reason,
        state.void_reason,
        _past(state.past),
        _summary(state.round, state.points, True) if over and state.round is not None else None,
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
