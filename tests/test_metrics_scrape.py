"""`/metrics` of a real `tablehall serve` after bot matches over gRPC: the expected series exist with
sane values — a finished match counts in finished (by game and reason), a table nobody touched is voided
`abandoned` by the embedded sweep and counts in voided with that reason, the running matches and an open
watch stream show in the gauges, a refused command counts by its code — and `promtool check metrics`
accepts the scrape."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tablehall.bots import run_bot
from tablehall.client import Client, TablehallError
from tablehall.processes import children
from tests.metrics_support import Labels, Served, binary, samples, serve_with_metrics, until, value
from workers.errors import ERRORS
from workers.games.catalog import games
from workers.voids import VoidReason

SB = "spectacular-bid"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    env = {"TABLEHALL_SWEEP_S": "0.3", "TABLEHALL_ABANDON_S": "1"}
    with serve_with_metrics(tmp_path_factory.mktemp("metrics"), **env) as service:
        yield service


@pytest.fixture(scope="module")
def played(served: Served) -> dict[str, Any]:
    """One Spectacular Bid match played to the end by two bots, one table nobody touches (abandoned),
    one Spectacular Bid match started and one 501♠ table still running."""

    async def main() -> dict[str, Any]:
        async with Client(served.address) as client:
            finished = await client.create_match(SB, ["Ana", "Bia"], {"start_points": 50})
            bots = [
                run_bot(served.address, finished.match_id, token, greedy=True, seed=i, client=client)
                for i, token in enumerate(finished.tokens)
            ]
            final = await asyncio.gather(*bots)
            untouched = await client.create_match(SB, ["Cai", "Dan"])
            running = await client.create_match(SB, ["Eva", "Fin"])
            for token in running.tokens:
                await client.seat(running.match_id, token).act({"do": "ready"})
            table = await client.create_match("501", ["Gus", "Hal", "Ivo"])
            return {"reason": final[0]["reason"], "finished": finished, "untouched": untouched.match_id, "table": table}

    return asyncio.run(asyncio.wait_for(main(), 60))


def test_a_finished_match_counts_once_by_game_and_reason(served: Served, played: dict[str, Any]) -> None:
    found = served.samples()
    by_reason = {
        dict(labels)["reason"]: v
        for (name, labels), v in found.items()
        if name == "tablehall_matches_finished_total" and dict(labels)["game"] == SB
    }
    assert played["reason"] in {"points", "time", "resign"}
    assert by_reason == {"points": 0, "time": 0, "resign": 0, played["reason"]: 1}
    assert value(found, "tablehall_matches_finished_total", game="501", reason="score") == 0


def test_an_untouched_table_is_voided_abandoned_by_the_sweep(served: Served, played: dict[str, Any]) -> None:
    until(
        lambda: value(served.samples(), "tablehall_matches_voided_total", reason="abandoned") == 1,
        what="the embedded sweep to void the untouched table",
    )
    found = served.samples()
    assert value(found, "tablehall_matches_voided_total", reason="worker_down") == 0
    assert (value(found, "tablehall_sweep_runs_total") or 0) >= 1
    assert (value(found, "tablehall_sweep_matches_total", outcome="settled") or 0) >= 1  # by the live owner
    for kind in ("worker_down", "timer_late", "owner_unreachable", "storage_error"):  # no fault in this run
        assert value(found, "tablehall_service_faults_total", kind=kind) == 0


def test_running_matches_and_watchers_show_in_the_gauges(served: Served, played: dict[str, Any]) -> None:
    until(lambda: value(served.samples(), "tablehall_matches_voided_total", reason="abandoned") == 1)
    table = played["table"]

    async def watching() -> tuple[float | None, float | None, float | None]:
        async with Client(served.address) as client:
            stream = client.spectator(table.match_id).updates()
            await anext(aiter(stream))
            found = await asyncio.to_thread(served.samples)
            await stream.aclose()  # type: ignore[attr-defined]
        return (
            value(found, "tablehall_matches_active", game=SB),
            value(found, "tablehall_matches_active", game="501"),
            value(found, "tablehall_watchers_connected", game="501"),
        )

    active_sb, active_501, watchers = asyncio.run(watching())
    assert (active_sb, active_501, watchers) == (1, 1, 1)
    until(lambda: value(served.samples(), "tablehall_watchers_connected", game="501") == 0, 5, "the watch to end")


def test_commands_latency_hop_commit_and_rating(served: Served, played: dict[str, Any]) -> None:
    until(
        lambda: (value(served.samples(), "tablehall_rating_updates_total", result="rated") or 0) >= 1,
        what="the finished match to be rated",
    )
    found = served.samples()
    commands = {
        dict(labels)["action"]: v
        for (name, labels), v in found.items()
        if name == "tablehall_command_duration_seconds_count" and dict(labels)["game"] == SB
    }
    assert commands.get("ready", 0) >= 4 and commands.get("play", 0) >= 1, commands
    total = sum(commands.values())
    # `serve` runs its worker in the gateway's process: there is no hop to measure (the worker processes'
    # hop is checked below, in the test of separate workers)
    assert not value(found, "tablehall_gateway_worker_hop_seconds_count")
    commits = value(found, "tablehall_event_log_commit_seconds_count") or 0
    assert commits >= total  # every accepted command, deal and void is appended
    assert (value(found, "tablehall_rating_lag_seconds_count", game=SB) or 0) >= 1
    lag = value(found, "tablehall_rating_lag_seconds_sum", game=SB)
    assert lag is not None and 0 <= lag < 30
    assert any("multiprocessing" in command for command in _children(served.process.pid)), (
        "the rating replay ran in serve's own process, not in its pool"
    )


def _children(pid: int) -> list[str]:
    """The command lines of a process's children (Linux /proc)."""
    found = []
    for child in children(pid):
        with contextlib.suppress(OSError):  # a child may end while it is read
            found.append(Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode())
    return found


def test_a_refused_command_counts_by_its_code(served: Served, played: dict[str, Any]) -> None:
    finished = played["finished"]

    def rejected(code: str) -> float:
        return value(served.samples(), "tablehall_commands_rejected_total", code=code) or 0

    before = rejected("illegal_action"), rejected("unauthenticated")

    async def refused() -> None:
        async with Client(served.address) as client:
            with pytest.raises(TablehallError):  # the match is over
                await client.seat(finished.match_id, finished.tokens[0]).act({"do": "resign"})
            with pytest.raises(TablehallError):  # no seat of that match
                await client.seat(finished.match_id, "not-a-token").act({"do": "resign"})

    asyncio.run(refused())
    assert (rejected("illegal_action"), rejected("unauthenticated")) == (before[0] + 1, before[1] + 1)


def test_promtool_accepts_the_scrape(served: Served, played: dict[str, Any], tmp_path: Path) -> None:
    promtool = binary("promtool")
    text = served.scrape()
    assert samples(text)  # parses
    checked = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # and a scrape that breaks the conventions is refused: the check can fail
    bad = "# HELP tablehall_bad x\n# TYPE tablehall_bad counter\ntablehall_bad 1\n"
    refused = subprocess.run([promtool, "check", "metrics"], input=bad, capture_output=True, text=True, timeout=30)
    assert refused.returncode != 0 and "_total" in refused.stdout + refused.stderr


def test_each_role_serves_its_own_metrics(tmp_path: Path) -> None:
    """`tablehall serve --workers 2`: the gateway on P, the worker processes on P+1 and P+2; a bot match
    counts once, in the worker that owns it, and the refused command at the gateway."""
    with serve_with_metrics(tmp_path, workers=2) as service:

        async def main() -> None:
            async with Client(service.address) as client:
                created = await client.create_match(SB, ["Ana", "Bia"], {"start_points": 50})
                bots = [
                    run_bot(service.address, created.match_id, token, greedy=True, seed=i, client=client)
                    for i, token in enumerate(created.tokens)
                ]
                await asyncio.gather(*bots)
                with pytest.raises(TablehallError):
                    await client.seat(created.match_id, created.tokens[0]).act({"do": "resign"})

        asyncio.run(asyncio.wait_for(main(), 60))
        port = int(service.metrics_url.split(":")[2].split("/")[0])
        scrapes = []
        for k in (1, 2):
            url = service.metrics_url.replace(f":{port}/", f":{port + k}/")
            scrapes.append(samples(Served(service.address, url, service.process).scrape()))
        gateway = service.samples()
    finished = [
        sum(v for (name, _), v in found.items() if name == "tablehall_matches_finished_total") for found in scrapes
    ]
    assert sorted(finished) == [0, 1]
    owner = scrapes[finished.index(1)]
    assert (value(owner, "tablehall_gateway_worker_hop_seconds_count") or 0) >= 2  # the hop, at the worker
    # each command counted at the worker that ran it; the match's partition may move once while the second
    # worker joins the lease table, so its two `ready`s may be counted one in each worker
    ready = [value(found, "tablehall_command_duration_seconds_count", game=SB, action="ready") for found in scrapes]
    assert sum(count or 0 for count in ready) >= 2
    assert (value(gateway, "tablehall_commands_rejected_total", code="illegal_action") or 0) >= 1
    assert value(gateway, "tablehall_command_duration_seconds_count", game=SB, action="ready") is None


def test_a_fresh_process_exports_every_known_label_set_at_zero(tmp_path: Path) -> None:
    """Before anything happened, the gateway and a worker process export each void reason, each game's
    endings and each rejection code at 0, so that `increase()` counts their first events (a series born at
    6 would count 0)."""
    with serve_with_metrics(tmp_path, workers=1) as service:
        port = int(service.metrics_url.split(":")[2].split("/")[0])
        worker_url = service.metrics_url.replace(f":{port}/", f":{port + 1}/")
        worker = Served(service.address, worker_url, service.process)
        scrapes = {"gateway": service.samples(), "worker": worker.samples()}
    wanted: set[tuple[str, Labels]] = set()
    for reason in VoidReason:
        wanted.add(("tablehall_matches_voided_total", frozenset({("reason", reason.value)})))
    for name, game in games().items():
        for ending in game.endings:
            wanted.add(("tablehall_matches_finished_total", frozenset({("game", name), ("reason", ending)})))
    for code in (*ERRORS, "internal"):
        wanted.add(("tablehall_commands_rejected_total", frozenset({("code", code)})))
    # the sets are what the issue names, not empty by accident
    assert {("reason", "worker_down")} in [set(labels) for _, labels in wanted]
    assert {("game", "501"), ("reason", "score")} in [set(labels) for _, labels in wanted]
    assert {("code", "illegal_action")} in [set(labels) for _, labels in wanted]
    for role, found in scrapes.items():
        exported = {key: found.get(key) for key in wanted}
        assert exported == dict.fromkeys(wanted, 0.0), role
