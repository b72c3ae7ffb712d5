"""Rendering safety in a real renderer (issue 20): the app (`streamlit run app.py` through
tools/app_server.py) in Debian's Chromium, driven by Playwright, with hostile text from every
way in: a shared link's query values (the issue's `/?src=hub&model=https://evil.example/login`
among them), a Hugging Face config (`?src=hub&model=acme/hostile`, served from a local hub
cache) and an upload with a hostile file name, whose strings hold bare URLs, `www.` and e-mail
addresses, `mailto:` and `ftp:`, reference links and definitions, autolinks, images, HTML,
entities, `data:` and `javascript:` targets and Streamlit shortcodes. Every page in both
languages, every expander opened, and then, in the DOM Chromium built:

* no `<a>` the app did not write itself. The app's own are: fragment links (Streamlit's "skip to
  content" and heading anchors), the sidebar's page links (`stSidebarNavLink`, this server),
  same-page alternative links (`?query`) and the sources lists, drawn in containers keyed
  `pb-sources-<n>` (ui/show.py `_quoted`) with `https` addresses from the app's data;
* no `<img>`, `<iframe>`, `<object>`, `<embed>`, `<video>`, `<audio>` or SVG `<image>`;
* no request to anywhere but this server (Playwright's request log).

The hostile text is drawn (as text) on the pages that show the config, so the checks ran on
it. Tooltips are drawn only on hover: tests/test_text_safety.py checks their Markdown.

The payloads are checked live first: rendered without ``inert`` on a page of the same
Streamlit, they make links and images (``test_the_payloads_are_live_without_inert``).
Run with `pytest -m browser` after `bash tools/install_browser.sh`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from engine.i18n import t
from engine.model.loader import load_catalog
from tests.test_browser import CHROMIUM, CHROMIUM_ARGS, PAGE_TIMEOUT_MS, VIEWPORT
from tools.app_server import app_server, free_port

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
DOMAIN = "evil.example"
# Each a construct that renders live in Streamlit's Markdown unless made inert.
PAYLOADS = [
    f"https://{DOMAIN}/login",
    f"HTTP://{DOMAIN}/upper",
    f"see https://www.{DOMAIN}/nested",
    f"www.{DOMAIN}",
    f"pwn@{DOMAIN}",
    f"mailto:m@{DOMAIN}",
    f"ftp://{DOMAIN}/f",
    f"[t][r]\n\n[r]: https://{DOMAIN}/ref",
    f"[u]: <https://{DOMAIN}/def>",
    f"<https://{DOMAIN}/auto>",
    f"![i](https://{DOMAIN}/i.png)",
    f'<img src="https://{DOMAIN}/h.png">',
    f"<iframe src=https://{DOMAIN}/frame></iframe>",
    f'<a href="https://{DOMAIN}/a">a</a>',
    "[d](data:text/html;base64,PHNjcmlwdD4=)",
    "[j](javascript:alert(1))",
    ":streamlit:",
    "&#x202e;bidi",
]
HOSTILE = " ".join(PAYLOADS)
# A link's values are at most 256 characters each: the case, and one payload a key.
QUERY = {
    "src": "hub",
    "model": f"https://{DOMAIN}/login",
    "gpu": f"www.{DOMAIN}",
    "engine": f"pwn@{DOMAIN}",
    "kv": f"<https://{DOMAIN}/auto>",
    "latency": f"[t][r] [r]: https://{DOMAIN}/q",
    "spec": f"![i](https://{DOMAIN}/i.png)",
    "tp": "[j](javascript:alert(1))",
    "cal": f"mailto:m@{DOMAIN} :streamlit:",
    f"https://{DOMAIN}/key": f"x@{DOMAIN}",
}
PAGE_NAMES = [
    "overview", "choose_model", "family", "kv_cache", "hardware", "software", "flags", "lint",
    "measure", "troubleshoot", "learn",
]  # fmt: skip
LINT = (
    "vllm serve Qwen/Qwen3-8B --tensor-parallel-size 3 "
    f"--served-model-name 'https://{DOMAIN}/s www.{DOMAIN} p@{DOMAIN}' "
    f"--tool-call-parser '[t](https://{DOMAIN}/t) :streamlit:'"
)

QWEN = dict(load_catalog("Qwen/Qwen3-8B").config.raw)
HOSTILE_CONFIG = QWEN | {
    "architectures": [HOSTILE, "Qwen3ForCausalLM"],
    "model_type": HOSTILE,
    "hidden_act": HOSTILE,
    "_name_or_path": HOSTILE,
    "quantization_config": {"quant_method": HOSTILE, "bits": 8},
    HOSTILE: HOSTILE,
}
UPLOAD_CONFIG = QWEN | {
    "torch_dtype": HOSTILE,
    "dtype": HOSTILE,
    "_name_or_path": HOSTILE,
    HOSTILE: HOSTILE,
}
# a file name cannot hold "/": the schemeless constructs
UPLOAD_NAME = f"cfg www.{DOMAIN} pwn@{DOMAIN} [t]: x ![i](x) <b> :streamlit: &#x202e;.json"

# What the DOM holds: every link with where it is, every embedded medium.
DOM = """() => ({
  links: [...document.querySelectorAll('a[href], area[href], [href]:not(link)')].map(a => ({
    href: a.getAttribute('href') || '',
    nav: a.matches('[data-testid="stSidebarNavLink"]'),
    sources: !!a.closest('[class*="st-key-pb-sources-"]'),
    text: (a.textContent || '').slice(0, 80),
  })),
  media: [...document.querySelectorAll('img, iframe, object, embed, video, audio, image, frame')]
    .map(e => e.outerHTML.slice(0, 160)),
})"""
OPEN_EXPANDERS = """() => {
  for (const d of document.querySelectorAll('[data-testid="stExpander"] details:not([open])'))
    d.open = true;
}"""
# A run is over when the page's title is drawn (another than ``before``, the last page's),
# Streamlit's "running" icon is gone and no lazily loaded element shows its skeleton.
RUNNING = '[data-testid="stStatusWidget"] [data-testid="stStatusWidgetRunningIcon"]'
SETTLED = (
    "(before) => {"
    "  const h1 = document.querySelector('[data-testid=\"stMain\"] h1');"
    "  return !!h1 && h1.textContent !== before"
    f"    && !document.querySelector('{RUNNING}')"
    "    && !document.querySelector('[data-testid^=\"stSkeleton\"]');"
    "}"
)
TITLE = "() => (document.querySelector('[data-testid=\"stMain\"] h1') || {}).textContent || null"


def _hub_cache(root: Path, repos: dict[str, dict[str, Any]]) -> Path:
    """A Hugging Face cache holding ``config.json`` of each repo (HF_HUB_OFFLINE reads it)."""
    sha = "0123456789abcdef0123456789abcdef01234567"
    for repo, config in repos.items():
        base = root / f"models--{repo.replace('/', '--')}"
        (base / "refs").mkdir(parents=True)
        (base / "refs" / "main").write_text(sha)
        snapshot = base / "snapshots" / sha
        snapshot.mkdir(parents=True)
        (snapshot / "config.json").write_text(json.dumps(config))
    return root


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cache = _hub_cache(tmp_path_factory.mktemp("hub"), {"acme/hostile": HOSTILE_CONFIG})
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_CACHE", str(cache))
        try:
            with app_server(90) as base:
                yield base
        except RuntimeError as err:
            pytest.fail(str(err))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail("Chromium is missing: run `bash tools/install_browser.sh` (make browser does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


class Visit:
    """One browser tab on the app, logging every request it makes."""

    def __init__(self, browser: Any, server: str) -> None:
        self.server = server
        self.requests: list[str] = []
        self.page = browser.new_page(viewport=VIEWPORT)
        self.page.set_default_timeout(PAGE_TIMEOUT_MS)
        self.page.on("request", lambda r: self.requests.append(r.url))

    def goto(self, name: str, query: dict[str, str]) -> None:
        path = "" if name == "overview" else name
        self.page.goto(f"{self.server}/{path}?{urlencode(query)}")
        self.page.wait_for_selector('[data-testid="stAppViewContainer"]')
        self.settle(None)

    def click_page(self, name: str) -> None:
        """Switch page inside the session (the sidebar's link), as a reader does."""
        path = "" if name == "overview" else name
        link = self.page.locator(f'[data-testid="stSidebarNavLink"][href="{self.server}/{path}"]')
        before = self.page.evaluate(TITLE)
        link.click()
        self.page.wait_for_url(f"{self.server}/{path}**")
        self.settle(before)

    def settle(self, before: str | None = None) -> None:
        self.page.wait_for_function(SETTLED, arg=before)
        self.page.wait_for_timeout(800)  # a rerun the first one queued, lazy elements, plotly
        self.page.wait_for_function(SETTLED, arg=None)

    def lint(self, lang: str) -> None:
        area = self.page.locator('[data-testid="stMain"] textarea').first
        area.fill(LINT)
        area.press("Control+Enter")
        self.page.get_by_role("button", name=t("lint_page.go", lang)).click()  # type: ignore[arg-type]
        self.page.wait_for_timeout(500)
        self.settle()

    def shows(self, text: str) -> bool:
        """The hostile text was drawn, as text, in the page's main area."""
        return text in self.page.locator('[data-testid="stMain"]').inner_text()

    def assert_inert(self, where: str) -> None:
        self.page.evaluate(OPEN_EXPANDERS)
        self.page.wait_for_timeout(200)
        dom = self.page.evaluate(DOM)
        foreign = [a for a in dom["links"] if not self._own(a)]
        assert foreign == [], (where, foreign)
        assert dom["media"] == [], where
        off_site = [
            u for u in self.requests if not u.startswith((self.server + "/", "data:", "blob:"))
        ]
        assert off_site == [], where
        boxes = self.page.locator('[data-testid="stException"]')
        assert boxes.count() == 0, (where, boxes.first.inner_text())

    def _own(self, link: dict[str, Any]) -> bool:
        href = str(link["href"])
        if DOMAIN in href or "evil" in href:
            return False
        if href.startswith(("#", "?")):  # an anchor, or a scenario of this page
            return True
        if link["nav"]:
            return href == self.server + "/" or href.startswith(self.server + "/")
        return bool(link["sources"]) and href.startswith("https://")

    def close(self) -> None:
        self.page.close()


@pytest.fixture
def visit(browser: Any, server: str) -> Iterator[Visit]:
    v = Visit(browser, server)
    try:
        yield v
    finally:
        v.close()


def _lang_query(lang: str) -> dict[str, str]:
    return {"lang": "ko"} if lang == "ko" else {}


# ``make test`` runs every page in English and, in Korean, the pages that draw the hostile text
# in a Korean frame; ``make test-all`` every page in both (marked ``full``): each page is its own
# test, so none runs a minute on the loaded 2-core machine
KO_PAGES = ("overview", "family", "software", "flags")


def _per_page(pages: list[str]) -> list[Any]:
    return [
        pytest.param(
            name, lang, marks=[pytest.mark.full] if lang == "ko" and name not in KO_PAGES else []
        )
        for lang in ("en", "ko")
        for name in pages
    ]


@pytest.mark.parametrize(("name", "lang"), _per_page(PAGE_NAMES))
def test_hostile_link_values_render_no_link_image_or_request_on_any_page(
    visit: Visit, name: str, lang: str
) -> None:
    visit.goto(name, QUERY | _lang_query(lang))
    if name == "overview":
        visit.page.locator('[data-testid="stAlert"]').first.wait_for()  # it warned
        assert visit.shows(f"{DOMAIN}/login")  # the value, drawn as text
    visit.assert_inert(f"{name} ({lang}) from a hostile link")


# the pages after Overview, in two halves (each half one session: the config is loaded once)
HALVES = (PAGE_NAMES[1:6], PAGE_NAMES[6:])
_HALF_CASES = [
    pytest.param(half, lang, marks=[pytest.mark.full] if lang == "ko" else [], id=f"{lang}-{k}")
    for lang in ("en", "ko")
    for k, half in enumerate(HALVES)
]


@pytest.mark.parametrize(("pages", "lang"), _HALF_CASES)
def test_a_hostile_hub_config_renders_no_link_image_or_request_on_any_page(
    visit: Visit, pages: list[str], lang: str
) -> None:
    visit.goto("overview", {"src": "hub", "model": "acme/hostile"} | _lang_query(lang))
    assert "acme/hostile" in visit.page.locator('[data-testid="stSidebar"]').inner_text()
    visit.assert_inert(f"overview ({lang})")
    drawn = []
    for name in pages:
        visit.click_page(name)
        if name == "lint":
            visit.lint(lang)
        visit.assert_inert(f"{name} ({lang}) with a hostile hub config")
        drawn += [name] if visit.shows(DOMAIN) else []
    assert {"family", "software", "flags", "lint"} & set(pages) <= set(drawn), drawn


@pytest.mark.parametrize(("pages", "lang"), _HALF_CASES)
def test_a_hostile_upload_renders_no_link_image_or_request_on_any_page(
    visit: Visit, pages: list[str], lang: str
) -> None:
    visit.goto("overview", _lang_query(lang))
    visit.page.get_by_text(t("sidebar.mode.upload", lang), exact=True).click()  # type: ignore[arg-type]
    chooser = visit.page.locator('[data-testid="stSidebar"] input[type="file"]')
    chooser.set_input_files(
        {
            "name": UPLOAD_NAME,
            "mimeType": "application/json",
            "buffer": json.dumps(UPLOAD_CONFIG).encode(),
        }
    )
    visit.page.wait_for_timeout(500)
    visit.settle()
    assert "cfg www" in visit.page.locator('[data-testid="stSidebar"]').inner_text()
    visit.assert_inert(f"overview ({lang})")
    drawn = []
    for name in pages:
        visit.click_page(name)
        visit.assert_inert(f"{name} ({lang}) with a hostile upload")
        drawn += [name] if visit.shows(DOMAIN) else []
    assert {"family", "kv_cache", "software"} & set(pages) <= set(drawn), drawn


# --- the payloads are live where nothing makes them inert ---------------------------------------

PROBE_APP = """
import json, sys
import streamlit as st
texts = json.loads(sys.argv[1])[st.query_params.get("set", "raw")]
for text in texts:
    st.markdown(text)
"""


def _healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(base + "/_stcore/health", timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def test_the_payloads_are_live_without_inert(browser: Any, tmp_path: Path) -> None:
    """The same Streamlit draws the payloads as links and images when they are shown as they
    are, and the URL ones as links when only backslash-escaped (what ``inert`` did before): the
    checks above can fail."""
    escaped = [
        p.replace("[", "\\[").replace("<", "\\<").replace("://", "\\://").replace("@", "\\@")
        for p in PAYLOADS[:7]
    ]
    script = tmp_path / "probe.py"
    script.write_text(PROBE_APP)
    port = free_port()
    texts = json.dumps({"raw": PAYLOADS, "escaped": escaped})
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(script), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--server.fileWatcherType", "none", "--", texts],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"},
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not _healthy(base):
            assert proc.poll() is None and time.monotonic() < deadline, "the probe did not start"
            time.sleep(0.3)
        seen = {}
        for which in ("raw", "escaped"):
            v = Visit(browser, base)
            try:
                v.page.goto(f"{base}/?set={which}")
                v.page.wait_for_selector('[data-testid="stMarkdownContainer"]')
                v.page.wait_for_timeout(2000)
                seen[which] = v.page.evaluate(DOM)
            finally:
                v.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    raw = {a["href"] for a in seen["raw"]["links"]}
    escaped_hrefs = {a["href"] for a in seen["escaped"]["links"]}
    urls = {
        f"https://{DOMAIN}/login",
        f"HTTP://{DOMAIN}/upper",
        f"https://www.{DOMAIN}/nested",
        f"http://www.{DOMAIN}",
        f"mailto:pwn@{DOMAIN}",
    }
    assert urls <= escaped_hrefs, escaped_hrefs  # a backslash does not stop a literal
    live = {f"https://{DOMAIN}/ref", f"https://{DOMAIN}/auto", "data:text/html;base64,PHNjcmlwdD4="}
    assert urls | live <= raw, raw
    media = " ".join(seen["raw"]["media"])
    assert f"https://{DOMAIN}/i.png" in media and "data:image/svg+xml" in media  # :streamlit:
