"""One unit convention on every page: memory in GiB with the bytes on hover, GB only where a vendor
states it and labelled so; and no page shows the fact base's tags or internal paths."""

from __future__ import annotations

import pytest
from apptest_util import PAGES, open_app, page_text

from engine.text.sources import has_internal_marks
from engine.text.units import gib, nbytes, tokens, unit_problems, vendor_gb


def test_gib_is_two_to_the_thirty_bytes() -> None:
    assert gib(2**30) == "1.00 GiB"
    assert gib(150_754_820_096) == "140.40 GiB"
    assert gib(85_139_939_726, 1) == "79.3 GiB"
    assert nbytes(70_272) == "70,272 B" and nbytes(2.5) == "2.50 B"
    assert tokens(163_840) == "160K" and tokens(1 << 20) == "1M" and tokens(1000) == "1,000"
    assert vendor_gb(141, "GB") == "141 GB"


@pytest.mark.parametrize(
    "text",
    [
        "weights 79.3 GiB + 2.14 GiB for one request",
        "Memory (vendor datasheet): 141 GB HBM3e",
        "the vendor states 141 GB; the device reports 140.40 GiB",
        "NVLink 4 (900 GB/s bidirectional); 4.80 TB/s",
        "A100 80GB PCIe",  # a product name, not a figure
        "제조사 표기 141 GB",
    ],
)
def test_these_keep_the_convention(text: str) -> None:
    assert unit_problems(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "141 GB - 27 GB of weights = 114 GB left",
        "Memory of one GPU: 150.8 GB (hover for GiB)",
        "weights 79.3 GiB in 141 GB",
    ],
)
def test_these_break_it(text: str) -> None:
    assert unit_problems(text) != []


# One scenario per language, chosen to draw the most text: a blocked DSA model on a consumer GPU
# in English, a multi-node MLA MoE in Korean, an MXFP4 MoE on Ampere in English.
VIEWS = {
    "en-dsa-4090": {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "RTX 4090"},
    "ko-dsv3-2-nodes": {
        "model": "deepseek-ai/DeepSeek-V3",
        "gpu": "H100",
        "nodes": "2",
        "lang": "ko",
    },
    "en-gpt-oss-a100": {"model": "openai/gpt-oss-120b", "gpu": "A100 80GB", "gpus": "2"},
    "ko-hybrid": {"model": "Qwen/Qwen3-Next-80B-A3B-Thinking", "gpu": "B200", "lang": "ko"},
}


@pytest.mark.parametrize("view", list(VIEWS))
def test_every_page_keeps_one_unit_convention_and_shows_no_internal_marks(view: str) -> None:
    at = open_app(None, VIEWS[view])
    for page in PAGES:
        at.switch_page(f"app_pages/{page}.py").run()
        assert not at.exception, (page, [e.value for e in at.exception])
        text = page_text(at)
        assert unit_problems(text) == [], (page, unit_problems(text))
        marked = [line for line in text.splitlines() if has_internal_marks(line)]
        assert marked == [], (page, marked)
        cells = [v for d in at.dataframe for v in d.value.to_numpy().ravel()]
        assert "None" not in cells  # a missing value shows as "—" (the tables' placeholder)
