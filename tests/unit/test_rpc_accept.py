"""The daemon's accept loop (issue 11): it pauses and retries only when accept fails for lack
of a resource that closing connections gives back (EMFILE, ENFILE, ENOMEM, ENOBUFS), as
trio.serve_listeners does; any other accept error ends serving instead of spinning.

A stub listener stands in for the socket: the kernel cannot be made to fail accept with a
chosen errno (the EMFILE case runs for real in tests/reliability/test_wire_abuse.py)."""

import errno

import pytest
import trio

from vigil.daemon.rpc.server import accept_loop


class StubListener:
    """Fails accept with the given errnos, in order, then hands out `streams` markers."""

    def __init__(self, errnos: list[int]):
        self.errnos = list(errnos)
        self.calls = 0

    async def accept(self):
        await trio.lowlevel.checkpoint()
        self.calls += 1
        if self.errnos:
            code = self.errnos.pop(0)
            raise OSError(code, "stub")
        return f"stream{self.calls}"


@pytest.mark.parametrize("code", [errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS])
async def test_capacity_errors_pause_then_retry(code, autojump_clock):
    listener = StubListener([code, code])
    accepted = []
    with trio.move_on_after(10):
        async with trio.open_nursery() as nursery:
            def handle(stream):
                accepted.append((stream, trio.current_time()))
                nursery.cancel_scope.cancel()
            nursery.start_soon(accept_loop, listener, handle, 0.1)
    assert accepted == [("stream3", pytest.approx(0.2))]


@pytest.mark.parametrize("code", [errno.EBADF, errno.EINVAL, errno.ENOTSOCK])
async def test_other_errors_end_serving(code):
    listener = StubListener([code])
    with pytest.raises(OSError) as info:
        await accept_loop(listener, lambda stream: None, 0.1)
    assert info.value.errno == code
    assert listener.calls == 1
