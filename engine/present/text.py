"""The Study as plain text for a terminal (the CLI's output without ``--json``). A name or a value
from the config (a file name, an architecture, a dtype, a parser) is shown on one line
(``engine.text.safe.one_line``): its line breaks cannot fake a line of output."""

from __future__ import annotations

from typing import Any

from engine.alternatives import alternatives
from engine.capacity import capacity, given
from engine.i18n import Lang, t
from engine.present.capacity_words import capacity_lines
from engine.present.render import shell
from engine.study import Study
from engine.text.safe import one_line
from engine.text.sources import clean
from engine.text.words import say, say_all

GIB = 1 << 30


def diagnose_text(out: dict[str, Any]) -> str:
    lines = [
        f"{one_line(out['model'])}  ({one_line(out['architecture'])})",
        f"family: {out['attention_family']}"
        + (" + sliding window" if out["sliding_window"] else "")
        + (f" + MoE {out['experts_per_token']}/{out['num_experts']}" if out["moe"] else "")
        + (f" + MTP ×{out['mtp_layers']}" if out["mtp_layers"] else "")
        + (f" + multimodal ({out['fusion']} fusion)" if out["multimodal"] else ""),
        f"KV dtype: {one_line(out['kv_dtype'])} -> stored as {one_line(out['kv_dtype_stored'])}"
        f"  (TP {out['tp']})",
    ]
    for g in out["layer_groups"]:
        lines.append(f"  {g['kind']:<10} {g['formula']}")
    lines.append(
        f"KV bytes/token: {out['kv_bytes_per_token']:,} (model); "
        f"{out['kv_bytes_per_token_per_gpu']:,} per GPU at TP {out['tp']}"
    )
    if out["state_bytes_per_request"]:
        lines.append(f"state bytes/request per rank: {out['state_bytes_per_request']:,}")
    lines.append(
        f"per request at {out['context']:,} tokens: {out['kv_bytes_per_request']:,} B "
        f"({out['kv_bytes_per_request'] / GIB:.2f} GiB)"
    )
    sg = out["sglang"]
    if sg["differs"]:
        lines.append(
            f"SGLang: {sg['kv_bytes_per_token']:,} B/token ({sg['kv_dtype_stored']}), "
            f"state {sg['state_bytes_per_request']:,} B/request"
        )
    lines.append(
        f"params: {out['params_total'] / 1e9:.1f} B total, "
        f"{out['params_active'] / 1e9:.1f} B active; "
        f"weights {out['weight_bytes'] / GIB:.1f} GiB ({one_line(out['checkpoint_format'])})"
    )
    lines.append(
        f"on {out['gpus']}× {out['gpu']}: {out['max_concurrency']:,} concurrent users "
        f"({out['instances']} instance(s), {out['weights_per_gpu'] / GIB:.1f} GiB weights per GPU)"
    )
    return "\n".join(lines)


def _likely(r: tuple[float, float], fmt: str) -> str:
    return t("speed.likely", "en", low=format(r[0], fmt), high=format(r[1], fmt))


def study_text(st: Study) -> str:
    s = st.scenario
    fit = st.fit
    lines = [
        f"{one_line(st.model.name)} on {s.nodes} node{'' if s.nodes == 1 else 's'} × "
        f"{s.gpus_per_node} {st.gpu.key}, {s.engine}",
        f"verdict: {st.verdict.status} — {say(st.verdict.reason)}",
        *([f"  fix: {say(st.verdict.fix)}"] if st.verdict.fix is not None else []),
        *[f"  {say(a.what)}: {say(a.result)}" for a in alternatives(st)],
        f"layout: {st.layout.describe()}",
        *[f"  because {r}" for r in say_all(st.search.reasons)],
        f"context: {st.context:,} tokens (asked {st.context_asked:,}; model limit "
        f"{st.limit.tokens:,})",
        f"per GPU: {fit.weights_per_gpu / GIB:,.1f} GiB weights, "
        f"{fit.kv_space_per_gpu / GIB:,.1f} GiB for KV; users that fit: {fit.users:,}",
    ]
    sp = fit.speed
    calibrated = st.search_inputs is not None and st.search_inputs.factors is not None
    if sp is not None:
        isl, osl = s.workload(st.context)
        lines.append(
            f"speed ({isl:,} in / {osl:,} out, {min(s.users, fit.running):,} at once"
            + (", MTP drafts" if st.mtp else "")
            + f"): TTFT {sp.ttft_ms:,.0f} ms ({_likely(sp.ttft_ms_range, ',.0f')}), "
            f"TPOT {sp.tpot_ms:,.1f} ms ({_likely(sp.tpot_ms_range, ',.1f')}), "
            f"{sp.output_tokens_per_s_per_user:,.1f} tok/s per user, "
            f"{sp.output_tokens_per_s_per_gpu:,.0f} per GPU "
            f"({_likely(sp.output_tokens_per_s_per_gpu_range, ',.0f')}), "
            f"{sp.output_tokens_per_s:,.0f} in all "
            f"(decode {sp.decode_bound}-bound, prefill {sp.prefill_bound}-bound)"
            + ("; rates measured on this GPU (the calibration given)" if sp.measured else "")
            + ("; calibrated on your benchmark" if calibrated else "")
        )
    r = fit.reuse
    if r is not None:
        lines.append(
            f"prefix cache: {r.hit_rate:.0%} of each prompt found ({r.gpu_tokens:,.0f} tokens on "
            f"the GPU, {r.host_tokens:,.0f} in the CPU tier; hits land every {r.unit:,} tokens)"
        )
    cap = capacity(s)
    if cap is not None:
        isl, osl = s.workload(st.context)
        lines += capacity_lines(cap, isl, osl, mine=given(st, cap.rate))
    if st.plan is not None:
        lines += ["", shell(st.plan)]
    return "\n".join(lines)


def software_text(st: Study, engine: str, lang: Lang = "en") -> str:
    """Step 4 for one engine in ``lang``: versions, parsers (and where they came from), the
    checkpoint format, the extra flags with their reasons, and the notes."""

    r = st.engines[engine].software  # type: ignore[index]

    def origin(source: str | None) -> str:
        if source == "template":
            file = one_line(r.chat_template or "")
            return " (" + t("software.from.template", lang, file=file) + ")"
        return " (" + t("software.from.table", lang) + ")" if source == "table" else ""

    none = t("common.none", lang)
    title = t("software.title", lang, engine=engine, version=r.engine_version)
    lines = [
        f"{one_line(st.model.name)}  ({one_line(r.architecture)})  {title}",
        f"{t('software.min_version', lang)}: {r.min_version or t('software.unknown', lang)}",
        f"{t('software.tool_parser', lang)}: {one_line(r.tool_call_parser or none)}"
        + origin(r.tool_call_parser_from),
        f"{t('software.reasoning_parser', lang)}: {one_line(r.reasoning_parser or none)}"
        + origin(r.reasoning_parser_from),
        f"{t('software.format', lang)}: {one_line(r.checkpoint_format)} - "
        + clean("".join(say(d, lang) for d in r.checkpoint.details)),
    ]
    if r.extra_flags:
        lines.append(t("software.extra_flags", lang).strip("*"))
        for flag in r.extra_flags:
            reason = r.flag_decisions.get(flag)
            lines.append(
                f"  {one_line(flag)}" + (f"  {clean(say(reason, lang))}" if reason else "")
            )
    if r.reasons:
        lines.append(t("software.notes", lang))
        lines += [f"  - {clean(say(d, lang))}" for d in r.reasons]
    return "\n".join(lines)
