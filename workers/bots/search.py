"""The `search` level: single-observer information-set Monte Carlo tree search (ISMCTS, after OpenSpiel's
`ismcts.py` and Cowling et al.), from a seat's view alone.

Each iteration samples a determinization (a full hidden state consistent with the view, built with the pure
engine), walks one tree shared by all worlds — nodes keyed by the actions taken, children chosen by UCB with
availability counts, since a move exists only in the worlds where it is legal — expands one new node, plays
out to the end of the round (Spectacular Bid) or hand (501♠) with the greedy policy, and backs each seat's
reward up the path to the nodes where that seat moved. The answer is the root's most visited action."""

from __future__ import annotations

import math
import random
from typing import Any

from workers.bots.budget import Budget
from workers.bots.five_worlds import FiveWorlds
from workers.bots.policy import NEVER, Action, View, choose, is_over
from workers.bots.sb_worlds import SbWorlds
from workers.bots.worlds import Move, State, Worlds
from workers.games.catalog import FIVE_OH_ONE
from workers.games.engine import Seat
from workers.games.five_oh_one.actions import Declare
from workers.games.five_oh_one.state import Bidding, Contract

EXPLORATION = 0.3
"""UCB's exploration constant, for rewards in [0, 1]."""
OPPONENTS_IN_TREE = False
"""False: the other seats move by the greedy policy inside the tree too, and the tree branches on this seat's
own decisions only (its information set's action history). True: every seat's moves are branches chosen by
UCB for that seat's reward (plain SO-ISMCTS). The bench measures the first stronger against greedy play."""
SURE = 1.0
"""How many standard errors the search's best move must beat the greedy move by to be played instead."""
SEARCH_501_BIDS = True
"""True: a 501♠ seat searches its bids too, flat (`BID_DEPTH`); False: it bids greedily and searches only the
declaration and the card play."""
BID_DEPTH = 1
"""How many of its own moves deep a 501♠ bid's tree grows: 1 is flat Monte Carlo over pass and the bids, each
played out greedily (a deeper tree spreads a few dozen iterations over declarations, abandon among them,
and the bench measured its bids worse than greedy's)."""
TREE_SHARE = 0.5
"""A 501♠ declaration spends this share of its budget on the tree (abandon, or which trump at the bid)
and the rest on the target (`FiveWorlds.targeted`: greedy declares at the bid, however strong the hand)."""
MAX_PLAYOUT = 200
"""A playout longer than this many moves stops where it is (a guard; rounds and hands are shorter)."""


class Node:
    """One node of the tree: the seat that moved into it, its visits, availability and reward for that seat.

    Mutable on purpose: a search tree is counted into as it grows (it never leaves `search`)."""

    __slots__ = ("available", "children", "reward", "seat", "squares", "visits")

    def __init__(self, seat: Seat | None) -> None:
        self.seat = seat
        self.children: dict[Move, Node] = {}
        self.visits = 0
        self.available = 0
        self.reward = 0.0
        self.squares = 0.0

    def mean(self) -> float:
        return self.reward / self.visits

    def error(self) -> float:
        """The standard error of `mean` (0 before two visits)."""
        if self.visits < 2:
            return 0.0
        variance = max(0.0, self.squares / self.visits - self.mean() ** 2)
        return math.sqrt(variance / (self.visits - 1))

    def score(self) -> float:
        """UCB1 with the availability count in place of the parent's visits (SO-ISMCTS)."""
        return self.reward / self.visits + EXPLORATION * math.sqrt(math.log(self.available) / self.visits)


def search(view: View, rng: random.Random, budget: Budget) -> Action | None:
    """The most visited root action after the budget's iterations (or time); greedy where there is no choice."""
    if is_over(view):
        return None
    worlds = _worlds(view)
    if worlds is None:
        return choose(view, rng, greedy=True)
    roots = worlds.root_moves()
    if len(roots) <= 1:
        return roots[0][1] if roots else choose(view, rng, greedy=True)
    declaring = isinstance(worlds, FiveWorlds) and isinstance(worlds.shown.hand, Contract)
    tree = budget.share(TREE_SHARE) if declaring else budget
    bidding = isinstance(worlds, FiveWorlds) and isinstance(worlds.shown.hand, Bidding)
    root = ismcts(worlds, [move for move, _ in roots], rng, tree, BID_DEPTH if bidding else None)
    best = max(roots, key=lambda r: root.children[r[0]].visits if r[0] in root.children else -1)
    greedy = choose(view, random.Random(0), greedy=True)
    anchor = next((r for r in roots if r[1] == greedy and r[0] in root.children), None)
    if anchor is not None and not _surely_better(root.children[best[0]], root.children[anchor[0]]):
        best = anchor
    if isinstance(worlds, FiveWorlds) and isinstance(best[0], Declare):
        return worlds.targeted(best[0], rng, budget.share(1 - TREE_SHARE)).to_json()
    return best[1]


def _surely_better(best: Node, greedy: Node) -> bool:
    """Leave the greedy move only when the search's evidence says so: the most visited move's mean beats
    the greedy move's by more than `SURE` standard errors of the difference (few iterations: noise)."""
    if best is greedy:
        return True
    return best.mean() - greedy.mean() > SURE * math.hypot(best.error(), greedy.error())


def _worlds(view: View) -> Worlds | None:
    """The game's worlds for this view, or None when the view leaves nothing to search (only a Continue, a
    look, a blind hand, another seat's turn)."""
    legal = [a for a in view.get("legal", []) if a.get("do") not in NEVER]
    if not legal or view.get("turn") != view.get("seat") or view.get("seat") is None:
        return None
    if view.get("game") == FIVE_OH_ONE:
        return None if view.get("phase") == "bidding" and not SEARCH_501_BIDS else FiveWorlds.of(view)
    return SbWorlds.of(view)


def ismcts(
    worlds: Worlds, root_moves: list[Move], rng: random.Random, budget: Budget, depth: int | None = None
) -> Node:
    """The tree grown within `budget` from the root's `root_moves`, at most `depth` of the seat's own moves
    deep (1: flat Monte Carlo over the root's moves); `rng` alone decides every sample."""
    root = Node(None)
    deadline = budget.deadline()
    done = 0
    while (budget.iterations is None or done < budget.iterations) and (deadline is None or budget.clock() < deadline):
        _iterate(worlds, root, root_moves, rng, depth)
        done += 1
    return root


def _iterate(worlds: Worlds, root: Node, root_moves: list[Move], rng: random.Random, depth: int | None) -> None:
    """One determinization: select, expand, play out, back up."""
    state = worlds.sample(rng)
    node, path = root, [root]
    seat: Seat | None = worlds.seat
    moves: list[Move] | Any = root_moves
    while seat is not None:
        if seat != worlds.seat and not OPPONENTS_IN_TREE:
            state = worlds.apply(state, seat, worlds.rollout_move(state, seat, rng))
            seat = worlds.to_move(state)
            if seat == worlds.seat:
                moves = worlds.moves(state, seat)
            continue
        if depth is not None and len(path) > depth:
            break
        untried = [m for m in moves if m not in node.children]
        for move in moves:
            child = node.children.get(move)
            if child is not None:
                child.available += 1
        if untried:
            move = untried[rng.randrange(len(untried))]
            child = node.children[move] = Node(seat)
            child.available += 1
            state = worlds.apply(state, seat, move)
            path.append(child)
            break
        move = max(moves, key=lambda m: node.children[m].score())
        node = node.children[move]
        state = worlds.apply(state, seat, move)
        path.append(node)
        seat = worlds.to_move(state)
        if seat is not None and (seat == worlds.seat or OPPONENTS_IN_TREE):
            moves = worlds.moves(state, seat)
    values = worlds.values(_played_out(worlds, state, rng))
    for visited in path[1:]:
        visited.visits += 1
        assert visited.seat is not None
        visited.reward += values[visited.seat]
        visited.squares += values[visited.seat] ** 2


def _played_out(worlds: Worlds, state: State, rng: random.Random) -> State:
    """`state` played to the horizon by the rollout policy."""
    for _ in range(MAX_PLAYOUT):
        seat = worlds.to_move(state)
        if seat is None:
            break
        state = worlds.apply(state, seat, worlds.rollout_move(state, seat, rng))
    return state
