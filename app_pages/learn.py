"""Learn: the chosen model's dimensions as six attention designs, prefill vs decode against the
GPU's ridge point, and MLA weight absorption step by step."""

import streamlit as st

from engine.errors import InputError
from engine.present import charts_data as C
from engine.present import learn
from engine.text.safe import Markdown
from engine.text.words import say
from ui import charts, memo, show, tables
from ui import state as S
from ui.lang import T, current

lang = current()
st.title(T("nav.learn"))
d = S.study_or_stop()
s = d.scenario
cfg = d.config
st.caption(
    T(
        "learn.caption",
        model=d.model.name,
        layers=cfg.num_hidden_layers,
        heads=cfg.num_attention_heads,
        hidden=cfg.hidden_size,
    )
)

st.header(T("learn.designs"))
st.markdown(T("learn.designs_text"))
try:
    variants = memo.attention_variants(d, lang)
except InputError as err:
    show.problem(show.Problem(err, "learn.designs_error"))
    variants = []
if variants:
    at = C.tokens(d.context_asked)
    grid = C.context_grid(1 << 20)
    charts.draw(
        charts.kv_growth(learn.kv_growth(variants, grid), d.context_asked),
        T("learn.growth_caption", context=at),
    )
    tables.show(
        tables.frame(
            [
                {
                    "design": x.name,
                    "what": x.what,
                    "kv_per_token": x.kv_bytes_per_token,
                    "state": x.state_bytes_per_request,
                    "at_context": C.in_gib(x.bytes_at(d.context_asked)),
                }
                for x in variants
            ],
            ["design", "what", "kv_per_token", "state", "at_context"],
        ),
        {
            "design": tables.text(T("learn.col.design")),
            "what": tables.text(T("learn.col.what")),
            "kv_per_token": tables.count(T("learn.col.kv_per_token")),
            "state": tables.count(T("learn.col.state")),
            "at_context": tables.decimal(T("learn.col.at_context", context=at), 3),
        },
        key="learn.designs",
    )
    with st.expander(T("learn.formulas")):
        for x in variants:
            st.markdown(f"**{x.name}**")
            st.code(x.formula(lang), language=None, wrap_lines=True)

st.header(T("learn.intensity"))
st.markdown(T("learn.intensity_text"))
ai = show.or_error(learn.gpu_intensity, cfg, d.gpu, d.context_asked, kv_dtype=s.kv_dtype)
if ai is not None:
    charts.draw(charts.intensity(ai), T("learn.intensity_caption", ridge=f"{ai.ridge:,.0f}"))
    with st.expander(T("common.formula")):
        st.code(
            "\n".join(
                [
                    T("learn.formula.ridge", gpu=d.gpu.key, formula=ai.ridge_formula),
                    T("learn.formula.decode", formula=say(ai.decode_formula, lang)),
                    T("learn.formula.prefill", formula=say(ai.prefill_formula, lang)),
                ]
            ),
            language=None,
            wrap_lines=True,
        )

st.header(T("learn.absorption"))
own, steps = learn.mla_absorption(cfg, lang)
if not own:
    st.caption(T("learn.no_mla", model=d.model.name))
for step in steps:
    # catalog text with numbers filled in: the app's own Markdown
    st.markdown(T("learn.step", title=Markdown(step.title), text=Markdown(step.text)))
    st.code(step.formula, language=None, wrap_lines=True)
