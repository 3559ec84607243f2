"""The stdio transport of `vigil mcp`: newline-delimited JSON-RPC messages on stdin/stdout,
read and written with non-blocking pipes on the event loop.

The SDK's own `stdio_server` wraps the standard streams with `anyio.wrap_file`, which runs
every line read and every line written in a worker thread: two thread hand-offs per tool
call, about a millisecond of a 3 ms budget here (tests/bench/bench_mcp.py). This transport
does the same job without threads and leaves everything else to the SDK: messages are
parsed and serialized with the SDK's models (`jsonrpc_message_adapter`,
`model_dump_json`) and handed to `Server.run` as `SessionMessage`s; the JSON-RPC session,
dispatch, cancellation and errors remain the SDK's.

Like the SDK's, it takes the wire away from fds 0 and 1 while it serves (0 reads /dev/null,
1 writes to stderr), so nothing printed by accident can corrupt the stream.
"""

from __future__ import annotations

import os
from contextlib import asynccontextmanager
from typing import AsyncIterator

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

READ_BYTES = 65536


def _take_fd(fd: int, replacement: int) -> int:
    """A private, non-blocking duplicate of `fd`; `fd` itself now points at `replacement`."""
    private = os.dup(fd)
    os.dup2(replacement, fd)
    os.set_blocking(private, False)
    return private


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[object, object]]:
    """(read stream, write stream) for `Server.run`, on this process's stdin/stdout."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    saved_in, saved_out = os.dup(0), os.dup(1)
    in_fd = _take_fd(0, devnull)
    out_fd = _take_fd(1, 2)
    os.close(devnull)
    read_send, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_receive = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        pending = b""
        async with read_send:
            while True:
                await anyio.wait_readable(in_fd)
                try:
                    data = os.read(in_fd, READ_BYTES)
                except BlockingIOError:
                    continue
                if not data:
                    return  # the client closed stdin: the session is over
                pending += data
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    try:
                        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    except Exception as exc:  # the SDK answers a parse error itself
                        await read_send.send(exc)
                        continue
                    await read_send.send(SessionMessage(message))

    async def writer() -> None:
        async with write_receive:
            async for session_message in write_receive:
                data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                view = memoryview(data.encode() + b"\n")
                while view:
                    try:
                        view = view[os.write(out_fd, view):]
                    except BlockingIOError:
                        await anyio.wait_writable(out_fd)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            yield read_stream, write_stream
            tg.cancel_scope.cancel()
    finally:
        for private, std, saved in ((in_fd, 0, saved_in), (out_fd, 1, saved_out)):
            os.dup2(saved, std)
            os.close(saved)
            os.close(private)
