"""The gateway's HTTP door: the public services over Connect and gRPC-Web, and the web page at `/`.

Browsers cannot speak native gRPC, so the very servicer instances the grpcio server runs
(gateway/server.py `public_servicers`) are mounted as connect-python ASGI applications through
`ConnectBridge` (gateway/connect_door.py): no rule, check or error mapping is written twice. Uvicorn
serves it in the gateway's own event loop, beside the grpc.aio server. Cross-origin callers are allowed
only from the origins of one setting (`TABLEHALL_CORS_ORIGINS` / `--cors-origins`); the page itself is
same-origin and needs none.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from connectrpc.errors import ConnectError
from google.protobuf import descriptor_pool
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import PlainTextResponse
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import Message, Receive, Scope, Send

from gateway.connect_door import ConnectBridge
from gateway.tls import ServerTls
from gateway.web_bounds import BoundedGzip, Guarded
from workers.errors import ERROR_CODE_KEY, RETRY_AFTER_KEY

log = logging.getLogger("tablehall.web")

DEFAULT_WEB_PORT = 8080
WEB_DIR = Path(__file__).resolve().parents[1] / "web" / "dist"
"""The Vite build of web/ (`npm run build`); `TABLEHALL_WEB_DIR` points elsewhere."""

ALLOWED_HEADERS = (
    "authorization",
    "content-type",
    "connect-protocol-version",
    "connect-timeout-ms",
    "connect-accept-encoding",
    "connect-content-encoding",
    "grpc-timeout",
    "grpc-accept-encoding",
    "x-grpc-web",
    "x-user-agent",
)
EXPOSED_HEADERS = (
    "grpc-status",
    "grpc-message",
    "grpc-status-details-bin",
    ERROR_CODE_KEY,
    f"trailer-{ERROR_CODE_KEY}",
    RETRY_AFTER_KEY,
    f"trailer-{RETRY_AFTER_KEY}",
)
"""What a cross-origin browser may read back: gRPC-Web's status, the service's stable error code and its
retry hint when a caller is over its limits."""


@dataclass(frozen=True, slots=True)
class WebSettings:
    """Whether and where the HTTP door listens (`port` None: off), and who may call it cross-origin."""

    port: int | None
    origins: tuple[str, ...] = ()

    @staticmethod
    def of(port: str | None, origins: str | None, default: int | None) -> WebSettings:
        """From a flag, else `TABLEHALL_WEB_PORT` ("off" or a port; 0 picks a free one), else `default`."""
        text = port if port is not None else os.environ.get("TABLEHALL_WEB_PORT")
        if text is None or not text.strip():
            return WebSettings(default, cors_origins(origins))
        if text.strip().lower() == "off":
            return WebSettings(None, cors_origins(origins))
        try:
            number = int(text)
        except ValueError:
            raise SystemExit(f"the web port must be a number or 'off', not {text!r}") from None
        if not 0 <= number < 65536:
            raise SystemExit(f"the web port must be from 0 to 65535, not {number}")
        return WebSettings(number, cors_origins(origins))


def connect_apps(servicers: Mapping[str, Any]) -> list[Any]:
    """Each public service (by full name) as its generated Connect application, bridged to its servicer,
    reading requests within the limits of the gRPC door (gateway/web_bounds.py)."""
    apps = []
    for full_name, servicer in servicers.items():
        descriptor = descriptor_pool.Default().FindServiceByName(full_name)
        module = importlib.import_module(descriptor.file.name.removesuffix(".proto").replace("/", ".") + "_connect")
        bridge: Any = ConnectBridge(servicer, descriptor)  # its methods are made from the descriptor
        generated = getattr(module, f"{descriptor.name}ASGIApplication")
        guarded = type(generated.__name__, (Guarded, generated), {})
        apps.append(guarded(bridge, compressions=[BoundedGzip()]))
    return apps


def cors_origins(flag: str | None = None) -> tuple[str, ...]:
    """Origins allowed to call cross-origin (comma-separated; `*` for any); none by default."""
    text = flag if flag is not None else os.environ.get("TABLEHALL_CORS_ORIGINS", "")
    return tuple(origin.strip().rstrip("/") for origin in text.split(",") if origin.strip())


def web_dir() -> Path:
    return Path(os.environ.get("TABLEHALL_WEB_DIR") or WEB_DIR)


async def _not_built(scope: Scope, receive: Receive, send: Send) -> None:
    text = (
        f"The tablehall web page is not built ({web_dir()} has no index.html).\n"
        "Build it once: cd web && npm ci && npm run build\n"
        "The Connect and gRPC-Web services answer here all the same.\n"
    )
    await PlainTextResponse(text, status_code=404)(scope, receive, send)


class EndOnDisconnect:
    """Ends a call as soon as its client goes away. connect-python notices a disconnect only when a stream
    has its next message to send, and a Watch may wait long for one: a closed tab would hold its watcher
    (and the `tablehall_watchers_connected` gauge) until the match's next change."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        call = asyncio.current_task()
        if scope["type"] != "http" or call is None:
            await self.app(scope, receive, send)
            return
        state = {"gone": False, "done": False}

        async def receiving() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect" and not state["done"] and not state["gone"]:
                state["gone"] = True
                call.cancel()  # the handler's stream ends now: the actor drops its watcher
            return message

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                state["done"] = True
            await send(message)

        try:
            await self.app(scope, receiving, sending)
        except (asyncio.CancelledError, ConnectError):
            if not state["gone"]:
                raise
            call.uncancel()


def web_app(apps: Sequence[Any], static: Path | None, origins: Sequence[str] = ()) -> Starlette:
    routes = [Mount(app.path, app=EndOnDisconnect(app)) for app in apps]
    page = StaticFiles(directory=static, html=True) if static and (static / "index.html").is_file() else _not_built
    routes.append(Mount("/", app=page))
    middleware = []
    if origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(origins),
                allow_methods=["GET", "POST"],
                allow_headers=list(ALLOWED_HEADERS),
                expose_headers=list(EXPOSED_HEADERS),
                max_age=600,
            )
        )
    return Starlette(routes=routes, middleware=middleware)


@dataclass
class WebDoor:
    server: uvicorn.Server
    sock: socket.socket
    loop_task: asyncio.Task[None]
    host: str
    port: int
    tls: bool = False

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}/"

    async def stop(self, grace: float = 5.0) -> None:
        """Stop accepting, let calls in flight finish within `grace`, then cancel what is left."""
        self.server.config.timeout_graceful_shutdown = max(1, round(grace))
        self.server.should_exit = True
        await self.loop_task
        await self.server.shutdown(sockets=[self.sock])


async def start_web_door(
    servicers: Mapping[str, Any],
    host: str = "127.0.0.1",
    port: int = DEFAULT_WEB_PORT,
    origins: Sequence[str] = (),
    tls: ServerTls | None = None,
) -> WebDoor:
    """Serves the HTTP door in the running event loop; `port` 0 picks a free one; HTTPS with `tls`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise OSError(f"the web door cannot listen on {host}:{port}: {error.strerror}") from None
    sock.listen(128)
    sock.setblocking(False)
    static = web_dir()
    config = uvicorn.Config(
        web_app(connect_apps(servicers), static, origins),
        lifespan="off",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=5,
        ssl_certfile=str(tls.cert_file) if tls else None,
        ssl_keyfile=str(tls.key_file) if tls else None,
    )
    config.load()
    server = uvicorn.Server(config)
    server.lifespan = config.lifespan_class(config)
    await server.startup(sockets=[sock])
    if not (static / "index.html").is_file():
        log.warning("web page not built (%s): run `npm ci && npm run build` in web/", static)
    return WebDoor(server, sock, asyncio.create_task(server.main_loop()), host, sock.getsockname()[1], tls is not None)
