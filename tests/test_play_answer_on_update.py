"""`Play` with `answer_on_update`: an accepted command's result rides on the update of the change it made
(one message to the acting seat, not two); refused commands still get a result alone, every result in the
order the commands were sent. Without the flag a stream is as before (a result, and the update apart)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import grpc

from gateway.answers import Answers
from protos.tablehall.v1 import matches_pb2
from tablehall.client import Client, Result
from tests.test_bots import serve
from workers.typed_views.legal import action_message
from workers.wire import Posted

BOUND = 10.0


async def _opened(client: Client, match_id: str, token: str, on_update: bool) -> Any:
    call = client.stub.Play(metadata=(("authorization", f"Bearer {token}"),))
    await call.write(matches_pb2.PlayRequest(match_id=match_id, answer_on_update=on_update))
    first = await asyncio.wait_for(call.read(), BOUND)
    assert first.update.seq == 1
    return call


def test_an_accepted_command_is_answered_on_its_update_in_one_message() -> None:
    async def body(address: str, client: Client) -> None:
        match = await client.create_match("spectacular-bid", ["Ana", "Bia"])
        ana = await _opened(client, match.match_id, match.tokens[0], on_update=True)
        bia = await _opened(client, match.match_id, match.tokens[1], on_update=True)
        await ana.write(matches_pb2.PlayRequest(ref=5, action=action_message({"do": "ready"})))
        event = await asyncio.wait_for(ana.read(), BOUND)
        assert event.WhichOneof("kind") == "update" and event.update.seq == 2 and event.update.seat == 0
        assert event.HasField("answered") and event.answered.ref == 5 and event.answered.seq == 2
        seen = await asyncio.wait_for(bia.read(), BOUND)  # the other seat: its update, with no answer on it
        assert seen.update.seq == 2 and seen.update.seat == 1 and not seen.HasField("answered")
        # a refused command and then an accepted one: two results, in the order sent
        await bia.write(matches_pb2.PlayRequest(ref=1, action=action_message({"do": "play", "tile": "6-6"})))
        await bia.write(matches_pb2.PlayRequest(ref=2, action=action_message({"do": "ready"})))
        refused = await asyncio.wait_for(bia.read(), BOUND)
        assert refused.WhichOneof("kind") == "result" and refused.result.ref == 1 and refused.result.error.code
        answered = await asyncio.wait_for(bia.read(), BOUND)
        assert answered.update.seq == 3 and answered.answered.ref == 2 and answered.answered.seq == 3
        for call in (ana, bia):
            call.cancel()

    serve(body)


def test_without_the_flag_the_result_and_the_update_come_apart() -> None:
    async def body(address: str, client: Client) -> None:
        match = await client.create_match("spectacular-bid", ["Ana", "Bia"])
        ana = await _opened(client, match.match_id, match.tokens[0], on_update=False)
        await ana.write(matches_pb2.PlayRequest(ref=5, action=action_message({"do": "ready"})))
        events = [await asyncio.wait_for(ana.read(), BOUND) for _ in range(2)]
        assert sorted(e.WhichOneof("kind") for e in events) == ["result", "update"]
        assert not any(e.HasField("answered") for e in events)
        ana.cancel()

    serve(body)


def test_the_sdk_reads_an_answered_update_as_the_update_then_its_result() -> None:
    async def body(address: str, client: Client) -> None:
        match = await client.create_match("spectacular-bid", ["Ana", "Bia"])
        session = await client.seat(match.match_id, match.tokens[0]).session()
        events = session.events()
        assert (await asyncio.wait_for(anext(events), BOUND))[0] == 1
        ref = await session.send({"do": "ready"})
        seq, view = await asyncio.wait_for(anext(events), BOUND)
        assert seq == 2 and view["ready"] == [0]
        assert await asyncio.wait_for(anext(events), BOUND) == Result(ref, 2, None)
        await session.close()

    serve(body)


def test_a_stream_ends_by_itself_after_the_match_once_the_client_closed_its_side() -> None:
    """Both seats play a whole match; each then closes its side and reads to the end, never cancelling: the
    service ends both streams (the last mover's stream never ended when the match's last update went out
    before its result and both were counted as answers)."""

    async def play(session: Any, rng: random.Random) -> list[Any]:
        view: dict[str, Any] | None = None
        waiting = False
        async for event in session.events():
            if isinstance(event, Result):
                waiting = False
            else:
                view = event[1]
            if view is None or waiting:
                continue
            if view["status"] != "in_progress":
                break
            options = [action for action in view["legal"] if action["do"] != "resign"]
            if options:
                await session.send(rng.choice(options))
                waiting = True
        await session.call.done_writing()
        return [event async for event in session.call]

    async def body(address: str, client: Client) -> None:
        match = await client.create_match("spectacular-bid", ["Ana", "Bia"])
        sessions = [await client.seat(match.match_id, token).session() for token in match.tokens]
        played = asyncio.gather(*(play(session, random.Random(n)) for n, session in enumerate(sessions)))
        await asyncio.wait_for(played, 60)
        for session in sessions:
            assert await session.call.code() == grpc.StatusCode.OK

    serve(body)


# --- the order, alone (pure) ------------------------------------------------------------------------


def _update(seq: int) -> Posted:
    return Posted.of(matches_pb2.Update(seq=seq))


def _result(ref: int, seq: int) -> matches_pb2.CommandResult:
    if seq:
        return matches_pb2.CommandResult(ref=ref, seq=seq)
    return matches_pb2.CommandResult(ref=ref, error=matches_pb2.CommandError(code="illegal_action"))


def _kinds(sent: list[bytes]) -> list[str]:
    """What the stream sends, as the client reads it (events go out serialized)."""
    events = [matches_pb2.PlayEvent.FromString(wire) for wire in sent]
    return [
        f"u{e.update.seq}" + (f"+r{e.answered.ref}" if e.HasField("answered") else "")
        if e.HasField("update") else f"r{e.result.ref}"
        for e in events
    ]


def test_a_result_waits_for_its_update_and_later_results_wait_behind_it() -> None:
    answers = Answers(on_update=True)
    assert _kinds(answers.update(_update(1))) == ["u1"], "no command at the worker: an update goes at once"
    answers.asked()
    answers.asked()
    assert answers.result(_result(1, 2)) == []
    assert answers.result(_result(2, 0)) == [], "a refusal waits behind the result sent before it"
    assert _kinds(answers.update(_update(2))) == ["u2+r1", "r2"]
    answers.asked()
    assert _kinds(answers.result(_result(3, 0))) == ["r3"], "nothing before it: a refusal goes at once"


def test_an_update_waits_while_a_command_is_at_the_worker() -> None:
    answers = Answers(on_update=True)
    answers.asked()
    assert answers.update(_update(2)) == []
    assert answers.update(_update(3)) == []
    assert _kinds(answers.result(_result(1, 3))) == ["u2", "u3+r1"], "another change first, then its own"
    answers.asked()
    assert answers.update(_update(4)) == []
    assert _kinds(answers.result(_result(2, 0))) == ["r2", "u4"], "refused: the update was not its change"


def test_a_result_whose_update_went_first_goes_alone() -> None:
    answers = Answers(on_update=True)
    answers.update(_update(1))
    answers.update(_update(2))
    answers.asked()
    assert _kinds(answers.result(_result(1, 2))) == ["r1"]


def test_what_waits_goes_out_when_the_watch_ends() -> None:
    answers = Answers(on_update=True)
    answers.asked()
    assert answers.update(_update(4)) == []
    assert _kinds(answers.ended()) == ["u4"], "the last update does not wait for a result"
    assert _kinds(answers.result(_result(1, 4))) == ["r1"]
    answers = Answers(on_update=True)
    answers.update(_update(4))
    answers.asked()
    answers.asked()
    answers.result(_result(1, 5))
    answers.result(_result(2, 0))
    assert _kinds(answers.ended()) == ["r1", "r2"]


def test_without_the_flag_every_event_goes_at_once() -> None:
    answers = Answers(on_update=False)
    answers.asked()
    assert _kinds(answers.update(_update(2))) == ["u2"]
    assert _kinds(answers.result(_result(1, 2))) == ["r1"]


def test_each_command_is_answered_once_when_its_update_went_out_alone() -> None:
    answers = Answers(on_update=True)
    answers.asked()
    assert answers.update(_update(4)) == []
    assert _kinds(answers.ended()) == ["u4"]
    assert _kinds(answers.result(_result(1, 4))) == ["r1"]
    assert answers.unanswered == 0
