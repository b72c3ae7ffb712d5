"""The Study as JSON: the whole object (``study --json``) and the slices the older subcommands
print with their documented keys (``diagnose``, ``gates``, ``software``, ``plan``).

Every number is in bytes or tokens; the JSON is the report the app downloads too. The
Markdown report (``study_markdown``) is the same Study worded for a wiki page or a ticket.
"""

from __future__ import annotations

import re
from typing import Any

from engine.alternatives import alternatives, ask
from engine.capacity import capacity, given, price_for
from engine.engines import adapter, check_engine
from engine.errors import InputError
from engine.gates import Gate
from engine.i18n import DEFAULT_LANG, Lang, t
from engine.launch.candidate import Candidate
from engine.launch.plan import LaunchPlan
from engine.present import capacity_words as W
from engine.present import charts_data as C
from engine.present import messages as M
from engine.present.evidence_words import evidence_json, group_json
from engine.present.k8s import kubernetes_yaml, manifest_name
from engine.present.render import docker, script, shell
from engine.scenario import ENGINE_LABELS, Engine, cli_line
from engine.study import Study
from engine.text.safe import plain
from engine.text.sources import escape_markdown
from engine.text.words import say, say_all

UNITS = "bytes; GiB = 2^30 bytes, GB = 10^9 bytes"


def diagnose_json(st: Study) -> dict[str, Any]:
    """Family, KV cache, weights and fit (the ``diagnose --json`` keys): the step 1-2 slice of
    the Study plus the chosen layout's users and memory."""
    fit = st.fit
    out = st.diagnosis.to_json()
    out["evidence"] = evidence_json(st.family.evidence)
    for group, g in zip(out["layer_groups"], st.diagnosis.kv.groups, strict=True):
        group.update(group_json(g))
    # kv_bytes_per_token is the model's figure (every KV head, TP 1, as the README documents);
    # what one GPU holds at the picked layout's attention TP has a name that says so
    parts: tuple[tuple[Engine, dict[str, Any]], ...] = (("vllm", out), ("sglang", out["sglang"]))
    for engine, part in parts:
        part["kv_bytes_per_token_per_gpu"] = part["kv_bytes_per_token"]
        part["kv_bytes_per_token"] = st.sizing(engine, 1).kv_bytes_per_token
    return (
        {"model": st.model.name}
        | out
        | {
            "gpu": st.gpu.key,
            "gpus": st.scenario.total_gpus,
            "max_concurrency": fit.users,
            "users_per_instance": fit.users_per_copy,
            "instances": fit.layout.replicas,
            "weights_per_gpu": fit.weights_per_gpu,
            "kv_space_per_gpu": fit.kv_space_per_gpu,
        }
    )


def candidate_json(c: Candidate) -> dict[str, Any]:
    s = c.layout.split
    return {
        "layout": c.layout.describe(),
        "replicas": c.layout.replicas,
        "tp": s.tp,
        "dp": s.dp,
        "pp": s.pp,
        "expert_parallel": s.ep,
        "gpus_per_copy": s.gpus,
        "weights_per_gpu": c.weights_per_gpu,
        "weights_by_role": {w.role: w.bytes_per_gpu for w in c.weight_shares},
        "memory_per_gpu": c.memory_per_gpu,
        "memory_fraction": c.fraction,
        "usable_per_gpu": c.usable_per_gpu,
        "reserve_per_gpu": c.reserve.total if c.reserve else 0,
        "taken_before_kv": round(c.taken_before_kv, 6),
        "kv_space_per_gpu": c.kv_space_per_gpu,
        "kv_bytes_per_token_per_gpu": c.kv_bytes_per_token_per_gpu,
        "bytes_per_request_per_gpu": c.bytes_per_request_per_gpu,
        "context": c.context,
        "users": c.users,
        "weights_fit": c.weights_fit,
        "context_fits": c.context_fits,
        "users_fit": c.users_fit,
        "why_not": say_all(c.why),
        "speed": c.speed.to_json() if c.speed is not None else None,
        "prefix_reuse": c.reuse.to_json() if c.reuse is not None else None,
        "memory_formula": say(c.memory_formula()),
        "users_formula": say(c.users_formula()),
    }


def speed_json(st: Study) -> dict[str, Any] | None:
    """The picked (or pinned) layout's speed at the scenario's workload, with the workload and
    whether speculative decoding was counted."""
    sp = st.fit.speed
    if sp is None:
        return None
    isl, osl = st.scenario.workload(st.context)
    return sp.to_json() | {
        "input_tokens": isl,
        "output_tokens": osl,
        "concurrency": min(st.scenario.users, st.fit.running),
        "speculative": st.mtp,
        "measured_on_this_gpu": sp.measured,
    }


def gate_json(g: Gate) -> dict[str, Any]:
    """A gate with its documented keys (English words) and its decision codes."""
    return {
        "name": say(g.name),
        "status": g.status,
        "reason": say(g.reason),
        "fix": say(g.fix) if g.fix is not None else "",
        "kind": g.kind,
        "reason_code": g.reason.to_json(),
    }


def gates_json(st: Study) -> dict[str, Any]:
    r = st.gates
    return {
        "gpu": r.gpu.key,
        "gpus": r.gpus,
        "gates": [gate_json(g) for g in r.gates],
        "fits": r.fits,
        "min_gpus": st.min_gpus,
        "weights_per_gpu": r.weights_per_gpu,
        "request_bytes_per_gpu": r.request_bytes_per_gpu,
        "model": st.model.name,
    }


def software_json(st: Study, engine: str) -> dict[str, Any]:
    view = st.engines[check_engine(engine)]
    return view.software.to_json() | {"model": st.model.name}


def plan_json(plan: LaunchPlan) -> dict[str, Any]:
    """The plan's JSON (the ``plan --json`` contract plus the per-node commands)."""
    s = plan.layout.split
    return {
        "engine": plan.engine,
        "engine_version": plan.engine_version,
        "model": plan.model_id,
        "gpu": plan.gpu_key,
        "gpus": plan.gpus,
        "nodes": plan.nodes,
        "gpus_per_node": plan.gpus_per_node,
        "layout": {
            "replicas": plan.layout.replicas,
            "tp": s.tp,
            "dp": s.dp,
            "attn_dp": s.dp,
            "pp": s.pp,
            "expert_parallel": s.ep,
            "description": plan.layout.describe(),
            "reason": "; ".join(_layout_reasons(plan)),
        },
        "context": plan.context,
        "users": plan.fit.users,
        "weights_per_gpu": plan.fit.weights_per_gpu,
        "kv_space_per_gpu": plan.fit.kv_space_per_gpu,
        "memory_fraction": plan.fit.fraction,
        "argv": plan.argv,
        "shell": shell(plan),
        "script": script(plan),
        "docker": docker(plan),
        "commands": [
            {
                "node": c.node,
                "role": c.role,
                "rank": c.rank,
                "argv": list(c.argv),
                "devices": list(c.devices) if c.devices is not None else None,
                "port": c.port,
            }
            for c in plan.commands
        ],
        "env": [e.to_json() for e in plan.env],
        "flags": [f.to_json() for f in plan.flags],
        "left_to_engine": [x.to_json() for x in plan.left_to_engine],
        "runnable": plan.runnable,
        "blocked_by": [say(b) for b in plan.blocked_by],
        "blocked_by_codes": [b.to_json() for b in plan.blocked_by],
        "warnings": list(plan.warnings),
        "notes": list(plan.notes),
        "warning_codes": [w.to_json() for w in plan.warned],
        "note_codes": [n.to_json() for n in plan.noted],
        "kubernetes_yaml": kubernetes_yaml(plan, manifest_name(plan.model_name)),
        "router": (
            {
                "argv": list(plan.router.argv),
                "reason": say(plan.router.why),
                "reason_code": plan.router.why.to_json(),
                "source": plan.router.source,
            }
            if plan.router is not None
            else None
        ),
        "host_cache_bytes_per_node": plan.host_cache_bytes_per_node,
    }


def _layout_reasons(plan: LaunchPlan) -> list[str]:
    flag = adapter(plan.engine).flag("tp")
    return [f.reason for f in plan.flags if f.flag == flag]


def plan_json_of(st: Study, engine: str) -> dict[str, Any] | None:
    view = st.engines[check_engine(engine)]
    return plan_json(view.plan) if view.plan is not None else None


def study_json(st: Study) -> dict[str, Any]:
    """The whole Study."""
    found = st.search
    return {
        "scenario": st.scenario.model_dump(),
        "model": {"name": st.model.name, "source": st.model.source},
        "verdict": {
            "status": st.verdict.status,
            "runs": st.verdict.runs,
            "reason": say(st.verdict.reason),
            "reason_code": st.verdict.reason.to_json(),
            "suggestions": [say(st.verdict.fix)] if st.verdict.fix is not None else [],
        },
        "context": {
            "asked": st.context_asked,
            "planned": st.context,
            "model_limit": st.limit.tokens,
            "model_limit_formula": st.limit.formula,
        },
        "layout": {
            "pick": candidate_json(found.pick),
            "reasons": say_all(found.reasons),
            "reason_codes": [r.to_json() for r in found.reasons],
            "pinned": found.pinned,
            "candidates": [candidate_json(c) for c in found.candidates],
            "rejected": [
                {"layout": r.layout.describe(), "why": say(r.why), "why_code": r.why.to_json()}
                for r in found.rejected
            ],
        },
        "diagnose": diagnose_json(st),
        "gates": gates_json(st),
        "software": {e: software_json(st, e) for e in st.engines},
        "plans": {e: plan_json_of(st, e) for e in st.engines},
        "speed": speed_json(st),
        "alternatives": [a.to_json() for a in alternatives(st)],
        "capacity": _capacity_json(st),
        "cost": _cost_json(st),
        "engine_problems": {e: say(v.problem) for e, v in st.engines.items() if v.problem},
        "notes": say_all(st.notes),
        "units": UNITS,
    }


def _cost_json(st: Study) -> dict[str, Any] | None:
    """What the scenario's GPUs cost at the asked load: the price and its source, and each
    candidate layout's $/hour and $/M tokens (None: no price is known for this GPU)."""
    s = st.scenario
    price = price_for(s.gpu, s.gpu_price)
    if price is None:
        return None
    return {
        "gpu_price": price.usd_per_hour,
        "price_source": price.source or "user",
        "price_date": price.date,
        "layouts": [
            {
                "layout": c.layout,
                "pick": c.pick,
                "gpus": c.gpus,
                "cost_per_hour": c.cost_per_hour,
                "cost_per_million_output_tokens": c.per_million_output,
                "cost_per_million_tokens": c.per_million,
                "formula": c.formula,
            }
            for c in W.layout_costs(st, price)
        ],
    }


def _capacity_json(st: Study) -> dict[str, Any] | None:
    found = capacity(st.scenario)
    if found is None:
        return None
    mine = given(st, found.rate)
    return {**found.to_json(), "given": mine.to_json() if mine is not None else None}


# --- the Markdown report ------------------------------------------------------------------------


def _fence(text: str, info: str = "") -> str:
    """A fenced code block that no run of backticks inside ``text`` can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text.rstrip()}\n{ticks}"


def _cell(text: object) -> str:
    """A Markdown table cell: escaped, on one line, pipes kept literal."""
    return escape_markdown(" ".join(str(text).split()))


def _table(header: tuple[str, ...], rows: list[tuple[object, ...]]) -> list[str]:
    out = ["| " + " | ".join(_cell(h) for h in header) + " |"]
    out.append("|" + "---|" * len(header))
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out


def _capacity_markdown(st: Study, lang: Lang) -> list[str]:
    """Capacity and cost: each GPU's answer for the rate (or why none serves it), else the
    cost of the sidebar's GPUs at the asked load, each with its price's source."""
    s = st.scenario
    price = price_for(s.gpu, s.gpu_price)
    out = ["", "## " + t("report.capacity", lang), ""]
    if s.request_rate is not None:
        try:
            cap = capacity(s)
        except InputError as err:
            return [*out, escape_markdown(say(err.decision, lang))]
        assert cap is not None
        isl, osl = s.workload(st.context)
        head, *lines = W.capacity_lines(cap, isl, osl, lang, given(st, cap.rate))
        out += [escape_markdown(head), ""]
        out += [f"- {escape_markdown(line.strip())}" for line in lines]
        pick = cap.primary.pick
        if pick is not None:
            out += ["", _fence(pick.formula)]
    else:
        costs = [c for c in W.layout_costs(st, price, lang) if c.pick]
        for c in costs:
            out += _table(
                (t("report.quantity", lang), t("report.value", lang), t("report.formula", lang)),
                [(t("capacity.col.per_million", lang), W.money(c.per_million, 3), c.formula),
                 (t("capacity.col.cost_per_hour", lang), W.money(c.cost_per_hour), "")],
            )  # fmt: skip
    if price is None:
        out += ["", escape_markdown(t("capacity.page.no_price", lang, gpu=s.gpu))]
    elif price.own:
        out += ["", escape_markdown(t("capacity.page.own_price", lang, gpu=s.gpu,
                                      usd=f"{price.usd_per_hour:g}"))]  # fmt: skip
    else:
        out += ["", escape_markdown(t("capacity.page.price", lang, gpu=s.gpu,
                                      usd=f"{price.usd_per_hour:g}", date=price.date or "",
                                      source=price.source or ""))]  # fmt: skip
    return out


def study_markdown(st: Study, lang: Lang = DEFAULT_LANG, link: str | None = None) -> str:
    """The whole Study as Markdown to paste into a wiki page or a ticket: the scenario, the
    verdict, the layout, every headline number with its formula, the gates, the launch
    commands, the share link and the command that reproduces it. Every text from a config or a
    user is escaped; commands sit in fences they cannot close."""

    s = st.scenario
    v = M.verdict(st, lang)
    name = escape_markdown(st.model.name)
    out = [
        "# " + t("report.title", lang, model=name, nodes=s.nodes, per_node=s.gpus_per_node,
                 gpu=escape_markdown(st.gpu.key)),
        "",
        f"**{escape_markdown(v.title)}** — {escape_markdown(v.reason)}",
    ]  # fmt: skip
    out += [f"- {escape_markdown(tip)}" for tip in v.tips]
    alts = alternatives(st)
    if alts:
        out += ["", escape_markdown(say(ask(st), lang)) + ":", ""]
        out += [
            f"- {escape_markdown(say(a.what, lang))} — {escape_markdown(say(a.result, lang))}"
            for a in alts
        ]
    auto = t("common.auto", lang)
    pinned = ", ".join(
        f"{k.upper()} {getattr(s, k)}" for k in ("tp", "dp", "pp", "replicas") if getattr(s, k)
    )
    if s.ep is not None:
        ep = "EP " + t("common.on" if s.ep else "common.off", lang)
        pinned = ", ".join(x for x in (pinned, ep) if x)
    source = t(f"common.source.{st.model.source}", lang)
    out += ["", "## " + t("report.scenario", lang), ""]
    out += _table(
        (t("report.field", lang), t("report.value", lang)),
        [
            (t("report.model", lang), f"{st.model.name} ({source})"),
            (t("report.gpus", lang), t("report.gpus_value", lang, nodes=s.nodes,
                                         per_node=s.gpus_per_node, gpu=st.gpu.key)),
            (t("report.engine", lang),
             f"{ENGINE_LABELS[s.engine]} {st.plan.engine_version if st.plan else ''}".rstrip()),
            (t("report.context", lang), f"{st.context_asked:,}"),
            (t("report.users", lang), f"{s.users:,}"),
            (t("report.prefix", lang), f"{s.prefix_overlap} %"),
            (t("report.latency", lang), t(f"sidebar.priority.{s.latency}", lang)),
            (t("report.kv_dtype", lang), auto if s.kv_dtype == "auto" else s.kv_dtype),
            (t("report.fraction", lang),
             auto if s.memory_fraction is None else f"{s.memory_fraction:g}"),
            (t("report.pinned", lang), pinned or auto),
        ],
    )  # fmt: skip
    out += ["", "## " + t("report.layout", lang), "", escape_markdown(M.layout_words(st, lang))]
    reasons, _ = M.layout_reasons(st, lang)
    out += [f"- {escape_markdown(r)}" for r in reasons]
    speed = C.speed_shown(st, lang)
    if speed:
        caption = escape_markdown(C.speed_caption(st, lang))
        out += ["", "## " + t("overview.speed", lang), "", caption, ""]
        out += _table(
            (t("report.quantity", lang), t("report.value", lang), t("report.formula", lang)),
            [(x.label, f"{x.value} ({x.range})", x.formula) for x in speed],
        )
        header = ("flags.col.layout", "flags.col.users", "flags.col.ttft", "flags.col.tpot",
                  "flags.col.tps")  # fmt: skip
        rows: list[tuple[object, ...]] = [
            (say(c.layout.name(), lang), f"{c.users:,}", f"{c.speed.ttft_ms:,.0f}",
             f"{c.speed.tpot_ms:,.1f}", f"{c.speed.output_tokens_per_s_per_gpu:,.0f}")
            for c in st.search.candidates[:12]
            if c.speed is not None
        ]  # fmt: skip
        out += ["", *_table(tuple(t(k, lang) for k in header), rows)]
    out += _capacity_markdown(st, lang)
    out += ["", "## " + t("report.numbers", lang), ""]
    shown = [
        *C.layout_shown(st, lang),
        *C.kv_headline(st, lang),
        *C.weights_shown(st, lang),
        *C.fit_shown(st, lang),
    ]
    out += _table(
        (t("report.quantity", lang), t("report.value", lang), t("report.formula", lang)),
        [(x.label, x.value, x.formula) for x in shown],
    )
    out += ["", "## " + t("report.gates", lang), ""]
    for g in M.gates(st, lang):
        status = t(f"gate.status.{g.status}", lang)
        line = f"- **{escape_markdown(status)}** {escape_markdown(g.title)}: "
        line += escape_markdown(g.reason)
        if g.tips:
            line += " " + escape_markdown(t("report.fix", lang, fix=g.tips[0]))
        out.append(line)
    for engine, view in st.engines.items():
        plan = view.plan
        if plan is None:
            continue
        chosen = t("report.chosen", lang) if engine == s.engine else ""
        # the other engine has no "(chosen engine)": its heading must not end in a space
        heading = t("report.launch", lang, engine=ENGINE_LABELS[engine],
                    version=plan.engine_version, chosen=chosen).rstrip()  # fmt: skip
        out += ["", "## " + heading, ""]
        if not plan.runnable:
            why = "; ".join(M.blocked(plan, lang))
            out.append(escape_markdown(t("report.blocked", lang, why=why)))
            out.append("")
        if len(plan.commands) == 1:
            out.append(_fence(shell(plan), "bash"))
        else:
            for c in plan.commands:
                role = t(f"flags.role.{c.role}", lang)
                out.append(t("report.node", lang, node=c.node, role=role))
                out.append("")
                out.append(_fence(shell(plan, c), "bash"))
                out.append("")
    if link:
        out += ["", "## " + t("report.link", lang), "", f"<{link}>"]
    command = cli_line(st.scenario)
    if command:
        out += ["", "## " + t("report.reproduce", lang), "", _fence(command, "bash")]
    out += ["", t("report.units", lang)]
    # the last word on control characters: a fenced command keeps a config's ESC as "\x1b"
    return plain("\n".join(out)).rstrip() + "\n"
