"""What the app downloads: the launch script, docker run, the Kubernetes YAML, and the report of
the Study as JSON (the CLI's) and Markdown; plus the sources and the worded verdicts and gates."""

from __future__ import annotations

import io
import json
import re
import shlex
import shutil
import subprocess
from contextlib import redirect_stdout

import pytest
import yaml

from engine.cli import main
from engine.gates import GATE_KINDS, GATE_NAME, Gate
from engine.hardware.gpus import all_gpus
from engine.i18n import t
from engine.present import messages as M
from engine.present.artifacts import (
    cli_command,
    docker_script,
    launch_artifacts,
    report_artifacts,
    study_json_text,
)
from engine.present.study_report import study_json, study_markdown
from engine.study import Study
from engine.text.sources import clean, escape_markdown, has_internal_marks, refs
from engine.text.words import say
from tests.study_util import run

BASH = shutil.which("bash")
TINY = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 1024,
    "num_attention_heads": 8,
    "num_key_value_heads": 8,
    "num_hidden_layers": 4,
    "intermediate_size": 4096,
    "vocab_size": 32000,
}
LINK = "http://localhost:8501/overview?model=deepseek-ai%2FDeepSeek-V3&lang=ko"


def cli_stdout(argv: list[str]) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


def bash_n(text: str) -> None:
    if BASH is None:
        pytest.skip("no bash")
    done = subprocess.run([BASH, "-n"], input=text, text=True, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr


# --- the JSON report is the CLI's -------------------------------------------------------------


def test_the_json_report_is_what_the_cli_prints_for_the_same_scenario() -> None:
    st = run("deepseek-ai/DeepSeek-V3", gpu="H100", nodes=2, engine="sglang", users=40)
    command = cli_command(st)
    assert command is not None
    argv = shlex.split(command)[3:]
    assert study_json_text(st) == cli_stdout(argv)
    assert json.loads(study_json_text(st)) == study_json(st)


def test_the_cli_command_keeps_every_pinned_field() -> None:
    st = run(
        "deepseek-ai/DeepSeek-V2-Lite",
        gpu="H100",
        tp=1,
        dp=8,
        ep=True,
        memory_fraction=0.85,
        kv_dtype="fp8",
        context=8192,
    )
    command = cli_command(st)
    assert command is not None
    for flag in ("--tp 1", "--dp 8", "--ep", "--memory-fraction 0.85", "--kv-dtype fp8"):
        assert flag in command
    assert json.loads(cli_stdout(shlex.split(command)[3:]))["scenario"] == st.scenario.model_dump()


def test_an_uploaded_config_has_no_cli_command_but_a_report() -> None:
    st = run(TINY)
    assert cli_command(st) is None
    md = study_markdown(st)
    assert "Reproduce on the command line" not in md
    assert json.loads(report_artifacts(st)[0].text)["model"]["source"] == "json"


# --- launch artefacts -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"model": "deepseek-ai/DeepSeek-V3"},
        {"model": "deepseek-ai/DeepSeek-V3", "gpu": "H100", "nodes": 2},
        {"model": "deepseek-ai/DeepSeek-V3", "gpu": "H100", "nodes": 2, "engine": "sglang"},
        {"model": "deepseek-ai/DeepSeek-V4-Flash", "context": 131_072},
        {"model": "meta-llama/Meta-Llama-3.1-8B", "gpus_per_node": 8, "users": 200},
    ],
)
def test_scripts_parse_with_bash_and_manifests_load_as_the_expected_kinds(
    fields: dict[str, object],
) -> None:
    model = str(fields.pop("model"))
    st = run(model, **fields)
    assert st.plan is not None
    arts = {a.kind: a for a in launch_artifacts(st, st.plan)}
    for kind in ("script", "docker"):
        text = arts[kind].text
        assert text.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in text
        bash_n(text)
    script = arts["script"].text
    for e in st.plan.env:
        assert f"export {e.name}=" in script
    for c in st.plan.commands:
        assert shlex.join(c.argv[:3]) in script.replace("\\\n", " ") or c.argv[0] in script
    kinds = [d["kind"] for d in yaml.safe_load_all(arts["kubernetes"].text)]
    multi = st.plan.nodes_per_copy > 1
    assert kinds[:2] == (["LeaderWorkerSet", "Service"] if multi else ["Deployment", "Service"])
    if st.plan.servers > 1:
        assert "ConfigMap" in kinds
    assert arts["kubernetes"].file_name.endswith(".yaml")


def test_a_multi_node_docker_script_runs_the_line_of_its_node() -> None:
    st = run("deepseek-ai/DeepSeek-V3", gpu="H100", nodes=2)
    assert st.plan is not None and len(st.plan.commands) == 2
    text = docker_script(st.plan)
    assert 'case "$NODE" in' in text and "  0)" in text and "  1)" in text
    assert text.count("\n    docker run ") == 2
    assert "LEADER_ADDR" in text


# --- the Markdown report ----------------------------------------------------------------------


def test_the_markdown_report_holds_scenario_verdict_numbers_commands_and_link() -> None:
    st = run("deepseek-ai/DeepSeek-V3")
    md = study_markdown(st, "en", LINK)
    assert md.startswith("# Serving Playbook report: deepseek-ai/DeepSeek-V3 on 1 × 8 H200\n")
    assert "**Runs** — TP 8: 19 users fit at 32,768 tokens" in md
    assert "| KV per token (one GPU at TP 8) | 70,272 B |" in md
    assert "= 70,272 B/token" in md  # the formula beside the number
    assert "```bash\nvllm serve deepseek-ai/DeepSeek-V3 \\\n" in md
    assert "python3 -m sglang.launch_server" in md  # both engines' commands
    assert f"<{LINK}>" in md
    assert "python -m engine study deepseek-ai/DeepSeek-V3 --gpu H200" in md
    assert "GiB = 2^30 bytes" in md
    assert not has_internal_marks(md)


def test_the_markdown_report_is_in_the_readers_language() -> None:
    st = run("deepseek-ai/DeepSeek-V3")
    md = study_markdown(st, "ko")
    assert md.startswith("# 서빙 플레이북 보고서")
    assert "**실행 가능**" in md and "## 시나리오" in md


def test_a_hostile_model_name_cannot_break_the_markdown() -> None:
    name = "x | y` ``` <script>*bold*"
    st = run(TINY)
    hostile = st.model.__class__(st.model.config, st.model.source, name)
    fake = Study(**{**st.__dict__, "model": hostile})  # type: ignore[arg-type]
    md = study_markdown(fake)
    title = md.splitlines()[0]
    assert "\\|" in title and "\\`" in title and "\\<script\\>" in title and "\\*bold\\*" in title
    for line in md.splitlines():
        if line.startswith("| ") and "x \\| y" in line:
            assert line.count(" | ") == 1  # the name stays inside its cell


# --- sources ----------------------------------------------------------------------------------


def test_sources_become_titled_links_without_internal_tags() -> None:
    got = refs("AIC systems/h200_sxm.yaml; IX gpu-specs.ts [V]")
    assert [r.url for r in got] == [
        "https://github.com/ai-dynamo/aiconfigurator",
        "https://github.com/SemiAnalysisAI/InferenceX-app",
    ]
    assert got[0].title == "NVIDIA AIConfigurator systems/h200_sxm.yaml"
    got = refs("vllm issue #11559 'It is supported since v0.6.6' (facts §4) [V]")
    assert got == [
        type(got[0])(
            "vllm issue #11559 'It is supported since v0.6.6'",
            "https://github.com/vllm-project/vllm/issues/11559",
        )
    ]
    assert refs("facts §4 [UNVERIFIED]") == []
    assert refs("Playbook text (../shared/seeds/004): late fusion")[0].title.startswith(
        "Serving playbook"
    )


def test_clean_removes_tags_and_paths_from_a_sentence() -> None:
    text = "DSA runs on Hopper (../shared/seeds/004) [V] (facts.md §2a) [3P]"
    assert clean(text) == "DSA runs on Hopper"
    assert not has_internal_marks(clean("see /work/shared/reference/facts.md §1 [index-only]"))
    assert escape_markdown("a|b*c") == "a\\|b\\*c"


def test_every_gpu_and_kernel_source_reads_without_tags() -> None:
    from engine.gates import kernel_gates

    texts = [g.source for g in all_gpus()] + [g.device_memory_source for g in all_gpus()]
    texts += [kernel_gates().dsa.source, kernel_gates().mla.source]
    for text in texts:
        for r in refs(text):
            assert not has_internal_marks(r.title), r
            assert r.url is None or r.url.startswith("https://")


# --- verdicts and gates in Korean carry the engine's numbers --------------------------------

NUMBER = re.compile(r"\d[\d,.]*")


def numbers(text: str) -> list[str]:
    return sorted(n.rstrip(".,") for n in NUMBER.findall(text))


CASES = [
    {"model": "deepseek-ai/DeepSeek-V3"},
    {"model": "deepseek-ai/DeepSeek-V3", "gpu": "H100", "gpus_per_node": 1},
    {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "RTX 4090"},
    {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "RTX PRO 6000"},
    {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "MI300X"},
    {"model": "Qwen/Qwen3-Next-80B-A3B-Thinking", "gpu": "A100 80GB", "gpus_per_node": 4},
    {"model": "openai/gpt-oss-120b", "gpu": "A100 80GB", "gpus_per_node": 2},
    {
        "model": "meta-llama/Meta-Llama-3.1-8B",
        "gpu": "RTX 4090",
        "gpus_per_node": 1,
        "kv_dtype": "fp8",
    },
    {"model": "meta-llama/Llama-2-70b-hf", "gpu": "L4", "gpus_per_node": 1},
    {"model": "Qwen/Qwen2.5-VL-7B-Instruct", "gpu": "L4", "gpus_per_node": 1, "context": 128_000},
    {"model": "meta-llama/Llama-3.1-70B-Instruct", "gpu": "H100", "gpus_per_node": 2, "users": 200},
    {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "B200", "users": 256},
    {"model": "deepseek-ai/DeepSeek-V2-Lite", "gpu": "H100", "users": 512},
    {"model": "meta-llama/Llama-3.1-70B-Instruct", "gpu": "H100", "latency": "latency"},
    {"model": "deepseek-ai/DeepSeek-V3", "gpu": "H100", "nodes": 2},
    {"model": "tiiuae/falcon-7b-instruct", "gpu": "L40S", "gpus_per_node": 2, "tp": 1},
    {"model": "meta-llama/Meta-Llama-3.1-8B", "gpus_per_node": 8, "users": 200},
]


@pytest.mark.parametrize("fields", CASES, ids=lambda f: f"{f['model']}@{f.get('gpu', 'H200')}")
def test_korean_verdicts_and_gates_carry_the_english_numbers(fields: dict[str, object]) -> None:
    fields = dict(fields)
    st = run(str(fields.pop("model")), **fields)
    en, ko = M.verdict(st, "en"), M.verdict(st, "ko")
    assert en.reason == say(st.verdict.reason)
    assert ko.title == t(f"verdict.status.{st.verdict.status}", "ko")
    assert numbers(ko.reason) == numbers(en.reason), (ko.reason, en.reason)
    assert len(ko.tips) == len(en.tips)
    for g_en, g_ko in zip(M.gates(st, "en"), M.gates(st, "ko"), strict=True):
        assert g_en.status == g_ko.status
        assert g_ko.title != g_en.title or g_en.title.isupper()  # translated
        assert numbers(g_ko.reason) == numbers(g_en.reason), (g_ko.reason, g_en.reason)
        assert bool(g_ko.tips) == bool(g_en.tips)
    for view in st.engines.values():
        if view.plan is not None:
            ko_blocked = M.blocked(view.plan, "ko")
            assert len(ko_blocked) == len(view.plan.blocked_by)
            failed = [g for g in M.gates(st, "en") if g.status == "fail"]
            for g, ko_item in zip(failed, ko_blocked, strict=False):  # the gates come first
                assert numbers(ko_item) == sorted(numbers(g.reason) + numbers(" ".join(g.tips)))


def test_every_gate_name_has_a_korean_message() -> None:
    """Every gate is named in Korean, not in the engine's English."""
    for kind in GATE_KINDS:
        g = Gate(kind, "pass", GATE_NAME[kind]())
        assert M.gate(g, "ko").title != M.gate(g, "en").title, kind


@pytest.mark.parametrize("fields", CASES, ids=lambda f: f"{f['model']}@{f.get('gpu', 'H200')}")
def test_the_layout_reasons_are_worded_from_the_same_decisions(fields: dict[str, object]) -> None:
    """The catalog's English wording of the layout search's reasons is the engine's own text
    (less its sources): a changed reason in engine/launch/layout.py shows up here."""
    fields = dict(fields)
    st = run(str(fields.pop("model")), **fields)
    english, sources = M.layout_reasons(st)
    korean, _ = M.layout_reasons(st, "ko")
    assert [numbers(k) for k in korean] == [numbers(e) for e in english]
    assert all(not has_internal_marks(r) for r in english)
    assert all(s for s in sources)
