"""The measured rows the speed model is checked and fitted on, and the model's prediction of each.

``data/perf/measured.jsonl`` is a verbatim copy of shared/perf/measured.jsonl (see
data/perf/README.md). A row is used when its conditions are complete: numeric ISL, OSL and
concurrency, a TP size, not disaggregated, no speculative decoding, a GPU in the catalog and a
model this harness maps to a bundled config. Harness plumbing, not engine rules:

* the model a row names maps to a bundled config (``MODELS``); a row stating another weight
  precision than the config's gets that precision as a ``quantization_config`` (NVFP4 via
  ModelOpt, FP8 per tensor or in 128 × 128 blocks, BF16 without one);
* TensorRT-LLM rows run through the vLLM adapter (chunk budget and step cost), labelled so,
  but prefill the way TensorRT-LLM itself runs one (``data/perf.yaml`` engines: eagerly, its
  default: piecewise CUDA graphs for the context phase are opt-in there); they are benched,
  never fitted (``runs_as``);
* aiconfigurator's CSV counts EP inside ``tp_size`` for some SGLang runs (``tp_size`` 64 with
  moe_ep 8 for runs whose id says ``tp8_ep8``): a copy wider than one 8-GPU node with EP is
  read as TP = tp_size / EP on tp_size / EP GPUs;
* measured output tokens/s per GPU is the row's own figure where it has one, else derived from
  its TTFT and TPOT as concurrency × OSL / (TTFT + (OSL − 1) × TPOT) / GPUs (``tps_derived``);
* a row that repeats another's conditions and measurements (aiconfigurator lists the same
  DeepSeek runs under R1 and V3: one architecture, the same figures) counts once: the first
  is kept, the others skipped as duplicates (by conditions and measurements, not by name);
* a run's prompts per client (``--num-prompts`` / ``--max-concurrency``) is the row's own where
  it states both, else the benchmark convention in data/perf.yaml (``benchmark``).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from engine.engines import Engine
from engine.engines.memory import Split
from engine.errors import InputError
from engine.hardware.gpus import lookup_gpu
from engine.launch.candidate import SearchInputs
from engine.launch.layout import evaluate
from engine.model.config import ModelConfig
from engine.model.loader import catalog_path, load_model
from engine.perf import ModelInputs, Speed, estimate, model_inputs
from engine.perf.factors import Factors, PrefillMode, perf_facts, prefill_mode
from engine.rules import DATA_DIR
from engine.scenario import make_scenario

PERF_DIR = DATA_DIR / "perf"
MEASURED = PERF_DIR / "measured.jsonl"
NODE_GPUS = 8
# a row that does not state its engine version: aiconfigurator's such rows were measured in
# 2025 (their notes), before any engine change data/perf.yaml tells apart (SGLang 0.5.10)
OLDEST = "0"

# model name in a row -> the bundled catalog config (data/models/)
MODELS: dict[str, str] = {
    "deepseek-ai/DeepSeek-R1": "deepseek-ai/DeepSeek-R1",
    "deepseek-ai/DeepSeek-R1-0528": "deepseek-ai/DeepSeek-R1",
    "deepseek-ai/DeepSeek-V3": "deepseek-ai/DeepSeek-V3",
    "meta-llama/Llama-3.1-70B": "meta-llama/Meta-Llama-3.1-70B",
    "meta-llama/Llama-3.1-8B-Instruct": "meta-llama/Meta-Llama-3.1-8B",
    "nvidia/Llama-3.1-8B-Instruct-FP8": "meta-llama/Meta-Llama-3.1-8B",
    "nvidia/Llama-3.3-70B-Instruct-FP8": "meta-llama/Llama-3.3-70B-Instruct",
    "nvidia/Llama-3.3-70B-Instruct-FP4": "meta-llama/Llama-3.3-70B-Instruct",
    "Qwen/Qwen3-32B": "Qwen/Qwen3-32B",
    "Qwen/Qwen3-32B-FP8": "Qwen/Qwen3-32B",
    "Qwen/Qwen3-235B-A22B-FP8": "Qwen/Qwen3-235B-A22B",
    "nvidia/Qwen3-30B-A3B-FP4": "Qwen/Qwen3-30B-A3B",
    "Qwen/Qwen3-8B": "Qwen/Qwen3-8B",
    "openai/gpt-oss-120b": "openai/gpt-oss-120b",
    "openai/gpt-oss-20b": "openai/gpt-oss-20b",
    "moonshotai/Kimi-K2.5": "moonshotai/Kimi-K2.5",
}

NVFP4 = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16}
FP8_BLOCK = {
    "quant_method": "fp8",
    "fmt": "e4m3",
    "activation_scheme": "dynamic",
    "weight_block_size": [128, 128],
}
FP8_TENSOR = {"quant_method": "fp8", "activation_scheme": "dynamic"}


@dataclass(frozen=True)
class Case:
    """One usable row: the conditions the model is run at and what was measured."""

    id: str
    source: str
    model: str
    config: str
    precision: str
    gpu: str
    engine: str  # as the row says (vllm, sglang, trtllm ...)
    adapter: Engine
    tp: int
    dp: int
    ep: bool
    pp: int
    concurrency: int
    isl: int
    osl: int
    tpot_ms: float | None
    ttft_ms: float | None
    tps_per_gpu: float | None
    tps_derived: bool
    prompts_per_client: float | None = None  # None: data/perf.yaml's benchmark convention
    engine_version: str = OLDEST  # the row's, else older than any the speed model tells apart
    eager: bool = False  # its launch flags turn CUDA graphs off (--enforce-eager, ...)


@dataclass(frozen=True)
class Skip:
    id: str
    source: str
    why: str


def row_files() -> list[Path]:
    """Every ``data/perf/*.jsonl``: the shared copy first, then the files added beside it
    (``added.jsonl``: runs found since), so new rows enter the fit and the bench when merged."""
    return sorted(PERF_DIR.glob("*.jsonl"), key=lambda p: (p != MEASURED, p.name))


def load_rows(path: Path | None = None) -> list[dict[str, Any]]:
    """The rows of ``path``, or of every file of ``row_files()``."""
    out: list[dict[str, Any]] = []
    for f in [path] if path is not None else row_files():
        out += [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line]
    return out


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float) and math.isfinite(v) and v > 0:
        return float(v)
    return None


def _precision(label: str) -> str:
    text = label.lower()
    if text.startswith(("fp4", "mxfp4", "nvfp4")):
        return "fp4"
    if text.startswith("fp8"):
        return "fp8-block" if "fp8_block" in text else "fp8"
    return "bf16"


def _engine(label: str) -> str:
    return label.split()[0].lower() if label else ""


def case_of(row: dict[str, Any]) -> Case | Skip:
    rid, source = str(row.get("id")), str(row.get("source"))
    if row.get("disaggregated"):
        return Skip(rid, source, "disaggregated prefill / decode")
    spec = str(row.get("spec_decoding") or "none").lower()
    if not spec.startswith("none"):
        return Skip(rid, source, "speculative decoding")
    isl, osl, conc, tp = (_num(row.get(k)) for k in ("isl", "osl", "concurrency", "tp"))
    if isl is None or osl is None or conc is None or tp is None:
        return Skip(rid, source, "conditions incomplete (ISL, OSL, concurrency or TP)")
    model = str(row.get("model"))
    config = MODELS.get(model)
    if config is None:
        return Skip(rid, source, f"no bundled config for {model}")
    try:
        gpu = lookup_gpu(str(row.get("gpu"))).key
    except InputError:
        return Skip(rid, source, f"GPU {row.get('gpu')} not in the catalog")
    engine = _engine(str(row.get("engine") or ""))
    adapter: Engine = "sglang" if engine == "sglang" else "vllm"
    ep_size = int(_num(row.get("ep")) or 1)
    dp = int(_num(row.get("dp")) or 1) if row.get("dp_attention") else 1
    pp = int(_num(row.get("pp")) or 1)
    tp_i = int(tp)
    if ep_size > 1 and tp_i > NODE_GPUS and tp_i % ep_size == 0 and pp == 1:
        tp_i //= ep_size  # tp_size holds TP x EP (see the module docstring)
    tpot = _num(row.get("tpot_mean_ms")) or _num(row.get("tpot_median_ms"))
    ttft = _num(row.get("ttft_mean_ms")) or _num(row.get("ttft_median_ms"))
    gpus = tp_i * dp * pp
    tps = _num(row.get("output_tps_per_gpu"))
    derived = False
    if tps is None and _num(row.get("output_tps_total")):
        tps = float(row["output_tps_total"]) / gpus
    if tps is None and tpot and ttft:
        tps = conc * osl / ((ttft + (osl - 1) * tpot) / 1e3) / gpus
        derived = True
    prompts = _num(row.get("num_prompts"))
    # TensorRT-LLM runs through the vLLM adapter: its version says nothing of vLLM's
    version = str(row.get("engine_version") or OLDEST) if engine == adapter else OLDEST
    return Case(
        rid, source, model, config, _precision(str(row.get("weight_precision") or "")),
        str(gpu), engine, adapter, tp_i, dp, ep_size > 1, pp, int(conc), int(isl), int(osl),
        tpot, ttft, tps, derived, prompts / conc if prompts else None, version,
        runs_eager(row),
    )  # fmt: skip


EAGER_FLAGS = ("--enforce-eager", "--disable-cuda-graph")


def runs_eager(row: dict[str, Any]) -> bool:
    """Whether the launch flags a row states (``launch_flags``, verbatim) turn CUDA graphs off:
    vLLM's ``--enforce-eager``, SGLang's ``--disable-cuda-graph``."""
    flags = str(row.get("launch_flags") or "").split()
    return any(f in EAGER_FLAGS or f.split("=")[0] in EAGER_FLAGS for f in flags)


def vendor_of(c: Case) -> str:
    """The row's GPU vendor (its software stack: CUDA on NVIDIA, ROCm on AMD)."""
    return lookup_gpu(c.gpu).vendor


def family_of(c: Case) -> str:
    """The row's model family as the speed model sees it: its attention and FFN kind."""
    fam = inputs_for(c.config, c.precision, c.gpu, c.adapter).family
    attention = fam.attention_family.value + (" + sliding" if fam.sliding_window else "")
    return f"{attention} {'MoE' if fam.moe else 'dense'}"


def architecture(c: Case) -> str:
    """What a speed model sees of a row's model: its architecture at its size (DeepSeek-R1 and
    -V3 are one model to it: the same config but for the name)."""
    cfg = config_for(c.config, c.precision)
    return f"{cfg.architecture} h{cfg.hidden_size} L{cfg.num_hidden_layers}"


def _same_run(c: Case) -> tuple[object, ...]:
    return (
        architecture(c), c.precision, c.gpu, c.engine, c.tp, c.dp, c.ep, c.pp, c.concurrency,
        c.isl, c.osl, c.tpot_ms, c.ttft_ms, c.tps_per_gpu,
    )  # fmt: skip


def cases(rows: Iterable[dict[str, Any]]) -> tuple[list[Case], list[Skip]]:
    """The usable rows, each run once, and why the others are not used."""
    used: list[Case] = []
    skipped: list[Skip] = []
    seen: dict[tuple[object, ...], str] = {}
    for row in rows:
        c = case_of(row)
        if isinstance(c, Skip):
            skipped.append(c)
            continue
        key = _same_run(c)
        if key in seen:
            skipped.append(Skip(c.id, c.source, "duplicate: the same conditions and measurements"))
            continue
        seen[key] = c.id
        used.append(c)
    return used, skipped


def _raw_config(config: str) -> dict[str, Any]:
    path = catalog_path(config)
    assert path is not None, config
    raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return raw


def _has_quant(raw: dict[str, Any], method: str) -> bool:
    qc = raw.get("quantization_config") or (raw.get("text_config") or {}).get("quantization_config")
    return isinstance(qc, dict) and qc.get("quant_method") == method


@cache
def config_for(config: str, precision: str) -> ModelConfig:
    """The bundled config with the row's weight precision."""
    raw = _raw_config(config)
    if precision == "fp4" and not _has_quant(raw, "mxfp4"):
        raw = {**raw, "quantization_config": NVFP4}
    elif precision.startswith("fp8") and not _has_quant(raw, "fp8"):
        raw = {**raw, "quantization_config": FP8_BLOCK if precision == "fp8-block" else FP8_TENSOR}
    elif precision == "bf16":
        raw = {k: v for k, v in raw.items() if k != "quantization_config"}
    return load_model(raw, name=config).config


@cache
def inputs_for(config: str, precision: str, gpu: str, adapter: Engine) -> ModelInputs:
    return model_inputs(config_for(config, precision), lookup_gpu(gpu), adapter)


def predict(c: Case, factors: Factors | None = None) -> Speed:
    inp = inputs_for(c.config, c.precision, c.gpu, c.adapter)
    split = Split(c.tp, c.dp, c.pp, c.ep)
    return estimate(
        inp, split, 1, c.concurrency, c.isl, c.osl, gpus_per_node=NODE_GPUS, factors=factors,
        prompts_per_client=c.prompts_per_client, engine_version=c.engine_version,
        runs_as=runs_as(c.engine, c.adapter), eager=c.eager,
    )  # fmt: skip


def row_prefill_mode(c: Case) -> PrefillMode:
    """How the row's engine runs its prefill (data/perf.yaml engines)."""
    if c.eager:
        return "eager"
    return prefill_mode(
        runs_as(c.engine, c.adapter) or c.adapter, c.engine_version,
        amd=lookup_gpu(c.gpu).vendor == "amd", dp_attention=c.dp > 1, pipeline=c.pp > 1,
    )  # fmt: skip


def runs_as(engine: str, adapter: Engine) -> str | None:
    """The engine whose way of running a prefill applies to a row run through ``adapter``:
    its own where data/perf.yaml says how it runs one (TensorRT-LLM), else the adapter's."""
    return engine if engine != adapter and engine in perf_facts().engines else None


def rel_error(predicted: float, measured: float | None) -> float | None:
    return None if not measured else abs(predicted - measured) / measured


@dataclass(frozen=True)
class Errors:
    tpot: float | None
    ttft: float | None
    tps: float | None


def errors(c: Case, s: Speed) -> Errors:
    return Errors(
        rel_error(s.tpot_ms, c.tpot_ms),
        rel_error(s.ttft_ms, c.ttft_ms),
        rel_error(s.output_tokens_per_s_per_gpu, c.tps_per_gpu),
    )


def median_p90(values: list[float]) -> tuple[float, float, int]:
    if not values:
        return math.nan, math.nan, 0
    v = sorted(values)
    p90 = v[min(len(v) - 1, math.ceil(0.9 * len(v)) - 1)]
    return statistics.median(v), p90, len(v)


# --- throughput measured on its own: runs that send every prompt at once ------------------------


@dataclass(frozen=True)
class Burst:
    """A run that sends all its ``prompts`` at once (``--request-rate inf``, no concurrency
    cap) of fixed ISL and OSL and states the output tokens/s it measured over the whole run
    (its own figure, not derived from its TTFT and TPOT)."""

    id: str
    source: str
    config: str
    precision: str
    gpu: str
    engine: str
    adapter: Engine
    tp: int
    dp: int
    ep: bool
    prompts: int
    isl: int
    osl: int
    output_tps: float  # over the copy's GPUs
    engine_version: str = OLDEST


def burst_of(row: dict[str, Any]) -> Burst | Skip:
    rid, source = str(row.get("id")), str(row.get("source"))
    rate = str(row.get("request_rate") or "").lower()
    if row.get("concurrency") is not None or not rate.startswith("inf"):
        return Skip(rid, source, "not a burst (a concurrency cap or a finite rate)")
    if row.get("disaggregated") or not str(row.get("spec_decoding") or "none").startswith("none"):
        return Skip(rid, source, "disaggregated or speculative")
    isl, osl, tp, n, tps = (
        _num(row.get(k)) for k in ("isl", "osl", "tp", "num_prompts", "output_tps_total")
    )
    if isl is None or osl is None or tp is None or n is None or tps is None:
        return Skip(rid, source, "a burst without fixed ISL / OSL, TP, prompts or output tok/s")
    config = MODELS.get(str(row.get("model")))
    if config is None:
        return Skip(rid, source, f"no bundled config for {row.get('model')}")
    try:
        gpu = lookup_gpu(str(row.get("gpu"))).key
    except InputError:
        return Skip(rid, source, f"GPU {row.get('gpu')} not in the catalog")
    engine = _engine(str(row.get("engine") or ""))
    dp = int(_num(row.get("dp")) or 1) if row.get("dp_attention") else 1
    return Burst(
        rid, source, config, _precision(str(row.get("weight_precision") or "")), str(gpu),
        engine, "sglang" if engine == "sglang" else "vllm", int(tp), dp,
        int(_num(row.get("ep")) or 1) > 1, int(n), int(isl), int(osl), tps,
        str(row.get("engine_version") or OLDEST),
    )  # fmt: skip


def bursts(rows: Iterable[dict[str, Any]]) -> list[Burst]:
    return [b for b in (burst_of(r) for r in rows) if isinstance(b, Burst)]


def running_of(b: Burst) -> int:
    """Requests the engine runs at once in the burst: as many as its KV pool holds at the
    request's own length and its request cap allow (the layout search's own count), at most
    the prompts."""
    inp = inputs_for(b.config, b.precision, b.gpu, b.adapter)
    split = Split(b.tp, b.dp, 1, b.ep)
    scenario = make_scenario(
        model=b.config, gpu=b.gpu, gpus_per_node=NODE_GPUS, engine=b.adapter, users=b.prompts,
        input_tokens=b.isl, output_tokens=b.osl, context=b.isl + b.osl, tp=b.tp, replicas=1,
    )  # fmt: skip
    search = SearchInputs(
        cfg=inp.cfg, arch=inp.arch, family=inp.family, weights=inp.weights, gpu=inp.gpu,
        engine=inp.engine, kv_at=inp.kv_at, context=b.isl + b.osl, limit=b.isl + b.osl,
        mtp=False, vision=False, chunk_tokens=None,
    )  # fmt: skip
    return max(0, min(b.prompts, evaluate(search, scenario, 1, split).running))


def predict_burst(b: Burst, factors: Factors | None = None) -> float | None:
    """Output tokens/s of the whole burst: the requests run ``running_of`` at a time, each
    wave sent at once (one prompt per client: the whole wave queues for its prefills), so the
    run's rate is the closed loop's at that many requests. None: the weights do not fit."""
    running = running_of(b)
    if running < 1:
        return None
    inp = inputs_for(b.config, b.precision, b.gpu, b.adapter)
    s = estimate(
        inp, Split(b.tp, b.dp, 1, b.ep), 1, b.prompts, b.isl, b.osl, gpus_per_node=NODE_GPUS,
        max_running=running, factors=factors, prompts_per_client=1,
        engine_version=b.engine_version, runs_as=runs_as(b.engine, b.adapter),
    )  # fmt: skip
    return s.output_tokens_per_s
