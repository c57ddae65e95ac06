"""`tablehall serve` as a real process: it starts the HTTP door too and prints its URL; the door serves the page
directory at `/` (or says how to build it) and answers Connect calls; bad settings are clear errors."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.processes import stop_process

STARTUP_S = 60


@contextmanager
def serving(tmp: Path, *flags: str, **env: str) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """`tablehall serve --port 0` with `flags`; yields the process and its first lines (up to the web door's)."""
    environ = {**os.environ, "TABLEHALL_LOG_LEVEL": "WARNING", **env}
    for name in ("TABLEHALL_WEB_PORT", "TABLEHALL_CORS_ORIGINS", "TABLEHALL_METRICS_PORT"):
        if name not in env:
            environ.pop(name, None)
    command = [sys.executable, "-m", "tablehall.cli", "serve", "--port", "0", "--database-url", "memory", *flags]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ, cwd=tmp)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline()]
        if "serving on" in lines[0] and "off" not in flags:
            lines.append(process.stdout.readline())
        yield process, lines
    finally:
        stop_process(process)


def web_url(lines: list[str]) -> str:
    found = [line for line in lines if "web page, Connect and gRPC-Web on " in line]
    assert found, f"tablehall serve printed no web address: {lines!r}"
    return found[0].rsplit(" ", 1)[1].strip()


def test_serve_starts_the_http_door_and_prints_its_url(tmp_path: Path) -> None:
    page = tmp_path / "page"
    page.mkdir()
    (page / "index.html").write_text("<title>tablehall test page</title>")
    with serving(tmp_path, TABLEHALL_WEB_DIR=str(page)) as (_, lines):
        assert "serving on 127.0.0.1:" in lines[0], "the gRPC address comes first, as the tools that read it expect"
        url = web_url(lines)
        assert url.startswith("http://127.0.0.1:") and not url.endswith(":8080/"), "--port 0: a free web port too"
        with urllib.request.urlopen(url, timeout=10) as response:
            assert b"tablehall test page" in response.read()
        ping = urllib.request.Request(
            url + "tablehall.v1.Matches/Ping", data=b"{}", headers={"content-type": "application/json"}
        )
        with urllib.request.urlopen(ping, timeout=10) as response:
            assert response.status == 200 and response.read() == b"{}"


def test_an_unbuilt_page_says_how_to_build_it(tmp_path: Path) -> None:
    with serving(tmp_path, TABLEHALL_WEB_DIR=str(tmp_path / "nothing-here")) as (_, lines):
        try:
            urllib.request.urlopen(web_url(lines), timeout=10)
            raise AssertionError("an unbuilt page cannot be served")
        except urllib.error.HTTPError as error:
            assert error.code == 404 and b"npm ci && npm run build" in error.read()


def test_the_web_door_can_be_off(tmp_path: Path) -> None:
    with serving(tmp_path, "--web-port", "off") as (process, lines):
        assert "serving on" in lines[0]
        stop_process(process)
        assert process.stdout is not None
        assert "web page" not in process.stdout.read()


def test_bad_web_settings_are_clear_errors(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        for flags, words in [
            (("--web-port", "eighty"), "the web port must be a number or 'off', not 'eighty'"),
            (("--web-port", "70000"), "the web port must be from 0 to 65535"),
            (("--web-port", str(port)), f"the web door cannot listen on 127.0.0.1:{port}"),
        ]:
            with serving(tmp_path, *flags) as (process, _):
                assert process.wait(STARTUP_S) != 0
                assert process.stderr is not None
                errors = process.stderr.read()
                assert words in errors and "Traceback" not in errors, errors
