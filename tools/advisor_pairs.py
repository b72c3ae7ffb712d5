"""Write data/advisor_pairs.yaml: vLLM against SGLang where both were measured under the same
conditions, from the published runs in data/perf/measured.jsonl.

A pair is two rows that differ only by the engine (same model, weights, GPU and count, layout,
workload, dataset, prompts and load). Each pair is kept with the model's family and the GPU's
generation, read by the engine from the bundled config the row's model maps to
(tools.perf_rows.MODELS) and from the GPU catalog, so the engine advisor quotes a measured
figure only for a model of that family on a GPU of that generation. Rows whose model maps to no
bundled config are left out (their family cannot be read).

    python -m tools.advisor_pairs        # rewrites data/advisor_pairs.yaml
    python -m tools.advisor_pairs --check  # exits 1 when the file is not what it would write
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from typing import Any

import yaml

from engine.errors import InputError
from engine.hardware.gpus import lookup_gpu
from engine.model.loader import load_catalog
from engine.rules import DATA_DIR
from engine.scenario import make_scenario
from engine.study import study
from tools.perf_rows import MEASURED, MODELS

OUT = DATA_DIR / "advisor_pairs.yaml"
ENGINES = ("vllm", "sglang")
# every condition a pair must share (all but the engine, its version and the measurements)
SAME = (
    "model",
    "weight_precision",
    "kv_cache_precision",
    "gpu",
    "gpu_count",
    "nodes",
    "tp",
    "dp",
    "ep",
    "pp",
    "dp_attention",
    "disaggregated",
    "spec_decoding",
    "isl",
    "osl",
    "concurrency",
    "request_rate",
    "num_prompts",
    "dataset",
)
HEADER = """\
# vLLM against SGLang, measured under the same conditions: each pair is two rows of
# data/perf/measured.jsonl (a verbatim copy of shared/perf/measured.jsonl) that differ only by
# the engine. Written by `python -m tools.advisor_pairs` (do not edit by hand); the family and
# generation are the engine's own reading of the bundled config the row's model maps to and of
# the GPU catalog. The engine advisor quotes a pair only for a model of that family on a GPU
# of that generation, with its conditions, engine versions and row ids.
"""


def _family(model: str) -> tuple[str, bool] | None:
    name = MODELS.get(model)
    if name is None:
        return None
    st = study(make_scenario(model=load_catalog(name).name, gpus_per_node=8))
    return str(st.family.attention_family), st.family.moe


def _concurrency(row: dict[str, Any]) -> int | None:
    """Requests in flight: the row's cap, or None when every prompt was sent at once (an
    infinite request rate with no cap); -1 for any other load (a finite rate: not kept)."""
    if row.get("concurrency") is not None:
        return int(row["concurrency"])
    return None if str(row.get("request_rate") or "").startswith("inf") else -1


def pairs() -> list[dict[str, Any]]:
    groups: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = defaultdict(dict)
    with MEASURED.open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row.get("engine") in ENGINES and row.get("output_tps_total"):
                groups[tuple(json.dumps(row.get(k)) for k in SAME)].setdefault(row["engine"], row)
    out: list[dict[str, Any]] = []
    for both in groups.values():
        if set(both) != set(ENGINES):
            continue
        v, s = both["vllm"], both["sglang"]
        family = _family(v["model"])
        if family is None:
            continue
        try:
            gpu = lookup_gpu(v["gpu"])
        except InputError:
            continue
        concurrency = _concurrency(v)
        if concurrency == -1:
            continue
        out.append(
            {
                "model": v["model"],
                "attention_family": family[0],
                "moe": family[1],
                "gpu": gpu.key,
                "generation": gpu.generation,
                "gpus": int(v["gpu_count"]),
                "tp": int(v["tp"]),
                "weights": v["weight_precision"],
                "dataset": v["dataset"],
                "prompts": v["num_prompts"],
                "concurrency": concurrency,  # None: all prompts at once
                "vllm": {"version": v["engine_version"], "output_tps": v["output_tps_total"]},
                "sglang": {"version": s["engine_version"], "output_tps": s["output_tps_total"]},
                "rows": [v["id"], s["id"]],
                "source": f"{v['source']}: {v['source_ref']}; {s['source_ref']}",
            }
        )
    return sorted(out, key=lambda p: (p["attention_family"], p["moe"], p["model"], p["gpu"]))


def text() -> str:
    body = yaml.safe_dump({"pairs": pairs()}, sort_keys=False, allow_unicode=True, width=100)
    return HEADER + body


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.advisor_pairs", description=__doc__)
    ap.add_argument("--check", action="store_true", help="exit 1 if the file is out of date")
    args = ap.parse_args(argv)
    new = text()
    if args.check:
        same = OUT.is_file() and OUT.read_text(encoding="utf-8") == new
        print("up to date" if same else f"{OUT} differs from what tools.advisor_pairs writes")
        return 0 if same else 1
    OUT.write_text(new, encoding="utf-8")
    print(f"wrote {OUT} ({new.count('- model:')} pairs)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
