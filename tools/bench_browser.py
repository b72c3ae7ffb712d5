"""Browser timings for `make bench`: `streamlit run app.py` on a free port, Debian's Chromium
driven by Playwright (the same pair as tests/test_browser.py), one session.

* per page, 20 sidebar changes (the sidebar's "Concurrent users", a new value each time, so
  each change is a new scenario and a cold study);
* on the KV page, 20 keyboard steps of every slider (context, users, memory fraction, TP, DP).

Two times per change: "server", the script time of the runs the change started, start to
finish as the server measured them (tools/run_timer.py; whole page or fragments, a run cut short
for a newer one included); and "drawn", the change to the page settled in Chromium: the
``script_finished`` of a run that ran to its end has arrived over the websocket (decoded with
Streamlit's own protobuf), the "running" status widget is gone and the browser has drawn two
frames since. How many sessions one process serves
is measured without a browser per session: tools/bench_sessions.py. ``--sessions N`` still
opens N browser contexts at once, which on one machine measures Chromium more than the server.

    python -m tools.bench_browser [--changes 20] [--pages family,kv_cache] [--sessions 0]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools import run_timer
from tools.app_server import app_server, machine_load
from ui.nav import PAGES

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
TARGET_P95_MS = 400.0
RUN_OVER = (
    "() => !document.querySelector("
    '\'[data-testid="stStatusWidget"] [data-testid="stStatusWidgetRunningIcon"]\')'
)
TWO_FRAMES = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
TIMEOUT_MS = 180_000
# The KV page's sliders, by label, each stepped with the keyboard as a user would.
KV_SLIDERS = (
    "Context (tokens)",
    "Concurrent users",
    "Memory fraction",
    "Tensor parallel (TP)",
    "DP-attention ranks (DP)",
)


@dataclass
class Timing:
    """The script runs an action started, their script time (``resolve``) and the seconds
    from the action to the page drawn."""

    runs: tuple[str, ...]
    drawn: float
    server: float = 0.0

    def resolve(self, run_times: dict[str, float]) -> None:
        self.server = sum(run_times.get(r, 0.0) for r in self.runs)


def server(run_log: Path) -> AbstractContextManager[str]:
    """A headless Streamlit server for the app, its runs timed into ``run_log``; yields its
    base URL."""
    return app_server(run_log=run_log)


@dataclass
class Session:
    """One browser tab and the count of script runs the server has finished for it."""

    page: Any
    finished: int = 0
    runs: list[tuple[float, str]] = field(default_factory=list)  # (new_session seen, run id)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def on_frame(self, payload: bytes | str) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        if isinstance(payload, str):
            return
        try:
            msg = ForwardMsg.FromString(payload)
        except Exception:  # not a ForwardMsg (never seen; a bench must not die of it)
            return
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self.runs.append((time.perf_counter(), msg.metadata.run.script_run_id))
        elif kind == "script_finished" and msg.script_finished in (
            ForwardMsg.FINISHED_SUCCESSFULLY,
            ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY,
        ):
            self.finished += 1
            self.changed.set()

    def timing(self, start: float) -> Timing:
        """The runs since ``start`` (their times come from the run log) and the page drawn."""
        runs = tuple(r for t, r in self.runs if t >= start)
        return Timing(runs, time.perf_counter() - start)

    async def settle_after(self, before: int) -> None:
        """Wait for a script run after ``before`` runs, then for the page to be drawn."""
        while self.finished <= before:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), TIMEOUT_MS / 1000)
        await self.page.wait_for_function(RUN_OVER, timeout=TIMEOUT_MS)
        await self.page.evaluate(TWO_FRAMES)


async def open_session(browser: Any, url: str) -> tuple[Session, Timing]:
    """A new browser context (its own Streamlit session) at ``url``, and how long it took."""
    context = await browser.new_context(viewport={"width": 1440, "height": 1400})
    page = await context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    s = Session(page)
    page.on("websocket", lambda ws: ws.on("framereceived", s.on_frame))
    start = time.perf_counter()
    await page.goto(url)
    await s.settle_after(0)
    await page.wait_for_selector('[data-testid="stSidebar"]')
    return s, s.timing(start)


async def change_users(s: Session, value: int) -> Timing:
    """Type a new "Concurrent users" value in the sidebar; seconds until the page settles."""
    sidebar = s.page.locator('[data-testid="stSidebar"]')
    box = sidebar.get_by_role("spinbutton", name="Concurrent users")  # not its help button
    await box.fill(str(value))
    before = s.finished
    start = time.perf_counter()
    await box.press("Enter")
    await s.settle_after(before)
    return s.timing(start)


async def step_slider(s: Session, label: str, key: str) -> Timing:
    """One keyboard step of the main area's slider ``label``; seconds until the page settles."""
    slider = (
        s.page.locator('[data-testid="stMain"] [data-testid="stSlider"]')
        .filter(has_text=label)
        .get_by_role("slider")
    )
    await slider.focus()
    before = s.finished
    start = time.perf_counter()
    await slider.press(key)
    await s.settle_after(before)
    return s.timing(start)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@dataclass(frozen=True)
class Row:
    what: str
    timings: list[Timing]

    @property
    def samples(self) -> list[float]:
        return [t.drawn for t in self.timings]

    def line(self, target_ms: float | None = TARGET_P95_MS) -> str:
        drawn = [t.drawn * 1000 for t in self.timings]
        server = [t.server * 1000 for t in self.timings]
        p50, p95 = pct(drawn, 0.5), pct(drawn, 0.95)
        ok = target_ms is not None and max(p95, pct(server, 0.95)) < target_ms
        verdict = "" if target_ms is None else ("ok" if ok else "MISSED")
        target = "" if target_ms is None else f"< {target_ms:,.0f}"
        n = len(drawn)
        return (
            f"{self.what:<44} {n:>3} {pct(server, 0.5):>9,.0f} {pct(server, 0.95):>9,.0f} "
            f"{p50:>9,.0f} {p95:>9,.0f} {target:>8} {verdict}"
        )


async def bench(base: str, pages: list[str], changes: int, sessions: int) -> list[Row]:
    from playwright.async_api import async_playwright

    rows: list[Row] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        # warm the server (imports, the default study) outside the figures
        warm, _ = await open_session(browser, f"{base}/kv_cache")
        await warm.page.context.close()
        for name in pages:
            s, _ = await open_session(browser, f"{base}/{'' if name == 'overview' else name}")
            times = [await change_users(s, 17 + i) for i in range(changes)]
            rows.append(Row(f"sidebar change: {name}", times))
            await s.page.context.close()
        if "kv_cache" in pages:
            s, _ = await open_session(browser, f"{base}/kv_cache")
            # right, then back: every slider but context starts at its first option ("auto")
            keys = ["ArrowRight", "ArrowLeft"]
            for label in KV_SLIDERS:
                times = [await step_slider(s, label, keys[i % len(keys)]) for i in range(changes)]
                rows.append(Row(f"KV slider {label}", times))
            await s.page.context.close()
        if sessions:
            opened = await asyncio.gather(
                *(open_session(browser, f"{base}/kv_cache") for _ in range(sessions))
            )
            rows.append(Row(f"{sessions} sessions at once: page load", [t for _, t in opened]))
            moved = await asyncio.gather(
                *(step_slider(s, KV_SLIDERS[0], "ArrowLeft") for s, _ in opened)
            )
            rows.append(Row(f"{sessions} sessions at once: slider change", list(moved)))
            for s, _ in opened:
                await s.page.context.close()
        await browser.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.bench_browser", description=__doc__)
    ap.add_argument("--changes", type=int, default=20, help="changes per page (default 20)")
    ap.add_argument("--sessions", type=int, default=0, help="browser sessions at once (0: skip)")
    ap.add_argument("--pages", default=",".join(PAGES), help="comma-separated page names")
    args = ap.parse_args(argv)
    if not CHROMIUM.exists():
        print("browser bench skipped: no /usr/bin/chromium (bash tools/install_browser.sh)")
        return 0
    pages = [p for p in args.pages.split(",") if p]
    log = Path(tempfile.mkdtemp()) / "runs.log"
    with server(log) as base:
        rows = asyncio.run(bench(base, pages, args.changes, args.sessions))
    run_times = run_timer.read(log)
    for r in rows:
        for t in r.timings:
            t.resolve(run_times)
    head = f"{'n':>3} {'server':>9} {'':>9} {'drawn':>9} {'':>9} {'p95':>8}"
    sub = f"{'':>3} {'p50 ms':>9} {'p95 ms':>9} {'p50 ms':>9} {'p95 ms':>9} {'target':>8}"
    print(f"\n{'browser (Playwright + Chromium), one session':<44} {head}\n{'':<44} {sub}")
    for r in rows:
        concurrent = "sessions at once" in r.what
        print(r.line(None if concurrent else TARGET_P95_MS))
    single = [r for r in rows if "sessions at once" not in r.what]
    print(
        "median over every single-session change (drawn): "
        f"{statistics.median(t for r in single for t in r.samples) * 1000:,.0f} ms. "
        "server: the rerun's script start to finish; drawn: the change to the page settled in "
        "Chromium."
    )
    print(machine_load())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
