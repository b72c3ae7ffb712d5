"""Step 5: the launch plan of one engine for the Study's layout, every flag with its reason.

``build_plan`` reads the Study's decisions (layout, context that fits, memory fraction, KV dtype,
MTP, text-only) and turns them into ``vllm serve`` / ``python3 -m sglang.launch_server``
commands — one per node when a copy of the model spans nodes — plus the environment the recipes
set. Two rules hold for every plan:

* every flag set carries the reason it is set, and every flag deliberately *not* set (because the
  engine chooses better by itself) is listed in ``left_to_engine`` with the reason;
* every flag and every enforced choice exists in the engine's pinned CLI table
  (``data/engines/``); a miss is a bug in this module and raises ``PlanError``.

Rendering (shell script, docker, Kubernetes) lives in ``engine.launch.render`` and
``engine.launch.k8s``; this module decides, it does not format text for a shell.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from engine.kv.sglang import SGLANG_ALIASES
from engine.kv.sizing import KvSizing
from engine.launch.layout import Candidate, Layout
from engine.model.loader import LoadedModel
from engine.rules import DATA_DIR, engine_rules
from engine.scenario import Engine, Scenario
from engine.software.report import SoftwareReport
from engine.software.tables import (
    engine_version,
    kv_cache_dtypes,
    lookup_flag,
    reasoning_parsers,
    tool_call_parsers,
)

if TYPE_CHECKING:
    from engine.study import _Core

LAUNCH_YAML = DATA_DIR / "launch.yaml"
PLACEHOLDER_MODEL = "/path/to/model"
LEADER = "${LEADER_ADDR}"  # shell variable the user sets to the first node's address


# --- data/launch.yaml, validated once ---------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _EngineImages(_Strict):
    vllm: str
    sglang: str


class _Entrypoint(_Strict):
    vendor: Literal["nvidia", "amd"]
    engine: Engine


class _Images(_Strict):
    nvidia: _EngineImages
    amd: _EngineImages
    entrypoint_serves: _Entrypoint
    source: str = Field(min_length=1)


class _PrefillChunk(_Strict):
    latency: int = Field(gt=0)
    balanced: int = Field(gt=0)
    throughput: int = Field(gt=0)
    images: int = Field(gt=0)
    source: str = Field(min_length=1)

    def for_priority(self, priority: str) -> int:
        chunk: int = getattr(self, priority)
        return chunk


class _Mtp(_Strict):
    max_users: int = Field(ge=1)
    max_users_source: str = Field(min_length=1)
    vllm_num_speculative_tokens: int = Field(ge=1)
    sglang_num_steps: int = Field(ge=1)
    sglang_eagle_topk: int = Field(ge=1)
    sglang_num_draft_tokens: int = Field(ge=2)
    source: str = Field(min_length=1)


class _LmCache(_Strict):
    chunk_size: int = Field(gt=0)
    source: str = Field(min_length=1)


class _Kubernetes(_Strict):
    shm_size: str = Field(pattern=r"^\d+(Mi|Gi)$")
    source: str = Field(min_length=1)


class _Router(_Strict):
    argv: list[str] = Field(min_length=1)
    image: str | None = None
    source: str = Field(min_length=1)


class _MultiNode(_Strict):
    vllm_dp_rpc_port: int = Field(ge=1, le=65535)
    vllm_master_port: int = Field(ge=1, le=65535)
    sglang_dist_init_port: int = Field(ge=1, le=65535)
    source: str = Field(min_length=1)


class _BaseCheckpoints(_Strict):
    marker_tokens: list[str]
    instruct_named: dict[str, list[str]]
    source: str = Field(min_length=1)


class LaunchFacts(_Strict):
    """``data/launch.yaml``: the facts a launch command and its deployment are built from."""

    port: int = Field(ge=1, le=65535)
    base_checkpoints: _BaseCheckpoints
    images: _Images
    prefill_chunk: _PrefillChunk
    mtp: _Mtp
    lmcache: _LmCache
    kubernetes: _Kubernetes
    routers: dict[Engine, _Router]
    multi_node: _MultiNode
    layout: dict[str, Any]


@cache
def launch_facts() -> LaunchFacts:
    """``data/launch.yaml``, read and validated once."""
    raw = yaml.safe_load(LAUNCH_YAML.read_text(encoding="utf-8"))
    return LaunchFacts.model_validate(raw)


class PlanError(RuntimeError):
    """A generated flag or value is not in the engine's pinned table: a bug here, not bad input."""


# --- the pieces of a plan --------------------------------------------------------------------


@dataclass(frozen=True)
class PlanFlag:
    """One option on the command line; ``value`` is None for a switch."""

    flag: str
    value: str | None
    reason: str

    @property
    def tokens(self) -> list[str]:
        return [self.flag] if self.value is None else [self.flag, self.value]

    def to_json(self) -> dict[str, str | None]:
        return {"flag": self.flag, "value": self.value, "reason": self.reason}


@dataclass(frozen=True)
class LeftOut:
    """An option deliberately not set: the engine's own choice is the better one."""

    flag: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"flag": self.flag, "reason": self.reason}


@dataclass(frozen=True)
class EnvVar:
    """An environment variable the engine reads at start, with why the plan sets it."""

    name: str
    value: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "value": self.value, "reason": self.reason}


Role = Literal["server", "leader", "worker"]


@dataclass(frozen=True)
class NodeCommand:
    """The command one node runs. ``role``: a whole server (the copy fits one node), or the
    leader / a worker of a copy that spans nodes. ``devices``: the GPUs of this node it uses
    when several servers share a node (CUDA_VISIBLE_DEVICES)."""

    node: int
    role: Role
    rank: int  # node rank inside the copy (0 for a server)
    argv: tuple[str, ...]
    devices: tuple[int, ...] | None
    port: int | None


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
    blocked_by: tuple[str, ...]
    notes: tuple[str, ...]
    users: int
    prefix_overlap: float
    port: int

    @property
    def program(self) -> list[str]:
        """The program part of argv (before the options)."""
        if self.engine == "vllm":
            return ["vllm", "serve", self.model_id]
        return ["python3", "-m", "sglang.launch_server"]

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


# --- flag checking --------------------------------------------------------------------------


def checked(engine: Engine, flag: str, value: str | None, reason: str) -> PlanFlag:
    """A PlanFlag after checking the spelling is the canonical, non-deprecated option in the
    pinned table, that it takes a value exactly when one is given, and the value is a listed
    choice where the engine enforces its choices."""
    info = lookup_flag(engine, flag)
    if info is None or info.flag != flag:
        raise PlanError(f"{engine} {engine_version(engine)} has no option {flag}")
    if info.deprecated:
        raise PlanError(f"{engine} {flag} is deprecated in {engine_version(engine)}")
    if info.takes_value != (value is not None):
        raise PlanError(f"{engine} {flag}: takes_value is {info.takes_value}, got {value!r}")
    enforced = info.choices if info.choices_enforced else None
    if value is not None and enforced is not None and value not in enforced:
        raise PlanError(f"{engine} {flag} has no choice {value!r}")
    return PlanFlag(flag, value, reason)


def as_spelled(engine: Engine, flag: str, value: str | None, reason: str) -> PlanFlag:
    """A flag as an official recipe spells it (``--config.key`` forms included), after checking
    the pinned table knows it and does not mark it deprecated."""
    info = lookup_flag(engine, flag)
    if info is None or info.deprecated:
        raise PlanError(f"{engine} {engine_version(engine)} has no current option {flag}")
    return PlanFlag(flag, value, reason)


# Flags whose values the Study decides (sizing, layout, context): a recipe's value for one of
# them becomes a note rather than a second, conflicting setting.
STUDY_DECIDED = frozenset(
    {
        "--kv-cache-dtype",
        "--gpu-memory-utilization",
        "--mem-fraction-static",
        "--max-num-batched-tokens",
        "--chunked-prefill-size",
        "--block-size",
        "--max-model-len",
        "--context-length",
        "--tensor-parallel-size",
        "--tp-size",
        "--data-parallel-size",
        "--dp-size",
        "--enable-expert-parallel",
        "--ep-size",
    }
)


def _split_token(token: str) -> tuple[str, str | None]:
    flag, sep, value = token.partition("=")
    return flag, (value if sep else None)


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


def smaller_checkpoints(model_id: str) -> list[str]:
    """Official quantized siblings of ``model_id`` (data/recipes.yaml), as suggestions."""
    from engine.launch.recipes import checkpoints_of

    return [
        f"the official {kind.upper()} checkpoint {repo} ({source})"
        for kind, repo, source in checkpoints_of(model_id)
    ]


# --- rules -----------------------------------------------------------------------------------


def _copies_per_node(lay: Layout, per_node: int) -> int:
    return max(1, per_node // lay.split.gpus) if lay.split.gpus <= per_node else 1


def _merges_copies(engine: Engine, moe: bool) -> bool:
    """Can one server hold several full copies on a node? vLLM's --data-parallel-size does for
    a dense model (its DP ranks are independent replicas); for a MoE model vLLM spreads the
    experts over the DP ranks, a different layout, so copies stay separate servers. SGLang's
    --dp-size is "data-parallel replicas of the model" for both."""
    return engine == "sglang" or not moe


# The flags that carry the layout, in both engines' spellings (_parallel_flags sets them).
PARALLEL_FLAGS = frozenset(
    {
        "--tensor-parallel-size",
        "--data-parallel-size",
        "--pipeline-parallel-size",
        "--enable-expert-parallel",
        "--tp-size",
        "--attn-dp-size",
        "--ep-size",
        "--pp-size",
        "--dp-size",
    }
)


def _parallel_flags(
    engine: Engine, lay: Layout, fit: Candidate, moe: bool, experts: str, per_node: int
) -> list[PlanFlag]:
    s = lay.split
    out: list[PlanFlag] = []
    merged = _copies_per_node(lay, per_node) if _merges_copies(engine, moe) else 1
    why_tp = (
        f"{lay.describe()}: chosen by the layout search "
        f"({fit.users:,} users fit at {fit.context:,} tokens, "
        f"{fit.weights_per_gpu / 2**30:,.1f} GiB weights per GPU)"
    )
    if engine == "vllm":
        out.append(checked(engine, "--tensor-parallel-size", str(s.tp), why_tp))
        dp = s.dp * merged
        if dp > 1:
            what = (
                f"{s.dp} attention data-parallel ranks (DP-attention): each keeps its own "
                "requests' KV; the MoE layers span all of them"
                if s.dp > 1
                else f"{merged} independent replicas of the model in one server"
            )
            out.append(checked(engine, "--data-parallel-size", str(dp), what))
        if s.pp > 1:
            out.append(
                checked(
                    engine,
                    "--pipeline-parallel-size",
                    str(s.pp),
                    f"{s.pp} pipeline stages, one per node: layers split across nodes, TP inside",
                )
            )
        if s.ep:
            out.append(
                checked(
                    engine,
                    "--enable-expert-parallel",
                    None,
                    f"MoE ({experts}): experts placed whole over TP × DP = {s.moe_group} GPUs "
                    "instead of every GPU holding a slice of every expert",
                )
            )
        return out
    full_tp = s.tp * s.dp
    out.append(checked(engine, "--tp-size", str(full_tp), why_tp))
    if s.dp > 1:
        out.append(
            checked(
                engine,
                "--attn-dp-size",
                str(s.dp),
                f"{s.dp} attention data-parallel groups of TP {s.tp} inside the TP {full_tp} "
                "group: each keeps its own requests' KV (SGLang 0.5.23's spelling; the older "
                "--enable-dp-attention --dp-size is deprecated)",
            )
        )
    if s.ep:
        out.append(
            checked(
                engine,
                "--ep-size",
                str(full_tp),
                f"MoE ({experts}): experts placed whole over the {full_tp} GPUs of the TP group",
            )
        )
    if s.pp > 1:
        out.append(checked(engine, "--pp-size", str(s.pp), f"{s.pp} pipeline stages, one per node"))
    if merged > 1:
        out.append(
            checked(
                engine,
                "--dp-size",
                str(merged),
                f"{merged} data-parallel replicas of the model in one server",
            )
        )
    return out


def _parser_flags(
    engine: Engine, sw: SoftwareReport, base: bool
) -> tuple[list[PlanFlag], list[LeftOut], list[str]]:
    flags: list[PlanFlag] = []
    left: list[LeftOut] = []
    notes: list[str] = []
    family = sw.family or sw.architecture
    kinds = (
        ("--tool-call-parser", sw.tool_call_parser, tool_call_parsers(engine),
         "tool calls come back as plain text"),
        ("--reasoning-parser", sw.reasoning_parser, reasoning_parsers(engine),
         "thinking tokens are mixed into the answer"),
    )  # fmt: skip
    for flag, name, registry, what in kinds:
        if flag == "--tool-call-parser" and base and name is not None:
            left.append(
                LeftOut(
                    flag,
                    "a base (pre-trained) checkpoint has no chat template or tool-call format to "
                    "parse; serve the instruct / chat checkpoint for tool calling",
                )
            )
            continue
        if name is not None and name in registry:
            flags.append(checked(engine, flag, name, f"{family}: without it {what} ({name!r})"))
        elif name is not None:
            notes.append(f"{flag} {name} is not in {engine}'s registry; not set")
        else:
            left.append(LeftOut(flag, f"no {flag[2:]} is recorded for {family}"))
    return flags, left, notes


def _sglang_spelling(stored: str) -> str:
    """The shortest ``--kv-cache-dtype`` value SGLang accepts for a stored dtype ("bf16")."""
    accepted = kv_cache_dtypes("sglang")
    names = [k for k, v in SGLANG_ALIASES.items() if v == stored and k in accepted]
    return min(names, key=len, default=stored)


def _kv_flags(
    engine: Engine, core: _Core, s: Scenario, kv: KvSizing
) -> tuple[list[PlanFlag], list[LeftOut]]:
    fam = core.family.attention_family
    gpu = core.gpu
    if s.kv_dtype != "auto":
        value = s.kv_dtype if engine == "vllm" else _sglang_spelling(kv.kv_dtype.stored)
        if engine == "vllm" and value not in kv_cache_dtypes("vllm"):
            value = kv.kv_dtype.stored
        why = f"the KV dtype chosen for this scenario (stored as {kv.kv_dtype.stored})"
        if fam == "DSA":
            why += "; DSA engines pick the KV dtype per layer themselves, this overrides them"
        return [checked(engine, "--kv-cache-dtype", value, why)], []
    if fam == "DSA":
        if engine == "sglang":
            blackwell = gpu.generation.startswith("blackwell")
            auto = engine_rules().sglang.dsa_auto_dtype["blackwell" if blackwell else "hopper"]
            picked = _sglang_spelling(auto)
        else:
            picked = kv.kv_dtype.stored
        return [], [
            LeftOut(
                "--kv-cache-dtype",
                f"DSA: the engine picks the KV dtype per layer (here {picked}); forcing fp8 "
                "overrides that choice without an error",
            ),
            LeftOut(
                "--attention-backend",
                "DSA: prefill and decode use different sparse kernels, picked per phase on "
                f"{gpu.arch}; a manual backend pushes it off the optimal path",
            ),
        ]
    return [], [
        LeftOut(
            "--kv-cache-dtype",
            f"'auto' stores KV in the model dtype ({kv.kv_dtype.stored} here); set fp8 only "
            "when capacity, not speed, is the limit",
        ),
        LeftOut(
            "--attention-backend",
            f"{fam} attention: the engine picks the backend for {gpu.arch} ({gpu.generation})",
        ),
    ]


def _memory_flag(
    engine: Engine, s: Scenario, fit: Candidate
) -> tuple[list[PlanFlag], list[LeftOut]]:
    flag = "--gpu-memory-utilization" if engine == "vllm" else "--mem-fraction-static"
    if s.memory_fraction is not None:
        what = (
            "weights, activations and KV cache"
            if engine == "vllm"
            else "the static pool (weights + KV)"
        )
        return [
            checked(
                engine,
                flag,
                f"{s.memory_fraction:g}",
                f"{s.memory_fraction:g} of each GPU for {what}, as chosen for this scenario",
            )
        ], []
    default = (
        f"the pinned table's default {fit.fraction:g}"
        if engine == "vllm"
        else f"SGLang's own choice for this GPU and layout (≈ {fit.fraction:g})"
    )
    return [], [LeftOut(flag, f"{default}; the sizing on every page used the same value")]


def _chunk_flags(
    engine: Engine, kv: KvSizing, chunk: int, priority: str, images: bool, hybrid_fam: bool
) -> tuple[list[PlanFlag], list[LeftOut], list[str]]:
    why = (
        f"images make prefill dominate: {chunk:,}-token prefill chunks"
        if images
        else f"{priority} priority: {chunk:,}-token prefill chunks"
    )
    left: list[LeftOut] = []
    notes: list[str] = []
    hybrid = kv.hybrid
    if engine == "vllm":
        if hybrid is not None:
            n = hybrid.block_size
            chunk = n * math.ceil(chunk / n)
            why += (
                f", rounded up to {chunk:,} = {chunk // n} × N where N = {n} is the attention "
                "block size vLLM aligns to the linear-attention state page; a chunk that is not "
                "a multiple of N leaves a partial page that prefix caching cannot reuse"
            )
            left.append(
                LeftOut(
                    "--block-size",
                    f"hybrid: vLLM aligns the attention block to the state page itself (N = {n} "
                    "tokens here); a manual block size breaks that alignment",
                )
            )
            lmcache_chunk = launch_facts().lmcache.chunk_size
            example = n * max(1, lmcache_chunk // n)
            fits = lmcache_chunk % n == 0
            notes.append(
                f"LMCache: set its chunk size (LMCACHE_CHUNK_SIZE, default "
                f"{lmcache_chunk}) to a multiple of N = {n}, e.g. {example}"
                + ("" if fits else f" ({lmcache_chunk} is not one)")
            )
        return [checked(engine, "--max-num-batched-tokens", str(chunk), why)], left, notes
    if hybrid_fam:
        left.append(
            LeftOut(
                "--page-size",
                "hybrid: SGLang keeps linear-attention state per request and picks the page "
                "size with the attention backend",
            )
        )
    return [checked(engine, "--chunked-prefill-size", str(chunk), why)], left, notes


def _mtp_flags(engine: Engine, core: _Core, users: int) -> list[PlanFlag]:
    from engine.launch.recipes import speculative_for

    layers = core.family.mtp_layers
    limit = launch_facts().mtp.max_users
    why = (
        f"the checkpoint has {layers} MTP layer(s) that serve as the draft model; with {users} "
        f"concurrent user(s) (≤ {limit}) the GPU has idle compute to verify drafts"
    )
    spec = speculative_for(core.cfg, engine)
    if engine == "vllm":
        value = json.dumps(
            {"method": spec.method, "num_speculative_tokens": spec.num_speculative_tokens},
            separators=(",", ":"),
        )
        return [
            checked(
                engine,
                "--speculative-config",
                value,
                why + f"; {spec.num_speculative_tokens} draft token(s) ({spec.source})",
            )
        ]
    return [
        checked(
            engine,
            "--speculative-algorithm",
            spec.algorithm,
            why + f" ({spec.algorithm} runs the MTP head; {spec.source})",
        ),
        checked(engine, "--speculative-num-steps", str(spec.num_steps), "draft steps per round"),
        checked(engine, "--speculative-eagle-topk", str(spec.eagle_topk), "candidates per step"),
        checked(
            engine,
            "--speculative-num-draft-tokens",
            str(spec.num_draft_tokens),
            "tokens verified per round",
        ),
    ]


def _mm_flags(engine: Engine, lay: Layout) -> list[PlanFlag]:
    if engine == "vllm":
        out = [
            checked(
                engine,
                "--mm-processor-cache-type",
                "shm",
                "repeated images reuse their preprocessing through shared memory (keyed by the "
                "image hash; only byte-identical images hit)",
            )
        ]
        if lay.tp > 1:
            out.append(
                checked(
                    engine,
                    "--mm-encoder-tp-mode",
                    "data",
                    f"the vision encoder is small next to the LM: run it data-parallel on the "
                    f"{lay.tp} GPUs instead of splitting it TP {lay.tp}",
                )
            )
        return out
    if lay.tp > 1:
        return [
            checked(
                engine,
                "--mm-enable-dp-encoder",
                None,
                "SGLang's counterpart of vLLM --mm-encoder-tp-mode data: the vision encoder runs "
                f"data-parallel on the {lay.tp} GPUs",
            )
        ]
    return []


def _context_flag(engine: Engine, core: _Core, fit: Candidate) -> PlanFlag:
    flag = "--max-model-len" if engine == "vllm" else "--context-length"
    asked = core.context_asked
    if fit.context_fits:
        why = (
            f"the workload's context ({asked:,} tokens), within the model's limit "
            f"({core.limit.tokens:,}: {core.limit.formula}); never left to a default that may "
            "not fit"
        )
    else:
        why = (
            f"the longest context one request fits at this layout ({fit.context:,} of the "
            f"{asked:,} asked): without it the engine takes the model's {core.limit.tokens:,} "
            "and stops at start-up"
        )
    return checked(engine, flag, str(fit.context), why)


def _multi_node_args(engine: Engine, lay: Layout, per_node: int, rank: int) -> list[str]:
    """The extra tokens of node ``rank`` of a copy that spans nodes."""
    mn = launch_facts().multi_node
    nodes = lay.split.gpus // per_node
    if engine == "sglang":
        return [
            "--nnodes",
            str(nodes),
            "--node-rank",
            str(rank),
            "--dist-init-addr",
            f"{LEADER}:{mn.sglang_dist_init_port}",
        ]
    if lay.dp > 1:
        local = lay.dp // nodes
        out = [
            "--data-parallel-size-local",
            str(local),
            "--data-parallel-address",
            LEADER,
            "--data-parallel-rpc-port",
            str(mn.vllm_dp_rpc_port),
        ]
        if rank:
            out += ["--data-parallel-start-rank", str(rank * local), "--headless"]
        return out
    out = [
        "--nnodes",
        str(nodes),
        "--node-rank",
        str(rank),
        "--master-addr",
        LEADER,
        "--master-port",
        str(mn.vllm_master_port),
    ]
    return out + (["--headless"] if rank else [])


def _commands(
    engine: Engine,
    program: list[str],
    flags: list[PlanFlag],
    lay: Layout,
    s: Scenario,
    moe: bool,
) -> tuple[NodeCommand, ...]:
    per_node = s.gpus_per_node
    port = launch_facts().port
    base = list(program)
    for f in flags:
        base += f.tokens
    for token in _multi_node_args(engine, lay, per_node, 0) if lay.split.gpus > per_node else []:
        _check_token(engine, token)
    out: list[NodeCommand] = []
    if lay.split.gpus > per_node:
        nodes_per_copy = lay.split.gpus // per_node
        for node in range(s.nodes):
            rank = node % nodes_per_copy
            argv = base + _multi_node_args(engine, lay, per_node, rank)
            role: Role = "leader" if rank == 0 else "worker"
            out.append(
                NodeCommand(node, role, rank, tuple(argv), None, port if rank == 0 else None)
            )
        return tuple(out)
    copies = _copies_per_node(lay, per_node)
    if copies == 1 or _merges_copies(engine, moe):
        return tuple(NodeCommand(n, "server", 0, tuple(base), None, port) for n in range(s.nodes))
    size = lay.split.gpus
    for node in range(s.nodes):
        for i in range(copies):
            argv = _with_port(base, port + i)
            devices = tuple(range(i * size, (i + 1) * size))
            out.append(NodeCommand(node, "server", 0, tuple(argv), devices, port + i))
    return tuple(out)


def _check_token(engine: Engine, token: str) -> None:
    if token.startswith("--") and lookup_flag(engine, token) is None:
        raise PlanError(f"{engine} {engine_version(engine)} has no option {token}")


def _with_port(argv: list[str], port: int) -> list[str]:
    out = list(argv)
    i = out.index("--port")
    out[i + 1] = str(port)
    return out


# --- entry point ----------------------------------------------------------------------------


def build_plan(
    core: _Core,
    s: Scenario,
    engine: Engine,
    fit: Candidate,
    kv: KvSizing,
    sw: SoftwareReport,
    runnable: bool,
) -> LaunchPlan:
    """The launch plan of ``engine`` for the Study's layout ``fit``."""
    from engine.launch.recipes import base_flags_for, env_for, is_base_checkpoint

    fam = core.family
    lay = fit.layout
    cfg = core.cfg
    model_id = model_id_for(core.model)
    facts = launch_facts()
    flags: list[PlanFlag] = []
    left: list[LeftOut] = []
    notes: list[str] = []
    if engine == "sglang":
        flags.append(checked(engine, "--model-path", model_id, "the checkpoint to serve"))
    flags.append(
        checked(engine, "--host", "0.0.0.0", "listen on every interface (inside a container)")
    )
    flags.append(checked(engine, "--port", str(facts.port), "one port for docker and Kubernetes"))
    experts = f"{fam.num_experts} experts, {fam.experts_per_token} active per token"
    flags += _parallel_flags(engine, lay, fit, fam.moe, experts, s.gpus_per_node)
    if fam.moe and not lay.ep and lay.split.moe_group > 1:
        left.append(
            LeftOut(
                "--enable-expert-parallel" if engine == "vllm" else "--ep-size",
                f"experts are sliced over {lay.split.moe_group} GPUs (both engines' default); "
                "expert parallelism would place them whole",
            )
        )
    elif fam.moe and lay.split.moe_group == 1:
        left.append(LeftOut("expert parallel", "one GPU holds every expert: nothing to split"))

    left.append(
        LeftOut(
            "--quantization",
            f"{sw.checkpoint_format} checkpoint: {engine} reads the quantization from the "
            "checkpoint itself; forcing a method can select a slower kernel",
        )
    )
    base = core.model.source != "file" and is_base_checkpoint(core.model.name, sw)
    pf, pl, pn = _parser_flags(engine, sw, base)
    flags += pf
    left += pl
    notes += pn
    have = {f.flag for f in flags}
    for token in sw.extra_flags:
        flag, value = _split_token(token)
        if flag in have:
            continue
        if flag == "--enable-auto-tool-choice" and "--tool-call-parser" not in have:
            continue
        reason = sw.flag_reasons.get(token) or sw.flag_reasons.get(flag) or "software report"
        flags.append(checked(engine, flag, value, reason))
        have.add(flag)
    for rf in base_flags_for(cfg, engine, core.gpu, sw):
        info = lookup_flag(engine, rf.flag)
        canonical = info.flag if info is not None else rf.flag
        if canonical in STUDY_DECIDED:
            shown = rf.flag + (f" {rf.value}" if rf.value is not None else "")
            notes.append(f"The official recipe also sets {shown}: {rf.reason}")
            continue
        if rf.flag in have or canonical in have:
            continue
        flags.append(as_spelled(engine, rf.flag, rf.value, rf.reason))
        have.update({rf.flag, canonical})
        left = [x for x in left if x.flag != canonical]
    if core.text_only and "--language-model-only" not in have:
        flags.append(
            checked(
                engine,
                "--language-model-only",
                None,
                f"text-only use of a multimodal ({fam.fusion} fusion) checkpoint: the vision "
                "tower is never loaded, saving its memory and start-up time",
            )
        )
        have.add("--language-model-only")
    if s.images:
        flags += _mm_flags(engine, lay)
    flags.append(_context_flag(engine, core, fit))
    mf, ml = _memory_flag(engine, s, fit)
    flags += mf
    left += ml
    kf, kl = _kv_flags(engine, core, s, kv)
    flags += kf
    left += kl
    cf, cl, cn = _chunk_flags(
        engine,
        kv,
        chunk_tokens(s.latency, s.images),
        s.latency,
        s.images,
        fam.attention_family == "HYBRID",
    )
    flags += cf
    left += cl
    notes += cn
    if core.mtp:
        flags += _mtp_flags(engine, core, s.users)
    elif fam.mtp_layers > 0:
        left.append(
            LeftOut(
                "--speculative-config" if engine == "vllm" else "--speculative-algorithm",
                f"MTP layers exist, but {s.users} concurrent users (> {facts.mtp.max_users}) "
                "leave no idle compute for drafts: speculative decoding would cost throughput",
            )
        )
    cache_name = "prefix caching" if engine == "vllm" else "radix cache"
    left.append(
        LeftOut(
            "--enable-prefix-caching" if engine == "vllm" else "--disable-radix-cache",
            f"{cache_name} is on by default; prefix overlap {s.prefix_overlap} % "
            + ("benefits from it" if s.prefix_overlap > 0 else "gives it little to reuse"),
        )
    )
    env = list(env_for(cfg, engine, core.gpu, sw))
    have = {f.flag for f in flags}
    left = [x for x in left if x.flag not in have]
    if "--trust-remote-code" in have:
        notes.append(
            "--trust-remote-code runs Python code from the model repository on every node: read "
            "the repository's modeling files before you launch"
        )
    blocked = [
        f"{g.name}: {g.reason}" + (f" (fix: {g.fix})" if g.fix else "")
        for g in core.gates.gates
        if g.status == "fail"
    ]
    if not fit.weights_fit and not any(b.startswith("fits in memory") for b in blocked):
        blocked.append(f"fits in memory: {fit.memory_formula()}")
    if not fit.context_fits and fit.weights_fit:
        notes.append(
            f"context shortened to {fit.context:,} tokens: one request of {core.context_asked:,} "
            "does not fit at this layout"
        )
    if sw.min_version is not None:
        notes.append(f"{engine} >= {sw.min_version} for {sw.architecture}")
    notes.extend(sw.notes)
    program = (
        ["vllm", "serve", model_id]
        if engine == "vllm"
        else ["python3", "-m", "sglang.launch_server"]
    )
    commands = _commands(engine, program, flags, lay, s, fam.moe)
    return LaunchPlan(
        engine=engine,
        engine_version=engine_version(engine),
        model_id=model_id,
        model_name=core.model.name,
        gpu_key=core.gpu.key,
        gpu_vendor="amd" if core.gpu.vendor == "amd" else "nvidia",
        gpus_per_node=s.gpus_per_node,
        nodes=s.nodes,
        layout=lay,
        fit=fit,
        context=fit.context,
        flags=tuple(flags),
        left_to_engine=tuple(left),
        env=tuple(env),
        commands=commands,
        runnable=runnable and not blocked,
        blocked_by=tuple(blocked),
        notes=tuple(dict.fromkeys(n for n in notes if n)),
        users=s.users,
        prefix_overlap=s.prefix_overlap / 100,
        port=facts.port,
    )
