"""Who sits where at a terminal's match: creating or joining it, the players' names, and how to come back.

A view carries no names, so a terminal names the players itself: the names it created the match with, or
on `--join` the ones given with `--names` (the join and rejoin lines this terminal prints carry them), or
else names by position from the joining seat: "Opponent" in Spectacular Bid, "Left"/"Across"/"Right" at a
501♠ table (seats go clockwise, so the next seat sits on your left).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tablehall.client import Client, SeatClient, TablehallError
from tablehall.render import MatchTime
from workers.games.catalog import FIVE_OH_ONE, SPECTACULAR_BID

View = dict[str, Any]
SB = SPECTACULAR_BID


class CannotStart(Exception):
    """What the command line gave cannot start a match (exit 2)."""


@dataclass(frozen=True, slots=True)
class Table:
    """The seats this terminal plays and the bots it runs, once the match exists."""

    match_id: str
    seats: dict[int, SeatClient]
    tokens: dict[int, str]
    """Every seat token known here (all of a match created here; the joined seat's): what rejoins it."""
    names: list[str]
    bot_tokens: dict[int, str]
    clock_origin: float | None = None

    def join_line(self, address: str, seat: int) -> str:
        names = shlex.quote(",".join(self.names))
        return (
            f"tablehall play --address {address} --join {self.match_id} --token {self.tokens.get(seat, '')} "
            f"--names {names}"
        )


async def join(client: Client, match_id: str, token: str | None, name: str, names: str | None) -> Table:
    if not token:
        raise CannotStart("--join needs --token (the seat's token)")
    seat = client.seat(match_id, token)
    try:
        _, view = await seat.view()
    except TablehallError as error:
        raise CannotStart(f"cannot join match {match_id[:40]}: {error.line()}") from None
    mine = int(view["seat"])
    count = len(view.get("scores") or view.get("points") or [])
    given = [n.strip() for n in (names or "").split(",")]
    if names is None or len(given) != count or not all(given):
        if names is not None:
            raise CannotStart(f"--names needs {count} names, comma-separated (one per seat, in seat order)")
        given = by_position(mine, count, name)
    return Table(match_id, {mine: seat}, {mine: token}, given, {})


def by_position(mine: int, count: int, name: str) -> list[str]:
    """Names for a seat that joined without `--names`: theirs, and the others by where they sit."""
    around = ["Opponent"] if count == 2 else (["Left", "Right"] if count == 3 else ["Left", "Across", "Right"])
    names = [""] * count
    names[mine] = name
    for step, where in enumerate(around, 1):
        names[(mine + step) % count] = where
    return names


async def create(
    client: Client, game: str, vs: str, shared: bool, count: int, name: str, options: Mapping[str, Any] | None
) -> Table:
    names = player_names(name, count, vs, shared)
    clock_origin = MatchTime.local_ms()
    try:
        created = await client.create_match(game, names, options, shared_device=shared and game == SB)
    except TablehallError as error:
        raise CannotStart(f"cannot create the match: {error.line()}") from None
    humans = range(count) if shared else range(1)
    seats = {i: client.seat(created.match_id, created.tokens[i]) for i in humans}
    robots = range(1, count) if vs == "bot" and not shared else range(0)
    bot_tokens = {i: created.tokens[i] for i in robots}
    return Table(created.match_id, seats, dict(enumerate(created.tokens)), names, bot_tokens, clock_origin)


def player_names(name: str, count: int, vs: str, shared: bool) -> list[str]:
    """The names a match is created with. Playing a friend, "You" would name you on their screen too, so
    the default name becomes "Host" there."""
    if shared:
        return [f"Player {i + 1}" for i in range(count)]
    others = "Bot" if vs == "bot" else "Friend"
    if vs == "friend" and name == "You":
        name = "Host"
    if count == 2:
        return [name, others]
    return [name, *(f"{others} {i}" for i in range(1, count))]


def introduce(address: str, game: str, vs: str, shared: bool, table: Table) -> list[str]:
    lines = [f"Match {table.match_id} ({game}) on {address}: " + ", ".join(table.names)]
    if vs == "friend" and not shared:
        lines += [f"  {table.names[s]} joins with: {table.join_line(address, s)}" for s in range(1, len(table.names))]
    elif vs == "bot" and not shared:
        lines.append(f"  Back to your seat later (the match goes on without you): {table.join_line(address, 0)}")
    return lines


def leave_lines(address: str, table: Table, view: View, interrupted: bool = False) -> list[str]:
    """What leaving a match that goes on means for the table, and how to come back."""
    if interrupted:
        lines = [f"Interrupted: you left match {table.match_id}, and it goes on without you."]
        lines.append(_clock_words(view))
    else:
        why = ": 501♠ has no resignation" if view.get("game") == FIVE_OH_ONE else ""
        lines = [f"You left match {table.match_id}. It is not over{why}; the table waits for you."]
    lines += [f"  Back to seat {seat} ({table.names[seat]}): {table.join_line(address, seat)}" for seat in table.seats]
    if table.bot_tokens:
        lines.append("  The bots stopped with this terminal; each plays on with:")
        lines += [f"    tablehall bot --address {address} --match {table.match_id} --token {token}"
                  for token in table.bot_tokens.values()]  # fmt: skip
    if not interrupted or view.get("game") == FIVE_OH_ONE:
        if view.get("limit_ms"):
            lines.append("  Nobody back in time: a seat whose decision limit runs out loses the game.")
        else:
            lines.append("  Nobody back: the service voids a table with no move for an hour (abandoned, never rated).")
    return lines


def _clock_words(view: View) -> str:
    if view.get("game") == FIVE_OH_ONE:
        if view.get("limit_ms"):
            return "  Your decisions keep their time limit: one that runs out loses you the game."
        return "  501♠ has no clock here: the table simply waits for your next decision."
    return (
        "  Your clock runs whenever it is your move (the bank is never stopped for you): "
        "if it runs out you lose on time."
    )


def play_options(game: str, points: int | None, bank_s: float | None, start_score: int | None) -> dict[str, Any]:
    """Match options from the command line, for the game that takes them."""
    if game == SB:
        chosen: dict[str, Any] = {"start_points": points, "bank_s": bank_s}
    else:
        chosen = {"start_score": start_score}
    return {key: value for key, value in chosen.items() if value is not None}


def first_of(seats: Sequence[int] | Mapping[int, Any]) -> int:
    return min(seats)
