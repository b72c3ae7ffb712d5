"""How many sessions one app process serves: N simulated sessions speak Streamlit's own websocket
protocol (BackMsg / ForwardMsg protobufs on ``/_stcore/stream``, as the browser does, with no
browser per session) against one ``streamlit run app.py`` (tools/app_server.py).

Every session opens the KV page and goes through the same fixed script (``SCRIPT``) of sidebar
and KV-slider changes, ``--rounds`` times, waiting a think time between changes (uniform in
1–3 s, seeded per session: someone exploring, busier than a reader). Sidebar values differ per
session, so every sidebar change is a scenario no session has asked for yet (a cold Study); the
sliders step between a few values. Sessions start spread over the first seconds.

Per interaction it reports p50 / p95 of
* ``response``: the change sent -> its run's ``script_finished`` received (what a user waits for
  before the browser draws);
* ``server``: the script time of the runs the change started, start to finish as the server
  measured them (tools/run_timer.py), a run cut short for a newer one included.

Levels 1, 20 and 50 sessions are always measured; then the sessions one process holds with
every interaction's response p95 under ``--limit`` (1 s) is found between the measured levels
(to within ``--resolution`` sessions). The load generator runs on the server's machine: its
own CPU time is part of the load (it decodes every message, as a browser would).

    python -m tools.bench_sessions [--levels 1,20,50] [--rounds 2] [--quick] [--no-search]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from tools import run_timer
from tools.app_server import app_server, machine_load

LIMIT_S = 1.0
LEVELS = (1, 20, 50)
THINK_S = (1.0, 3.0)
RAMP_S = 0.2  # between two sessions' first page loads
TIMEOUT_S = 120.0
FINISHED = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY}
WIDGETS = ("number_input", "slider", "selectbox", "radio", "text_input", "text_area", "button")


@dataclass
class Widget:
    """A widget as the last run drew it: its id, its element and the fragment that drew it."""

    id: str
    kind: str
    element: Any
    fragment_id: str

    def value(self) -> WidgetState:
        """The widget's current value, as the browser would report it."""
        state = WidgetState(id=self.id)
        e = self.element
        if self.kind in ("text_input", "text_area"):
            state.string_value = e.value
        elif self.kind == "number_input":
            if e.format == "%d":
                state.int_value = int(e.value)
            else:
                state.double_value = float(e.value)
        elif self.kind == "slider" and e.options:  # a select_slider: labels of its options
            state.string_array_value.data.extend(list(e.raw_value))
        elif self.kind == "slider":
            state.double_array_value.data.extend(list(e.value) or [e.default])
        else:
            state.string_value = e.raw_value
        return state

    def options(self) -> list[str]:
        return list(self.element.options)

    def current(self) -> str:
        raw = self.element.raw_value
        return str(raw if isinstance(raw, str) else raw[0])


@dataclass
class Timing:
    response: float  # seconds, the change sent -> script_finished received
    runs: tuple[str, ...]  # the script runs the change started (their script_run_id)
    fragment: bool = False  # the run that ended it reran fragments, not the page
    server: float = 0.0  # seconds of script time of those runs (``resolve``)

    def resolve(self, run_times: dict[str, float]) -> None:
        self.server = sum(run_times.get(r, 0.0) for r in self.runs)


class Session:
    """One simulated browser tab: a websocket, the widgets of the page, the URL query."""

    def __init__(self, base: str) -> None:
        parts = urlsplit(base)
        self.url = f"ws://{parts.netloc}/_stcore/stream"
        self.base = base
        self.ws: Any = None
        self.widgets: dict[str, Widget] = {}
        self.query = ""
        self.page_hash = ""
        self.page_name = ""
        self._started = 0.0
        self._drawn: set[str] = set()  # widgets drawn by the run in progress
        # (status, run id, when its new_session arrived, when its script_finished arrived)
        self._runs: asyncio.Queue[tuple[int, str, float, float]] = asyncio.Queue()
        self._reader: asyncio.Task[None] | None = None

    async def open(self, page: str, query: str = "") -> Timing:
        import websockets
        from websockets.typing import Subprotocol

        # the browser's first subprotocol entry: "streamlit" (no XSRF token, no session to resume)
        self.ws = await websockets.connect(
            self.url, subprotocols=[Subprotocol("streamlit")], max_size=None
        )
        self._reader = asyncio.create_task(self._read())
        self.page_name = page
        self.query = query
        return await self._rerun(None)

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self.ws is not None:
            await self.ws.close()

    async def _read(self) -> None:
        async for payload in self.ws:
            if isinstance(payload, str):
                continue
            msg = ForwardMsg.FromString(payload)
            kind = msg.WhichOneof("type")
            if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                element = msg.delta.new_element
                what = element.WhichOneof("type")
                if what in WIDGETS:
                    proto = getattr(element, what)
                    key = proto.id.rsplit("-", 1)[-1]
                    self.widgets[key] = Widget(proto.id, what, proto, msg.delta.fragment_id)
                    self._drawn.add(key)
            elif kind == "new_session":
                self._started = time.perf_counter()
                self._drawn = set()
            elif kind == "navigation":  # the page this run drew (new_session names app.py)
                self.page_hash = msg.navigation.page_script_hash
            elif kind == "page_info_changed":
                self.query = msg.page_info_changed.query_string
            elif kind == "script_finished":
                if msg.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY:  # a whole page:
                    self.widgets = {k: w for k, w in self.widgets.items() if k in self._drawn}
                run = msg.metadata.run.script_run_id
                now = time.perf_counter()
                self._runs.put_nowait((msg.script_finished, run, self._started, now))

    async def _rerun(self, change: WidgetState | None, fragment_id: str = "") -> Timing:
        return await self.send([change] if change is not None else [], fragment_id)

    async def send(self, changes: Sequence[WidgetState], fragment_id: str = "") -> Timing:
        """Rerun with ``changes`` (a button's ``trigger_value`` among them: a click) and every
        other widget's current value, as the browser does; wait for the run to finish."""
        back = BackMsg()
        rerun = back.rerun_script
        rerun.query_string = self.query
        if self.page_hash:
            rerun.page_script_hash = self.page_hash
        else:
            rerun.page_name = self.page_name
        rerun.fragment_id = fragment_id
        rerun.context_info.timezone = "UTC"
        rerun.context_info.locale = "en-US"
        rerun.context_info.url = f"{self.base}/{self.page_name}"
        changed = {c.id: c for c in changes}
        for w in self.widgets.values():
            if w.id in changed:
                rerun.widget_states.widgets.append(changed.pop(w.id))
            elif w.kind != "button":  # a button reports only its click
                rerun.widget_states.widgets.append(w.value())
        rerun.widget_states.widgets.extend(changed.values())
        sent = time.perf_counter()
        await self.ws.send(back.SerializeToString())
        runs: list[str] = []
        while True:  # up to the first run that started after the change and ran to its end
            status, run, started, finished = await asyncio.wait_for(self._runs.get(), TIMEOUT_S)
            if started < sent:
                continue  # a run of an earlier change that ended late
            runs.append(run)
            if status in FINISHED:
                fragment = status == ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY
                return Timing(finished - sent, tuple(runs), fragment)

    async def set(self, key: str, value: str | int) -> Timing:
        """Change widget ``key`` to ``value`` (a select_slider's label, a number)."""
        w = self.widgets[key]
        state = WidgetState(id=w.id)
        if w.kind == "number_input":
            state.int_value = int(value)
        elif w.kind == "slider":
            state.string_array_value.data.append(str(value))
        else:
            state.string_value = str(value)
        return await self._rerun(state, w.fragment_id)

    async def step(self, key: str, by: int) -> Timing:
        """Move a select_slider ``by`` options (bouncing off either end)."""
        w = self.widgets[key]
        options = w.options()
        i = options.index(w.current()) + by
        if not 0 <= i < len(options):
            i -= 2 * by
        return await self.set(key, options[i])


# The fixed script: (interaction name, what it does to a session). ``n`` numbers the
# interaction of this session, so sidebar values never repeat across sessions or rounds.
Step = Callable[[Session, int], Any]
SCRIPT: tuple[tuple[str, Step], ...] = (
    ("sidebar: concurrent users", lambda s, n: s.set("w.users", 20 + n)),
    ("KV slider: context", lambda s, n: s.step("kv.context", -1)),
    ("KV slider: users", lambda s, n: s.step("kv.users", 1)),
    ("sidebar: context length", lambda s, n: s.set("w.context", 30_000 + n)),
    ("KV slider: memory fraction", lambda s, n: s.step("kv.mem", 5)),
    ("KV slider: tensor parallel", lambda s, n: s.step("kv.tp", 1)),
)
PAGE = "kv_cache"


@dataclass
class Level:
    sessions: int
    timings: dict[str, list[Timing]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def add(self, what: str, t: Timing) -> None:
        self.timings.setdefault(what, []).append(t)

    def resolve(self, run_times: dict[str, float]) -> None:
        for ts in self.timings.values():
            for t in ts:
                t.resolve(run_times)

    def worst_p95(self) -> float:
        changes = [v for k, v in self.timings.items() if k != "page load"]
        return max((pct([t.response for t in v], 0.95) for v in changes), default=0.0)


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _one(
    base: str, index: int, rounds: int, level: Level, think: tuple[float, float]
) -> None:
    rng = random.Random(index)
    await asyncio.sleep(index * RAMP_S)
    s = Session(base)
    try:
        level.add("page load", await s.open(PAGE))
        for r in range(rounds):
            for i, (what, act) in enumerate(SCRIPT):
                await asyncio.sleep(rng.uniform(*think))
                n = (index * rounds + r) * len(SCRIPT) + i
                level.add(what, await act(s, n))
    except Exception as err:  # a bench reports a failed session, it does not die of it
        level.errors.append(f"session {index}: {type(err).__name__}: {err}")
    finally:
        await s.close()


async def run_level(base: str, sessions: int, rounds: int, think: tuple[float, float]) -> Level:
    level = Level(sessions)
    await asyncio.gather(*(_one(base, i, rounds, level, think) for i in range(sessions)))
    return level


def _warm(base: str) -> None:
    """One session through the script first: imports, first studies, lazy modules."""
    asyncio.run(run_level(base, 1, 1, (0.0, 0.0)))


def print_level(level: Level, limit: float) -> None:
    print(f"\n{level.sessions} session(s) on one process")
    print(f"{'':<30} {'n':>4} {'response':>9} {'':>9} {'server':>9} {'':>9}")
    print(f"{'':<30} {'':>4} {'p50 ms':>9} {'p95 ms':>9} {'p50 ms':>9} {'p95 ms':>9}")
    for what, ts in level.timings.items():
        resp = [t.response * 1000 for t in ts]
        serv = [t.server * 1000 for t in ts]
        print(
            f"{what:<30} {len(ts):>4} {pct(resp, 0.5):>9,.0f} {pct(resp, 0.95):>9,.0f} "
            f"{pct(serv, 0.5):>9,.0f} {pct(serv, 0.95):>9,.0f}"
        )
    print(machine_load())
    verdict = "under" if level.worst_p95() < limit else "over"
    print(f"worst interaction p95: {level.worst_p95() * 1000:,.0f} ms ({verdict} {limit:g} s)")
    for e in level.errors[:5]:
        print("error:", e)


def capacity(
    measure: Callable[[int], Level], measured: dict[int, Level], limit: float, resolution: int
) -> tuple[int, int | None]:
    """(the most sessions measured under ``limit``, the fewest measured over it or None):
    bisects between the measured levels, doubling past the last one if all were under."""

    def ok(n: int) -> bool:
        level = measured.get(n) or measured.setdefault(n, measure(n))
        return level.worst_p95() < limit and not level.errors

    good = max((n for n in measured if ok(n)), default=0)
    bad = min((n for n in measured if n > good and not ok(n)), default=None)
    while bad is None and good and good < 400:
        n = good * 2
        if ok(n):
            good = n
        else:
            bad = n
    while bad is not None and bad - good > resolution:
        n = (good + bad) // 2
        if ok(n):
            good = n
        else:
            bad = n
    return good, bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.bench_sessions", description=__doc__)
    ap.add_argument("--levels", default=",".join(map(str, LEVELS)), help="sessions per level")
    ap.add_argument("--rounds", type=int, default=2, help="times each session runs the script")
    ap.add_argument("--limit", type=float, default=LIMIT_S, help="p95 limit in seconds")
    ap.add_argument("--resolution", type=int, default=5, help="capacity to within N sessions")
    ap.add_argument("--no-search", action="store_true", help="only the levels, no capacity")
    ap.add_argument("--quick", action="store_true", help="one round, capacity to within 10")
    ap.add_argument("--url", help="a running app instead of starting one (its base URL)")
    args = ap.parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    resolution = max(args.resolution, 10) if args.quick else args.resolution
    levels = [int(n) for n in args.levels.split(",") if n]
    print(
        f"\nsessions over Streamlit's websocket protocol, page {PAGE}: {rounds} round(s) of "
        f"{len(SCRIPT)} changes each, think time {THINK_S[0]:g}-{THINK_S[1]:g} s"
    )
    log = Path(tempfile.mkdtemp()) / "runs.log"
    with nullcontext(args.url) if args.url else app_server(run_log=log) as base:
        _warm(base)

        def measure(n: int) -> Level:
            level = asyncio.run(run_level(base, n, rounds, THINK_S))
            level.resolve(run_timer.read(log))
            print_level(level, args.limit)
            return level

        measured = {n: measure(n) for n in levels}
        if not args.no_search:
            good, bad = capacity(measure, measured, args.limit, resolution)
            over = f", {bad} did not" if bad is not None else ""
            print(
                f"\nsessions one process holds with every interaction's p95 under "
                f"{args.limit:g} s: {good} ({good} measured under{over})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
