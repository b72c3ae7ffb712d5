"""Step 5: the launch plan of one engine for the Study's layout, every flag with its reason.

``build_plan`` reads the Study's decisions (layout, context that fits, memory fraction, KV dtype,
MTP, text-only) and turns them into ``vllm serve`` / ``python3 -m sglang.launch_server``
commands — one per node when a copy of the model spans nodes — plus the environment the recipes
set. Two rules hold for every plan:

* every flag set carries the reason it is set, and every flag deliberately *not* set (because the
  engine chooses better by itself) is listed in ``left_to_engine`` with the reason;
* every flag and every enforced choice exists in the engine's pinned CLI table
  (``data/engines/``); a miss is a bug in this module and raises ``PlanError``.

Rendering (shell script, docker, Kubernetes) lives in ``engine.present.render`` and
``engine.present.k8s``; this module decides, it does not format text for a shell.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from engine.decision import Code, Decision, Name, Percent, Source, Tokens
from engine.engines import adapter
from engine.gates import fit_gate
from engine.kv.dtype import stored_name
from engine.kv.sizing import KvSizing
from engine.launch.advisors import Phase
from engine.launch.cache_tier import tier_bytes_per_node, tier_flags
from engine.launch.candidate import Candidate, Layout
from engine.launch.flags import (
    PARALLEL_FLAGS,
    SPEC_SLOWER,
    chunk_flags,
    context_flag,
    draft_why,
    experts_shape,
    kv_flags,
    memory_flag,
    mm_flags,
    mtp_flags,
    parallel_flags,
    parser_flags,
)
from engine.launch.known_issues import symptom
from engine.launch.launch_data import LaunchFacts, launch_facts
from engine.launch.multinode import a2a_flags, deepep_over_network, mnnvl_env, nic_env
from engine.launch.nodes import node_commands
from engine.launch.plan_inputs import PlanInputs
from engine.launch.plan_parts import (
    LEADER,
    PLACEHOLDER_MODEL,
    STUDY_DECIDED,
    EnvVar,
    LeftOut,
    NodeCommand,
    PlanError,
    PlanFlag,
    as_spelled,
    checked,
    split_token,
)
from engine.launch.recipes import (
    RecipeFlag,
    base_flags_for,
    env_for,
    is_base_checkpoint,
)
from engine.launch.router import Router, plan_router
from engine.launch.topology import multi_node_nvlink
from engine.model.family import AttentionFamily
from engine.model.loader import LoadedModel
from engine.scenario import Engine, Scenario
from engine.software.software_report import REMOTE_CODE_NOT_NEEDED, SoftwareReport

__all__ = [
    "LEADER",
    "PARALLEL_FLAGS",
    "PLACEHOLDER_MODEL",
    "STUDY_DECIDED",
    "EnvVar",
    "LaunchFacts",
    "LaunchPlan",
    "LeftOut",
    "NodeCommand",
    "PlanError",
    "PlanFlag",
    "as_spelled",
    "build_plan",
    "checked",
    "chunk_tokens",
    "launch_facts",
    "model_id_for",
]


@dataclass(frozen=True)
class LaunchPlan:
    engine: Engine
    engine_version: str
    model_id: str
    model_name: str
    gpu_key: str
    gpu_vendor: Literal["nvidia", "amd"]
    gpus_per_node: int
    nodes: int
    layout: Layout
    fit: Candidate
    context: int
    flags: tuple[PlanFlag, ...]
    left_to_engine: tuple[LeftOut, ...]
    env: tuple[EnvVar, ...]
    commands: tuple[NodeCommand, ...]
    runnable: bool
    blocked_by: tuple[Decision, ...]  # why it cannot start: failed gates, weights that do not fit
    warned: tuple[Decision, ...]  # what to check before launching (shown first, not as a note)
    noted: tuple[Decision, ...]
    users: int
    prefix_overlap: float
    port: int
    checkpoint_bytes: int = 0  # every stored tensor of the checkpoint (what a node reads)
    # how a copy over several nodes is wired: DeepEP's kernels over the NICs (RDMA), or the
    # trays of one NVLink domain (GB200 / GB300 NVL72: an IMEX channel, no network for NCCL)
    deepep_over_network: bool = False
    multi_node_nvlink: bool = False
    router: Router | None = None  # the prefix-aware router in front of several servers
    host_cache_bytes_per_node: int = 0  # host memory a node gives the KV cache's CPU tier

    @property
    def program(self) -> list[str]:
        """The program part of argv (before the options)."""
        return adapter(self.engine).program(self.model_id)

    @property
    def argv(self) -> list[str]:
        """The first node's command (a whole server, or the leader of a multi-node copy)."""
        return list(self.commands[0].argv)

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def servers(self) -> int:
        """Independent endpoints (a router goes in front when more than one)."""
        return sum(1 for c in self.commands if c.role in ("server", "leader"))

    @property
    def endpoints(self) -> int:
        """API servers over all nodes (a load balancer goes in front when more than one)."""
        return sum(1 for c in self.commands if c.port is not None)

    @property
    def nodes_per_copy(self) -> int:
        return max(1, self.layout.split.gpus // self.gpus_per_node)

    @property
    def image(self) -> str:
        """Container image (data/launch.yaml); AMD images follow each project's ROCm naming."""
        images = launch_facts().images
        per_engine = images.amd if self.gpu_vendor == "amd" else images.nvidia
        template: str = getattr(per_engine, self.engine)
        return template.format(version=self.engine_version)

    @property
    def image_has_entrypoint(self) -> bool:
        """vllm/vllm-openai's entrypoint is ``vllm serve``; the others start a shell."""
        serves = launch_facts().images.entrypoint_serves
        return self.engine == serves.engine and self.gpu_vendor == serves.vendor


# --- decisions the Study makes before the search ---------------------------------------------


def chunk_tokens(priority: str, images: bool) -> int:
    """Prefill chunk for the latency priority (images make prefill dominate)."""
    sizes = launch_facts().prefill_chunk
    chunk = sizes.for_priority(priority)
    return max(chunk, sizes.images) if images else chunk


def model_id_for(model: LoadedModel) -> str:
    """What an engine's command line loads: the hub or catalog id; a placeholder path for a
    config the user uploaded or pasted (its checkpoint lives wherever they keep it)."""
    return model.name if model.source in ("catalog", "hub") else PLACEHOLDER_MODEL


BLOCKED = Code("plan.blocked", "gate", "reason")
BLOCKED_FIX = Code("plan.blocked_fix", "gate", "reason", "fix")


# --- entry point ----------------------------------------------------------------------------


MODEL_PATH = Code("flag.model_path")
HOST = Code("flag.host")
PORT = Code("flag.port")
LEFT_EP_SLICED = Code("left.expert_parallel.sliced", "group")
LEFT_EP_ONE_GPU = Code("left.expert_parallel.one_gpu")
LEFT_QUANTIZATION = Code("left.quantization", "format", "engine")
ONLINE_FP8 = Code("flag.quantization.online_fp8")
RECIPE = Code("flag.recipe", "reason", "source")
RECIPE_REQUIRED = Code("flag.recipe_required", "reason", "source")
TEXT_ONLY = Code("flag.language_model_only", "fusion")
LEFT_MTP_BUSY = Code("left.speculative.busy", "why")
LEFT_PREFIX_USED = Code("left.prefix_cache.used", "overlap")
LEFT_PREFIX_UNUSED = Code("left.prefix_cache.unused", "overlap")
HYBRID_LB = Code("flag.dp_hybrid_lb", "source")
SOFTWARE_REPORT = Code("flag.software_report")
# What the plan tells besides its flags: a warning to read first, and notes.
WARN_REMOTE_CODE = Code("plan.warning.remote_code", "flag")
RECIPE_ALSO = Code("plan.note.recipe_also", "flag", "reason", "source")
CONTEXT_NOTE = Code("plan.note.context_shortened", "context", "asked")
MIN_VERSION = Code("plan.note.min_version", "engine", "version", "architecture")
KNOWN_ISSUE = Code("plan.note.known_issue", "symptom", "source")
SIDE_BY_SIDE = Code("plan.note.side_by_side", "servers", "first", "last")
HYBRID_NODES = Code("plan.note.hybrid_lb_nodes", "port", "nodes")


@dataclass(frozen=True)
class _Ask:
    """What one plan is asked for: the Study's model-side facts, the scenario, the engine, the
    search's layout and its KV sizing, the software report, and the phase its servers run."""

    core: PlanInputs
    s: Scenario
    engine: Engine
    fit: Candidate
    kv: KvSizing
    sw: SoftwareReport
    phase: Phase


@dataclass
class _Draft:
    """The plan as its steps write it: the flags in the order they are set, what is left to the
    engine, the notes, and the spellings already set (a later source does not set them again)."""

    flags: list[PlanFlag] = field(default_factory=list)
    left: list[LeftOut] = field(default_factory=list)
    notes: list[Decision] = field(default_factory=list)
    have: set[str] = field(default_factory=set)
    # a recipe's value the Study decides itself: (flag, note), dropped where a fix sets the flag
    recipe_also: list[tuple[str, Decision]] = field(default_factory=list)

    def add(
        self,
        flags: Iterable[PlanFlag],
        left: Iterable[LeftOut] = (),
        notes: Iterable[Decision] = (),
    ) -> None:
        """A step's flags, what it leaves to the engine and its notes, after the others'."""
        self.flags += flags
        self.left += left
        self.notes += notes


def build_plan(
    core: PlanInputs,
    s: Scenario,
    engine: Engine,
    fit: Candidate,
    kv: KvSizing,
    sw: SoftwareReport,
    runnable: bool,
    phase: Phase = "mixed",
) -> LaunchPlan:
    """The launch plan of ``engine`` for the Study's layout ``fit`` (``phase``: what its
    servers run, both phases or one pool's of disaggregated serving)."""
    ask = _Ask(core, s, engine, fit, kv, sw, phase)
    eng = adapter(engine)
    lay = fit.layout
    model_id = model_id_for(core.model)
    facts = launch_facts()
    d = _Draft()
    _serving_flags(ask, d, model_id)
    _quantization_flag(ask, d)
    _software_flags(ask, d)
    _recipe_flags(ask, d)
    _runtime_flags(ask, d)
    env = _environment(ask)
    have = {f.flag for f in d.flags}
    left = [x for x in d.left if x.flag not in have]
    passes_remote_code = eng.flag("trust_remote_code") in have
    warnings: list[Decision] = []
    if passes_remote_code:
        warnings.append(WARN_REMOTE_CODE(flag=Name(eng.flag("trust_remote_code"))))
    blocked = _blocked_by(ask)
    notes = d.notes + _plan_notes(ask, d, passes_remote_code)
    commands = node_commands(engine, eng.program(model_id), d.flags, lay, s, core.family.moe)
    notes += _balancer_notes(commands, lay, s)
    router = plan_router(engine, s, commands, model_id)
    return LaunchPlan(
        engine=engine,
        engine_version=eng.version,
        model_id=model_id,
        model_name=core.model.name,
        gpu_key=core.gpu.key,
        gpu_vendor="amd" if core.gpu.vendor == "amd" else "nvidia",
        gpus_per_node=s.gpus_per_node,
        nodes=s.nodes,
        layout=lay,
        fit=fit,
        context=fit.context,
        flags=tuple(d.flags),
        left_to_engine=tuple(left),
        env=tuple(env),
        commands=commands,
        runnable=runnable and not blocked,
        blocked_by=tuple(blocked),
        warned=tuple(warnings),
        noted=tuple(dict.fromkeys(notes)),
        users=s.users,
        prefix_overlap=s.prefix_overlap / 100,
        port=facts.port,
        checkpoint_bytes=core.weights.checkpoint_bytes or core.weights.weight_bytes,
        deepep_over_network=deepep_over_network(engine, core.gpu, lay.split, s.gpus_per_node),
        multi_node_nvlink=multi_node_nvlink(core.gpu, lay.split, s.gpus_per_node),
        router=router,
        host_cache_bytes_per_node=tier_bytes_per_node(s),
    )


def _serving_flags(ask: _Ask, d: _Draft, model_id: str) -> None:
    """Where the server listens and how one copy of the model is split over its GPUs."""
    engine, s, fit, fam = ask.engine, ask.s, ask.fit, ask.core.family
    eng = adapter(engine)
    lay = fit.layout
    facts = launch_facts()
    if not eng.model_positional:
        d.flags.append(checked(engine, eng.flag("model"), model_id, MODEL_PATH()))
    d.flags.append(checked(engine, eng.flag("host"), "0.0.0.0", HOST()))
    d.flags.append(checked(engine, eng.flag("port"), str(facts.port), PORT()))
    experts = experts_shape(fam.num_experts, fam.experts_per_token)
    d.flags += parallel_flags(engine, lay, fit, fam.moe, experts, s.gpus_per_node)
    if fam.moe and not lay.ep and lay.split.moe_group > 1:
        d.left.append(LeftOut(eng.flag("ep"), LEFT_EP_SLICED(group=lay.split.moe_group)))
    elif fam.moe and lay.split.moe_group == 1:
        d.left.append(LeftOut("expert parallel", LEFT_EP_ONE_GPU()))
    d.flags += a2a_flags(engine, lay.split, s.gpus_per_node, ask.core.gpu, ask.phase)
    if lay.split.dp > 1 and eng.has("dp_hybrid_lb") and lay.split.gpus > s.gpus_per_node:
        source = Source(facts.multi_node.hybrid_lb_source)
        d.flags.append(checked(engine, eng.flag("dp_hybrid_lb"), None, HYBRID_LB(source=source)))


def _quantization_flag(ask: _Ask, d: _Draft) -> None:
    """A 16-bit checkpoint quantized to FP8 as the engine loads it; otherwise the engine reads
    the checkpoint's own format."""
    eng = adapter(ask.engine)
    if ask.s.quantization == "fp8":
        d.flags.append(checked(ask.engine, eng.flag("quantization"), "fp8", ONLINE_FP8()))
        return
    why = LEFT_QUANTIZATION(format=Name(ask.sw.checkpoint_format), engine=Name(eng.label))
    d.left.append(LeftOut(eng.flag("quantization"), why))


def _software_flags(ask: _Ask, d: _Draft) -> None:
    """The parsers, then the flags the software report asks for that are not set yet (the
    auto tool choice only beside a tool-call parser)."""
    engine, sw = ask.engine, ask.sw
    eng = adapter(engine)
    base = ask.core.model.source != "file" and is_base_checkpoint(ask.core.model.name, sw)
    d.add(*parser_flags(engine, sw, base))
    d.have = {f.flag for f in d.flags}
    tool_flag = eng.flag("tool_call_parser")
    for token in sw.extra_flags:
        flag, value = split_token(token)
        if flag in d.have:
            continue
        if (
            eng.has("auto_tool_choice")
            and flag == eng.flag("auto_tool_choice")
            and (tool_flag not in d.have)
        ):
            continue
        why = sw.flag_decisions.get(token) or sw.flag_decisions.get(flag)
        d.flags.append(checked(engine, flag, value, why or SOFTWARE_REPORT()))
        d.have.add(flag)


def _recipe_flags(ask: _Ask, d: _Draft) -> None:
    """The official recipe's flags: a mandatory value as the recipe writes it, a value the Study
    decides itself as a note, any other one where nothing set it yet."""
    engine = ask.engine
    eng = adapter(engine)
    for rf in base_flags_for(ask.core.cfg, engine, ask.core.gpu, ask.sw, ask.fit.context):
        info = eng.lookup(rf.flag)
        canonical = info.flag if info is not None else rf.flag
        if _required_here(rf, canonical, ask.s, engine) and canonical not in d.have:
            # a value the recipe makes mandatory: the Study sized with it (KV dtype, block)
            why = RECIPE_REQUIRED(reason=rf.reason, source=Source(rf.source))
            d.flags.append(as_spelled(engine, rf.flag, rf.value, why))
            d.have.update({rf.flag, canonical})
            continue
        if canonical in STUDY_DECIDED:
            shown = rf.flag + (f" {rf.value}" if rf.value is not None else "")
            also = RECIPE_ALSO(flag=Name(shown), reason=rf.reason, source=Source(rf.source))
            d.recipe_also.append((rf.flag, also))
            continue
        # a `--config.key` form sets one key of a dict option: two keys are two settings
        key = rf.flag if "." in rf.flag.lstrip("-") else canonical
        if rf.flag in d.have or key in d.have:
            continue
        why = RECIPE(reason=rf.reason, source=Source(rf.source))
        d.flags.append(as_spelled(engine, rf.flag, rf.value, why))
        d.have.update({rf.flag, key})
        d.left = [x for x in d.left if x.flag != canonical]


def _runtime_flags(ask: _Ask, d: _Draft) -> None:
    """What the Study decided for the running server: text only, images, the context, the
    memory fraction, the KV cache and its CPU tier, the prefill chunk, MTP, the prefix cache."""
    engine, core, s, fit, kv = ask.engine, ask.core, ask.s, ask.fit, ask.kv
    eng = adapter(engine)
    fam = core.family
    lm_only = eng.flag("language_model_only")
    if core.text_only and lm_only not in d.have:
        why = TEXT_ONLY(fusion=Name(fam.fusion or "late"))
        d.flags.append(checked(engine, lm_only, None, why))
        d.have.add(lm_only)
    if s.images:
        d.flags += mm_flags(engine, fit.layout)
    d.flags.append(context_flag(engine, core, fit))
    d.add(*memory_flag(engine, s, fit))
    kf, kl = kv_flags(engine, core, s, kv, fit)
    d.add([f for f in kf if f.flag not in d.have], kl)  # a recipe's mandatory KV dtype is set
    d.add(*tier_flags(engine, s, fit.layout.split))  # the CPU tier behind the KV cache
    hybrid = fam.attention_family == AttentionFamily.HYBRID
    chunk = chunk_tokens(s.latency, s.images)
    d.add(*chunk_flags(engine, kv, chunk, s.latency, s.images, hybrid, fit))
    if core.mtp:
        d.flags += mtp_flags(engine, core)
    elif fam.mtp_layers > 0:
        why_not = LEFT_MTP_BUSY(why=draft_why(core, SPEC_SLOWER, s))
        d.left.append(LeftOut(eng.flag("speculative"), why_not))
    overlap = Percent(s.prefix_overlap / 100)
    prefix = LEFT_PREFIX_USED if s.prefix_overlap > 0 else LEFT_PREFIX_UNUSED
    d.left.append(LeftOut(eng.flag("prefix_cache"), prefix(overlap=overlap)))


def _environment(ask: _Ask) -> list[EnvVar]:
    """The recipes' environment, then the fabric's (NICs, multi-node NVLink) not set by them."""
    core, s, split = ask.core, ask.s, ask.fit.layout.split
    env = list(env_for(core.cfg, ask.engine, core.gpu, ask.sw, core.mtp))
    fabric = nic_env(split, s.gpus_per_node) + mnnvl_env(
        ask.engine, core.gpu, split, s.gpus_per_node
    )
    env += [e for e in fabric if e.name not in {x.name for x in env}]
    return env


def _blocked_by(ask: _Ask) -> list[Decision]:
    """Why the plan cannot start: the failed gates, and this engine's own weights that do not
    fit at the layout."""
    failed = ask.core.gates.failed()
    blocked: list[Decision] = [
        BLOCKED_FIX(gate=g.failure, reason=g.reason, fix=g.fix)
        if g.fix
        else BLOCKED(gate=g.failure, reason=g.reason)
        for g in failed
    ]
    if not ask.fit.weights_fit and not any(g.kind == "fit" for g in failed):
        memory = fit_gate(ask.fit, ask.core.gpu)  # this engine's own fit at the layout
        blocked.append(BLOCKED(gate=memory.failure, reason=memory.reason))
    return blocked


def _plan_notes(ask: _Ask, d: _Draft, passes_remote_code: bool) -> list[Decision]:
    """The notes after the flags' own: a shortened context, the engine version the model
    needs, the software report's reasons, the known issues fixed, the recipe's other values."""
    fit, sw = ask.fit, ask.sw
    notes: list[Decision] = []
    if not fit.context_fits and fit.weights_fit:
        asked = Tokens(ask.core.context_asked)
        notes.append(CONTEXT_NOTE(context=Tokens(fit.context), asked=asked))
    if sw.min_version is not None:
        notes.append(
            MIN_VERSION(
                engine=Name(adapter(ask.engine).label),
                version=Name(sw.min_version),
                architecture=Name(sw.architecture),
            )
        )
    # where the plan passes --trust-remote-code (the official commands do), the software note
    # that the model code does not need it would contradict the command
    notes.extend(
        r for r in sw.reasons if not (passes_remote_code and r.code == REMOTE_CODE_NOT_NEEDED.code)
    )
    for issue in fit.fixes:
        notes.append(KNOWN_ISSUE(symptom=symptom(issue), source=Source(issue.source)))
    # a recipe's base value that a known-issue fix of the same recipe replaces is no advice
    fixed = {f.flag for f in d.flags if f.why.code.endswith(".known_issue")}
    notes += [also for flag, also in d.recipe_also if flag not in fixed]
    return notes


def _required_here(rf: RecipeFlag, canonical: str, s: Scenario, engine: Engine) -> bool:
    """A flag the recipe makes mandatory that the plan writes as the recipe does: every one but
    a KV dtype the scenario chose itself (the plan then writes the scenario's)."""
    if not rf.required:
        return False
    eng = adapter(engine)
    if canonical != eng.flag("kv_dtype") or s.kv_dtype == "auto":
        return True
    return rf.value is not None and stored_name(rf.value) == stored_name(s.kv_dtype)


def _balancer_notes(commands: tuple[NodeCommand, ...], lay: Layout, s: Scenario) -> list[Decision]:
    """Several API servers on one node (copies on their own GPUs and ports), or one per node
    (hybrid DP load balancing): clients need one address in front of them."""
    ports = sorted({c.port for c in commands if c.port is not None})
    per_node = sum(1 for c in commands if c.node == 0 and c.port is not None)
    if per_node > 1:
        return [
            SIDE_BY_SIDE(servers=per_node, first=Name(str(ports[0])), last=Name(str(ports[-1])))
        ]
    serving_nodes = sum(1 for c in commands if c.port is not None)
    if lay.split.gpus > s.gpus_per_node and serving_nodes > len(
        [c for c in commands if c.role == "leader"]
    ):
        return [HYBRID_NODES(port=Name(str(ports[0])), nodes=serving_nodes)]
    return []
