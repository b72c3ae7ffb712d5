"""The catalog's bundled chat templates (data/models/templates/, sources in data/models/SOURCES.md):
each is attached by ``load_catalog`` and by the offline hub fallback, and the parsers it yields
are the ones the official recipes and the SGLang cookbook name."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import huggingface_hub.constants as hf_constants
import pytest

from engine.cli import main
from engine.lint import lint_command
from engine.model import loader
from engine.model.loader import catalog_names, load_catalog, load_hub
from engine.scenario import make_scenario
from engine.software import templates
from engine.software.software_report import software_report
from engine.study import study
from engine.text.words import say

MODELS = Path(__file__).resolve().parent.parent / "data" / "models"
TEMPLATES = MODELS / "templates"

# catalog model -> (vLLM tool, vLLM reasoning, SGLang tool, SGLang reasoning), with the source
# that names them (None: the source names no parser of that kind)
EXPECTED: dict[str, tuple[tuple[str | None, ...], str]] = {
    "Qwen/Qwen3-Coder-480B-A35B-Instruct": (
        ("qwen3_coder", None, "qwen3_coder", None),
        "recipes Qwen/Qwen3-Coder-480B-A35B-Instruct.yaml; sgl-cookbook Qwen/Qwen3-Coder.md",
    ),
    "MiniMaxAI/MiniMax-M3": (
        ("minimax_m3", "minimax_m3", "minimax-m3", "minimax-m3"),
        "recipes MiniMaxAI/MiniMax-M3.yaml; SGLang 0.5.23 registries (no cookbook page)",
    ),
    "moonshotai/Kimi-K3": (
        ("kimi_k3", "kimi_k3", "kimi_k3", "kimi_k3"),
        "recipes moonshotai/Kimi-K3.yaml; SGLang 0.5.23 registries (no cookbook page)",
    ),
    "moonshotai/Kimi-K2-Instruct": (
        ("kimi_k2", None, "kimi_k2", None),
        "recipes moonshotai/Kimi-K2-Instruct.yaml (a non-thinking model); sgl-cookbook Kimi-K2",
    ),
    "deepseek-ai/DeepSeek-V3.1": (
        ("deepseek_v31", "deepseek_v3", "deepseekv31", "deepseek-v3"),
        "recipes deepseek-ai/DeepSeek-V3.1.yaml; SGLang docs (deepseekv31)",
    ),
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": (
        ("qwen3_coder", "nemotron_v3", "qwen3_coder", "nemotron_3"),
        "recipes nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.yaml (tool qwen3_coder; its plugin "
        "nano_v3 is registered as nemotron_v3, data/recipes.yaml parser_disagreements); "
        "sgl-cookbook Nemotron-Nano-3-30B-A3B.md (qwen3_coder / nemotron_3)",
    ),
    "openai/gpt-oss-120b": (
        ("openai", "openai_gptoss", "gpt-oss", "gpt-oss"),
        "recipes openai/gpt-oss-120b.yaml (tool openai; no reasoning flag: openai_gptoss kept, "
        "data/recipes.yaml parser_disagreements); SGLang docs (gpt-oss)",
    ),
    "meta-llama/Llama-3.3-70B-Instruct": (
        ("llama3_json", None, "llama3", None),
        "vLLM tool calling docs (llama3_json); SGLang docs (llama3: Llama 3.1 / 3.2 / 3.3)",
    ),
}


def bundled_files() -> list[Path]:
    return sorted(TEMPLATES.glob("*.jinja"))


def model_of(path: Path) -> str:
    return path.stem.replace("__", "/", 1)


def parsers(name: str) -> tuple[str | None, ...]:
    loaded = load_catalog(name)
    out: list[str | None] = []
    for engine in ("vllm", "sglang"):
        r = software_report(loaded.config.raw, engine, name, chat_template=loaded.chat_template)
        out += [r.tool_call_parser, r.reasoning_parser]
    return tuple(out)


def test_every_bundled_template_belongs_to_a_catalog_model_and_has_an_expectation() -> None:
    names = set(catalog_names())
    models = [model_of(p) for p in bundled_files()]
    assert models and all(m in names for m in models)
    assert sorted(models) == sorted(EXPECTED)


def test_every_bundled_template_is_the_file_its_sources_row_names_byte_for_byte() -> None:
    """SOURCES.md gives each template's sha256: no byte of the published text may change."""
    text = (MODELS / "SOURCES.md").read_text(encoding="utf-8")
    rows = {
        m.group(1): m.group(2)
        for m in re.finditer(r"^\| templates/(\S+\.jinja) \|.*?\| ([0-9a-f]{64}) \|", text, re.M)
    }
    assert set(rows) == {p.name for p in bundled_files()}
    for path in bundled_files():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == rows[path.name], path.name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_bundled_template_yields_the_parsers_the_recipes_name(name: str) -> None:
    expected, _source = EXPECTED[name]
    loaded = load_catalog(name)
    stem = name.replace("/", "__", 1)
    assert loaded.chat_template is not None
    assert loaded.chat_template.file == f"data/models/templates/{stem}.jinja"
    assert loaded.files == ("config.json", loaded.chat_template.file)
    assert parsers(name) == expected
    for engine in ("vllm", "sglang"):
        r = software_report(loaded.config.raw, engine, name, chat_template=loaded.chat_template)
        # the template read its tool-call format: the parser is the template's, not a guess
        assert r.tool_call_parser_from == "template"
        assert "software.template.none" not in [d.code for d in r.reasons]


def test_the_template_goes_through_the_same_reader_and_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bundled template over the byte limit is known only by its size, like any other."""
    name = "Qwen/Qwen3-Coder-480B-A35B-Instruct"
    big = tmp_path / "Qwen__Qwen3-Coder-480B-A35B-Instruct.jinja"
    big.write_bytes(b"x" * (templates.max_file_bytes() + 1))
    monkeypatch.setattr(loader, "CATALOG_TEMPLATES_DIR", tmp_path)
    monkeypatch.setattr(loader, "DATA_DIR", tmp_path.parent)
    loader.catalog_template.cache_clear()
    try:
        found = loader.catalog_template(name)
        assert found is not None and found.text is None
        assert found.chars > templates.max_file_bytes()
        v = software_report(load_catalog(name).config.raw, "vllm", name, chat_template=found)
        assert v.tool_call_parser == "hermes"  # not scanned: the architecture table stands
        assert "software.template.too_large" in [d.code for d in v.reasons]
    finally:
        loader.catalog_template.cache_clear()


def test_base_models_carry_no_template() -> None:
    for name in ("meta-llama/Llama-2-7b-hf", "Qwen/Qwen2.5-72B", "mistralai/Mixtral-8x7B-v0.1"):
        loaded = load_catalog(name)
        assert loaded.chat_template is None and loaded.files == ("config.json",)


@pytest.fixture
def offline_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(tmp_path))
    return tmp_path


def test_qwen3_coder_gets_qwen3_coder_from_the_catalog_offline(
    offline_hub: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = "Qwen/Qwen3-Coder-480B-A35B-Instruct"
    # the hub id, with nothing cached: the bundled config and template answer
    loaded = load_hub(repo)
    assert loaded.source == "catalog" and loaded.chat_template is not None
    assert "chat template" in say(loaded.note)
    for engine, tool in (("vllm", "qwen3_coder"), ("sglang", "qwen3_coder")):
        assert main(["software", repo, "--engine", engine, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert (out["tool_call_parser"], out["reasoning_parser"]) == (tool, None)
    st = study(make_scenario(source="hub", model=repo, gpu="H200", gpus_per_node=8))
    assert st.engines["vllm"].software.tool_call_parser == "qwen3_coder"
    plan = st.engines["vllm"].plan
    assert plan is not None
    assert any(f.flag == "--tool-call-parser" and f.value == "qwen3_coder" for f in plan.flags)
    assert not any(f.flag == "--reasoning-parser" for f in plan.flags)
    # the recipe's command lints clean on its parser; hermes is the mismatch
    ok = lint_command(
        f"vllm serve {repo} --tensor-parallel-size 8 --enable-auto-tool-choice "
        "--tool-call-parser qwen3_coder",
        model=load_catalog(repo),
        gpu="H200",
        gpus=8,
    )
    assert "tool-parser-mismatch" not in {f.code for f in ok.findings}
    wrong = lint_command(
        f"vllm serve {repo} --tensor-parallel-size 8 --enable-auto-tool-choice "
        "--tool-call-parser hermes",
        model=load_catalog(repo),
        gpu="H200",
        gpus=8,
    )
    assert "tool-parser-mismatch" in {f.code for f in wrong.findings}
