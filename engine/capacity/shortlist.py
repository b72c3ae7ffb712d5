"""Which models the sidebar's GPUs serve: every bundled model, each in the checkpoints it can be
served from — its own, the official quantized siblings the recipes name (FP8, NVFP4, MXFP4,
AWQ, GPTQ-Int4), and its own weights quantized to FP8 at load where the GPU computes in FP8 —
each run through ``study()`` on those GPUs: the users that fit, the speed at that load, or what
gates it out (a kernel the GPU lacks, a format it cannot run, weights that do not fit).

A sibling is sized without fetching it, as the alternatives size one: the base config
re-described in the sibling's format (``engine.model.formats``); its link names the sibling's
Hub id, which the loader answers the same way offline.

Of a model's checkpoints that run, the shortlist picks the one that serves the most of the
asked users at the asked context, then the most output tokens/s per GPU at that load — so on
GPUs with FP4 tensor cores a published NVFP4 checkpoint wins where it holds the users, and on
small cards a 4-bit or FP8 checkpoint wins where the 16-bit one does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.budget import Cache
from engine.decision import Code, Decision
from engine.errors import InputError
from engine.launch.recipes import recipes
from engine.model import store
from engine.model.config import normalize
from engine.model.formats import UNQUANTIZED, raw_in_format
from engine.model.loader import LoadedModel, catalog_names
from engine.scenario import Scenario
from engine.study import Study, footprint, study
from engine.text.words import say

OWN = "own"
ONLINE_FP8 = "online_fp8"
REFUSED = Code("shortlist.refused", "why")


@dataclass(frozen=True)
class Variant:
    """One checkpoint of one model on the GPUs: what was studied and what it gave."""

    kind: str  # "own", "online_fp8", or the sibling's format (fp8, nvfp4, awq, ...)
    repo: str  # the checkpoint a launch loads
    source: str | None  # the recipe that names a sibling
    link: Scenario  # what a link and the CLI line apply
    study: Study | None
    problem: Decision | None  # why it does not run (None: it runs)

    @property
    def runs(self) -> bool:
        return self.study is not None and self.study.verdict.runs

    @property
    def users(self) -> int:
        return self.study.fit.users if self.study is not None and self.runs else 0

    @property
    def rank(self) -> tuple[float, ...]:
        """Smaller is better: runs, every asked user at the asked context, the users served,
        then the output tokens/s per GPU."""
        st = self.study
        if st is None or not self.runs:
            return (1.0, 1.0, 0.0, 0.0)
        sp = st.fit.speed
        served = min(st.fit.users, st.scenario.users)
        full = st.fit.context_fits and st.fit.users_fit
        tps = sp.output_tokens_per_s_per_gpu if sp else 0.0
        return (0.0, 0.0 if full else 1.0, -float(served), -tps)

    def to_json(self) -> dict[str, Any]:
        st = self.study
        out: dict[str, Any] = {
            "checkpoint": self.kind,
            "repo": self.repo,
            "source": self.source,
            "runs": self.runs,
            "problem": say(self.problem) if self.problem else None,
            "problem_code": self.problem.to_json() if self.problem else None,
        }
        if st is not None and self.runs:
            sp = st.fit.speed
            out |= {
                "verdict": st.verdict.status,
                "layout": say(st.layout.name(), markdown=False),
                "users": st.fit.users,
                "context": st.context,
                "weights_per_gpu": st.fit.weights_per_gpu,
                "ttft_ms": sp.ttft_ms if sp else None,
                "tpot_ms": sp.tpot_ms if sp else None,
                "output_tokens_per_s_per_user": sp.output_tokens_per_s_per_user if sp else None,
                "output_tokens_per_s_per_gpu": sp.output_tokens_per_s_per_gpu if sp else None,
            }
        return out


@dataclass(frozen=True)
class Entry:
    model: str
    variants: tuple[Variant, ...]

    @property
    def pick(self) -> Variant | None:
        running = [v for v in self.variants if v.runs]
        return min(running, key=lambda v: v.rank) if running else None

    @property
    def problem(self) -> Decision | None:
        """Why no checkpoint runs: the own checkpoint's reason (the first one's otherwise)."""
        if self.pick is not None or not self.variants:
            return None
        return self.variants[0].problem

    def to_json(self) -> dict[str, Any]:
        pick = self.pick
        return {
            "model": self.model,
            "runs": pick is not None,
            "pick": pick.to_json() if pick else None,
            "gated": say(self.problem) if self.problem else None,
            "gated_code": self.problem.to_json() if self.problem else None,
            "checkpoints": [v.to_json() for v in self.variants],
        }


def siblings(model: str) -> list[tuple[str, str, str]]:
    """(format, repo, source) of the recipes' official checkpoints of ``model`` itself (rows
    whose ``of`` is the model), in another format the formats table can describe."""
    out: list[tuple[str, str, str]] = []
    for row in recipes().checkpoints:
        if str(row.get("of", "")).lower() != model.lower():
            continue
        for kind, entry in row.items():
            repo = entry.get("repo") if isinstance(entry, dict) else None
            if not isinstance(repo, str) or repo.lower() == model.lower():
                continue
            out.append((kind, repo, str(row.get("source", ""))))
    return out


def _studied(
    kind: str, repo: str, source: str | None, link: Scenario, checked: Scenario
) -> Variant:
    try:
        st = study(checked)
    except InputError as err:
        why = err.why or err.expects
        return Variant(kind, repo, source, link, None, REFUSED(why=why) if why else None)
    if st.verdict.runs:
        return Variant(kind, repo, source, link, st, None)
    return Variant(kind, repo, source, link, st, st.verdict.reason)


def variants(base: Scenario) -> tuple[Variant, ...]:
    """``base``'s model (a bundled one) in each checkpoint it can be served from."""
    own = _studied(OWN, base.model, None, base, base)
    out = [own]
    stored = own.study.weights.weight_dtype if own.study is not None else None
    for kind, repo, source in siblings(base.model):
        raw = raw_in_format(own.study.config.raw, kind) if own.study is not None else None
        if raw is None or kind == stored or (kind in UNQUANTIZED and stored in UNQUANTIZED):
            continue
        digest = store.put(LoadedModel(normalize(raw), "derived", repo))
        link = base.replace(source="hub", model=repo, digest=None)
        checked = base.replace(source="file", model=repo, digest=digest)
        out.append(_studied(kind, repo, source, link, checked))
    if stored in UNQUANTIZED and own.study is not None and own.study.gpu.fp8:
        fp8 = base.replace(quantization="fp8")
        out.append(_studied(ONLINE_FP8, base.model, None, fp8, fp8))
    return tuple(out)


@dataclass(frozen=True)
class Shortlist:
    scenario: Scenario  # the GPUs, engine and workload every model is studied with
    entries: tuple[Entry, ...]

    @property
    def running(self) -> tuple[Entry, ...]:
        """The models that run, the most users served first."""
        found = [e for e in self.entries if e.pick is not None]
        return tuple(sorted(found, key=lambda e: e.pick.rank if e.pick else ()))

    @property
    def gated(self) -> tuple[Entry, ...]:
        return tuple(e for e in self.entries if e.pick is None)

    def to_json(self) -> dict[str, Any]:
        s = self.scenario
        return {
            "gpu": s.gpu,
            "gpus_per_node": s.gpus_per_node,
            "nodes": s.nodes,
            "engine": s.engine,
            "users": s.users,
            "context": s.context,
            "runs": [e.to_json() for e in self.running],
            "gated": [e.to_json() for e in self.gated],
        }


def _held(s: Shortlist) -> int:
    """Bytes a shortlist holds: every Study it keeps (one per model and checkpoint), counted as
    the Study cache counts one, whether or not that cache still holds it."""
    return sum(footprint(v.study) for e in s.entries for v in e.variants if v.study is not None)


# One cache of the process's memory budget (engine.budget): a shortlist keeps the Studies of
# every bundled model on the GPUs, which the Study cache may have let go.
_cache: Cache[Scenario, Shortlist] = Cache("shortlists", _held)


def shortlist_base(s: Scenario) -> Scenario:
    """The part of ``s`` the shortlist reads: the GPUs, engine and workload, on the catalog's
    first model (each model replaces it), no layout pinned, no traffic."""
    return s.model_copy(
        update={
            "source": "catalog",
            "model": catalog_names()[0],
            "digest": None,
            "quantization": "none",
            **{k: None for k in ("tp", "dp", "pp", "ep", "replicas", "request_rate",
                                 "compare_gpus", "gpu_price", "calibration", "speculative")},
        }
    )  # fmt: skip


def shortlist(s: Scenario) -> Shortlist:
    """Every bundled model on ``s``'s GPUs (computed once per GPUs and workload)."""
    base = shortlist_base(s)
    hit = _cache.get(base)
    if hit is not None:
        return hit
    entries = tuple(
        Entry(name, variants(base.model_copy(update={"model": name}))) for name in catalog_names()
    )
    return _cache.put(base, Shortlist(base, entries))
