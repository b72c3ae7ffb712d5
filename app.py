"""Serving Playbook: the frame. Declares the pages, draws the shared sidebar, runs the page.

Every page reads the same view (model, GPU, options, diagnosis) that the sidebar builds from
the state in ``st.session_state``; the state is mirrored in the URL so a link reproduces it.
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
from ui import sidebar  # noqa: E402
from ui import state as S  # noqa: E402

# Not "pages/": Streamlit treats a pages/ folder next to the entry script as a v1
# multipage app on a fresh server's first run and in AppTest, bypassing this frame.
PAGES = ROOT / "app_pages"

st.set_page_config(page_title="Serving Playbook", page_icon="🧭", layout="wide")

nav = st.navigation(
    {
        "Start": [
            st.Page(PAGES / "overview.py", title="Overview", url_path="overview", default=True),
            st.Page(PAGES / "choose_model.py", title="Choose a model", url_path="choose_model"),
        ],
        "Diagnosis": [
            st.Page(PAGES / "family.py", title="1 Family", url_path="family"),
            st.Page(PAGES / "kv_cache.py", title="2 KV cache", url_path="kv_cache"),
            st.Page(PAGES / "hardware.py", title="3 Hardware", url_path="hardware"),
            st.Page(PAGES / "software.py", title="4 Software", url_path="software"),
            st.Page(PAGES / "flags.py", title="5 Flags", url_path="flags"),
            st.Page(PAGES / "lint.py", title="Lint a command", url_path="lint"),
            st.Page(PAGES / "measure.py", title="6 Measure", url_path="measure"),
        ],
        "Help": [
            st.Page(PAGES / "troubleshoot.py", title="Troubleshoot", url_path="troubleshoot"),
            st.Page(PAGES / "learn.py", title="Learn", url_path="learn"),
        ],
    }
)

log = logging.getLogger("serving_playbook")


def guarded(step: Callable[[], object]) -> None:
    """The last line of defence: an unexpected error is logged with its traceback on the
    server and shown as one clear message, and the rest of the app keeps working. (st.stop and
    st.rerun are BaseExceptions and pass through.)"""
    try:
        step()
    except InputError as err:
        st.error(str(err))
    except Exception:
        log.exception("page failed")
        st.error(
            "Something went wrong while drawing this part of the page; the error was logged. "
            "Change a choice or pick another model to continue."
        )


S.init()
guarded(sidebar.draw)
S.sync_query_params()
for warning in st.session_state.get(S.WARNINGS, []):
    st.warning(warning)
guarded(nav.run)
