"""Bots that play a seat over the service, working only from that seat's view JSON.

`choose(view, rng, greedy)` picks one action from `view["legal"]` (never `resign` or `abandon`);
`run_bot(...)` watches a seat's stream and acts whenever its view has something to do.

Greedy play:
- Spectacular Bid: the play whose count (`view["counts"]`) is the highest positive multiple of 5, else a
  random play; in the lead auction it declines or accepts (never pays for the lead); it always draws
  when drawing is all it can do.
- 501♠ (a simple heuristic, documented here): look at the cards before bidding; bid the minimum when the
  hand's card points plus marriages (K+Q of a suit: 20) reach 40, else pass; declare the suit with the
  most cards (then points) as trump at the bid, giving away the two least valuable non-trump cards;
  in tricks, announce a marriage when leading if possible, otherwise lead the highest card; when
  following, win with the cheapest winning card, else throw the cheapest card.
Random play picks uniformly among the legal actions (501 bids: the minimum, or pass).
"""

from __future__ import annotations

import asyncio
import logging
import random
import sys
from collections.abc import Callable
from typing import Any

import grpc

from tablehall.client import Client, SeatClient, ServiceUnreachable, TablehallError, Tls
from workers.games.catalog import FIVE_OH_ONE

log = logging.getLogger("tablehall.bots")

View = dict[str, Any]
Action = dict[str, Any]

NEVER = frozenset({"resign", "abandon"})
RANKS = "ATKQJ9"
"""501♠ ranks, highest first (F-1)."""
VALUES = {"A": 11, "T": 10, "K": 4, "Q": 3, "J": 2, "9": 0}


def is_over(view: View) -> bool:
    """True once the match has ended (either game)."""
    return view.get("status", "in_progress") != "in_progress" or view.get("phase") == "over"


def choose(view: View, rng: random.Random, greedy: bool) -> Action | None:
    """One action from `view["legal"]` for this seat, or None when there is nothing to do now."""
    if is_over(view):
        return None
    if view.get("game") == FIVE_OH_ONE:
        return _choose_501(view, rng, greedy)
    return _choose_sb(view, rng, greedy)


# --- Spectacular Bid ---------------------------------------------------------------------------


def _choose_sb(view: View, rng: random.Random, greedy: bool) -> Action | None:
    legal: list[Action] = view.get("legal", [])
    counts: list[int | None] = view.get("counts", [None] * len(legal))
    options = [(a, c) for a, c in zip(legal, counts, strict=False) if a.get("do") not in NEVER]
    by_kind = {a["do"]: a for a, _ in options}
    if "ready" in by_kind:
        return by_kind["ready"]
    if "reveal" in by_kind:
        # a bot only takes the device when the clock waits for it (shared device)
        return by_kind["reveal"] if view.get("hand_over") else None
    if not options:
        return None
    plays = [(a, c) for a, c in options if a["do"] == "play"]
    if greedy and plays:
        scoring = [(a, c) for a, c in plays if c is not None and c > 0 and c % 5 == 0]
        if scoring:
            best = max(c for _, c in scoring if c is not None)
            return rng.choice([a for a, c in scoring if c == best])
        return rng.choice([a for a, _ in plays])
    if greedy:
        for kind in ("decline", "accept", "draw"):
            if kind in by_kind:
                return by_kind[kind]
    return rng.choice([a for a, _ in options])


# --- 501♠ ----------------------------------------------------------------------------------------


def _rank(card: str) -> int:
    return len(RANKS) - RANKS.index(card[0])


def _value(card: str) -> int:
    return VALUES[card[0]]


def _marriages(hand: list[str]) -> list[str]:
    return [suit for suit in "SHDC" if f"K{suit}" in hand and f"Q{suit}" in hand]


def _choose_501(view: View, rng: random.Random, greedy: bool) -> Action | None:
    legal: list[Action] = [a for a in view.get("legal", []) if a.get("do") not in NEVER]
    if not legal:
        return None
    kinds = {a["do"]: a for a in legal}
    if view.get("turn") != view.get("seat"):
        return None  # only `look` is possible out of turn: decide at our turn
    hand: list[str] = view.get("hand") or []
    if "declare" in kinds:
        return declaration(kinds["declare"], hand, view, rng, greedy)
    if "pass" in kinds or "bid" in kinds:
        if greedy and "look" in kinds:
            return kinds["look"]
        lowest = kinds["bid"]["amount"]["min"] if "bid" in kinds else None
        choices: list[Action] = [a for a in legal if a["do"] in ("look", "pass")]
        if lowest is not None:
            choices.append({"do": "bid", "amount": lowest})
        if not greedy:
            return rng.choice(choices)
        strength = sum(map(_value, hand)) + 20 * len(_marriages(hand))
        if lowest is not None and strength >= 40 and lowest <= 66 + strength // 4:
            return {"do": "bid", "amount": lowest}
        return kinds.get("pass") or rng.choice(choices)
    plays = [a for a in legal if a["do"] == "play"]
    if not plays:
        return rng.choice(legal)
    if not greedy:
        return rng.choice(plays)
    return _trick_play(plays, view)


def declaration(
    summary: Action, hand: list[str], view: View, rng: random.Random, greedy: bool, trump: str | None = None
) -> Action:
    """A concrete `declare` from the legal summary: at the bid, the trump given or chosen, and one card
    for each opponent (greedy: the least valuable cards outside trump and marriages)."""
    to: list[int] = summary["give"]["to"]
    target = int(view.get("bid") or summary["target"]["min"])
    if not greedy:
        trump = trump or rng.choice(summary["trump"])
        given = rng.sample(hand, len(to))
    else:
        if trump is None:
            trump = max("SHDC", key=lambda s: (sum(c[1] == s for c in hand), sum(_value(c) for c in hand if c[1] == s)))
        keep = {f"{r}{s}" for s in _marriages(hand) for r in "KQ"}
        spare = sorted(hand, key=lambda c: (c[1] == trump, c in keep, _value(c), _rank(c)))
        given = spare[: len(to)]
    give = {str(seat): card for seat, card in zip(to, given, strict=True)}
    return {"do": "declare", "trump": trump, "target": target, "give": give}


def _trick_play(plays: list[Action], view: View) -> Action:
    trick: list[dict[str, Any]] = view.get("trick", [])
    trump = view.get("trump")
    if not trick:
        announced = [a for a in plays if a.get("marriage")]
        if announced:
            return max(announced, key=lambda a: 1 if a["card"][1] == trump else 0)
        return max(plays, key=lambda a: (_rank(a["card"]), _value(a["card"])))
    led = trick[0]["card"][1]

    def strength(card: str) -> tuple[int, int]:
        return (2 if card[1] == trump else 1 if card[1] == led else 0, _rank(card))

    best = max(strength(t["card"]) for t in trick)
    winners = [a for a in plays if strength(a["card"]) > best]
    if winners:
        return min(winners, key=lambda a: strength(a["card"]))
    return min(plays, key=lambda a: (_value(a["card"]), _rank(a["card"])))


# --- over the network ----------------------------------------------------------------------------

Report = Callable[[int, Action, View], None]
"""Called after each accepted action with (seq, action, the view after it)."""

RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.DEADLINE_EXCEEDED)
WRONG_INPUT = (
    grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED,
)  # fmt: skip
"""Refusals of what the command line gave (a malformed or unknown match id, a token of no seat): exit 2."""


async def run_bot(
    address: str,
    match_id: str,
    token: str,
    *,
    greedy: bool,
    seed: int | None = None,
    think_s: float = 0.0,
    report: Report | None = None,
    client: Client | None = None,
    max_reconnects: int = 20,
    tls: Tls | None = None,
) -> View:
    """Play one seat to the end of the match and return its final view.

    The bot follows its seat's stream and acts on each new view; a dropped stream is resumed after the
    last seq seen. An action refused as illegal (FAILED_PRECONDITION: the state moved on) is not fatal:
    the bot re-reads the view and carries on.
    """
    own = client is None
    client = client or Client(address, tls)
    if own:
        try:
            await client.reachable()  # no service there: say so now, not after max_reconnects attempts
        except BaseException:
            await client.close()
            raise
    bot = _Bot(client.seat(match_id, token), random.Random(seed), greedy, think_s, report)
    failures = 0
    try:
        while True:
            told = 0.0  # the service's retry hint when it refused us for our rate
            try:
                await bot.connected(*await bot.seat.view())
                if is_over(bot.view):
                    return bot.view
                async for seq, update in bot.seat.watch(after_seq=bot.seq):
                    failures = 0
                    await bot.see(seq, update)
                    if is_over(bot.view):
                        return bot.view
                if is_over(bot.view):
                    return bot.view
            except TablehallError as error:
                if error.status not in RETRYABLE and error.retry_after_s is None:
                    raise
                told = error.retry_after_s or 0.0
                log.info("bot: stream of %s dropped (%s); resuming after seq %d", match_id, error, bot.seq)
            failures += 1
            if failures > max_reconnects:
                raise ConnectionError(f"the stream of match {match_id} kept dropping; gave up after seq {bot.seq}")
            await asyncio.sleep(max(told, min(0.05 * 2**failures, 1.0)))
    finally:
        if own:
            await client.close()


class _Bot:
    """One seat's latest view (by seq) and the acting on each new one."""

    def __init__(self, seat: SeatClient, rng: random.Random, greedy: bool, think_s: float, report: Report | None):
        self.seat = seat
        self.rng = rng
        self.greedy = greedy
        self.think_s = think_s
        self.report = report
        self.seq = 0
        self.view: View = {}

    async def connected(self, seq: int, view: View) -> None:
        """The current view on (re)connecting. The first one is where the bot starts. Later, if nothing
        changed since the last view seen, an action lost with the connection is sent again; otherwise the
        stream, resumed after the last seq seen, brings every change in order."""
        if self.seq == 0 or seq == self.seq:
            await self.see(seq, view, again=True)

    async def see(self, seq: int, view: View, again: bool = False) -> None:
        """A view from the stream: act on it if it is new, then on each reply while there is more to do."""
        if seq < self.seq or (seq == self.seq and not again):
            return  # already seen (our own reply arrived first)
        self.seq, self.view = seq, view
        rereads = 0
        while not is_over(self.view):
            action = choose(self.view, self.rng, self.greedy)
            if action is None:
                return
            if self.think_s > 0:
                await asyncio.sleep(self.think_s)
            try:
                seq, after = await self.seat.act(action)
            except TablehallError as error:
                if error.retry_after_s is not None:  # over our request budget: wait as told, then again
                    await asyncio.sleep(error.retry_after_s)
                    continue
                if error.status is not grpc.StatusCode.FAILED_PRECONDITION:
                    raise
                if rereads:
                    log.warning("bot: %s refused again (%s); waiting for the next change", action, error)
                    return
                log.info("bot: %s refused (%s); re-reading the view", action, error)
                rereads += 1
                seq, after = await self.seat.view()
                if seq <= self.seq:
                    return  # nothing new yet: the stream brings the change
            else:
                rereads = 0
                if self.report is not None:
                    self.report(seq, action, after)
            if seq > self.seq:
                self.seq, self.view = seq, after


def bot_command(
    address: str, match_id: str, token: str, greedy: bool, seed: int | None, think_s: float, tls: Tls | None = None
) -> int:
    """`tablehall bot`: play one seat to the end, one line per move, then the result. Exit 2 when it cannot
    start (no service at `address`, a match id or token the service refuses), 1 when lost during the match."""
    from tablehall.render import describe, result_line

    def report(seq: int, action: Action, after: View) -> None:
        print(f"{seq:>4}  {describe(action, after)}", flush=True)

    try:
        final = asyncio.run(
            run_bot(address, match_id, token, greedy=greedy, seed=seed, think_s=think_s, report=report, tls=tls)
        )
    except ServiceUnreachable as error:
        print(f"tablehall bot: {error}", file=sys.stderr)
        return 2
    except TablehallError as error:
        print(f"tablehall bot: match {match_id[:40]}: {error.line()}", file=sys.stderr)
        return 2 if error.status in WRONG_INPUT else 1
    except ConnectionError as error:
        print(f"tablehall bot: {error}", file=sys.stderr)
        return 1
    players = len(final.get("scores") or final.get("points") or [])
    names = [f"seat {i}" + (" (this bot)" if i == final.get("seat") else "") for i in range(players)]
    print(result_line(final, names), flush=True)
    return 0
