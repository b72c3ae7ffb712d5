"""Step 4 — Software: minimum engine version, parsers, checkpoint format, special flags."""

import streamlit as st

from engine.scenario import ENGINE_LABELS
from engine.text.safe import inert
from engine.text.sources import clean
from engine.text.words import say
from ui import show, tables
from ui import state as S
from ui.lang import T, current

# A table in one of the two engine columns has about 430 px at 1400 px: the flag column takes
# what it needs, "Why" wraps in the rest instead of running past the edge.
HALF_PAGE_TEXT_PX = 220

st.title(T("nav.software"))
d = S.study_or_stop()
lang = current()
st.caption(T("software.caption", model=d.model.name, architecture=d.config.architecture))

cols = st.columns(2)
for col, (engine, view) in zip(cols, d.engines.items(), strict=True):
    with col:
        label = ENGINE_LABELS[engine]
        r = view.software
        with st.container(border=True):
            key = "software.title_chosen" if engine == d.scenario.engine else "software.title"
            st.subheader(T(key, engine=label, version=r.engine_version))
            a, b = st.columns(2)
            # a metric's value is Markdown too: the format and parsers come from the config
            a.metric(T("software.min_version"), r.min_version or T("software.unknown"))
            b.metric(T("software.format"), inert(r.checkpoint_format, one_line=True))
            none = T("common.none")
            a.metric(T("software.tool_parser"), inert(r.tool_call_parser or none, one_line=True))
            b.metric(
                T("software.reasoning_parser"), inert(r.reasoning_parser or none, one_line=True)
            )
            st.caption(clean("".join(say(x, lang) for x in r.checkpoint.details)))
            if r.extra_flags:
                st.markdown(T("software.extra_flags"))
                tables.show(
                    tables.frame(
                        [
                            {
                                "flag": f,
                                "reason": clean(say(r.flag_decisions[f], lang))
                                if f in r.flag_decisions
                                else None,
                            }
                            for f in r.extra_flags
                        ],
                        ["flag", "reason"],
                    ),
                    {
                        "flag": tables.text(T("software.col.flag")),
                        "reason": tables.text(T("software.col.reason")),
                    },
                    key=f"software.flags.{engine}",
                    wrap_px=HALF_PAGE_TEXT_PX,  # "Why" wraps inside half the page
                )
            if not r.natively_supported:
                st.warning(T("software.not_native"))
            if r.reasons:
                with st.expander(T("software.notes")):
                    st.markdown("\n".join(f"- {clean(say(n, lang))}" for n in r.reasons))
            show.sources(r.sources)
