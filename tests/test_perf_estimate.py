"""The speed model's operations against hand calculations written out here.

Every test runs on round factors (80 % of HBM, 50 % of the matmul ceiling, fixed costs zero
unless the test is about them), so each number below is the catalog figure × a round fraction and
can be checked with a pencil. Catalog figures: H100 SXM 3.35 TB/s, a BF16 matmul ceiling of 794.5
TFLOPS (the measured MAMF: 80.3 % of its 989 dense peak), NVLink 450 GB/s per direction; H200
4.8 TB/s.
"""

from __future__ import annotations

import math
import re

import pytest

from engine.engines.memory import Split
from engine.hardware.gpus import lookup_gpu
from engine.model.loader import load_catalog
from engine.perf import Calibration, ModelInputs, Speculative, Speed, estimate, model_inputs
from engine.perf.attention import mean_attended
from engine.perf.balance import poisson_max
from engine.perf.factors import Factors, perf_facts
from engine.perf.stack import STACK_COSTS, Factor
from engine.perf.terms import Term

H100_BW = 3.35e12
H100_BF16 = 794.5e12  # measured matmul ceiling (data/gpus.yaml matmul), not the 989 peak
H200_BW = 4.8e12
NVLINK = 450e9


def round_factors(**values: float) -> Factors:
    """Round physics, every software stack's fixed costs zero but a 10 us collective latency;
    ``values`` override a global factor or a stack cost (on every stack)."""
    glob = {
        "hbm_fraction": 0.8,
        "tensor_fraction": 0.5,
        "network_latency_seconds": 30e-6,
        "bus_efficiency": 0.82,
    }
    costs = dict.fromkeys(STACK_COSTS, 0.0)
    costs["collective_latency_seconds"] = 10e-6
    for k, v in values.items():
        (glob if k in glob else costs)[k] = v
    f = perf_facts().factors

    def factor(v: float, unit: str) -> Factor:
        return Factor(value=v, unit=unit, fitted=False, source="test")

    stacks = tuple(
        s.model_copy(update={c: factor(v, "s") for c, v in costs.items()}) for s in f.stacks
    )
    update = {k: factor(v, getattr(f, k).unit) for k, v in glob.items()}
    return f.model_copy(update={**update, "stacks": stacks})


def inputs(model: str, gpu: str, engine: str = "vllm") -> ModelInputs:
    return model_inputs(load_catalog(model).config, lookup_gpu(gpu), engine)  # type: ignore[arg-type]


def term(speed_terms: tuple[Term, ...], code: str) -> Term:
    found = [t for t in speed_terms if t.code == code]
    assert len(found) == 1, [t.code for t in speed_terms]
    return found[0]


# Llama-3.1-8B: per layer q 4096², k and v 4096·1024, o 4096², MLP 3 · 4096 · 14336, two norms
LLAMA8_LAYER = 4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336 + 2 * 4096
LLAMA8_BODY = 32 * LLAMA8_LAYER + 4096  # + the final norm
LLAMA8_HEAD = 128_256 * 4096
LLAMA8_KV_PER_TOKEN = 32 * 8 * (128 + 128) * 2  # 131,072 B


def test_dense_decode_at_batch_1_is_the_weights_over_achieved_bandwidth() -> None:
    # 32 × 218,112,000 + 4,096 + 525,336,576 = 7,504,924,672 parameters streamed, BF16:
    # 15,009,849,344 B ÷ (3.35 TB/s × 0.8) = 5.601 ms; the embedding reads one row only
    assert LLAMA8_BODY + LLAMA8_HEAD == 7_504_924_672
    inp = inputs("meta-llama/Meta-Llama-3.1-8B", "H100 SXM")
    s = estimate(inp, Split(1), 1, 1, isl=1, osl=1, factors=round_factors())
    gemms = [t for t in s.decode.terms if t.code.startswith("decode.gemm.")]
    assert sum(t.bytes for t in gemms) == pytest.approx(15_009_849_344)
    assert all(t.bound == "memory" for t in gemms)
    kv = 2 * LLAMA8_KV_PER_TOKEN  # mean context ISL + (OSL + 1) / 2 = 2 tokens
    assert term(s.decode.terms, "decode.attention.full").bytes == kv
    assert s.tpot_ms == pytest.approx((15_009_849_344 + kv) / (H100_BW * 0.8) * 1e3)
    assert s.tpot_ms == pytest.approx(5.6008, abs=1e-4)
    assert s.decode_bound == "memory"
    assert s.output_tokens_per_s_per_user == pytest.approx(1e3 / s.tpot_ms)


def test_moe_step_reads_the_expected_distinct_experts() -> None:
    # Qwen3-30B-A3B: 128 experts, top-8, 48 MoE layers, one expert 3 · 2048 · 768 = 4,718,592
    # parameters (9,437,184 B in BF16). 16 tokens touch 128 · (1 − (1 − 8/128)^16) = 82.42
    # distinct experts per layer, not 16 · 8 = 128 and not all of them.
    inp = inputs("Qwen/Qwen3-30B-A3B", "H100 SXM")
    s = estimate(inp, Split(1), 1, 16, isl=1024, osl=1024, factors=round_factors())
    touched = 128 * (1 - (1 - 8 / 128) ** 16)
    assert touched == pytest.approx(82.42, abs=0.01)
    moe = term(s.decode.terms, "decode.moe.experts")
    assert moe.bytes == pytest.approx(48 * touched * 9_437_184)
    assert moe.flops == pytest.approx(2 * 48 * 16 * 8 * 4_718_592)
    assert moe.seconds == pytest.approx(moe.bytes / (H100_BW * 0.8))
    # sliced over 2 GPUs (TP-MoE) the bytes per GPU halve; placed whole (EP), the layer waits
    # for the rank the 128 picks crowd most: E[max] of 2 Poisson(64) = 68.5 picks, touching
    # 64 (1 - (1 - 1/64)^68.5) = 42.92 of its 64 experts, not 82.42 / 2 = 41.21
    sliced = estimate(inp, Split(2), 1, 16, 1024, 1024, factors=round_factors())
    assert term(sliced.decode.terms, "decode.moe.experts").bytes == pytest.approx(moe.bytes / 2)
    ep = estimate(inp, Split(2, ep=True), 1, 16, 1024, 1024, factors=round_factors())
    picks = poisson_max(64.0, 2)
    assert 68 < picks < 69
    on_rank = 64 * (1 - (1 - 1 / 64) ** picks)
    assert term(ep.decode.terms, "decode.moe.experts").bytes == pytest.approx(
        48 * on_rank * 9_437_184
    )


def test_mla_decode_reads_one_latent_per_token_on_every_tp_rank_and_runs_absorbed() -> None:
    # DeepSeek-V3, BF16 KV: 61 layers × (512 + 64) × 2 B = 1,152 B per token per layer. 4 users at
    # 4,096 tokens (ISL 4,095, OSL 1): 4 × 4,096 × 1,152 × 61 = 1,151,336,448 B on each TP rank,
    # the latent being replicated. Absorbed: 128 / 8 = 16 heads per rank, each 2 × (576 + 512)
    # FLOPs per cached token.
    inp = inputs("deepseek-ai/DeepSeek-V3", "H200")
    s8 = estimate(inp, Split(8), 1, 4, isl=4095, osl=1, factors=round_factors())
    mla = term(s8.decode.terms, "decode.attention.mla")
    assert mla.bytes == 4 * 4096 * 1152 * 61 == 1_151_336_448
    assert mla.flops == pytest.approx(4 * 2 * 16 * (576 + 512) * 4096 * 61)
    assert mla.seconds == pytest.approx(mla.bytes / (H200_BW * 0.8))
    s1 = estimate(inp, Split(1), 1, 4, isl=4095, osl=1, factors=round_factors())
    assert term(s1.decode.terms, "decode.attention.mla").bytes == mla.bytes
    # DP-attention 8 instead: each rank holds 4 / 8 → 1 request (rounded up) at all 128 heads
    s_dp = estimate(inp, Split(1, dp=8, ep=True), 1, 4, 4095, 1, factors=round_factors())
    dp = term(s_dp.decode.terms, "decode.attention.mla")
    assert dp.bytes == 1 * 4096 * 1152 * 61
    assert dp.flops == pytest.approx(2 * 128 * (576 + 512) * 4096 * 61)


def test_dsa_reads_the_top_k_latents_and_scores_every_token() -> None:
    # DeepSeek-V3.2 at 8,192 tokens: MLA reads index_topk = 2,048 latents per layer, the
    # indexer all 8,192 keys of 128 fp8 + 4 B scale = 132 B
    inp = inputs("deepseek-ai/DeepSeek-V3.2", "H200")
    s = estimate(inp, Split(8), 1, 1, isl=8191, osl=1, factors=round_factors())
    assert term(s.decode.terms, "decode.attention.mla").bytes == 2048 * 1152 * 61
    assert term(s.decode.terms, "decode.attention.indexer").bytes == 8192 * 132 * 61


def test_sliding_window_layers_read_at_most_their_window() -> None:
    # gpt-oss-20b: 12 full + 12 sliding (128) layers of 8 KV heads × (64 + 64) × 2 B = 2,048 B
    inp = inputs("openai/gpt-oss-20b", "H100 SXM")
    s = estimate(inp, Split(1), 1, 2, isl=4095, osl=1, factors=round_factors())
    assert term(s.decode.terms, "decode.attention.full").bytes == 2 * 4096 * 2048 * 12
    assert term(s.decode.terms, "decode.attention.sliding").bytes == 2 * 128 * 2048 * 12


def test_linear_attention_state_is_read_and_written_whatever_the_context() -> None:
    inp = inputs("Qwen/Qwen3-Next-80B-A3B-Thinking", "H200")
    gdn = next(g for g in inp.kv_at(1).groups if g.kind == "mamba")
    short = estimate(inp, Split(1), 1, 3, isl=100, osl=1, factors=round_factors())
    long = estimate(inp, Split(1), 1, 3, isl=100_000, osl=1, factors=round_factors())
    for s in (short, long):
        t = term(s.decode.terms, "decode.attention.linear")
        assert t.bytes == 3 * 2 * gdn.spec.state_bytes * gdn.num_layers


def test_tp_allreduce_is_two_per_layer_latency_plus_ring_bytes_over_nvlink() -> None:
    # Llama-3.1-70B, TP 8, 16 users: each all-reduce carries 16 × 8,192 × 2 B = 262,144 B, a
    # ring sends 2 × 7/8 of it per GPU = 458,752 B over 450 GB/s × 0.82; 80 layers × 2
    inp = inputs("meta-llama/Meta-Llama-3.1-70B", "H200")
    s = estimate(inp, Split(8), 1, 16, isl=1024, osl=1024, factors=round_factors())
    ar = term(s.decode.terms, "decode.comm.tp_allreduce")
    assert ar.count == 160
    assert ar.bytes == pytest.approx(160 * 458_752)
    assert ar.seconds == pytest.approx(160 * (10e-6 + 458_752 / (NVLINK * 0.82)))
    assert ar.seconds == pytest.approx(1.7989e-3, rel=1e-4)
    # TP 1 has none; a copy of 16 GPUs over two 8-GPU nodes runs it on the network
    assert not [t for t in estimate(inp, Split(1), 1, 16, 1024, 1024).decode.terms
                if t.code == "decode.comm.tp_allreduce"]  # fmt: skip
    wide = estimate(inp, Split(16), 1, 16, 1024, 1024, gpus_per_node=8, factors=round_factors())
    net = term(wide.decode.terms, "decode.comm.tp_allreduce")
    per = 2 * 15 / 16 * 262_144
    assert net.seconds == pytest.approx(160 * (30e-6 + per / (50e9 * 0.82)))


def llama8_chunk(tokens: int, prompt: int, prompts: int) -> float:
    """One prefill step of Llama-3.1-8B on an H100 at round factors: ``tokens`` through the body
    GEMMs (compute-bound), the LM head for the ``prompts`` last tokens (memory-bound: its
    1,050,673,152 B), attention 2 × 32 heads × (128 + 128) × the mean causal span of a
    ``prompt``-token prompt × 32 layers per token."""
    flops = H100_BF16 * 0.5
    body = 2 * LLAMA8_BODY * tokens / flops
    head = LLAMA8_HEAD * 2 / (H100_BW * 0.8)
    attention = tokens * 2 * 32 * 256 * mean_attended(prompt, None) * 32 / flops
    return body + head + attention


def test_chunked_prefill_of_20000_tokens_is_two_full_chunks_and_the_rest() -> None:
    # vLLM's budget on an H100 (79.6 GiB, >= 70 GiB tier) is 8,192 tokens: 20,000 = 2 × 8,192
    # + 3,616, each chunk a pass at that many tokens. One user: TTFT is the chunks plus half the
    # decode step in flight when the request arrives, except for the benchmark's first request
    # (one in prompts_per_client), which arrives to an idle engine.
    inp = inputs("meta-llama/Meta-Llama-3.1-8B", "H100 SXM")
    s = estimate(inp, Split(1), 1, 1, isl=20_000, osl=1, factors=round_factors())
    assert s.chunk_tokens == 8192
    assert mean_attended(20_000, None) == 10_000.5
    assert s.prefill.seconds == pytest.approx(llama8_chunk(8192, 20_000, 1))
    assert s.prefill_bound == "compute"
    decode = (15_009_849_344 + 20_001 * LLAMA8_KV_PER_TOKEN) / (H100_BW * 0.8)
    assert s.decode.seconds == pytest.approx(decode)
    own = 2 * llama8_chunk(8192, 20_000, 1) + llama8_chunk(3616, 20_000, 1)
    waves = perf_facts().benchmark.prompts_per_client
    assert waves == 10
    assert s.ttft_ms == pytest.approx((own + decode / 2 * (1 - 1 / waves)) * 1e3)


def test_a_wave_sent_at_once_queues_for_its_prefills_packed_to_the_budget() -> None:
    # 9 clients send 1,024-token prompts at once (one prompt each): 8 fit a step of 8,192
    # tokens, the ninth waits for a second step; the mean over the 9 is (8 × 1 + 1 × 2) / 9 steps
    inp = inputs("meta-llama/Meta-Llama-3.1-8B", "H100 SXM")
    f = round_factors()
    wave = estimate(inp, Split(1), 1, 9, 1024, 512, factors=f, prompts_per_client=1)
    assert wave.ttft_ms / 1e3 == pytest.approx(10 / 9 * llama8_chunk(8192, 1024, 8))
    # over 10 prompts per client only the first wave queues so: TTFT falls toward one prefill
    calm = estimate(inp, Split(1), 1, 9, 1024, 512, factors=f, prompts_per_client=10)
    alone = estimate(inp, Split(1), 1, 1, 1024, 512, factors=f)
    assert alone.ttft_ms < calm.ttft_ms < wave.ttft_ms
    assert "/ 10" in calm.formula.ttft


def test_closed_loop_tpot_pays_for_the_other_users_prefills() -> None:
    # a client's cycle is the GPU's work for every request: its prefill and (OSL − 1) decode
    # steps: E2E = TTFT + (OSL − 1) × TPOT = half a step + 32 prefills + 255 decode steps. A
    # prefill costs one prompt alone, but in the first wave (one in 10) two 4,096-token prompts
    # share a step of 8,192
    inp = inputs("meta-llama/Meta-Llama-3.1-8B", "H100 SXM")
    f = round_factors()
    s = estimate(inp, Split(1), 1, 32, isl=4096, osl=256, factors=f)
    alone = llama8_chunk(4096, 4096, 1)
    assert s.prefill.seconds == pytest.approx(alone)
    packed = llama8_chunk(8192, 4096, 2) / 2
    each = alone + (packed - alone) / 10
    e2e = s.decode.seconds / 2 + 32 * each + 255 * s.decode.seconds
    assert s.ttft_ms / 1e3 + 255 * s.tpot_ms / 1e3 == pytest.approx(e2e)
    assert s.tpot_ms / 1e3 > s.decode.seconds
    per_gpu = 32 * 256 / e2e
    assert s.output_tokens_per_s_per_gpu == pytest.approx(per_gpu)
    two = estimate(inp, Split(1), 2, 32, isl=4096, osl=256, factors=f)
    assert two.output_tokens_per_s == pytest.approx(2 * s.output_tokens_per_s)
    assert two.gpus == 2


def test_mtp_commits_the_acceptance_length_kept_in_data() -> None:
    # one MTP draft: 1 + 0.85 tokens per step (DeepSeek-V3 report), the verify pass runs 2
    # tokens per user, the draft pass reads the MTP layer and the LM head
    inp = inputs("deepseek-ai/DeepSeek-V3", "H200")
    f = round_factors()
    s = estimate(inp, Split(8), 1, 4, 1024, 1, Speculative("mtp", 1), factors=f)
    assert s.accepted_tokens_per_step == 1.85
    assert s.draft is not None
    assert {t.code for t in s.draft.terms} >= {"draft.gemm.layer", "draft.gemm.lm_head"}
    assert s.tpot_ms / 1e3 == pytest.approx((s.decode.seconds + s.draft.seconds) / 1.85)
    plain = estimate(inp, Split(8), 1, 4, 1024, 1, factors=f)
    assert s.tpot_ms < plain.tpot_ms
    eagle = estimate(inp, Split(8), 1, 4, 1024, 1, Speculative("eagle3", 4), factors=f)
    assert eagle.accepted_tokens_per_step == pytest.approx(3.2)


def test_a_calibration_replaces_the_catalog_rates() -> None:
    cal = Calibration(
        gpu_name="NVIDIA H100 80GB HBM3",
        hbm_bytes_per_s=2.0e12,
        bf16_gemm_flops=600e12,
        fp8_gemm_flops=1200e12,
        decode_attention_seconds=1e-3,
        decode_attention_bytes=1.5e9,
        how="test",
    )
    inp = inputs("meta-llama/Meta-Llama-3.1-8B", "H100 SXM")
    s = estimate(inp, Split(1), 1, 1, 1, 1, calibration=cal, factors=round_factors())
    gemm = term(s.decode.terms, "decode.gemm.dense_ffn")
    assert gemm.seconds == pytest.approx(gemm.bytes / 2.0e12)
    att = term(s.decode.terms, "decode.attention.full")
    assert att.seconds == pytest.approx(att.bytes / 1.5e12)
    assert s.measured


def test_formula_is_numbers_units_and_operators_only() -> None:
    inp = inputs("deepseek-ai/DeepSeek-V3", "H200", "sglang")
    s = estimate(inp, Split(8), 1, 64, 1024, 1024, Speculative("mtp", 1))
    text = s.formula.text
    assert text
    words = re.sub(r"\bms\b|\bs\b|\bmax\b|e[+-]\d+", "", text)
    assert not re.search(r"[A-Za-z]", words), text
    js = s.to_json()
    assert set(js) == {
        "ttft_ms", "tpot_ms", "output_tokens_per_s_per_user", "output_tokens_per_s_per_gpu",
        "output_tokens_per_s", "bound", "formula", "ttft_ms_range", "tpot_ms_range",
        "output_tokens_per_s_per_gpu_range",
    }  # fmt: skip
    for figure in ("ttft_ms", "tpot_ms", "output_tokens_per_s_per_gpu"):
        low, high = js[f"{figure}_range"]  # not always around the figure: a model off one way
        assert 0 < low < high  # on held-out runs puts it to one side
    codes = {t["op"] for t in js["formula"]["terms"]}
    assert {"decode.moe.experts", "decode.attention.mla", "prefill.moe.experts"} <= codes
    assert all(re.fullmatch(r"[a-z0-9_.]+", c) for c in codes)
    assert js["bound"]["decode"] in ("memory", "compute", "communication")


def test_every_result_is_positive_and_finite_for_every_bundled_config() -> None:
    from engine.model.loader import catalog_names

    gpu = lookup_gpu("H200")
    for name in catalog_names():
        cfg = load_catalog(name).config
        inp = model_inputs(cfg, gpu)
        s: Speed = estimate(inp, Split(1), 1, 8, 2048, 256)
        for v in (s.ttft_ms, s.tpot_ms, s.output_tokens_per_s_per_gpu):
            assert math.isfinite(v) and v > 0, name


def test_bad_workloads_are_refused_naming_the_field() -> None:
    from engine.errors import InputError

    inp = inputs("meta-llama/Meta-Llama-3.1-8B", "H100 SXM")
    for kwargs, field in (({"concurrency": 0}, "concurrency"), ({"osl": 0}, "osl")):
        args = {"concurrency": 1, "isl": 10, "osl": 10, **kwargs}
        with pytest.raises(InputError, match=field):
            estimate(inp, Split(1), 1, args["concurrency"], args["isl"], args["osl"])


def test_a_studys_search_inputs_are_what_estimate_reads() -> None:
    # the layout search's inputs (built once per engine by the Study) satisfy PerfInputs, so
    # wiring the speed model in needs no second copy of the model's objects
    from engine.launch.candidate import SearchInputs
    from engine.scenario import make_scenario
    from engine.study import study

    st = study(make_scenario())  # DeepSeek-V3 on 8 x H200
    inp = SearchInputs(
        cfg=st.config,
        arch=st.architecture,
        family=st.family,
        weights=st.weights,
        gpu=st.gpu,
        engine=st.scenario.engine,
        kv_at=lambda tp: st.sizing(st.scenario.engine, tp),
        context=st.context,
        limit=st.limit.tokens,
        mtp=st.mtp,
        vision=False,
        chunk_tokens=8192,
    )
    s = estimate(inp, st.layout.split, st.layout.replicas, 16, 1024, 1024)
    assert s.chunk_tokens == 8192 and s.tpot_ms > 0
    assert s.gpus == st.layout.gpus


def test_clients_beyond_the_running_requests_wait_whole_requests_for_a_slot() -> None:
    # 64 clients, 16 slots: the engine runs as for 16; each client cycles 64 / 16 = 4 request
    # times, so TTFT gains 3 × the running requests' E2E and throughput stays the 16's
    inp = inputs("meta-llama/Meta-Llama-3.1-8B", "H100 SXM")
    f = round_factors()
    sixteen = estimate(inp, Split(1), 1, 16, 1024, 128, factors=f)
    capped = estimate(inp, Split(1), 1, 64, 1024, 128, max_running=16, factors=f)
    e2e = (sixteen.ttft_ms + 127 * sixteen.tpot_ms) / 1e3
    assert capped.tpot_ms == pytest.approx(sixteen.tpot_ms)
    assert capped.ttft_ms / 1e3 == pytest.approx(sixteen.ttft_ms / 1e3 + 3 * e2e)
    assert capped.output_tokens_per_s_per_gpu == pytest.approx(sixteen.output_tokens_per_s_per_gpu)
    assert "(64 / 16 − 1)" in capped.formula.ttft


def test_an_infinity_fabric_mesh_gives_a_tp_group_its_links_not_the_aggregate() -> None:
    # MI300X: 7 Infinity Fabric links of 64 GB/s (one direction) to the 7 other GPUs, 448 GB/s
    # in all. A TP 2 all-reduce runs on one link, TP 4 on three, TP 8 on all seven; an H200
    # behind NVSwitch gets its whole 450 GB/s at any TP.
    from engine.perf.rates import achieved_rates

    f = round_factors()
    mi300x = achieved_rates(lookup_gpu("MI300X"), f, 10e-6)
    for tp, links in ((2, 1), (4, 3), (8, 7)):
        assert mi300x.link(tp, 8).bytes_per_s == pytest.approx(links * 64e9 * 0.82)
    h200 = achieved_rates(lookup_gpu("H200"), f, 10e-6)
    assert h200.link(2, 8).bytes_per_s == h200.link(8, 8).bytes_per_s == NVLINK * 0.82
    # Llama-3.1-70B, TP 2 at 16 users: 160 all-reduces of 16 × 8,192 × 2 B, half sent per GPU
    inp = inputs("meta-llama/Meta-Llama-3.1-70B", "MI300X")
    s = estimate(inp, Split(2), 1, 16, isl=1024, osl=1024, factors=f)
    ar = term(s.decode.terms, "decode.comm.tp_allreduce")
    assert ar.seconds == pytest.approx(160 * (10e-6 + 262_144 / (64e9 * 0.82)))


def test_an_mla_chunk_after_the_first_re_expands_the_latents_before_it() -> None:
    # DeepSeek-V3, TP 8, 16,384 prompt tokens in two chunks of 8,192 (vLLM on an H200): the
    # second chunk up-projects the first's 8,192 latents back to keys and values, kv_b_proj:
    # 512 × 16 heads × (128 + 128) per token per layer, × 2 FLOPs, over 61 layers, in BF16
    from engine.perf.attention import mla_context_flops

    inp = inputs("deepseek-ai/DeepSeek-V3", "H200")
    expand = 2 * 512 * 16 * 256 * 8192 * 61
    assert mla_context_flops(inp.kv_at(8), inp.cfg, 8192) == expand
    llama = inputs("meta-llama/Meta-Llama-3.1-8B", "H200")
    assert mla_context_flops(llama.kv_at(1), llama.cfg, 8192) == 0
    f = round_factors()
    s = estimate(inp, Split(8), 1, 1, isl=16_384, osl=1, factors=f)
    assert s.chunk_tokens == 8192
    waves = perf_facts().benchmark.prompts_per_client
    own = s.ttft_ms / 1e3 - s.decode.seconds / 2 * (1 - 1 / waves)
    assert own == pytest.approx(2 * s.prefill.seconds + expand / (H100_BF16 * 0.5))


def test_prefill_dispatch_is_first_token_latency_set_by_how_the_engine_runs_prefill() -> None:
    # SGLang ran prefill eagerly up to 0.5.9 and captures it in piecewise CUDA graphs from
    # 0.5.10, except on AMD, with DP-attention or pipeline stages; vLLM compiles it everywhere
    from engine.perf.factors import prefill_mode

    plain = {"amd": False, "dp_attention": False, "pipeline": False}
    assert prefill_mode("sglang", "0.5.9", **plain) == "eager"
    assert prefill_mode("sglang", "0.5.10.post1", **plain) == "compiled"
    assert prefill_mode("sglang", None, **plain) == "compiled"  # the pinned 0.5.23
    assert prefill_mode("sglang", None, **{**plain, "amd": True}) == "eager"
    assert prefill_mode("sglang", None, **{**plain, "dp_attention": True}) == "eager"
    assert prefill_mode("vllm", "0.10.2", **{**plain, "amd": True}) == "compiled"
    # Llama-3.1-8B, 32 layers of 10 kernels (2 norms, 5 attention, 3 FFN: data/perf.yaml kernels),
    # one user of 1,024 tokens: the eager engine's first token comes 320 × (0.4 − 0.1) ms later;
    # its prefill is the same GPU work, so TPOT barely moves (only the longer cycle thins the
    # queue for the prefill slot)
    f = round_factors(prefill_kernel_seconds=1e-4, eager_kernel_seconds=4e-4)
    old = estimate(inputs("meta-llama/Meta-Llama-3.1-8B", "H100 SXM", "sglang"), Split(1), 1,
                   1, 1024, 256, factors=f, engine_version="0.5.9")  # fmt: skip
    new = estimate(inputs("meta-llama/Meta-Llama-3.1-8B", "H100 SXM", "sglang"), Split(1), 1,
                   1, 1024, 256, factors=f)  # fmt: skip
    assert old.ttft_ms - new.ttft_ms == pytest.approx(320 * 3e-4 * 1e3)
    assert old.prefill.seconds == new.prefill.seconds
    many = [
        estimate(inputs("meta-llama/Meta-Llama-3.1-8B", "H100 SXM", "sglang"), Split(1), 1, 64,
                 1024, 256, factors=f, engine_version=v)
        for v in ("0.5.9", None)
    ]  # fmt: skip
    assert many[0].tpot_ms == pytest.approx(many[1].tpot_ms, rel=1e-3)
    assert many[0].ttft_ms > many[1].ttft_ms
    # a TensorRT-LLM run through the vLLM adapter prefills as TensorRT-LLM does (eagerly):
    # the same GPU work, its first token 320 × (0.4 − 0.1) ms later than vLLM's
    vllm = inputs("meta-llama/Meta-Llama-3.1-8B", "H100 SXM")
    as_vllm = estimate(vllm, Split(1), 1, 1, 1024, 256, factors=f)
    as_trt = estimate(vllm, Split(1), 1, 1, 1024, 256, factors=f, runs_as="trtllm")
    assert as_trt.ttft_ms - as_vllm.ttft_ms == pytest.approx(320 * 3e-4 * 1e3)
    assert as_trt.prefill.seconds == as_vllm.prefill.seconds
