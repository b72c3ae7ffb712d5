"""Disaggregated prefill and decode: the KV transfer, the prefill and decode pools, by hand."""

from __future__ import annotations

import math

import pytest

from engine.disagg import disaggregate, targets_of
from engine.disagg.choice import choose
from engine.disagg.compare import Aggregated, compare
from engine.disagg.curve import pools_curve
from engine.disagg.sizing import size_pair
from engine.disagg.transfer import kv_transfer, network_link, scale_up_link
from engine.disagg.workers import workers
from engine.engines import adapter
from engine.engines.memory import Split
from engine.hardware.gpus import lookup_gpu
from engine.present.disagg_words import disagg_json
from engine.present.messages import layout_name
from tests.study_util import run

ISL = 8192
NIC = 50e9  # a 400 Gb/s NIC per GPU, one direction (data/gpus.yaml network_gbps 50 for H100/H200)
NVLINK_H100 = 450e9  # NVLink 4 through NVSwitch, one direction (interconnect_gbps 450)


def _transfer_ms(model: str, gpu: str, tp_prefill: int, tp_decode: int, nvlink: bool) -> tuple:
    st = run(model, gpu=gpu)
    inp = st.search_inputs
    assert inp is not None
    g = lookup_gpu(gpu)
    link = scale_up_link(g) if nvlink else network_link(g)
    t = kv_transfer(inp.kv_at(tp_decode), ISL, Split(tp_prefill), Split(tp_decode), inp.cfg, link)
    return t.received_per_gpu, t.sent_per_gpu, t.seconds * 1e3


def test_gqa_kv_transfer_is_the_prompts_kv_share_of_each_gpu_over_its_link() -> None:
    # Llama-3.1-70B: 80 layers x 8 KV heads x 128 x (K + V) x 2 bytes = 327,680 B per token;
    # each of 8 decode ranks receives one KV head's share, each of 8 prefill ranks sends one
    per_gpu = 80 * 1 * 128 * 2 * 2 * ISL
    assert per_gpu == 335_544_320
    got, sent, nic = _transfer_ms("meta-llama/Llama-3.1-70B-Instruct", "H100 SXM", 8, 8, False)
    assert (got, sent) == (per_gpu, per_gpu)
    assert nic == pytest.approx(per_gpu / NIC * 1e3)  # 6.71 ms over a 400 Gb/s NIC
    *_, nvl = _transfer_ms("meta-llama/Llama-3.1-70B-Instruct", "H100 SXM", 8, 8, True)
    assert nvl == pytest.approx(per_gpu / NVLINK_H100 * 1e3)  # 0.746 ms over NVLink
    # a TP 2 prefill worker feeding a TP 8 decode worker sends four decode ranks' shares each
    got, sent, nic = _transfer_ms("meta-llama/Llama-3.1-70B-Instruct", "H100 SXM", 2, 8, False)
    assert (got, sent) == (per_gpu, 4 * per_gpu)
    assert nic == pytest.approx(4 * per_gpu / NIC * 1e3)


def test_mla_kv_transfer_moves_the_whole_latent_to_every_decode_rank() -> None:
    # DeepSeek-V3: 61 layers x (512 latent + 64 rope) x 2 bytes = 70,272 B per token, the same
    # on every TP rank (the latent is replicated), so every decode rank receives all of it
    per_gpu = 61 * (512 + 64) * 2 * ISL
    got, sent, nic = _transfer_ms("deepseek-ai/DeepSeek-V3", "H200", 8, 8, False)
    assert (got, sent) == (per_gpu, per_gpu)
    assert nic == pytest.approx(per_gpu / NIC * 1e3)  # 11.5 ms
    *_, nvl = _transfer_ms("deepseek-ai/DeepSeek-V3", "H200", 8, 8, True)
    assert nvl == pytest.approx(per_gpu / 450e9 * 1e3)
    # a DP-attention decode rank (attention TP 1) holds the request alone: one GPU receives
    got, sent, _ = _transfer_ms("deepseek-ai/DeepSeek-V3", "H200", 8, 1, False)
    assert got == per_gpu and sent == math.ceil(per_gpu / 8)


def test_dsa_kv_transfer_carries_the_indexer_keys_beside_the_latent() -> None:
    # DeepSeek-V3.2: the MLA latent (512 + 64) x 2 bytes and the indexer's key, 128 dims in
    # FP8 with a 4-byte scale per 128 (132 B), on each of 61 layers
    per_gpu = 61 * ((512 + 64) * 2 + 128 + 4) * ISL
    got, sent, nic = _transfer_ms("deepseek-ai/DeepSeek-V3.2", "H200", 8, 8, False)
    assert (got, sent) == (per_gpu, per_gpu)
    assert nic == pytest.approx(per_gpu / NIC * 1e3)
    *_, nvl = _transfer_ms("deepseek-ai/DeepSeek-V3.2", "H200", 8, 8, True)
    assert nvl == pytest.approx(per_gpu / 450e9 * 1e3)


def test_hybrid_kv_transfer_adds_the_linear_state_once_per_request() -> None:
    # Qwen3-Next-80B-A3B: 12 full-attention layers of 2 KV heads x 256 (one head per rank at
    # TP 4, replicated) x (K + V) x 2 bytes, plus 36 Gated DeltaNet layers' state per request:
    # conv (4 - 1) x (2 x 16 x 128 + 32 x 128) and recurrent 32 x 128 x 128 heads, bf16, over 4
    attention = 12 * 1 * 256 * 2 * 2 * ISL
    state = 36 * ((4 - 1) * (2 * 16 * 128 + 32 * 128) + 32 * 128 * 128) * 2 // 4
    got, sent, nic = _transfer_ms("Qwen/Qwen3-Next-80B-A3B-Thinking", "H100 SXM", 4, 4, False)
    assert got == sent == attention + state == 110_542_848
    assert nic == pytest.approx((attention + state) / NIC * 1e3)  # 2.21 ms
    *_, nvl = _transfer_ms("Qwen/Qwen3-Next-80B-A3B-Thinking", "H100 SXM", 4, 4, True)
    assert nvl == pytest.approx((attention + state) / NVLINK_H100 * 1e3)


# --- the pools -----------------------------------------------------------------------------


def _pools(rate: float, ttft_ms: float, tpot_ms: float) -> tuple:
    st = run(
        "meta-llama/Llama-3.1-70B-Instruct", gpu="H100 SXM", input_tokens=ISL,
        output_tokens=1024, context=ISL + 1024, ttft_ms=ttft_ms, tpot_ms=tpot_ms,
    )  # fmt: skip
    inp = st.search_inputs
    assert inp is not None
    prefill = {layout_name(w.candidate.layout): w for w in workers(inp, st.scenario, "prefill")}
    decode = {layout_name(w.candidate.layout): w for w in workers(inp, st.scenario, "decode")}
    return st, prefill["TP 8"], decode["TP 8"]


def test_prefill_workers_for_a_rate_are_the_fewest_whose_queue_keeps_the_ttft_target() -> None:
    _, pw, _ = _pools(4.0, 1000, 30)
    s, lat = pw.prompt_seconds, pw.latency_seconds
    budget = 0.9  # seconds of TTFT left to the prefill pool
    # M/D/1: TTFT = latency + S + rho / (2 (1 - rho)) S within the budget: rho <= 2k / (1 + 2k)
    k = (budget - lat - s) / s
    rho = 2 * k / (1 + 2 * k)
    expected = math.ceil(4.0 * s / rho)
    assert pw.workers_for(4.0, budget) == expected
    assert pw.ttft(4.0 / expected) <= budget < pw.ttft(4.0 / (expected - 1))
    # a prompt that alone takes longer than the budget has no count of workers
    assert pw.workers_for(4.0, lat + s - 1e-3) is None
    # no target: the fewest whose queue drains (utilisation below 1)
    assert pw.workers_for(4.0, None) == math.floor(4.0 * s) + 1


def test_decode_workers_for_the_concurrency_hold_it_within_the_tpot_target() -> None:
    st, pw, dw = _pools(4.0, 1000, 30)
    target = 0.030
    most = dw.most_within(target)
    assert 1 <= most <= dw.capacity
    assert dw.tpot(most) <= target
    assert most == dw.capacity or dw.tpot(most + 1) > target
    z = size_pair(pw, dw, 4.0, 1.0, target, st.search_inputs.cfg, 8)
    assert z is not None and z.most == most
    # Little's law: rate x (transfer + (OSL - 1) x TPOT at C*) requests, C* on each worker
    residency = z.transfer.seconds + 1023 * dw.tpot(most)
    assert z.decode.workers == math.ceil(4.0 * residency / most)
    # each worker then runs what the rate leaves it, at its own (lower) TPOT
    assert z.concurrency == pytest.approx(
        4.0 / z.decode.workers * (z.transfer.seconds + 1023 * z.tpot), rel=1e-3
    )
    assert z.tpot <= target and z.ttft <= 1.0


def test_the_candidate_meets_the_targets_and_carries_its_pools() -> None:
    st = run(
        "meta-llama/Llama-3.1-70B-Instruct", gpu="H100 SXM", input_tokens=ISL,
        output_tokens=1024, context=ISL + 1024, ttft_ms=1000, tpot_ms=30,
    )  # fmt: skip
    d = disaggregate(st, 4.0)
    assert d.problem is None and d.sized is not None and d.speed is not None
    assert d.speed.ttft_ms <= 1000 and d.speed.tpot_ms <= 30
    assert d.gpus == d.sized.prefill.gpus + d.sized.decode.gpus
    assert d.speed.output_tokens_per_s_per_gpu == pytest.approx(4.0 * 1024 / d.gpus)
    low, high = d.speed.output_tokens_per_s_per_gpu_range
    assert low < d.speed.output_tokens_per_s_per_gpu < high


def test_no_tpot_target_takes_the_balanced_bound() -> None:
    st = run("Qwen/Qwen3-8B", gpu="H100 SXM")
    assert targets_of(st.scenario).tpot_s == pytest.approx(0.030)
    assert targets_of(st.scenario).ttft_s is None
    fast = run("Qwen/Qwen3-8B", gpu="H100 SXM", latency="throughput")
    assert targets_of(fast.scenario).tpot_s == math.inf


def test_a_decode_worker_that_misses_the_tpot_target_alone_gives_no_candidate() -> None:
    st = run("meta-llama/Llama-3.1-70B-Instruct", gpu="H100 SXM", tpot_ms=1.0)
    d = disaggregate(st, 1.0)
    assert d.sized is None and d.problem is not None
    assert d.problem.code == "disagg.none.tpot"


def test_an_sglang_decode_server_reserves_no_prefill_chunk_and_no_prefill_graphs() -> None:
    # memory_hook.py: a decode server's activations are its running requests (the decode graph
    # batch, 512 at TP 8 on an H100) x the tokens each verifies, at least 2,048; it captures no
    # prefill graphs. 512 + 2,048 x 1.5 + 8 x 1 / 8 x 1,024 + 512 x 2 = 5,632 MiB, under the
    # 10,240 MiB floor of a GPU over 60 GiB
    sglang = adapter("sglang")
    gpu = lookup_gpu("H100 SXM")
    mib = 81_559  # the H100's device memory (data/gpus.yaml)
    kw = {"chunk_tokens": 8192, "mla": False, "vision": None}
    decode, _ = sglang.default_fraction(gpu, Split(8), role="decode", **kw)
    assert decode == round((mib - 10_240) / mib, 3)
    mixed, _ = sglang.default_fraction(gpu, Split(8), **kw)
    # aggregated it reserves the 8,192-token chunk's activations (12,288 MiB) and both graphs
    assert mixed < decode
    # a prefill server captures no decode graph: 512 x 2 MiB less than aggregated
    prefill, _ = sglang.default_fraction(gpu, Split(8), role="prefill", **kw)
    assert prefill == pytest.approx(mixed + round(512 * 2 / mib, 3), abs=1e-3)


# --- the verdict and the report's keys -------------------------------------------------------


def _qwen_at_8() -> tuple:
    st = run(
        "Qwen/Qwen3-32B", gpu="H200", input_tokens=ISL, output_tokens=256, context=ISL + 256,
        ttft_ms=1500, tpot_ms=20,
    )  # fmt: skip
    d = disaggregate(st, 8.0)
    assert d.sized is not None and st.fit.speed is not None
    return st, d


def test_the_pools_win_only_beyond_the_speed_models_tie() -> None:
    st, d = _qwen_at_8()
    gpus = d.sized.gpus
    speed = st.fit.speed
    # 15 % (data/launch.yaml speed_tie_fraction): the aggregated fleet must need more than
    # gpus x 1.15 for the pools to win
    beyond = math.floor(gpus * 1.15) + 1
    v = compare(d, Aggregated(beyond, st.layout.name(), speed))
    assert v.wins and v.reason.code == "disagg.verdict.wins"
    assert v.saving == pytest.approx(1 - gpus / beyond)
    within = compare(d, Aggregated(gpus + 1, st.layout.name(), speed))
    assert not within.wins and within.reason.code == "disagg.verdict.tie"
    fewer = compare(d, Aggregated(gpus - 1, st.layout.name(), speed))
    assert not fewer.wins and fewer.reason.code == "disagg.verdict.loses"
    alone = compare(d, None)  # no aggregated layout meets the targets at the rate
    assert alone.wins and alone.reason.code == "disagg.verdict.aggregated_none"


def test_the_report_carries_the_pools_the_transfer_the_speed_and_the_cost() -> None:
    st, d = _qwen_at_8()
    agg = Aggregated(20, st.layout.name(), st.fit.speed)
    c = choose(d, agg, 2.5, st.scenario.total_gpus)
    out = disagg_json(c, st.scenario.gpus_per_node)
    for pool in ("prefill", "decode"):
        assert {"layout", "workers", "gpus"} <= set(out[pool])
    z = d.sized
    assert out["prefill"]["gpus"] + out["decode"]["gpus"] == z.gpus == out["capacity"]["gpus"]
    assert out["ratio"] == pytest.approx(z.prefill.gpus / z.decode.gpus)
    assert out["kv_transfer_ms"] == pytest.approx(z.transfer.seconds * 1e3)
    assert out["speed"]["tpot_ms"] <= 20 and out["wins"] is c.verdict.wins
    # $/M tokens = GPUs x price / (rate x tokens per request x 3600) x 10^6
    tokens = ISL + 256
    assert out["capacity"]["cost_per_million_tokens"] == pytest.approx(
        z.gpus * 2.5 / (8.0 * tokens * 3600) * 1e6
    )
    assert out["capacity"]["aggregated"]["gpus"] == 20
    assert set(out["formula"]) >= {"ttft", "tpot", "kv_transfer", "gpus"}
    assert out["plan"] == ("disaggregated" if c.verdict.wins else "aggregated")


def test_the_pools_curve_rises_in_tokens_per_gpu_as_each_decode_worker_fills() -> None:
    _, d = _qwen_at_8()
    points = pools_curve(d.sized, d.targets)
    assert len(points) >= 2
    assert points[-1].per_gpu > points[0].per_gpu  # more requests per step: more tokens/s/GPU
    assert points[-1].per_user <= points[0].per_user  # and each user's tokens come slower


def test_the_engines_refuse_pools_they_cannot_pair() -> None:
    # vLLM's NIXL: a hybrid model's state moves only between pools of one TP size
    vllm, sglang = adapter("vllm"), adapter("sglang")
    assert vllm.pools_refused(Split(2), Split(4), state=True) is not None
    assert vllm.pools_refused(Split(4), Split(4), state=True) is None
    assert vllm.pools_refused(Split(2), Split(4), state=False) is None
    # SGLang: one --tp-size (attention DP groups inside it) a multiple of the other
    assert sglang.pools_refused(Split(2), Split(3), state=False) is not None
    assert sglang.pools_refused(Split(8), Split(1, dp=8), state=False) is None
    assert sglang.pools_refused(Split(4), Split(2, dp=4), state=False) is None
    st = run("Qwen/Qwen3-Next-80B-A3B-Thinking", gpu="H100 SXM", tpot_ms=50)
    d = disaggregate(st, 2.0)
    if d.sized is not None:  # the pair picked for a hybrid model keeps one TP size
        assert (
            d.sized.prefill.worker.candidate.layout.tp == d.sized.decode.worker.candidate.layout.tp
        )


def test_pools_across_the_trays_of_one_nvl72_rack_move_the_kv_over_nvlink() -> None:
    st = run(
        "Qwen/Qwen3-32B", gpu="GB200", gpus_per_node=4, input_tokens=ISL, output_tokens=256,
        context=ISL + 256, ttft_ms=1500, tpot_ms=20,
    )  # fmt: skip
    d = disaggregate(st, 8.0)
    assert d.sized is not None and d.sized.gpus > 4  # more than one tray
    assert d.sized.transfer.link.kind == "scale_up"  # inside the rack's NVLink domain
    h = run(
        "Qwen/Qwen3-32B", gpu="H200", input_tokens=ISL, output_tokens=256, context=ISL + 256,
        ttft_ms=1500, tpot_ms=20,
    )  # fmt: skip
    dh = disaggregate(h, 8.0)
    assert dh.sized is not None and dh.sized.gpus > 8
    assert dh.sized.transfer.link.kind == "network"  # two HGX nodes: each GPU's NIC
