"""The arguments of the organizers' commands (`tablehall organizer | tables | tournament`), kept apart from
their implementation (tablehall/organize.py) so that `tablehall` starts without loading gRPC."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tablehall.play_args import BANK_HELP, DELAY_HELP, POINTS_HELP, START_SCORE_HELP
from tablehall.tls_args import add_client_tls
from workers.games.catalog import names


def add_commands(commands: Any, address: str) -> None:
    organizer = commands.add_parser("organizer", help="organizer keys for the Tournaments API")
    org = organizer.add_subparsers(dest="kind", required=True)
    make = org.add_parser("create", help="create an organizer; prints its key once")
    make.add_argument("name")
    make.add_argument("--database-url", default=None, help="the service's database (TABLEHALL_DATABASE_URL)")
    organizer.set_defaults(run=run_organize)

    def remote(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--address", default=address, help=f"the service (env TABLEHALL_ADDRESS; now {address})")
        parser.add_argument("--key", default=None, help="organizer key (env TABLEHALL_ORGANIZER_KEY)")
        add_client_tls(parser)

    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--game", required=True, choices=names())
        parser.add_argument("--start-at", default=None, help="when the clocks start: ISO time, or +90s / +10m / +1h")
        parser.add_argument("--points", type=int, default=None, help=POINTS_HELP)
        parser.add_argument("--bank", type=float, default=None, help=BANK_HELP)
        parser.add_argument("--delay", type=float, default=None, help=DELAY_HELP)
        parser.add_argument("--start-score", type=int, default=None, help=START_SCORE_HELP)
        parser.add_argument("--decision-limit", type=float, default=None, help="501♠: seconds per decision")
        parser.add_argument("--out", type=Path, default=None, help="write the tokens here as CSV (default: stdout)")

    tables = commands.add_parser("tables", help="many tables in one call (bulk pairing)")
    tables.set_defaults(run=run_organize)
    tab = tables.add_subparsers(dest="kind", required=True)
    bulk = tab.add_parser("create", help="create the tables of a CSV file (one table per line, seats in order)")
    bulk.add_argument("--tables", type=Path, required=True)
    options(bulk)
    remote(bulk)
    start = tab.add_parser("start", help="start a batch's held tables now")
    start.add_argument("batch")
    remote(start)

    tournament = commands.add_parser("tournament", help="run a tournament")
    tournament.set_defaults(run=run_organize)
    tour = tournament.add_subparsers(dest="kind", required=True)
    new = tour.add_parser("create", help="create a tournament; round 1 is scheduled with a progress bar")
    new.add_argument("--name", required=True)
    new.add_argument("--players", type=Path, required=True, help="CSV: one player per line, seeding order")
    new.add_argument("--format", required=True, choices=["swiss", "round-robin", "seating"])
    new.add_argument("--rounds", type=int, default=0, help="0: the format's default")
    new.add_argument("--voided", default="replay", choices=["replay", "draw"], help="what a voided table counts as")
    new.add_argument("--manual", action="store_true", help="start each next round yourself (tournament next)")
    new.add_argument("--round-pause", type=float, default=None, help="seconds from a round's end to the next (30)")
    new.add_argument("--spectator-delay", type=spectator_delay, default=0, metavar="S",
                     help="spectators see each table S seconds late, 0 to 3600 (default 0: live)")  # fmt: skip
    options(new)
    remote(new)
    for kind, text in [("status", "rounds and tables"), ("standings", "the standings"), ("next", "the next round")]:
        one = tour.add_parser(kind, help=text)
        one.add_argument("tournament")
        remote(one)
    export = tour.add_parser("export", help="every ended table's record in one .tar.gz archive")
    export.add_argument("tournament", nargs="?", default=None)
    export.add_argument("--batch", default=None, help="a batch of tables instead of a tournament")
    export.add_argument("--out", type=Path, required=True)
    remote(export)
    bot = tour.add_parser("bot", help="a bot that plays one player's tables (their tournament token) to the end")
    bot.add_argument("tournament")
    bot.add_argument("--token", required=True)
    bot.add_argument("--address", default=address)
    add_client_tls(bot)


def run_organize(args: argparse.Namespace) -> int:
    """Every organizer command: tablehall/organize.py (and gRPC) loaded only now."""
    from tablehall.organize import run

    return run(args)


def spectator_delay(text: str) -> int:
    """Whole seconds, 0 to 3600 (argparse says what is wrong with anything else, exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number of seconds") from None
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError("the spectator delay is 0 to 3600 s")
    return value
