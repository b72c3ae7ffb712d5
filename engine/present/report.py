"""The Study as JSON: the whole object (``study --json``) and the slices the older subcommands
print with their documented keys (``diagnose``, ``gates``, ``software``, ``plan``).

Every number is in bytes or tokens; the JSON is the report the app downloads too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.launch.layout import Candidate

if TYPE_CHECKING:
    from engine.study import Study

UNITS = "bytes; GiB = 2^30 bytes, GB = 10^9 bytes"


def diagnose_json(st: Study) -> dict[str, Any]:
    """Family, KV cache, weights and fit (the ``diagnose --json`` keys): the step 1-2 slice of
    the Study plus the chosen layout's users and memory."""
    fit = st.fit
    return (
        {"model": st.model.name}
        | st.diagnosis.to_json()
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
        "kv_space_per_gpu": c.kv_space_per_gpu,
        "kv_bytes_per_token_per_gpu": c.kv_bytes_per_token_per_gpu,
        "bytes_per_request_per_gpu": c.bytes_per_request_per_gpu,
        "context": c.context,
        "users": c.users,
        "weights_fit": c.weights_fit,
        "context_fits": c.context_fits,
        "users_fit": c.users_fit,
        "why_not": list(c.why),
        "memory_formula": c.memory_formula(),
        "users_formula": c.users_formula(),
    }


def gates_json(st: Study) -> dict[str, Any]:
    return st.gates.to_json() | {"model": st.model.name, "min_gpus": st.min_gpus}


def software_json(st: Study, engine: str) -> dict[str, Any]:
    view = st.engines["vllm" if engine == "vllm" else "sglang"]
    return view.software.to_json() | {"model": st.model.name}


def plan_json_of(st: Study, engine: str) -> dict[str, Any] | None:
    from engine.launch.render import plan_json

    view = st.engines["vllm" if engine == "vllm" else "sglang"]
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
            "reason": st.verdict.reason,
            "suggestions": list(st.verdict.suggestions),
        },
        "context": {
            "asked": st.context_asked,
            "planned": st.context,
            "model_limit": st.limit.tokens,
            "model_limit_formula": st.limit.formula,
        },
        "layout": {
            "pick": candidate_json(found.pick),
            "reasons": list(found.reasons),
            "pinned": found.pinned,
            "candidates": [candidate_json(c) for c in found.candidates],
            "rejected": [{"layout": name, "why": why} for name, why in found.rejected],
        },
        "diagnose": diagnose_json(st),
        "gates": gates_json(st),
        "software": {e: software_json(st, e) for e in st.engines},
        "plans": {e: plan_json_of(st, e) for e in st.engines},
        "engine_problems": {e: v.problem for e, v in st.engines.items() if v.problem},
        "notes": list(st.notes),
        "units": UNITS,
    }
