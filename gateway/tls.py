"""TLS on the gateway's two doors: the certificate chain and key that the gRPC server and the HTTP door
serve when given (`--tls-cert`/`--tls-key`, `TABLEHALL_TLS_CERT`/`TABLEHALL_TLS_KEY`); plaintext without.

Kubelet gRPC probes cannot speak TLS, so with TLS on, `TABLEHALL_HEALTH_PORT` opens a plaintext port that
serves only the standard health service (gateway/server.py), for probes inside the pod's network.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from pathlib import Path

import grpc


@dataclass(frozen=True, slots=True)
class ServerTls:
    cert_file: Path
    """PEM: the server's certificate, then any intermediates."""
    key_file: Path
    """PEM: its private key."""
    chain: bytes
    key: bytes
    health_port: int | None = None
    """A plaintext port serving only grpc.health.v1 (kubelet probes); None: none."""

    @staticmethod
    def of(cert: str | None, key: str | None) -> ServerTls | None:
        """From the flags, else TABLEHALL_TLS_CERT / TABLEHALL_TLS_KEY; None when neither is set. A missing
        half, an unreadable file or a key that does not match stops the process with a one-line reason."""
        cert = cert or os.environ.get("TABLEHALL_TLS_CERT") or None
        key = key or os.environ.get("TABLEHALL_TLS_KEY") or None
        if cert is None and key is None:
            return None
        if cert is None or key is None:
            raise SystemExit("TLS needs both a certificate and its key: --tls-cert FILE --tls-key FILE")
        try:
            ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
            chain, secret = Path(cert).read_bytes(), Path(key).read_bytes()
        except (OSError, ssl.SSLError) as error:
            reason = getattr(error, "strerror", None) or getattr(error, "reason", None) or str(error)
            raise SystemExit(f"cannot use the TLS certificate {cert} with the key {key}: {reason}") from None
        return ServerTls(Path(cert), Path(key), chain, secret, _health_port())

    def credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials([(self.key, self.chain)])


def _health_port() -> int | None:
    text = os.environ.get("TABLEHALL_HEALTH_PORT", "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) > 65535:
        raise SystemExit(f"TABLEHALL_HEALTH_PORT must be a port number, not {text[:20]!r}")
    return int(text)
