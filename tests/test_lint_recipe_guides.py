"""The linter on the vLLM recipes' own guide commands (tests/fixtures/vllm_recipe_guides.yaml,
written by tools/collect_recipe_guides.py: every single-node `vllm serve` command of a recipe
guide whose checkpoint, or its family, has a bundled config), each on the GPU the guide names for
it: no error and no warning, except where the finding is a real problem, listed below with its
source."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
import yaml

from engine.hardware.gpus import aliases, all_gpus
from engine.lint import LintReport, lint_command
from engine.model.loader import load_catalog
from tests.test_official_commands_fixture import OfficialCommand

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "vllm_recipe_guides.yaml"

RECIPES = "vllm-project/recipes@8959cf6"
VLLM_TABLE = (
    "data/engines/vllm-0.33.0-flags.json (vLLM 0.33.0's own parser, data/engines/SOURCES.md)"
)
NO_ENABLE_PREFIX_CACHING = (
    "vLLM 0.33.0 does not accept `--no-enable-prefix-caching`: its --enable-prefix-caching is "
    f"an EnableDisableAction whose off spelling is --disable-prefix-caching ({VLLM_TABLE}); "
    "the recipe keeps the spelling of the older releases it was run on (the InferenceX lanes "
    "it copies pin vllm-openai images up to v0.27.1)"
)
SWAP_SPACE = (
    f"`--swap-space` is not a flag of vLLM 0.33.0 ({VLLM_TABLE}): CPU swap went with the V0 "
    "engine (data/lint.yaml renamed_flags)"
)

# id -> (the non-info codes the entry shows, exactly, and why it is not clean): each a real
# problem of the recipe's command on the hardware the guide names, with its source.
EXCLUDED: dict[str, tuple[set[str], str]] = {
    "recipe-guide-glm-5-2-2-h20": (
        {"does-not-fit"},
        "the recipe's H20 is the 141 GB H20-3e ('8xH200 or 8xH20 (141 GB each)', same guide); "
        "the catalog's H20 is the 96 GB card, where GLM-5.2 FP8 at TP 8 holds 89.9 GiB of "
        "weights per GPU against 87.9 GiB usable",
    ),
    "recipe-guide-mimo-v2-flash-2-h200": (
        {"parser-without-auto-tool-choice"},
        "'With tool calling + reasoning' passes --tool-call-parser qwen3_xml without "
        "--enable-auto-tool-choice: vLLM's OpenAIServing._get_tool_parser returns no parser "
        "unless auto tool choice is on (vllm/entrypoints/openai/engine/serving.py), and "
        "render_chat_request then refuses tool_choice='auto' ('\"auto\" tool choice requires "
        "--enable-auto-tool-choice and --tool-call-parser to be set') and 'required' "
        "(chat_completion/serving.py); the recipe's features.tool_calling lacks it too",
    ),
    "recipe-guide-deepseek-v3-2-1-h100-sxm": (
        {"does-not-fit"},
        "the guide's 'Minimum 8x H100/H200 80GB GPUs (BF16)': DeepSeek-V3.2 ships FP8 weights "
        "(685B parameters, about 689 GB), 80.1 GiB per GPU at TP 8, more than an H100's whole "
        "79.6 GiB",
    ),
    "recipe-guide-deepseek-v4-flash-1-rtx-pro-6000": (
        {"dsa-kernel-sm120"},
        "DSA on sm_120 runs FlashInfer's sparse-MLA SM120 kernels; the flashinfer nightly the "
        "recipe pins (0.6.18.dev20260814) predates flashinfer-ai/flashinfer #4732 (2026-08-25, "
        "an invalid barrier arrival in the SM120 sparse-MLA prefill, 'not an sm_121 quirk') and "
        "#5048 (2026-09-09, an intermittent hang in its swapAB prefill); vllm-project/vllm "
        "#49026 reports the livelock under load (data/kernel_gates.yaml dsa.sm_120)",
    ),
    "recipe-guide-qwen3-235b-a22b-instruct-2507-1-mi300x": (
        {"unknown-flag"},
        f"{SWAP_SPACE}; {NO_ENABLE_PREFIX_CACHING}",
    ),
    "recipe-guide-qwen3-235b-a22b-instruct-2507-2-mi300x": (
        {"unknown-flag"},
        f"{SWAP_SPACE}; {NO_ENABLE_PREFIX_CACHING}",
    ),
    **{
        entry_id: ({"unknown-flag"}, NO_ENABLE_PREFIX_CACHING)
        for entry_id in (
            "recipe-guide-minimax-m3-13-mi355x",
            "recipe-guide-qwen3-next-80b-a3b-instruct-1-mi300x",
            "recipe-guide-llama-4-scout-17b-16e-instruct-1-mi300x",
            "recipe-guide-kimi-k2-5-4-mi355x",
            "recipe-guide-kimi-k2-5-5-mi355x",
            "recipe-guide-gpt-oss-120b-5-h100-sxm",
            "recipe-guide-glm-4-7-2-mi300x",
            "recipe-guide-glm-5-2-4-mi355x",
        )
    },
}

# id -> (the codes, why): findings that come from the project's data, not from the recipe. Each
# goes when its data is corrected (then this test fails and the entry moves to CLEAN).
# Where our data, not the recipe, made a command fail; each entry names its source and the test
# below fails once the data is corrected. MiniMax-M3's max_position_embeddings was one (the
# bundled copy said 1,048,576 where config.json says 524,288: corrected, data/models/SOURCES.md).
DATA_GAPS: dict[str, tuple[set[str], str]] = {}


@cache
def guides() -> tuple[OfficialCommand, ...]:
    rows = yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))
    return tuple(OfficialCommand.model_validate(r) for r in rows)


@cache
def _lint(entry_id: str) -> LintReport:
    entry = next(c for c in guides() if c.id == entry_id)
    hw = entry.hardware
    model = load_catalog(entry.bundled_model) if entry.bundled_model else None
    return lint_command(entry.command, model, hw.gpu, hw.gpus_per_node * hw.nodes)


def _problems(report: LintReport) -> list[tuple[str, str, str]]:
    return [(f.severity, f.code, f.message) for f in report.findings if f.severity != "info"]


CLEAN = [c.id for c in guides() if c.id not in EXCLUDED and c.id not in DATA_GAPS]


def _names(quote: str, gpu: str) -> bool:
    """The guide's words name the GPU: its catalog key, an alias, or its family word ("A100"
    for the A100 80GB the same guide names in full)."""
    low = quote.lower()
    spellings = (gpu, *aliases(gpu), gpu.split()[0])
    return any(s.lower() in low for s in spellings)


def test_the_fixture_holds_the_recipes_single_node_guide_commands() -> None:
    assert len(guides()) >= 94
    ids = [c.id for c in guides()]
    assert len(ids) == len(set(ids))
    assert set(EXCLUDED) | set(DATA_GAPS) <= set(ids)
    assert not set(EXCLUDED) & set(DATA_GAPS)
    keys = {g.key for g in all_gpus()}
    for c in guides():
        assert c.engine == "vllm" and "vllm serve" in c.command, c.id
        assert c.hardware.nodes == 1, c.id
        assert c.hardware.gpu in keys, c.id
        assert c.source.commit and c.source.commit in c.source.url, c.id
        # the heading, the line leading into the block or the guide's Hardware line
        assert _names(c.source.hardware_quote, c.hardware.gpu), c.id


def test_the_newest_models_guides_are_collected() -> None:
    bundled = {c.bundled_model for c in guides()}
    for model in (
        "MiniMaxAI/MiniMax-M3",
        "XiaomiMiMo/MiMo-V2-Flash",
        "stepfun-ai/Step-3.7-Flash",
        "moonshotai/Kimi-K2.5",
        "Qwen/Qwen3-Coder-480B-A35B-Instruct",
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        "openai/gpt-oss-120b",
        "openai/gpt-oss-20b",
        "deepseek-ai/DeepSeek-V4-Flash",
        "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",  # its recipe verified one GPU (B200)
    ):
        assert model in bundled, model


@pytest.mark.parametrize("entry_id", CLEAN)
def test_a_recipe_guide_command_lints_with_no_error_and_no_warning(entry_id: str) -> None:
    assert _problems(_lint(entry_id)) == []


@pytest.mark.parametrize("entry_id", sorted(EXCLUDED))
def test_an_excluded_guide_command_shows_its_real_problem_and_no_other(entry_id: str) -> None:
    codes, _why = EXCLUDED[entry_id]
    assert {code for _severity, code, _message in _problems(_lint(entry_id))} == codes


@pytest.mark.parametrize("entry_id", sorted(DATA_GAPS))
def test_a_data_gap_still_shows_until_its_data_is_corrected(entry_id: str) -> None:
    codes, _why = DATA_GAPS[entry_id]
    assert {code for _severity, code, _message in _problems(_lint(entry_id))} == codes


def test_the_glm52_fp8_kv_cache_on_hopper_is_explained_as_a_capacity_choice() -> None:
    report = _lint("recipe-guide-glm-5-2-1-h200")
    assert "kv-dtype-capacity" in {f.code for f in report.findings}
    assert "--kv-cache-dtype fp8" in report.corrected


def _codes(report: LintReport) -> dict[str, str]:
    return {f.code: f.severity for f in report.findings}


def test_a_value_from_an_unset_shell_variable_is_noted_not_refused() -> None:
    # --max-model-len "$MAX_MODEL_LEN": the shell fills it in; the linter cannot read it
    codes = _codes(_lint("recipe-guide-minimax-m3-7-mi300x"))
    assert codes.get("shell-variable") == "info"
    assert "bad-value" not in codes and "context-default-does-not-fit" not in codes


def test_a_parser_name_a_plugin_loads_is_noted_not_refused() -> None:
    entry = next(c for c in guides() if c.id.startswith("recipe-guide-nvidia-nemotron-3-nano"))
    assert "--reasoning-parser-plugin" not in entry.command  # the FP8 one has no plugin
    plugin = _lint("recipe-guide-nvidia-nemotron-3-nano-30b-a3b-bf16-2-h100-sxm")
    assert _codes(plugin).get("parser-plugin-name") == "info"
    assert "bad-choice" not in _codes(plugin)
    model = load_catalog("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    without = lint_command(
        "vllm serve nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 --reasoning-parser nano_v3",
        model,
        "H100 SXM",
        1,
    )
    assert _codes(without).get("bad-choice") == "error"


def test_a_stand_ins_context_limit_is_not_the_checkpoints_own() -> None:
    # GLM-5.2 serves "full 1M context" (its guide); GLM-5, which stands in, says 202,752
    assert _codes(_lint("recipe-guide-glm-5-2-3-mi300x")).get("context-beyond-model") == "info"
    # Kimi-K2-Thinking (INT4, 262,144 tokens per its recipe) read through Kimi-K2-Instruct (FP8)
    kimi = _codes(_lint("recipe-guide-kimi-k2-thinking-1-h200"))
    assert kimi.get("context-default-does-not-fit") == "info"
    own = lint_command(
        "vllm serve zai-org/GLM-5-FP8 --tensor-parallel-size 8 --max-model-len 524288",
        load_catalog("zai-org/GLM-5"),
        "H200",
        8,
    )
    assert _codes(own).get("context-beyond-model") == "error"
