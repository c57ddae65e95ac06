"""Helpers for the edge tests: one real service (gateway, HTTP door, in-process worker) per test module,
and raw calls of any method through each door with the bytes a careless or hostile client would send,
answered as (status, stable code, message) whatever the protocol."""

from __future__ import annotations

import http.client
import json
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import grpc
import pytest
from google.protobuf import descriptor_pool
from google.protobuf.descriptor import MethodDescriptor

from tests.web_support import CONNECT_STREAM, GRPC_WEB, LiveService, envelope, frames, live_service
from workers.errors import ERROR_CODE_KEY

SERVICES = ("tablehall.v1.Matches", "tablehall.v1.Tournaments", "tablehall.v1.Lobby")
DOORS = ("grpc", "connect", "grpc-web")
BY_NUMBER = {status.value[0]: status for status in grpc.StatusCode}
BOUND = 30.0
"""Seconds one raw call may take at most: a call the service never answers fails, it never hangs."""


def methods() -> list[MethodDescriptor]:
    """Every method of the public services."""
    pool = descriptor_pool.Default()
    return [method for name in SERVICES for method in pool.FindServiceByName(name).methods]


def path_of(method: MethodDescriptor) -> str:
    return f"/{method.containing_service.full_name}/{method.name}"


@pytest.fixture(scope="module")
def edge() -> Iterator[LiveService]:
    """The service, with no tournament or ratings database (those calls are refused, not failed)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TABLEHALL_DATABASE_URL", "memory")
        yield from live_service()


@dataclass(frozen=True)
class Answer:
    """What a door answered: the status by its gRPC name ("OK" too), the `tablehall-error` code, the
    message, and the reply messages' bytes."""

    status: str
    code: str | None = None
    message: str = ""
    replies: tuple[bytes, ...] = ()


def call(
    service: LiveService, door: str, method: MethodDescriptor, messages: Sequence[bytes], token: str | None = None
) -> Answer:
    """`messages` (raw bytes, one unless the method streams its requests) sent to `method` through `door`."""
    if door == "grpc":
        return grpc_call(service.address, method, messages, token)
    if door == "connect" and not (method.client_streaming or method.server_streaming):
        assert len(messages) == 1
        return connect_unary(service.url, path_of(method), messages[0], "application/proto", token)
    body = b"".join(envelope(m) for m in messages)
    return enveloped(service.url, path_of(method), body, GRPC_WEB if door == "grpc-web" else CONNECT_STREAM, token)


def grpc_call(address: str, method: MethodDescriptor, messages: Sequence[bytes], token: str | None = None) -> Answer:
    metadata = (("authorization", f"Bearer {token}"),) if token else None
    raw: dict[str, Any] = {"request_serializer": None, "response_deserializer": None}
    with grpc.insecure_channel(address) as channel:
        path = path_of(method)
        try:
            if method.client_streaming:
                streaming = channel.stream_stream(path, **raw) if method.server_streaming else None
                if streaming is None:
                    reply = channel.stream_unary(path, **raw)(iter(messages), timeout=BOUND, metadata=metadata)
                    return Answer("OK", replies=(reply,))
                return Answer("OK", replies=tuple(streaming(iter(messages), timeout=BOUND, metadata=metadata)))
            (message,) = messages
            if method.server_streaming:
                stream = channel.unary_stream(path, **raw)(message, timeout=BOUND, metadata=metadata)
                return Answer("OK", replies=tuple(stream))
            return Answer("OK", replies=(channel.unary_unary(path, **raw)(message, timeout=BOUND, metadata=metadata),))
        except grpc.RpcError as error:
            codes = [str(v) for k, v in error.trailing_metadata() or () if k == ERROR_CODE_KEY]  # type: ignore[attr-defined]
            return Answer(error.code().name, codes[0] if codes else None, error.details() or "")  # type: ignore[attr-defined]


def _connection(url: str) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=BOUND)


def connect_unary(
    url: str, path: str, body: bytes, content_type: str, token: str | None = None, extra: dict[str, str] | None = None
) -> Answer:
    """A Connect unary POST; an error is the JSON body with the code in the `trailer-tablehall-error` header."""
    headers = {"content-type": content_type, "connect-protocol-version": "1"} | (extra or {})
    if token:
        headers["authorization"] = f"Bearer {token}"
    connection = _connection(url)
    try:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        payload = response.read()
        if response.status == 200:
            return Answer("OK", replies=(payload,))
        error = json.loads(payload)
        code = response.getheader("trailer-" + ERROR_CODE_KEY)
        return Answer(grpc_name(error["code"]), code, error.get("message", ""))
    finally:
        connection.close()


def enveloped(url: str, path: str, body: bytes, content_type: str, token: str | None = None) -> Answer:
    """A Connect streaming or gRPC-Web call with an enveloped body, read to its end frame."""
    headers = {"content-type": content_type}
    headers |= {"x-grpc-web": "1"} if content_type == GRPC_WEB else {"connect-protocol-version": "1"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    connection = _connection(url)
    try:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        replies, end = [], b""
        for flags, payload in frames(response.read()):
            if flags & 0x80 or flags & 0x02:
                end = payload
            else:
                replies.append(payload)
    finally:
        connection.close()
    if content_type == GRPC_WEB:
        trailers = dict(line.split(": ", 1) for line in end.decode().split("\r\n") if line)
        status = BY_NUMBER[int(trailers.get("grpc-status", "0"))]
        message = unquote(trailers.get("grpc-message", ""))
        return Answer(status.name, trailers.get(ERROR_CODE_KEY), message, tuple(replies))
    finished = json.loads(end or b"{}")
    if "error" not in finished:
        return Answer("OK", replies=tuple(replies))
    codes = finished.get("metadata", {}).get(ERROR_CODE_KEY, [None])
    error = finished["error"]
    return Answer(grpc_name(error["code"]), codes[0], error.get("message", ""), tuple(replies))


def grpc_name(connect_code: str) -> str:
    """A Connect error code as the gRPC status of the same meaning ("canceled" is spelled with two Ls)."""
    return "CANCELLED" if connect_code == "canceled" else connect_code.upper()


def troubles(records: Sequence[logging.LogRecord]) -> list[str]:
    """What a refusal must never leave in the log: warnings, errors, tracebacks."""
    return [r.getMessage()[:200] for r in records if r.levelno >= logging.WARNING or r.exc_info is not None]
