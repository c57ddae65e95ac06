"""When a finished match may be rated: not while the public may not see its result, nor before its players'
earlier matches.

- A tournament table with a spectator delay is held until its recorded end is that old — the rule the
  public's views follow (`gateway/tournaments/public.py`): while the director has not recorded the end
  (`batch_tables.status` still `playing`) the table is held too; a table recorded before ends were kept
  (no `ended_unix_ms`) is not.
- Ratings are applied in end order per player: a match waits while an earlier-ended finished match of one
  of its players is unrated. So a held table also holds its players' later matches (whose `before` would
  give its result away), and the final ratings are those of rating every match as it ended.

Both are SQL conditions on a match id column, so that the backlog finds what is due without replaying a
log, and a single match is checked the same way. The tournament tables are named here (their SQLModel
classes live in `gateway/tournaments/schema.py`, a layer above), with the columns this reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, column, func, or_, select, table

from ratings import models as r
from workers.sql import models as m
from workers.sql.models import rows

ORDER_WINDOW_MS = 2 * 3_600_000
"""An earlier unrated match holds a later one only while it ended less than this long ago (twice the longest
spectator delay, an hour): a match that can never be rated (its replay fails) does not hold its players'
ratings for ever."""

_tournaments = table("tournaments", column("id"), column("spectator_delay_ms"))
_batches = table("batches", column("id"), column("tournament_id"))
_tables = table("batch_tables", column("match_id"), column("batch_id"), column("status"), column("ended_unix_ms"))


@dataclass(frozen=True, slots=True)
class Hold:
    """Why a finished match is not rated yet."""

    reason: str
    """`delayed`: the public may not see its result yet; `behind`: an earlier match of its players is unrated."""
    until_unix_ms: int | None = None
    """When to try a `delayed` table again: when its result is shown, or while its end is not recorded yet
    `now` + the delay (its end is past, so its result is shown no later, once recorded). None for `behind`."""


def _delays() -> Any:
    """(match_id, spectator delay, table status, recorded end) of every table of a delayed tournament."""
    t, b, bt = _tournaments.c, _batches.c, _tables.c
    return (
        select(bt.match_id, t.spectator_delay_ms, bt.status, bt.ended_unix_ms)
        .select_from(_tables.join(_batches, b.id == bt.batch_id).join(_tournaments, t.id == b.tournament_id))
        .where(t.spectator_delay_ms > 0)
    )


def delayed(match_id: Any, now: int) -> Any:
    """True where the match is a delayed tournament's table whose result the public may not see at `now`."""
    d = _delays().subquery()
    hidden = or_(d.c.status == "playing", d.c.ended_unix_ms + d.c.spectator_delay_ms > now)
    return select(d.c.match_id).where(d.c.match_id == match_id, hidden).exists()


def behind(match_id: Any, updated_unix_ms: Any, now: int) -> Any:
    """True where an earlier-ended finished match sharing a player with this one is still unrated."""
    mine, theirs, other, done = m.seats.alias(), m.seats.alias(), m.matches.alias(), r.rated_matches
    earlier = or_(
        other.c.updated_unix_ms < updated_unix_ms,
        and_(other.c.updated_unix_ms == updated_unix_ms, other.c.id < match_id),
    )
    return (
        select(other.c.id)
        .select_from(
            mine.join(theirs, theirs.c.player_id == mine.c.player_id).join(other, other.c.id == theirs.c.match_id)
        )
        .where(
            mine.c.match_id == match_id,
            other.c.id != match_id,
            other.c.status == "finished",
            earlier,
            other.c.updated_unix_ms >= now - ORDER_WINDOW_MS,
            ~select(done.c.match_id).where(done.c.match_id == other.c.id).exists(),
        )
        .exists()
    )


def _delay(conn: Connection, match_id: str) -> tuple[int, int | None] | None:
    """A delayed tournament's table: (its delay, its recorded end or None); None for any other match."""
    d = _delays().subquery()
    found = rows(conn, select(d.c.spectator_delay_ms, d.c.ended_unix_ms).where(d.c.match_id == match_id))
    if not found:
        return None
    delay, end = found[0]
    return int(delay), None if end is None else int(end)


def shown_from(conn: Connection, match_id: str) -> int | None:
    """When the public sees the result of a delayed tournament's table (None: not such a table, or its end
    is not recorded yet)."""
    found = _delay(conn, match_id)
    return None if found is None or found[1] is None else found[1] + found[0]


def hold(conn: Connection, match_id: str, now: int) -> Hold | None:
    """Why the finished match `match_id` may not be rated at `now`, or None when it may."""
    t = m.matches
    query = select(delayed(t.c.id, now), behind(t.c.id, t.c.updated_unix_ms, now)).where(t.c.id == match_id)
    found = rows(conn, query)
    if not found:
        return None
    is_delayed, is_behind = found[0]
    if is_delayed:
        delay, end = _delay(conn, match_id) or (0, None)
        return Hold("delayed", now + delay if end is None else end + delay)
    return Hold("behind") if is_behind else None


def last_rated_ms(conn: Connection, game: str, player_ids: list[int]) -> int:
    """When any of these players' ratings in `game` last changed (0: never rated)."""
    t = r.ratings
    query = select(func.max(t.c.updated_unix_ms)).where(t.c.game == game, t.c.player_id.in_(player_ids), t.c.games > 0)
    return int(conn.execute(query).scalar() or 0)
