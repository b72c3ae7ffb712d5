"""`make bench`: median time to diagnose each bundled config (target < 2 ms per config),
plus the app benchmarks when tools/bench_app.py is present."""

from __future__ import annotations

import importlib.util
import statistics
import time

from engine.diagnose import Options, diagnose
from engine.model.loader import catalog_names, load_model

TARGET_MS = 2.0


def bench_diagnose(repeats: int = 50) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in catalog_names():
        cfg = load_model(name).config
        diagnose(cfg, Options())  # warm the rule tables
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            diagnose(cfg, Options(context=32_768))
            times.append((time.perf_counter() - t0) * 1000)
        out[name] = statistics.median(times)
    return out


def main() -> int:
    res = bench_diagnose()
    width = max(len(n) for n in res)
    for name, ms in res.items():
        print(f"diagnose {name:<{width}}  {ms:7.3f} ms")
    worst = max(res.values())
    print(
        f"diagnose: median over configs {statistics.median(res.values()):.3f} ms, "
        f"worst {worst:.3f} ms (target < {TARGET_MS} ms): {'OK' if worst < TARGET_MS else 'SLOW'}"
    )
    if importlib.util.find_spec("tools.bench_app") is not None:
        from tools import bench_app

        bench_app.main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
