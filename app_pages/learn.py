"""Learn: the chosen model's dimensions as six attention designs, prefill vs decode against the
GPU's ridge point, and MLA weight absorption step by step."""

import streamlit as st

from engine.errors import InputError
from engine.present import charts_data as C
from engine.present import learn
from ui import charts, show
from ui import state as S

d = S.study_or_stop()
s = d.scenario
cfg = d.config
st.title("Learn")
st.caption(
    f"Built from {d.model.name}'s dimensions: {cfg.num_hidden_layers} layers, "
    f"{cfg.num_attention_heads} query heads, hidden {cfg.hidden_size}. bf16 KV, TP 1. GiB = 2^30 B."
)

st.header("How the attention design sets the KV cache")
st.markdown(
    "The KV cache holds, for every token in the context, what later tokens need to attend to it. "
    "**MHA** keeps a K and V per head; **GQA** shares each K/V head among a group of query heads; "
    "**MQA** shares one. **MLA** caches one compressed latent that every head decompresses "
    "(or absorbs, below); **DSA** adds a small indexer key so each query reads only the top-k "
    "tokens; a **hybrid** replaces most layers with linear attention whose state does not grow "
    "with the context."
)
try:
    variants = learn.attention_variants(cfg)
except InputError as err:
    st.error(f"These dimensions cannot be rebuilt as the six designs: {err}")
    variants = []
if variants:
    grid = C.context_grid(1 << 20)
    st.plotly_chart(
        charts.kv_growth(learn.kv_growth(variants, grid), d.context_asked), width="stretch"
    )
    show.table(
        [
            {
                "design": x.name,
                "what": x.what,
                "KV B/token": x.kv_bytes_per_token,
                "constant state B/request": x.state_bytes_per_request,
                f"GiB at {C.tokens(d.context_asked)}": round(
                    C.in_gib(x.bytes_at(d.context_asked)), 3
                ),
            }
            for x in variants
        ],
    )
    with st.expander("Formulas"):
        for x in variants:
            st.markdown(f"**{x.name}**")
            st.code(x.formula(), language=None, wrap_lines=True)

st.header("Prefill vs decode: arithmetic intensity")
st.markdown(
    "A GPU is compute-bound when each byte it reads feeds more FLOPs than its **ridge point** "
    "(peak FLOP/s ÷ memory bandwidth). Decode produces one token per request per step and must "
    "read every weight and the whole KV cache for it, so it sits far below the ridge until the "
    "batch is large; prefill pushes thousands of tokens through the same weights and crosses it "
    "quickly."
)
ai = show.or_error(learn.gpu_intensity, cfg, d.gpu, d.context_asked, kv_dtype=s.kv_dtype)
if ai is not None:
    st.plotly_chart(charts.intensity(ai), width="stretch")
    with st.expander("Formula"):
        st.code(
            f"ridge ({d.gpu.key}, BF16 dense): {ai.ridge_formula}\ndecode: "
            f"{ai.decode_formula}\nprefill: {ai.prefill_formula}",
            language=None,
            wrap_lines=True,
        )

st.header("MLA weight absorption, step by step")
own, steps = learn.mla_absorption(cfg)
if not own:
    st.caption(f"{d.model.name} has no MLA; the steps use DeepSeek-V3's dimensions.")
for step in steps:
    st.markdown(f"**{step.title}** — {step.text}")
    st.code(step.formula, language=None, wrap_lines=True)
