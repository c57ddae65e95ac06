"""Practice bots at Lobby tables ("play a bot"): a table of the caller and bot players, made like any Lobby
table, and the seats of those bots played from the gateway that holds the Lobby's lease.

A bot is a player of its own (`Bot (search)`, … rated like anyone, so its level shows on the leaderboard),
with a key nobody knows: only its hash is stored, which is all a gateway needs to act for the seat. Names
with parentheses cannot be registered, so no person can take a bot's name. A bot sees only its seat's view
(`workers.bots.decide`); the search level thinks in a process pool (`workers.offload`), never on the loop
that runs match clocks, within `MOVE_MS` a move and a share of the time its clock leaves it.

The runners live in the Lobby's leader: a beat starts a runner for each bot seat at a table still being
played and stops them all when the lease is lost; the next leader (or the same one after a restart) picks
them up from the database, each from the match's current view.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import random
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError

from gateway.lobby import queue
from gateway.lobby import schema as s
from gateway.lobby.players import Player
from gateway.lobby.queue import PlacedSeat, Queue, SeatAt
from gateway.workers import Router
from protos.tablehall.v1 import host_pb2, matches_pb2
from workers import offload
from workers.bots import Budget, Level, decide, is_over
from workers.bots.budget import move_budget
from workers.bots.policy import Action, View
from workers.games.errors import MalformedAction, quote
from workers.sql import models as m
from workers.sql.engine import reading
from workers.sql.models import rows
from workers.typed_views import view_dict
from workers.typed_views.legal import action_message

log = logging.getLogger("tablehall.lobby.bots")

MOVE_MS = 1000
"""What a search bot thinks at most per move (less when its clock is short: `move_budget`)."""
RETRY_S = 0.5
"""A runner whose stream broke (its match moved, a worker restarted) watches again after this."""


def bot_name(level: Level, number: int) -> str:
    """The name of a bot player: `Bot (search)`, then `Bot (search) 2`, … for a table's further bots."""
    return f"Bot ({level.value})" + (f" {number}" if number > 1 else "")


def level_named(name: str) -> Level:
    """The level a caller asked for (`random`, `greedy` or `search`; empty: `search`)."""
    try:
        return Level(name or Level.SEARCH.value)
    except ValueError:
        raise MalformedAction(f"{quote(name)} is no bot level: random, greedy or search") from None


@dataclass(frozen=True, slots=True)
class BotPlayer:
    player_id: int
    level: Level
    key_sha256: bytes


def bot_players(engine: Engine, level: Level, count: int) -> list[BotPlayer]:
    """The first `count` bot players of a level, made (with a key nobody is given) on first use."""
    return [_bot_player(engine, level, number) for number in range(1, count + 1)]


def _bot_player(engine: Engine, level: Level, number: int) -> BotPlayer:
    name, p, k = bot_name(level, number), m.players, s.player_keys
    for _ in range(3):  # another gateway may make the same bot at the same moment: read it then
        with engine.begin() as conn:
            mine = p.outerjoin(k, k.c.player_id == p.c.id)
            found = conn.execute(select(p.c.id, k.c.key_sha256).select_from(mine).where(p.c.name == name)).first()
            if found is not None and found[1] is not None:
                return BotPlayer(int(found[0]), level, bytes(found[1]))
            try:
                with conn.begin_nested():
                    player_id = found[0] if found is not None else conn.execute(
                        p.insert().values(name=name).returning(p.c.id)
                    ).scalar_one()
                    sha = hashlib.sha256(secrets.token_bytes(32)).digest()
                    conn.execute(k.insert().values(player_id=player_id, key_sha256=sha, registered_unix_ms=0))
                return BotPlayer(int(player_id), level, sha)
            except IntegrityError:
                continue
    raise RuntimeError(f"the bot player {name!r} could not be made")


def open_bot_table(engine: Engine, me: Player, where: Queue, level: Level, now_ms: int) -> str:
    """A table of the caller and bots of `level` (the caller's seat drawn at random), as `creating`."""
    seats = queue.table_sizes(where.game)[-1]
    bots = bot_players(engine, level, seats - 1)
    ticket = "bot-" + secrets.token_hex(6)
    at = [SeatAt(b.player_id, ticket, now_ms) for b in bots]
    at.insert(secrets.randbelow(seats), SeatAt(me.id, ticket, now_ms))
    match_id = secrets.token_hex(8)
    with engine.begin() as conn:
        queue.write_table(conn, match_id, where, at, 0.0, now_ms)
    return match_id


def bot_seats(engine: Engine) -> list[tuple[BotPlayer, PlacedSeat]]:
    """Every bot seat at a Lobby table still being played."""
    p, k = m.players, s.player_keys
    query = select(p.c.id, p.c.name, k.c.key_sha256).select_from(p.join(k, k.c.player_id == p.c.id))
    query = query.where(p.c.name.like("Bot (%)%"))
    with reading(engine) as conn:
        bots = {int(pid): (str(name), bytes(sha)) for pid, name, sha in rows(conn, query)}
    found = queue.seats_of(engine, sorted(bots)) if bots else []
    out = []
    for player_id, seat in found:
        name, sha = bots[player_id]
        out.append((BotPlayer(player_id, Level(name.split("(")[1].split(")")[0]), sha), seat))
    return out


def _search(view: View, seed: int, seconds: float | None) -> Action | None:
    """A search decision in the bots' pool process."""
    return decide(view, Level.SEARCH, random.Random(seed), Budget(iterations=None if seconds else 200, seconds=seconds))


class BotSeats:
    """The runners of the bot seats this gateway plays (while it leads the Lobby)."""

    def __init__(self, router: Router, move_ms: int = MOVE_MS) -> None:
        self.router = router
        self.move_ms = move_ms
        self.running: dict[tuple[str, int], asyncio.Task[None]] = {}

    def keep(self, seats: list[tuple[BotPlayer, PlacedSeat]]) -> None:
        """Start a runner for each bot seat without one."""
        for bot, seat in seats:
            key = (seat.match_id, seat.seat)
            if key not in self.running:
                task = asyncio.create_task(self.play(bot, seat.match_id), name=f"bot {seat.match_id}/{seat.seat}")
                self.running[key] = task
                task.add_done_callback(self._ended(key))

    def _ended(self, key: tuple[str, int]) -> Callable[[asyncio.Task[None]], None]:
        def ended(_task: asyncio.Task[None]) -> None:
            self.running.pop(key, None)

        return ended

    async def stop(self) -> None:
        """Stop every runner (the lease was lost, or the gateway stops)."""
        tasks = list(self.running.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def play(self, bot: BotPlayer, match_id: str) -> None:
        """Follow the bot's seat and act whenever its view has something to do, until the match ends."""
        rng = random.Random(secrets.randbits(64))
        after = 0
        while True:
            try:
                request = host_pb2.HostWatchRequest(
                    match_id=match_id, token_sha256=bot.key_sha256, after_seq=after,
                    views=matches_pb2.VIEW_FORMAT_JSON,
                )  # fmt: skip
                async for posted in self.router.owner(match_id).watch(request):
                    after = posted.seq
                    view = view_dict(posted.update())
                    if is_over(view):
                        return
                    action = await self.decide(view, bot.level, rng)
                    if action is not None:
                        await self.act(bot, match_id, action)
                return
            except asyncio.CancelledError:
                raise
            except Exception as error:  # a stream cut by a move or a restart: watch again from `after`
                log.info("bot at %s: %s; watching again", match_id, type(error).__name__)
                await asyncio.sleep(RETRY_S)

    async def decide(self, view: View, level: Level, rng: random.Random) -> Action | None:
        if level is not Level.SEARCH:
            return decide(view, level, rng)
        if not view.get("legal"):
            return None
        seconds = move_budget(view, self.move_ms).seconds
        return await offload.run("bots", _search, view, rng.randrange(1 << 62), seconds)

    async def act(self, bot: BotPlayer, match_id: str, action: Action) -> None:
        request = host_pb2.HostCommandRequest(
            match_id=match_id, token_sha256=bot.key_sha256, action=action_message(action),
            arrival_unix_ms=time.time_ns() // 1_000_000,
        )  # fmt: skip  # stamped as the gateway stamps a player's command (SB-10)
        try:
            await self.router.owner(match_id).command(request)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the match moved on (a refusal changes nothing): the next view decides
            log.debug("bot at %s: %s refused (%s)", match_id, action.get("do"), error)
