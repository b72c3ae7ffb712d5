"""One scenario, one study: what every page shows is the Study's, and the Study's is what
``python -m engine study … --json`` prints.

For each scenario (dense GQA, MQA with heads no TP divides, MLA MoE, DSA, DSA-V4, hybrid linear,
Mamba hybrid, sliding window, multimodal; 1 and 2 nodes; pinned and automatic layouts; vLLM and
SGLang) the app is opened from the scenario's link and each page is read as a user sees it: the
layout's TP / DP / EP / copies, the weights and KV space per GPU, the KV per token, the users that
fit and every launch command shown. Each must equal the Study's value and the CLI's JSON.
"""

from __future__ import annotations

import io
import json
import shlex
from contextlib import redirect_stdout
from typing import Any

import pytest
from apptest_util import assert_clean, metric_starting, open_app

from engine.cli import main
from engine.measure.first_launch import first_launch_for
from engine.present.artifacts import cli_command
from engine.present.render import shell
from engine.scenario import Scenario, make_scenario, to_query
from engine.study import Study, study
from engine.text.units import gib

SCENARIOS: dict[str, dict[str, Any]] = {
    "dense GQA, 1 GPU, auto": {"model": "meta-llama/Meta-Llama-3.1-8B", "gpus_per_node": 1},
    "dense GQA, pinned TP 4, SGLang": {
        "model": "meta-llama/Llama-3.1-70B-Instruct",
        "gpu": "H100",
        "gpus_per_node": 4,
        "tp": 4,
        "engine": "sglang",
    },
    "MQA, 71 heads no TP divides": {
        "model": "tiiuae/falcon-7b-instruct",
        "gpu": "L40S",
        "gpus_per_node": 2,
    },
    "MLA MoE, default": {"model": "deepseek-ai/DeepSeek-V3"},
    "MLA MoE, 2 nodes, SGLang": {
        "model": "deepseek-ai/DeepSeek-V3",
        "gpu": "H100",
        "nodes": 2,
        "engine": "sglang",
    },
    "MLA MoE, 2 nodes, vLLM": {"model": "moonshotai/Kimi-K2-Instruct", "nodes": 2},
    "MLA MoE, pinned DP-attention 8 + EP": {
        "model": "deepseek-ai/DeepSeek-V2-Lite",
        "gpu": "H100",
        "tp": 1,
        "dp": 8,
        "ep": True,
    },
    "DSA, many users": {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "B200", "users": 256},
    "DSA (V4 compressed), replicas on one node": {
        "model": "deepseek-ai/DeepSeek-V4-Flash",
        "context": 131_072,
    },
    "hybrid linear (Gated DeltaNet), SGLang": {
        "model": "Qwen/Qwen3-Next-80B-A3B-Thinking",
        "gpu": "H100",
        "gpus_per_node": 4,
        "engine": "sglang",
    },
    "hybrid Mamba, latency first": {
        "model": "models123/Jamba-v0.1",
        "gpu": "A100 80GB",
        "gpus_per_node": 2,
        "latency": "latency",
    },
    "sliding window, 1 GPU": {
        "model": "mistralai/Mistral-7B-v0.1",
        "gpu": "L4",
        "gpus_per_node": 1,
    },
    "sliding window + multimodal with images": {
        "model": "google/gemma-3-27b-it",
        "gpu": "H100",
        "gpus_per_node": 2,
        "images": True,
    },
    "multimodal, shorter context, SGLang": {
        "model": "Qwen/Qwen2.5-VL-7B-Instruct",
        "gpu": "L40S",
        "gpus_per_node": 1,
        "images": True,
        "engine": "sglang",
    },
    "MoE GQA, pinned TP 2, SGLang": {
        "model": "openai/gpt-oss-120b",
        "gpu": "H100",
        "gpus_per_node": 2,
        "tp": 2,
        "engine": "sglang",
    },
}


def cli_json(st: Study) -> dict[str, Any]:
    """What ``python -m engine study … --json`` prints for the Study's scenario (the command the
    report gives, run through the CLI's own entry point)."""
    command = cli_command(st)
    assert command is not None
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "engine"]
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(argv[3:]) == 0
    data: dict[str, Any] = json.loads(out.getvalue())
    return data


def argv_of(code: str) -> list[str]:
    """The argv of a command as a page shows it (one option per line, ``\\`` continuations)."""
    return shlex.split(code.replace("\\\n", " "))


def launch_blocks(at: Any) -> list[list[str]]:
    """Every launch command in the page's code blocks (not docker run, not the manifests)."""
    out = []
    for c in at.code:
        text = str(c.value)
        if text.startswith(("vllm serve", "python3 -m sglang.launch_server")):
            out.append(argv_of(text))
    return out


def test_the_scenarios_cover_every_family_and_layout_kind() -> None:
    studies = [study(make_scenario(**f)) for f in SCENARIOS.values()]
    assert len(studies) >= 12
    families = {st.family.attention_family for st in studies}
    assert {"GQA", "MQA", "MLA", "DSA", "HYBRID"} <= families
    assert any(st.family.sliding_window for st in studies)
    assert any(st.family.multimodal and st.scenario.images for st in studies)
    assert {st.scenario.nodes for st in studies} == {1, 2}
    assert {st.scenario.engine for st in studies} == {"vllm", "sglang"}
    assert any(st.scenario.pinned for st in studies)
    assert any(not st.scenario.pinned for st in studies)
    assert any(st.layout.replicas > 1 for st in studies)
    assert any(st.layout.dp > 1 for st in studies)
    assert any(st.layout.ep for st in studies)
    mqa = next(st for st in studies if st.family.attention_family == "MQA")
    assert mqa.config.num_attention_heads % 2 == 1  # no TP above 1 divides its heads


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_page_shows_the_study_and_the_cli_json(name: str) -> None:
    s: Scenario = make_scenario(**SCENARIOS[name])
    st = study(s)
    js = cli_json(st)
    pick = js["layout"]["pick"]
    fit = st.fit
    lay = fit.layout
    engine = s.engine
    plan = st.plan
    assert plan is not None

    # the Study and the CLI agree
    assert (pick["tp"], pick["dp"], pick["expert_parallel"], pick["replicas"]) == (
        lay.tp,
        lay.dp,
        lay.ep,
        lay.replicas,
    )
    assert pick["weights_per_gpu"] == fit.weights_per_gpu
    assert pick["kv_space_per_gpu"] == fit.kv_space_per_gpu
    assert pick["users"] == fit.users
    kv_json = js["diagnose"] if engine == "vllm" else js["diagnose"]["sglang"]
    # what one GPU holds at the layout's TP has its own key; kv_bytes_per_token is the model's
    assert kv_json["kv_bytes_per_token_per_gpu"] == st.kv.kv_bytes_per_token
    assert kv_json["kv_bytes_per_token"] == st.sizing(engine, 1).kv_bytes_per_token
    for e, view in st.engines.items():
        if view.plan is not None:
            assert js["plans"][e]["argv"] == view.plan.argv
            assert [c["argv"] for c in js["plans"][e]["commands"]] == [
                list(c.argv) for c in view.plan.commands
            ]

    weights, space, users = (
        gib(fit.weights_per_gpu),
        gib(fit.kv_space_per_gpu),
        f"{fit.users:,}",
    )
    kv_token = f"{st.kv.kv_bytes_per_token:,} B"

    at = open_app("overview", to_query(s))
    assert metric_starting(at, "Tensor parallel (TP)") == str(pick["tp"])
    assert metric_starting(at, "DP-attention ranks") == str(pick["dp"])
    assert metric_starting(at, "Expert parallel") == ("on" if pick["expert_parallel"] else "off")
    assert metric_starting(at, "Copies of the model") == str(pick["replicas"])
    assert metric_starting(at, "Weights per GPU") == weights == gib(pick["weights_per_gpu"])
    assert metric_starting(at, "KV space per GPU") == space == gib(pick["kv_space_per_gpu"])
    assert metric_starting(at, "Users that fit") == users == f"{pick['users']:,}"
    assert metric_starting(at, "KV per token (one GPU") == kv_token
    assert launch_blocks(at) == [js["plans"][engine]["argv"]]
    assert shell(plan) in [str(c.value) for c in at.code]

    for page in ("kv_cache", "hardware"):
        at.switch_page(f"app_pages/{page}.py").run()
        assert_clean(at)
        assert metric_starting(at, "KV space per GPU") == space
        assert metric_starting(at, "Users that fit") == users
    assert metric_starting(at, "Weights per GPU") == weights  # hardware
    at.switch_page("app_pages/kv_cache.py").run()
    assert metric_starting(at, "KV per token (one GPU") == kv_token

    at.switch_page("app_pages/flags.py").run()
    assert_clean(at)
    shown = launch_blocks(at)
    for e in st.engines:
        if js["plans"][e] is None:
            continue
        for command in js["plans"][e]["commands"]:
            assert command["argv"] in shown, (e, command["node"])
    compared = next(d.value for d in at.dataframe if "why_not" in d.value.columns)
    first = compared.iloc[0]
    assert int(first["users"]) == pick["users"]
    assert round(float(first["weights"]), 6) == round(pick["weights_per_gpu"] / 2**30, 6)

    at.switch_page("app_pages/measure.py").run()
    assert_clean(at)
    assert launch_blocks(at)[0] == list(first_launch_for(plan))
