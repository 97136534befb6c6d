"""A small threaded HTTP/1.1 server on a loopback address, driven by a Python callable."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    method: str
    raw_path: str          # percent-encoded path, without the query
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-cased names
    body: bytes
    client: str


@dataclass
class Response:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False       # close the connection without answering
    delay: float = 0.0       # seconds to wait before answering
    hold: threading.Event | None = None  # set: answer at once, though the delay is not over


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    server_version = "GitHub.com"
    sys_version = ""

    def log_message(self, format, *args):  # noqa: A002 - silence the default stderr log
        pass

    def _handle(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        request = Request(self.command, parts.path, parse_qs(parts.query, keep_blank_values=True),
                          {k.lower(): v for k, v in self.headers.items()}, body,
                          self.client_address[0])
        try:
            response = self.server.app(request)
        except Exception as exc:  # the simulator's own bug: answer 500 and say why
            import traceback
            traceback.print_exc()
            response = Response(500, f"simulator error: {exc!r}".encode(),
                                {"Content-Type": "text/plain"})
        if response.delay:
            if response.hold is not None:
                response.hold.wait(response.delay)
            else:
                time.sleep(response.delay)
        if response.drop:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        try:
            self.send_response(response.status)
            headers = dict(response.headers)
            headers.setdefault("Content-Length", str(len(response.body)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeouts)
            self.close_connection = True

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True


class LoopbackServer:
    """Serves app(Request) -> Response on host:ephemeral port in a background thread."""

    def __init__(self, app, host: str = "127.0.0.1") -> None:
        self._server = _Server((host, 0), _Handler)
        self._server.app = app
        self.host, self.port = self._server.server_address[:2]
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
