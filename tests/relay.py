"""A TCP relay's one direction, shared by the tests' proxies (a cut network path, a dropped connection)."""

from __future__ import annotations

import asyncio


async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter, gate: asyncio.Event | None = None) -> None:
    """Copy `source` to `sink` until either end closes; each chunk waits for `gate` (a cut path) if given."""
    try:
        while chunk := await source.read(65536):
            if gate is not None:
                await gate.wait()
            sink.write(chunk)
            await sink.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        sink.close()
