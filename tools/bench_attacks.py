"""One hostile session against one app process (issue 32): what it does to the server's memory
and to every other session's response time. Over Streamlit's own websocket protocol
(tools/bench_sessions.py), against one ``streamlit run app.py`` (tools/app_server.py):

0. **work**: the worst-shaped config the bounds accept, its Study and its alternatives in this
   process: CPU seconds (the figure a session's heavy work holds the interpreter for).
1. **memory**: ``--pastes`` (40) distinct config.json texts of about 7 MiB, each pasted from a
   new session on Overview (the session opens, pastes, waits for the page, closes), of four
   kinds in turn: the ModelOpt NVFP4 shape (accepted: its module listing is summarised), and
   bulk under unknown keys, numbers and short strings (refused: too large to hold). The server's
   resident memory (with its config reader's worker process) before (after a warm-up session),
   after, and its peak, against ``memory_bound``: the idle server, the caches' budget
   (``engine.budget.BUDGET_BYTES``), the worker and each paste in flight.
2. **fairness**: ``--sessions`` (8) ordinary sessions go through the sessions bench's script
   (sidebar and KV-slider changes, think time 1-3 s) alone, then while one attacker pastes large
   configs back to back (a new session each), then while it loads the worst-shaped config the
   bounds accept (DeepSeek-V3 with 4,096 layers and 65,536 experts, 65,536 per token; each paste
   a distinct one). Per phase the ordinary sessions' response p50 / p95 over all their changes
   (target: p95 under 1 s).

    python -m tools.bench_attacks [--pastes 40] [--sessions 8] [--rounds 2] [--only memory]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from streamlit.proto.WidgetStates_pb2 import WidgetState

from engine.alternatives import alternatives
from engine.budget import BUDGET_BYTES, MIB
from engine.model import store
from engine.model.loader import MODELS_DIR, load_pasted
from engine.scenario import make_scenario
from engine.study import study
from tools.app_server import app_server, machine_load
from tools.bench_sessions import SCRIPT, THINK_S, Session, pct
from tools.nvfp4_config import nvfp4_config_bytes

PASTE_BYTES = 7 * MIB
# Beyond the idle server and the caches' budget: the config reader's worker process (ui/reader.py,
# about 75 MB idle, up to about 190 MB while it reads an 8 MiB text: parsed, about 8 bytes of
# Python objects per byte of JSON), and in the server each paste in flight (its text in the
# websocket frame, the message, the widget state, the copy sent to the worker)
WORKER_ALLOWANCE = 192 * MIB
PER_PASTE_IN_FLIGHT = 48 * MIB
P95_TARGET_S = 1.0
PAGE = "overview"
KINDS = ("modelopt", "keys", "numbers", "strings")
# the unit test's mix: cheaper to refuse (a text whose JSON breaks at its end is read whole first)
TEST_KINDS = ("modelopt", "numbers", "strings", "broken")


def memory_bound(idle: int, in_flight: int = 1) -> int:
    """The most resident memory (the server and its worker) the stated bound allows a server
    that was ``idle`` bytes, with ``in_flight`` pastes arriving at once."""
    return idle + BUDGET_BYTES + WORKER_ALLOWANCE + in_flight * PER_PASTE_IN_FLIGHT


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except FileNotFoundError:  # a thread that ended meanwhile
            continue
    return out


def rss(pid: int) -> tuple[int, int]:
    """(resident, peak resident) bytes of process ``pid`` and its children (the config reader's
    worker process): the peak is the sum of each one's own."""
    now = peak = 0
    for p in [pid, *_children(pid)]:
        try:
            lines = Path(f"/proc/{p}/status").read_text().splitlines()
        except FileNotFoundError:  # a child that ended meanwhile
            continue
        fields = dict(line.split(":", 1) for line in lines if ":" in line)
        now += int(fields["VmRSS"].split()[0]) * 1024
        peak += int(fields["VmHWM"].split()[0]) * 1024
    return now, peak


# --- what the attacker pastes -----------------------------------------------------------------


def _base() -> dict[str, object]:
    return dict(json.loads((MODELS_DIR / "Qwen__Qwen3-8B.json").read_text()))


def _modelopt(size: int) -> str:
    per = len(nvfp4_config_bytes(2_000)) - len(nvfp4_config_bytes(1_000))
    n = 1_000 + (size - len(nvfp4_config_bytes(1_000))) * 1_000 // per
    return nvfp4_config_bytes(n).decode()


@lru_cache(maxsize=8)
def _body(kind: str, size: int) -> str:
    """The bulk of a config of ``kind``, without its opening brace (made once per kind)."""
    if kind == "modelopt":
        return _modelopt(size)[1:]
    rng = random.Random(size)
    cfg = _base()
    if kind == "keys":
        cfg["extra"] = {f"k{n}": f"v{n % 99_991:05d}" for n in range(size // 19)}
    elif kind == "numbers":
        cfg["extra"] = [rng.randrange(10**6) for _ in range(size // 7)]
    else:
        cfg["extra"] = [f"{rng.randrange(1 << 24):06x}" for _ in range(size // 9)]
    return json.dumps(cfg, separators=(",", ":"))[1:]


def bulk(kind: str, i: int, size: int = PASTE_BYTES) -> str:
    """A distinct config.json text of about ``size`` bytes: ``i`` in a field of its own makes
    its digest, and so its Study, its own (``broken``: the numbers, one comma short at the end)."""
    if kind == "broken":
        return bulk("numbers", i, size)[:-1] + ",}"
    return f'{{"bench_paste":{i},' + _body(kind, size)


def worst_shape(i: int) -> str:
    """The worst-shaped config the bounds accept: DeepSeek-V3 with 4,096 layers and 65,536
    experts, all of them per token (``i`` makes it distinct)."""
    cfg = json.loads((MODELS_DIR / "deepseek-ai__DeepSeek-V3.json").read_text())
    cfg |= {"num_hidden_layers": 4096, "n_routed_experts": 65_536, "num_experts_per_tok": 65_536}
    cfg["bench_paste"] = i
    return json.dumps(cfg)


def pastes(n: int, size: int = PASTE_BYTES, kinds: tuple[str, ...] = KINDS) -> Iterator[str]:
    for i in range(n):
        yield bulk(kinds[i % len(kinds)], i, size)


# --- one paste from a new session ---------------------------------------------------------------


async def paste_once(base: str, text: str, page: str = PAGE) -> float:
    """Open a new session, paste ``text`` and click "Load", wait for the page; seconds from the
    click to the page drawn."""
    s = Session(base)
    try:
        await s.open(page)
        await s.set("w.mode", "paste")
        area, go = s.widgets["w.paste"], s.widgets["w.paste_go"]
        value = WidgetState(id=area.id, string_value=text)
        click = WidgetState(id=go.id, trigger_value=True)
        t0 = time.perf_counter()
        await s.send([value, click])
        return time.perf_counter() - t0
    finally:
        await s.close()


@dataclass
class Memory:
    idle: int
    after: int
    peak: int
    pastes: int
    seconds: float
    at_once: int = 1

    @property
    def bound(self) -> int:
        return memory_bound(self.idle, self.at_once)

    @property
    def within(self) -> bool:
        return self.after <= self.bound and self.peak <= self.bound


async def _warm(base: str) -> None:
    await paste_once(base, json.dumps(_base()))  # imports, the paste path, a first Study


def memory_attack(
    base: str,
    pid: int,
    n: int,
    kinds: tuple[str, ...] = KINDS,
    at_once: int = 1,
    page: str = PAGE,
) -> Memory:
    """``n`` distinct pastes of about 7 MiB of ``kinds`` in turn, one new session each (on
    ``page``), back to back from ``at_once`` attackers."""
    asyncio.run(_warm(base))
    idle, _ = rss(pid)
    for _ in pastes(len(kinds), kinds=kinds):  # each kind's bulk made before the clock starts
        pass
    t0 = time.perf_counter()

    async def attacker(k: int) -> None:
        for i in range(k, n, at_once):
            await paste_once(base, bulk(kinds[i % len(kinds)], i), page)

    async def run() -> None:
        await asyncio.gather(*(attacker(k) for k in range(at_once)))

    asyncio.run(run())
    after, peak = rss(pid)
    return Memory(idle, after, peak, n, time.perf_counter() - t0, at_once)


# --- ordinary sessions while one attacks ----------------------------------------------------------


async def _ordinary(base: str, index: int, rounds: int, out: list[float]) -> None:
    rng = random.Random(index)
    await asyncio.sleep(index * 0.2)
    s = Session(base)
    try:
        await s.open("kv_cache")
        for r in range(rounds):
            for i, (_, act) in enumerate(SCRIPT):
                await asyncio.sleep(rng.uniform(*THINK_S))
                n = (index * rounds + r) * len(SCRIPT) + i + 10_000 * rounds
                out.append((await act(s, n)).response)
    finally:
        await s.close()


async def _attacker(base: str, make: Callable[[int], str], stop: asyncio.Event) -> int:
    i = 0
    while not stop.is_set():
        await paste_once(base, make(i))
        i += 1
    return i


async def _phase(
    base: str, sessions: int, rounds: int, make: Callable[[int], str] | None
) -> tuple[list[float], int]:
    out: list[float] = []
    stop = asyncio.Event()
    attack = asyncio.create_task(_attacker(base, make, stop)) if make else None
    await asyncio.gather(*(_ordinary(base, i, rounds, out) for i in range(sessions)))
    stop.set()
    done = await attack if attack else 0
    return out, done


def fairness(base: str, sessions: int, rounds: int) -> dict[str, tuple[list[float], int]]:
    asyncio.run(_warm(base))
    phases: dict[str, Callable[[int], str] | None] = {
        "alone": None,
        "one session pastes ~7 MiB configs back to back": lambda i: bulk(KINDS[i % 4], 100 + i),
        "one session loads the worst shape back to back": worst_shape,
    }
    return {
        name: asyncio.run(_phase(base, sessions, rounds, make)) for name, make in phases.items()
    }


def worst_shape_cpu() -> tuple[float, float]:
    """CPU seconds of the worst shape's Study and of its alternatives (a fresh config each)."""
    study(make_scenario())  # imports and data tables first
    loaded = load_pasted(worst_shape(-1), name="worst.json")
    s = make_scenario(source="file", model="worst.json", digest=store.put(loaded))
    t0 = time.process_time()
    st = study(s)
    t1 = time.process_time()
    alternatives(st)
    return t1 - t0, time.process_time() - t1


def _mb(n: int) -> str:
    return f"{n / MIB:,.0f} MB"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.bench_attacks", description=__doc__)
    ap.add_argument("--pastes", type=int, default=40)
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--only", choices=("memory", "fairness"))
    args = ap.parse_args(argv)
    if args.only is None:
        st_cpu, alt_cpu = worst_shape_cpu()
        print(
            f"\nthe worst shape in bounds (DeepSeek-V3, 4,096 layers, 65,536 experts, 8 x H200): "
            f"study {st_cpu:.2f} s + alternatives {alt_cpu:.2f} s of CPU"
        )
    pids: list[int] = []
    with app_server(on_start=pids.append) as base:
        if args.only != "fairness":
            m = memory_attack(base, pids[0], args.pastes)
            ok = "within" if m.within else "OVER"
            print(
                f"\n{m.pastes} distinct ~7 MiB pastes, each from a new session ({m.seconds:.0f} s):"
                f" server + worker resident {_mb(m.idle)} idle -> {_mb(m.after)} after, peak "
                f"{_mb(m.peak)}; bound {_mb(m.bound)} (idle + {_mb(BUDGET_BYTES)} caches + "
                f"{_mb(WORKER_ALLOWANCE)} worker + {_mb(PER_PASTE_IN_FLIGHT)} a paste in flight): "
                f"{ok}"
            )
            print(machine_load())
        if args.only != "memory":
            print(f"\n{args.sessions} ordinary sessions, {args.rounds} round(s) of {len(SCRIPT)}")
            print(f"{'phase':<52} {'n':>4} {'p50 ms':>8} {'p95 ms':>8} {'attacks':>8}")
            for name, (times, done) in fairness(base, args.sessions, args.rounds).items():
                p95 = pct(times, 0.95)
                mark = "ok" if p95 < P95_TARGET_S else "OVER"
                print(
                    f"{name:<52} {len(times):>4} {pct(times, 0.5) * 1000:>8,.0f} "
                    f"{p95 * 1000:>8,.0f} {done:>8} {mark}"
                )
            print(machine_load())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
