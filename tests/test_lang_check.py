"""The language check (tools/lang_check.py) on lines that must fail and lines that must pass: it
finds English sentences a Korean page must not show, lets names, flags, identifiers, units and
numbers through, and finds Korean on an English page."""

from __future__ import annotations

import pytest

from tools.lang_check import (
    Finding,
    check,
    english_sentences,
    hangul,
    is_english_word,
)
from tools.lang_names import FUNCTION_WORDS, catalog_words

NAMES = catalog_words()

# English a Korean page showed before this check (issue 17), and English in general.
MUST_FAIL = {
    "Agrees with the sizing model.": "Agrees with the sizing model",
    "통과 — As expected for MLA: the latent is replicated": (
        "As expected for the latent is replicated"
    ),
    "Hybrid model: the KV pool also pays for recurrent state": (
        "Hybrid model the pool also pays for recurrent state"
    ),
    "balanced (catalog) text only": "balanced catalog text only",
    "Measured 70,272 B/token per rank": "Measured per rank",
    "e.g. a shorter context": "e.g a shorter context",
    "weights per GPU, at TP 8": "weights per at",  # names between words do not interrupt
    "the model's limit": "the model's limit",
    "per-rank bytes do not shrink": "per-rank bytes do not shrink",
    "A factor of 2 is a KV dtype mismatch": "A factor of is a dtype mismatch",
    "The Korean UI Explains In English": "The Korean Explains In English",
    "레이아웃 — the layout that won": "the layout that won",
    "hopper ampere and the rest": "and the rest",
    "Hugging Face models are fetched": "models are fetched",
}

# What a Korean page shows as written: names, flags, identifiers, units, numbers, and English
# terms of two words inside Korean sentences.
MUST_PASS = [
    "통과 MLA 어텐션 백엔드 — H200 (sm_90): FlashAttention-MLA / FlashMLA (Hopper)",
    "deepseek-ai/DeepSeek-V3, 8 × NVIDIA H200 SXM 141GB × 1개 노드, 레이아웃 TP 8 + EP.",
    "--max-model-len 8192 --gpu-memory-utilization 0.9",
    "MLA · MoE 8/256 · MTP ×1",
    "70,272 B/token · 4.80 TB/s · 989 TFLOPS · 12 ms · 34.2 tok/s",
    "vLLM과 SGLang",
    "prefix cache 적중률",
    "kv_lora_rank 512 + qk_rope_head_dim 64 = 576",
    "hermes, pythonic, deepseek_v3 파서",
    "Kubernetes LeaderWorkerSet, Docker",
    "NVIDIA GeForce RTX 4090 (ada, sm_89)",
    "AMD Instinct MI300X (cdna3, gfx942)",
    "Hugging Face",
    "Qwen/Qwen3-8B · meta-llama/Llama-3.1-70B-Instruct · google/gemma-3-27b-it",
    "config.json · hf_quant_config.json · model.safetensors.index.json",
    "2^30 B = 1 GiB; 10^9 B = 1 GB",
    "FP8 E4M3 · BF16 · NVFP4 · MXFP4 · AWQ · GPTQ",
    "auto · fp8_e4m3 · bfloat16",
    "docker run (.sh) · vllm serve … · python -m sglang.launch_server …",
    "",
]


@pytest.mark.parametrize("line", list(MUST_FAIL))
def test_an_english_sentence_on_a_korean_page_is_found(line: str) -> None:
    assert english_sentences(line, NAMES) == [MUST_FAIL[line]]
    assert check([line], "ko", NAMES) == [Finding("english", MUST_FAIL[line], line)]


@pytest.mark.parametrize("line", MUST_PASS)
def test_names_flags_identifiers_units_and_numbers_pass_on_a_korean_page(line: str) -> None:
    assert english_sentences(line, NAMES) == []


def test_three_words_make_a_sentence_two_make_a_term() -> None:
    assert english_sentences("prefix cache", NAMES) == []
    assert english_sentences("prefix cache hits", NAMES) == ["prefix cache hits"]
    # Hangul interrupts: two English terms in one Korean sentence are two terms
    assert english_sentences("prefix cache를 켜면 tool calls가 나옵니다", NAMES) == []


def test_each_sentence_of_a_line_is_found_and_a_line_end_interrupts() -> None:
    line = "Runs well here. 한국어 문장입니다. And this one too."
    assert english_sentences(line, NAMES) == ["Runs well here", "And this one too"]
    assert check(["one two", "three four"], "ko") == []


def test_tokens_are_words_only_when_they_are_plain_letters() -> None:
    assert is_english_word("the")
    assert is_english_word("per-rank")
    assert is_english_word("model's")
    for name in ("vLLM", "SGLang", "GiB", "MLA", "DeepSeek", "sm_90", "--tp", "fp8", "a/b", "x"):
        assert not is_english_word(name), name
    assert not is_english_word("Hopper", NAMES) and is_english_word("Hopper")


def test_no_function_word_is_a_name_so_a_catalog_cannot_hide_a_sentence() -> None:
    assert not FUNCTION_WORDS & NAMES
    # 'it' is a part of google/gemma-3-27b-it, yet a sentence with it is still found
    assert english_sentences("it is the model", NAMES) == ["it is the model"]


def test_korean_on_an_english_page_is_found() -> None:
    assert hangul("Runs — 실행 가능 — at TP 8") == ["실행 가능"]
    assert hangul("GPU당 weights") == ["GPU당"]
    assert hangul("Runs at TP 8 (vLLM)") == []
    found = check(["Fits", "고른 레이아웃 and more"], "en")
    assert found == [Finding("hangul", "고른 레이아웃", "고른 레이아웃 and more")]


def test_a_code_span_in_a_table_cell_is_code_and_interrupts_a_sentence() -> None:
    # a dataframe cell shows no Markdown: the page marks an engine's message as code there
    cell = "RTX 4090 (sm_89): 엔진이 `No valid attention backend found`로 멈춥니다"
    assert english_sentences(cell, NAMES) == []
    assert english_sentences("`--x` and then `--y` here", NAMES) == []
    # the words around a code span still count, each side on its own
    assert english_sentences("Drop `--x` and retry it now", NAMES) == ["and retry it now"]
    assert english_sentences("the broken `word", NAMES) == ["the broken word"]  # no pair


def test_lines_meant_for_both_languages_are_allowed_by_whole_line_only() -> None:
    both = frozenset({"Language / 언어", "한국어"})
    assert check(["Language / 언어", "한국어"], "en", allowed=both) == []
    assert check(["언어"], "en", allowed=both) != []
