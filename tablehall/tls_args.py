"""The TLS flags of the command line, one function per side, so that every command adds them alike:
`--tls-cert/--tls-key` where a command serves, `--tls` and `--ca FILE` where it connects. Plaintext is the
local default. Nothing here imports gRPC (`tablehall` starts without it)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.tls import ServerTls
    from tablehall.client import Tls

TRUE = {"1", "true", "yes", "on"}


def add_server_tls(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tls-cert", default=None, metavar="FILE",
        help="serve TLS on the gRPC port and the HTTP door: this certificate chain, PEM (TABLEHALL_TLS_CERT)",
    )  # fmt: skip
    parser.add_argument("--tls-key", default=None, metavar="FILE", help="its private key, PEM (TABLEHALL_TLS_KEY)")


def add_client_tls(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tls", action="store_true", default=None,
        help="connect with TLS, trusting the system's certificate authorities (TABLEHALL_TLS=1)",
    )  # fmt: skip
    parser.add_argument(
        "--ca", default=None, metavar="FILE", help="connect with TLS, trusting this CA certificate, PEM (TABLEHALL_CA)"
    )


def server_tls(args: argparse.Namespace) -> ServerTls | None:
    from gateway.tls import ServerTls

    return ServerTls.of(getattr(args, "tls_cert", None), getattr(args, "tls_key", None))


def client_tls(args: argparse.Namespace) -> Tls | None:
    """TLS when `--tls`, `--ca`, TABLEHALL_TLS=1 or TABLEHALL_CA asks for it; None (plaintext) otherwise.
    A CA file that cannot be read stops the command with a one-line reason."""
    ca = getattr(args, "ca", None) or os.environ.get("TABLEHALL_CA") or None
    wanted = getattr(args, "tls", None) or os.environ.get("TABLEHALL_TLS", "").strip().lower() in TRUE
    if not (wanted or ca):
        return None
    from tablehall.client import Tls

    if ca is None:
        return Tls()
    try:
        pem = Path(ca).read_bytes()
    except OSError as error:
        raise SystemExit(f"tablehall: cannot read the CA file {ca}: {error.strerror}") from None
    if b"-----BEGIN CERTIFICATE-----" not in pem:
        raise SystemExit(f"tablehall: {ca} holds no PEM certificate")
    return Tls(pem)
