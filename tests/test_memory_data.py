"""data/memory.yaml: memory-accounting and multi-node facts, each with its source."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from engine.rules import DATA_DIR

MEMORY_YAML = DATA_DIR / "memory.yaml"
GiB = 2**30


def _data() -> dict[str, Any]:
    raw = yaml.safe_load(MEMORY_YAML.read_text(encoding="utf-8"))
    assert isinstance(raw, dict)
    return raw


def _leaf_sections(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every mapping with no mapping below it (lists of mappings count as below)."""
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        children = [(k, v) for k, v in node.items() if isinstance(v, (dict, list))]
        nested = False
        for key, value in children:
            sub = _leaf_sections(value, f"{path}.{key}")
            if sub or isinstance(value, dict):
                nested = True
            found.extend(sub)
        if not nested and path:
            found.append((path, node))
    elif isinstance(node, list):
        for i, item in enumerate(node):
            found.extend(_leaf_sections(item, f"{path}[{i}]"))
    return found


def test_memory_yaml_parses_into_top_level_sections() -> None:
    data = _data()
    assert data["schema_version"] == 1
    for section in (
        "device_memory",
        "vllm_kv_pool",
        "sglang_static_memory",
        "context_limit",
        "multi_node",
        "routers",
        "dp_attention",
    ):
        assert isinstance(data[section], dict), section


def test_every_leaf_section_names_its_source() -> None:
    leaves = _leaf_sections(_data())
    assert len(leaves) > 30
    for path, leaf in leaves:
        assert isinstance(leaf.get("source"), str) and leaf["source"].strip(), path


def test_vllm_default_gpu_memory_utilization_is_0_92_as_in_the_pinned_flag_table() -> None:
    assert _data()["vllm_kv_pool"]["gpu_memory_utilization_default"]["value"] == 0.92
    flags = json.loads((DATA_DIR / "engines" / "vllm-0.33.0-flags.json").read_text())
    by_flag = {f["flag"]: f for f in flags}
    assert by_flag["--gpu-memory-utilization"]["default"] == 0.92


def test_vllm_batch_default_tiers_are_8192_tokens_on_70_gib_and_16384_on_160_gib() -> None:
    tiers = _data()["vllm_kv_pool"]["batch_defaults"]["tiers"]
    by_floor = {t["min_device_gib"]: t for t in tiers}
    assert by_floor[160]["max_num_batched_tokens_api_server"] == 16384
    assert by_floor[70]["max_num_batched_tokens_api_server"] == 8192
    assert by_floor[70]["max_num_seqs_api_server"] == 1024
    assert by_floor[0]["max_num_batched_tokens_api_server"] == 2048
    assert by_floor[0]["max_num_seqs_api_server"] == 256


def test_cuda_graph_estimate_is_subtracted_by_default_since_vllm_0_21() -> None:
    cg = _data()["vllm_kv_pool"]["cuda_graph"]
    assert cg["enabled_by_default_since"] == "0.21.0"
    assert cg["env_var"] == "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"


def test_h100_cuda_total_is_85_045_477_376_bytes_below_the_nvidia_smi_figure() -> None:
    cuda_total = _data()["device_memory"]["cuda_total"]["h100_bytes"]
    assert cuda_total == 85_045_477_376
    assert cuda_total < 81_559 * 2**20


def _reserve_gib(estimate: dict[str, Any], obs: dict[str, Any]) -> float:
    activation = estimate["activation_logit_copies"] * obs["max_num_seqs"] * obs["vocab_size"] * 4
    non_torch = (
        estimate["non_torch_gib_tp1"] if obs["tp"] == 1 else estimate["non_torch_gib_tp_gt1"]
    )
    return float(activation / GiB + non_torch)


def test_observations_add_up_to_the_logged_kv_pool() -> None:
    for obs in _data()["vllm_kv_pool"]["observations"]:
        requested = obs["total_gib"] * obs["gpu_memory_utilization"]
        spent = obs["weights_gib"] + obs["peak_activation_gib"] + obs["non_torch_gib"]
        if obs["cuda_graph_subtracted"]:
            spent += obs["cuda_graph_gib"]
        assert abs(requested - spent - obs["available_kv_gib"]) < 0.05, obs["model"]


def test_at_least_five_v1_observations_with_model_gpu_and_tp() -> None:
    v1 = [o for o in _data()["vllm_kv_pool"]["observations"] if "V0" not in o["vllm_version"]]
    assert len(v1) >= 5
    for obs in v1:
        assert obs["model"] and obs["gpu"] and obs["tp"] >= 1


def test_reserve_estimate_predicts_every_v1_kv_pool_within_half_a_gib() -> None:
    data = _data()["vllm_kv_pool"]
    estimate = data["reserve_estimate"]
    for obs in data["observations"]:
        if "V0" in obs["vllm_version"]:
            continue  # V0 counted non-torch memory from an earlier snapshot
        predicted = (
            obs["total_gib"] * obs["gpu_memory_utilization"]
            - obs["weights_gib"]
            - _reserve_gib(estimate, obs)
        )
        assert abs(predicted - obs["available_kv_gib"]) < 0.5, obs["model"]
        assert predicted <= obs["available_kv_gib"] + 0.1, obs["model"]  # errs on the safe side


@pytest.mark.parametrize(
    ("field", "low", "high"),
    [
        ("activation_logit_copies", 5.0, 20.0),
        ("non_torch_gib_tp1", 0.0, 2.0),
        ("non_torch_gib_tp_gt1", 0.0, 4.0),
        ("cuda_graph_gib", 0.0, 8.0),
    ],
)
def test_reserve_estimate_constants_are_in_sane_ranges(field: str, low: float, high: float) -> None:
    value = _data()["vllm_kv_pool"]["reserve_estimate"][field]
    assert low <= value <= high


def test_observation_numbers_are_in_sane_ranges() -> None:
    for obs in _data()["vllm_kv_pool"]["observations"]:
        assert 10 < obs["total_gib"] < 300
        assert 0.5 < obs["gpu_memory_utilization"] <= 1.0
        assert 0 < obs["weights_gib"] < obs["total_gib"]
        assert 0 <= obs["peak_activation_gib"] < 32
        assert 0 <= obs["non_torch_gib"] < 8
        assert 0 < obs["available_kv_gib"] < obs["total_gib"]
        assert 1000 < obs["vocab_size"] < 1_000_000


def test_sglang_mem_fraction_worked_example_matches_the_formula_constants() -> None:
    mfs = _data()["sglang_static_memory"]["mem_fraction_static_default"]
    c = mfs["constants_mb"]
    gpu_mem = 81_559
    chunked, decode_bs, tp = 8192, 512, 8
    reserved = (
        c["base"]
        + c["per_activation_token"] * max(chunked, 2048)
        + tp / 8 * c["per_tp_pp_over_8"]
        + c["per_decode_graph_bs"] * decode_bs
        + c["prefill_graph_mla"]
    )
    reserved = max(reserved, c["floor_above_60gib"])
    assert round((gpu_mem - reserved) / gpu_mem, 3) == mfs["worked_example"]["value"] == 0.799


def test_sglang_capacity_tiers_grow_with_gpu_memory() -> None:
    tiers = _data()["sglang_static_memory"]["capacity_defaults"]["tiers"]
    sizes = [t["chunked_prefill_size"] for t in tiers]
    assert sizes == sorted(sizes)
    assert sizes[0] == 2048 and sizes[-1] == 16384


def test_context_limit_keys_match_each_engine() -> None:
    ctx = _data()["context_limit"]
    assert ctx["vllm"]["combine"] == "min"
    assert ctx["vllm"]["keys"][0] == "max_position_embeddings"
    assert {"n_positions", "seq_length", "model_max_length", "max_seq_len"} <= set(
        ctx["vllm"]["keys"]
    )
    assert set(ctx["vllm"]["rope_scaling"]["no_scaling_types"]) == {"su", "longrope", "llama3"}
    assert ctx["sglang"]["combine"] == "first_present_in_order"
    assert ctx["sglang"]["keys"] == [
        "max_sequence_length",
        "seq_length",
        "max_seq_len",
        "model_max_length",
        "max_position_embeddings",
    ]


def _flags(name: str) -> set[str]:
    rows = json.loads((DATA_DIR / "engines" / name).read_text())
    names: set[str] = set()
    for row in rows:
        names.add(row["flag"])
        names.update(row.get("aliases") or [])
    return names


def test_every_multi_node_flag_said_present_is_in_the_pinned_tables() -> None:
    tables = _data()["multi_node"]["flags_in_pinned_tables"]
    vllm = _flags("vllm-0.33.0-flags.json")
    sglang = _flags("sglang-0.5.23-flags.json")
    assert set(tables["vllm"]["present"]) <= vllm
    assert set(tables["sglang"]["present"]) <= sglang
    assert not (set(tables["vllm"]["missing"]) & vllm)
    assert "--cuda-graph-max-bs" not in sglang  # the LWS example's flag is gone in 0.5.23


def test_lws_examples_wire_the_three_lws_variables() -> None:
    lws = _data()["multi_node"]["lws"]
    assert lws["shape"]["env_vars"] == ["LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX"]
    rank_args = lws["sglang"]["rank_args"]
    for var in lws["shape"]["env_vars"]:
        assert f"$({var})" in rank_args
    assert "$(LWS_GROUP_SIZE)" in lws["vllm"]["leader_command"]
    assert "$(LWS_LEADER_ADDRESS)" in lws["vllm"]["worker_command"]


def test_multi_node_commands_pair_rank_zero_with_a_headless_or_rank_one_node() -> None:
    mn = _data()["multi_node"]
    assert "--node-rank 0" in mn["vllm_tp_mp"]["node0"]
    assert "--headless" in mn["vllm_tp_mp"]["node1"]
    assert "--data-parallel-start-rank 8" in mn["vllm_dp_ep"]["node2"]
    assert "--headless" in mn["vllm_dp_ep"]["node2"]
    assert "--node-rank 1" in mn["sglang_tp"]["node1"]


def test_routers_name_their_cache_aware_policies() -> None:
    routers = _data()["routers"]
    assert routers["sglang"]["default_policy"] == "cache_aware"
    assert "--policy cache_aware" in routers["sglang"]["launch"]
    assert "prefixaware" in routers["vllm_production_stack"]["routing_logic_choices"]
    assert "cache_aware" in routers["vllm_router_rust"]["policies"]
