"""App timing: how fast a slider change re-renders the KV page, and how long a cold start
takes to its first render. Both through Streamlit's AppTest (the same script run a browser
session triggers, without the websocket and the browser's drawing).

    python -m tools.bench_app            # prints the figures; exit 1 if a target is missed
"""

from __future__ import annotations

import logging
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app.py"
SLIDER_TARGET_MS = 150.0
COLD_START_TARGET_S = 3.0

# Runs in a fresh interpreter, so every import (streamlit, plotly, pydantic, the engine) counts.
_COLD = f"""
import time
t0 = time.perf_counter()
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({str(APP)!r}, default_timeout=60).run()
assert not at.exception, [e.value for e in at.exception]
assert any(m.value == "70,272 B" for m in at.metric)
print(time.perf_counter() - t0)
"""


@dataclass(frozen=True)
class Figure:
    name: str
    value: float
    unit: str
    target: float

    @property
    def ok(self) -> bool:
        return self.value <= self.target

    def line(self) -> str:
        verdict = "ok" if self.ok else "MISSED"
        target = f"target < {self.target:g} {self.unit}"
        return f"{self.name}: {self.value:,.1f} {self.unit} ({target}) {verdict}"


def slider_rerender_ms(changes: int = 30) -> list[float]:
    """Milliseconds per KV-page re-render after a context-slider change (the whole script:
    sidebar, diagnosis, three charts), on a warm session."""
    from streamlit.testing.v1 import AppTest

    # AppTest runs the script outside a server; Streamlit says so once per run. Not news here.
    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").setLevel(
        logging.ERROR
    )
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.switch_page("app_pages/kv_cache.py").run()
    values = [8192, 131_072, 32_768, 65_536]
    at.select_slider(key="kv.context").set_value(values[-1]).run()  # warm-up
    times = []
    for i in range(changes):
        at.select_slider(key="kv.context").set_value(values[i % len(values)])
        t0 = time.perf_counter()
        at.run()
        times.append((time.perf_counter() - t0) * 1000)
        assert not at.exception, [e.value for e in at.exception]
    return times


def cold_start_s(repeats: int = 3) -> list[float]:
    """Seconds from a fresh Python process to the first rendered page (imports included)."""
    out = []
    for _ in range(repeats):
        res = subprocess.run(
            [sys.executable, "-c", _COLD], cwd=ROOT, capture_output=True, text=True, check=True
        )
        out.append(float(res.stdout.strip().splitlines()[-1]))
    return out


def figures() -> list[Figure]:
    slider = statistics.median(slider_rerender_ms())
    cold = statistics.median(cold_start_s())
    return [
        Figure("KV page re-render after a slider change (median)", slider, "ms", SLIDER_TARGET_MS),
        Figure("Cold start to first render (median)", cold, "s", COLD_START_TARGET_S),
    ]


def main() -> int:
    results = figures()
    for f in results:
        print(f.line())
    return 0 if all(f.ok for f in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
