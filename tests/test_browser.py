"""Every page in a real browser: `streamlit run app.py` on a free port, Debian's Chromium driven
by Playwright for Python. Checks key text and numbers, no Streamlit exception box, and saves a
screenshot of each page under artifacts/ (git-ignored). Run with `pytest -m browser` after
`bash tools/install_browser.sh`."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

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
# Tall, so a screenshot shows most of a page: Streamlit scrolls inside its own container,
# which full-page screenshots do not unroll.
VIEWPORT = {"width": 1440, "height": 2600}
PAGE_TIMEOUT_MS = 90_000

# page -> (text that proves it rendered its real content for the default model, plotly charts
# it draws). The URL is /<page>, except the default page (Overview), which Streamlit serves at /.
PAGES = {
    "overview": (["Serving Playbook", "70,272 B", "MLA · MoE 8/256 · MTP ×1"], 0),
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "streamlit", "run", "app.py",
            "--server.headless", "true",
            "--server.port", str(port),
            "--server.address", "127.0.0.1",
            "--server.fileWatcherType", "none",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                out = proc.stdout.read().decode() if proc.stdout else ""
                pytest.fail(f"streamlit did not start on {base}:\n{out[-3000:]}")
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


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


@pytest.mark.parametrize("path", list(PAGES))
def test_every_page_renders_its_content_without_an_exception(
    server: str, browser: object, path: str
) -> None:
    page = _open(browser, _url(server, path))
    try:
        texts, charts = PAGES[path]
        _settle(page, texts, charts)
        _no_exception(page)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"page-{path}.png"), full_page=True)  # type: ignore[attr-defined]
        assert (
            "model=deepseek-ai%2FDeepSeek-V3" in page.url
            or "model=deepseek-ai/DeepSeek-V3" in page.url
        )  # type: ignore[attr-defined]
    finally:
        page.close()  # type: ignore[attr-defined]


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
