"""Uploads against the server's CPU and memory (issue 20), each figure in a fresh process:

1. the largest real upload (the 3 MB ModelOpt NVFP4 config) and the largest accepted one (the
   same shape with as many modules as fit under the 8 MiB cap): CPU seconds to load, hold and
   study it, the process's peak memory and what stays held;
2. a refused 30 MB upload: CPU seconds to refuse it, memory it leaves held;
3. 20 distinct 3 MB uploads through the store API (load, store, study) in one process, and
   through the app (20 AppTest sessions, each uploading its own file with the sidebar's
   uploader): the process's resident memory after, against ``MEMORY_BOUND_MB``.

    python -m tools.bench_uploads           # prints a table; --json for the figures
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import subprocess
import sys
from typing import Any

REFUSED_CPU_TARGET_S = 1.0
MEMORY_BOUND_MB = 400  # 20 sessions holding a 3 MB upload each, the app and its caches


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def _peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def _at_cap() -> bytes:
    """The largest config the loader accepts: the NVFP4 one with as many modules as fit in
    MAX_CONFIG_BYTES (about 52,000)."""
    from engine.model.config import MAX_CONFIG_BYTES
    from tools.nvfp4_config import nvfp4_config_bytes

    per_module = len(nvfp4_config_bytes(2_000)) - len(nvfp4_config_bytes(1_000))
    n = 1_000 + (MAX_CONFIG_BYTES - len(nvfp4_config_bytes(1_000))) * 1_000 // per_module
    while len(data := nvfp4_config_bytes(n)) > MAX_CONFIG_BYTES:
        n -= 100
    return data


def _largest(data: bytes | None = None) -> dict[str, Any]:
    from engine.model import store
    from engine.model.loader import load_model
    from engine.scenario import make_scenario
    from engine.study import study
    from tools.nvfp4_config import nvfp4_config_bytes

    study(make_scenario())  # imports and data tables first: not the upload's cost
    data = nvfp4_config_bytes() if data is None else data
    size = len(data)
    gc.collect()
    rss0, cpu0 = _rss(), _cpu()
    loaded = load_model(data, name="big.json")
    digest = store.put(loaded)
    study(make_scenario(source="file", model="big.json", digest=digest))
    cpu = _cpu() - cpu0
    del data, loaded
    gc.collect()
    return {"bytes": size, "cpu_s": cpu, "peak_mb": _peak() / 2**20,
            "held_mb": (_rss() - rss0) / 2**20}  # fmt: skip


def _refused() -> dict[str, Any]:
    from engine.errors import InputError
    from engine.model.loader import load_model

    data = b'{"pad": "' + b"x" * 30_000_000 + b'"}'
    gc.collect()
    rss0, cpu0 = _rss(), _cpu()
    try:
        load_model(data, name="huge.json")
        refused = False
    except InputError:
        refused = True
    cpu = _cpu() - cpu0
    size = len(data)
    del data
    gc.collect()
    return {"bytes": size, "refused": refused, "cpu_s": cpu, "held_mb": (_rss() - rss0) / 2**20}


def _twenty_store() -> dict[str, Any]:
    from engine.model import store
    from engine.model.loader import load_model
    from engine.scenario import make_scenario
    from engine.study import study
    from tools.nvfp4_config import nvfp4_config_bytes

    study(make_scenario())
    rss0, cpu0 = _rss(), _cpu()
    for i in range(20):
        data = nvfp4_config_bytes(22_422 + i)  # distinct files, about 3 MB each
        loaded = load_model(data, name=f"u{i}.json")
        study(make_scenario(source="file", model=f"u{i}.json", digest=store.put(loaded)))
        del data, loaded
    gc.collect()
    held, held_bytes = store.held()
    return {"cpu_s": _cpu() - cpu0, "rss_mb": _rss() / 2**20, "growth_mb": (_rss() - rss0) / 2**20,
            "store_configs": held, "store_mb": held_bytes / 2**20}  # fmt: skip


def _twenty_app() -> dict[str, Any]:
    import os

    from streamlit.testing.v1 import AppTest

    from tools.nvfp4_config import nvfp4_config_bytes

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    app = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "app.py")
    sessions = []
    rss0, cpu0 = _rss(), _cpu()
    for i in range(20):
        at = AppTest.from_file(app, default_timeout=120)
        at.run()
        at.radio(key="w.mode").set_value("upload").run()
        data = nvfp4_config_bytes(22_422 + i)
        at.file_uploader(key="w.upload").upload(f"u{i}.json", data, "application/json").run()
        loaded = at.session_state["pb.scenario"].source == "file"
        assert not at.exception and loaded and not at.session_state["pb.model_error"]
        sessions.append(at)  # every session stays open, holding its upload
    gc.collect()
    return {"sessions": len(sessions), "cpu_s": _cpu() - cpu0, "rss_mb": _rss() / 2**20,
            "growth_mb": (_rss() - rss0) / 2**20}  # fmt: skip


PARTS = {
    "largest": _largest,
    "cap": lambda: _largest(_at_cap()),
    "refused": _refused,
    "store": _twenty_store,
    "app": _twenty_app,
}


def measure(part: str) -> dict[str, Any]:
    """One part in a fresh interpreter (memory figures are the process's own)."""
    out = subprocess.run(
        [sys.executable, "-m", "tools.bench_uploads", "--part", part],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.bench_uploads", description=__doc__)
    ap.add_argument("--part", choices=sorted(PARTS))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.part:
        print(json.dumps(PARTS[args.part]()))
        return 0
    res = {part: measure(part) for part in PARTS}
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    ref, store, app = res["refused"], res["store"], res["app"]
    print(f"\n{'uploads':<60} {'CPU s':>8} {'memory MB':>10} {'target':>10}")
    for what, big in (("largest real", res["largest"]), ("largest accepted", res["cap"])):
        print(
            f"{what + ' (' + format(big['bytes'], ',') + ' B): load + store + study':<60} "
            f"{big['cpu_s']:>8.2f} {big['peak_mb']:>10.0f} {'peak':>10}"
        )
        print(f"{'  of which held afterwards':<60} {'':>8} {max(big['held_mb'], 0):>10.1f}")
    ok = "ok" if ref["refused"] and ref["cpu_s"] < REFUSED_CPU_TARGET_S else "MISSED"
    print(
        f"{'refused (' + format(ref['bytes'], ',') + ' B)':<60} {ref['cpu_s']:>8.4f} "
        f"{ref['held_mb']:>10.1f} {'< 1 s ' + ok:>10}"
    )
    print(
        f"{'20 distinct 3 MB uploads, store API, one process':<60} {store['cpu_s']:>8.2f} "
        f"{store['rss_mb']:>10.0f} {'RSS':>10}"
    )
    ok = "ok" if app["rss_mb"] < MEMORY_BOUND_MB else "MISSED"
    print(f"{'20 sessions each uploading a distinct 3 MB file (AppTest)':<60} {app['cpu_s']:>8.2f} "
          f"{app['rss_mb']:>10.0f} {f'< {MEMORY_BOUND_MB} ' + ok:>10}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
