"""The linter on the official launch commands of tests/fixtures/official_commands.yaml (copied from
the vLLM recipes and docs, the SGLang docs and cookbook), each on the hardware its source names:
no error and no warning, except where the command really contains something the pinned engine
refuses (or a source typo the shell trips on), listed below with the reason."""

from __future__ import annotations

from functools import cache

import pytest

from engine.lint import LintReport, lint_command
from engine.model.loader import load_catalog
from tests.test_official_commands_fixture import OfficialCommand, commands

# id -> (the codes the entry must show, why it is left out of the zero-error assertion)
EXCLUDED: dict[str, tuple[set[str], str]] = {
    "vllm-deepseek-v32-tp8-h20-moe-deepgemm-off": (
        {"repeated-subcommand"},
        "source typo `vllm serve serve`: vLLM takes `serve` as the model and refuses the real "
        "one ('unrecognized arguments')",
    ),
    "vllm-deepseek-r1-fp4-tp4-ep-b200": (
        {"detached-flag"},
        "source typo: a missing `\\` leaves --enable_expert_parallel on a line of its own, so "
        "the server starts without EP and the shell then fails on the flag",
    ),
    "vllm-deepseek-r1-tp8-aiter-mi300x": (
        {"unknown-flag"},
        "vLLM 0.33.0 has no --max_seq_len_to_capture and no --no-enable-prefix-caching",
    ),
    "vllm-gpt-oss-120b-tp8-h100-eval": (
        {"unknown-flag"},
        "vLLM 0.33.0 has no --no-enable-prefix-caching (it is --disable-prefix-caching)",
    ),
    "vllm-qwen3-next-mtp-tp4-h200": (
        {"unknown-flag"},
        "vLLM 0.33.0 has no --no-enable-chunked-prefill (it is --disable-chunked-prefill)",
    ),
    "vllm-qwen3-235b-a22b-tp4-aiter-mi300x": (
        {"unknown-flag"},
        "vLLM 0.33.0 has no --swap-space and no --no-enable-prefix-caching",
    ),
    "vllm-qwen3-235b-a22b-tp8-ep-mi355x": (
        {"unknown-flag"},
        "vLLM 0.33.0 has no --no-enable-prefix-caching",
    ),
    "vllm-llama33-70b-fp8-kv-tp1-mi355x": (
        {"unknown-flag"},
        "vLLM 0.33.0 has no --no-enable-prefix-caching",
    ),
    "vllm-llama31-70b-instruct-api-server-tp4-h100": (
        {"unknown-flag"},
        "vLLM 0.33.0 has no --num-scheduler-steps (multi-step scheduling left with the V0 "
        "engine); `--tensor 4` is not a vLLM spelling either",
    ),
    "vllm-llama31-8b-instruct-api-server-a100": (
        {"unknown-flag"},
        "vLLM 0.33.0 has no --num-scheduler-steps",
    ),
    **{
        f"vllm-deepseek-v4-flash-pd-nixl-{role}-dp4-h200": (
            {"unknown-flag"},
            "vLLM 0.33.0 has no --no-disable-hybrid-kv-cache-manager (its EnableDisableAction "
            "spells it --enable-hybrid-kv-cache-manager); the recipe's image is v0.25.0",
        )
        for role in ("prefill", "decode")
    },
    "sglang-glm5-bf16-tp8-tilelang-mi300x": (
        {"unknown-flag", "does-not-fit"},
        "SGLang 0.5.23 has no --nsa-prefill-backend / --nsa-decode-backend (they are "
        "--dsa-*-backend); GLM-5 in BF16 is also larger than 8 × MI300X at 0.80",
    ),
    "sglang-glm47-tool-call-tp8-mi300x": (
        {"bad-choice"},
        "SGLang 0.5.23 registers no glm47 reasoning parser (GLM uses glm45)",
    ),
    "sglang-qwen3-vl-235b-fp8-tp8-ep8-h100": (
        {"unknown-flag"},
        "SGLang 0.5.23 has no --keep-mm-feature-on-device",
    ),
    "sglang-nemotron3-nano-bf16-nano-v3-b200": (
        {"bad-choice"},
        "SGLang 0.5.23 registers no nano_v3 reasoning parser (it is nemotron_3)",
    ),
}


@cache
def _lint(entry_id: str) -> LintReport:
    entry = next(c for c in commands() if c.id == entry_id)
    return _lint_entry(entry, entry.command)


def _lint_entry(entry: OfficialCommand, text: str) -> LintReport:
    hw = entry.hardware
    model = load_catalog(entry.bundled_model) if entry.bundled_model else None
    return lint_command(text, model, hw.gpu, hw.gpus_per_node * hw.nodes)


def _problems(report: LintReport) -> list[tuple[str, str, str]]:
    return [(f.severity, f.code, f.message) for f in report.findings if f.severity != "info"]


CLEAN = [c.id for c in commands() if c.id not in EXCLUDED]


def test_at_least_25_official_commands_are_asserted_clean() -> None:
    assert len(CLEAN) >= 25
    assert set(EXCLUDED) <= {c.id for c in commands()}


@pytest.mark.parametrize("entry_id", CLEAN)
def test_official_command_has_no_error_and_no_warning(entry_id: str) -> None:
    assert _problems(_lint(entry_id)) == []


@pytest.mark.parametrize("entry_id", sorted(EXCLUDED))
def test_excluded_official_command_shows_what_excludes_it(entry_id: str) -> None:
    codes, _why = EXCLUDED[entry_id]
    report = _lint(entry_id)
    assert codes <= {f.code for f in report.findings if f.severity != "info"}


# GLM-5 BF16 does not fit 8 x MI300X: no flag edit fixes that, so its corrected command is not clean
FIXABLE = sorted(set(EXCLUDED) - {"sglang-glm5-bf16-tp8-tilelang-mi300x"})


@pytest.mark.parametrize("entry_id", FIXABLE)
def test_the_corrected_command_of_an_excluded_entry_lints_clean(entry_id: str) -> None:
    entry = next(c for c in commands() if c.id == entry_id)
    corrected = _lint(entry_id).corrected
    assert _problems(_lint_entry(entry, corrected)) == [], corrected


def test_the_v4_pd_commands_keep_the_recipes_base_arguments_when_corrected() -> None:
    for role in ("prefill", "decode"):
        corrected = _lint(f"vllm-deepseek-v4-flash-pd-nixl-{role}-dp4-h200").corrected
        for words in ("--block-size 256", "--kv-cache-dtype fp8", "--trust-remote-code"):
            assert words in corrected, (role, words)
        # the --no- spelling becomes the same setting's accepted one, not its opposite
        assert "--enable-hybrid-kv-cache-manager" in corrected
        assert "--disable-hybrid-kv-cache-manager" not in corrected


def test_every_official_command_reads_its_own_engine_and_model() -> None:
    for c in commands():
        report = _lint(c.id)
        assert report.engine == c.engine, c.id
        assert report.model is not None, c.id
