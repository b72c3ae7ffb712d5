"""Heavy work one piece at a time in the process, and a session that waits for it says so.

Streamlit runs each session's script in a thread of one process, and Python runs one thread's
bytecode at a time: every rerun shares the interpreter with whatever else runs. Heavy work — a
Study whose layers × layouts pass ``engine.study.HEAVY_WORK``, a config read from the hub, a
large paste or upload, the alternatives of a scenario not yet found — takes one slot of
``MAX_HEAVY``; an ordinary rerun never waits for a slot, so it shares the interpreter with at
most that many heavy pieces of work, however many sessions ask for them (one session pasting
large configs back to back, or many new sessions, queue behind each other). A session whose
heavy work waits shows a spinner saying the server is busy with other sessions' work.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from ui.lang import T

MAX_HEAVY = 1
# a paste or an upload above this many bytes is parsed in the heavy slot (the largest bundled
# config is 37 KB; the 3.6 MB ModelOpt one parses in about 0.1 s)
HEAVY_TEXT_BYTES = 256 * 1024

_slots = threading.BoundedSemaphore(MAX_HEAVY)
_count_lock = threading.Lock()
_waiting = 0
_held = threading.local()  # depth 1 while this thread holds a slot


def waiting() -> int:
    """Sessions waiting for a heavy-work slot now."""
    with _count_lock:
        return _waiting


def _wait() -> None:
    global _waiting
    with _count_lock:
        _waiting += 1
    try:
        if not _slots.acquire(blocking=False):
            with st.spinner(T("busy.waiting", n=waiting()), show_time=True):
                _slots.acquire()
    finally:
        with _count_lock:
            _waiting -= 1


@contextmanager
def heavy(needed: bool = True) -> Iterator[None]:
    """Run the block in a heavy-work slot when ``needed`` (a block inside one already holds it)."""
    if not needed or int(getattr(_held, "depth", 0)) > 0:
        yield
        return
    _wait()
    _held.depth = 1
    try:
        yield
    finally:
        _held.depth = 0
        _slots.release()


# Python's cyclic garbage collector stops every thread while a full pass walks every object
# the process holds: 0.4-1.5 s with the caches full of Studies (measured under the attacks of
# tools/bench_attacks.py, the machine at load 11 on 2 cores). Objects alive after the first
# page (Streamlit, pandas, plotly, the engine's data tables: most of the heap) never become
# garbage: frozen out of every full pass. The young generation is collected every 10,000
# allocations, not 700, so a Study's temporaries die before they are promoted and count
# towards the next full pass.
YOUNG_THRESHOLD = 10_000
_settled = False


def settle_gc() -> None:
    """Once per process, after its first page: collect, freeze what is alive, collect the young
    generation less often."""
    global _settled
    with _count_lock:
        if _settled:
            return
        _settled = True
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
