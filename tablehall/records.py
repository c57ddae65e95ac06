"""`tablehall record MATCH`: a finished match's record from the service (GetRecord), the file that
`tablehall verify` and `tablehall replay` read.

Exit codes: 0 written; 1 the match is still being played (nothing written: its record exists once it
ends) or the service could not answer now; 2 what was given is wrong: no service at the address, a
malformed or unknown match id, a file that cannot be written.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from tablehall.bots import WRONG_INPUT
from tablehall.client import Client, ServiceUnreachable, TablehallError

EXIT_NOT_YET = 1
EXIT_WRONG = 2


def record_command(address: str, match_id: str, out: Path | None, token: str | None = None) -> int:
    try:
        record = asyncio.run(_fetch(address, match_id, token))
    except ServiceUnreachable as error:
        return _fail(str(error), EXIT_WRONG)
    except TablehallError as error:
        shown = match_id[:40]
        if error.code == "not_finished":
            return _fail(f"match {shown} is still being played: its record exists once it ends", EXIT_NOT_YET)
        return _fail(f"match {shown}: {error.line()}", EXIT_WRONG if error.status in WRONG_INPUT else EXIT_NOT_YET)
    text = json.dumps(record, indent=1, ensure_ascii=False) + "\n"
    if out is None:
        sys.stdout.write(text)
        return 0
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as error:
        return _fail(f"cannot write {out}: {error.strerror or error}", EXIT_WRONG)
    print(f"the record of match {match_id} ({record.get('game')}) is in {out}", file=sys.stderr)
    return 0


async def _fetch(address: str, match_id: str, token: str | None) -> dict[str, object]:
    async with Client(address) as client:
        await client.reachable()
        return await client.record(match_id, token)


def _fail(message: str, code: int) -> int:
    print(f"tablehall record: {message}", file=sys.stderr)
    return code
