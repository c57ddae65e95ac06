"""Bots that play a seat over the service, working only from that seat's view JSON.

The policies live in `workers/bots/` (`decide(view, level, rng, budget)`; `choose` is the random and
greedy one, re-exported here); `run_bot(...)` watches a seat's stream and acts whenever its view has
something to do, at its level and within its per-move budget.

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

import grpc

from tablehall.client import Client, SeatClient, ServiceUnreachable, TablehallError, Tls
from workers.bots import Budget, Level, decide
from workers.bots.budget import move_budget
from workers.bots.policy import NEVER, Action, View, choose, declaration, is_over

__all__ = ["NEVER", "Action", "Budget", "Level", "View", "choose", "decide", "declaration", "is_over", "run_bot"]

log = logging.getLogger("tablehall.bots")

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
    greedy: bool = False,
    level: Level | None = None,
    move_ms: int = 1000,
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
    chosen = level or (Level.GREEDY if greedy else Level.RANDOM)
    bot = _Bot(client.seat(match_id, token), random.Random(seed), chosen, move_ms, think_s, report)
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

    def __init__(
        self, seat: SeatClient, rng: random.Random, level: Level, move_ms: int, think_s: float, report: Report | None
    ):
        self.seat = seat
        self.rng = rng
        self.level = level
        self.move_ms = move_ms
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

    async def decided(self) -> Action | None:
        """This level's action for the current view; a search runs off the event loop, within its budget."""
        if self.level is not Level.SEARCH:
            return decide(self.view, self.level, self.rng)
        budget = move_budget(self.view, self.move_ms)
        return await asyncio.to_thread(decide, self.view, self.level, self.rng, budget)

    async def see(self, seq: int, view: View, again: bool = False) -> None:
        """A view from the stream: act on it if it is new, then on each reply while there is more to do."""
        if seq < self.seq or (seq == self.seq and not again):
            return  # already seen (our own reply arrived first)
        self.seq, self.view = seq, view
        rereads = 0
        while not is_over(self.view):
            action = await self.decided()
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
    address: str,
    match_id: str,
    token: str,
    level: Level,
    seed: int | None,
    think_s: float,
    tls: Tls | None = None,
    move_ms: int = 1000,
) -> int:
    """`tablehall bot`: play one seat to the end, one line per move, then the result. Exit 2 when it cannot
    start (no service at `address`, a match id or token the service refuses), 1 when lost during the match."""
    from tablehall.render import describe, result_line

    def report(seq: int, action: Action, after: View) -> None:
        print(f"{seq:>4}  {describe(action, after)}", flush=True)

    try:
        final = asyncio.run(
            run_bot(
                address, match_id, token, level=level, move_ms=move_ms, seed=seed, think_s=think_s, report=report,
                tls=tls,
            )
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
