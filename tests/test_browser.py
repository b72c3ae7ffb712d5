"""Every page in a real browser: `streamlit run app.py` on a free port, Debian's Chromium driven
by Playwright for Python. Each page's key text and numbers in English and Korean (``PAGES_EN``,
``PAGES_KO``), no Streamlit exception box and Korean drawn with a CJK font are checked with its
language, one page load each, in tests/test_browser_lang.py. Here: that every download
yields a file whose content holds (the script passes `bash -n`, the YAML loads into the expected
kinds, the JSON equals `python -m engine study … --json`), and that an invalid paste shows its
error in the main area with no stale numbers. Saves a screenshot of each page in both languages
at 1400 px under artifacts/ (git-ignored). Run with `pytest -m browser` after
`bash tools/install_browser.sh`."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tools.app_server import app_server

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "artifacts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",  # the test runs as root in a container
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
START_TIMEOUT_S = 60
RUN_OVER = (
    "() => !document.querySelector("
    '\'[data-testid="stStatusWidget"] [data-testid="stStatusWidgetRunningIcon"]\')'
)
# Lazily loaded elements (tables, charts) show a skeleton until their code has arrived.
ALL_DRAWN = (
    "(charts) => !document.querySelector('[data-testid^=\"stSkeleton\"]')"
    " && document.querySelectorAll('[data-testid=\"stPlotlyChart\"] .main-svg').length >= charts"
)
# 1400 px wide (the width); tall, so a screenshot shows most of a page: Streamlit scrolls
# inside its own container, which full-page screenshots do not unroll.
VIEWPORT = {"width": 1400, "height": 2600}
PAGE_TIMEOUT_MS = 90_000

# page -> (text that proves it rendered its real content for the default model, plotly charts
# it draws). The URL is /<page>, except the default page (Overview), which Streamlit serves at /.
PAGES_EN = {
    "overview": (["Serving Playbook", "70,272 B", "MLA · MoE 8/256 · MTP ×1", "Runs"], 0),
    "choose_model": (["Choose a model", "Use this model"], 0),
    "family": (["1 Family", "Evidence", "61 layers: 61 MLA; FFN: 3 dense FFN, 58 MoE"], 1),
    "kv_cache": (["2 KV cache", "70,272 B", "562,176 B", "vLLM and SGLang"], 3),
    "hardware": (["3 Hardware", "140.40 GiB", "Gates"], 0),
    "software": (["4 Software", "deepseek_v3"], 0),
    "flags": (["5 Flags", "--tensor-parallel-size 8", "Layouts compared"], 0),
    "lint": (["Lint a command", "vllm serve"], 0),
    "measure": (["6 Measure", "A minimal first launch", "Micro-kernels"], 0),
    "troubleshoot": (["Troubleshoot", "What do you see?"], 0),
    "learn": (["Learn", "MLA weight absorption, step by step", "ridge"], 2),
}
# The same pages in Korean (?lang=ko): their titles and a Korean text each draws.
PAGES_KO = {
    "overview": ["서빙 플레이북", "70,272 B", "실행 가능", "고른 레이아웃"],
    "choose_model": ["모델 고르기", "이 모델 쓰기"],
    "family": ["1 계열", "근거", "레이어 구성"],
    "kv_cache": ["2 KV 캐시", "70,272 B", "vLLM과 SGLang"],
    "hardware": ["3 하드웨어", "140.40 GiB", "게이트"],
    "software": ["4 소프트웨어", "deepseek_v3", "도구 호출 파서"],
    "flags": ["5 플래그", "--tensor-parallel-size 8", "비교한 레이아웃"],
    "lint": ["명령 점검", "vllm serve"],
    "measure": ["6 실측", "최소한의 첫 실행"],
    "troubleshoot": ["문제 해결", "어떤 증상이 보이나요?"],
    "learn": ["배우기", "MLA 가중치 흡수, 단계별로"],
}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    try:
        with app_server(START_TIMEOUT_S) as base:
            yield base
    except RuntimeError as err:  # it did not start: say why, with its output
        pytest.fail(str(err))


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not CHROMIUM.exists():
        pytest.fail("Chromium is missing: run `bash tools/install_browser.sh` (make browser does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


def _open(browser: object, url: str) -> object:
    page = browser.new_page(viewport=VIEWPORT)  # type: ignore[attr-defined]
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.goto(url)
    page.wait_for_selector('[data-testid="stAppViewContainer"]')
    return page


def _settle(page: object, must_see: list[str], charts: int = 0) -> None:
    for text in must_see:
        page.get_by_text(text, exact=False).first.wait_for(state="visible")  # type: ignore[attr-defined]
    # the run is over when Streamlit's "running" status widget is gone
    page.wait_for_function(RUN_OVER)  # type: ignore[attr-defined]
    page.wait_for_function(ALL_DRAWN, arg=charts)  # type: ignore[attr-defined]
    page.wait_for_timeout(300)  # type: ignore[attr-defined]  # let plotly finish its transition


def _url(server: str, name: str, query: str = "") -> str:
    path = "" if name == "overview" else name
    return f"{server}/{path}" + (f"?{query}" if query else "")


def _no_exception(page: object) -> None:
    boxes = page.locator('[data-testid="stException"]')  # type: ignore[attr-defined]
    assert boxes.count() == 0, boxes.first.inner_text()
    dialogs = page.locator('[role="dialog"]')  # type: ignore[attr-defined]  # e.g. "Page not found"
    assert dialogs.count() == 0, dialogs.first.inner_text()


# A metric's value is drawn on one line and cut with an ellipsis when its column is too narrow.
METRICS_CUT = """() => [...document.querySelectorAll('[data-testid="stMetricValue"]')]
  .filter(m => [m, ...m.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth + 1))
  .map(m => m.textContent)"""


def _no_metric_cut(page: object) -> None:
    cut = page.evaluate(METRICS_CUT)  # type: ignore[attr-defined]
    assert cut == [], f"metric values cut short: {cut}"


def _shot(page: object, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)  # type: ignore[attr-defined]


# The font Chromium actually drew a node's text with (not what CSS asks for): DevTools' own
# record of the platform fonts used, with the number of glyphs each drew.
def _platform_fonts(page: object, selector: str) -> list[dict[str, object]]:
    cdp = page.context.new_cdp_session(page)  # type: ignore[attr-defined]
    try:
        cdp.send("DOM.enable")
        cdp.send("CSS.enable")
        root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
        node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
        assert node, selector
        fonts: list[dict[str, object]] = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})[
            "fonts"
        ]
        return fonts
    finally:
        cdp.detach()


def test_a_shared_link_reproduces_the_view(server: str, browser: object) -> None:
    query = "model=meta-llama%2FMeta-Llama-3.1-8B&gpu=H200&gpus=1&tp=1&kv=fp8&ctx=8192"
    page = _open(browser, _url(server, "kv_cache", query))
    try:
        _settle(page, ["65,536 B", "Meta-Llama-3.1-8B"], 3)
        _no_exception(page)
        page.screenshot(path=str(ARTIFACTS / "link-llama-fp8.png"), full_page=True)  # type: ignore[attr-defined]
        assert "kv=fp8" in page.url and "tp=1" in page.url  # type: ignore[attr-defined]
    finally:
        page.close()  # type: ignore[attr-defined]


def test_a_tampered_link_warns_and_falls_back(server: str, browser: object) -> None:
    page = _open(browser, _url(server, "overview", "tp=abc&gpu=NOPE"))
    try:
        _settle(page, ["Link parameter tp='abc' is not valid", "70,272 B"])
        _no_exception(page)
    finally:
        page.close()  # type: ignore[attr-defined]


def test_navigation_keeps_the_state_in_the_url(server: str, browser: object) -> None:
    page = _open(browser, _url(server, "overview", "model=Qwen%2FQwen3-8B&gpus=1&tp=1"))
    try:
        _settle(page, ["Qwen/Qwen3-8B"])
        page.get_by_role("link", name="2 KV cache").first.click()  # type: ignore[attr-defined]
        _settle(page, ["By layer group"])
        page.wait_for_url("**/kv_cache?*model=Qwen*")  # type: ignore[attr-defined]
        _no_exception(page)
        assert "Qwen/Qwen3-8B" in page.inner_text("body")  # type: ignore[attr-defined]
    finally:
        page.close()  # type: ignore[attr-defined]


def _cli_study_json(args: list[str]) -> object:
    """What `python -m engine study … --json` prints, run as a user would run it."""
    done = subprocess.run(
        [sys.executable, "-m", "engine", "study", *args, "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=120,
    )
    return json.loads(done.stdout)


def _download(page: object, label: str, dest: Path) -> str:
    """Click the download button ``label`` (in the main area) and return the file's text."""
    button = page.locator('[data-testid="stMain"] [data-testid="stDownloadButton"]').filter(  # type: ignore[attr-defined]
        has_text=label
    )
    with page.expect_download() as info:  # type: ignore[attr-defined]
        button.first.click()
    download = info.value
    target = dest / download.suggested_filename
    download.save_as(str(target))
    return target.read_text(encoding="utf-8")


def _bash_n(text: str) -> None:
    bash = shutil.which("bash")
    assert bash is not None
    done = subprocess.run([bash, "-n"], input=text, text=True, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr


# The default view (one node) and a two-node copy (one command per node).
DOWNLOAD_VIEWS = {
    "one-node": (
        "",
        ["deepseek-ai/DeepSeek-V3"],
        ["Deployment", "Service"],
    ),
    "two-nodes": (
        "model=deepseek-ai%2FDeepSeek-V3&gpu=H100&nodes=2&engine=sglang",
        ["deepseek-ai/DeepSeek-V3", "--gpu", "H100", "--nodes", "2", "--engine", "sglang"],
        ["LeaderWorkerSet", "Service"],
    ),
}


@pytest.mark.parametrize("view", list(DOWNLOAD_VIEWS))
def test_every_download_yields_a_file_that_holds(
    server: str, browser: object, view: str, tmp_path: Path
) -> None:
    query, cli_args, kinds = DOWNLOAD_VIEWS[view]
    page = _open(browser, _url(server, "overview", query))
    try:
        _settle(page, ["Launch script (.sh)", "Report (Markdown)"])
        _no_exception(page)
        script = _download(page, "Launch script (.sh)", tmp_path)
        assert script.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in script
        _bash_n(script)
        docker = _download(page, "docker run (.sh)", tmp_path)
        _bash_n(docker)
        manifests = _download(page, "Kubernetes YAML", tmp_path)
        assert [d["kind"] for d in yaml.safe_load_all(manifests)][:2] == kinds
        report = json.loads(_download(page, "Report (JSON)", tmp_path))
        assert report == _cli_study_json(cli_args)
        markdown = _download(page, "Report (Markdown)", tmp_path)
        assert markdown.startswith("# Serving Playbook report: deepseek-ai/DeepSeek-V3")
        assert "**Runs**" in markdown and "```bash" in markdown
        assert f"<{server}/" in markdown  # the share link, with this server's address
        if view == "two-nodes":
            plan = report["plans"]["sglang"]
            assert len(plan["commands"]) == 2
            assert 'case "$NODE" in' in script
            for command in plan["commands"]:  # one command per node, as the JSON has them
                assert shlex.join(command["argv"][:3]) in script.replace(" \\\n      ", " ")
    finally:
        page.close()  # type: ignore[attr-defined]


def test_an_invalid_paste_shows_the_error_in_the_main_area_and_no_stale_numbers(
    server: str, browser: object
) -> None:
    page = _open(browser, _url(server, "overview"))
    try:
        _settle(page, ["70,272 B"])
        page.get_by_text("Paste JSON", exact=True).click()  # type: ignore[attr-defined]
        area = page.locator('[data-testid="stSidebar"] textarea')  # type: ignore[attr-defined]
        area.wait_for(state="visible")
        area.fill('{\n  "hidden_size": 4096,\n  oops: 1\n}')
        area.press("Control+Enter")  # commit the text before the button reads it
        page.get_by_role("button", name="Load pasted JSON").click()  # type: ignore[attr-defined]
        main = page.locator('[data-testid="stMain"]')  # type: ignore[attr-defined]
        main.get_by_text("Invalid JSON at line 3, column 3").first.wait_for(state="visible")
        page.wait_for_function(RUN_OVER)  # type: ignore[attr-defined]
        sidebar = page.locator('[data-testid="stSidebar"]')  # type: ignore[attr-defined]
        # said once, on the page; the sidebar shows that nothing is shown, not the old model
        assert sidebar.get_by_text("Invalid JSON at line 3, column 3").count() == 0
        assert main.get_by_text("Invalid JSON at line 3, column 3").count() == 1
        assert "Nothing is shown" in sidebar.inner_text()
        assert "Showing" not in sidebar.inner_text()
        assert main.locator('[data-testid="stMetric"]').count() == 0
        assert "70,272 B" not in main.inner_text()
        _no_exception(page)
        _shot(page, "invalid-paste-en")
    finally:
        page.close()  # type: ignore[attr-defined]


def test_the_language_switch_translates_the_page_and_the_link(server: str, browser: object) -> None:
    page = _open(browser, _url(server, "kv_cache"))
    try:
        _settle(page, ["2 KV cache"], 3)
        page.get_by_text("한국어", exact=True).click()  # type: ignore[attr-defined]
        _settle(page, ["2 KV 캐시", "레이어 그룹별"], 3)
        page.wait_for_url("**/kv_cache?*lang=ko*")  # type: ignore[attr-defined]
        _no_exception(page)
    finally:
        page.close()  # type: ignore[attr-defined]


# Each table's key columns: (page, the table's key, the headers a reader decides on, in order,
# then the header of the column after them, which must show too, so theirs are wholly in view).
# A header is a message key, or "=text" for a header that is the text itself.
KEY_COLUMNS = {
    "flags": (
        "flags.compared",
        [
            "flags.col.layout",
            "flags.col.users",
            "flags.col.tpot",
            "flags.col.ttft",
            "flags.col.tps",
            "flags.col.why_not",
        ],
        None,
    ),
    "choose_model": (
        "choose.table",
        ["choose.col.model", "choose.col.weights", "choose.col.kv_token", "choose.col.kv_32k"],
        "choose.col.kv_token_32k",
    ),
    "kv_cache": ("kv.memory", ["kv.col.part", "kv.col.formula"], "kv.col.gib"),
    "software": ("software.flags.vllm", ["software.col.flag", "software.col.reason"], None),
    # the first table of Flags: why each flag is there, its reasons whole (not cut at the edge)
    "flags#why": (
        "flags.flags.vllm",
        ["flags.col.flag", "flags.col.value", "flags.col.reason"],
        None,
    ),
    "lint": (
        "lint.findings",
        ["lint_page.col.severity", "lint_page.col.code", "lint_page.col.fix"],
        "lint_page.col.message",
    ),
}
LINTED = "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 3 --max-model-len 999999"


def _header(name: str, lang: str) -> str:
    from engine.i18n import t

    return name[1:] if name.startswith("=") else t(name, lang)  # type: ignore[arg-type]


# The headers each Streamlit dataframe draws: glide-data-grid keeps an accessible table of the
# columns it renders, which are the columns in view (it renders no column scrolled away).
VISIBLE_HEADERS = """() => [
  ...document.querySelectorAll('[data-testid="stMain"] [data-testid="stDataFrame"]')
].map(df => {
    const r = df.getBoundingClientRect();
    const cells = [...df.querySelectorAll('[role="columnheader"]')];
    const heads = cells.map(h => h.textContent.trim());
    const rights = cells.map(h => h.getBoundingClientRect().right);
    return {heads, rights, left: r.left, right: r.right, width: window.innerWidth};
  })"""


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("path", list(KEY_COLUMNS))
def test_every_tables_key_columns_are_in_view_at_1400_px(
    server: str, browser: object, path: str, lang: str
) -> None:
    _, wanted, after = KEY_COLUMNS[path]
    name = path.split("#")[0]
    page = _open(browser, _url(server, name, "lang=ko" if lang == "ko" else ""))
    try:
        _settle(page, [], PAGES_EN[name][1])
        if path == "lint":
            area = page.locator('[data-testid="stMain"] textarea').first  # type: ignore[attr-defined]
            area.fill(LINTED)
            area.press("Control+Enter")
            from engine.i18n import t

            page.get_by_role("button", name=t("lint_page.go", lang)).click()  # type: ignore[arg-type, attr-defined]
        expected = [_header(w, lang) for w in wanted]
        page.wait_for_function(RUN_OVER)  # type: ignore[attr-defined]
        page.wait_for_function(  # type: ignore[attr-defined]
            f"() => ({VISIBLE_HEADERS})().some(t => t.heads[0] === {json.dumps(expected[0])})"
        )
        page.wait_for_timeout(500)  # type: ignore[attr-defined]  # the grid draws its columns
        tables = page.evaluate(VISIBLE_HEADERS)  # type: ignore[attr-defined]
        # the table is the one that starts with its first key column (each page has one)
        seen = next(t for t in tables if t["heads"][:1] == expected[:1])
        heads = seen["heads"]
        assert heads[: len(expected)] == expected, heads  # first, in this order
        for head, right in zip(heads[: len(expected)], seen["rights"], strict=False):
            assert right <= seen["right"] + 1, (head, right, seen["right"])  # wholly in view
        if after is not None:  # the next column shows too: the key columns are wholly in view
            assert _header(after, lang) in heads, heads
        assert seen["left"] >= 0 and seen["right"] <= seen["width"], seen  # the table itself
        _shot(page, f"columns-{path.replace('#', '-')}-{lang}")
    finally:
        page.close()  # type: ignore[attr-defined]


# Every plotly chart's axis types, ranges (log10 on a log axis) and its traces' data, read from
# the figure the browser drew.
CHART_AXES = """() => [
  ...document.querySelectorAll(
    '[data-testid="stMain"] [data-testid="stPlotlyChart"] .js-plotly-plot')
].map(gd => ({
    x: gd._fullLayout.xaxis.range, y: gd._fullLayout.yaxis.range,
    xtype: gd._fullLayout.xaxis.type, ytype: gd._fullLayout.yaxis.type,
    xs: gd.data.flatMap(t => t.x || []), ys: gd.data.flatMap(t => t.y || []),
    names: gd.data.map(t => t.name),
  }))"""


def _inside_data(axis: list[float], values: list[float]) -> None:
    """A log axis' range (log10) within the data's own range, by at most 10 × on each side."""
    low, high = 10 ** axis[0], 10 ** axis[1]
    assert min(values) / 10 <= low <= min(values), (low, min(values))
    assert max(values) <= high <= max(values) * 10, (high, max(values))


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("mode", ["latency", "balanced", "throughput"])
def test_the_speed_charts_axes_stay_within_the_data(
    server: str, browser: object, mode: str, lang: str
) -> None:
    query = f"model=deepseek-ai/DeepSeek-V3&users=64&tpot=30&latency={mode}&lang={lang}"
    page = _open(browser, _url(server, "flags", query))
    try:
        _settle(page, [], 1)
        charts = page.evaluate(CHART_AXES)  # type: ignore[attr-defined]
        assert len(charts) == 1, charts  # Flags draws the speed chart alone
        (chart,) = charts
        assert chart["xtype"] == chart["ytype"] == "log"
        xs = [x for x in chart["xs"] if x and x > 0]
        ys = [y for y in chart["ys"] if y and y > 0]
        assert xs and ys and len(chart["names"]) >= 1
        _inside_data(chart["x"], xs)
        _inside_data(chart["y"], ys)
        _shot(page, f"speed-chart-{mode}-{lang}")
    finally:
        page.close()  # type: ignore[attr-defined]
