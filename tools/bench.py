"""`make bench`: every benchmark, printed as tables. Nothing here is asserted by the unit tests
(performance targets are checked by benchmarks, never by timed unit tests).

1. ``diagnose`` of each bundled config (target < 2 ms per config);
2. ``study()`` of one scenario: cold (the study cache cleared; target < 50 ms), the first call
   in a fresh process (every data table loaded too), and cached (target < 1 ms); cold for every
   bundled config (median and worst);
3. the app through AppTest (tools/bench_app.py);
4. the app in a real browser (tools/bench_browser.py): sidebar and KV-slider changes per page,
   and 20 sessions at once.

    python -m tools.bench [--quick]     # --quick: 5 browser changes, 5 sessions
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial

from engine.diagnose import Options, diagnose
from engine.model.loader import catalog_names, load_model

DIAGNOSE_TARGET_MS = 2.0
STUDY_COLD_TARGET_MS = 50.0
STUDY_CACHED_TARGET_MS = 1.0

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


def bench_diagnose(repeats: int = 50) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in catalog_names():
        cfg = load_model(name).config
        diagnose(cfg, Options())  # warm the rule tables
        out[name] = statistics.median(_ms(partial(diagnose, cfg, Options(context=32_768)), repeats))
    return out


def bench_study(repeats: int = 20) -> list[tuple[str, float, float | None]]:
    """(what, milliseconds, target) rows for study()."""
    from engine import study as study_mod
    from engine.scenario import make_scenario

    s = make_scenario()  # DeepSeek-V3 on 8 × H200, the app's default view

    def cold() -> object:
        with study_mod._lock:
            study_mod._cache.clear()
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
        with study_mod._lock:
            study_mod._cache.pop(sc, None)
        t0 = time.perf_counter()
        study_mod.study(sc)
        per_config.append((time.perf_counter() - t0) * 1000)
    return [
        ("study() cold, DeepSeek-V3 on 8 x H200 (median)", statistics.median(cold_ms),
         STUDY_COLD_TARGET_MS),
        ("study() cold, DeepSeek-V3 on 8 x H200 (p95)", sorted(cold_ms)[int(0.95 * (repeats - 1))],
         STUDY_COLD_TARGET_MS),
        ("study() first call in a fresh process", float(first), None),
        (f"study() cold, each of {len(per_config)} bundled configs (median)",
         statistics.median(per_config), STUDY_COLD_TARGET_MS),
        ("study() cold, the slowest bundled config", max(per_config), STUDY_COLD_TARGET_MS),
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
    ap.add_argument("--quick", action="store_true", help="fewer browser changes and sessions")
    ap.add_argument("--no-browser", action="store_true", help="skip the real-browser figures")
    args = ap.parse_args(argv)

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
    _table("study()", bench_study())

    from tools import bench_app

    print()
    bench_app.main()
    if not args.no_browser:
        from tools import bench_browser

        n = "5" if args.quick else "20"
        bench_browser.main(["--changes", n, "--sessions", n])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
