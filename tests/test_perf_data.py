"""The speed model's facts: every GPU carries the figures it needs with sources, every factor
and acceptance length in data/perf.yaml names where it comes from, and the measured rows the
bench reads are the shared file's, mapped to bundled configs."""

from __future__ import annotations

import pytest

from engine.hardware.gpus import all_gpus, lookup_gpu
from engine.perf.factors import acceptance, perf_facts
from engine.perf.stack import STACK_COSTS
from engine.rules import DATA_DIR
from tools.perf_rows import MEASURED, MODELS, case_of, cases, config_for, load_rows, row_files


def test_every_gpu_has_bandwidth_tensor_rates_links_and_a_network_with_sources() -> None:
    gpus = all_gpus()
    assert {"MI300X", "MI325X", "MI355X"} <= {g.key for g in gpus}
    for g in gpus:
        assert g.bandwidth_bytes_per_s > 0 and g.bf16_tflops > 0
        assert g.interconnect_bytes_per_s > 0 and g.network_bytes_per_s > 0
        assert g.node_gpus >= 1 and g.network_source
        assert g.dense_tensor_flops("fp8") >= g.dense_tensor_flops("bf16")
        assert g.dense_tensor_flops("fp4") >= g.dense_tensor_flops("fp8")


def test_network_per_gpu_follows_aiconfigurator_and_nvl72_is_one_nvlink_domain() -> None:
    assert lookup_gpu("H200").network_bytes_per_s == 50e9  # 400 Gb/s CX7 per GPU
    assert lookup_gpu("B200").network_bytes_per_s == 100e9  # 800 Gb/s CX8 per GPU
    assert lookup_gpu("GB200").node_gpus == 72
    assert lookup_gpu("H100 SXM").node_gpus == 8


def test_fp8_on_a_gpu_without_fp8_tensor_cores_runs_at_the_bf16_rate() -> None:
    a100 = lookup_gpu("A100 80GB")
    assert a100.dense_tensor_flops("fp8") == a100.dense_tensor_flops("bf16") == 312e12
    h100 = lookup_gpu("H100 SXM")
    assert h100.dense_tensor_flops("fp4") == h100.dense_tensor_flops("fp8") == 1978e12


def test_the_tensor_rate_is_the_measured_matmul_ceiling_not_the_datasheet_peak() -> None:
    # ml-engineering's MAMF table: H100 SXM 794.5 of 989 BF16 TFLOPS, 1402.6 of 1979 FP8;
    # MI300X 668.4 of its 1300 BF16 (our catalog: 1307), no FP8 figure
    h100, mi300x = lookup_gpu("H100 SXM"), lookup_gpu("MI300X")
    assert h100.achievable_tensor_flops("bf16") == pytest.approx(794.5e12)
    assert h100.achievable_tensor_flops("fp8") == pytest.approx(1402.6e12)
    # no FP4 tensor cores: FP4 runs the FP8 path
    assert h100.achievable_tensor_flops("fp4") == pytest.approx(1402.6e12)
    # an unmeasured FP8 takes the GPU's measured BF16 share of its peak
    assert mi300x.achievable_tensor_flops("fp8") == pytest.approx(2615e12 * 668.4 / 1307)
    # a higher peak does not make the MI300X the faster matmul
    assert mi300x.achievable_tensor_flops("bf16") < h100.achievable_tensor_flops("bf16")
    for g in all_gpus():
        for dtype in ("bf16", "fp8", "fp4"):
            assert 0 < g.achievable_tensor_flops(dtype) <= g.dense_tensor_flops(dtype)
        if g.matmul_bf16_tflops is not None:
            assert "Maximum Achievable Matmul FLOPS" in g.matmul_source


def test_an_unmeasured_gpu_takes_the_median_share_of_its_vendors_measured_gpus() -> None:
    # NVIDIA's measured BF16 shares, each measurement once: A100 SXM 271.2 / 312, A100 PCIe
    # 252.9 / 312, H100 SXM (= H200) 794.5 / 989, GH200 828.6 / 989, B200 1745 / 2250, B300
    # 1769 / 2250, GB200 1822 / 2500; sorted, the fourth of seven is the H100's 794.5 / 989
    h100_pcie = lookup_gpu("H100 PCIe")
    assert h100_pcie.matmul_bf16_tflops is None
    assert h100_pcie.matmul_share("bf16") == pytest.approx(794.5 / 989)
    # a GPU without FP8 tensor cores runs FP8 GEMMs at its BF16 ceiling
    a100 = lookup_gpu("A100 80GB")
    assert a100.achievable_tensor_flops("fp8") == a100.achievable_tensor_flops("bf16")
    assert a100.achievable_tensor_flops("bf16") == pytest.approx(271.2e12)


def test_every_factor_and_acceptance_length_names_its_source() -> None:
    facts = perf_facts()
    for name, factor in facts.factors:
        if name == "stacks":
            continue
        assert factor.source, name
        if factor.fitted:
            assert "fit_perf" in factor.source or "initial" in factor.source, name
    for stack in facts.factors.stacks:  # every software stack's cost, fitted or derived
        for cost in STACK_COSTS:
            factor = getattr(stack, cost)
            assert factor.source and ("prior" in factor.source or stack.like), (stack.key, cost)
    assert not facts.factors.bus_efficiency.fitted  # NCCL's own figure, not fitted
    for row in facts.speculative:
        assert row.source and row.accepted_tokens_per_step <= row.draft_tokens + 1
    assert acceptance("mtp", 1).accepted_tokens_per_step == 1.85
    assert acceptance("mtp", 3).accepted_tokens_per_step == 2.18


def test_the_fit_recorded_its_errors_and_its_leave_out_checks() -> None:
    import yaml

    doc = yaml.safe_load((DATA_DIR / "perf.yaml").read_text(encoding="utf-8"))
    fit = doc["fit"]
    assert fit["rows"] >= 75  # the vLLM and SGLang runs, each once
    assert fit["command"].startswith("python -m tools.fit_perf")
    for check in ("in_sample", "leave_one_model_out", "leave_one_gpu_out", "leave_one_source_out"):
        assert set(fit[check]) >= {"tpot", "ttft", "tps_per_gpu"}
    for check in ("leave_one_model_out", "leave_one_gpu_out", "leave_one_source_out"):
        assert set(fit[check]["factors"]) == set(fit[check]["groups"]) != set()


def test_each_engine_says_how_it_runs_a_prefill_with_its_code_as_source() -> None:
    engines = perf_facts().engines
    assert set(engines) == {"vllm", "sglang", "trtllm"}
    for run in engines.values():
        assert run.source and run.prefill in ("compiled", "eager")
    assert engines["sglang"].eager_before == "0.5.10"
    assert "server_args" in engines["sglang"].source
    # TensorRT-LLM (the bench's rows only): piecewise CUDA graphs for the context are opt-in
    assert engines["trtllm"].prefill == "eager"
    assert "torch_compile_config" in engines["trtllm"].source


def test_the_measured_rows_are_the_shared_files_and_map_to_bundled_configs() -> None:
    assert len(load_rows(MEASURED)) == 257
    # every data/perf/*.jsonl is read, the shared copy first (runs added beside it follow)
    assert row_files()[0] == MEASURED
    rows = load_rows()
    assert rows[:257] == load_rows(MEASURED)
    used, skipped = cases(rows)
    assert len(used) >= 85
    assert {s.why for s in skipped} >= {"disaggregated prefill / decode"}
    for config in set(MODELS.values()):
        for precision in ("bf16", "fp8", "fp4"):
            assert config_for(config, precision).num_hidden_layers > 0


def test_a_row_states_its_precision_and_the_harness_sets_it() -> None:
    llama = config_for("meta-llama/Meta-Llama-3.1-70B", "fp4")
    assert (llama.quantization_config or {}).get("quant_algo") == "NVFP4"
    gpt = config_for("openai/gpt-oss-120b", "fp4")  # keeps its own MXFP4 experts
    assert (gpt.quantization_config or {}).get("quant_method") == "mxfp4"
    assert config_for("Qwen/Qwen3-32B", "bf16").quantization_config is None


def test_aiconfigurator_rows_that_count_ep_inside_tp_size_run_on_tp_over_ep_gpus() -> None:
    # silicon_sample.csv: "..._c4_tp8_ep8_1015" with tp_size 64 and moe_ep 8 -> TP 8 on 8 GPUs
    row = next(r for r in load_rows() if r["id"] == "aicss-003")
    assert row["tp"] == 64 and row["ep"] == 8
    case = case_of(row)
    assert not isinstance(case, str) and getattr(case, "tp", None) == 8


def test_a_run_listed_twice_under_two_names_counts_once() -> None:
    # aiconfigurator lists the same DeepSeek runs under R1 and V3: identical conditions and
    # measurements, one architecture; the second is skipped, whatever the name says
    rows = {r["id"]: r for r in load_rows()}
    a, b = rows["aicss-029"], rows["aicss-056"]
    assert a["model"] != b["model"]
    assert (a["ttft_mean_ms"], a["tpot_mean_ms"]) == (b["ttft_mean_ms"], b["tpot_mean_ms"])
    used, skipped = cases(load_rows())
    ids = {c.id for c in used}
    assert "aicss-029" in ids and "aicss-056" not in ids
    dupes = [s for s in skipped if s.why.startswith("duplicate")]
    assert len(dupes) == 16
    # a row with the same conditions and other measurements is another run, kept
    other = {**a, "id": "x-1", "ttft_mean_ms": a["ttft_mean_ms"] + 1}
    assert "x-1" in {c.id for c in cases([a, other])[0]}


def test_every_gpu_says_how_its_scale_up_domain_is_wired() -> None:
    mi300x = lookup_gpu("MI300X")
    assert mi300x.scale_up_topology == "mesh" and mi300x.peer_link_gbps == 64
    assert mi300x.interconnect_gbps == 7 * 64
    assert mi300x.group_bytes_per_s(2) == 64e9 and mi300x.group_bytes_per_s(8) == 448e9
    for g in all_gpus():
        assert g.scale_up_source
        if g.vendor == "nvidia":
            assert g.scale_up_topology == "switch"
            assert g.group_bytes_per_s(2) == g.interconnect_bytes_per_s
