"""The server processes' loop (workers/event_loop.py): uvloop by default, the standard loop when asked, and an
unknown name said in the log, not a crash."""

from __future__ import annotations

import asyncio
import logging

import pytest
import uvloop

from workers import event_loop


async def _running_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


@pytest.mark.parametrize(("setting", "kind"), [(None, uvloop.Loop), ("asyncio", asyncio.BaseEventLoop),
                                               (" UVLOOP ", uvloop.Loop)])  # fmt: skip
def test_run_uses_the_loop_asked(monkeypatch: pytest.MonkeyPatch, setting: str | None, kind: type) -> None:
    if setting is None:
        monkeypatch.delenv("TABLEHALL_EVENT_LOOP", raising=False)
    else:
        monkeypatch.setenv("TABLEHALL_EVENT_LOOP", setting)
    loop = event_loop.run(_running_loop())
    assert isinstance(loop, kind)
    assert isinstance(loop, uvloop.Loop) == (kind is uvloop.Loop)


def test_an_unknown_loop_is_said_and_uvloop_runs(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("TABLEHALL_EVENT_LOOP", "trio" * 40)
    with caplog.at_level(logging.WARNING, logger="workers.event_loop"):
        assert isinstance(event_loop.run(_running_loop()), uvloop.Loop)
    (said,) = [r.getMessage() for r in caplog.records if r.name == "workers.event_loop"]
    assert "not one of uvloop, asyncio" in said and len(said) < 160
