"""Properties of the speed model over the bundled configs (a few examples each, fast): more
load never lowers a layout's output tokens/s per GPU until admission caps it; more DP-attention
ranks on the same GPUs never lower prefill throughput; no prediction beats the HBM floor."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.engines.memory import Split
from engine.hardware.gpus import lookup_gpu
from engine.model.loader import catalog_names, load_catalog
from engine.perf import ModelInputs, estimate, model_inputs
from engine.perf.estimate import copy_model, scheduler

NAMES = catalog_names()
LOADS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
_inputs: dict[tuple[str, str, str], ModelInputs] = {}


def _inp(name: str, gpu: str, engine: str) -> ModelInputs:
    key = (name, gpu, engine)
    if key not in _inputs:
        _inputs[key] = model_inputs(load_catalog(name).config, lookup_gpu(gpu), engine)  # type: ignore[arg-type]
    return _inputs[key]


def _split(inp: ModelInputs, kind: str) -> Split:
    if kind == "dp" and inp.family.moe:
        return Split(1, 8, 1, True)
    if kind == "ep" and inp.family.moe:
        return Split(8, 1, 1, True)
    return Split(8)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    st.sampled_from(NAMES),
    st.sampled_from(["vllm", "sglang"]),
    st.sampled_from(["tp", "ep", "dp"]),
    st.sampled_from([256, 2048, 16384]),
    st.sampled_from([64, 1024]),
    st.sampled_from([None, 16, 100]),
)
def test_more_load_never_lowers_tokens_per_gpu_until_admission_caps_it(
    name: str, engine: str, kind: str, isl: int, osl: int, cap: int | None
) -> None:
    inp = _inp(name, "H200", engine)
    split = _split(inp, kind)
    last, capped = 0.0, None
    for load in LOADS:
        s = estimate(inp, split, 1, load, isl, osl, max_running=cap)
        tps = s.output_tokens_per_s_per_gpu
        assert tps >= last * (1 - 1e-9), (load, last, tps)
        if cap is not None and load >= cap:  # admission: the engine's throughput, unchanged
            assert capped is None or tps == capped
            capped = tps
        last = tps


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    st.sampled_from([n for n in NAMES if _inp(n, "H200", "vllm").family.moe]),
    st.sampled_from(["vllm", "sglang"]),
    st.booleans(),
    st.sampled_from([512, 4096, 20_000]),
    st.sampled_from([8, 64]),
)
def test_more_dp_attention_ranks_on_the_same_gpus_never_lower_prefill_throughput(
    name: str, engine: str, ep: bool, isl: int, wave: int
) -> None:
    inp = _inp(name, "H200", engine)
    last = 0.0
    for dp in (1, 2, 4, 8):
        split = Split(8 // dp, dp, 1, ep)
        model = copy_model(inp, split, isl, 128)
        rate = scheduler(inp, split).prefill_tokens_per_s(model.costs(), wave)
        assert rate >= last * (1 - 1e-9), (dp, last, rate)
        last = rate


@settings(max_examples=30, deadline=None, derandomize=True)
@given(
    st.sampled_from(NAMES),
    st.sampled_from(["vllm", "sglang"]),
    st.sampled_from(["H100", "H200", "B200", "MI300X"]),
    st.sampled_from(["tp", "ep", "dp"]),
    st.sampled_from([1, 16, 256]),
)
def test_no_prediction_beats_the_hbm_floor(
    name: str, engine: str, gpu: str, kind: str, load: int
) -> None:
    # a decode step streams at least the weights on one GPU (and the KV it reads) at the
    # datasheet's bandwidth: no TPOT, and no tokens/s per GPU, beats that
    inp = _inp(name, gpu, engine)
    split = _split(inp, kind)
    s = estimate(inp, split, 1, load, 1024, 256)
    streamed = sum(t.bytes for t in s.decode.terms if t.bound in ("memory", "compute"))
    floor = streamed / inp.gpu.bandwidth_bytes_per_s
    assert s.decode.seconds >= floor
    assert s.tpot_ms / 1e3 >= floor * (1 - 1e-9)
    busiest = math.ceil(load / split.dp)
    assert s.output_tokens_per_s_per_gpu <= busiest * split.dp / floor / split.gpus * (1 + 1e-9)
