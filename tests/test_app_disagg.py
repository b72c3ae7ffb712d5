"""The disaggregated candidate on Overview and Flags, in both languages (AppTest)."""

from __future__ import annotations

import pytest

from tests.apptest_util import metrics, open_app, texts

QUERY = {"model": "Qwen/Qwen3-32B", "gpu": "H200", "isl": "8192", "osl": "256", "ctx": "8448",
         "ttft": "1500", "tpot": "20", "rate": "8"}  # fmt: skip
TITLE = {"en": "Disaggregated prefill and decode", "ko": "프리필·디코드 분리"}
TRANSFER = {"en": "KV transfer per request", "ko": "요청당 KV 전송"}


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("page", ["overview", "flags"])
def test_the_pools_are_shown_beside_the_aggregated_pick(page: str, lang: str) -> None:
    at = open_app(page, {**QUERY, "lang": lang})
    assert TITLE[lang] in texts(at)
    shown = metrics(at)
    assert shown[TRANSFER[lang]].endswith("ms")
    assert any(v.startswith("16 ") for v in shown.values())  # 16 GPUs against 20 aggregated
    assert len(at.get("plotly_chart")) >= 1


def test_without_a_request_rate_there_is_no_disaggregated_section() -> None:
    at = open_app("overview", {"model": "Qwen/Qwen3-32B", "gpu": "H200"})
    assert TITLE["en"] not in texts(at)
