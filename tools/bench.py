"""`make bench`: every benchmark, printed as tables. Nothing here is asserted by the unit tests
(performance targets are checked by benchmarks, never by timed unit tests).

1. ``diagnose`` of each bundled config and of a 3 MB ModelOpt config that lists every quantized
   module (target < 2 ms per config; the big config's load time reported apart);
2. ``study()`` of one scenario: cold (the study cache cleared; target < 50 ms), the first call
   in a fresh process (every data table loaded too), and cached (target < 1 ms); cold for every
   bundled config (median and worst);
3. the speed model against measured serving runs (tools/bench_perf.py, alone:
   ``python -m tools.bench_perf``): median and p90 |error| of TPOT, TTFT and tokens/s per GPU;
4. uploads (tools/bench_uploads.py): CPU and memory of the largest accepted config and of a
   refused 30 MB one, and 20 distinct 3 MB uploads (store API, and 20 app sessions);
5. the app through AppTest (tools/bench_app.py);
6. the app in a real browser, one session (tools/bench_browser.py): a sidebar change on every
   page and a step of every KV-page slider, each as the server's script time and as drawn
   (target: p95 < 400 ms);
7. sessions on one app process over Streamlit's websocket protocol (tools/bench_sessions.py):
   p50 / p95 per interaction at 1, 20 and 50 sessions, and the sessions one process holds with
   every interaction's p95 under 1 s;
8. one hostile session against one app process (tools/bench_attacks.py): the worst-shaped
   config the bounds accept (CPU of its Study and alternatives), the server's memory after 40
   distinct ~7 MiB pastes from new sessions against its stated bound, and ordinary sessions'
   p95 while one session pastes large configs or loads the worst shape back to back (target
   p95 < 1 s).

Print the machine's load (``uptime``) with the figures: on a shared machine they move with it.

    python -m tools.bench [--quick]     # --quick: 5 browser changes, one round per session
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial

from engine.diagnose import Options, diagnose
from engine.model.config import ModelConfig
from engine.model.loader import catalog_names, load_model
from tools.app_server import machine_load
from tools.nvfp4_config import nvfp4_config_bytes

DIAGNOSE_TARGET_MS = 2.0
STUDY_COLD_TARGET_MS = 50.0
STUDY_CACHED_TARGET_MS = 1.0
BIG_CONFIG = "3 MB NVFP4 config (22,422 quantized_layers)"

# The first study in a fresh interpreter: imports, data tables, the catalog config, the study.
_FIRST = """
import time
from engine.scenario import make_scenario
t0 = time.perf_counter()
from engine.study import study
study(make_scenario())
print((time.perf_counter() - t0) * 1000)
"""


def _ms(call: Callable[[], object], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _diagnose_ms(cfg: ModelConfig, repeats: int) -> float:
    diagnose(cfg, Options())  # warm the rule tables
    gc.collect()  # garbage of the loads before is not diagnose's time
    return statistics.median(_ms(partial(diagnose, cfg, Options(context=32_768)), repeats))


def bench_big_config(repeats: int = 50) -> tuple[float, float]:
    """(median diagnose ms, median load ms) of the 3 MB config."""
    data = nvfp4_config_bytes()
    loads = _ms(partial(load_model, data), 5)
    return _diagnose_ms(load_model(data).config, repeats), statistics.median(loads)


def bench_diagnose(repeats: int = 50) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in catalog_names():
        out[name] = _diagnose_ms(load_model(name).config, repeats)
    return out


def bench_study(repeats: int = 20) -> list[tuple[str, float, float | None]]:
    """(what, milliseconds, target) rows for study()."""
    from engine import study as study_mod
    from engine.scenario import make_scenario

    s = make_scenario()  # DeepSeek-V3 on 8 × H200, the app's default view

    def cold() -> object:
        study_mod.clear_cache()
        return study_mod.study(s)

    study_mod.study(s)
    cold_ms = _ms(cold, repeats)
    cached_ms = _ms(lambda: study_mod.study(s), 1000)
    first = subprocess.run(
        [sys.executable, "-c", _FIRST], capture_output=True, text=True, check=True
    ).stdout.split()[-1]
    per_config = []
    for name in catalog_names():
        sc = make_scenario(model=name)
        study_mod.study(sc)  # load the config once; then time the study itself
        runs = []
        for _ in range(3):  # the median of three: one pass can meet a garbage collection
            study_mod.forget(sc)
            t0 = time.perf_counter()
            study_mod.study(sc)
            runs.append((time.perf_counter() - t0) * 1000)
        per_config.append(statistics.median(runs))
    return [
        ("study() cold, DeepSeek-V3 on 8 x H200 (median)", statistics.median(cold_ms),
         STUDY_COLD_TARGET_MS),
        ("study() cold, DeepSeek-V3 on 8 x H200 (p95)", sorted(cold_ms)[int(0.95 * (repeats - 1))],
         STUDY_COLD_TARGET_MS),
        ("study() first call in a fresh process", float(first), None),
        (f"study() cold, each of {len(per_config)} bundled configs (median)",
         statistics.median(per_config), STUDY_COLD_TARGET_MS),
        ("study() cold, the slowest bundled config (median of 3)", max(per_config),
         STUDY_COLD_TARGET_MS),
        ("study() cached (median of 1,000)", statistics.median(cached_ms), STUDY_CACHED_TARGET_MS),
    ]  # fmt: skip


def _table(title: str, rows: list[tuple[str, float, float | None]]) -> None:
    print(f"\n{title:<52} {'ms':>10} {'target':>9}")
    for what, ms, target in rows:
        verdict = "" if target is None else ("ok" if ms < target else "MISSED")
        shown = "" if target is None else f"< {target:g}"
        print(f"{what:<52} {ms:>10.3f} {shown:>9} {verdict}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.bench", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="fewer browser changes and rounds")
    ap.add_argument("--no-browser", action="store_true", help="skip the real-browser figures")
    ap.add_argument("--no-sessions", action="store_true", help="skip the many-sessions figures")
    args = ap.parse_args(argv)
    print(machine_load())

    res = bench_diagnose()
    worst = max(res, key=res.__getitem__)
    _table(
        "diagnose()",
        [
            (
                f"median over {len(res)} configs",
                statistics.median(res.values()),
                DIAGNOSE_TARGET_MS,
            ),
            (f"slowest: {worst}", res[worst], DIAGNOSE_TARGET_MS),
        ],
    )
    big_ms, load_ms = bench_big_config()
    _table(
        "a 3 MB config",
        [
            (f"diagnose(), {BIG_CONFIG}", big_ms, DIAGNOSE_TARGET_MS),
            (f"load, {len(nvfp4_config_bytes()):,} bytes (median of 5)", load_ms, None),
        ],
    )
    _table("study()", bench_study())

    from tools import bench_app, bench_perf, bench_uploads

    bench_perf.main([])
    bench_uploads.main([])

    print()
    bench_app.main()
    if not args.no_browser:
        from tools import bench_browser

        bench_browser.main(["--changes", "5" if args.quick else "20"])
        print(machine_load())
    if not args.no_sessions:
        from tools import bench_sessions

        bench_sessions.main(["--quick"] if args.quick else [])
        print(machine_load())
        from tools import bench_attacks

        bench_attacks.main(["--rounds", "1"] if args.quick else [])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
