"""Shared AppTest helpers for the tests/test_app_*.py files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

from ui.nav import PAGES as NAV_PAGES

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app.py"
TIMEOUT = 30  # generous: the first run imports the engine, plotly and pydantic models


def open_app(page: str | None = None, query: dict[str, str] | None = None) -> AppTest:
    """Run the app (optionally from a link's query parameters) and switch to ``page``
    (a file name in app_pages/, without .py)."""
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    if query:
        at.query_params.update(query)
    at.run()
    if page is not None:
        at.switch_page(f"app_pages/{page}.py").run()
    assert_clean(at)
    return at


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def metric_starting(at: AppTest, prefix: str) -> str:
    hits = [m.value for m in at.metric if m.label.startswith(prefix)]
    assert hits, f"no metric labelled {prefix!r}; have {list(metrics(at))}"
    return str(hits[0])


def texts(at: AppTest) -> str:
    """All markdown, captions, titles, info, warnings and errors, as one string."""
    parts: list[Any] = []
    for kind in (
        "title",
        "header",
        "subheader",
        "markdown",
        "caption",
        "info",
        "warning",
        "error",
        "success",
        "code",
    ):
        parts += [e.value for e in getattr(at, kind)]
    return "\n".join(str(p) for p in parts)


def state(at: AppTest) -> Any:
    return at.session_state["pb.scenario"]


PAGES = NAV_PAGES


def _column_texts(proto: Any) -> list[str]:
    """The headers and help texts a dataframe's column config shows."""
    import json

    raw = getattr(proto, "columns", "") or "{}"
    try:
        config = json.loads(raw)
    except ValueError:
        return []
    out = []
    for col in config.values():
        if isinstance(col, dict):
            out += [str(col.get(k) or "") for k in ("label", "help")]
    return out


def page_text(at: AppTest) -> str:
    """Everything a reader sees on the page, one piece per line: texts, metrics (label, value,
    help), expander and tab labels, widget labels and help, table headers and cells."""
    parts = [texts(at)]
    for m in at.metric:
        parts += [m.label, m.value, str(m.proto.help or "")]
    for kind in ("expander", "tabs"):
        parts += [str(getattr(e, "label", "")) for e in at.get(kind)]
    for d in at.dataframe:
        parts += _column_texts(d.proto)
        frame = d.value
        for column in frame.columns:
            parts += [str(v) for v in frame[column].tolist() if isinstance(v, str)]
    for w in (*at.button, *at.selectbox, *at.radio, *at.text_area, *at.number_input):
        parts += [str(getattr(w, "label", "")), str(getattr(w.proto, "help", "") or "")]
    return "\n".join(p for p in parts if p)
