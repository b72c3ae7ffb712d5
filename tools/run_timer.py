"""`streamlit run`, with every script run's start-to-finish time written to a file: the
benchmarks' "server" figure, taken where the run happens rather than off the websocket (the
server flushes its messages in batches, so a run's ``new_session`` can arrive with its first
deltas, long after the run began).

    python -m tools.run_timer RUN_LOG run app.py --server.port 8501 ...

Each line of RUN_LOG is ``<script_run_id> <milliseconds> <kind>``, written when the run ends:
the id the run's ``new_session`` and ``script_finished`` messages carry
(``metadata.run.script_run_id``), the time between Streamlit's own SCRIPT_STARTED and
SCRIPT_STOPPED_* events in the script thread (callbacks and script, whole page or fragments),
and ``page``, ``fragment`` or ``cut`` (stopped early for a newer run). The app itself is
untouched; only the benchmarks start it this way (tools/app_server.py, ``run_log=``).
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any


def install(path: Path) -> None:
    """Record the runs of every session this process starts from now on."""
    from streamlit.runtime.app_session import AppSession
    from streamlit.runtime.scriptrunner import ScriptRunnerEvent as E

    ends = {
        E.SCRIPT_STOPPED_WITH_SUCCESS: "page",
        E.FRAGMENT_STOPPED_WITH_SUCCESS: "fragment",
        E.SCRIPT_STOPPED_FOR_RERUN: "cut",
        E.SCRIPT_STOPPED_WITH_COMPILE_ERROR: "error",
    }
    started: dict[str, float] = {}
    lock = threading.Lock()
    out = path.open("a", buffering=1, encoding="utf-8")
    original = AppSession._on_scriptrunner_event

    def on_event(self: Any, sender: Any, event: Any, *args: Any, **kwargs: Any) -> None:
        run = kwargs.get("run_descriptor")
        if run is not None:
            now = time.perf_counter()
            if event == E.SCRIPT_STARTED:
                started[run.script_run_id] = now
            elif event in ends:
                t0 = started.pop(run.script_run_id, None)
                if t0 is not None:
                    with lock:
                        out.write(f"{run.script_run_id} {(now - t0) * 1000:.3f} {ends[event]}\n")
        original(self, sender, event, *args, **kwargs)

    AppSession._on_scriptrunner_event = on_event  # type: ignore[method-assign]


def read(path: Path) -> dict[str, float]:
    """Seconds per script run id, from a RUN_LOG."""
    out: dict[str, float] = {}
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) >= 2:
            out[parts[0]] = float(parts[1]) / 1000
    return out


def main() -> None:
    log = Path(sys.argv[1])
    install(log)
    from streamlit.web.cli import main as streamlit_main

    sys.argv = ["streamlit", *sys.argv[2:]]
    streamlit_main(prog_name="streamlit")


if __name__ == "__main__":
    main()
