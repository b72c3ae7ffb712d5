"""The config reader's worker process (ui/worker.py starts it: ``python -m ui.reader``): reads
requests on stdin and answers on stdout, each a length-prefixed pickle, ``(data, name)`` in and
``engine.model.store.read``'s answer out; after each, the memory it used goes back to the
system. Imports no Streamlit: a small process (about 75 MB), and nothing of the server's."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import pickle
import struct
import sys
from typing import IO

from engine.model import store

_SIZE = struct.Struct("!Q")
_libc_name = ctypes.util.find_library("c")
_libc = ctypes.CDLL(_libc_name) if _libc_name else None


def send(stream: IO[bytes], value: object) -> None:
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_SIZE.pack(len(payload)) + payload)
    stream.flush()


def receive(stream: IO[bytes]) -> object:
    head = stream.read(_SIZE.size)
    if len(head) < _SIZE.size:
        raise EOFError("the other side closed the pipe")
    (size,) = _SIZE.unpack(head)
    payload = stream.read(size)
    if len(payload) < size:
        raise EOFError("the other side closed the pipe")
    return pickle.loads(payload)


def _trim() -> None:
    """An 8 MiB text leaves about 60 MB of freed objects that the allocator would keep."""
    gc.collect()
    trim = getattr(_libc, "malloc_trim", None)
    if trim is not None:
        trim(0)


def serve(inp: IO[bytes], out: IO[bytes]) -> None:
    while True:
        try:
            request = receive(inp)
        except EOFError:
            return
        assert isinstance(request, tuple)  # (data, name): what ui/worker.py sends
        answer = store.read(*request)
        del request
        send(out, answer)
        del answer
        _trim()


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
