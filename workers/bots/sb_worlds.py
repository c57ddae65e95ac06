"""Spectacular Bid worlds for the search: every tile the seat cannot see dealt again at random.

What a seat sees: its hand, the layout, both hand sizes and the boneyard's size. A world deals the unseen
tiles into the opponent's hand and the boneyard (in a random order: the draws to come), with the points,
the auction and whose turn it is as shown. The clock plays no part in a world (banks that never run out):
time enters the search only as its budget. Not inferred (choices): the opponent's earlier draws and passes
(which would show ends they could not match) and a standing forced pass."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workers.bots.worlds import Move
from workers.games.clock import Clock, ClockSettings
from workers.games.engine import Millis, Seat
from workers.games.spectacular_bid import SpectacularBid
from workers.games.spectacular_bid.actions import Accept, Bid, Decline, Draw, Play, Raise, Resign
from workers.games.spectacular_bid.options import Options
from workers.games.spectacular_bid.rebuild import laid
from workers.games.spectacular_bid.rules import apply, legal_actions
from workers.games.spectacular_bid.state import Auction, Phase, Round, State
from workers.games.spectacular_bid.tiles import TILES, Tile

GAME = SpectacularBid()
DECIDING = (Phase.AUCTION, Phase.LEAD, Phase.PLAY)
BIDS_SEARCHED = 3
"""The auction's bids the tree tries: the three lowest amounts (every amount up to a balance is too wide)."""
SCALE = 60
"""A round's swing in the points difference that counts as a whole win or loss of its reward."""
FOREVER = Millis(10**12)
NOW = Millis(0)


@dataclass(frozen=True, slots=True)
class SbWorlds:
    """One seat's view of a Spectacular Bid round, ready to be dealt into worlds."""

    seat: Seat
    seats: int
    shown: State
    """The state with the seat's hand and the layout, the opponent's hand and the boneyard empty."""
    unseen: tuple[Tile, ...]
    opponent_holds: int
    legal: tuple[tuple[Move, dict[str, Any]], ...]

    @staticmethod
    def of(view: dict[str, Any]) -> SbWorlds:
        seat = Seat(view["seat"])
        layout = view["layout"]
        hand = frozenset(Tile.parse(t) for t in view["hand"] or ())
        board = laid(layout["lead"], layout["lines"], layout["spinner"])
        on_table = {(min(p.inner, p.outer), max(p.inner, p.outer)) for p in board.placements}
        unseen = tuple(t for t in TILES if t not in hand and (t.low, t.high) not in on_table)
        legal = tuple((GAME.parse_action(a), a) for a in view["legal"] if a["do"] not in ("resign", "ready", "reveal"))
        plays = {m.tile for m, _ in legal if isinstance(m, Play)}
        drawn = next(iter(plays)) if len(plays) == 1 and view["phase"] == Phase.PLAY.value else None
        auction = view.get("auction")
        phase = Phase(view["phase"])
        round = Round(
            (hand, frozenset()) if seat == 0 else (frozenset(), hand),
            (),
            board,
            jockey=view.get("jockey"),
            leader=view.get("leader"),
            auction=(Auction(auction["bid"], auction["bidder"]) if auction else Auction())
            if phase is Phase.AUCTION
            else None,
            drawn=drawn,
        )
        clock = Clock(ClockSettings(FOREVER, Millis(0)), (FOREVER, FOREVER), Seat(view["turn"]), NOW)
        points = (int(view["points"][0]), int(view["points"][1]))
        shown = State(Options.parse({}), clock, points, phase, round, (), Seat(view["turn"]))
        legal = tuple((m, a) for m, a in legal if _kept(m, [x for x, _ in legal]))
        return SbWorlds(seat, 2, shown, unseen, int(view["hand_sizes"][1 - seat]), legal)

    def root_moves(self) -> Sequence[tuple[Move, dict[str, Any]]]:
        return self.legal

    def sample(self, rng: random.Random) -> State:
        unseen = list(self.unseen)
        rng.shuffle(unseen)
        round = self.shown.round
        assert round is not None
        theirs = frozenset(unseen[: self.opponent_holds])
        mine = round.hands[self.seat]
        hands = (mine, theirs) if self.seat == 0 else (theirs, mine)
        dealt = Round(hands, tuple(unseen[self.opponent_holds :]), *_rest(round))
        shown = self.shown
        return State(shown.options, shown.clock, shown.points, shown.phase, dealt, (), shown.turn)

    def to_move(self, state: State) -> Seat | None:
        return state.turn if state.phase in DECIDING else None

    def moves(self, state: State, seat: Seat) -> Sequence[Move]:
        actions = legal_actions(state, seat)
        return [a for a in actions if _kept(a, actions)]

    def apply(self, state: State, seat: Seat, move: Move) -> State:
        return apply(state, seat, move, NOW)[0]  # type: ignore[arg-type]

    def rollout_move(self, state: State, seat: Seat, rng: random.Random) -> Move:
        """Greedy: decline or accept in the auction; lay the tile that scores most, else any; draw if must."""
        round = state.round
        assert round is not None
        actions = [a for a in legal_actions(state, seat) if not isinstance(a, Resign)]
        for kind in (Decline, Accept, Draw):
            for action in actions:
                if isinstance(action, kind):
                    return action
        best, scored = 0, list[Play]()
        for action in actions:
            assert isinstance(action, Play)
            board = (
                round.layout.lead(action.tile, action.west or action.tile.high)
                if action.end is None
                else (round.layout.place(action.tile, action.end))
            )
            count = board.count()
            if count % 5 == 0 and count >= best and count > 0:
                scored = [*scored, action] if count == best else [action]
                best = count
        pool = scored or actions
        return pool[rng.randrange(len(pool))]

    def values(self, state: State) -> Sequence[float]:
        if state.phase is Phase.OVER:
            return [1.0 if state.winner == s else 0.0 for s in (0, 1)]
        before, after = self.shown.points, state.points
        gained = (after[0] - after[1]) - (before[0] - before[1])  # what the round moved towards seat 0
        zero = min(1.0, max(0.0, 0.5 + gained / (2 * SCALE)))
        return [zero, 1.0 - zero]


def _kept(action: object, actions: Sequence[object]) -> bool:
    """The tree's branches: no resignation, and of the auction's bids only the lowest few."""
    if isinstance(action, Resign):
        return False
    if isinstance(action, Bid | Raise):
        amounts = sorted(a.amount for a in actions if isinstance(a, Bid | Raise))
        return action.amount in amounts[:BIDS_SEARCHED]
    return True


def _rest(round: Round) -> tuple[Any, ...]:
    """A round's fields after its hands and boneyard, in order."""
    return (
        round.layout, round.jockey, round.leader, round.forced, round.auction, round.sale, round.declined,
        round.drawn, round.passes, round.end, round.domino_by,
    )  # fmt: skip
