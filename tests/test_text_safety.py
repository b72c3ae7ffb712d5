"""One text-safety layer for every surface (issue 20): a config string, a file name, a link's
query value or a pasted command never renders live on a page (no link, reference link or
definition, autolink, bare URL, image, HTML, data: / javascript: target, math or Streamlit
directive) and never reaches a terminal, a script, a manifest or the Markdown report with a raw
control character (ESC, BEL, CSI, OSC 8 hyperlinks, C1).

The sweep: every config string field the app shows (architectures, model_type,
quantization_config.quant_method, torch_dtype, hidden_act, _name_or_path, an unknown key, the
uploaded file's name) and every link query key, through every page in both languages (AppTest),
the CLI's text and JSON of every study subcommand and of lint, the JSON and Markdown reports,
the launch script, docker run and the Kubernetes manifest.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst
from streamlit.testing.v1 import AppTest

from engine.cli import main
from engine.lint import lint_command
from engine.model import store
from engine.model.config import normalize
from engine.model.loader import LoadedModel, load_catalog
from engine.present.artifacts import launch_artifacts, report_artifacts
from engine.present.lint_words import format_report, json_report
from engine.present.study_report import study_markdown
from engine.scenario import QUERY_KEYS, Scenario, make_scenario
from engine.study import Study, study
from engine.text.safe import WORD_JOINER, inert, one_line, plain
from tests import gfm
from tests.apptest_util import APP, TIMEOUT, assert_clean
from tests.budget import examples
from ui.nav import PAGES

DOMAIN = "evil.example"
PAYLOADS = [
    "\ntouch PWNED\n",
    "\"'",
    "$(touch PWNED)",
    "`touch PWNED`",
    "\x1b[31mRED\x1b[0m\x1b[2J",
    "\x07",
    f"\x1b]8;;https://{DOMAIN}/osc\x07osc\x1b]8;;\x07",
    "\x9b31m\x9d0;title\x9c",
    # from here on, each renders live unless made inert
    f"[t][r]\n\n[r]: https://{DOMAIN}/ref",
    f"<https://{DOMAIN}/auto>",
    f"https://{DOMAIN}/bare",
    f"HTTP://{DOMAIN}/upper",
    f"x/https://www.{DOMAIN}/nested",
    f"www.{DOMAIN}",
    f"WWW.{DOMAIN}/upper",
    f"pwn@{DOMAIN}",
    f"a.b+c@{DOMAIN}",
    f"mailto:pwn@{DOMAIN}",
    f"ftp://{DOMAIN}/f",
    f"![i](https://{DOMAIN}/i.png)",
    f"<img src=https://{DOMAIN}/h.png>",
    f'<a href="https://{DOMAIN}/a">a</a>',
    f"<iframe src=https://{DOMAIN}/f></iframe>",
    "[d](data:text/html;base64,PHNjcmlwdD4=)",
    "[j](javascript:alert(1))",
    ":streamlit:",
    ":violet[PWNDIR]",
    "$PWNMATH$",
    "&#x202e;PWNBIDI",
]
HOSTILE = " ".join(PAYLOADS)
# A link's values are at most 256 characters: the live constructs, shorter.
SHORT = (
    f"[t][r] [r]: https://{DOMAIN}/q <https://{DOMAIN}/a> www.{DOMAIN} p@{DOMAIN}"
    f" ![i](https://{DOMAIN}/i) :violet[PWNDIR] $PWNMATH$ :streamlit: \x1b]8;;x\x07"
)

# --- what "live" and "raw control" mean --------------------------------------------------------

# Parser constructs (gfm.SOURCE) carrying this test's payloads, read with escapes masked: the
# app's own markup (``:green[…]``, its source links) is not a payload.
LIVE_SOURCE = [
    re.compile(r"\[[^\[\]]*\]\([^)\s]*(" + re.escape(DOMAIN) + r"|data:|javascript:)"),  # link
    re.compile(r"\[[^\[\]]*\]\[r\]"),  # a reference link
    gfm.SOURCE["link definition"],
    re.compile(r"<[a-zA-Z][a-zA-Z0-9+.-]*:"),  # an autolink
    re.compile(r"<(?:img|a|iframe)\b"),  # HTML
    gfm.SOURCE["entity"],
    re.compile(r":violet\["),  # a Streamlit directive
    re.compile(r"\$PWNMATH\$"),  # math
]
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def live(markdown: str) -> list[str]:
    """What ``markdown`` would render live from this test's payloads: a parser construct (with
    backslash-escaped characters as text) or a link or image the text-node transforms make
    *after* escapes are resolved (``tests/gfm.py``: GFM autolink literals, ``:streamlit:``)."""
    masked = gfm.masked(markdown)
    found = [p.pattern for p in LIVE_SOURCE if p.search(masked)]
    found += [link for link in gfm.text_links(markdown) if DOMAIN in link or "streamlit" in link]
    return found


def test_the_detector_sees_every_payload_live_and_none_inert() -> None:
    for payload in PAYLOADS[8:]:
        assert live(payload), payload
        assert live(inert(payload)) == [], inert(payload)
    assert RAW_CONTROL.search(HOSTILE) and not RAW_CONTROL.search(plain(HOSTILE))


@pytest.mark.parametrize(
    "escaped",
    [
        f"https\\://{DOMAIN}/login",  # what the backslash-escaping neutraliser wrote
        f"www\\.{DOMAIN}",
        f"pwn\\@{DOMAIN}",
        f"\\<https\\://{DOMAIN}/auto>",
        f"\\[r\\]: https\\://{DOMAIN}/ref",
        "\\:streamlit\\:",
    ],
)
def test_backslash_escapes_do_not_stop_gfm_autolinks(escaped: str) -> None:
    """The audit's finding: remark-gfm links the text after escapes are resolved."""
    assert live(escaped)


# Fragments a hostile string is built from: schemes, "://", "www", ".", "@", domains, Markdown
# punctuation, backslashes, word joiners and line breaks, in any order.
FRAGMENTS = [
    "https", "http", "HTTPS", "ftp", "mailto", "xmpp", "javascript", "data", ":", "//", "/",
    "www", "WWW", "w", ".", "@", "+", "-", "_", "evil", "example", "com", "a1", " ", "\n",
    "\\", "[", "]", "(", ")", "<", ">", "!", "&", "#", "x202e;", ";", "$", "`", "*", "|", "{",
    "}", "~", "=", "1.", "streamlit", "smile", "material/home", "\u2060", "\u202e", "é", "/",
]  # fmt: skip


@settings(max_examples=examples(3000), deadline=None, derandomize=True, database=None)
@given(hst.lists(hst.sampled_from(FRAGMENTS), max_size=24).map("".join), hst.booleans())
def test_inert_text_opens_no_construct_and_makes_no_autolink(text: str, one_line: bool) -> None:
    out = inert(text, one_line=one_line)
    assert gfm.source_constructs(out) == [], out
    assert gfm.text_links(out) == [], out
    assert inert(out) == out  # idempotent: a second pass changes nothing
    strict = inert(text, strict=True)
    assert gfm.source_constructs(strict) == [] and gfm.text_links(strict) == [], strict


def test_inert_keeps_ordinary_names_as_written() -> None:
    for name in ("Qwen/Qwen3-8B", "qwen2_moe", "float8_e4m3fn", "DeepseekV3ForCausalLM", "fp8"):
        assert inert(name, one_line=True) == name
    assert gfm.unescape(inert("https://x.example/a")).replace(WORD_JOINER, "") == (
        "https://x.example/a"
    )


def test_one_line_shows_line_breaks_and_bidi_controls_as_escapes() -> None:
    text = "Qwen3\nFAKE: ok\r\u2028\u2029\x85\u202etxt\u2066x\u2069\tend"
    shown = one_line(text)
    assert shown == "Qwen3\\nFAKE: ok\\r\\u2028\\u2029\\x85\\u202etxt\\u2066x\\u2069\\tend"
    assert plain("a\nb\tc") == "a\nb\tc"  # a multi-line text keeps its lines


# --- the hostile config ------------------------------------------------------------------------


def hostile_loaded(base: str = "Qwen/Qwen3-8B", *, dtype: bool = False) -> LoadedModel:
    raw = dict(load_catalog(base).config.raw)
    if dtype:
        raw["torch_dtype"] = HOSTILE
    else:
        raw["architectures"] = [HOSTILE, "Qwen3ForCausalLM"]
        raw["model_type"] = HOSTILE
        raw["hidden_act"] = HOSTILE
        raw["_name_or_path"] = HOSTILE
        raw["quantization_config"] = {"quant_method": HOSTILE, "bits": 8}
        raw[HOSTILE] = HOSTILE
    return LoadedModel(normalize(raw), "upload", "config" + HOSTILE + ".json")


def hostile_scenario(**fields: Any) -> Scenario:
    from ui.state import display_model

    loaded = display_model(hostile_loaded())
    return make_scenario(source="file", model=loaded.name, digest=store.put(loaded), **fields)


# --- every page, both languages ----------------------------------------------------------------


def _markdown_texts(at: AppTest) -> Iterator[tuple[str, str]]:
    """Every text a page renders as Markdown, with where it is."""
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning",
                 "error", "success", "exception"):  # fmt: skip
        for e in getattr(at, kind):
            yield kind, str(e.value)
    for kind in ("expander", "tabs"):
        for e in at.get(kind):
            yield kind, str(getattr(e, "label", ""))
    for m in at.metric:  # Streamlit 1.67 renders a metric's label, value and help as Markdown
        yield "metric", f"{m.label}\n{m.value}\n{m.proto.help or ''}"
    for w in (*at.button, *at.selectbox, *at.radio, *at.text_area, *at.number_input):
        yield "widget", f"{getattr(w, 'label', '')}\n{getattr(w.proto, 'help', '') or ''}"


def _strings(node: object) -> Iterator[str]:
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _chart_texts(at: AppTest) -> Iterator[tuple[str, str]]:
    """Every string of every plotly figure (plotly renders <a href>, <img> … in its text)."""
    for chart in at.get("plotly_chart"):
        for text in _strings(json.loads(chart.proto.spec or "{}")):
            yield "chart", text


def _plain_texts(at: AppTest) -> Iterator[tuple[str, str]]:
    """Texts shown as they are (code blocks, dataframe cells): never Markdown."""
    for c in at.code:
        yield "code", str(c.value)
    for d in at.dataframe:
        frame = d.value
        for column in frame.columns:
            for v in frame[column].tolist():
                if isinstance(v, str):
                    yield "cell", v


def assert_safe_page(at: AppTest, where: str) -> None:
    assert_clean(at)
    bad = [(kind, text, live(text)) for kind, text in _markdown_texts(at) if live(text)]
    assert bad == [], where
    raw = [(kind, text) for kind, text in _markdown_texts(at) if RAW_CONTROL.search(text)]
    raw += [(kind, text) for kind, text in _plain_texts(at) if RAW_CONTROL.search(text)]
    assert raw == [], where
    html = [t for _, t in _chart_texts(at) if re.search(r"<(a|img)\b", t) or RAW_CONTROL.search(t)]
    assert html == [], where


def _open(scenario: Scenario | None, lang: str, query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    if query:
        at.query_params.update(query)
    if scenario is not None:
        at.session_state["pb.scenario"] = scenario
        at.session_state["pb.warnings"] = []
        at.session_state["pb.model_error"] = None
    at.session_state["pb.lang"] = lang
    at.run()
    return at


def _lint_on_page(at: AppTest) -> None:
    at.text_area(key="lint.text").input(
        f"vllm serve Qwen/Qwen3-8B --tensor-parallel-size 3 --served-model-name '{SHORT}' "
        f"--tool-call-parser '{SHORT}'"
    )
    at.button(key="lint.go").click().run()


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_hostile_config_renders_nothing_live_on_any_page(lang: str) -> None:
    at = _open(hostile_scenario(), lang)
    assert_safe_page(at, "first page")
    for page in PAGES:
        at.switch_page(f"app_pages/{page}.py").run()
        if page == "lint":
            _lint_on_page(at)
        assert_safe_page(at, f"{page} ({lang})")


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_hostile_torch_dtype_renders_nothing_live(lang: str) -> None:
    loaded = hostile_loaded(dtype=True)
    at = _open(None, lang)
    at.radio(key="w.mode").set_value("paste").run()
    at.text_area(key="w.paste").input(json.dumps(loaded.config.raw)).run()
    at.button(key="w.paste_go").click().run()
    assert_safe_page(at, "paste")
    for page in ("overview", "family", "software", "flags"):
        at.switch_page(f"app_pages/{page}.py").run()
        assert_safe_page(at, page)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_query_key_with_live_markdown_warns_without_rendering_it(lang: str) -> None:
    query = {key: SHORT for key in QUERY_KEYS} | {SHORT: SHORT}
    at = _open(None, lang, query)
    assert at.warning
    assert_safe_page(at, "first page")
    for page in PAGES:
        at.switch_page(f"app_pages/{page}.py").run()
        assert_safe_page(at, f"{page} ({lang})")


@pytest.mark.parametrize("key", sorted(QUERY_KEYS))
def test_a_link_value_never_echoes_as_a_clickable_link(key: str) -> None:
    at = _open(None, "en", {key: f"https://{DOMAIN}/login"})
    assert_safe_page(at, key)


def test_a_hub_id_link_that_is_a_url_is_not_clickable() -> None:
    at = _open(None, "en", {"src": "hub", "model": f"https://{DOMAIN}/login"})
    assert at.warning or at.error
    assert_safe_page(at, "hub")


# --- every output ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile_study() -> Study:
    return study(hostile_scenario(gpus_per_node=2))


def _assert_terminal_safe(text: str, where: str) -> None:
    assert not RAW_CONTROL.search(text), (where, RAW_CONTROL.findall(text)[:5])


@pytest.mark.parametrize("command", ["study", "diagnose", "gates", "software", "plan"])
@pytest.mark.parametrize("as_json", [False, True])
def test_cli_text_and_json_carry_no_raw_control_character(
    command: str, as_json: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    source = json.dumps(hostile_loaded().config.raw)
    code = main([command, source, "--gpus", "2", *(["--json"] if as_json else [])])
    out, err = capsys.readouterr()
    assert code in (0, 2), err
    _assert_terminal_safe(out + err, command)
    if as_json and code == 0:
        json.loads(out)  # still JSON


@pytest.mark.parametrize("as_json", [False, True])
def test_lint_text_and_json_carry_no_raw_control_character(
    as_json: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    word = shlex.quote(HOSTILE)
    cmd = f"vllm serve Qwen/Qwen3-8B --served-model-name {word} --tool-call-parser {word}"
    main(["lint", cmd, "--gpu", "H200", "--gpus", "1", *(["--json"] if as_json else [])])
    out, err = capsys.readouterr()
    _assert_terminal_safe(out + err, "lint")
    report = lint_command(cmd, None, "H200", 1)
    _assert_terminal_safe(format_report(report) + json_report(report), "lint report")
    assert report.corrected and not RAW_CONTROL.search(report.corrected)


def test_the_reports_scripts_and_manifests_carry_nothing_live_and_no_control(
    hostile_study: Study,
) -> None:
    st = hostile_study
    for lang in ("en", "ko"):
        md = study_markdown(st, lang, "https://app.example/?model=x")  # type: ignore[arg-type]
        _assert_terminal_safe(md, f"markdown report ({lang})")
        assert live(md.replace("<https://app.example/?model=x>", "")) == [], lang
    for a in report_artifacts(st):
        _assert_terminal_safe(a.text, a.file_name)
    for view in st.engines.values():
        if view.plan is not None:
            for a in launch_artifacts(st, view.plan):
                _assert_terminal_safe(a.text, a.file_name)
