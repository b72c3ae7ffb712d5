"""Large pastes and uploads are read in a worker process, not in the server's.

Python's JSON parser holds the interpreter lock for as long as it reads: a quarter of a second
for an 8 MiB config, a second to write one with many keys back in order for its digest; every
other session's rerun, and the server's websocket loop, stand still meanwhile. A text above
``busy.HEAVY_TEXT_BYTES`` is read in one worker process instead (ui/reader.py:
``engine.model.store.read`` parses, checks, summarises and refuses a config too large to hold),
and only what the store would hold comes back (at most ``MAX_HELD_BYTES`` of JSON). The worker
starts with the first large text and reads one at a time; if it fails, the text is read here
instead and the next one starts a new worker.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from pathlib import Path

from engine.model import store
from ui.busy import HEAVY_TEXT_BYTES
from ui.reader import receive, send

ROOT = Path(__file__).resolve().parent.parent
log = logging.getLogger("serving_playbook")
_lock = threading.Lock()
_proc: subprocess.Popen[bytes] | None = None


def _worker() -> subprocess.Popen[bytes]:
    global _proc
    if _proc is None or _proc.poll() is not None:
        _proc = subprocess.Popen(
            [sys.executable, "-m", "ui.reader"], cwd=ROOT, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )  # fmt: skip
    return _proc


def _in_worker(data: str | bytes, name: str) -> store.Held | store.Refused | None:
    """The worker's answer, or None when it failed (it is stopped; the next call starts one)."""
    global _proc
    with _lock:
        proc = _worker()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            send(proc.stdin, (data, name))
            answer = receive(proc.stdout)
        except (OSError, EOFError, ValueError):
            log.exception("the config reader's worker process failed; reading here")
            proc.kill()
            _proc = None
            return None
    if not isinstance(answer, store.Held | store.Refused):
        return None
    return answer


def read(data: str | bytes, name: str) -> store.Held:
    """``data`` (a pasted text, an uploaded file's bytes) read as the store would hold it;
    ``InputError`` naming the field when it is refused."""
    result = _in_worker(data, name) if len(data) > HEAVY_TEXT_BYTES else None
    if result is None:
        result = store.read(data, name)
    if isinstance(result, store.Refused):
        raise result.error()
    return result
