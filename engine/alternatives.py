"""What to change when the Study's answer is not the ask: alternatives, each re-checked.

When a plan is blocked, fits fewer users than asked or shortens the context, the Study's
scenario is changed one way at a time — the engine's own levers first (a ``--max-num-seqs``
the scenario pinned, the memory fraction up to the highest the official commands run at, an
fp8 KV cache), then the checkpoint (an official FP8 / NVFP4 / MXFP4 sibling from
``data/recipes.yaml``; FP4 only on hardware that has it; alone and with fp8 KV), then the
hardware (the fewest GPUs of the same kind, in one node or over nodes), then the ask itself
(the longest context that serves every user, the most users at the asked context). Each
changed scenario is run through ``study()``; only those whose verdict is then "runs" — every
user at the (changed) context, nothing blocked — are kept, in that order: the least change
first.

A checkpoint is re-checked without fetching it: the base config is sized in the sibling's
format (``engine.model.formats``), while the change itself names the sibling's Hub id, which is
what a link and the CLI line apply — and which the loader answers the same way when the hub
cannot be read, so the change applies offline exactly as it was checked.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from engine.decision import Code, Decision, Name, Percent, Source, Tokens
from engine.engines.memory import RaisedFraction, memory_rules
from engine.errors import InputError
from engine.launch.candidate import Layout
from engine.launch.layout import largest_context, stage_share
from engine.launch.ranking import layout_rules
from engine.launch.recipes import checkpoints_of
from engine.model import store
from engine.model.config import normalize
from engine.model.formats import UNQUANTIZED, raw_in_format
from engine.model.loader import LoadedModel
from engine.scenario import MAX_GPUS_PER_NODE, MAX_NODES, Scenario, to_query
from engine.study import Study, study


def raised_fraction() -> RaisedFraction:
    return memory_rules().raised_fraction


SEQS = Code("alt.seqs")
FRACTION = Code("alt.fraction", "fraction", "source")
KV_FP8 = Code("alt.kv_fp8", "dtype")
BOTH = Code("alt.kv_fp8_fraction", "dtype", "fraction", "source")
CHECKPOINT = Code("alt.checkpoint", "format", "repo", "source")
ONLINE_FP8 = Code("alt.online_fp8")
CHECKPOINT_KV = Code("alt.checkpoint_kv", "format", "repo", "source")
GPUS_NODE = Code("alt.gpus_node", "n", "gpu")
GPUS = Code("alt.gpus", "n", "gpu", "per_node", "nodes")
CONTEXT = Code("alt.context", "context", "asked")
USERS = Code("alt.users", "users", "asked")
RESULT = Code("alt.result", "users", "context", "layout", "gpus")
ASK = Code("alt.ask", "users", "context")

# the node sizes tried when more GPUs are the change, in one node first
_NODE_SIZES = (1, 2, 4, 8)
MAX_TRIED_GPUS = 1024


@dataclass(frozen=True)
class Alternative:
    """One change to the scenario and what the Study then gives (it meets the ask)."""

    what: Decision  # the change in words
    change: tuple[tuple[str, Any], ...]  # the scenario fields it sets, as a link sets them
    users: int
    context: int
    layout: Layout
    gpus: int
    query: tuple[tuple[str, str], ...]  # the share link's parameters of the changed scenario
    checked: Scenario  # the scenario that was studied (a checkpoint: sized in its format)

    @property
    def result(self) -> Decision:
        return RESULT(
            users=self.users,
            context=Tokens(self.context),
            layout=self.layout.name(),
            gpus=self.gpus,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "change": dict(self.change),
            "users": self.users,
            "context": self.context,
            "layout": self.layout.describe(),
            "gpus": self.gpus,
            "query": dict(self.query),
            "what": self.what.to_json(),
        }


def ask(st: Study) -> Decision:
    """What the alternatives are for: every user at the asked context."""
    return ASK(users=st.scenario.users, context=Tokens(st.context_asked))


def _meets(st: Study) -> bool:
    return st.verdict.status == "runs"


def _try(
    base: Scenario, what: Decision, link: Scenario, checked: Scenario | None = None
) -> Alternative | None:
    """Study ``checked`` (the link's scenario, unless a checkpoint is sized in its stead) and
    keep the change from ``base`` to ``link`` only if it meets the ask."""
    try:
        st = study(checked or link)
    except InputError:
        return None
    if not _meets(st):
        return None
    was, now = base.model_dump(), link.model_dump()
    return Alternative(
        what=what,
        change=tuple((k, v) for k, v in now.items() if was.get(k) != v and k != "digest"),
        users=st.fit.users,
        context=st.context,
        layout=st.layout,
        gpus=st.fit.layout.gpus,
        query=tuple(to_query(link).items()),
        checked=checked or link,
    )


def _engine_levers(st: Study) -> list[tuple[Decision, Scenario]]:
    s = st.scenario
    out: list[tuple[Decision, Scenario]] = []
    if s.max_num_seqs is not None:
        out.append((SEQS(), s.replace(max_num_seqs=None)))
    raised = getattr(raised_fraction(), s.engine)
    top, source = raised.value, raised.source
    if (s.memory_fraction or 0) < top and top > st.fit.fraction:
        out.append(
            (FRACTION(fraction=Percent(top), source=Source(source)), s.replace(memory_fraction=top))
        )
    if not st.primary.kv_dtype.stored.startswith("fp8") and st.primary.kv_dtype.bytes > 1:
        out.append((KV_FP8(dtype=Name("fp8")), s.replace(kv_dtype="fp8")))
        if out[0][0].code == FRACTION.code:  # both levers together, where one alone falls short
            both = s.replace(kv_dtype="fp8", memory_fraction=top)
            out.append(
                (BOTH(dtype=Name("fp8"), fraction=Percent(top), source=Source(source)), both)
            )
    return out


def _checkpoints(st: Study) -> list[tuple[Decision, Scenario, Scenario]]:
    """(what, the link's scenario naming the sibling, the scenario sized in its format); a
    16-bit checkpoint's own weights quantized to FP8 at load first, where the GPU computes in
    FP8 (engine.model.quantize)."""
    s = st.scenario
    out: list[tuple[Decision, Scenario, Scenario]] = []
    if s.quantization == "none" and st.weights.weight_dtype in UNQUANTIZED and st.gpu.fp8:
        fp8 = s.replace(quantization="fp8")
        out.append((ONLINE_FP8(), fp8, fp8))
    if s.source == "file":
        return out
    for kind, repo, source in checkpoints_of(st.model.name):
        if kind in ("nvfp4", "mxfp4") and not st.gpu.fp4:
            continue  # FP4 only where the hardware has it
        if kind == st.weights.weight_dtype:
            continue
        raw = raw_in_format(st.model.config.raw, kind)
        if raw is None:
            continue
        digest = store.put(LoadedModel(normalize(raw), "derived", repo))
        link = s.replace(source="hub", model=repo, digest=None)
        checked = s.replace(source="file", model=repo, digest=digest)
        fmt, src = Name(kind.upper()), Source(source)
        out.append((CHECKPOINT(format=fmt, repo=Name(repo), source=src), link, checked))
        if s.kv_dtype == "auto":
            out.append(
                (
                    CHECKPOINT_KV(format=fmt, repo=Name(repo), source=src),
                    link.replace(kv_dtype="fp8"),
                    checked.replace(kv_dtype="fp8"),
                )
            )
    return out


def _hardware(s: Scenario) -> list[tuple[int, int]]:
    """(GPUs per node, nodes) with more GPUs than the scenario's, fewest first: one node of a
    larger size, then whole nodes of the scenario's size (8 when it is smaller), their count
    growing by about half each step past 8 so that the search stays short."""
    have = s.total_gpus
    options = {(n, 1) for n in _NODE_SIZES if s.gpus_per_node < n <= MAX_GPUS_PER_NODE}
    node = max(s.gpus_per_node, _NODE_SIZES[-1])
    counts, m = [], 1
    while m <= MAX_NODES and node * m <= MAX_TRIED_GPUS:
        counts.append(m)
        m = m + 1 if m < 8 else m + m // 2
    options |= {(node, m) for m in counts}
    return sorted((o for o in options if o[0] * o[1] > have), key=lambda o: (o[0] * o[1], o[1]))


def _fewest_gpus(st: Study) -> Alternative | None:
    """The fewest GPUs of this kind that serve every user at the asked context. Only memory
    can be bought: a gate that fails for another reason (kernels, formats) fails on any
    number of the same GPU."""
    s = st.scenario
    if st.gates.failed(memory=False):
        return None
    unpinned = s.model_copy(update={k: None for k in ("tp", "dp", "pp", "ep", "replicas")})
    for per_node, nodes in _hardware(s):
        trial = unpinned.replace(gpus_per_node=per_node, nodes=nodes)
        n, gpu = per_node * nodes, Name(st.gpu.key)
        what = (
            GPUS_NODE(n=n, gpu=gpu)
            if nodes == 1
            else GPUS(n=n, gpu=gpu, per_node=per_node, nodes=nodes)
        )
        found = _try(s, what, trial)
        if found is not None:
            return found
    return None


def _longest_context(st: Study) -> Alternative | None:
    """The longest context at which one of the search's layouts serves every user."""
    s = st.scenario
    best = 0
    step = layout_rules().context_round_tokens
    for c in st.search.candidates:
        if not c.weights_fit or c.kv_space_per_gpu <= 0:
            continue
        per_rank = math.ceil(s.users / (c.layout.dp * c.layout.replicas))
        space = c.kv_space_per_gpu // per_rank
        kv = st.sizing(s.engine, c.layout.tp)
        stage = stage_share(st.config, c.layout.pp)
        longest = largest_context(kv, space, stage, st.context_asked)
        best = max(best, longest // step * step if longest >= step else longest)
    if best <= 0 or best >= st.context_asked:
        return None
    if best < (s.input_tokens or 0) + (s.output_tokens or 0):
        return None  # shorter than the prompt and output the scenario asks for: no scenario
    what = CONTEXT(context=Tokens(best), asked=Tokens(st.context_asked))
    return _try(s, what, s.replace(context=best))


def _most_users(st: Study) -> Alternative | None:
    s = st.scenario
    most = max((c.users for c in st.search.candidates if c.context_fits), default=0)
    if most <= 0 or most >= s.users:
        return None
    return _try(s, USERS(users=most, asked=s.users), s.replace(users=most))


def _compute(st: Study) -> tuple[Alternative, ...]:
    s = st.scenario
    tried: list[Alternative | None] = [
        _try(s, what, changed) for what, changed in _engine_levers(st)
    ]
    tried += [_try(s, what, link, checked) for what, link, checked in _checkpoints(st)]
    tried += [get(st) for get in (_fewest_gpus, _longest_context, _most_users)]
    return tuple(a for a in tried if a is not None)


MAX_CACHED = 256
_lock = threading.Lock()
_cache: OrderedDict[Scenario, tuple[Alternative, ...]] = OrderedDict()


def known(st: Study) -> bool:
    """Whether ``alternatives(st)`` is at hand without studying anything."""
    if _meets(st):
        return True
    with _lock:
        return st.scenario in _cache


def alternatives(st: Study) -> tuple[Alternative, ...]:
    """The re-checked changes that meet the ask, the least change first (none when the Study
    already runs as asked). Computed once per scenario."""
    if _meets(st):
        return ()
    s = st.scenario
    with _lock:
        hit = _cache.get(s)
    if hit is not None:
        return hit
    result = _compute(st)
    with _lock:
        _cache[s] = result
        while len(_cache) > MAX_CACHED:
            _cache.popitem(last=False)
    return result
