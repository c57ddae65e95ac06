"""TLS on both doors, with a certificate authority made inside the test (trustme): a real `tablehall serve`
given a certificate and key serves gRPC and the HTTP door over TLS; the SDK, `tablehall play`, `tablehall
bot` (flags and environment) and the organizer commands connect with the CA and play or read; a client
without the CA, with another CA or in plaintext is refused; `tablehall gateway` serves TLS too, with a
plaintext port that serves only the health service for kubelet probes. Plaintext stays the default."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
import trustme
from grpc_health.v1 import health_pb2, health_pb2_grpc

from gateway.tls import ServerTls
from tablehall.bots import run_bot
from tablehall.client import Client, TablehallError, Tls
from tablehall.ports import free_port
from tablehall.tls_args import client_tls
from tests.processes import stop_process
from tests.test_play_cli import ones, run_cli

SB = "spectacular-bid"
CLI = [sys.executable, "-m", "tablehall.cli"]


@dataclass(frozen=True)
class Authority:
    ca: Path
    cert: Path
    key: Path
    other_ca: Path
    """A CA that did not sign the server's certificate."""

    @property
    def tls(self) -> Tls:
        return Tls(self.ca.read_bytes())


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> Authority:
    folder = tmp_path_factory.mktemp("tls")
    ca = trustme.CA()
    issued = ca.issue_cert("127.0.0.1", "localhost")
    ca.cert_pem.write_to_path(str(folder / "ca.pem"))
    (folder / "cert.pem").write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))
    issued.private_key_pem.write_to_path(str(folder / "key.pem"))
    trustme.CA().cert_pem.write_to_path(str(folder / "other-ca.pem"))
    return Authority(folder / "ca.pem", folder / "cert.pem", folder / "key.pem", folder / "other-ca.pem")


@dataclass(frozen=True)
class Served:
    address: str
    web: str
    lines: tuple[str, ...]


@pytest.fixture(scope="module")
def served(authority: Authority, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`tablehall serve` with a certificate: gRPC and the HTTP door on free ports, in-memory log."""
    env = {**os.environ, "TABLEHALL_LOG_LEVEL": "WARNING"}
    for name in ("TABLEHALL_TLS", "TABLEHALL_CA", "TABLEHALL_TLS_CERT", "TABLEHALL_TLS_KEY", "TABLEHALL_HEALTH_PORT"):
        env.pop(name, None)
    command = [*CLI, "serve", "--port", "0", "--database-url", "memory", "--web-port", "0"]
    command += ["--tls-cert", str(authority.cert), "--tls-key", str(authority.key)]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path_factory.mktemp("serve")
    )  # fmt: skip
    try:
        assert process.stdout is not None
        lines = (process.stdout.readline(), process.stdout.readline())
        serving = next((line for line in lines if "serving on" in line), None)
        web = next((line for line in lines if "web page" in line), None)
        assert serving is not None and web is not None, lines
        address = serving.split("serving on ")[1].split()[0]
        yield Served(address, web.split(" on ")[-1].strip(), lines)
    finally:
        stop_process(process)


def run(coro: object, timeout: float = 60) -> object:
    return asyncio.run(asyncio.wait_for(coro, timeout))  # type: ignore[arg-type]


def test_serve_says_it_serves_tls_on_both_doors(served: Served) -> None:
    assert "with TLS" in served.lines[0] or "with TLS" in served.lines[1], served.lines
    assert served.web.startswith("https://127.0.0.1:"), served.web


def test_a_client_with_the_ca_plays_a_match_and_reads_its_record(served: Served, authority: Authority) -> None:
    async def main() -> tuple[object, dict[str, object]]:
        async with Client(served.address, authority.tls) as client:
            created = await client.create_match(SB, ["Ana", "Bia"], {"start_points": 25})
            final = await asyncio.gather(*(
                run_bot(served.address, created.match_id, token, greedy=True, seed=k, tls=authority.tls)
                for k, token in enumerate(created.tokens)
            ))  # fmt: skip
            return final[0]["status"], await client.record(created.match_id)

    status, record = run(main())  # type: ignore[misc]
    assert status == "finished" and record["game"] == SB


@pytest.mark.parametrize("kind", ["plaintext", "system roots", "another CA"])
def test_a_client_without_the_ca_is_refused(served: Served, authority: Authority, kind: str) -> None:
    tls = {"plaintext": None, "system roots": Tls(), "another CA": Tls(authority.other_ca.read_bytes())}[kind]

    async def main() -> TablehallError:
        async with Client(served.address, tls) as client:
            with pytest.raises(TablehallError) as refused:
                await client.rules(SB)
            return refused.value

    error = run(main())
    assert isinstance(error, TablehallError) and error.status is grpc.StatusCode.UNAVAILABLE, error


def _post(url: str, context: ssl.SSLContext | None) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(
        url + "tablehall.v1.Matches/GetRules", data=json.dumps({"game": SB}).encode(),
        headers={"content-type": "application/json", "connect-protocol-version": "1"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=10, context=context) as reply:
        return reply.status, json.load(reply)


def test_the_http_door_answers_over_https_with_the_ca_only(served: Served, authority: Authority) -> None:
    status, body = _post(served.web, ssl.create_default_context(cafile=str(authority.ca)))
    assert status == 200 and "Spectacular Bid" in str(body["text"])
    with pytest.raises(urllib.error.URLError) as unknown:
        _post(served.web, ssl.create_default_context(cafile=str(authority.other_ca)))
    assert isinstance(unknown.value.reason, ssl.SSLCertVerificationError)
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):  # plaintext to the TLS port
        _post(served.web.replace("https://", "http://"), None)


def test_bot_commands_connect_with_the_ca_by_flag_and_by_environment(served: Served, authority: Authority) -> None:
    async def main() -> list[tuple[int, str]]:
        async with Client(served.address, authority.tls) as client:
            created = await client.create_match(SB, ["Ana", "Bia"], {"start_points": 25})
        base = ["bot", "--address", served.address, "--match", created.match_id, "--greedy", "--token"]
        by_flag = run_cli([*base, created.tokens[0], "--ca", str(authority.ca)])
        os.environ["TABLEHALL_CA"] = str(authority.ca)  # the child inherits it; removed below
        try:
            by_env = run_cli([*base, created.tokens[1]])
            return list(await asyncio.gather(by_flag, by_env))
        finally:
            del os.environ["TABLEHALL_CA"]

    for code, out in run(main(), 120):  # type: ignore[attr-defined]
        assert code == 0, out[-2000:]
        assert out.strip().splitlines()[-1].startswith("Match over:"), out[-500:]


def test_play_connects_with_tls(served: Served, authority: Authority) -> None:
    args = ["play", "--address", served.address, "--game", "501", "--think", "0", "--start-score", "60"]
    code, out = run(run_cli([*args, "--ca", str(authority.ca)], ones()), 120)  # type: ignore[misc]
    assert code == 0, out[-3000:]
    assert "Match over:" in out


def test_the_organizer_commands_reach_the_service_over_tls(served: Served, authority: Authority) -> None:
    args = ["tournament", "status", "t0", "--key", "not-a-key", "--address", served.address]
    code, out = run(run_cli([*args, "--ca", str(authority.ca)]))  # type: ignore[misc]
    assert code == 1 and "Traceback" not in out, out
    assert "UNAVAILABLE" not in out and ("no_database" in out or "unauthenticated" in out), out  # the service said
    code, out = run(run_cli(args))  # type: ignore[misc]
    assert code == 1 and "UNAVAILABLE" in out and "Traceback" not in out, out


def test_the_gateway_role_serves_tls_and_plaintext_health_for_probes(authority: Authority, tmp_path: Path) -> None:
    health_port = free_port()
    env = {**os.environ, "TABLEHALL_LOG_LEVEL": "WARNING", "TABLEHALL_HEALTH_PORT": str(health_port),
           "TABLEHALL_TLS_CERT": str(authority.cert), "TABLEHALL_TLS_KEY": str(authority.key)}  # fmt: skip
    env.pop("TABLEHALL_METRICS_PORT", None)
    command = [*CLI, "gateway", "--port", "0", "--workers", "1", "--worker-address", f"127.0.0.1:{free_port()}"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "serving on" in line and f"plaintext health for probes on {health_port}" in line, line
        address = line.split("serving on ")[1].split()[0]

        async def main() -> str:
            async with Client(address, authority.tls) as client:
                return await client.rules("501")

        assert "501" in str(run(main()))
        with grpc.insecure_channel(f"127.0.0.1:{health_port}") as channel:
            for service in ("", "tablehall.v1.Matches"):
                reply = health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(service=service), timeout=10
                )  # fmt: skip
                assert reply.status == health_pb2.HealthCheckResponse.SERVING
            matches = channel.unary_unary("/tablehall.v1.Matches/GetRules")
            with pytest.raises(grpc.RpcError) as only_health:  # nothing but health in plaintext
                matches(b"", timeout=10)
            assert only_health.value.code() is grpc.StatusCode.UNIMPLEMENTED  # type: ignore[attr-defined]
    finally:
        stop_process(process)


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--tls-cert", "cert"], "needs both a certificate and its key"),
        (["--tls-cert", "missing.pem", "--tls-key", "missing.pem"], "cannot use the TLS certificate"),
        (["--tls-cert", "cert", "--tls-key", "wrong"], "cannot use the TLS certificate"),
    ],
)
def test_a_bad_certificate_stops_serve_with_one_line(
    authority: Authority, tmp_path: Path, flags: list[str], said: str
) -> None:
    files = {"cert": str(authority.cert), "wrong": str(authority.ca)}  # the CA's cert is no private key
    command = [*CLI, "serve", "--port", "0", "--database-url", "memory", "--web-port", "off"]
    command += [files.get(flag, flag) for flag in flags]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and said in done.stderr, done.stderr


def test_an_unreadable_ca_stops_a_client_command_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "not-pem").write_text("hello")
    for ca, said in ((tmp_path / "missing.pem", "cannot read the CA file"), (tmp_path / "not-pem", "no PEM")):
        args = ["bot", "--match", "0123456789abcdef", "--token", "t", "--ca", str(ca)]
        code, out = run(run_cli(args))  # type: ignore[misc]
        assert code != 0 and said in out and len(out.strip().splitlines()) == 1, out


def test_client_settings_plaintext_by_default(authority: Authority, monkeypatch: pytest.MonkeyPatch) -> None:
    def args(**given: object) -> argparse.Namespace:
        return argparse.Namespace(**{"tls": None, "ca": None, **given})

    for name in ("TABLEHALL_TLS", "TABLEHALL_CA"):
        monkeypatch.delenv(name, raising=False)
    assert client_tls(args()) is None
    assert client_tls(args(tls=True)) == Tls()
    assert client_tls(args(ca=str(authority.ca))) == authority.tls
    monkeypatch.setenv("TABLEHALL_TLS", "1")
    assert client_tls(args()) == Tls()
    monkeypatch.setenv("TABLEHALL_TLS", "0")
    monkeypatch.setenv("TABLEHALL_CA", str(authority.ca))
    assert client_tls(args()) == authority.tls


def test_server_settings_from_the_environment(authority: Authority, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TABLEHALL_TLS_CERT", "TABLEHALL_TLS_KEY", "TABLEHALL_HEALTH_PORT"):
        monkeypatch.delenv(name, raising=False)
    assert ServerTls.of(None, None) is None
    monkeypatch.setenv("TABLEHALL_TLS_CERT", str(authority.cert))
    monkeypatch.setenv("TABLEHALL_TLS_KEY", str(authority.key))
    monkeypatch.setenv("TABLEHALL_HEALTH_PORT", "50052")
    found = ServerTls.of(None, None)
    assert found is not None and found.chain == authority.cert.read_bytes() and found.health_port == 50052
    monkeypatch.setenv("TABLEHALL_HEALTH_PORT", "probe")
    with pytest.raises(SystemExit, match="TABLEHALL_HEALTH_PORT must be a port number"):
        ServerTls.of(None, None)
