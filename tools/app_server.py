"""`streamlit run app.py` on a free local port, for the browser tests and the browser benchmark:
started headless and offline, ready when /_stcore/health answers, stopped on exit."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def app_server(
    start_timeout_s: float = 60.0,
    run_log: Path | None = None,
    on_start: Callable[[int], object] | None = None,
) -> Iterator[str]:
    """A headless server for the app; yields its base URL. If it does not answer its health
    check in time, RuntimeError carries the tail of its output. ``run_log``: write each script
    run's time there (tools/run_timer.py; the benchmarks). ``on_start``: given the server's
    process id (the memory benchmarks read its resident memory)."""
    port = free_port()
    launcher = ["tools.run_timer", str(run_log)] if run_log is not None else ["streamlit"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    base = f"http://127.0.0.1:{port}"
    # the server's output goes to a file, read only if it fails to start (a pipe nobody reads
    # would fill and stall the server)
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [
                sys.executable, "-m", *launcher, "run", "app.py",
                "--server.headless", "true", "--server.port", str(port),
                "--server.address", "127.0.0.1", "--server.fileWatcherType", "none",
            ],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + start_timeout_s
            while not _healthy(base):
                if proc.poll() is not None or time.monotonic() > deadline:
                    proc.kill()
                    log.seek(0)
                    out = log.read().decode(errors="replace")
                    raise RuntimeError(f"streamlit did not start on {base}:\n{out[-3000:]}")
                time.sleep(0.3)
            if on_start is not None:
                on_start(proc.pid)
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def _healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def machine_load() -> str:
    """The load averages (1, 5, 15 min) and the cores, as ``uptime`` says them: benchmarks on a
    shared machine print it with every figure."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"
