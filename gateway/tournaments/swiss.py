"""Swiss pairing for Spectacular Bid, by networkx's maximum-weight matching.

Input: the players in their current ranking order (best first; the caller ranks by score and then by
seed, so this module never invents an order), each with score, previous opponents, bye count and seat
history.

1. Bye (odd count only), chosen together with the pairing: among the players with the fewest byes (no
   previous bye, unless everyone has had one), the lowest-ranked whose bye leaves the others pairable with
   the fewest repeats (none, whenever some eligible player's bye allows that). One maximum-weight
   matching over the players and a phantom "bye" node decides it: an edge between two players weighs
   BASE, less REPEAT_UNIT if they met before; an eligible player's edge to the phantom weighs BASE less
   the number of eligible players ranked below them; REPEAT_UNIT exceeds every such difference. (Chosen
   first and alone, the lowest-ranked eligible player could be the one whose absence forces a repeat.)
2. The rest are paired by `networkx.max_weight_matching(G, maxcardinality=True)`. Edge weight, in
   integer units so that each term strictly dominates everything after it:
   - score gap: −(2·|score_a − score_b|)² × SCORE_UNIT — pairs inside a score group cost nothing, a pair
     one point apart costs 4, two points apart 16, so the matcher prefers few and short floats;
   - shape: −|(rank distance) − (size of the lower player's score group) / 2| — among equally good score
     pairings, prefer the Dutch "top half meets bottom half" shape (1v5, 2v6, … in a group of eight),
     and for floaters the nearest ranks.
   Repeat pairings are omitted from the graph. Only if that graph has no perfect matching is a second
   graph built with every pair, each repeat costing REPEAT_UNIT (more than all other terms together),
   so the result has the fewest repeats possible and `SwissRound.repeats` says how many.
3. Seats: seat 0 goes to the player with the lower (seat0 − seat1) history; on a tie, to the one who
   had seat 1 last; then to the higher-ranked player.
Output pairings are listed in order of their best-ranked player.

Large fields (more than DECOMPOSE_ABOVE players): the blossom algorithm over the whole field grows too
slow once scores split it into groups (256 players in four groups: ~19 s here), so the matching is first
made group by group, best group first, with the same weights: each score group together with the player
floated down from the group above, and when that count is odd, the lowest-ranked member that leaves a
perfect matching without repeats floats on down. If some group cannot be paired without a repeat that
way, the whole field is paired as above. For small fields the global matching is always used. An odd
field's bye is then found in the last group: its lowest-ranked member with the fewest byes (of the whole
field) whose absence leaves the group a perfect matching without repeats; if none of its FLOAT_TRIES
lowest such members does, the whole field is paired as above.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import networkx as nx

from gateway.tournaments.model import Bye, PlayerId, SbPairing, check_unique


@dataclass(frozen=True, slots=True)
class SwissPlayer:
    player: PlayerId
    score: float  # wins (halves allowed, e.g. voided tables counted as draws)
    opponents: frozenset[PlayerId] = field(default_factory=frozenset)
    byes: int = 0
    seat0: int = 0  # games played in seat 0 so far
    seat1: int = 0
    last_seat: int | None = None  # 0 or 1, seat in the player's latest game


@dataclass(frozen=True, slots=True)
class SwissRound:
    pairings: tuple[SbPairing, ...]
    bye: Bye | None
    repeats: int  # pairings that repeat an earlier game (0 unless unavoidable)


def _half_points(score: float) -> int:
    doubled = score * 2
    if doubled != int(doubled):
        raise ValueError(f"score {score} is not a multiple of 0.5")
    return int(doubled)


def choose_bye(ranked: Sequence[SwissPlayer]) -> SwissPlayer:
    """The bye of an odd field, chosen with the pairing (step 1 of the module docstring)."""
    n = len(ranked)
    fewest = min(p.byes for p in ranked)
    eligible = [i for i, p in enumerate(ranked) if p.byes == fewest]
    repeat_unit = len(eligible) + 1  # one repeat costs more than any choice among the eligible
    base = repeat_unit * (n + 1)
    graph = nx.Graph()
    phantom = n
    for below, i in enumerate(reversed(eligible)):
        graph.add_edge(i, phantom, weight=base - below)
    for i in range(n):
        for j in range(i + 1, n):
            graph.add_edge(i, j, weight=base - (repeat_unit if _met(ranked[i], ranked[j]) else 0))
    matching: set[tuple[int, int]] = nx.max_weight_matching(graph, maxcardinality=True)
    return ranked[next(i if j == phantom else j for i, j in matching if phantom in (i, j))]


def _met(a: SwissPlayer, b: SwissPlayer) -> bool:
    return b.player in a.opponents or a.player in b.opponents


def _seats(a: SwissPlayer, b: SwissPlayer) -> SbPairing:
    """`a` is ranked above `b`."""
    balance_a, balance_b = a.seat0 - a.seat1, b.seat0 - b.seat1
    if balance_a != balance_b:
        first = a if balance_a < balance_b else b
    elif a.last_seat != b.last_seat and a.last_seat is not None and b.last_seat is not None:
        first = a if a.last_seat == 1 else b
    else:
        first = a
    second = b if first is a else a
    return SbPairing(first.player, second.player)


def _graph(ranked: Sequence[SwissPlayer], allow_repeats: bool) -> nx.Graph:
    n = len(ranked)
    halves = [_half_points(p.score) for p in ranked]
    group_size: dict[int, int] = {}
    for h in halves:
        group_size[h] = group_size.get(h, 0) + 1
    shape_max = 2 * n  # shape term, doubled to stay integral, is below this
    score_unit = shape_max * n + 1
    max_gap = (max(halves) - min(halves)) ** 2 if halves else 0
    repeat_unit = (max_gap * score_unit + shape_max) * n + 1
    base = repeat_unit * (n + 1)  # keep every weight positive
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    for i in range(n):
        for j in range(i + 1, n):
            repeat = _met(ranked[i], ranked[j])
            if repeat and not allow_repeats:
                continue
            gap = (halves[i] - halves[j]) ** 2
            shape = abs(2 * (j - i) - group_size[halves[j]])
            weight = base - gap * score_unit - shape - (repeat_unit if repeat else 0)
            graph.add_edge(i, j, weight=weight)
    return graph


def _perfect(matching: set[tuple[int, int]], n: int) -> bool:
    return 2 * len(matching) == n


DECOMPOSE_ABOVE = 128
FLOAT_TRIES = 8
"""Candidates (lowest-ranked first) tried as the one floating down from an odd group."""


def _match(players: Sequence[SwissPlayer]) -> list[tuple[int, int]] | None:
    """A perfect matching without repeats among `players` (indexes into it), or None."""
    if not players:
        return []
    matching: set[tuple[int, int]] = nx.max_weight_matching(_graph(players, False), maxcardinality=True)
    return sorted((min(i, j), max(i, j)) for i, j in matching) if _perfect(matching, len(players)) else None


Pairs = list[tuple[SwissPlayer, SwissPlayer]]
"""Pairings as (better-ranked, other), in ranking order of the better-ranked player."""


def _by_groups(players: list[SwissPlayer]) -> tuple[SwissPlayer | None, Pairs] | None:
    """The bye and the pairs made score group by score group, or None (see the module docstring)."""
    position = {id(p): i for i, p in enumerate(players)}
    fewest = min(p.byes for p in players)
    levels = sorted({_half_points(p.score) for p in players}, reverse=True)
    carried: list[SwissPlayer] = []
    pairs: list[tuple[int, int]] = []
    for n, level in enumerate(levels):
        group = [p for p in players if _half_points(p.score) == level]
        members = sorted([*carried, *group], key=lambda p: position[id(p)])
        candidates: Sequence[SwissPlayer | None] = [None]
        if len(members) % 2 == 1:  # float one down; from the last group, the bye (an odd field)
            last = n == len(levels) - 1
            candidates = [p for p in members if p.byes == fewest or not last][::-1][:FLOAT_TRIES]
        for left_out in candidates:
            rest = [p for p in members if p is not left_out]
            found = _match(rest)
            if found is not None:
                pairs.extend((position[id(rest[i])], position[id(rest[j])]) for i, j in found)
                carried = [] if left_out is None else [left_out]
                break
        else:
            return None
    return (carried[0] if carried else None), [(players[i], players[j]) for i, j in _ordered(pairs)]


def _pair_all(players: list[SwissPlayer]) -> Pairs:
    """An even field paired in one matching: without repeats if possible, else with the fewest."""
    n = len(players)
    matching: set[tuple[int, int]] = nx.max_weight_matching(_graph(players, False), maxcardinality=True)
    if not _perfect(matching, n):
        matching = nx.max_weight_matching(_graph(players, True), maxcardinality=True)
    assert _perfect(matching, n), "a complete graph on an even number of players has a perfect matching"
    return [(players[i], players[j]) for i, j in _ordered(matching)]


def _ordered(pairs: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    return sorted((min(i, j), max(i, j)) for i, j in pairs)


def pair_swiss(ranked: Sequence[SwissPlayer]) -> SwissRound:
    """Pair one Swiss round. `ranked` is the current ranking, best first."""
    check_unique([p.player for p in ranked])
    players = list(ranked)
    grouped = _by_groups(players) if len(players) > DECOMPOSE_ABOVE else None
    if grouped is not None:
        chosen, pairs = grouped
    else:
        chosen = choose_bye(players) if len(players) % 2 == 1 else None
        pairs = _pair_all([p for p in players if p is not chosen])
    repeats = sum(1 for a, b in pairs if _met(a, b))
    pairings = tuple(_seats(a, b) for a, b in pairs)
    return SwissRound(pairings, None if chosen is None else Bye(chosen.player), repeats)
