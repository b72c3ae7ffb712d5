"""Serving Playbook: the frame. Declares the pages, draws the shared sidebar, runs the page.

Every page reads the same view (model, GPU, options, diagnosis) that the sidebar builds from
the state in ``st.session_state``; the state is mirrored in the URL so a link reproduces it.
Titles and every text come from the message catalog of the reader's language (``?lang=ko``).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:  # AppTest and `streamlit run` from elsewhere
    sys.path.insert(0, str(ROOT))

from engine.errors import InputError  # noqa: E402
from engine.text.safe import Markdown  # noqa: E402
from engine.text.words import say  # noqa: E402
from ui import busy, show, sidebar  # noqa: E402
from ui import state as S  # noqa: E402
from ui.lang import T, current  # noqa: E402
from ui.nav import DEFAULT_PAGE, SECTIONS  # noqa: E402

# Not "pages/": Streamlit treats a pages/ folder next to the entry script as a v1
# multipage app on a fresh server's first run and in AppTest, bypassing this frame.
PAGES = ROOT / "app_pages"

S.init()  # the scenario and the language, from the link on a session's first run
st.set_page_config(page_title=T("app.title"), page_icon="🧭", layout="wide")


def page(name: str, default: bool = False) -> st.Page:
    """A page of app_pages/, titled in the reader's language (the URL path stays English)."""
    return st.Page(PAGES / f"{name}.py", title=T(f"nav.{name}"), url_path=name, default=default)


nav = st.navigation(
    {
        T(f"nav.section.{section}"): [page(name, default=name == DEFAULT_PAGE) for name in names]
        for section, names in SECTIONS.items()
    },
    expanded=True,  # every page listed: Streamlit's "View N more" button has no Korean
)

log = logging.getLogger("serving_playbook")


def guarded(step: Callable[[], object]) -> None:
    """The last line of defence: an unexpected error is logged with its traceback on the
    server and shown as one clear message, and the rest of the app keeps working. (st.stop and
    st.rerun are BaseExceptions and pass through.)"""
    try:
        step()
    except InputError as err:
        show.problem(err)
    except Exception:
        log.exception("page failed")
        st.error(T("error.unexpected"))


@st.fragment(key=S.SIDEBAR_FRAGMENT)
def _sidebar() -> None:
    S.sidebar_fragment(lambda: guarded(sidebar.draw))


st.session_state[S.FULL_RUN] = True
show.new_run()
with st.sidebar:
    _sidebar()
for warning in st.session_state.get(S.WARNINGS, []):  # the link's notes, a change not applied
    if isinstance(warning, show.Problem):
        show.problem(warning, st.warning)
    else:
        st.warning(Markdown(say(warning, current())))
guarded(nav.run)
busy.settle_gc()  # once per process, after its first page
