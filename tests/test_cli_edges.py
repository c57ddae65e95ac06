"""The command line at its edges: no service, an unknown host, a refused join, a database URL that cannot be
used, a port already taken. Each is the real `tablehall` process: one line on stderr, exit 2, no traceback.
A hang fails through the bound on each run (no timing threshold)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from tablehall.client import Client
from tablehall.startup import explain
from tests.storage_backends import PG_ADMIN_URL
from tests.test_bots import serve
from workers.sql.engine import DatabaseUnusable, make_engine

CLI = [sys.executable, "-m", "tablehall.cli"]
BOUND_S = 60.0
"""Every run must end within this; it only turns a hang into a failure."""


@dataclass(frozen=True, slots=True)
class Ran:
    code: int
    out: str
    err: str

    def one_line(self, command: str) -> str:
        """The single stderr line, checked to be the command's own clear message."""
        lines = self.err.strip().splitlines()
        assert "Traceback" not in self.err and len(lines) == 1, self.err[-3000:]
        assert lines[0].startswith(f"tablehall {command}: "), lines
        return lines[0]


async def tablehall(*args: str, stdin: str = "q\n", env: dict[str, str] | None = None) -> Ran:
    process = await asyncio.create_subprocess_exec(
        *CLI, *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    try:
        out, err = await asyncio.wait_for(process.communicate(stdin.encode()), BOUND_S)
    except TimeoutError:
        process.kill()
        out, err = await process.communicate()
        raise AssertionError(f"tablehall {' '.join(args)} did not end:\n{(out + err).decode()[-3000:]}") from None
    assert process.returncode is not None
    return Ran(process.returncode, out.decode(), err.decode())


def run(*args: str, stdin: str = "q\n") -> Ran:
    return asyncio.run(tablehall(*args, stdin=stdin))


@contextlib.contextmanager
def closed_port() -> Iterator[int]:
    """A port held by a socket that does not listen: connecting to it is refused."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


@contextlib.contextmanager
def taken_port() -> Iterator[int]:
    """A port another program listens on."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


# --- the client: no service, unknown host, refused joins ------------------------------------------------


@pytest.mark.parametrize("command", ["play", "bot"])
def test_no_service_at_the_address_is_one_line(command: str) -> None:
    with closed_port() as port:
        extra = ["--match", "0123456789abcdef", "--token", "t"] if command == "bot" else ["--think", "0"]
        ran = run(command, "--address", f"127.0.0.1:{port}", *extra)
    assert ran.code == 2
    assert f"no tablehall service answers at 127.0.0.1:{port}" in ran.one_line(command)


def test_play_against_an_unknown_host_is_one_line() -> None:
    ran = run("play", "--address", "no-such-host.invalid:50051")
    assert ran.code == 2
    assert "no tablehall service answers at no-such-host.invalid:50051" in ran.one_line("play")


@pytest.mark.parametrize(
    ("match", "token", "says"),
    [
        ("0123456789abcdef", None, "(not_found)"),
        ("not-an-id", None, "is not a match id"),
        (None, "no-such-token", "(unauthenticated)"),
    ],
    ids=["unknown id", "malformed id", "wrong token"],
)
def test_play_join_refused_is_one_line(match: str | None, token: str | None, says: str) -> None:
    async def body(address: str, client: Client) -> Ran:
        created = await client.create_match("spectacular-bid", ["Ana", "Bia"])
        args = ["--join", match or created.match_id, "--token", token or created.tokens[0]]
        return await tablehall("play", "--address", address, *args)

    ran = serve(body)
    assert ran.code == 2
    line = ran.one_line("play")
    assert "cannot join match" in line and says in line


# --- the service: database URLs and ports ---------------------------------------------------------------


def missing_postgres_database() -> str:
    return make_url(PG_ADMIN_URL).set(database=f"tablehall_missing_{secrets.token_hex(6)}").render_as_string(False)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("nosuch://x", "no driver for 'nosuch'"),
        ("foo", "'foo' is not a database URL"),
        (None, "does not exist"),
        ("sqlite:////nonexistent/x.db", "unable to open database file"),
    ],
    ids=["unknown scheme", "not a url", "missing postgresql database", "sqlite in a missing folder"],
)
@pytest.mark.parametrize("command", ["serve", "worker", "organizer"])
def test_a_database_that_cannot_be_used_is_one_line(command: str, url: str | None, says: str) -> None:
    url = url or missing_postgres_database()
    args = {
        "serve": ["serve", "--port", "0", "--web-port", "off"],
        "worker": ["worker", "--ordinal", "0", "--workers", "1", "--port", "0"],
        "organizer": ["organizer", "create", "Ana's club"],
    }[command]
    ran = run(*args, "--database-url", url)
    assert ran.code == 2
    assert says in ran.one_line(command)


def test_a_password_in_a_database_url_is_not_shown() -> None:
    url = make_url(missing_postgres_database()).set(password="s3cret-pw").render_as_string(False)
    ran = run("organizer", "create", "Ana's club", "--database-url", url)
    assert ran.code == 2 and "s3cret-pw" not in ran.err and "***" in ran.one_line("organizer")


def test_a_huge_url_is_not_echoed() -> None:
    ran = run("organizer", "create", "Ana's club", "--database-url", "x" * 5000)
    assert ran.code == 2 and len(ran.one_line("organizer")) < 400


@pytest.mark.parametrize("command", ["serve", "gateway", "worker"])
def test_a_port_in_use_is_one_line(command: str) -> None:
    extra = {
        "serve": ["--web-port", "off", "--database-url", "memory"],
        "gateway": ["--workers", "1"],
        "worker": ["--ordinal", "0", "--workers", "1", "--database-url", "memory"],
    }[command]
    with taken_port() as port:
        ran = run(command, "--port", str(port), *extra)
    assert ran.code == 2
    line = ran.one_line(command)
    assert f"cannot listen on 127.0.0.1:{port}" in line and "--port" in line


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_a_metrics_port_in_use_is_one_line(command: str) -> None:
    extra = {
        "serve": ["--port", "0", "--web-port", "off", "--database-url", "memory"],
        "worker": ["--port", "0", "--ordinal", "0", "--workers", "1", "--database-url", "memory"],
    }[command]
    with taken_port() as port:
        ran = run(command, "--metrics-port", str(port), *extra)
    assert ran.code == 2
    line = ran.one_line(command)
    assert f"cannot serve /metrics on 127.0.0.1:{port}" in line and "--metrics-port" in line


def test_grpc_failing_to_bind_after_the_check_is_one_line_too() -> None:
    """Another program may take the port between the check and the bind: grpc's bare RuntimeError is worded."""
    grpc_words = "Failed to bind to address 127.0.0.1:5; set GRPC_VERBOSITY=debug environment variable to see..."
    line = explain(RuntimeError(grpc_words))
    assert line is not None and line.startswith("cannot listen on 127.0.0.1:5 (")
    assert explain(RuntimeError("something else")) is None and explain(KeyError("x")) is None


def test_an_organizer_command_without_a_service_is_one_line() -> None:
    """The organizers' commands keep their documented exit 1 for a service they cannot reach, on one line."""
    with closed_port() as port:
        ran = run("tournament", "status", "t1", "--address", f"127.0.0.1:{port}", "--key", "k")
    assert ran.code == 1 and "(UNAVAILABLE)" in ran.one_line("tournament")


def test_a_database_outage_is_still_an_operational_error() -> None:
    """What retries on a database outage (the Celery tasks: autoretry_for OperationalError) still does."""
    with pytest.raises(OperationalError) as caught:
        make_engine(missing_postgres_database())
    assert isinstance(caught.value, DatabaseUnusable) and "does not exist" in str(caught.value)
