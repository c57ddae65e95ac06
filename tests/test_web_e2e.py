"""End to end in a real browser: Debian's Chromium, driven by playwright-core (web/e2e/play.mjs), plays whole
matches through the page by touching the pieces, at desktop (1280×800) and phone (360×740) sizes: Spectacular
Bid against a bot (over Connect and over gRPC-Web, lead auctions included; once with the keyboard only), 501♠
against two bots (bidding, the guided declaration, a decision limit's countdown), and a shared-device match
with its hand-over screens, all over the gateway's HTTP door. The page's result is the service's; every round
or hand summary it showed says what a replay of the match's record says; nothing is wider than a 360 px
screen and the controls stay on it; screenshots are kept in test-artifacts/; a person's mistakes are
explained in words; and every byte the page received carries its seat's view only."""

from __future__ import annotations

import base64
import gzip
import json
import re
import subprocess
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from protos.tablehall.v1 import matches_pb2
from tablehall.bots import run_bot
from tablehall.client import Client
from tests.over_grpc import five_hidden, five_own, quoted, sb_hidden, sb_own
from tests.web_support import ARTIFACTS, LiveService, Raw, frames, live_service, replayed_rounds, require_browser_tools
from workers.games.records import replay

BROWSER_TIMEOUT_S = 300.0
LIMIT_S = 60
"""501♠'s decision limit in the browser game: the page and the bots decide in well under a second."""


@pytest.fixture
def service() -> Iterator[LiveService]:
    yield from live_service()


@dataclass
class BrowserMatch:
    result: dict[str, Any]
    """What the page's player reported (RESULT): the match, the page's result line and scores, what it saw."""
    finals: list[dict[str, Any]]
    """The bots' final views."""
    record: dict[str, Any]
    out: Path


def browser_match(service: LiveService, game: str, protocol: str, mode: str = "", greedy: bool = True) -> BrowserMatch:
    """Runs the page's player (web/e2e/play.mjs) and a bot on every seat it invites (greedy, or random)."""
    web = require_browser_tools()
    out = ARTIFACTS / f"web-e2e-{game}-{protocol}{'-' + mode.replace('=', '-').replace(',', '-') if mode else ''}"
    out.mkdir(parents=True, exist_ok=True)
    command = ["node", "e2e/play.mjs", service.url, str(out), game, protocol, mode]
    bots: list[Future[dict[str, Any]]] = []
    result: dict[str, Any] | None = None
    with (out / "node.log").open("w") as errors:
        node = subprocess.Popen(command, cwd=web, stdout=subprocess.PIPE, stderr=errors, text=True)
        watchdog = threading.Timer(BROWSER_TIMEOUT_S, node.kill)  # a hung browser fails the test, never the run
        watchdog.start()
        try:
            assert node.stdout is not None
            for line in node.stdout:
                if line.startswith("INVITE "):
                    invite = json.loads(line.removeprefix("INVITE "))
                    bot = run_bot(service.address, invite["match"], invite["token"], greedy=greedy, seed=invite["seat"])
                    bots.append(service.submit(bot))
                elif line.startswith("RESULT "):
                    result = json.loads(line.removeprefix("RESULT "))
            code = node.wait(30)
        finally:
            watchdog.cancel()
            if node.poll() is None:
                node.kill()
                node.wait(10)
    log = (out / "node.log").read_text()
    assert code == 0 and result is not None, f"the browser did not finish the match (exit {code}):\n{log}"
    match_id = result["match"]

    async def record() -> dict[str, Any]:
        async with Client(service.address) as client:
            return await client.record(match_id)

    return BrowserMatch(result, [bot.result(30) for bot in bots], service.run(record()), out)


def received_by_the_page(out: Path, match_id: str) -> list[tuple[str, Raw]]:
    """Every view-carrying message the browser got, by method: each Watch frame, each Act and GetView reply."""
    kinds = {"Watch": matches_pb2.Update, "GetView": matches_pb2.Update, "Act": matches_pb2.ActResponse}
    messages = []
    for entry in json.loads((out / "received.json").read_text()):
        assert "unreadable" not in entry, entry
        method = entry["path"].rsplit("/", 1)[1]
        if method not in kinds or entry["status"] != 200:  # a refusal (Connect's JSON error) carries no view
            continue
        for payload in payloads(entry["type"], base64.b64decode(entry["body"])):
            message = kinds[method].FromString(payload)
            assert getattr(message, "match_id", match_id) == match_id
            messages.append((method, Raw(message.seq, payload)))
    return messages


def payloads(content_type: str, body: bytes) -> list[bytes]:
    """The messages of one response body: enveloped frames for streams and gRPC-Web (minus the end frame
    with its status), the body itself for a Connect unary reply."""
    if not (content_type.startswith("application/grpc-web") or content_type.startswith("application/connect+")):
        return [body]
    out = []
    for flags, payload in frames(body):
        if flags & 0x80 or flags & 0x02:
            continue
        out.append(gzip.decompress(payload) if flags & 0x01 else payload)
    return out


def assert_seat_view_only(messages: list[tuple[str, Raw]], snapshots: list[Any], hidden: Any, own: Any) -> None:
    """The byte-level check of tests/over_grpc.py on what the page received: no hidden tile or card, quoted,
    anywhere in a message; its own hand is there (the check sees what it seeks). A message is checked for the
    seat whose view it carries (on a shared device the page holds every seat)."""
    for method, message in messages:
        kind = matches_pb2.ActResponse if method == "Act" else matches_pb2.Update
        seat = json.loads(kind.FromString(message.raw).view_json)["seat"]
        state = snapshots[message.seq - 1].state
        leaked = [name for name in quoted(hidden(state, seat)) if name in message.raw]
        assert not leaked, f"the page received seat {seat}'s view with hidden {leaked} at seq {message.seq}"
        assert all(name in message.raw for name in quoted(own(state, seat))), f"seq {message.seq}: no own hand"


def assert_page_received_its_views(service: LiveService, played: BrowserMatch, hidden: Any, own: Any) -> None:
    """Every change on the page's Watch stream, in order, once; and every byte received its seats' views only."""
    match_id = played.result["match"]
    snapshots = service.host.actors[match_id].snapshots
    messages = received_by_the_page(played.out, match_id)
    watched = [m.seq for method, m in messages if method == "Watch"]
    assert watched == list(range(1, len(snapshots) + 1)), "the page's stream brought every change exactly once"
    assert_seat_view_only(messages, snapshots, hidden, own)


def assert_common(played: BrowserMatch, picture: str, shots: set[str]) -> None:
    result = played.result
    assert "(not_found)" in result["joinError"] or "(unauthenticated)" in result["joinError"], result["joinError"]
    assert shots <= set(result["shots"]), f"key states never reached: {shots - set(result['shots'])}"
    for name in [f"{picture}-over.png", *(f"{picture}-{shot}.png" for shot in result["shots"])]:
        assert (played.out / name).read_bytes().startswith(b"\x89PNG"), f"{name} was not saved"
    assert not result["refusals"] or all("Not allowed now" in r for r in result["refusals"]), result["refusals"]
    assert result["overflow"] == [], "something was wider than the screen"
    assert result["dockHidden"] == 0, f"the controls were off screen during a move ({result.get('dockWhere')})"
    assert result["taps"] > 0, "no piece was played by touching it"
    header = result["header"].lower()
    assert "connect" not in header and "grpc" not in header and "Ana" in result["header"]
    if played.finals:
        assert result["invitesFolded"], "the invitations stayed open once every seat was taken"


AUCTION = {"bid", "raise", "accept", "decline"}


def assert_sb_summaries(played: BrowserMatch) -> None:
    """Each round summary the page held on screen says what the record, replayed, says of that round."""
    rounds = replayed_rounds(played.record)
    summaries = played.result["summaries"]
    assert len(summaries) == len(rounds), "one summary per round, the last with the result"
    names = ["Ana", "Bot"]
    for shown in summaries:
        r = rounds[int(shown["round"]) - 1]
        facts = {f["fact"]: f for f in shown["facts"]}
        assert [int(f["after"]) for f in shown["facts"] if f["fact"] == "balance"] == r["points_after"]
        if r["end"] == "domino":
            assert facts["domino"]["text"].startswith(names[r["domino_by"]])
        if r["end"] == "block":
            block = facts["block"]
            assert block["sums"] == ",".join(map(str, r["block"]["sums"])), (block, r)
            to = r["block"]["to"]  # a seat, 0 included, or None (nothing owed): the page shows "" then
            assert int(block["owed"]) == r["block"]["owed"] and block["to"] == ("" if to is None else str(to))
        auction = r["auction"]
        if isinstance(auction, dict):
            assert (int(facts["auction"]["bid"]), int(facts["auction"]["paid"])) == (auction["bid"], auction["paid"])
            assert facts["auction"]["text"].startswith(names[auction["winner"]])
        elif auction == "declined":
            assert "declined" in facts["auction"]["text"]
        else:
            assert "auction" not in facts


def assert_sb_match(played: BrowserMatch, service: LiveService, total: int) -> None:
    result, [final] = played.result, played.finals
    # the page shows the service's result: the bot's own final view agrees, and so does the record
    assert final["status"] == "finished" and final["reason"] == "points"
    assert result["scores"] == final["points"] and sum(final["points"]) == total
    names = ["Ana", "Bot"]
    assert result["result"].startswith(f"{names[final['winner']]} wins on points — Ana {final['points'][0]}, Bot")
    outcome = replay(played.record).to_json()
    assert (outcome["winner"], outcome["points"]) == (final["winner"], final["points"])
    page_moves = sum(1 for e in played.record["events"] if e["seat"] == 0)
    assert page_moves == result["moves"] - len(result["refusals"]) > 0
    assert result["clockTicked"], "the running clock counted down on the page"
    assert_sb_summaries(played)
    assert_page_received_its_views(service, played, sb_hidden, sb_own)


# the phone match gets a long bank: a slow machine must not end it on time instead of on points
@pytest.mark.parametrize(("protocol", "mode"), [("connect", "points=100"), ("grpc-web", "points=60,phone,bank=300")])
def test_a_browser_plays_a_whole_spectacular_bid_match_by_touching_the_tiles(
    service: LiveService, protocol: str, mode: str
) -> None:
    # After any domino the page has an auction to answer: it opens one when the bot holds the lead privilege,
    # and the random bot (which bids or raises most of the time, unlike the greedy one) opens one when the
    # page holds it.
    played = browser_match(service, "spectacular-bid", protocol, mode, greedy=False)
    assert_common(played, "web-sb" + ("-phone" if "phone" in mode else ""), {"result"})
    assert_sb_match(played, service, 200 if "points=100" in mode else 120)
    # the auction was played through the page: what it clicked is in the record as the page's own. The page
    # owes an answer once the bot bids or raises (random play may end the match before a domino calls for an
    # auction, and the bot, first to act in one, may decline it: then the page had nothing to answer)
    clicked = [e["do"] for e in played.record["events"] if e["seat"] == 0 and e["do"] in AUCTION]
    owed = [e["do"] for e in played.record["events"] if e["seat"] == 1 and e["do"] in ("bid", "raise")]
    if owed:
        assert clicked, "the page answered no lead auction"
    assert len(clicked) <= len(played.result["auction"]) and set(clicked) <= set(played.result["auction"])


def test_a_whole_spectacular_bid_match_played_with_the_keyboard_only(service: LiveService) -> None:
    played = browser_match(service, "spectacular-bid", "connect", "points=40,keys", greedy=False)
    result = played.result
    assert_common(played, "web-sb-keys", {"result"})
    assert result["keyed"] >= result["moves"] > 0, "every move was made with the keyboard"
    assert_sb_match(played, service, 80)


def assert_five_summaries(played: BrowserMatch, start: int) -> None:
    """Each hand summary shows each player's points taken, the change and the score, as the replay does."""
    outcome = replay(played.record).to_json()
    hands = outcome["hands"]
    summaries = played.result["summaries"]
    assert summaries and len(summaries) <= len(hands)
    assert int(summaries[-1]["hand"]) == len(hands), "the last hand is summed up with the result"
    for shown in summaries:
        n = int(shown["hand"])
        hand = hands[n - 1]
        after = [start + sum(h["deltas"][s] for h in hands[:n]) for s in range(len(hand["deltas"]))]
        assert [(r["took"], r["delta"], r["after"]) for r in shown["rows"]] == list(
            zip(hand["points"], hand["deltas"], after, strict=True)
        ), (shown, hand)
        made = "made" if hand["made"] else "failed"
        expected = "passed" if hand["declarer"] is None else "abandoned" if hand["abandoned"] else made
        assert shown["facts"][0]["fact"] == expected


@pytest.mark.parametrize("mode", [f"limit={LIMIT_S},score=120", "phone,score=60"])
def test_a_browser_plays_501_against_two_bots_declaring_step_by_step(service: LiveService, mode: str) -> None:
    played = browser_match(service, "501", "connect", mode)
    result = played.result
    phone = "phone" in mode
    assert_common(played, "web-501" + ("-phone" if phone else ""), {"result", "hand-summary"})
    if not phone:
        assert played.record["options"]["decision_limit_s"] == LIMIT_S
        # the page counts the running decision down for whoever is to act (here: the page itself)
        assert result["clockTicked"], "no running decision clock on the page"
        first, then = result["countdown"]
        assert LIMIT_S * 1000 >= first["ms"] > then["ms"] > 0, result["countdown"]
        assert re.fullmatch(r"[01]:[0-5]\d", first["text"]) and first["text"] != then["text"], result["countdown"]
    assert len(played.finals) == 2 and all(f["phase"] == "over" for f in played.finals)
    outcome = replay(played.record).to_json()
    assert outcome["status"] == "finished" and result["scores"] == outcome["scores"] == played.finals[0]["scores"]
    names = ["Ana", "Bot", "Cat"]
    winners = " and ".join(names[s] for s in outcome["winners"])
    scores = ", ".join(f"{n} {s}" for n, s in zip(names, outcome["scores"], strict=True))
    assert result["result"].startswith(winners) and result["result"].endswith(scores), result["result"]
    # a person's mistake is explained; the page won a bidding and declared through the guided steps
    assert any("a bid is at least" in m or "higher than the standing" in m for m in result["mistakes"])
    assert result["declared"] >= 1 and any(e["do"] == "declare" and e["seat"] == 0 for e in played.record["events"])
    assert_five_summaries(played, 120 if "score=120" in mode else 60)
    assert_page_received_its_views(service, played, five_hidden, five_own)


def test_a_shared_device_hands_over_between_turns_and_shows_no_hand_meanwhile(service: LiveService) -> None:
    played = browser_match(service, "spectacular-bid", "connect", "shared,points=30")
    result = played.result
    assert_common(played, "web-sb-shared", {"result"})
    assert played.finals == [], "both seats are played on the page"
    assert played.record["options"].get("shared_device") is True
    assert result["handovers"] > 1 and result["handsOnHandover"] == 0
    reveals = [e for e in played.record["events"] if e["do"] == "reveal"]
    assert {e["seat"] for e in reveals} == {0, 1}, "each player revealed their tiles after a hand-over"
    outcome = replay(played.record).to_json()
    assert outcome["status"] == "finished" and result["scores"] == outcome["points"]
    assert_page_received_its_views(service, played, sb_hidden, sb_own)
