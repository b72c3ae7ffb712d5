"""The dashboard a team shares: the verdict first with the command and its downloads, the
language switch and ?lang=ko in the link, Sources expanders, results that survive reruns, and
the note of a model that was read from the bundled copy."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, replace

import pytest
from apptest_util import assert_clean, metric_starting, open_app, state, texts
from test_app_steps import DSV3_LOG

from engine.decision import Name
from engine.model.loader import HUB_BUNDLED, HUB_UNREACHABLE, load_catalog


def test_overview_opens_with_the_verdict_then_the_command_and_its_downloads() -> None:
    at = open_app("overview")
    assert at.success[0].value.startswith("**Runs** — TP 8: 19 users fit")
    assert "One copy of the model on 8 × H200" in texts(at)
    assert at.code[0].value.startswith("vllm serve deepseek-ai/DeepSeek-V3 \\\n")
    labels = [b.label for b in at.get("download_button")]
    assert labels == [
        "Launch script (.sh)",
        "docker run (.sh)",
        "Kubernetes YAML",
        "Report (JSON)",
        "Report (Markdown)",
    ]


def test_flags_offers_the_downloads_for_both_engines() -> None:
    at = open_app("flags")
    labels = [b.label for b in at.get("download_button")]
    assert labels.count("Launch script (.sh)") == 2 and labels.count("Kubernetes YAML") == 2


def test_a_korean_link_shows_korean_and_keeps_lang_in_the_url() -> None:
    at = open_app("kv_cache", {"lang": "ko"})
    assert at.title[0].value == "2 KV 캐시"
    assert metric_starting(at, "토큰당 KV (TP 8의 GPU 한 장)") == "70,272 B"
    assert at.query_params["lang"] == "ko"
    assert "lang=ko" in texts(at)  # the share link carries it
    assert at.radio(key="w.lang").value == "ko"


def test_the_language_switch_translates_and_english_leaves_the_link_clean() -> None:
    at = open_app("overview")
    assert "lang" not in at.query_params
    at.radio(key="w.lang").set_value("ko").run()
    assert_clean(at)
    assert at.title[0].value == "서빙 플레이북"
    assert at.success[0].value.startswith("**실행 가능**")
    assert at.query_params["lang"] == "ko"
    labels = [b.label for b in at.get("download_button")]
    assert "실행 스크립트 (.sh)" in labels
    at.radio(key="w.lang").set_value("en").run()
    assert at.title[0].value == "Serving Playbook"
    assert "lang" not in at.query_params


def test_korean_gates_and_troubleshooting() -> None:
    query = {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "RTX 4090", "lang": "ko"}
    at = open_app("hardware", query)
    text = texts(at)
    assert "DSA 희소 어텐션 커널" in text and "실패" in text
    assert any("실행 불가" in e.value for e in at.error)
    at.switch_page("app_pages/troubleshoot.py").run()
    assert_clean(at)
    assert at.title[0].value == "문제 해결"
    assert "기본 비율" in texts(at)  # the percentages are explained


def test_sources_are_links_in_an_expander_not_tags_in_sentences() -> None:
    at = open_app("hardware")
    sources = [e for e in at.expander if e.label == "Sources"]
    assert sources
    body = "\n".join(m.value for m in sources[0].markdown)
    assert "(https://github.com/ai-dynamo/aiconfigurator)" in body
    assert "[V]" not in texts(at) and "IX gpu-specs.ts" not in texts(at)


@dataclass(frozen=True)
class FakeCheck:
    """A kernel check's row, without running torch (tests/test_app_steps.py runs the real ones)."""

    name: str

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "passed": True,
            "measured": 287_834_112.0,
            "expected": 287_834_112.0,
            "unit": "B",
            "check": "paged",
            "note": "",
        }

    def note_in(self, lang: str) -> str:
        return ""


def test_measure_keeps_both_results_across_reruns(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = types.ModuleType("engine.measure.kernels.runner")  # no torch import either
    runner.run_all = lambda *a, **k: [
        FakeCheck("paged_kv_bytes"),
        FakeCheck("mla_absorbed_speedup"),
    ]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "engine.measure.kernels.runner", runner)
    at = open_app("measure")
    at.text_area(key="measure.log").input(DSV3_LOG)
    at.button(key="measure.go").click().run()
    assert metric_starting(at, "Predicted") == "70,272 B"
    at.button(key="measure.kernels").click().run()
    assert_clean(at)
    assert metric_starting(at, "Predicted") == "70,272 B"  # still there
    rows = at.dataframe[-1].value
    assert "mla_absorbed_speedup" in rows["name"].tolist()
    at.radio(key="measure.device").set_value("cpu").run()  # any other rerun
    assert metric_starting(at, "Predicted") == "70,272 B" and len(at.dataframe) >= 1
    at.switch_page("app_pages/overview.py").run()
    at.switch_page("app_pages/measure.py").run()
    assert metric_starting(at, "Predicted") == "70,272 B"  # and across page switches


def test_measure_drops_results_of_another_scenario() -> None:
    at = open_app("measure")
    at.text_area(key="measure.log").input(DSV3_LOG)
    at.button(key="measure.go").click().run()
    at.selectbox(key="w.gpu").set_value("B200").run()
    assert not [m for m in at.metric if m.label.startswith("Predicted")]


def test_a_model_read_from_the_bundled_copy_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader's offline fallback for a bundled Hugging Face id (engine/model/loader.py) gives
    the model a note; every page shows it, in the reader's language."""
    bundled = load_catalog("Qwen/Qwen3-8B")
    repo = "test-org/Qwen3-8B-offline"
    note = HUB_BUNDLED(repo=Name(repo), reason=HUB_UNREACHABLE())
    noted = replace(bundled, source="hub", name=repo, note=note)
    monkeypatch.setattr("engine.study.load_hub", lambda repo: noted)
    at = open_app("overview", {"src": "hub", "model": repo, "gpus": "1"})
    assert state(at).source == "hub"
    assert any("answered from the bundled copy" in i.value for i in at.info)
    assert metric_starting(at, "KV per token (one GPU") == "147,456 B"


def test_every_message_the_app_names_is_in_both_catalogs() -> None:
    """Each literal key the pages, the sidebar and engine/present look up exists in English and
    Korean (a key built from a value, e.g. f"nav.{name}", is covered by the page tests)."""
    import re
    from pathlib import Path

    from engine.i18n import catalog

    root = Path(__file__).resolve().parent.parent
    files = [root / "app.py", *(root / "app_pages").glob("*.py"), *(root / "ui").glob("*.py")]
    files += list((root / "engine" / "present").glob("*.py"))
    literal = re.compile(r"\b[Tt]\(\s*\"([a-z_]+(?:\.[\w-]+)+)\"")
    keys = {k for f in files for k in literal.findall(f.read_text(encoding="utf-8"))}
    assert len(keys) > 200
    for lang in ("en", "ko"):
        missing = sorted(k for k in keys if k not in catalog(lang))  # type: ignore[arg-type]
        assert missing == [], (lang, missing)
