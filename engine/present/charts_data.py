"""What the app's pages show, computed: each number with its unit and the formula that
produced it (config values plugged in), and the series behind every chart.

Pure functions of a ``Study``; the pages only lay the results out. Units: GiB = 2^30 bytes,
GB = 10^9 bytes, and every label says which.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from engine.decision import Code, Decision, Name
from engine.engines import ENGINES, adapter, check_engine
from engine.engines.placement import ROLE_NAME
from engine.errors import InputError
from engine.hardware.gpus import Gpu
from engine.i18n import DEFAULT_LANG, Lang, t
from engine.kv.pipeline import model_pipeline
from engine.kv.sizing import KvSizing
from engine.launch.layout import stage_share, users_at
from engine.measure.backcalc import BackcalcResult, EngineReading, backcalculate, sizing_notes
from engine.model.architecture import FFN_LABELS, Architecture, Mixer
from engine.model.config import ModelConfig
from engine.model.context_limit import context_limit
from engine.model.family import FamilyVerdict
from engine.model.loader import catalog_names, load_catalog
from engine.model.weights import Role
from engine.perf.factors import perf_facts
from engine.present.evidence_words import (
    EvidenceRow,
    evidence_rows,
    formula,
    group_labels,
)
from engine.scenario import DEFAULT_SCENARIO, Engine
from engine.study import Study
from engine.text.sources import ENGINE_NAMES
from engine.text.units import (
    GB,
    GIB,
    TERA,
    Count,
    gib,
    in_gib,
    nbytes,
    percent,
    tb_per_s,
    tokens,
)
from engine.text.words import say


def _first_spellings() -> tuple[str, ...]:
    first: dict[str, str] = {}
    for e in ENGINES:
        for name, dtype in adapter(e).kv_aliases.items():
            first.setdefault(dtype, name)
    return tuple(first.values())


# The KV dtypes offered in the app: the first spelling of each dtype an engine accepts
# (aliases such as "bfloat16" still parse from a link).
KV_DTYPE_MENU = _first_spellings()


# --- units (engine/text/units.py; these stay for the CLI and the tests) --------------------

__all__ = ["GB", "GIB", "gib", "in_gib", "nbytes", "tb_per_s", "tokens"]


def gb(n: float) -> str:
    """Bytes as GB (10^9), for a vendor's figure."""
    return f"{n / GB:,.1f} GB"


def size(n: float) -> str:
    """A size in both units (the CLI's text output)."""
    return f"{gib(n)} ({gb(n)})"


def per_instance(users: int, instances: int) -> int:
    """Requests each instance must hold: the users spread over the instances, rounded up."""
    return -(-users // instances)


# --- a shown number ----------------------------------------------------------------------


@dataclass(frozen=True)
class Shown:
    """One number on a page: its label, the formatted value, the raw value and the formula
    with the config's values plugged in."""

    label: str
    value: str
    raw: float
    formula: str
    help: str = ""
    range: str = ""  # where the measurement likely falls ("likely 21–33"), worded


def _where(kv: KvSizing, lang: Lang) -> str:
    return t("shown.where.tp", lang, tp=kv.tp) if kv.tp > 1 else t("shown.where.one", lang)


def kv_headline(st: Study, lang: Lang = DEFAULT_LANG) -> list[Shown]:
    """Bytes per token, per request and the constant state, as the chosen engine sizes them
    at the chosen layout's attention TP."""
    kv = st.kv
    labels = group_labels(kv, lang)
    out = [_kv_per_token(kv, labels, lang)]
    if kv.tp > 1:
        out.append(_kv_all_ranks(kv, lang))
    out.append(_kv_per_request(kv, labels, max(st.context, 1), lang))
    if kv.state_bytes_per_request:
        out.append(_state_shown(kv, lang))
    return out


def _kv_per_token(kv: KvSizing, labels: list[str], lang: Lang) -> Shown:
    """The KV bytes a token takes on one GPU: each paged group's term, and the dtype's note."""
    terms = " + ".join(
        t("kv_shown.term", lang, label=lab, formula=formula(g, lang))
        for lab, g in zip(labels, kv.groups, strict=True)
        if g.spec.paged
    )
    per_token = kv.kv_bytes_per_token
    dtype_note = (
        t("kv_shown.dtype_note", lang, dtype=kv.kv_dtype.stored, note=say(kv.kv_dtype.why, lang))
        if kv.kv_dtype.why is not None
        else ""
    )
    return Shown(
        t("shown.kv_per_token", lang, where=_where(kv, lang)),
        f"{per_token:,} B",
        per_token,
        t(
            "kv_shown.per_token",
            lang,
            terms=terms or t("kv_shown.no_attention", lang),
            bytes=f"{per_token:,}",
        )
        + dtype_note,
        t("shown.kv_per_token_help", lang),
    )


def _kv_all_ranks(kv: KvSizing, lang: Lang) -> Shown:
    """A token's KV over every attention TP rank."""
    per_token = kv.kv_bytes_per_token
    return Shown(
        t("shown.kv_all_ranks", lang, tp=kv.tp),
        f"{per_token * kv.tp:,} B",
        per_token * kv.tp,
        t(
            "kv_shown.all_ranks",
            lang,
            per_gpu=f"{per_token:,}",
            tp=kv.tp,
            bytes=f"{per_token * kv.tp:,}",
        ),
        t("shown.kv_all_ranks_help", lang),
    )


def _kv_per_request(kv: KvSizing, labels: list[str], context: int, lang: Lang) -> Shown:
    """One request of ``context`` tokens on one GPU: each group's tokens kept, or its state."""
    per_req = kv.bytes_per_request(context)
    parts = []
    for lab, g in zip(labels, kv.groups, strict=True):
        if not g.spec.paged:
            parts.append(
                t("kv_shown.state_part", lang, label=lab, bytes=f"{g.state_bytes_per_request:,}")
            )
        else:
            parts.append(
                t(
                    "kv_shown.request_part",
                    lang,
                    label=lab,
                    per_token=f"{g.bytes_per_token:,.0f}",
                    kept=f"{g.spec.tokens_kept(context):,.0f}",
                    bytes=f"{g.bytes_at(context):,.0f}",
                )
            )
    total = f" = {per_req:,} B" if len(parts) > 1 else ""
    return Shown(
        t("shown.kv_per_request", lang, context=tokens(context), where=_where(kv, lang)),
        gib(per_req),
        per_req,
        " + ".join(parts) + f"{total} = {gib(per_req)}",
        t("shown.exact_bytes", lang, bytes=f"{per_req:,}"),
    )


def _state_shown(kv: KvSizing, lang: Lang) -> Shown:
    """The constant state a request keeps (linear mixers), padded as a hybrid model aligns it."""
    state_f = " + ".join(formula(g, lang) for g in kv.groups if not g.spec.paged)
    padded = kv.state_bytes_per_request_padded
    text = f"{state_f} = {kv.state_bytes_per_request:,} B"
    if kv.hybrid is not None:
        text += t(
            "kv_shown.padded",
            lang,
            alignment=say(kv.hybrid.formula(), lang),
            bytes=f"{padded:,}",
        )
    return Shown(
        t("shown.state", lang),
        gib(padded),
        padded,
        text,
        t("shown.exact_bytes", lang, bytes=f"{padded:,}"),
    )


def weights_shown(st: Study, lang: Lang = DEFAULT_LANG) -> list[Shown]:
    w = st.weights
    fit = st.fit
    # the parameters by what they are (the MTP layers' apart), in the order they first appear
    counts: dict[tuple[bool, Role], int] = {}
    for b in w.blocks:
        counts[(b.mtp, b.role)] = counts.get((b.mtp, b.role), 0) + b.count
    blocks = " + ".join(
        t("kv_shown.mtp_part" if mtp else "kv_shown.part", lang,
          part=say(ROLE_NAME[role](), lang), count=f"{n:,}")
        for (mtp, role), n in counts.items()
    )  # fmt: skip
    return [
        Shown(
            t("shown.params", lang),
            t(
                "shown.params_value",
                lang,
                # each language's own unit (billions, 억): never a "B" that reads as bytes
                total=Count(w.params_total),
                active=Count(w.params_active),
            ),
            w.params_total,
            t(
                "kv_shown.params",
                lang,
                blocks=blocks,
                total=f"{w.params_total:,}",
                active=f"{w.params_active:,}",
            ),
            t(
                "shown.params_help",
                lang,
                total=f"{w.params_total:,}",
                active=f"{w.params_active:,}",
            ),
        ),
        Shown(
            t("shown.checkpoint", lang, format=w.format),
            gib(w.weight_bytes),
            w.weight_bytes,
            t(
                "kv_shown.checkpoint",
                lang,
                bits=_bits_note(st, lang),
                bytes=f"{w.weight_bytes:,}",
                gib=gib(w.weight_bytes),
                experts=f"{w.expert_bytes:,}",
                rest=f"{w.non_expert_bytes:,}",
            ),
            t("shown.exact_bytes", lang, bytes=f"{w.weight_bytes:,}"),
        ),
        Shown(
            t("shown.weights_per_gpu", lang),
            gib(fit.weights_per_gpu),
            fit.weights_per_gpu,
            t(
                "kv_shown.weights_per_gpu",
                lang,
                layout=say(fit.layout.name(), lang),
                shares="; ".join(say(share.formula(), lang) for share in fit.weight_shares),
                bytes=f"{fit.weights_per_gpu:,}",
            ),
            t("shown.exact_bytes", lang, bytes=f"{fit.weights_per_gpu:,}"),
        ),
    ]


def _bits_note(st: Study, lang: Lang) -> str:
    """How the checkpoint stores its weights, in ``lang``: the format's details as the software
    step words them, and what the weights report adds after them."""
    return "".join(say(d, lang) for d in st.weights.details)


def fit_shown(st: Study, lang: Lang = DEFAULT_LANG) -> list[Shown]:
    fit = st.fit
    reserve = (
        t("kv_shown.reserve", lang, parts=reserve_formula(st, lang))
        if fit.reserve is not None
        else ""
    )
    return [
        Shown(
            t("shown.users", lang, context=tokens(fit.context)),
            f"{fit.users:,}",
            fit.users,
            say(fit.users_formula(), lang),
            t("shown.users_help", lang, asked=f"{st.scenario.users:,}"),
        ),
        Shown(
            t("shown.kv_space", lang),
            gib(fit.kv_space_per_gpu),
            fit.kv_space_per_gpu,
            t(
                "kv_shown.kv_space",
                lang,
                memory=say(fit.memory_formula(), lang),
                fraction=say(fit.fraction_why, lang),
                reserve=reserve,
            ),
            t("shown.exact_bytes", lang, bytes=f"{fit.kv_space_per_gpu:,}"),
        ),
        Shown(
            t("shown.context", lang),
            t("shown.tokens_value", lang, n=f"{fit.context:,}"),
            fit.context,
            t(
                "kv_shown.context_fits"
                if fit.context_fits
                else "kv_shown.context_short"
                if fit.weights_fit
                else "kv_shown.context_none",
                lang,
                asked=f"{st.context_asked:,}",
                limit=f"{st.limit.tokens:,}",
                formula=say(st.limit.why, lang),
            ),
            t("shown.context_help", lang, limit=f"{st.limit.tokens:,}"),
        ),
    ]


def reserve_formula(st: Study, lang: Lang = DEFAULT_LANG) -> str:
    """The engine's non-KV reserve, part by part ("" when the engine keeps none)."""
    reserve = st.fit.reserve
    return " + ".join(say(part, lang) for part in reserve.formula()) if reserve else ""


def layout_shown(st: Study, lang: Lang = DEFAULT_LANG) -> list[Shown]:
    """The chosen layout's parallel sizes, as the launch sets them."""
    lay = st.fit.layout
    s = lay.split
    eng = adapter(st.scenario.engine)
    yes, no = t("common.on", lang), t("common.off", lang)
    return [
        Shown(t("shown.tp", lang), str(s.tp), s.tp, f"{eng.flag('tp')} {eng.tp_size(s)}"),
        Shown(t("shown.dp", lang), str(s.dp), s.dp, t("kv_shown.dp", lang, dp=s.dp)),
        Shown(
            t("shown.ep", lang),
            yes if s.ep else no,
            float(s.ep),
            t("kv_shown.ep", lang, ranks=s.moe_group) if s.ep else t("kv_shown.sliced", lang),
        ),
        Shown(t("shown.replicas", lang), str(lay.replicas), lay.replicas, say(lay.name(), lang)),
    ]


# --- tables ------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupRow:
    label: str
    layers: int
    per_layer_bytes_per_token: float
    bytes_per_token: float
    state_bytes: int
    bytes_at_context: int
    formula: str


def group_rows(kv: KvSizing, context: int, lang: Lang = DEFAULT_LANG) -> list[GroupRow]:
    return [
        GroupRow(
            lab,
            g.num_layers,
            g.spec.bytes_per_token,
            g.bytes_per_token,
            g.state_bytes_per_request,
            math.ceil(g.bytes_at(context)),
            formula(g, lang),
        )
        for lab, g in zip(group_labels(kv, lang), kv.groups, strict=True)
    ]


@dataclass(frozen=True)
class CompareRow:
    metric: str
    vllm: str
    sglang: str
    differs: bool


def engine_comparison(st: Study, lang: Lang = DEFAULT_LANG) -> list[CompareRow]:
    """vLLM 0.33.0 and SGLang 0.5.23 accounting for the same model and choices."""
    v, s = st.engines["vllm"].kv, st.engines["sglang"].kv
    context = max(st.context, 1)

    def row(key: str, a: str, b: str, **params: str) -> CompareRow:
        return CompareRow(t(f"compare.{key}", lang, **params), a, b, a != b)

    return [
        row("dtype", v.kv_dtype.stored, s.kv_dtype.stored),
        row("per_token", f"{v.kv_bytes_per_token:,} B", f"{s.kv_bytes_per_token:,} B"),
        row(
            "state",
            f"{v.state_bytes_per_request:,} B",
            f"{s.state_bytes_per_request:,} B",
        ),
        row(
            "per_request",
            gib(v.bytes_per_request(context)),
            gib(s.bytes_per_request(context)),
            context=tokens(context),
        ),
        row("page", str(v.block_size), str(s.block_size)),
    ]


def sglang_differs(st: Study) -> bool:
    """The engines store different bytes (per token or per request), not just other names."""
    v, s = st.engines["vllm"].kv, st.engines["sglang"].kv
    return (
        v.kv_bytes_per_token != s.kv_bytes_per_token
        or v.state_bytes_per_request != s.state_bytes_per_request
    )


def family_rows(st: Study, lang: Lang = DEFAULT_LANG) -> list[EvidenceRow]:
    """The family's evidence, one row per config field read, in ``lang``."""
    return evidence_rows(st.family.evidence, lang)


def family_summary(fam: FamilyVerdict, lang: Lang = DEFAULT_LANG) -> str:
    """The verdict in one line: the family, then each flag that holds."""
    return " · ".join(p.text if isinstance(p, Name) else say(p, lang) for p in fam.summary())


def mixer_label(mixer: str, lang: Lang = DEFAULT_LANG) -> str:
    """How the pages name a token mixer (its family's label)."""
    return say(Mixer(mixer).family.label(), lang)


# --- the layer strip ---------------------------------------------------------------------

STRIP_SUMMARY = Code("layer.strip_summary", "layers", "mixers", "ffns")
STRIP_COUNT = Code("layer.strip_count", "n", "label")


@dataclass(frozen=True)
class LayerStrip:
    """One label per layer for the mixer row and the FFN row (in the page's language), the
    language-neutral key of each (for colours), and counts per label."""

    mixers: tuple[str, ...]
    ffns: tuple[str, ...]
    mixer_keys: tuple[str, ...] = ()
    ffn_keys: tuple[str, ...] = ()
    lang: Lang = DEFAULT_LANG

    def counts(self, row: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for label in row:
            out[label] = out.get(label, 0) + 1
        return out

    def summary(self) -> str:
        def counted(row: Sequence[str]) -> tuple[Decision, ...]:
            return tuple(STRIP_COUNT(n=n, label=Name(lab)) for lab, n in self.counts(row).items())

        return say(
            STRIP_SUMMARY(
                layers=len(self.mixers), mixers=counted(self.mixers), ffns=counted(self.ffns)
            ),
            self.lang,
        )


def layer_strip(arch: Architecture, lang: Lang = DEFAULT_LANG) -> LayerStrip:
    mixers, keys = [], []
    for layer in arch.layers:
        label = layer.mixer.family.label(layer)
        mixers.append(say(label, lang))
        keys.append(label.code)
    return LayerStrip(
        tuple(mixers),
        tuple(say(FFN_LABELS[layer.ffn](), lang) for layer in arch.layers),
        tuple(keys),
        tuple(FFN_LABELS[layer.ffn].code for layer in arch.layers),
        lang,
    )


# --- chart series ------------------------------------------------------------------------


@dataclass(frozen=True)
class Series:
    name: str
    x: tuple[int, ...]
    y: tuple[float, ...]


def speed_caption(st: Study, lang: Lang = DEFAULT_LANG) -> str:
    """What the speed figures assume: the workload, the load, drafts, where the rates come
    from (the catalog × fitted fractions, or measured on this GPU), how far off the model was
    on sources of runs left out of its fit and on the published runs it was never fitted on
    (``data/perf.yaml`` fit), and what "likely" spans."""
    s = st.scenario
    isl, osl = s.workload(st.context)
    sp = st.fit.speed
    oos, unseen = perf_facts().fit.leave_one_source_out, perf_facts().fit.unseen
    text = t(
        "speed.caption_measured" if sp is not None and sp.measured else "speed.caption",
        lang,
        isl=f"{isl:,}",
        osl=f"{osl:,}",
        users=f"{min(s.users, st.fit.running):,}",
        drafts=t("speed.drafts" if st.mtp else "speed.no_drafts", lang),
        tpot=percent(oos.tpot.median),
        ttft=percent(oos.ttft.median),
        tps=percent(oos.tps_per_gpu.median),
        unseen_rows=f"{max(m.rows for m in (unseen.tpot, unseen.ttft, unseen.tps_per_gpu)):,}",
        unseen_tpot=percent(unseen.tpot.median),
        unseen_ttft=percent(unseen.ttft.median),
        unseen_tps=percent(unseen.tps_per_gpu.median),
    )
    if st.search_inputs is not None and st.search_inputs.factors is not None:
        text += " " + t("bench.calibrated_caption", lang)
    if sp is None:
        return text
    low, high = perf_facts().ranges.quantiles
    band = sp.band
    return (
        text
        + " "
        + t(
            f"speed.range_{band.pooled}",
            lang,
            low=f"{low * 100:g}",
            high=f"{high * 100:g}",
            rows=band.rows,
            engine=ENGINE_NAMES.get(band.engine, band.engine),
        )
    )


def matmul_ceilings(gpu: Gpu, lang: Lang = DEFAULT_LANG) -> str:
    """The GPU's matmul ceiling per tensor-core dtype it has, each with its share of the peak
    (``Gpu.achievable_tensor_flops``: what the speed model multiplies by its fitted fraction)."""
    dtypes = ("bf16", *(("fp8",) if gpu.fp8 else ()), *(("fp4",) if gpu.fp4 else ()))
    return " · ".join(
        t(
            "hardware.fact.matmul_value",
            lang,
            dtype=d.upper(),
            n=f"{gpu.achievable_tensor_flops(d) / TERA:,.0f}",
            share=percent(gpu.matmul_share(d)),
        )
        for d in dtypes
    )


def _likely(
    lang: Lang, value: float, low: float, high: float, fmt: str, unit: str
) -> tuple[str, str]:
    """The range's words ("likely 21–33") and its formula: the figure over exp() of the
    held-out errors' high and low quantiles."""
    words = t("speed.likely", lang, low=format(low, fmt), high=format(high, fmt))
    formula = (
        f"{format(low, fmt)} {unit} … {format(high, fmt)} {unit}"
        f" = {value:.4g} {unit} / exp(q_high) … {value:.4g} {unit} / exp(q_low)"
    )
    return words, formula


def speed_shown(st: Study, lang: Lang = DEFAULT_LANG) -> list[Shown]:
    """The pick's TTFT, TPOT and tokens/s, each with its formula and the range the model's own
    out-of-sample errors give it (``Speed.*_range``)."""
    sp = st.fit.speed
    if sp is None:
        return []
    f = sp.formula
    tpot_lo, tpot_hi = sp.tpot_ms_range
    gpu_lo, gpu_hi = sp.output_tokens_per_s_per_gpu_range
    rows = [
        ("speed.ttft", sp.ttft_ms, "ms", ",.0f", sp.ttft_ms_range, f.ttft),
        ("speed.tpot", sp.tpot_ms, "ms", ",.1f", sp.tpot_ms_range, f.tpot),
        ("speed.per_user", sp.output_tokens_per_s_per_user, "tok/s", ",.1f",
         (1000 / tpot_hi, 1000 / tpot_lo), f"1000 ms / {sp.tpot_ms:,.2f} ms"),
        ("speed.per_gpu", sp.output_tokens_per_s_per_gpu, "tok/s", ",.0f",
         sp.output_tokens_per_s_per_gpu_range, f.per_gpu),
        ("speed.total", sp.output_tokens_per_s, "tok/s", ",.0f",
         (gpu_lo * sp.gpus, gpu_hi * sp.gpus),
         f"{sp.output_tokens_per_s_per_gpu:,.1f} /s × {sp.gpus}"),
    ]  # fmt: skip
    out = []
    for key, raw, unit, fmt, (low, high), how in rows:
        words, range_formula = _likely(lang, raw, low, high, fmt, unit)
        out.append(
            Shown(
                t(key, lang),
                f"{format(raw, fmt)} {unit}",
                raw,
                f"{how} ; {range_formula}",
                range=words,
            )
        )
    return out


def context_grid(limit: int, start: int = 1024) -> tuple[int, ...]:
    """Powers of two from ``start`` up to ``limit``, and ``limit`` itself."""
    out = []
    c = start
    while c < limit:
        out.append(c)
        c *= 2
    out.append(max(limit, 1))
    return tuple(sorted(set(out)))


def context_ticks(xs: Sequence[int], min_ratio: float = 1.5) -> tuple[int, ...]:
    """The context values to label on a log axis: each at least ``min_ratio`` times the one
    before, so neighbouring labels (128K next to the model's 160K) do not overlap. The largest
    value (the model's limit) is always labelled; the one it crowds out is not."""
    kept: list[int] = []
    for x in sorted(set(xs), reverse=True):
        if not kept or kept[-1] >= x * min_ratio:
            kept.append(x)
    return tuple(reversed(kept))


def context_options(max_position: int | None, current: int) -> tuple[int, ...]:
    """Choices for the context slider: powers of two from 1K to the model's limit (at least
    128K), plus the model limit and the current value."""
    top = max(max_position or 131_072, current, 1024)
    grid = set(context_grid(top))
    grid.add(current)
    return tuple(sorted(grid))


def parallel_options(total_gpus: int, current: int) -> tuple[int, ...]:
    """TP / DP sizes to offer: powers of two up to the GPU count, the count itself, and the
    current value."""
    opts = {current, total_gpus}
    p = 1
    while p <= total_gpus:
        opts.add(p)
        p *= 2
    return tuple(sorted(opts))


def users_options(current: int) -> tuple[int, ...]:
    """Choices for the users slider: 1, 2, 4, ... 4096 and the current value."""
    return tuple(sorted({current, *(1 << i for i in range(13))}))


def kv_vs_context(kv: KvSizing, contexts: Sequence[int], lang: Lang = DEFAULT_LANG) -> list[Series]:
    """Per-request bytes on one GPU by layer group (stacked, they add up to
    ``kv.bytes_per_request``), each named in ``lang``."""
    xs = tuple(contexts)
    return [
        Series(lab, xs, tuple(g.bytes_at(c) for c in xs))
        for lab, g in zip(group_labels(kv, lang), kv.groups, strict=True)
    ]


def chart_limit(st: Study) -> int:
    return max(st.limit.tokens, st.context_asked)


def instances(st: Study) -> int:
    """Independent copies of the model the layout runs (each with its own prefix cache)."""
    return st.fit.layout.replicas


def kv_dtype_options(cfg: ModelConfig, gpu_arch: str | None, engine: Engine) -> tuple[str, ...]:
    """The KV dtypes ``engine`` accepts for this model on this GPU."""
    out = []
    for name in KV_DTYPE_MENU:
        try:
            adapter(engine).kv_dtype(name, cfg, gpu_arch)
        except InputError:
            continue
        out.append(name)
    return tuple(out)


def users_vs_context(st: Study, dtypes: Sequence[str], contexts: Sequence[int]) -> list[Series]:
    """Users that fit over all copies against context at the chosen layout, one line per KV
    element size: dtypes that store the same bytes (``auto``/``bf16``, the ``fp8`` spellings)
    share a line and its label. The space per GPU is the Study's; only the KV bytes change."""
    fit = st.fit
    split = fit.layout.split
    stage = stage_share(st.config, split.pp)
    engine = st.scenario.engine
    lines: dict[tuple[int, int | None], tuple[list[str], list[float]]] = {}
    for name in dtypes:
        try:
            kv = st.sizing(engine, split.tp, name)
        except InputError:
            continue
        k = kv.kv_dtype
        key = (k.bytes, k.mla_packed_bytes)
        if key in lines:
            lines[key][0].append(name)
            continue
        ys = [
            float(users_at(kv, fit.kv_space_per_gpu, c, split, fit.layout.replicas, stage)[1])
            for c in contexts
        ]
        lines[key] = ([name], ys)
    out = []
    for (element, packed), (names, ys) in lines.items():
        unit = f"{packed} B/token/layer" if packed else f"{element} B/element"
        out.append(Series(f"{' / '.join(names)} ({unit})", tuple(contexts), tuple(ys)))
    return out


@dataclass(frozen=True)
class Segment:
    name: str
    bytes: int
    formula: str


@dataclass(frozen=True)
class MemoryBreakdown:
    segments: tuple[Segment, ...]
    memory_per_gpu: int
    fits: bool
    users_needed_per_instance: int
    users_served_per_instance: int
    usable_per_gpu: int = 0

    @property
    def total(self) -> int:
        """What the bar spans: the GPU, or more when the weights overflow it."""
        return max(self.memory_per_gpu, sum(s.bytes for s in self.segments))

    @property
    def overflow(self) -> float:
        """How many times the usable memory the weights and reserve need (0: they fit)."""
        if self.fits or not self.usable_per_gpu:
            return 0.0
        return sum(s.bytes for s in self.segments) / self.usable_per_gpu

    def share(self, seg: Segment) -> float:
        """``seg``'s share of the GPU's memory."""
        return seg.bytes / self.memory_per_gpu if self.memory_per_gpu else 0.0


def nothing_fits(series: Sequence[Series]) -> bool:
    """True when no line of a users chart has a point above zero (an empty chart)."""
    return not any(y > 0 for s in series for y in s.y)


def memory_breakdown(st: Study, lang: Lang = DEFAULT_LANG) -> MemoryBreakdown:
    """The busiest GPU's memory: weights, the engine's reserve, the KV the requested users take,
    KV space left, and what lies outside the engine's fraction."""
    fit = st.fit
    copies = fit.layout.replicas * fit.layout.dp
    need = per_instance(st.scenario.users, copies)
    per_rank = fit.users // copies if copies else 0
    served = min(need, per_rank)
    kv_used = served * fit.bytes_per_request_per_gpu
    outside = fit.memory_per_gpu - fit.usable_per_gpu
    reserve = fit.reserve.total if fit.reserve else 0
    fits = fit.weights_fit
    weights = t("kv_shown.weights", lang, bytes=f"{fit.weights_per_gpu:,}")
    if not fits:
        weights += t("kv_shown.weights_over", lang, usable=f"{fit.usable_per_gpu:,}")
    # the weights whole, even past the GPU: a bar clipped to the usable memory hides by how
    # much they do not fit
    segs = [Segment(t("memory.weights", lang), fit.weights_per_gpu, weights)]
    if fit.reserve is not None:
        segs.append(Segment(t("memory.reserve", lang), reserve, reserve_formula(st, lang)))
    used = t(
        "kv_shown.kv_used",
        lang,
        requests=f"{served:,}",
        per_request=f"{fit.bytes_per_request_per_gpu:,}",
        bytes=f"{kv_used:,}",
    )
    if need > served:
        used += t("kv_shown.kv_used_short", lang, asked=f"{need:,}", fit=f"{per_rank:,}")
    if not fits:  # nothing else is there: the weights alone overflow the usable memory
        return MemoryBreakdown(tuple(segs), fit.memory_per_gpu, fits, need, 0, fit.usable_per_gpu)
    segs += [
        Segment(t("memory.kv_used", lang, users=f"{served:,}"), kv_used, used),
        Segment(
            t("memory.kv_free", lang),
            max(fit.kv_space_per_gpu - kv_used, 0),
            t(
                "kv_shown.kv_free",
                lang,
                space=f"{fit.kv_space_per_gpu:,}",
                used=f"{kv_used:,}",
            ),
        ),
        Segment(
            t("memory.outside", lang),
            outside,
            t(
                "kv_shown.outside",
                lang,
                memory=f"{fit.memory_per_gpu:,}",
                fraction=f"{fit.fraction:g}",
                bytes=f"{outside:,}",
            ),
        ),
    ]
    return MemoryBreakdown(tuple(segs), fit.memory_per_gpu, fits, need, served, fit.usable_per_gpu)


# --- measured against predicted ----------------------------------------------------------


@dataclass(frozen=True)
class Measured:
    """A back-calculation and the TP it was predicted at (the log's own TP, else the view's)."""

    tp: int
    result: BackcalcResult


def measured_vs_predicted(st: Study, reading: EngineReading) -> Measured:
    """Step 6: the engine's reported KV pool against the Study's bytes per token, sized by the
    engine that wrote the log (vLLM and SGLang may store different bytes) at the log's TP."""
    tp = reading.tp_size or st.fit.layout.tp
    engine: Engine = check_engine(reading.engine)
    kv = st.sizing(engine, tp, st.scenario.kv_dtype)
    planned = st.engines[engine].fit
    result = backcalculate(
        reading,
        float(kv.kv_bytes_per_token),
        tp,
        st.family.attention_family,
        sizing_notes(kv),
        state_bytes_per_sequence=kv.state_bytes_per_request_padded or None,
        planned_memory_fraction=planned.fraction if planned is not None else None,
    )
    return Measured(tp, result)


# --- the catalog -------------------------------------------------------------------------


@dataclass(frozen=True)
class CatalogRow:
    name: str
    family: str
    layers: int
    params_b: float
    active_b: float
    weights_gib: float
    kv_bytes_per_token: int
    kv_gib_at_32k: float
    max_context: int
    note: str
    kv_bytes_at_32k: int = 0
    verdict: FamilyVerdict | None = None

    def family_in(self, lang: Lang) -> str:
        """The family verdict in one line in ``lang`` (``family`` is the English one)."""
        return family_summary(self.verdict, lang) if self.verdict is not None else self.family

    @property
    def kv_bytes_per_token_at_32k(self) -> int:
        """The average bytes per token of a 32K request: equals the per-token figure for
        full attention, less where sliding windows or compression keep fewer tokens."""
        return -(-self.kv_bytes_at_32k // CATALOG_CONTEXT)


CATALOG_CONTEXT = 32_768


@cache
def catalog_rows() -> tuple[CatalogRow, ...]:
    """Every bundled model at TP 1 with the model's own KV dtype (auto), one layer spec each."""
    rows = []
    for name in catalog_names():
        try:
            cfg = load_catalog(name).config
            pipe = model_pipeline(cfg)
            fam, w = pipe.family, pipe.weights
            engine = DEFAULT_SCENARIO.engine
            kv = pipe.kv(engine, adapter(engine).kv_dtype("auto", cfg, None), 1)
            limit = context_limit(cfg).tokens
        except InputError as err:
            rows.append(CatalogRow(name, "—", 0, 0.0, 0.0, 0.0, 0, 0.0, 0, str(err), 0))
            continue
        rows.append(
            CatalogRow(
                name,
                family_summary(fam),
                cfg.num_hidden_layers,
                round(w.params_total / 1e9, 1),
                round(w.params_active / 1e9, 1),
                round(w.weight_bytes / GIB, 1),
                kv.kv_bytes_per_token,
                round(kv.bytes_per_request(CATALOG_CONTEXT) / GIB, 2),
                limit,
                "",
                kv.bytes_per_request(CATALOG_CONTEXT),
                fam,
            )
        )
    return tuple(rows)
