"""A TCP proxy for outage tests (no tests here): every byte between a client and a real server
(Redis, PostgreSQL) passes through it, and a test can cut the path at will.

Two kinds of outage, both what a network or a server restart really does:
- `drop()`: every open connection is reset and new ones are refused (a server restarting, a
  failover): clients get a connection error at once.
- `stall()`: connections stay open but no byte passes either way, new ones are accepted and held
  (a partition, a hung server): only a client's own timeouts get it out.
`restore()` ends either; connections cut by `drop()` stay cut (the client must reconnect), stalled
ones carry on with what was held back.
"""

from __future__ import annotations

import selectors
import socket
import threading


class TcpProxy:
    def __init__(self, target_host: str, target_port: int):
        self.target = (target_host, target_port)
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(128)
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._mode = "up"  # up | dropped | stalled
        self._resumed = threading.Event()
        self._resumed.set()
        self._closed = False
        self.accepted = 0
        self.refused = 0
        threading.Thread(target=self._accept, name="tcp-proxy-accept", daemon=True).start()

    def url(self, scheme: str, path: str = "") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    # -- outages ------------------------------------------------------------------------------------
    def drop(self) -> None:
        with self._lock:
            self._mode = "dropped"
            pairs, self._pairs = self._pairs, []
        for a, b in pairs:
            _reset(a)
            _reset(b)

    def stall(self) -> None:
        with self._lock:
            self._mode = "stalled"
            self._resumed.clear()

    def restore(self) -> None:
        with self._lock:
            self._mode = "up"
            self._resumed.set()

    @property
    def mode(self) -> str:
        return self._mode

    def close(self) -> None:
        self._closed = True
        self.drop()
        self._resumed.set()
        try:
            self._listener.close()
        except OSError:
            pass

    # -- plumbing -----------------------------------------------------------------------------------
    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._mode == "dropped":
                self.refused += 1
                _reset(client)
                continue
            self._resumed.wait()  # a stalled proxy holds a new connection without answering it
            if self._closed or self._mode == "dropped":
                _reset(client)
                continue
            try:
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                _reset(client)
                continue
            server.settimeout(None)
            with self._lock:
                # drop() may have come while this connection was being made: it swapped the
                # list out already, so a pair added now would outlive the outage (a client's call
                # answered mid-outage, seen under load as "reachable again" after 0.0 s).
                dropped = self._mode == "dropped"
                if not dropped:
                    self._pairs.append((client, server))
            if dropped:
                self.refused += 1
                _reset(client)
                _reset(server)
                continue
            self.accepted += 1
            threading.Thread(target=self._pipe, args=(client, server), name="tcp-proxy-pipe", daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        peers = {a: b, b: a}
        # A selector, not select.select: a test process of a long run holds more than 1024 open
        # files, and select() refuses a descriptor past FD_SETSIZE (ValueError), which reset every
        # connection through the proxy as soon as it was made.
        watch = selectors.DefaultSelector()
        try:
            watch.register(a, selectors.EVENT_READ)
            watch.register(b, selectors.EVENT_READ)
            while True:
                readable = [key.fileobj for key, _ in watch.select(0.2)]
                if self._closed:
                    return
                for src in readable:
                    self._resumed.wait()  # stalled: the bytes wait here, unread past the buffers
                    if self._closed:
                        return
                    data = src.recv(65536)
                    if not data:
                        return
                    peers[src].sendall(data)
        except (OSError, ValueError):
            return
        finally:
            watch.close()
            with self._lock:
                if (a, b) in self._pairs:
                    self._pairs.remove((a, b))
            _reset(a)
            _reset(b)


def _reset(sock: socket.socket) -> None:
    """Close with RST (SO_LINGER 0): the peer sees the connection fail, not an orderly end."""
    import struct

    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
