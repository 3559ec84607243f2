"""A stand-in for a guardian on its socket path, driven step by step by a test.

Real guardians cannot be made to die at an exact point of the daemon's handshake, nor to
claim another identity; this one can. It speaks the real guardian wire protocol (the
project's own `wire` structs and framing), so the daemon cannot tell it from a guardian
except by what it says.
"""

from __future__ import annotations

import os
import socket

from vigil.daemon.guardian import wire
from vigil.protocol.frames import FrameDecoder, encode_frame


class FakeGuardian:
    def __init__(self, socket_path: str, timeout: float = 30.0):
        if os.path.exists(socket_path):
            os.unlink(socket_path)  # a dead guardian's stale socket file
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(socket_path)
        self.listener.listen(4)
        self.listener.settimeout(timeout)
        self.conn: socket.socket | None = None
        self.frames = FrameDecoder()

    def accept(self) -> None:
        self.conn, _ = self.listener.accept()
        self.conn.settimeout(self.listener.gettimeout())

    def receive(self):
        """The daemon's next message, or None when it closed the connection."""
        while True:
            body = self.frames.next_frame()
            if body is not None:
                return wire.decode_daemon_message(body)
            data = self.conn.recv(65536)
            if not data:
                return None
            self.frames.feed(data)

    def send(self, msg) -> None:
        self.conn.sendall(encode_frame(wire.encode(msg)))

    def welcome(self, identity: wire.RuntimeIdentity, rows: int = 50, cols: int = 200) -> None:
        self.send(wire.Welcome(protocol=wire.GUARDIAN_PROTOCOL_MAX, identity=identity,
                               ring_start=0, ring_end=0, exit=None, rows=rows, cols=cols))

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.listener.close()
