"""501♠ worlds for the search: the cards a seat cannot see dealt again, consistent with its view.

What a seat sees: its hand (once it has looked), the talon once exposed, every card played and who played
it, the calls, the contract, marriages and everyone's card count. A world deals the unseen cards to the
other hands (and, during the bidding, the talon), respecting the voids the play revealed (a player who did
not follow suit holds none of it, nor trumps if they did not trump either). Choices: the talon's cards
still unplayed go to the declarer first (they usually keep them; the view never says which two were
given); a declarer's bot forgets which cards it gave; what a bid or pass says about a hand is not used. No
clock in a world. A declaration's target comes from the declarer's points in worlds played out (`targeted`)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from workers.bots.budget import Budget
from workers.bots.policy import choose, declaration
from workers.bots.worlds import Move
from workers.games.engine import Millis, Seat
from workers.games.five_oh_one.actions import ABANDON, LOOK, MAX_BID, PASS, TRUMPS, Bid, Declare, Play, parse_action
from workers.games.five_oh_one.cards import DECK, Card, Suit, codes, parse
from workers.games.five_oh_one.legal import lowest_bid
from workers.games.five_oh_one.rules import apply
from workers.games.five_oh_one.state import (
    Bidding,
    Contract,
    Marriage,
    State,
    Table,
    Terms,
    Trick,
    Tricks,
)  # fmt: skip
from workers.games.five_oh_one.tricks import playable
from workers.games.five_oh_one.view import view as seat_view

NOW = Millis(0)
BIDS_SEARCHED = (0, 5)
"""The bids the tree tries, above the lowest allowed: the lowest and five more (every amount is too wide)."""
SCALE = 150
"""A hand's swing, in points, that counts as a whole win or loss of the round's reward."""
TALON = Seat(-1)
"""The holder of the unexposed talon in a sampled deal."""
RETRIES = 20


@dataclass(frozen=True, slots=True)
class FiveWorlds:
    """One seat's view of a 501♠ hand, ready to be dealt into worlds."""

    seat: Seat
    seats: int
    shown: State
    """The hand as the view shows it, other hands (and a hidden talon) empty."""
    unseen: tuple[Card, ...]
    holds: tuple[tuple[Seat, int], ...]
    """Who holds how many unseen cards (TALON for the hidden talon)."""
    voids: tuple[tuple[Seat, frozenset[Suit]], ...]
    first: tuple[Card, ...]
    """Unseen cards that go to `keeper` first: the exposed talon's cards still unplayed."""
    keeper: Seat | None
    legal: tuple[tuple[Move, dict[str, Any]], ...]

    @staticmethod
    def of(view: dict[str, Any]) -> FiveWorlds | None:
        """None when the seat is still blind (it looks first, as greedy does)."""
        if view.get("hand") is None:
            return None
        seat, seats = Seat(view["seat"]), len(view["scores"])
        mine = frozenset(parse(c) for c in view["hand"])
        played = [parse(t["card"]) for t in view["trick"]] + [parse(c) for t in view["tricks"] for c in t["cards"]]
        talon = tuple(parse(c) for c in view["talon"] or ())
        unseen = tuple(c for c in DECK if c not in mine and c not in played)
        holds = [(Seat(s), n) for s, n in enumerate(view["hand_sizes"]) if s != seat and n > 0]
        if view["phase"] == "bidding":
            holds.append((TALON, 3))
        declarer = view.get("declarer")
        keeper = Seat(declarer) if view["phase"] == "tricks" and declarer is not None and declarer != seat else None
        first = tuple(c for c in talon if c in unseen) if keeper is not None else ()
        shown = _shown(view, seat, seats, mine, talon)
        legal = tuple(_root(view, shown, seat))
        return FiveWorlds(seat, seats, shown, unseen, tuple(holds), _voids(view), first, keeper, legal)

    def root_moves(self) -> Sequence[tuple[Move, dict[str, Any]]]:
        return self.legal

    def sample(self, rng: random.Random) -> State:
        dealt = _dealt(self, rng)
        hand = self.shown.hand
        hands = tuple(dealt.get(Seat(s), frozenset()) | h for s, h in enumerate(_hands(hand)))
        talon = tuple(sorted(dealt[TALON], key=lambda c: c.index)) if TALON in dealt else None
        s = self.shown
        if isinstance(hand, Bidding):
            talon = talon or hand.talon
            made: Any = Bidding(hand.dealer, hands, talon, hand.turn, hand.calls, hand.passed, hand.looked)
        elif isinstance(hand, Contract):
            made = Contract(hand.dealer, hands, hand.talon, hand.calls, hand.declarer, hand.bid, hand.blind)
        else:
            assert isinstance(hand, Tricks)
            made = Tricks(hand.terms, hands, hand.turn, hand.trick, hand.done, hand.taken, hand.marriages)
        return State(s.table, s.scores, s.dealer, made, (), None)

    def to_move(self, state: State) -> Seat | None:
        hand = state.hand
        if state.ending is not None or hand is None:
            return None
        return hand.declarer if isinstance(hand, Contract) else hand.turn

    def moves(self, state: State, seat: Seat) -> Sequence[Move]:
        hand = state.hand
        if isinstance(hand, Tricks):
            return playable(hand, seat)
        if isinstance(hand, Contract):
            return [ABANDON, *_declarations(state, hand, seat)]
        assert isinstance(hand, Bidding)
        lowest = lowest_bid(hand)
        looks = [LOOK] if seat not in hand.looked else []
        return [*looks, PASS, *(Bid(lowest + step) for step in BIDS_SEARCHED if lowest + step <= 220)]

    def apply(self, state: State, seat: Seat, move: Move) -> State:
        return apply(state, seat, move, NOW)[0]

    def rollout_move(self, state: State, seat: Seat, rng: random.Random) -> Move:
        """Greedy: the view-based policy for bids and the contract, its trick play on the cards themselves."""
        hand = state.hand
        if isinstance(hand, Tricks):
            return _trick_play(playable(hand, seat), hand)
        chosen = choose(seat_view(state, seat).to_json(), rng, greedy=True)
        assert chosen is not None
        return parse_action(chosen)

    def targeted(self, declare: Declare, rng: random.Random, budget: Budget) -> Declare:
        """`declare` with the target raised to what its hand is expected to make: the declarer's points
        (cards and marriages) in worlds played out by the greedy policy, within `budget`."""
        points: list[int] = []
        deadline = budget.deadline()
        while not budget.spent(len(points), deadline):
            state = self.apply(self.sample(rng), self.seat, declare)
            while (seat := self.to_move(state)) is not None:
                state = self.apply(state, seat, self.rollout_move(state, seat, rng))
            points.append(state.results[-1].points[self.seat])
        return replace(declare, target=best_target(points, declare.target))

    def values(self, state: State) -> Sequence[float]:
        if state.ending is not None:
            return [1.0 if s in state.ending.winners else 0.0 for s in range(self.seats)]
        gains = [before - after for before, after in zip(self.shown.scores, state.scores, strict=True)]
        total = sum(gains)
        out = []
        for gain in gains:
            others = (total - gain) / (self.seats - 1)
            out.append(min(1.0, max(0.0, 0.5 + (gain - others) / (2 * SCALE))))
        return out


def best_target(points: Sequence[int], bid: int) -> int:
    """The target from `bid` to the most a hand is worth with the best expected contract score (made: −T,
    short: +T) over the sampled `points`, counting one more sample short (few samples overrate a high
    target); the lowest of equals."""
    candidates = sorted({bid, *(p for p in points if bid < p <= MAX_BID)})

    def expected(target: int) -> int:
        made = sum(p >= target for p in points)
        return target * (2 * made - len(points) - 1)

    return max(candidates, key=lambda t: (expected(t), -t))


def _shown(view: dict[str, Any], seat: Seat, seats: int, mine: frozenset[Card], talon: tuple[Card, ...]) -> State:
    """The view's hand as an engine state with only the seat's own cards in it."""
    hands = tuple(mine if s == seat else frozenset() for s in range(seats))
    calls = tuple((Seat(c["seat"]), c.get("bid")) for c in view["calls"])
    dealer = Seat(view["dealer"])
    hand: Any
    if view["phase"] == "bidding":
        passed = frozenset(s for s, amount in calls if amount is None)
        looked = frozenset(Seat(s) for s in view["looked"])
        hand = Bidding(dealer, hands, (), Seat(view["turn"]), calls, passed, looked)
    elif view["phase"] == "contract":
        hand = Contract(dealer, hands, talon, calls, Seat(view["declarer"]), view["bid"], bool(view["blind"]))
    else:
        terms = Terms(
            dealer, talon, calls, Seat(view["declarer"]), view["bid"], bool(view["blind"]), TRUMPS[view["trump"]],
            view["target"],
        )  # fmt: skip
        done = tuple(
            Trick(Seat(t["leader"]), tuple(parse(c) for c in t["cards"]), Seat(t["winner"])) for t in view["tricks"]
        )
        taken = [0] * seats
        for t in done:
            taken[t.winner] += sum(c.points for c in t.cards)
        trick = tuple((Seat(t["seat"]), parse(t["card"])) for t in view["trick"])
        marriages = tuple(Marriage(Seat(m["seat"]), Suit(m["suit"]), m["value"]) for m in view["marriages"])
        hand = Tricks(terms, hands, Seat(view["turn"]), trick, done, tuple(taken), marriages)
    table = Table(seats, 501, None, dealer)
    return State(table, tuple(view["scores"]), dealer, hand, (), None)


def _root(view: dict[str, Any], shown: State, seat: Seat) -> list[tuple[Move, dict[str, Any]]]:
    """The seat's choices as the tree branches on them, each with the action it sends."""
    hand = shown.hand
    if isinstance(hand, Contract):
        return [(ABANDON, ABANDON.to_json()), *((d, d.to_json()) for d in _declarations(shown, hand, seat))]
    if isinstance(hand, Bidding):
        out: list[tuple[Move, dict[str, Any]]] = [(PASS, PASS.to_json())]
        lowest = lowest_bid(hand)
        out += [(Bid(lowest + s), Bid(lowest + s).to_json()) for s in BIDS_SEARCHED if lowest + s <= 220]
        return out
    moves = [parse_action(a) for a in view["legal"] if a["do"] == "play"]
    return [(m, m.to_json()) for m in moves]


def _declarations(state: State, hand: Contract, seat: Seat) -> list[Declare]:
    """One declaration per trump (no-trump included) at the bid, giving away the greedy policy's two cards."""
    cards = codes(sorted(hand.hands[seat], key=lambda c: c.index))
    to = [s for s in state.table.active(hand.dealer) if s != seat]
    summary = {"give": {"to": to}, "target": {"min": hand.bid}}
    shown = {"bid": hand.bid}
    out = []
    for code in TRUMPS:
        made = declaration(summary, cards, shown, random.Random(0), greedy=True, trump=code)
        action = parse_action(made)
        assert isinstance(action, Declare)
        out.append(action)
    return out


def _hands(hand: Any) -> tuple[frozenset[Card], ...]:
    hands: tuple[frozenset[Card], ...] = hand.hands
    return hands


def _voids(view: dict[str, Any]) -> tuple[tuple[Seat, frozenset[Suit]], ...]:
    """The suits each player showed out of: did not follow the suit led (and did not trump, if no trump)."""
    trump = TRUMPS.get(view["trump"]) if view.get("trump") else None
    tricks = [[(_player(view, t["leader"], i), parse(c)) for i, c in enumerate(t["cards"])] for t in view["tricks"]]
    tricks.append([(Seat(p["seat"]), parse(p["card"])) for p in view["trick"]])
    voids: dict[Seat, set[Suit]] = {}
    for trick in tricks:
        if not trick:
            continue
        led = trick[0][1].suit
        for who, card in trick[1:]:
            if card.suit is not led:
                voids.setdefault(who, set()).add(led)
                if trump is not None and card.suit is not trump:
                    voids[who].add(trump)
    return tuple((s, frozenset(v)) for s, v in sorted(voids.items()))


def _player(view: dict[str, Any], leader: int, number: int) -> Seat:
    """The seat that played the `number`-th card of a trick led by `leader`: clockwise, a sitting-out dealer
    skipped."""
    seats = len(view["scores"])
    out = view.get("sitting_out")
    seat = leader
    for _ in range(number):
        seat = (seat + 1) % seats
        if seat == out:
            seat = (seat + 1) % seats
    return Seat(seat)


def _dealt(worlds: FiveWorlds, rng: random.Random) -> dict[Seat, frozenset[Card]]:
    """The unseen cards dealt to their holders, voids respected (given up after `RETRIES` dead ends)."""
    voids = dict(worlds.voids)
    if not voids:
        return _dealt_freely(worlds, rng)
    for attempt in range(RETRIES + 1):
        strict = attempt < RETRIES
        room = dict(worlds.holds)
        held: dict[Seat, list[Card]] = {s: [] for s in room}
        cards = list(worlds.unseen)
        rng.shuffle(cards)
        cards.sort(key=lambda c: c not in worlds.first)
        for card in cards:
            allowed = [s for s, n in room.items() if n and not (strict and card.suit in voids.get(s, ()))]
            if worlds.keeper in allowed and card in worlds.first:
                allowed = [worlds.keeper]
            if not allowed:
                break
            weights = [room[s] for s in allowed]
            pick = rng.randrange(sum(weights))
            for s, w in zip(allowed, weights, strict=True):
                if pick < w:
                    held[s].append(card)
                    room[s] -= 1
                    break
                pick -= w
        else:
            return {s: frozenset(c) for s, c in held.items()}
    raise AssertionError("unreachable: the last attempt ignores voids")


def _dealt_freely(worlds: FiveWorlds, rng: random.Random) -> dict[Seat, frozenset[Card]]:
    """No voids known: the keeper's talon cards to the keeper, the rest shuffled and cut (a uniform deal)."""
    cards = [c for c in worlds.unseen if c not in worlds.first]
    rng.shuffle(cards)
    out: dict[Seat, frozenset[Card]] = {}
    at = 0
    for seat, count in worlds.holds:
        first = [c for c in worlds.first if seat == worlds.keeper]
        take = count - len(first)
        out[seat] = frozenset((*first, *cards[at : at + take]))
        at += take
    return out


def _trick_play(plays: Sequence[Play], hand: Tricks) -> Play:
    """The greedy trick play on cards: lead a marriage or the highest card; follow with the cheapest winner,
    else the cheapest card."""
    trick = hand.trick
    trump = hand.terms.trump
    if not trick:
        announced = [p for p in plays if p.marriage]
        if announced:
            return max(announced, key=lambda p: p.card.suit is trump)
        return max(plays, key=lambda p: (p.card.strength, p.card.points))
    led = trick[0][1].suit

    def strength(card: Card) -> tuple[int, int]:
        return (2 if card.suit is trump else 1 if card.suit is led else 0, card.strength)

    best = max(strength(c) for _, c in trick)
    winners = [p for p in plays if strength(p.card) > best]
    if winners:
        return min(winners, key=lambda p: strength(p.card))
    return min(plays, key=lambda p: (p.card.points, p.card.strength))
