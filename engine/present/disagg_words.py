"""The disaggregated candidate in words, numbers and JSON: the pools, the ratio, the KV transfer,
the speed with its ranges, the GPUs and the cost beside the aggregated fleet's, and the verdict;
every figure with its formula (the pages, the CLI text, the report and ``study --json``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.decision import Decision
from engine.disagg.choice import Choice
from engine.disagg.curve import pools_curve
from engine.disagg.plan import DisaggPlan, place
from engine.i18n import DEFAULT_LANG, Lang, t
from engine.launch.plan import LaunchPlan
from engine.launch.plan_parts import EnvVar
from engine.present.charts_data import Shown
from engine.present.disagg_render import disagg_script
from engine.present.speed_chart import SpeedChart, SpeedCurve, chart_of
from engine.text.words import say, say_all


def pools_words(c: Choice, lang: Lang = DEFAULT_LANG) -> str:
    """ "3 × TP 4 prefill + 1 × TP 4 decode" in the reader's language."""
    z = c.candidate.sized
    assert z is not None
    p, d = z.prefill, z.decode
    return t(
        "disagg.pools", lang,
        prefill=p.workers, prefill_layout=say(p.worker.candidate.layout.name(), lang),
        decode=d.workers, decode_layout=say(d.worker.candidate.layout.name(), lang),
    )  # fmt: skip


def _money(value: float | None) -> str:
    return "—" if value is None else f"${value:,.3f}" if value < 10 else f"${value:,.0f}"


def _pool_json(c: Choice, role: str) -> dict[str, Any] | None:
    """One pool: its worker's layout (in words), the workers, their GPUs and their load."""
    z = c.candidate.sized
    if z is None:
        return None
    pool = z.prefill if role == "prefill" else z.decode
    w = pool.worker.candidate
    return {
        "layout": say(w.layout.name(), markdown=False),
        "workers": pool.workers,
        "gpus": pool.gpus,
        "gpus_per_worker": pool.worker.gpus,
        "kv_space_per_gpu": w.kv_space_per_gpu,
        "requests_per_worker": (z.rate / pool.workers if role == "prefill" else z.concurrency),
    }


def _aggregated_json(c: Choice, tokens: int, osl: int) -> dict[str, Any] | None:
    a = c.aggregated
    if a is None:
        return None
    sp = a.speed
    return {
        "gpus": a.gpus,
        "layout": say(a.layout),
        "ttft_ms": sp.ttft_ms,
        "ttft_ms_range": list(sp.ttft_ms_range),
        "tpot_ms": sp.tpot_ms,
        "tpot_ms_range": list(sp.tpot_ms_range),
        "output_tokens_per_s_per_gpu": sp.output_tokens_per_s_per_gpu,
        "output_tokens_per_s_per_gpu_range": list(sp.output_tokens_per_s_per_gpu_range),
        "cost_per_hour": c.cost_per_hour(a.gpus),
        "cost_per_million_tokens": c.cost_per_million(a.gpus, tokens),
        "cost_per_million_output_tokens": c.cost_per_million(a.gpus, osl),
    }


def disagg_json(c: Choice, per_node: int) -> dict[str, Any]:
    """``study --json``'s ``disaggregated``."""
    d = c.candidate
    z, speed = d.sized, d.speed
    tokens = d.isl + d.osl
    out: dict[str, Any] = {
        "request_rate": d.rate,
        "prefill": _pool_json(c, "prefill"),
        "decode": _pool_json(c, "decode"),
        "ratio": d.ratio,
        "kv_transfer_ms": z.transfer.seconds * 1e3 if z is not None else None,
        "speed": speed.to_json() if speed is not None else None,
        "wins": c.verdict.wins,
        "reason": say(c.verdict.reason),
        "reason_code": c.verdict.reason.to_json(),
        "saving": c.verdict.saving,
        "plan": "disaggregated" if c.plans_disaggregated else "aggregated",
        "problem": say(d.problem) if d.problem is not None else None,
        "problem_code": d.problem.to_json() if d.problem is not None else None,
    }
    if z is None or speed is None:
        return {**out, "kv_transfer": None, "capacity": None, "formula": None}
    _, nodes = place(z, per_node)
    out["kv_transfer"] = {
        "bytes": z.transfer.bytes,
        "received_per_gpu": z.transfer.received_per_gpu,
        "sent_per_gpu": z.transfer.sent_per_gpu,
        "link": z.transfer.link.kind,
        "gbps": z.transfer.link.gbps,
        "reason": say(z.transfer.link.why),
        "source": z.transfer.link.source,
        "formula": z.transfer.formula,
    }
    out["capacity"] = {
        "gpus": z.gpus,
        "nodes": nodes,
        "gpus_given": c.gpus_given,
        "fits_given": c.fits_given,
        "concurrency_per_decode_worker": z.concurrency,
        "most_per_decode_worker": z.most,
        "gpu_price": c.usd_per_gpu_hour,
        "cost_per_hour": c.cost_per_hour(z.gpus),
        "cost_per_million_tokens": c.cost_per_million(z.gpus, tokens),
        "cost_per_million_output_tokens": c.cost_per_million(z.gpus, d.osl),
        "aggregated": _aggregated_json(c, tokens, d.osl),
    }
    f = speed.formula
    out["formula"] = {
        "gpus": f"{z.prefill.workers} × {z.prefill.worker.gpus} + {z.decode.workers}"
        f" × {z.decode.worker.gpus} = {z.gpus}",
        "ttft": f.ttft,
        "tpot": f.tpot,
        "output_tokens_per_s_per_gpu": f.per_gpu,
        "kv_transfer": z.transfer.formula,
    }
    return out


def _likely(lang: Lang, low: float, high: float, fmt: str) -> str:
    return t("speed.likely", lang, low=format(low, fmt), high=format(high, fmt))


def disagg_shown(c: Choice, lang: Lang = DEFAULT_LANG) -> list[Shown]:
    """The pools' numbers for a page, each with its formula (nothing when there is no
    candidate: the verdict says why)."""
    d = c.candidate
    z, sp = d.sized, d.speed
    if z is None or sp is None:
        return []
    f = sp.formula
    a = c.aggregated
    tokens = d.isl + d.osl
    cost, agg_cost = (
        c.cost_per_million(z.gpus, tokens),
        (c.cost_per_million(a.gpus, tokens) if a else None),
    )
    gpus_formula = (
        f"{z.prefill.workers} × {z.prefill.worker.gpus} + {z.decode.workers}"
        f" × {z.decode.worker.gpus} = {z.gpus}"
    )
    return [
        Shown(t("disagg.shown.pools", lang), pools_words(c, lang), z.gpus, gpus_formula),
        Shown(t("disagg.shown.gpus", lang),
              t("disagg.shown.versus", lang, mine=f"{z.gpus:,}",
                theirs=f"{a.gpus:,}" if a else "—"),
              z.gpus, gpus_formula),
        Shown(t("disagg.shown.cost", lang),
              t("disagg.shown.versus", lang, mine=_money(cost), theirs=_money(agg_cost)),
              cost or 0.0,
              f"{z.gpus} × ${c.usd_per_gpu_hour or 0:g}/h / ({d.rate:g} /s × {tokens} × 3600)"
              f" × 10^6 = {_money(cost)}"),
        Shown(t("disagg.shown.ratio", lang), f"{z.prefill.gpus} : {z.decode.gpus}",
              z.prefill.gpus / z.decode.gpus, f"{z.prefill.gpus} / {z.decode.gpus} = "
              f"{z.prefill.gpus / z.decode.gpus:.3g}"),
        Shown(t("disagg.shown.transfer", lang), f"{z.transfer.seconds * 1e3:,.2f} ms",
              z.transfer.seconds * 1e3, z.transfer.formula, help=say(z.transfer.link.why, lang)),
        Shown(t("speed.ttft", lang), f"{sp.ttft_ms:,.0f} ms", sp.ttft_ms, f.ttft,
              range=_likely(lang, *sp.ttft_ms_range, ",.0f")),
        Shown(t("speed.tpot", lang), f"{sp.tpot_ms:,.1f} ms", sp.tpot_ms, f.tpot,
              range=_likely(lang, *sp.tpot_ms_range, ",.1f")),
        Shown(t("speed.per_gpu", lang), f"{sp.output_tokens_per_s_per_gpu:,.0f} tok/s",
              sp.output_tokens_per_s_per_gpu, f.per_gpu,
              range=_likely(lang, *sp.output_tokens_per_s_per_gpu_range, ",.0f")),
    ]  # fmt: skip


def disagg_lines(c: Choice, lang: Lang = DEFAULT_LANG) -> list[str]:
    """The candidate in a few lines (the CLI's text, the report's bullets): the verdict, then
    the pools, the transfer and the speed."""
    out = [say(c.verdict.reason, lang)]
    d = c.candidate
    z, sp = d.sized, d.speed
    if z is None or sp is None:
        return out
    out.append(t("disagg.line.pools", lang, pools=pools_words(c, lang), gpus=z.gpus,
                 ratio=f"{z.prefill.gpus} : {z.decode.gpus}"))  # fmt: skip
    out.append(t("disagg.line.transfer", lang, ms=f"{z.transfer.seconds * 1e3:,.2f}",
                 mib=f"{z.transfer.bytes / 2**20:,.1f}",
                 link=say(z.transfer.link.why, lang)))  # fmt: skip
    ttft_lo, ttft_hi = sp.ttft_ms_range
    tpot_lo, tpot_hi = sp.tpot_ms_range
    out.append(t("disagg.line.speed", lang, ttft=f"{sp.ttft_ms:,.0f}", tpot=f"{sp.tpot_ms:.1f}",
                 ttft_range=f"{ttft_lo:,.0f}–{ttft_hi:,.0f}",
                 tpot_range=f"{tpot_lo:.1f}–{tpot_hi:.1f}",
                 tps=f"{sp.output_tokens_per_s_per_gpu:,.0f}"))  # fmt: skip
    if not c.fits_given:
        out.append(t("disagg.line.more_gpus", lang, gpus=z.gpus, given=c.gpus_given))
    return out


def disagg_chart(c: Choice, lang: Lang = DEFAULT_LANG) -> SpeedChart:
    """The pools' curve (each decode worker's load, the prefill GPUs it takes), the sized pick
    and the aggregated pick, on the tokens/s per GPU against tokens/s per user plane. The
    pools' TTFT is the prefill pool's at the rate, whatever the decode workers' load."""
    d = c.candidate
    z = d.sized
    if z is None or d.speed is None:
        return chart_of(())
    sp = d.speed
    points = pools_curve(z, d.targets)
    out = []
    if points:
        name = t("disagg.chart.pools", lang, pools=pools_words(c, lang))
        out.append(SpeedCurve(
            name, False, True, (), tuple(p.per_user for p in points),
            tuple(p.per_gpu for p in points), tuple(p.running for p in points),
            tuple(1000 / p.per_user for p in points), tuple(sp.ttft_ms for _ in points),
        ))  # fmt: skip
    out.append(SpeedCurve(
        t("disagg.chart.pick", lang, rate=f"{d.rate:g}"), True, True, (),
        (sp.output_tokens_per_s_per_user,), (sp.output_tokens_per_s_per_gpu,), (z.running,),
        (sp.tpot_ms,), (sp.ttft_ms,),
    ))  # fmt: skip
    a = c.aggregated
    if a is not None:
        s = a.speed
        out.append(SpeedCurve(
            t("disagg.chart.aggregated", lang, layout=say(a.layout, lang), gpus=a.gpus), True,
            True, (), (s.output_tokens_per_s_per_user,), (s.output_tokens_per_s_per_gpu,), (0,),
            (s.tpot_ms,), (s.ttft_ms,),
        ))  # fmt: skip
    return chart_of(out)


def _reason(why: Decision) -> dict[str, Any]:
    """A plan part's reason in English beside its code and parameters."""
    out = why.to_json()
    return {"reason": say(why, markdown=False), "code": out["code"], "params": out["params"]}


def _env_json(env: Sequence[EnvVar]) -> list[dict[str, Any]]:
    return [{"name": e.name, "value": e.value, **_reason(e.why)} for e in env]


def _pool_plan_json(plan: LaunchPlan) -> dict[str, Any]:
    """One pool's flags, environment and what is left to the engine, each with its reason."""
    return {
        "layout": say(plan.layout.name(), markdown=False),
        "argv": plan.argv,
        "flags": [{"flag": f.flag, "value": f.value, **_reason(f.why)} for f in plan.flags],
        "env": _env_json(plan.env),
        "left_to_engine": [{"flag": x.flag, **_reason(x.why)} for x in plan.left_to_engine],
        "warnings": say_all(plan.warned),
        "notes": say_all(plan.noted),
    }


def disagg_plan_json(p: DisaggPlan, per_node: int, lang: Lang = DEFAULT_LANG) -> dict[str, Any]:
    """``plan --disaggregated --json``: the pools' plans, every server on its node, the router,
    the script and the candidate they were sized from."""
    return {
        "disaggregated": True,
        "engine": p.engine,
        "engine_version": p.prefill.engine_version,
        "model": p.prefill.model_id,
        "gpu": p.prefill.gpu_key,
        "nodes": p.nodes,
        "gpus_per_node": p.gpus_per_node,
        "runnable": p.runnable,
        "blocked_by": [say(b) for b in p.blocked_by],
        "not_the_pick": say(p.label) if p.label is not None else None,
        "pools": {role: _pool_plan_json(plan) for role, plan in p.pools},
        "servers": [
            {
                "role": s.role,
                "worker": s.worker,
                "node": s.node,
                "rank": s.command.rank,
                "argv": list(s.command.argv),
                "devices": list(s.command.devices) if s.command.devices is not None else None,
                "port": s.command.port,
                "bootstrap_port": s.bootstrap_port,
                "env": _env_json(s.env),
            }
            for s in p.servers
        ],
        "router": {
            "argv": list(p.router.argv),
            "reason": say(p.router.why),
            "reason_code": p.router.why.to_json(),
            "image": p.router.facts.image,
            "install": p.router.facts.install,
            "source": p.router.facts.source,
        },
        "script": disagg_script(p, lang),
    }
