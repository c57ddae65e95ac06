"""A worker's multiplexed stream let go while a read of its requests is pending (the gateway went away, the
worker drains): the read is cancelled with it, so no read ends later with an exception nobody takes
(asyncio logs those as "Task exception was never retrieved", with a traceback, in the worker's log)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from typing import Any

from workers.service import _until


def test_a_stream_let_go_mid_read_leaves_no_read_behind() -> None:
    async def body() -> list[dict[str, Any]]:
        logged: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(lambda _loop, context: logged.append(context))
        sent = asyncio.Event()
        ended = asyncio.Event()

        async def requests() -> AsyncIterator[int]:
            yield 1
            await ended.wait()  # the caller's stream ends only after the worker let go of it

        seen: list[int] = []

        async def reader() -> None:
            async for request in _until(asyncio.Event(), requests()):
                seen.append(request)
                sent.set()

        reading = asyncio.create_task(reader())
        await sent.wait()
        await asyncio.sleep(0)  # the second read is pending now
        reading.cancel()  # as `_batches` lets go of its reader
        await asyncio.gather(reading, return_exceptions=True)
        ended.set()
        for _ in range(5):
            await asyncio.sleep(0)
        gc.collect()
        await asyncio.sleep(0)
        assert seen == [1]
        return logged

    logged = asyncio.run(body())
    assert [c.get("message") for c in logged] == []
