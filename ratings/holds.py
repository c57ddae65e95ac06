"""When a finished match may be rated: not while the public may not see its result, nor while a tournament its
players are entered in hides a result, nor before its players' earlier matches.

- `delayed`: a tournament table with a spectator delay is held until its recorded end is that old — the
  rule the public's views follow (`gateway/tournaments/public.py`): while the director has not recorded
  the end (`batch_tables.status` still `playing`) the table is held too; a table recorded before ends were
  kept (no `ended_unix_ms`) is not.
- `entered`: a match is held while one of its players is entered in a delayed tournament (its roster,
  `tournament_players`) that has a table begun before the match ended whose result is not public yet —
  *whether or not that table has ended*. Held only behind an ended table, a casual match would tell that
  the table ended (rated at once while it still plays, held once it ended); this rule asks only what the
  public sees (is the result shown yet?), so it cannot tell either. It takes every table of the
  tournament, not only the player's own: a player with a bye, or between rounds, sits at a table of the
  next round only once the round before it ended, and holding their match only then would tell that.
  A table counts from its start (`matches.created_unix_ms`, its time origin, which the public sees as the
  round's start), not from its round's creation: it cannot end before it starts, so a match that ended
  earlier comes first in end order whatever the table does (a round created ahead of its start holds
  nothing yet). A tournament's own tables do not hold each other: a player's next table starts only
  after their previous one ended, and the public sees them in that order.
- `behind`: ratings are applied in end order per player: a match waits while an earlier-ended finished
  match of one of its players is unrated. So a held table also holds its players' later matches (whose
  `before` would give its result away), and the final ratings are those of rating every match as it ended.
- Nothing is held for ever: `entered` and `behind` end `ORDER_WINDOW_MS` after the held match's own end, a
  public instant that says nothing of any table. A table that plays longer than that (a long 501♠ game)
  holds its players' matches for the window only; they are then rated while it still plays, still in end
  order: the window (two hours) is longer than any delay (an hour), so a table that ended before such a
  match is public, and rated, before the window closes, and one that ends later comes after it anyway.

Each is an SQL condition on a match id column (and its end), so that the backlog finds what is due without
replaying a log, and a single match is checked the same way; a held match has no marker, so the backlog of
whichever process runs after its reveal rates it, across restarts. The tournament tables are named here
(their SQLModel classes live in `gateway/tournaments/schema.py`, a layer above), with the columns this reads.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from sqlalchemy import BigInteger, Connection, String, and_, bindparam, case, column, func, or_, select, table

from ratings import models as r
from workers.sql import models as m

ORDER_WINDOW_MS = 2 * 3_600_000
"""A match waits for an earlier unrated match of its players (`behind`), or for a hidden result of their
tournaments (`entered`), only until it ended this long ago (twice the longest spectator delay, an hour): a
match that can never be rated (its replay fails) or a table that plays for hours does not hold its players'
ratings for ever."""
RECHECK_MS = 30_000
"""A match held by a table still playing is tried again after that table's delay and no sooner than this
(the Celery backlog's period): when its result is shown is not known before it ends."""

_tournaments = table("tournaments", column("id"), column("spectator_delay_ms"))
_players = table("tournament_players", column("tournament_id"), column("name"))
_batches = table("batches", column("id"), column("tournament_id"))
_tables = table("batch_tables", column("match_id"), column("batch_id"), column("status"), column("ended_unix_ms"))

MATCH = bindparam("match_id", type_=String)
NOW = bindparam("now", type_=BigInteger)
_ENDED = bindparam("ended", type_=BigInteger)
"""The queries below are built once, with these parameters: building one (its subqueries, aliases and their
columns) cost SQLAlchemy more than running it (a match's rating took 43 ms of CPU, most of it building)."""


@dataclass(frozen=True, slots=True)
class Hold:
    """Why a finished match is not rated yet."""

    reason: str
    """`delayed`: the public may not see its result yet; `entered`: a tournament one of its players is entered
    in hides a result; `behind`: an earlier match of its players is unrated."""
    until_unix_ms: int | None = None
    """When to try a `delayed` table again: when its result is shown, or while its end is not recorded yet
    `now` + the delay (its end is past, so its result is shown no later, once recorded). An `entered` match:
    when the last hidden result is shown (a table still playing: `now` + its delay, at least `RECHECK_MS`),
    at the latest its own end + `ORDER_WINDOW_MS`. None for `behind`."""


def _delays() -> Any:
    """(match_id, tournament, spectator delay, table status, recorded end) of every table of a delayed
    tournament."""
    t, b, bt = _tournaments.c, _batches.c, _tables.c
    return (
        select(bt.match_id, b.tournament_id, t.spectator_delay_ms, bt.status, bt.ended_unix_ms)
        .select_from(_tables.join(_batches, b.id == bt.batch_id).join(_tournaments, t.id == b.tournament_id))
        .where(t.spectator_delay_ms > 0)
    )


def _hidden(d: Any, now: Any) -> Any:
    """True where a delayed table's result is not public at `now`: playing or its end not recorded, or
    recorded less than the delay ago (a table still playing and an ended, hidden one alike)."""
    return or_(d.c.status == "playing", d.c.ended_unix_ms + d.c.spectator_delay_ms > now)


def delayed(match_id: Any, now: Any) -> Any:
    """True where the match is a delayed tournament's table whose result the public may not see at `now`."""
    d = _delays().subquery()
    return select(d.c.match_id).where(d.c.match_id == match_id, _hidden(d, now)).exists()


def _entered_tables(match_id: Any, updated_unix_ms: Any) -> tuple[Any, Any]:
    """The tables that may hold this match (`entered`): every table, begun before it ended and hidden then, of
    a delayed tournament one of its players is entered in, other than its own tournament. A query on them
    (correlated with `match_id`), and the `_delays` subquery whose columns it may select.

    Read from the delayed tournaments (few) down: each is asked whether a player of the match is on its
    roster (`uq_tournament_players_name`: tournament, name), then only its batches' tables are read."""
    t, b = _tournaments.alias().c, _batches.c
    mine, named, started = m.seats.alias(), m.players.alias(), m.matches.alias()
    own, own_batch = _tables.alias(), _batches.alias()
    on_roster = (
        select(_players.c.name)
        .select_from(mine.join(named, named.c.id == mine.c.player_id))
        .where(mine.c.match_id == match_id, _players.c.tournament_id == t.id, _players.c.name == named.c.name)
        .correlate_except(mine, named, _players)  # `match_id` may be a column of a query two levels up
        .exists()
    )
    own_tournament = (
        select(own.c.match_id)
        .select_from(own.join(own_batch, own_batch.c.id == own.c.batch_id))
        .where(own.c.match_id == match_id, own_batch.c.tournament_id == t.id)
        .correlate_except(own, own_batch)
        .exists()
    )
    # OFFSET 0: PostgreSQL keeps it a subquery, read first, rather than a join it may read last
    entered_in = select(t.id).where(t.spectator_delay_ms > 0, on_roster, ~own_tournament).offset(0)
    their_batches = select(b.id).where(b.tournament_id.in_(entered_in))
    d = _delays().where(_tables.c.batch_id.in_(their_batches)).subquery()
    start = select(started.c.created_unix_ms).where(started.c.id == d.c.match_id).scalar_subquery()
    query = select(d.c.match_id).where(_hidden(d, updated_unix_ms), start < updated_unix_ms)
    return query, d


def entered(match_id: Any, updated_unix_ms: Any, now: Any) -> Any:
    """True where a delayed tournament one of this match's players is entered in has a table, begun before
    this match ended, whose result is not public at `now` (ended or not), and the match ended less than
    `ORDER_WINDOW_MS` ago."""
    query, d = _entered_tables(match_id, updated_unix_ms)
    return and_(updated_unix_ms >= now - ORDER_WINDOW_MS, query.where(_hidden(d, now)).exists())


def behind(match_id: Any, updated_unix_ms: Any, now: Any) -> Any:
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


def blocked(now: Any) -> Any:
    """The ids `behind` is true of, as one set for the backlog: each finished, unrated match that ended within
    the window after another such match of one of its players. Each player's unrated matches are ranked once
    (a window function), so the backlog costs about its unrated matches, not each of them times every match
    of its players (the correlated `behind`, 0.3 s a read for 400 unrated matches of the same two players).
    A match that ended before the window is never behind: whatever is earlier ended before it too."""
    t, s, done = m.matches, m.seats, r.rated_matches
    unrated = (
        select(t.c.id, t.c.updated_unix_ms)
        .where(
            t.c.status == "finished",
            t.c.updated_unix_ms >= now - ORDER_WINDOW_MS,
            ~select(done.c.match_id).where(done.c.match_id == t.c.id).exists(),
        )
        .subquery("unrated")
    )
    first = func.first_value(unrated.c.id).over(
        partition_by=s.c.player_id, order_by=(unrated.c.updated_unix_ms, unrated.c.id)
    )
    seated = select(unrated.c.id, first.label("first")).select_from(unrated.join(s, s.c.match_id == unrated.c.id))
    ranked = seated.subquery("ranked")
    return select(ranked.c.id).where(ranked.c.id != ranked.c.first)


@functools.cache
def _delay_query() -> Any:
    d = _delays().subquery()
    return select(d.c.spectator_delay_ms, d.c.ended_unix_ms).where(d.c.match_id == MATCH)


def _delay(conn: Connection, match_id: str) -> tuple[int, int | None] | None:
    """A delayed tournament's table: (its delay, its recorded end or None); None for any other match."""
    found: list[Any] = list(conn.execute(_delay_query(), {"match_id": match_id}).all())
    if not found:
        return None
    delay, end = found[0]
    return int(delay), None if end is None else int(end)


def shown_from(conn: Connection, match_id: str) -> int | None:
    """When the public sees the result of a delayed tournament's table (None: not such a table, or its end
    is not recorded yet)."""
    found = _delay(conn, match_id)
    return None if found is None or found[1] is None else found[1] + found[0]


@dataclass(frozen=True, slots=True)
class _Entered:
    """What the tables that may hold a match (`entered`) say of when it is free."""

    tables: int
    playing: int
    """Of them, those whose end is not recorded (when their result is shown is not known yet)."""
    longest_delay_playing: int
    last_shown: int
    """When the last recorded one's result is (or was) shown; 0: none, or shown at once."""


@functools.cache
def _entered_summary_query() -> Any:
    query, d = _entered_tables(MATCH, _ENDED)
    playing = d.c.status == "playing"
    shown = func.coalesce(d.c.ended_unix_ms + d.c.spectator_delay_ms, 0)
    return query.with_only_columns(
        func.count(),
        func.coalesce(func.sum(case((playing, 1), else_=0)), 0),
        func.coalesce(func.max(case((playing, d.c.spectator_delay_ms), else_=0)), 0),
        func.coalesce(func.max(case((playing, 0), else_=shown)), 0),
    )


def _entered_summary(conn: Connection, match_id: str, ended_ms: int) -> _Entered:
    """`_Entered` for this match, counted in the database (a large tournament has many tables)."""
    found: list[Any] = list(conn.execute(_entered_summary_query(), {"match_id": match_id, "ended": ended_ms}).all())
    return _Entered(*(int(x) for x in found[0]))


def _entered_until(found: _Entered, ended_ms: int, now: int) -> int:
    """When to try an `entered` match again: once the last hidden result may be shown, within the window."""
    due = found.last_shown
    if found.playing:
        due = max(due, now + max(found.longest_delay_playing, RECHECK_MS))
    return min(due, ended_ms + ORDER_WINDOW_MS)


def released_ms(conn: Connection, match_id: str, ended_ms: int) -> int:
    """When its players' tournaments stopped holding this finished match (`entered`): the last result shown,
    at the latest its end + `ORDER_WINDOW_MS` (0: nothing held it). What its rating lag counts from."""
    found = _entered_summary(conn, match_id, ended_ms)
    if not found.tables:
        return 0
    window = ended_ms + ORDER_WINDOW_MS
    return window if found.playing else min(window, found.last_shown)


@functools.cache
def _hold_query() -> Any:
    t = m.matches
    end = t.c.updated_unix_ms
    return select(delayed(t.c.id, NOW), entered(t.c.id, end, NOW), behind(t.c.id, end, NOW), end).where(t.c.id == MATCH)


def hold(conn: Connection, match_id: str, now: int) -> Hold | None:
    """Why the finished match `match_id` may not be rated at `now`, or None when it may."""
    found: list[Any] = list(conn.execute(_hold_query(), {"match_id": match_id, "now": now}).all())
    if not found:
        return None
    is_delayed, is_entered, is_behind, ended_ms = found[0]
    if is_delayed:
        delay, recorded = _delay(conn, match_id) or (0, None)
        return Hold("delayed", now + delay if recorded is None else recorded + delay)
    if is_entered:
        return Hold("entered", _entered_until(_entered_summary(conn, match_id, int(ended_ms)), int(ended_ms), now))
    return Hold("behind") if is_behind else None


def last_rated_ms(conn: Connection, game: str, player_ids: list[int]) -> int:
    """When any of these players' ratings in `game` last changed (0: never rated)."""
    return int(conn.execute(_last_rated_query(), {"game": game, "ids": player_ids}).scalar() or 0)


@functools.cache
def _last_rated_query() -> Any:
    """Built once (a rating asks for every match): building it cost more than running it."""
    t = r.ratings
    ids = t.c.player_id.in_(bindparam("ids", expanding=True))
    return select(func.max(t.c.updated_unix_ms)).where(t.c.game == bindparam("game"), ids, t.c.games > 0)
