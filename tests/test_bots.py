"""Bots over real gRPC: `choose` from views, whole matches of both games, a stream dropped mid-match."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import pytest

from gateway.server import start_gateway
from gateway.workers import Router
from tablehall.bots import choose, declaration, is_over, run_bot
from tablehall.client import Client, SeatClient
from tests.relay import pump
from workers.host import MatchHost

T = TypeVar("T")


def serve(body: Callable[[str, Client], Awaitable[T]], timeout: float = 60.0) -> T:
    """Runs `body(address, client)` against a real gateway on a free port, bounded by `timeout`."""

    async def main() -> T:
        host = MatchHost()
        gateway = await start_gateway(Router([host]), "127.0.0.1", 0)
        address = f"127.0.0.1:{gateway.port}"
        try:
            async with Client(address) as client:
                return await asyncio.wait_for(body(address, client), timeout)
        finally:
            host.close()
            await gateway.stop(grace=0.5)

    return asyncio.run(main())


# --- choose, from views alone --------------------------------------------------------------------


def sb_view(legal: list[dict[str, Any]], counts: list[int | None], **extra: Any) -> dict[str, Any]:
    return {"game": "spectacular-bid", "status": "in_progress", "legal": legal, "counts": counts, **extra}


def test_greedy_sb_takes_the_highest_multiple_of_five() -> None:
    legal = [
        {"do": "play", "tile": "6-4", "end": "W"},
        {"do": "play", "tile": "5-0", "end": "E"},
        {"do": "play", "tile": "3-2", "end": "E"},
        {"do": "play", "tile": "6-1", "end": "E"},
        {"do": "resign"},
    ]
    view = sb_view(legal, [10, 15, 12, 0, None])
    for seed in range(20):
        assert choose(view, random.Random(seed), greedy=True) == legal[1]


def test_greedy_sb_without_a_score_still_plays_and_never_resigns() -> None:
    legal = [{"do": "play", "tile": "6-4", "end": "W"}, {"do": "play", "tile": "6-1", "end": "E"}, {"do": "resign"}]
    view = sb_view(legal, [11, 0, None])
    picks = {str(choose(view, random.Random(seed), greedy=True)) for seed in range(30)}
    assert picks == {str(legal[0]), str(legal[1])}


def test_nothing_to_do_is_none() -> None:
    assert choose(sb_view([{"do": "resign"}], [None]), random.Random(1), greedy=False) is None
    assert choose(sb_view([{"do": "ready"}, {"do": "resign"}], [None, None]), random.Random(1), False) == {
        "do": "ready"
    }
    over = sb_view([], [], status="finished")
    assert choose(over, random.Random(1), greedy=True) is None
    # a shared-device reveal is taken only when the clock waits for this seat
    ready_pause = sb_view([{"do": "reveal"}, {"do": "resign"}], [None, None], hand_over=False)
    assert choose(ready_pause, random.Random(1), greedy=True) is None


def test_501_declaration_is_concrete_and_gives_one_card_each() -> None:
    hand = ["AS", "TS", "KS", "QS", "9S", "AH", "JH", "9D", "JC", "9C"]
    summary = {
        "do": "declare",
        "trump": ["S", "H", "D", "C", "NT"],
        "target": {"min": 80, "max": 220},
        "give": {"to": [1, 2], "cards": "two different cards of your hand"},
    }
    view = {
        "game": "501",
        "phase": "contract",
        "seat": 0,
        "turn": 0,
        "bid": 80,
        "hand": hand,
        "legal": [{"do": "abandon"}, summary],
    }
    action = choose(view, random.Random(3), greedy=True)
    assert action is not None
    assert action["do"] == "declare" and action["trump"] == "S" and action["target"] == 80
    given = list(action["give"].values())
    assert sorted(action["give"]) == ["1", "2"] and len(set(given)) == 2 and set(given) <= set(hand)
    assert not {"KS", "QS"} & set(given)  # keeps the trump marriage
    randomly = declaration(summary, hand, view, random.Random(4), greedy=False)
    assert randomly["trump"] in summary["trump"] and set(randomly["give"].values()) <= set(hand)


# --- whole matches over gRPC ----------------------------------------------------------------------


def test_two_bots_finish_a_spectacular_bid_match() -> None:
    async def body(address: str, client: Client) -> list[dict[str, Any]]:
        match = await client.create_match("spectacular-bid", ["Ana", "Bia"])
        return await asyncio.gather(
            run_bot(address, match.match_id, match.tokens[0], greedy=True, seed=1),
            run_bot(address, match.match_id, match.tokens[1], greedy=False, seed=2),
        )

    finals = serve(body)
    assert [f["seat"] for f in finals] == [0, 1]
    for final in finals:
        assert final["status"] == "finished" and final["phase"] == "over"
        assert final["winner"] in (0, 1)
        assert sum(final["points"]) == 300
    assert finals[0]["winner"] == finals[1]["winner"]
    if finals[0]["reason"] == "points":
        assert finals[0]["points"][1 - finals[0]["winner"]] == 0


@pytest.mark.parametrize("players", [3, 4])
def test_bots_finish_a_501_match(players: int) -> None:
    async def body(address: str, client: Client) -> list[dict[str, Any]]:
        match = await client.create_match("501", [f"P{i}" for i in range(players)], {"start_score": 200})
        return await asyncio.gather(
            *(run_bot(address, match.match_id, t, greedy=i % 2 == 0, seed=i) for i, t in enumerate(match.tokens))
        )

    finals = serve(body)
    winners = finals[0]["winners"]
    scores = finals[0]["scores"]
    assert winners and all(f["winners"] == winners for f in finals)
    assert all(is_over(f) for f in finals)
    assert min(scores) <= 0 and {scores[w] for w in winners} == {min(scores)}


# --- a dropped stream ------------------------------------------------------------------------------


class Proxy:
    """A TCP relay in front of the gateway whose connections can be cut, as a network would."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.writers: set[asyncio.StreamWriter] = set()
        self.server: asyncio.Server | None = None
        self.drops = 0

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self.writers |= {writer, up_writer}
        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))

    def drop(self) -> None:
        self.drops += 1
        for writer in list(self.writers):
            writer.transport.abort()
        self.writers.clear()

    async def close(self) -> None:
        self.drop()
        if self.server is not None:
            self.server.close()


class Watched(SeatClient):
    """A seat that notes every stream it opens (from which seq) and every seq it receives."""

    def __init__(self, seat: SeatClient, log: list[tuple[str, int]]) -> None:
        super().__init__(seat.stub, seat.match_id, None)
        self.metadata = seat.metadata
        self.log = log

    async def watch(self, after_seq: int = 0) -> AsyncIterator[tuple[int, dict[str, Any]]]:
        self.log.append(("open", after_seq))
        async for seq, view in super().watch(after_seq):
            self.log.append(("streamed", seq))
            yield seq, view

    async def act(self, action: Any, seat: int | None = None) -> tuple[int, dict[str, Any]]:
        seq, view = await super().act(action, seat)
        self.log.append(("reply", seq))
        return seq, view

    async def view(self) -> tuple[int, dict[str, Any]]:
        seq, view = await super().view()
        self.log.append(("viewed", seq))
        return seq, view


def test_a_dropped_stream_is_resumed_without_missing_a_move() -> None:
    log: list[tuple[str, int]] = []

    async def body(address: str, client: Client) -> tuple[dict[str, Any], int, int]:
        port = int(address.rsplit(":", 1)[1])
        proxy = Proxy(port)
        proxied = f"127.0.0.1:{await proxy.start()}"
        match = await client.create_match("spectacular-bid", ["Ana", "Bia"])
        moves = 0

        def cut_now_and_then(seq: int, action: dict[str, Any], view: dict[str, Any]) -> None:
            nonlocal moves
            moves += 1
            if moves in (1, 3, 5):
                proxy.drop()

        class Flaky(Client):
            def seat(self, match_id: str, token: str) -> SeatClient:
                return Watched(super().seat(match_id, token), log)

        async with Flaky(proxied) as flaky:
            finals = await asyncio.gather(
                run_bot(
                    proxied, match.match_id, match.tokens[0], greedy=True, seed=1, client=flaky, report=cut_now_and_then
                ),
                run_bot(address, match.match_id, match.tokens[1], greedy=False, seed=2),
            )
        await proxy.close()
        last_seq, _ = await client.spectator(match.match_id).view()
        return finals[0], proxy.drops, last_seq

    final, drops, last_seq = serve(body)
    assert final["status"] == "finished"
    opened = [after for kind, after in log if kind == "open"]
    assert drops >= 2 and len(opened) >= 2, "the stream was never cut"
    newest = 0
    covered: set[int] = set()
    for kind, seq in log:
        if kind == "open":
            assert seq == newest, f"a stream resumed after seq {seq}, but the bot had seen seq {newest}"
            continue
        if kind == "viewed" and newest:
            continue  # on a reconnect the bot only peeks; the resumed stream brings the changes in order
        if kind == "reply":
            covered |= set(range(newest + 1, seq))  # our own command's reply already includes these
        covered.add(seq)
        newest = max(newest, seq)
    streamed = [seq for kind, seq in log if kind == "streamed"]
    assert len(streamed) == len(set(streamed)), "a change was streamed twice"
    assert covered == set(range(min(covered), last_seq + 1)), "a change was missed"
