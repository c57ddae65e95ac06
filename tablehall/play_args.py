"""The terminal's players on the command line (`tablehall demo | play | bot`): their arguments and one small
handler each; the client code (tablehall/play.py, demo.py, bots.py) is imported only when a handler runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tablehall.tls_args import add_client_tls, client_tls
from workers.games.catalog import FIVE_OH_ONE, SPECTACULAR_BID, names, option_default, seat_counts

POINTS_HELP = f"Spectacular Bid: starting points ({option_default(SPECTACULAR_BID, 'start_points')})"
BANK_HELP = f"Spectacular Bid: bank seconds ({option_default(SPECTACULAR_BID, 'bank_s')})"
DELAY_HELP = f"Spectacular Bid: delay seconds ({option_default(SPECTACULAR_BID, 'delay_s')})"
START_SCORE_HELP = f"501♠: starting score ({option_default(FIVE_OH_ONE, 'start_score')})"
"""The match options' help texts, their defaults read from each game's declaration (also organize_args)."""

LEVELS = ["random", "greedy", "search"]
"""The bot levels (workers.bots.Level), named here so that the CLI starts without loading the bots."""


def add_demo(commands: Any) -> None:
    demo = commands.add_parser("demo", help="bots play a match, shown turn by turn")
    demo.add_argument("--game", default=SPECTACULAR_BID, choices=names())
    demo.add_argument("--players", type=int, default=None, help=f"501♠: {seat_counts(FIVE_OH_ONE)} players")
    demo.add_argument("--seed", type=int, default=None, help="repeat a demo (default: CSPRNG deals)")
    demo.add_argument("--pace", type=float, default=0.6, help="seconds between moves on screen (0: no pauses)")
    demo.add_argument("--greedy", action="store_true", help="bots prefer scoring plays")
    demo.add_argument("--record", type=Path, default=None, help="also write the match record here")
    demo.add_argument("--json", action="store_true", help="print only the outcome as JSON, no story, no pauses")
    demo.set_defaults(run=run_demo)


def add_commands(commands: Any, address: str) -> None:
    """`play` and `bot`, both talking to the service at `address` unless told otherwise."""
    play = commands.add_parser("play", help="play a match in the terminal (vs bots, a friend, or one shared device)")
    play.add_argument("--address", default=address, help=f"the service (env TABLEHALL_ADDRESS; now {address})")
    play.add_argument("--game", default=SPECTACULAR_BID, choices=names())
    play.add_argument("--vs", default="bot", choices=["bot", "friend"], help="who plays the other seats")
    play.add_argument("--join", metavar="MATCH", default=None, help="play a seat of an existing match")
    play.add_argument("--token", default=None, help="the seat's token (with --join)")
    play.add_argument("--shared-device", action="store_true", help="every seat on this terminal, hand-over screens")
    play.add_argument("--players", type=int, default=None, help=f"501♠: {seat_counts(FIVE_OH_ONE)} players")
    play.add_argument("--name", default="You")
    play.add_argument("--names", default=None, help="with --join: every seat's name, comma-separated, in seat order")
    play.add_argument("--think", type=float, default=0.5, help="seconds each bot waits before its move")
    play.add_argument("--points", type=int, default=None, help=POINTS_HELP)
    play.add_argument("--bank", type=float, default=None, help=BANK_HELP)
    play.add_argument("--start-score", type=int, default=None, help=START_SCORE_HELP)
    add_client_tls(play)
    play.set_defaults(run=run_play)

    bot = commands.add_parser("bot", help="a bot that joins a match with a seat token and plays it to the end")
    bot.add_argument("--address", default=address, help=f"the service (env TABLEHALL_ADDRESS; now {address})")
    bot.add_argument("--match", required=True)
    bot.add_argument("--token", required=True)
    bot.add_argument(
        "--level", choices=LEVELS, default=None,
        help="how strong: random (the default), greedy (scoring plays), search (ISMCTS over sampled deals)",
    )  # fmt: skip
    bot.add_argument("--greedy", action="store_true", help="the same as --level greedy (kept for old scripts)")
    bot.add_argument(
        "--move-ms", type=int, default=1000,
        help="search: milliseconds per move at most (never more than a tenth of the time left to decide)",
    )  # fmt: skip
    bot.add_argument("--seed", type=int, default=None)
    bot.add_argument("--think", type=float, default=0.0, help="seconds to wait before each move")
    add_client_tls(bot)
    bot.set_defaults(run=run_bot)


def run_demo(args: argparse.Namespace) -> int:
    from tablehall.demo import run_demo as demo

    return demo(args.game, args.players, args.seed, args.pace, args.greedy, args.record, args.json)


def run_play(args: argparse.Namespace) -> int:
    import asyncio

    from tablehall.play import play_options
    from tablehall.play import run_play as play

    options = play_options(args.game, args.points, args.bank, args.start_score)
    return asyncio.run(
        play(
            args.address, args.game, args.vs, join=args.join, token=args.token, shared=args.shared_device,
            players=args.players, name=args.name, names=args.names, think_s=args.think, options=options,
            tls=client_tls(args),
        )
    )


def run_bot(args: argparse.Namespace) -> int:
    from tablehall.bots import Level, bot_command

    if args.move_ms < 1:
        print("tablehall bot: --move-ms is a whole number of milliseconds, at least 1", file=sys.stderr)
        return 2
    if args.level is not None and args.greedy and args.level != "greedy":
        print(f"tablehall bot: --greedy contradicts --level {args.level}", file=sys.stderr)
        return 2
    level = Level(args.level or ("greedy" if args.greedy else "random"))
    return bot_command(
        args.address, args.match, args.token, level, args.seed, args.think, tls=client_tls(args), move_ms=args.move_ms
    )
