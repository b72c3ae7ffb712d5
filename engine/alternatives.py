"""What to change when the Study's answer is not the ask: alternatives, each re-checked.

When a plan is blocked, fits fewer users than asked, shortens the context or misses a speed
target, the Study's scenario is changed one way at a time — the engine's own levers first (a
``--max-num-seqs`` the scenario pinned, the memory fraction up to the highest the official
commands run at, an fp8 KV cache, the checkpoint's MTP layers as drafts), then the checkpoint
(an official FP8 / NVFP4 / MXFP4 sibling from ``data/recipes.yaml``; FP4 only on hardware that
has it; alone and with fp8 KV), then the hardware (the fewest GPUs of the same kind, in one node
or over nodes), then the ask itself (the longest context that serves every user, the most users
at the asked context; for a target, the most users and the longest prompt that meet it). Each
changed scenario is run through ``study()``; only those whose verdict is then "runs" — every
user at the (changed) context, nothing blocked, every target met with its whole range — are
kept, in that order: the least change first.

A checkpoint is re-checked without fetching it: the base config is sized in the sibling's
format (``engine.model.formats``), while the change itself names the sibling's Hub id, which is
what a link and the CLI line apply — and which the loader answers the same way when the hub
cannot be read, so the change applies offline exactly as it was checked.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.budget import Memo
from engine.decision import Code, Decimal, Decision, Name, Param, Percent, Source, Tokens
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
from engine.model.mtp import has_draft_layers
from engine.perf import Speed
from engine.scenario import LAYOUT_PINS, MAX_GPUS_PER_NODE, MAX_NODES, Scenario, to_query
from engine.study import Study, study
from engine.verdict import DIGITS


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
DRAFTS = Code("alt.drafts")
PROMPT = Code("alt.input_tokens", "tokens", "asked")
RESULT = Code("alt.result", "users", "context", "layout", "gpus")
RESULT_SPEED = Code("alt.result_speed", "users", "context", "layout", "gpus", "ttft", "tpot")
ASK = Code("alt.ask", "users", "context")
ASK_TARGETS = Code("alt.ask_targets", "users", "context", "targets")
TARGET = Code("alt.target", "metric", "target")

PROMPT_STEP = 256  # a shorter prompt is tried in steps of this many tokens
NEARER = 0.05  # more GPUs must bring the targets this much nearer to be worth trying further
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
    speed: Speed | None = None  # the changed Study's pick's speed, when targets were asked

    @property
    def result(self) -> Decision:
        said: dict[str, Param] = {
            "users": self.users,
            "context": Tokens(self.context),
            "layout": self.layout.name(),
            "gpus": self.gpus,
        }
        if self.speed is None:
            return RESULT(**said)
        ttft, tpot = Decimal(self.speed.ttft_ms, 0, "ms"), Decimal(self.speed.tpot_ms, 1, "ms")
        return RESULT_SPEED(**said, ttft=ttft, tpot=tpot)


def ask(st: Study) -> Decision:
    """What the alternatives are for: every user at the asked context, and the targets."""
    users, context = st.scenario.users, Tokens(st.context_asked)
    if not st.verdict.targets:
        return ASK(users=users, context=context)
    targets = tuple(
        TARGET(metric=Name(t.metric.upper()), target=Decimal(t.target_ms, DIGITS[t.metric], "ms"))
        for t in st.verdict.targets
    )
    return ASK_TARGETS(users=users, context=context, targets=targets)


def _meets(st: Study) -> bool:
    """Every user at the asked context, nothing blocked, every target met with its range."""
    return st.verdict.status == "runs" and all(t.sure for t in st.verdict.targets)


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
        speed=st.fit.speed if st.verdict.targets else None,
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
    if not st.verdict.targets_met and has_draft_layers(st.family) and not st.mtp:
        out.append((DRAFTS(), s.replace(speculative=True)))  # the checkpoint's own MTP layers
    if not st.primary.kv_dtype.stored.startswith("fp8") and st.primary.kv_dtype.bytes > 1:
        out.append((KV_FP8(dtype=Name("fp8")), s.replace(kv_dtype="fp8")))
        if out and out[0][0].code == FRACTION.code:  # both levers together, where one falls short
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


def _gap(st: Study) -> float:
    """How far the Study's pick is from its targets (0: met; memory short: unbounded)."""
    if st.verdict.status not in ("runs", "misses_targets"):
        return math.inf
    return max((t.value_ms / t.target_ms for t in st.verdict.targets), default=0.0)


def _fewest_gpus(st: Study) -> Alternative | None:
    """The fewest GPUs of this kind that serve every user at the asked context and meet the
    targets. Only memory and speed can be bought: a gate that fails for another reason (kernels,
    formats) fails on any number of the same GPU; and once every user fits, more GPUs that bring
    the targets no nearer than the last count did end the search (a prefill of a long prompt
    does not shorten past what one copy's GPUs give)."""
    s = st.scenario
    if st.gates.failed(memory=False):
        return None
    unpinned = s.model_copy(update=dict.fromkeys(LAYOUT_PINS))
    last = _gap(st)
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
        try:
            gap = _gap(study(trial))
        except InputError:
            continue
        if math.isfinite(gap) and gap >= last * (1 - NEARER):
            return None  # every user fits, and the targets come no nearer
        last = gap
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


def _most_within(low: int, high: int, meets: Callable[[int], Alternative | None],
                 step: int = 1) -> Alternative | None:  # fmt: skip
    """The alternative of the largest value in ``low``..``high`` (multiples of ``step``) that
    meets the ask, by bisection: the speed falls as the load or the prompt grows."""
    found = meets(low)
    if found is None:
        return None
    lo, hi = low // step, high // step
    while hi - lo > 1:
        mid = (lo + hi) // 2
        trial = meets(mid * step)
        if trial is not None:
            lo, found = mid, trial
        else:
            hi = mid
    return found


def _users_for_targets(st: Study) -> Alternative | None:
    """The most users, fewer than asked, that the GPUs serve within the targets."""
    s = st.scenario
    if s.users <= 1:
        return None

    def meets(users: int) -> Alternative | None:
        return _try(s, USERS(users=users, asked=s.users), s.replace(users=users))

    return _most_within(1, s.users, meets)


def _prompt_for_targets(st: Study) -> Alternative | None:
    """The longest prompt, shorter than the workload's, that meets the targets (a TTFT target
    is mostly the prompt's prefill)."""
    s = st.scenario
    isl, _ = s.workload(st.context)
    step = PROMPT_STEP if isl > PROMPT_STEP else 1
    if isl <= 1:
        return None

    def meets(tokens: int) -> Alternative | None:
        what = PROMPT(tokens=Tokens(tokens), asked=Tokens(isl))
        return _try(s, what, s.replace(input_tokens=tokens))

    return _most_within(step, isl, meets, step)


def _compute(st: Study) -> tuple[Alternative, ...]:
    s = st.scenario
    tried: list[Alternative | None] = [
        _try(s, what, changed) for what, changed in _engine_levers(st)
    ]
    tried += [_try(s, what, link, checked) for what, link, checked in _checkpoints(st)]
    tried += [get(st) for get in (_fewest_gpus, _longest_context, _most_users)]
    if not st.verdict.targets_met:
        tried += [get(st) for get in (_users_for_targets, _prompt_for_targets)]
    return tuple(a for a in tried if a is not None)


MAX_CACHED = 256
_cache: Memo[Scenario, tuple[Alternative, ...]] = Memo(MAX_CACHED)


def known(st: Study) -> bool:
    """Whether ``alternatives(st)`` is at hand without studying anything."""
    if _meets(st):
        return True
    return st.scenario in _cache


def alternatives(st: Study) -> tuple[Alternative, ...]:
    """The re-checked changes that meet the ask, the least change first (none when the Study
    already runs as asked). Computed once per scenario."""
    if st.verdict.status == "runs":
        return ()
    s = st.scenario
    hit = _cache.get(s)
    return hit if hit is not None else _cache.put(s, _compute(st))
