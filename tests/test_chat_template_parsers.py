"""Parsers from the chat template: the tool-call and thinking format a model's template writes
picks the parser each engine registers, read from a local Hugging Face cache (config.json beside
tokenizer_config.json / chat_template.jinja), never from the network, never rendered.

The templates below are written for these tests in each format the engines' parsers read
(data/chat_templates.yaml names the parser file and function of every marker); the newest
models' configs are tests/fixtures/newest/ (copies of shared/configs/newest/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import huggingface_hub.constants as hf_constants
import pytest

from engine.cli import main
from engine.decision import CODES
from engine.engines import adapter
from engine.lint import lint_command
from engine.model import loader
from engine.model.loader import load_hub, load_model
from engine.scenario import make_scenario
from engine.software import templates
from engine.software.software_report import software_report
from engine.study import study
from engine.text.words import say

NEWEST = Path(__file__).resolve().parent / "fixtures" / "newest"
MODELS = Path(__file__).resolve().parent.parent / "data" / "models"
SHA = "89abcdef0123456789abcdef0123456789abcdef"


def newest(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((NEWEST / f"{name}.json").read_text())
    return data


def bundled(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((MODELS / f"{name}.json").read_text())
    return data


# A config the architecture table has no row for (the shapes of a small dense model)
UNSEEN = bundled("Qwen__Qwen3-8B") | {
    "architectures": ["UnseenChatForCausalLM"],
    "model_type": "unseen_chat",
}


def hub_cache(root: Path, repo: str, files: dict[str, Any]) -> None:
    """huggingface_hub's offline layout: refs/main -> snapshots/<sha>/<files> (str = raw)."""
    base = root / f"models--{repo.replace('/', '--')}"
    (base / "refs").mkdir(parents=True)
    (base / "refs" / "main").write_text(SHA)
    snap = base / "snapshots" / SHA
    snap.mkdir(parents=True)
    for name, doc in files.items():
        body = doc if isinstance(doc, str | bytes) else json.dumps(doc)
        if isinstance(body, bytes):
            (snap / name).write_bytes(body)
        else:
            (snap / name).write_text(body, encoding="utf-8")


@pytest.fixture
def offline_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(tmp_path))
    return tmp_path


def chat(body: str, think: str = "") -> str:
    """A ChatML-style template whose assistant turn renders tool calls with ``body``."""
    return (
        "{%- for message in messages %}"
        "{{- '<|im_start|>' + message.role + '\\n' }}"
        "{%- if message.role == 'assistant' %}"
        + think
        + "{%- for tool_call in message.tool_calls %}"
        + body
        + "{%- endfor %}{%- endif %}"
        "{{- message.content + '<|im_end|>\\n' }}"
        "{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
    )


THINK = (
    "{%- if reasoning_content %}"
    "{{- '<think>\\n' + reasoning_content + '\\n</think>\\n' }}{%- endif %}"
)
HERMES = chat(
    '{{- \'<tool_call>\\n{"name": "\' + tool_call.name + \'", "arguments": \' '
    "+ tool_call.arguments | tojson + '}\\n</tool_call>' }}"
)
QWEN3_CODER = chat(
    "{{- '<tool_call>\\n<function=' + tool_call.name + '>\\n' }}"
    "{%- for k, v in tool_call.arguments.items() %}"
    "{{- '<parameter=' + k + '>\\n' + v | string + '\\n</parameter>\\n' }}{%- endfor %}"
    "{{- '</function>\\n</tool_call>' }}"
)
KIMI_K2 = chat(
    "{{- '<|tool_calls_section_begin|><|tool_call_begin|>functions.' + tool_call.name + ':0"
    "<|tool_call_argument_begin|>' + tool_call.arguments | tojson + '<|tool_call_end|>"
    "<|tool_calls_section_end|>' }}"
)
KIMI_K3 = (
    "{{- '<|open|>think<|sep|>' + reasoning + '<|close|>think<|sep|>' }}"
    "{{- '<|open|>response<|sep|>' + content + '<|close|>response<|sep|>' }}"
    "{%- for tool_call in tool_calls %}{{- '<|open|>tools<|sep|><|open|>call tool=\"' "
    '+ tool_call.name + \'" index="1"<|sep|>\' }}'
    "{{- '<|close|>call<|sep|><|close|>tools<|sep|>' }}"
    "{%- endfor %}"
)
DEEPSEEK_V3 = (
    "{{'<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' "
    "+ tool['function']['name'] + '\\n' + '```json' + '\\n' + tool['function']['arguments'] "
    "+ '\\n' + '```' + '<｜tool▁call▁end｜>'}}"
)
DEEPSEEK_V31 = (
    "{{'<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['function']['name'] + '<｜tool▁sep｜>' "
    "+ tool['function']['arguments'] + '<｜tool▁call▁end｜>'}}"
)
R1_THINK = (
    "{% if '</think>' in content %}{% set content = content.split('</think>')[-1] %}{% endif %}"
)
MINIMAX_M2 = chat(
    "{{- '<minimax:tool_call>\\n<invoke name=\"' + tool_call.name + '\">\\n' }}"
    "{{- '</invoke>\\n</minimax:tool_call>' }}"
)
MINIMAX_M3 = (
    "{{- ']<]minimax[>[<mm:think>' + reasoning + ']<]minimax[>[</mm:think>' }}"
    "{{- ']<]minimax[>[<tool_call>]<]minimax[>[<invoke name=\"' + name + '\">' }}"
)
GLM = chat(
    "{{- '<tool_call>' + tool_call.name }}{% for k, v in tool_call.arguments.items() %}"
    "{{- '<arg_key>' + k + '</arg_key><arg_value>' + v + '</arg_value>' }}{% endfor %}"
    "{{- '</tool_call>' }}"
)
HARMONY = (
    "{{- '<|start|>assistant<|channel|>analysis<|message|>' + thinking + '<|end|>' }}"
    "{{- '<|start|>assistant to=functions.' + name + '<|channel|>commentary json<|message|>' "
    "+ args + '<|call|>' }}"
)
MISTRAL = "{{- '[TOOL_CALLS]' + tool_calls | tojson }}{{- '[THINK]' + thinking + '[/THINK]' }}"
GEMMA4 = (
    "{{- '<|tool_call>call:' + name + '{' + args + '}<tool_call|>' }}{{- '<|channel>thought' }}"
)
LLAMA3 = (
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{{- '{\"name\": \"' + tool_call.name + '\", \"parameters\": ' + args | tojson + '}' }}"
)
LLAMA4 = (
    "{{- '<|header_start|>assistant<|header_end|>\\n\\n' }}"
    "{{- '<|python_start|>[' + calls + ']<|python_end|>' }}"
)
SEED_OSS = (
    "{{- '<seed:think>' + thinking + '</seed:think>' }}"
    "{{- '<seed:tool_call>\\n<function=' + name + '>\\n<parameter=' + k + '>' }}"
)
LFM2 = "{{- '<|tool_call_start|>[' + calls + ']<|tool_call_end|>' }}"
HUNYUAN = "{{- '<tool_calls><tool_call>' + name + '<tool_sep><arg_key>' + k + '</arg_key>' }}"
MUSE = "{{- '<atem:function_calls><atem:invoke name=\"' + name + '\">' }}{{- '</atem:invoke>' }}"
DOTS = "{{- '<dots_function_call>\\n<invoke name=\"' + name + '\">\\n' }}"
INTERNLM = "{{- '<|action_start|><|plugin|>\\n' + call | tojson + '<|action_end|>' }}"
DSML_V4 = "{{- '<｜DSML｜tool_calls><｜DSML｜invoke name=\"' + name + '\">' }}"
DSML_V32 = "{{- '<｜DSML｜function_calls><｜DSML｜invoke name=\"' + name + '\">' }}"

# template -> (vLLM tool, vLLM reasoning, SGLang tool, SGLang reasoning) on an architecture the
# table does not know: the template alone decides.
FORMATS: dict[str, tuple[str, tuple[str | None, str | None, str | None, str | None]]] = {
    "hermes_json": (HERMES, ("hermes", None, "hermes", None)),
    "hermes_json_thinking": (HERMES + THINK, ("hermes", "qwen3", "hermes", "qwen3")),
    "qwen3_coder_xml": (QWEN3_CODER, ("qwen3_coder", None, "qwen3_coder", None)),
    "kimi_k2_sections": (KIMI_K2 + THINK, ("kimi_k2", "kimi_k2", "kimi_k2", "kimi_k2")),
    "kimi_k3_xtml": (KIMI_K3, ("kimi_k3", "kimi_k3", "kimi_k3", "kimi_k3")),
    "deepseek_v3_typed": (DEEPSEEK_V3, ("deepseek_v3", None, "deepseekv3", None)),
    "deepseek_v3_typed_r1": (
        DEEPSEEK_V3 + R1_THINK,
        ("deepseek_v3", "deepseek_r1", "deepseekv3", "deepseek-r1"),
    ),
    "deepseek_v31": (
        DEEPSEEK_V31 + THINK,
        ("deepseek_v31", "deepseek_v3", "deepseekv31", "deepseek-v3"),
    ),
    "minimax_m2": (
        MINIMAX_M2 + THINK,
        ("minimax_m2", "minimax_m2", "minimax-m2", "minimax-append-think"),
    ),
    "minimax_m3": (MINIMAX_M3, ("minimax_m3", "minimax_m3", "minimax-m3", "minimax-m3")),
    "glm_arg_kv": (GLM + THINK, ("glm47", "glm45", "glm47", "glm45")),
    "harmony": (HARMONY, ("openai", "openai_gptoss", "gpt-oss", "gpt-oss")),
    "mistral": (MISTRAL, ("mistral", "mistral", "mistral", "mistral")),
    "gemma4": (GEMMA4, ("gemma4", "gemma4", "gemma4", "gemma4")),
    "llama3_json": (LLAMA3, ("llama3_json", None, "llama3", None)),
    "llama4_pythonic": (LLAMA4, ("llama4_pythonic", None, "pythonic", None)),
    "seed_oss": (SEED_OSS, ("seed_oss", "seed_oss", None, None)),
    "lfm2": (LFM2 + THINK, ("lfm2", "qwen3", "lfm2", "qwen3")),
    "hunyuan_v3": (HUNYUAN, ("hy_v3", None, "hunyuan", None)),
    "muse_atem": (MUSE, ("muse_glimmer", None, "muse", None)),
    "dots_function_call": (DOTS, ("dots", None, "dots", None)),
    "internlm_plugin": (INTERNLM + THINK, ("internlm", "deepseek_r1", "interns1", "interns1")),
    "deepseek_dsml_v4": (DSML_V4, ("deepseek_v4", None, "deepseekv4", None)),
    "deepseek_dsml_v32": (DSML_V32, ("deepseek_v32", None, "deepseekv32", None)),
}


def parsers(config: dict[str, Any], template: Any, model_id: str | None = None) -> tuple[Any, ...]:
    v = software_report(config, "vllm", model_id, chat_template=template)
    s = software_report(config, "sglang", model_id, chat_template=template)
    return (v.tool_call_parser, v.reasoning_parser, s.tool_call_parser, s.reasoning_parser)


# ---- the marker table -----------------------------------------------------------------------


def test_chat_templates_yaml_only_names_registered_parsers() -> None:
    assert templates.template_problems() == []


def test_every_format_in_the_table_is_exercised_here() -> None:
    ids = {f.id for f in templates.tool_formats()}
    assert ids <= {k.removesuffix("_thinking").removesuffix("_r1") for k in FORMATS}


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_the_template_picks_the_parser_of_its_format(name: str, offline_hub: Path) -> None:
    text, expected = FORMATS[name]
    repo = f"unseen-org/{name.replace('_', '-')}"
    hub_cache(
        offline_hub, repo, {"config.json": UNSEEN, "tokenizer_config.json": {"chat_template": text}}
    )
    loaded = load_hub(repo)
    assert loaded.chat_template is not None
    assert loaded.files[-1] == "tokenizer_config.json"
    assert parsers(loaded.config.raw, loaded.chat_template) == expected
    for engine in ("vllm", "sglang"):
        r = software_report(loaded.config.raw, engine, chat_template=loaded.chat_template)  # type: ignore[arg-type]
        assert r.template_tool_format == name.removesuffix("_thinking").removesuffix("_r1")
        if r.tool_call_parser is not None:
            assert r.tool_call_parser in adapter(engine).registries.tool_call_parsers  # type: ignore[arg-type]
            assert r.tool_call_parser_from == "template"
        if r.reasoning_parser is not None:
            assert r.reasoning_parser in adapter(engine).registries.reasoning_parsers  # type: ignore[arg-type]
        if r.tool_call_parser or r.reasoning_parser:
            assert r.family is not None  # named after the template's format, for the linter


def test_a_format_an_engine_does_not_register_says_so() -> None:
    r = software_report(UNSEEN, "sglang", chat_template=SEED_OSS)
    assert r.tool_call_parser is None
    assert [d.code for d in r.reasons if d.code.startswith("software.template.tool")] == [
        "software.template.tool_unregistered"
    ]
    assert (
        "--enable-auto-tool-choice"
        not in software_report(UNSEEN, "vllm", chat_template="no markers here").extra_flags
    )


def test_a_template_with_no_known_format_leaves_the_table_to_decide() -> None:
    qwen3 = bundled("Qwen__Qwen3-32B")
    r = software_report(qwen3, "vllm", chat_template="{{ messages }}")
    assert (r.tool_call_parser, r.reasoning_parser) == ("hermes", "qwen3")
    assert r.tool_call_parser_from == "table"
    assert "software.template.no_tool_format" in [d.code for d in r.reasons]
    unseen = software_report(UNSEEN, "vllm", chat_template="{{ messages }}")
    assert unseen.tool_call_parser is None and unseen.family is None
    assert "software.parsers_unknown" in [d.code for d in unseen.reasons]


# Every tool-call parser the vLLM recipes (vllm-project/recipes@8959cf6 models/*.yaml) and the
# SGLang cookbook (sgl-project/sgl-cookbook@7b5bd9c docs/ and its command generators) name and
# the pinned engine registers reads a format of data/chat_templates.yaml. The one left out:
# inkling (Thinking Machines' Inkling renders its own channel format; its markers were not read).
RECIPE_TOOL_PARSERS = {
    "vllm": {
        "seed_oss",
        "gemma4",
        "hermes",
        "lfm2",
        "minimax_m2",
        "minimax_m3",
        "qwen3_coder",
        "qwen3_xml",
        "mimo",
        "deepseek_v3",
        "deepseek_v31",
        "deepseek_v32",
        "deepseek_v4",
        "dots",
        "ling3",
        "internlm",
        "muse_glimmer",
        "glm47",
        "glm45",
        "mistral",
        "kimi_k2",
        "kimi_k3",
        "openai",
        "poolside_v1",
        "step3p5",
        "hy_v3",
        "llama3_json",
        "llama4_pythonic",
    },
    "sglang": {
        "qwen3_coder",
        "kimi_k2",
        "qwen",
        "minimax-m2",
        "glm47",
        "glm45",
        "llama3",
        "mistral",
        "deepseekv32",
        "deepseekv31",
        "deepseekv3",
        "gemma4",
        "gpt-oss",
        "step3p5",
        "qwen25",
        "pythonic",
        "hermes",
        "mimo",
        "interns1",
    },
}


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_every_parser_the_recipes_name_reads_a_format_of_the_table(engine: str) -> None:
    read = {p for f in templates.tool_formats() for p in f.parsers(engine)}  # type: ignore[arg-type]
    assert RECIPE_TOOL_PARSERS[engine] <= adapter(engine).registries.tool_call_parsers  # type: ignore[arg-type]
    assert RECIPE_TOOL_PARSERS[engine] - read == set()


def test_recipe_parser_names_the_pinned_engines_do_not_register_are_recorded() -> None:
    from engine.software.software_report import data_problems, unregistered_recipe_parsers

    assert data_problems() == []
    found = {(u.engine, u.kind, u.name): u.instead for u in unregistered_recipe_parsers()}
    assert found == {
        ("vllm", "reasoning", "nano_v3"): "nemotron_v3",
        ("vllm", "tool", "nemotron_json"): None,
        ("sglang", "reasoning", "glm47"): "glm45",
    }


# ---- joined with the architecture table ------------------------------------------------------


def test_qwen3_coder_writes_xml_tool_calls_so_it_gets_qwen3_coder(offline_hub: Path) -> None:
    repo = "Qwen/Qwen3-Coder-480B-A35B-Instruct"
    hub_cache(
        offline_hub,
        repo,
        {
            "config.json": newest("Qwen__Qwen3-Coder-480B-A35B-Instruct"),
            "tokenizer_config.json": {"chat_template": QWEN3_CODER, "model_max_length": 262144},
        },
    )
    st = study(make_scenario(source="hub", model=repo, gpu="H200", gpus_per_node=8))
    v, s = st.engines["vllm"].software, st.engines["sglang"].software
    assert (v.tool_call_parser, s.tool_call_parser) == ("qwen3_coder", "qwen3_coder")
    # the Qwen3 table says hermes / qwen3: the template overrides both (no thinking markers)
    assert (v.reasoning_parser, s.reasoning_parser) == (None, None)
    codes = [d.code for d in v.reasons]
    assert "software.template.tool_overrides" in codes
    assert "software.template.no_thinking" in codes
    assert v.tool_call_alternatives == ()
    plan = st.engines["vllm"].plan
    if plan is not None:
        assert any(f.flag == "--tool-call-parser" and f.value == "qwen3_coder" for f in plan.flags)
    # the recipe's command lints clean on its parser, and hermes is now the mismatch
    loaded = load_hub(repo)
    ok = lint_command(
        f"vllm serve {repo} --tensor-parallel-size 8 --enable-auto-tool-choice "
        "--tool-call-parser qwen3_coder",
        model=loaded,
        gpu="H200",
        gpus=8,
    )
    assert "tool-parser-mismatch" not in {f.code for f in ok.findings}
    wrong = lint_command(
        f"vllm serve {repo} --tensor-parallel-size 8 --enable-auto-tool-choice "
        "--tool-call-parser hermes",
        model=loaded,
        gpu="H200",
        gpus=8,
    )
    mismatch = [f for f in wrong.findings if f.code == "tool-parser-mismatch"]
    assert mismatch and "qwen3_coder" in mismatch[0].fix


def test_qwen3_coder_without_its_template_keeps_the_table_and_names_the_alternative() -> None:
    config = newest("Qwen__Qwen3-Coder-480B-A35B-Instruct")
    v = software_report(config, "vllm")
    assert v.tool_call_parser == "hermes" and v.tool_call_parser_from == "table"
    assert v.tool_call_alternatives == ("qwen3_coder",)
    assert "software.template.none" in [d.code for d in v.reasons]
    # the linter does not call the recipe's parser a mismatch when no template can settle it
    report = lint_command(
        "vllm serve org/qwen3-coder-copy --tensor-parallel-size 8 --enable-auto-tool-choice "
        "--tool-call-parser qwen3_coder",
        model=load_model(config),
        gpu="H200",
        gpus=8,
    )
    assert "tool-parser-mismatch" not in {f.code for f in report.findings}


def test_the_template_confirms_the_table_where_both_agree() -> None:
    qwen3 = bundled("Qwen__Qwen3-32B")
    r = software_report(qwen3, "sglang", chat_template=HERMES + THINK)
    assert (r.tool_call_parser, r.reasoning_parser) == ("qwen", "qwen3")
    codes = [d.code for d in r.reasons]
    assert "software.template.tool_confirmed" in codes
    assert "software.template.reasoning_confirmed" in codes


def test_deepseek_r1_is_told_apart_from_v3_by_its_template_not_its_name() -> None:
    v3 = bundled("deepseek-ai__DeepSeek-V3")
    assert parsers(v3, DEEPSEEK_V3, "some-org/renamed") == ("deepseek_v3", None, "deepseekv3", None)
    assert parsers(v3, DEEPSEEK_V3 + R1_THINK, "some-org/renamed") == (
        "deepseek_v3",
        "deepseek_r1",
        "deepseekv3",
        "deepseek-r1",
    )


def test_kimi_k2_thinking_gets_its_reasoning_parser_from_the_template() -> None:
    k2 = bundled("moonshotai__Kimi-K2-Instruct")
    assert parsers(k2, KIMI_K2) == ("kimi_k2", None, "kimi_k2", None)
    assert parsers(k2, KIMI_K2 + THINK) == ("kimi_k2", "kimi_k2", "kimi_k2", "kimi_k2")


# ---- the newest models --------------------------------------------------------------------------

# model -> (its template in its own format, and what its recipe and the cookbook name:
# vLLM tool, vLLM reasoning, SGLang tool, SGLang reasoning)
NEWEST_MODELS: dict[str, tuple[str, tuple[str | None, ...]]] = {
    # recipes moonshotai/Kimi-K2.5.yaml; sgl-cookbook Kimi-K2.5.md
    "moonshotai__Kimi-K2.5": (KIMI_K2 + THINK, ("kimi_k2", "kimi_k2", "kimi_k2", "kimi_k2")),
    # recipes moonshotai/Kimi-K3.yaml; SGLang 0.5.23 registries (no cookbook page)
    "moonshotai__Kimi-K3": (KIMI_K3, ("kimi_k3", "kimi_k3", "kimi_k3", "kimi_k3")),
    # recipes MiniMaxAI/MiniMax-M3.yaml; SGLang 0.5.23 registries (no cookbook page)
    "MiniMaxAI__MiniMax-M3": (
        MINIMAX_M3,
        ("minimax_m3", "minimax_m3", "minimax-m3", "minimax-m3"),
    ),
    # recipes stepfun-ai/Step-3.7-Flash.yaml; SGLang registries (cookbook: Step-3.5)
    "stepfun-ai__Step-3.7-Flash": (
        QWEN3_CODER + THINK,
        ("step3p5", "step3p5", "step3p5", "step3p5"),
    ),
    # recipes XiaomiMiMo/MiMo-V2-Flash.yaml; sgl-cookbook Xiaomi/MiMo-V2-Flash.md
    "XiaomiMiMo__MiMo-V2-Flash": (
        QWEN3_CODER + THINK,
        ("qwen3_xml", "qwen3", "mimo", "qwen3"),
    ),
    # recipes Qwen/Qwen3-Coder-480B-A35B-Instruct.yaml; sgl-cookbook Qwen3-Coder.md
    "Qwen__Qwen3-Coder-480B-A35B-Instruct": (
        QWEN3_CODER,
        ("qwen3_coder", None, "qwen3_coder", None),
    ),
    # recipes nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16.yaml; sgl-cookbook Nemotron3-Super.md
    "nvidia__NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16": (
        QWEN3_CODER + THINK,
        ("qwen3_coder", "nemotron_v3", "qwen3_coder", "nemotron_3"),
    ),
}


@pytest.mark.parametrize("model", sorted(NEWEST_MODELS))
def test_the_newest_models_get_the_parsers_their_recipes_name(
    model: str, offline_hub: Path
) -> None:
    text, expected = NEWEST_MODELS[model]
    repo = model.replace("__", "/", 1)
    hub_cache(offline_hub, repo, {"config.json": newest(model), "chat_template.jinja": text})
    loaded = load_hub(repo)
    assert loaded.chat_template is not None and loaded.chat_template.file == "chat_template.jinja"
    assert parsers(loaded.config.raw, loaded.chat_template, repo) == expected
    st = study(make_scenario(source="hub", model=repo, gpu="B200", gpus_per_node=8))
    got = tuple(
        x
        for e in ("vllm", "sglang")
        for x in (st.engines[e].software.tool_call_parser, st.engines[e].software.reasoning_parser)
    )
    assert got == expected


@pytest.mark.parametrize(
    "model", sorted(set(NEWEST_MODELS) - {"Qwen__Qwen3-Coder-480B-A35B-Instruct"})
)
def test_the_newest_models_without_a_template_get_them_from_the_table(model: str) -> None:
    _, expected = NEWEST_MODELS[model]
    assert parsers(newest(model), None) == expected
    for engine in ("vllm", "sglang"):
        r = software_report(newest(model), engine)  # type: ignore[arg-type]
        assert r.family is not None and r.tool_call_parser_from == "table"


# ---- the hub, offline, missing and hostile templates ---------------------------------------------


def test_offline_without_a_template_falls_back_to_the_table(offline_hub: Path) -> None:
    repo = "moonshotai/Kimi-K2.5"
    hub_cache(offline_hub, repo, {"config.json": newest("moonshotai__Kimi-K2.5")})
    loaded = load_hub(repo)
    assert loaded.chat_template is None and loaded.files == ("config.json",)
    v = software_report(loaded.config.raw, "vllm", repo, chat_template=loaded.chat_template)
    assert (v.tool_call_parser, v.tool_call_parser_from) == ("kimi_k2", "table")
    assert "software.template.none" in [d.code for d in v.reasons]


def test_a_tokenizer_config_without_a_template_is_no_template(offline_hub: Path) -> None:
    repo = "unseen-org/no-template"
    hub_cache(
        offline_hub, repo, {"config.json": UNSEEN, "tokenizer_config.json": {"eos_token": "</s>"}}
    )
    assert load_hub(repo).chat_template is None


def test_chat_template_jinja_wins_over_tokenizer_config(offline_hub: Path) -> None:
    repo = "unseen-org/two-templates"
    hub_cache(
        offline_hub,
        repo,
        {
            "config.json": UNSEEN,
            "chat_template.jinja": QWEN3_CODER,
            "tokenizer_config.json": {"chat_template": HERMES},
        },
    )
    loaded = load_hub(repo)
    assert loaded.chat_template is not None and loaded.chat_template.file == "chat_template.jinja"
    assert parsers(loaded.config.raw, loaded.chat_template)[0] == "qwen3_coder"


def test_named_templates_in_tokenizer_config_are_all_scanned(offline_hub: Path) -> None:
    repo = "unseen-org/named-templates"
    named = [
        {"name": "default", "template": "{{ messages }}"},
        {"name": "tool_use", "template": HERMES},
    ]
    hub_cache(
        offline_hub,
        repo,
        {"config.json": UNSEEN, "tokenizer_config.json": {"chat_template": named}},
    )
    assert parsers(UNSEEN, load_hub(repo).chat_template)[0] == "hermes"


def test_a_folder_with_config_and_tokenizer_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(newest("MiniMaxAI__MiniMax-M3")))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": MINIMAX_M3}))
    loaded = load_model(str(tmp_path / "config.json"))
    assert loaded.files == ("config.json", "tokenizer_config.json")
    assert parsers(loaded.config.raw, loaded.chat_template)[0] == "minimax_m3"


def test_a_huge_template_is_not_scanned_and_the_table_decides(offline_hub: Path) -> None:
    repo = "Qwen/huge-template"
    limit = templates.max_template_chars()
    huge = QWEN3_CODER + " " * limit  # a real marker, buried in more than the limit
    config = newest("Qwen__Qwen3-Coder-480B-A35B-Instruct")
    hub_cache(offline_hub, repo, {"config.json": config, "chat_template.jinja": huge})
    loaded = load_hub(repo)
    assert loaded.chat_template is not None and loaded.chat_template.text is None
    assert loaded.chat_template.chars == len(huge)
    v = software_report(config, "vllm", chat_template=loaded.chat_template)
    assert v.tool_call_parser == "hermes"  # the table's; the template was not read
    too_large = next(d for d in v.reasons if d.code == "software.template.too_large")
    assert too_large["chars"] == len(huge) and too_large["limit"] == limit
    assert f"{limit:,}" in say(too_large, "ko")


def test_a_template_file_over_the_byte_limit_is_read_no_further(
    offline_hub: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loader, "_template_limits", lambda: (4_096, templates.max_template_chars()))
    repo = "unseen-org/big-file"
    hub_cache(
        offline_hub,
        repo,
        {
            "config.json": UNSEEN,
            "tokenizer_config.json": {"chat_template": HERMES, "pad": "x" * 10_000},
        },
    )
    loaded = load_hub(repo)
    assert loaded.chat_template is not None and loaded.chat_template.text is None
    assert loaded.chat_template.chars == 4_097  # what was read: the limit and one byte more
    assert parsers(UNSEEN, loaded.chat_template) == (None, None, None, None)


HOSTILE = (
    "{{ cycler.__init__.__globals__.os.popen('touch PWNED').read() }}"
    "{% for x in ().__class__.__base__.__subclasses__() %}{% endfor %}"
    "[click](https://evil.example) <script>alert(1)</script> {{ raise_exception('no') }}"
    "{{- '<tool_call>\\n{\"name\": \"' + name + '\"}\\n</tool_call>' }}"
)


def test_a_hostile_template_is_scanned_as_text_and_never_rendered(
    offline_hub: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    jinja2 = pytest.importorskip("jinja2")

    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("a chat template was handed to Jinja")

    monkeypatch.setattr(jinja2.Environment, "from_string", refuse)
    monkeypatch.setattr(jinja2, "Template", refuse)
    monkeypatch.chdir(tmp_path)
    repo = "unseen-org/hostile"
    hub_cache(
        offline_hub,
        repo,
        {"config.json": UNSEEN, "tokenizer_config.json": {"chat_template": HOSTILE}},
    )
    loaded = load_hub(repo)
    v = software_report(loaded.config.raw, "vllm", chat_template=loaded.chat_template)
    assert v.tool_call_parser == "hermes"
    assert not (tmp_path / "PWNED").exists()
    out = json.dumps(v.to_json(), ensure_ascii=False)
    for fragment in ("popen", "evil.example", "<script>", "__subclasses__"):
        assert fragment not in out  # the template's text never reaches a reader
    for lang in ("en", "ko"):
        assert all("evil" not in say(d, lang) for d in v.reasons)


def test_non_utf8_template_bytes_are_no_template(offline_hub: Path) -> None:
    repo = "unseen-org/binary"
    hub_cache(
        offline_hub, repo, {"config.json": UNSEEN, "chat_template.jinja": b"\xff\xfe<tool_call>"}
    )
    assert load_hub(repo).chat_template is None


# ---- reasons as decisions, in both languages -----------------------------------------------


def test_every_reason_is_a_declared_decision_worded_in_both_languages() -> None:
    config = newest("Qwen__Qwen3-Coder-480B-A35B-Instruct")
    for template in (None, QWEN3_CODER, "x" * (templates.max_template_chars() + 1)):
        for engine in ("vllm", "sglang"):
            r = software_report(config, engine, chat_template=template)  # type: ignore[arg-type]
            decisions = [*r.reasons, *r.flag_decisions.values(), *r.checkpoint.details]
            for d in decisions:
                assert d.code in CODES
                assert say(d, "en") != say(d, "ko")
            assert r.notes == [say(d) for d in r.reasons]


def test_the_json_keeps_its_keys_and_adds_the_codes() -> None:
    r = software_report(newest("moonshotai__Kimi-K2.5"), "vllm", chat_template=KIMI_K2 + THINK)
    out = r.to_json()
    for key in (
        "engine",
        "tool_call_parser",
        "reasoning_parser",
        "extra_flags",
        "notes",
        "flag_reasons",
        "checkpoint",
        "sources",
    ):
        assert key in out
    assert out["flag_reasons"]["--trust-remote-code"] == say(
        r.flag_decisions["--trust-remote-code"]
    )
    assert [n["text"] for n in out["note_codes"]] == out["notes"]
    assert out["flag_reason_codes"]["--enable-auto-tool-choice"]["code"] == (
        "software.note.vllm_enable_auto_tool_choice"
    )
    assert out["parsers"]["tool_call_from"] == "template"
    assert out["parsers"]["chat_template"] == "chat template"
    json.dumps(out)


def test_the_cli_words_the_software_step_in_korean(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["software", "deepseek-ai/DeepSeek-V3", "--lang", "ko"]) == 0
    text = capsys.readouterr().out
    assert "도구 호출 파서: deepseek_v3 (아키텍처 표에서)" in text
    assert "채팅 템플릿이 없습니다" in text
    assert "First release" not in text and "Recipe-tested" not in text
    assert main(["software", "deepseek-ai/DeepSeek-V3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["notes"] and out["note_codes"][0]["code"].startswith("software.")


def test_the_software_page_words_its_reasons_and_flags_in_korean() -> None:
    from apptest_util import open_app, page_text

    text = page_text(open_app("software", {"lang": "ko"}))
    assert "채팅 템플릿이 없습니다" in text  # a template reason
    assert "레시피는 DeepSeek-V3/R1/V3.1을 0.12.0부터 검증합니다" in text  # a data note
    assert "vLLM은 --tool-call-parser 옆에 --enable-auto-tool-choice가" in text  # a flag reason
    for english in ("First release not looked up", "Recipes test DeepSeek", "only turns model"):
        assert english not in text
    assert "vLLM only turns model output" in page_text(open_app("software"))
