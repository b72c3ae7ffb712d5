"""The Korean catalog words the pages of the Measure, Learn, Hardware, Choose-a-model and
Troubleshoot steps, the shared frame and its refusals of input without an English sentence, and
the English catalog without Korean: the language check (tools/lang_check.py) over every message,
before any browser. Code spans (`…`) and parameters ({name}) are what the page shows as written."""

from __future__ import annotations

import re

import pytest

from engine.hardware.gpus import all_gpus, gpu_note
from engine.i18n import catalog
from engine.measure.backcalc import backcalculate
from engine.measure.read_back import parse_engine_text
from engine.present.measure_words import explanation
from engine.text.sources import clean
from engine.text.words import say
from tools.lang_check import english_sentences, hangul
from tools.lang_names import catalog_words

# The catalog sections these pages and the frame read (data/i18n/<lang>.yaml and the codes of
# data/i18n/<lang>/measure.yaml and gpus.yaml).
SECTIONS = (
    "app.",
    "nav.",
    "common.",
    "sidebar.",
    "error.",
    "shown.",
    "download.",
    "choose.",
    "hardware.",
    "measure.",
    "learn.",
    "troubleshoot.",
    "code.measure.",
    "code.gpu.",
    "code.learn.",
    "code.error.",
    "code.link.",
    "code.model.",
)
SHOWN_AS_WRITTEN = re.compile(r"`[^`]*`|\{\w+\}")
# The language switch names both languages (ui/lang.py): meant for readers of either.
BOTH = {"sidebar.language"}


def _messages(lang: str) -> dict[str, str]:
    words = catalog(lang)  # type: ignore[arg-type]
    return {k: SHOWN_AS_WRITTEN.sub(" ", v) for k, v in words.items() if k.startswith(SECTIONS)}


def test_the_sections_are_there() -> None:
    assert len(_messages("ko")) > 300


def test_korean_messages_have_no_english_sentence() -> None:
    names = catalog_words()
    found = {k: english_sentences(v, names) for k, v in _messages("ko").items()}
    assert {k: v for k, v in found.items() if v} == {}


def test_english_messages_have_no_korean() -> None:
    found = {k: hangul(v) for k, v in _messages("en").items() if k not in BOTH}
    assert {k: v for k, v in found.items() if v} == {}


def test_every_gpu_note_is_worded_as_the_data_says_it_in_english() -> None:
    for gpu in all_gpus():
        note = gpu_note(gpu)
        assert (note is None) == (not gpu.note), gpu.key
        if note is not None:
            assert say(note, "en") == clean(gpu.note), gpu.key
            assert not english_sentences(say(note, "ko"), catalog_words()), gpu.key


GIB = 1024**3
LOGS = {
    "agrees at TP 8": (
        "INFO non-default args: {'tensor_parallel_size': 8, 'gpu_memory_utilization': 0.85}\n"
        "INFO Available KV cache memory: 38.47 GiB\nINFO GPU KV cache size: 587,811 tokens\n",
        70_272,
        "mla",
    ),
    "off by the TP size": (
        "INFO non-default args: {'tensor_parallel_size': 8}\n"
        "INFO Available KV cache memory: 38.47 GiB\nINFO GPU KV cache size: 587,811 tokens\n",
        70_272 / 8,
        "mla",
    ),
    "a dtype mismatch": (
        "INFO non-default args: {'kv_cache_dtype': 'fp8'}\n"
        "INFO Available KV cache memory: 40.00 GiB\nINFO GPU KV cache size: 327,680 tokens\n",
        131_072 * 2,
        "gqa",
    ),
    "a hybrid's state pages": (
        "INFO non-default args: {'max_model_len': 8192}\n"
        "INFO Setting attention block size to 544 tokens to ensure that attention page size is "
        ">= mamba page size.\n"
        "INFO Available KV cache memory: 40.00 GiB\nINFO GPU KV cache size: 400,000 tokens\n",
        24_576,
        "hybrid",
    ),
    "unexplained": (
        "INFO Available KV cache memory: 40.00 GiB\nINFO GPU KV cache size: 100,000 tokens\n",
        131_072,
        "gqa",
    ),
}


@pytest.mark.parametrize("case", list(LOGS))
def test_back_calculation_findings_and_evidence_read_in_korean(case: str) -> None:
    log, predicted, family = LOGS[case]
    reading = parse_engine_text(log, None)
    result = backcalculate(
        reading, predicted, reading.tp_size or 1, family, state_bytes_per_sequence=39_518_208
    )
    assert len(result.findings) >= 2
    korean = [explanation(result, "ko"), say(result.formula, "ko")]
    korean += [SHOWN_AS_WRITTEN.sub(" ", say(e, "ko")) for e in result.evidence]
    assert all("{" not in text for text in korean)
    assert [s for text in korean for s in english_sentences(text, catalog_words())] == []
    english = [explanation(result), *(say(e) for e in result.evidence)]
    assert [h for text in english for h in hangul(text)] == []
