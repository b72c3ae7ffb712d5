"""The linter speaks the reader's language (issue 17): every finding's message and fix, and every
flag's explanation, is a decision code with typed parameters, worded in English and Korean from
data/i18n/<lang>/lint.yaml; the JSON keeps its English ``message`` and ``fix`` and carries each
decision's code and parameters beside them; the CLI stays English."""

from __future__ import annotations

import json
import re

import pytest

from engine.decision import CODES, Name
from engine.i18n import catalog
from engine.launch.known_issues import known_issues
from engine.lint import LintReport, lint_command
from engine.lint.rule_data import lint_rules
from engine.present.lint_words import fix, format_report, json_report, message
from engine.text.words import say
from tests.gfm import source_constructs, text_links
from tools.lang_check import english_sentences, hangul
from tools.lang_names import catalog_words

SHOWN_AS_WRITTEN = re.compile(r"`[^`]*`|\{\w+\}")

# Commands that raise most of the linter's findings, with the hardware each is checked on.
COMMANDS: list[tuple[str, str | None, str | None, int | None]] = [
    (
        "vllm serve --tensor-parallel-size 3 --gpu-memory-utilization 0.99 --max-model-len 8192 "
        "--enable-prefix-caching",
        "deepseek-ai/DeepSeek-V3",
        "H200",
        8,
    ),
    ("vllm serve deepseek-ai/DeepSeek-V3.2 --tensor-parallel-size 8", None, "RTX 4090", 8),
    (
        "vllm serve deepseek-ai/DeepSeek-V3 -dp 16 --swap-space 4 --no-enable-prefix-caching "
        "--mem-fraction-static 0.8 --kv-cache-dtype fp4 --max-model-len 2000000 stray",
        None,
        "H100",
        8,
    ),
    (
        "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 3 "
        "--gpu-memory-utilization 1.5 --max-model-len abc --enable-auto-tool-choice "
        "--reasoning-parser deepseek-r1 "
        "--tool-call-parser hermes --tool-call-parser qwen25",
        None,
        "L40S",
        4,
    ),
    ("vllm serve deepseek-ai/DeepSeek-V3", None, "H200", 1),
    (
        "vllm serve vllm serve Qwen/Qwen3-8B --gpu-memory-utilization 1.5 --max-num-seqs abc "
        "--enforce-eager=true --config cfg.yaml --quantization \\\n",
        None,
        "H200",
        1,
    ),
    (
        "args:\n  - --model\n  - Qwen/Qwen3-8B\n  - --gpu-memory-utilization\n  - '0.9'\n",
        None,
        "H100",
        2,
    ),
    ("vllm serve openai/gpt-oss-120b", None, "H100", 1),
    (
        "vllm serve deepseek-ai/DeepSeek-V3.2 --tensor-parallel-size 8 --attention-backend "
        "FLASHMLA_SPARSE --block-size 16 --kv-cache-dtype fp8",
        None,
        "H200",
        8,
    ),
    (
        "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 2 --max-model-len "
        "131072",
        None,
        "H100",
        2,
    ),
    ("vllm serve deepseek-ai/DeepSeek-V3.2-Exp -tp 8", "Qwen/Qwen3-8B", "H200", 8),
    (
        "python3 -m sglang.launch_server --model nvidia/GLM-5.2-NVFP4 --tp-size 8 --quantization "
        "modelopt_fp4 --tool-call-parser glm47 --reasoning-parser glm45 --mem-fraction-static 0.8",
        "zai-org/GLM-5",
        "H200",
        8,
    ),
    ("vllm serve org/unknown-model --enable-auto-tool-choice --dtype fp8", None, None, None),
    (
        "DTYPE=fp8\nvllm serve Qwen/Qwen3-8B --kv-cache-dtype $DTYPE --served-model-name $NAME\n"
        "  --max-num-seqs 8",
        None,
        "H200",
        1,
    ),
]


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _reports() -> list[LintReport]:
    return [lint_command(text, model, gpu, gpus) for text, model, gpu, gpus in COMMANDS]


def _lint_messages(lang: str) -> dict[str, str]:
    words = catalog(lang)  # type: ignore[arg-type]
    return {
        k: SHOWN_AS_WRITTEN.sub(" ", v)
        for k, v in words.items()
        if k.startswith(("code.lint.", "lint_page."))
    }


def test_the_korean_lint_catalog_has_no_english_sentence() -> None:
    names = catalog_words()
    found = {k: english_sentences(v, names) for k, v in _lint_messages("ko").items()}
    assert {k: v for k, v in found.items() if v} == {}
    assert len(_lint_messages("ko")) > 200


def test_the_english_lint_catalog_has_no_korean() -> None:
    assert {k: hangul(v) for k, v in _lint_messages("en").items() if hangul(v)} == {}


def test_every_finding_code_of_the_data_is_a_lint_decision_family() -> None:
    families = {c.split(".")[1] for c in CODES if c.startswith("lint.")}
    for code in lint_rules().findings:
        assert code.replace("-", "_") in families, code


def test_every_finding_and_explanation_is_worded_in_korean_without_an_english_sentence() -> None:
    names = catalog_words()
    seen: set[str] = set()
    for report in _reports():
        for f in (*report.findings, *report.remaining):
            seen.add(f.code)
            for d in (f.what, f.remedy):
                text = say(d, "ko", markdown=False)
                assert "{" not in text, (f.code, text)  # every parameter given
                assert english_sentences(SHOWN_AS_WRITTEN.sub(" ", text), names) == [], (
                    f.code,
                    text,
                )
        for ex in (*report.explanations, *report.left_to_engine):
            for d in (ex.note, ex.why):
                if d is not None and d.code.startswith("lint."):
                    text = SHOWN_AS_WRITTEN.sub(" ", say(d, "ko", markdown=False))
                    assert english_sentences(text, names) == [], (ex.flag, text)
    # the commands above reach the families of findings this test means to cover
    assert len(seen) >= 35, sorted(seen)


def test_values_from_the_command_are_names_kept_as_written_in_both_languages() -> None:
    report = lint_command(
        "vllm serve Qwen/Qwen3-8B --tensor-parallel-size 3 --served-model-name '$(x)[y](z)'",
        None,
        "H200",
        8,
    )
    tp = next(f for f in report.findings if f.code == "tp-heads")
    assert tp.what["tp"] == 3 and tp.what["heads"] == 32
    stray = lint_command("vllm serve Qwen/Qwen3-8B '$X[y](https://e.example)'", None, "H200", 1)
    bad = next(f for f in stray.findings if f.code == "unexpected-argument")
    assert bad.what["token"] == Name("$X[y](https://e.example)")
    for lang in ("en", "ko"):
        assert "$X[y](https://e.example)" in say(bad.what, lang, markdown=False)  # type: ignore[arg-type]
        shown = say(bad.what, lang)  # type: ignore[arg-type]
        assert text_links(shown) == [] and source_constructs(shown) == []  # inert Markdown


def test_json_keeps_english_message_and_fix_and_adds_each_decision() -> None:
    report = _reports()[0]
    data = json.loads(json_report(report))
    for f, row in zip(report.findings, data["findings"], strict=True):
        assert row["message"] == say(f.what, markdown=False) == message(f)
        assert row["fix"] == say(f.remedy, markdown=False) == fix(f)
        assert row["message_code"]["code"] in CODES and row["fix_code"]["code"] in CODES
        assert set(row["message_code"]["params"]) == CODES[row["message_code"]["code"]].params
        assert {"severity", "code", "flag", "source", "edits"} <= set(row)
    assert any(row["reason_code"] for row in data["explanations"])
    tp = next(r for r in data["findings"] if r["code"] == "tp-heads")
    assert tp["message_code"]["params"] == {"tp": 3, "heads": 128}


def test_the_cli_text_stays_english() -> None:
    for report in _reports():
        assert hangul(format_report(report)) == []


def test_each_known_issue_symptom_is_worded_in_english_as_the_data_states_it() -> None:
    english = catalog("en")
    for issue in known_issues():
        if issue.lint:
            assert english[f"code.lint.known_issue.symptom.{issue.id}"] == issue.symptom
