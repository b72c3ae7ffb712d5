"""The Study's answers as sentences in the reader's language: the verdict, the chosen layout in
words, and the hardware gates.

The engine decides (status, numbers, which gate failed); this module only words the decision,
from the catalogs in ``data/i18n``. English keeps the engine's own sentences where the engine
writes one (a verdict reason, a gate reason), so the CLI, the JSON and the English page say the
same thing; other languages fill the catalog's sentence with the same numbers, and a test checks
that every number of the English sentence appears in the translation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.hardware.gates import Gate, kernel_gates
from engine.i18n import DEFAULT_LANG, Lang, t
from engine.launch.layout import Candidate, Layout, layout_rules
from engine.launch.plan import LaunchPlan
from engine.present.sources import clean
from engine.present.units import gib, tokens

if TYPE_CHECKING:
    from engine.study import Study


@dataclass(frozen=True)
class Worded:
    """A decision in words: a status, a title, the one reason, and what to try."""

    status: str
    title: str
    reason: str
    tips: tuple[str, ...] = ()


# --- the layout ---------------------------------------------------------------------------------


def layout_name(layout: Layout, lang: Lang = DEFAULT_LANG) -> str:
    """``TP 8 + EP``, ``2 replicas of TP 4`` (the engine's short name, worded per language)."""
    if lang == DEFAULT_LANG:
        return layout.describe()
    s = layout.split
    key = "layout.split"
    if s.dp > 1 and s.pp > 1:
        key = "layout.split_dp_pp"
    elif s.dp > 1:
        key = "layout.split_dp"
    elif s.pp > 1:
        key = "layout.split_pp"
    copy = t(key + ("_ep" if s.ep else ""), lang, tp=s.tp, dp=s.dp, pp=s.pp)
    if layout.replicas == 1:
        return copy
    return t("layout.replicas", lang, n=layout.replicas, copy=copy)


def layout_words(st: Study, lang: Lang = DEFAULT_LANG) -> str:
    """The chosen layout as a sentence: copies, GPUs per copy, how each copy is cut, and what
    the launch gives (context and users)."""
    fit = st.fit
    lay = fit.layout
    s = lay.split
    nodes = max(1, s.gpus // st.scenario.gpus_per_node)
    copies = "layout.words.one_copy" if lay.replicas == 1 else "layout.words.copies"
    cut = [t("layout.words.tp", lang, tp=s.tp)]
    if s.dp > 1:
        cut.append(t("layout.words.dp", lang, dp=s.dp))
    if s.pp > 1:
        cut.append(t("layout.words.pp", lang, pp=s.pp))
    cut.append(
        t("layout.words.ep", lang, ranks=s.moe_group)
        if s.ep
        else t("layout.words.no_ep", lang)
        if st.family.moe
        else t("layout.words.dense", lang)
    )
    return t(
        copies,
        lang,
        n=lay.replicas,
        gpus=s.gpus,
        nodes=nodes,
        gpu=st.gpu.key,
        cut=t("layout.words.join", lang).join(cut),
        users=f"{fit.users:,}",
        context=tokens(fit.context),
    )


def _reasons_in(st: Study, lang: Lang) -> list[str]:
    """The layout search's reasons (engine/launch/layout.py ``_reasons``) worded in ``lang``:
    the same decisions, in the same order, with the same numbers."""
    s = st.scenario
    fam = st.family
    c = st.fit
    lay = c.layout
    split = lay.split
    rules = layout_rules()
    out: list[str] = []
    if s.pinned:
        out.append(t("layout.reason.pinned", lang))
    if not c.weights_fit:
        out.append(t("layout.reason.no_fit", lang))
        return out
    if split.gpus > s.gpus_per_node:
        out.append(t("layout.reason.spans_nodes", lang, gpus=split.gpus, per_node=s.gpus_per_node))
    if fam.moe and fam.attention_family in ("MLA", "DSA"):
        family = fam.attention_family
        if lay.dp > 1:
            key = "dp_attention_dsa" if family == "DSA" else "dp_attention_mla"
            users = rules.dp_attention_min_users
            out.append(t(f"layout.reason.{key}", lang, family=family, dp=lay.dp, users=users))
        else:
            out.append(t("layout.reason.tp_latent", lang, family=family, users=s.users))
    elif lay.replicas > 1 and split.gpus < s.gpus_per_node * s.nodes:
        out.append(t("layout.reason.replicate", lang, tp=lay.tp, replicas=lay.replicas))
    elif s.latency == "latency" and lay.tp > 1:
        out.append(t("layout.reason.latency", lang, tp=lay.tp))
    if lay.ep:
        out.append(t("layout.reason.ep", lang, experts=fam.num_experts, ranks=split.moe_group))
    elif fam.moe and split.moe_group > 1:
        out.append(t("layout.reason.sliced", lang, ranks=split.moe_group))
    if not c.context_fits:
        out.append(t("layout.reason.context", lang, context=f"{c.context:,}"))
    return out


def layout_reasons(st: Study, lang: Lang = DEFAULT_LANG) -> tuple[list[str], list[str]]:
    """Why the layout search picked this layout, as sentences without their sources, and the
    sources (for a "Sources" list): the engine writes each rule's source in parentheses.
    English is the engine's own sentences; another language words the same reasons, unless the
    engine gave a reason this module does not know (then English, rather than a wrong one)."""
    rules = layout_rules()
    known = [
        rules.dsa_source,
        rules.dp_attention_min_users_source,
        rules.replicate_source,
        rules.latency_tp_source,
        rules.expert_parallel_source,
    ]
    reasons: list[str] = []
    used: list[str] = []
    for reason in st.search.reasons:
        for src in known:
            if src and src in reason:
                used.append(src)
                reason = reason.replace(f" ({src})", "").replace(f": {src})", ")")
        reasons.append(clean(reason))
    if lang != DEFAULT_LANG:
        worded = _reasons_in(st, lang)
        if len(worded) == len(reasons):
            reasons = worded
    return reasons, list(dict.fromkeys(used))


# --- the verdict --------------------------------------------------------------------------------


def verdict(st: Study, lang: Lang = DEFAULT_LANG) -> Worded:
    """The verdict's title, reason and suggestions in ``lang``."""
    v = st.verdict
    title = t(f"verdict.status.{v.status}", lang)
    if lang == DEFAULT_LANG:
        return Worded(v.status, title, clean(v.reason), tuple(clean(x) for x in v.suggestions))
    pick = st.fit
    lay = layout_name(pick.layout, lang)
    s = st.scenario
    tips: list[str] = []
    if v.status == "blocked":
        failed = [g for g in st.gates.gates if g.status == "fail" and g.name != "fits in memory"]
        g = gate(failed[0], st, lang) if failed else None
        if g is None:
            return Worded(v.status, title, clean(v.reason), v.suggestions)
        return Worded(
            v.status, title, t("verdict.reason.blocked", lang, gate=g.title, reason=g.reason),
            (g.tips[0],) if g.tips else (),
        )  # fmt: skip
    if v.status == "does_not_fit":
        if st.min_gpus is not None:
            tips.append(
                t(
                    "verdict.tip.fewest",
                    lang,
                    n=st.min_gpus,
                    gpu=s.gpu,
                    context=f"{st.context_asked:,}",
                )
            )
        tips += [clean(x) for x in v.suggestions[len(tips) :]]
        reason = t(
            "verdict.reason.does_not_fit",
            lang,
            weights=gib(pick.weights_per_gpu, 1),
            layout=lay,
            usable=gib(pick.usable_per_gpu, 1),
        )
    elif v.status == "shorter_context":
        reason = t(
            "verdict.reason.shorter_context",
            lang,
            fits=f"{pick.context:,}",
            asked=f"{st.context_asked:,}",
            layout=lay,
        )
        if st.min_gpus:
            tips.append(t("verdict.tip.full_context", lang, n=st.min_gpus, gpu=s.gpu))
    elif v.status == "fewer_users":
        reason = t(
            "verdict.reason.fewer_users",
            lang,
            users=f"{pick.users:,}",
            asked=f"{s.users:,}",
            context=f"{pick.context:,}",
            layout=lay,
        )
    else:
        reason = t(
            "verdict.reason.runs",
            lang,
            layout=lay,
            users=f"{pick.users:,}",
            context=f"{pick.context:,}",
        )
    return Worded(v.status, title, reason, tuple(tips))


# --- gates ----------------------------------------------------------------------------------------

# The engine's gate names (engine/hardware/gates.py) -> catalog keys.
GATE_KEYS = {
    "DSA sparse-attention kernels": "dsa",
    "MLA attention backend": "mla",
    "linear-attention kernels": "linear",
    "attention backend": "attention",
    "FP8 weights": "fp8_weights",
    "NVFP4 weights": "nvfp4_weights",
    "MXFP4 weights": "mxfp4_weights",
    "FP8 KV cache": "fp8_kv",
    "tensor-parallel split": "tp",
    "fits in memory": "fit",
}


def _kernel_rule(kind: str, arch: str) -> tuple[str, str] | None:
    """The catalog keys of a per-generation kernel fact (data/kernel_gates.yaml)."""
    rules = getattr(kernel_gates(), kind)
    if arch not in rules.archs:
        return None
    return (f"gate.kernels.{kind}.{arch}.reason", f"gate.kernels.{kind}.{arch}.fix")


def _fit_reason(fit: Candidate, lang: Lang) -> str:
    return t(
        "gate.fit.reason",
        lang,
        layout=layout_name(fit.layout, lang),
        weights=gib(fit.weights_per_gpu, 1),
        request=gib(fit.bytes_per_request_per_gpu),
        context=f"{fit.context:,}",
        usable=gib(fit.usable_per_gpu, 1),
        fraction=f"{fit.fraction:g}",
        memory=gib(fit.memory_per_gpu, 1),
    )


def gate(g: Gate, st: Study, lang: Lang = DEFAULT_LANG) -> Worded:
    """One gate in ``lang``: its status, name, reason and fix. English is the engine's text;
    a gate this module does not know keeps the engine's English."""
    key = GATE_KEYS.get(g.name)
    title = t(f"gate.{key}.name", lang) if key else g.name
    english = Worded(g.status, title, clean(g.reason), (clean(g.fix),) if g.fix else ())
    if lang == DEFAULT_LANG or key is None:
        return english
    gpu = st.gpu
    cfg = st.config
    fit = st.fit
    params: dict[str, object] = {"gpu": gpu.key, "arch": gpu.arch}
    fix_key: str | None = None
    if key in ("dsa", "mla"):
        rule = _kernel_rule(key, gpu.arch)
        if rule is None:
            reason = t("gate.kernels.unknown", lang, arch=gpu.arch)
            return Worded(g.status, title, t("gate.kernels.prefix", lang, reason=reason, **params))
        reason_key, fix_key = rule
        reason = t("gate.kernels.prefix", lang, reason=t(reason_key, lang), **params)
        fix = t(fix_key, lang) if g.fix else ""
        return Worded(g.status, title, reason, (fix,) if fix else ())
    if key == "linear":
        reason = t("gate.linear.reason", lang, kind=st.family.linear_kind or "", **params)
    elif key == "attention":
        reason = t("gate.attention.reason", lang, family=st.family.attention_family, **params)
    elif key == "fp8_weights":
        reason = t(f"gate.fp8_weights.{g.status}", lang, **params)
        fix_key = "gate.fp8_weights.fix"
    elif key == "nvfp4_weights":
        reason = t(f"gate.nvfp4_weights.{g.status}", lang, **params)
        fix_key = "gate.nvfp4_weights.fix"
    elif key == "mxfp4_weights":
        reason = t("gate.mxfp4_weights." + ("native" if gpu.fp4 else "emulated"), lang, **params)
    elif key == "fp8_kv":
        reason = t(f"gate.fp8_kv.{g.status}", lang, stored=st.primary.kv_dtype.stored, **params)
        fix_key = "gate.fp8_kv.fix"
    elif key == "tp":
        heads = cfg.num_attention_heads
        tp = fit.layout.tp
        reason = t(f"gate.tp.{g.status}", lang, heads=heads, tp=tp, per=heads // tp if tp else 0)
        fix_key = "gate.tp.fix"
    else:
        reason = _fit_reason(fit, lang)
        if g.status == "warn":
            reason = t("gate.fit.shortened", lang, reason=reason)
        fix_key = f"gate.fit.fix_{g.status}"
    fix = t(fix_key, lang, heads=cfg.num_attention_heads) if fix_key and g.fix else ""
    return Worded(g.status, title, reason, (fix,) if fix else ())


def gates(st: Study, lang: Lang = DEFAULT_LANG) -> list[Worded]:
    return [gate(g, st, lang) for g in st.gates.gates]


def blocked(st: Study, plan: LaunchPlan, lang: Lang = DEFAULT_LANG) -> list[str]:
    """Why a launch plan is blocked: the failing gates, and the plan's own weights when they do
    not fit (engine/launch/plan.py lists both), in ``lang``; English is the plan's own text."""
    if lang == DEFAULT_LANG or not plan.blocked_by:
        return [clean(b) for b in plan.blocked_by]
    out = []
    for g in st.gates.gates:
        if g.status != "fail":
            continue
        w = gate(g, st, lang)
        key = "blocked.item_fix" if w.tips else "blocked.item"
        out.append(t(key, lang, name=w.title, reason=w.reason, fix=w.tips[0] if w.tips else ""))
    if len(out) < len(plan.blocked_by):  # this engine's weights do not fit at the layout
        reason = _fit_reason(plan.fit, lang)
        out.append(t("blocked.item", lang, name=t("gate.fit.name", lang), reason=reason))
    return out
