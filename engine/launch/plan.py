"""Step 5: one launch command for one engine, every flag with its reason.

``plan`` turns the diagnosis (family, KV layout, weights), the hardware gates and the software
report (parsers, special flags) into a ``vllm serve`` or ``python3 -m sglang.launch_server``
command. Two rules hold for every plan:

* every flag set carries the reason it is set, and every flag deliberately *not* set (because the
  engine chooses better by itself) is listed in ``left_to_engine`` with the reason;
* every flag and every enforced choice exists in the engine's pinned CLI table
  (``data/engines/``); a miss is a bug in this module and raises ``PlanError``.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field

from engine.diagnose import Diagnosis, Options, diagnose
from engine.errors import InputError
from engine.hardware.gates import GateReport, evaluate_gates, gate_context, min_gpus_for
from engine.hardware.gpus import Gpu, lookup_gpu
from engine.kv.sglang import SGLANG_ALIASES
from engine.launch.advisors import DP_ATTENTION_MIN_CONCURRENCY
from engine.model.config import ModelConfig
from engine.rules import DATA_DIR, engine_rules
from engine.software.report import SoftwareReport, software_report
from engine.software.tables import (
    engine_version,
    kv_cache_dtypes,
    lookup_flag,
    reasoning_parsers,
    tool_call_parsers,
)

Engine = Literal["vllm", "sglang"]
ENGINES: tuple[Engine, ...] = get_args(Engine)
LatencyPriority = Literal["latency", "balanced", "throughput"]
LATENCY_PRIORITIES: tuple[LatencyPriority, ...] = get_args(LatencyPriority)

PORT = 8000
PLAYBOOK = "playbook seeds/004"
LAUNCH_YAML = DATA_DIR / "launch.yaml"


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


class _Memory(_Strict):
    sglang_mem_fraction_static: str = Field(pattern=r"^0\.\d+$")
    sglang_mem_fraction_static_mtp_or_dp_attention: str = Field(pattern=r"^0\.\d+$")
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


class LaunchFacts(_Strict):
    """``data/launch.yaml``: the facts a launch command and its deployment are built from."""

    images: _Images
    memory: _Memory
    prefill_chunk: _PrefillChunk
    mtp: _Mtp
    lmcache: _LmCache
    kubernetes: _Kubernetes
    routers: dict[Engine, _Router]


@cache
def launch_facts() -> LaunchFacts:
    """``data/launch.yaml``, read and validated once."""
    raw = yaml.safe_load(LAUNCH_YAML.read_text(encoding="utf-8"))
    return LaunchFacts.model_validate(raw)


class PlanError(RuntimeError):
    """A generated flag or value is not in the engine's pinned table: a bug here, not bad input."""


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
class Layout:
    """How the GPUs are split. ``attn_dp`` > 1 means DP-attention (SGLang ``--attn-dp-size``;
    vLLM ``--data-parallel-size`` with TP 1 per rank)."""

    tp: int
    dp: int
    attn_dp: int
    ep: bool
    reason: str


@dataclass(frozen=True)
class LaunchPlan:
    engine: Engine
    engine_version: str
    model_id: str
    gpu: Gpu
    gpus: int
    layout: Layout
    flags: tuple[PlanFlag, ...]
    left_to_engine: tuple[LeftOut, ...]
    runnable: bool
    blocked_by: tuple[str, ...]
    notes: tuple[str, ...]
    users: int
    prefix_overlap: float
    port: int = PORT

    @property
    def command(self) -> list[str]:
        """The program part of argv (before the options)."""
        if self.engine == "vllm":
            return ["vllm", "serve", self.model_id]
        return ["python3", "-m", "sglang.launch_server"]

    @property
    def argv(self) -> list[str]:
        out = list(self.command)
        for f in self.flags:
            out.extend(f.tokens)
        return out

    @property
    def image(self) -> str:
        """Container image (data/launch.yaml); AMD images follow each project's ROCm naming."""
        images = launch_facts().images
        per_engine = images.amd if self.gpu.vendor == "amd" else images.nvidia
        template: str = getattr(per_engine, self.engine)
        return template.format(version=self.engine_version)

    @property
    def image_has_entrypoint(self) -> bool:
        """vllm/vllm-openai's entrypoint is ``vllm serve``; the others start a shell."""
        serves = launch_facts().images.entrypoint_serves
        return self.engine == serves.engine and self.gpu.vendor == serves.vendor

    def container_args(self) -> list[str]:
        """What follows the image name in ``docker run``."""
        return self.argv[2:] if self.image_has_entrypoint else self.argv

    def shell(self) -> str:
        """The command, one option per line with ``\\`` continuations."""
        lines = [shlex.join(self.command)]
        lines += [shlex.join(f.tokens) for f in self.flags]
        return " \\\n  ".join(lines)

    def commented_shell(self) -> str:
        """The reasons as ``#`` comments above the command (comments cannot sit between
        continued lines), then what is left to the engine."""
        out = [f"# {' '.join(f.tokens)}: {f.reason}" for f in self.flags]
        out += [f"# not set {x.flag}: {x.reason}" for x in self.left_to_engine]
        if not self.runnable:
            out += [f"# BLOCKED by {b}" for b in self.blocked_by]
        out += [f"# note: {n}" for n in self.notes]
        return "\n".join(out) + "\n" + self.shell()

    def docker(self) -> str:
        if self.gpu.vendor == "amd":
            devices = ["--device", "/dev/kfd", "--device", "/dev/dri", "--group-add", "video"]
        else:
            devices = ["--gpus", "all"]
        head = ["docker", "run", *devices, "--ipc=host", "-p", f"{self.port}:{self.port}"]
        # Written unquoted so the shell expands $HOME; shlex.join would quote it.
        cache = '-v "$HOME/.cache/huggingface:/root/.cache/huggingface"'
        return f"{shlex.join(head)} {cache} {shlex.quote(self.image)} \\\n  " + shlex.join(
            self.container_args()
        )

    def to_json(self) -> dict[str, Any]:
        from engine.launch.k8s import kubernetes_yaml

        return {
            "engine": self.engine,
            "engine_version": self.engine_version,
            "model": self.model_id,
            "gpu": self.gpu.key,
            "gpus": self.gpus,
            "layout": {
                "tp": self.layout.tp,
                "dp": self.layout.dp,
                "attn_dp": self.layout.attn_dp,
                "expert_parallel": self.layout.ep,
                "reason": self.layout.reason,
            },
            "argv": self.argv,
            "shell": self.shell(),
            "docker": self.docker(),
            "flags": [f.to_json() for f in self.flags],
            "left_to_engine": [x.to_json() for x in self.left_to_engine],
            "runnable": self.runnable,
            "blocked_by": list(self.blocked_by),
            "notes": list(self.notes),
            "kubernetes_yaml": kubernetes_yaml(self, _k8s_name(self.model_id)),
        }


def _k8s_name(model_id: str) -> str:
    base = model_id.rsplit("/", 1)[-1].lower()
    name = "".join(c if c.isalnum() else "-" for c in base).strip("-")
    return (name or "model")[:50].rstrip("-")


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


def _split_token(token: str) -> tuple[str, str | None]:
    flag, sep, value = token.partition("=")
    return flag, (value if sep else None)


# --- rules ----------------------------------------------------------------------------------


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _choose_layout(
    d: Diagnosis,
    cfg: ModelConfig,
    engine: Engine,
    gpus: int,
    users: int,
    priority: str,
    min_gpus: int | None,
) -> Layout:
    fam = d.family
    heads = cfg.num_attention_heads
    tps = [t for t in _divisors(gpus) if heads % t == 0]
    compressed = fam.attention_family in ("MLA", "DSA")
    dp_attention = (
        gpus > 1
        and compressed
        and priority != "latency"
        and (fam.attention_family == "DSA" or users > DP_ATTENTION_MIN_CONCURRENCY)
    )
    ep = fam.moe and gpus > 1
    if dp_attention:
        why = (
            f"{fam.attention_family}: the compressed latent KV is replicated on every TP rank, so "
            f"each of the {gpus} GPUs runs its own attention group (DP-attention) and holds its "
            "own requests' KV once"
        )
        if fam.attention_family == "DSA":
            why += (
                "; DSA kernels are tuned for it (vLLM recipe DeepSeek-V3.2: TP 8 leaves 16 heads "
                "per rank padded to 64, prefer TP 1-2 + DP/EP; SGLang docs: 'customized for "
                "dp_size=8')"
            )
        else:
            why += (
                f" — worth it above {DP_ATTENTION_MIN_CONCURRENCY} concurrent requests "
                f"({users} asked)"
            )
        if engine == "vllm":
            return Layout(1, gpus, gpus, ep, why)
        return Layout(gpus, 1, gpus, ep, why)
    if priority == "throughput" and min_gpus is not None and min_gpus < gpus:
        fitting = [t for t in tps if t >= min_gpus]
        if fitting:
            tp = fitting[0]
            why = (
                f"throughput priority: {gpus // tp} replicas of TP {tp} (the smallest TP that "
                f"fits is {min_gpus}); {PLAYBOOK} measured TP2×4 at +34 % throughput and "
                "+42 % inter-token latency vs TP8×1"
            )
            return Layout(tp, gpus // tp, 1, ep, why)
    tp = tps[-1]
    if tp == gpus:
        why = f"one instance over {gpus} GPU(s): TP {tp} splits each request ({heads} heads / {tp})"
    else:
        why = (
            f"TP {tp} is the largest GPU split that divides the {heads} attention heads; "
            f"{gpus // tp} data-parallel replicas use the remaining GPUs"
        )
    return Layout(tp, gpus // tp, 1, ep, why)


def _parallel_flags(engine: Engine, lay: Layout, d: Diagnosis, gpus: int) -> list[PlanFlag]:
    fam = d.family
    out: list[PlanFlag] = []
    if engine == "vllm":
        tp_flag, dp_flag = "--tensor-parallel-size", "--data-parallel-size"
    else:
        tp_flag, dp_flag = "--tp-size", "--dp-size"
    out.append(checked(engine, tp_flag, str(lay.tp), lay.reason))
    if engine == "vllm" and lay.dp > 1:
        what = "attention ranks (DP-attention)" if lay.attn_dp > 1 else "replicas"
        out.append(checked(engine, dp_flag, str(lay.dp), f"{lay.dp} data-parallel {what}"))
    if engine == "sglang" and lay.attn_dp > 1:
        out.append(
            checked(
                engine,
                "--attn-dp-size",
                str(lay.attn_dp),
                f"{lay.attn_dp} attention data-parallel groups inside the TP {lay.tp} group, the "
                "FFN/experts stay split; SGLang 0.5.23 marks the older --enable-dp-attention "
                "--dp-size spelling deprecated",
            )
        )
    elif engine == "sglang" and lay.dp > 1:
        out.append(checked(engine, dp_flag, str(lay.dp), f"{lay.dp} data-parallel replicas"))
    if lay.ep:
        experts = f"{fam.num_experts} experts, {fam.experts_per_token} active per token"
        if engine == "vllm":
            out.append(
                checked(
                    engine,
                    "--enable-expert-parallel",
                    None,
                    f"MoE ({experts}): experts are sharded over TP × DP = {lay.tp * lay.dp} GPUs "
                    "instead of every GPU holding a slice of every expert; without it expert "
                    "weights crowd out KV space",
                )
            )
        else:
            out.append(
                checked(
                    engine,
                    "--ep-size",
                    str(lay.tp),
                    f"MoE ({experts}): expert parallel over the {lay.tp} GPUs of the TP group "
                    "(0.5.23's spelling; the playbook's --enable-moe-ep is not in its table)",
                )
            )
    return out


def _parser_flags(
    engine: Engine, sw: SoftwareReport
) -> tuple[list[PlanFlag], list[LeftOut], list[str]]:
    flags: list[PlanFlag] = []
    left: list[LeftOut] = []
    notes: list[str] = []
    family = sw.family or sw.architecture
    kinds = (
        (
            "--tool-call-parser",
            sw.tool_call_parser,
            tool_call_parsers(engine),
            "tool calls come back as plain text",
        ),
        (
            "--reasoning-parser",
            sw.reasoning_parser,
            reasoning_parsers(engine),
            "thinking tokens are mixed into the answer",
        ),
    )
    for flag, name, registry, what in kinds:
        info = lookup_flag(engine, flag)
        has_auto = info is not None and info.choices is not None and "auto" in info.choices
        if name is not None and name in registry:
            why = (
                f"{family}: without it {what} (software report: {name!r}, in the {engine} registry)"
            )
            if has_auto:
                why += (
                    "; SGLang 0.5.23 also accepts 'auto', but the explicit name is pinned: "
                    "'auto' guesses from the model and a wrong guess fails silently"
                )
            flags.append(checked(engine, flag, name, why))
        elif name is not None:
            notes.append(f"{flag} {name} is not in {engine}'s registry; not set")
        else:
            why = f"no parser family for {family} names a {flag[2:]}"
            if has_auto:
                why += "; SGLang 0.5.23's 'auto' could try to detect one: set it only if needed"
            left.append(LeftOut(flag, why))
    return flags, left, notes


def _sglang_spelling(stored: str) -> str:
    """The shortest ``--kv-cache-dtype`` value SGLang accepts for a stored dtype ("bf16")."""
    accepted = kv_cache_dtypes("sglang")
    names = [k for k, v in SGLANG_ALIASES.items() if v == stored and k in accepted]
    return min(names, key=len, default=stored)


def _kv_left_outs(engine: Engine, d: Diagnosis, gpu: Gpu) -> list[LeftOut]:
    fam = d.family.attention_family
    if fam == "DSA":
        if engine == "sglang":
            # SGLang's DSA auto dtype per generation (data/engine_rules.yaml). Not read from
            # d.sglang: sglang_kv._blackwell takes sm_90 for Blackwell.
            blackwell = gpu.generation.startswith("blackwell")
            auto = engine_rules().sglang.dsa_auto_dtype["blackwell" if blackwell else "hopper"]
            picked = _sglang_spelling(auto)
            if gpu.vendor == "amd":
                backend = "triton prefill + triton decode"
            elif blackwell:
                backend = "trtllm prefill + trtllm decode"
            else:
                backend = "flashmla_sparse prefill + fa3 decode"
        else:
            picked = (
                "the per-layer DSA layout (latent cache + indexer keys, fp8_ds_mla where it pays)"
            )
            backend = "FLASHMLA_SPARSE (or the ROCm sparse MLA backend) chosen per GPU"
        return [
            LeftOut(
                "--kv-cache-dtype",
                f"DSA: the engine picks the KV dtype per layer (here {picked}); forcing fp8 "
                "overrides that choice without an error (playbook: left out on purpose)",
            ),
            LeftOut(
                "--attention-backend",
                "DSA: prefill and decode use different sparse kernels, picked per phase "
                f"({backend}); a manual backend pushes it off the optimal path",
            ),
        ]
    return [
        LeftOut(
            "--kv-cache-dtype",
            f"'auto' stores KV in the model dtype ({d.kv.kv_dtype.stored} here); set fp8 only "
            "when capacity, not speed, is the limit",
        ),
        LeftOut(
            "--attention-backend",
            f"{fam} attention: the engine picks the backend for {gpu.arch} ({gpu.generation})",
        ),
    ]


def _memory_flag(engine: Engine, d: Diagnosis, mtp: bool, dp_attention: bool) -> PlanFlag:
    if engine == "vllm":
        sizing = d.options.memory_fraction
        return checked(
            engine,
            "--gpu-memory-utilization",
            f"{sizing:g}",
            f"{sizing * 100:g} % of each GPU for weights + KV cache (the sizing step's "
            "fraction); the rest is activations, CUDA graphs and NCCL buffers",
        )
    mem = launch_facts().memory
    tight = mtp or dp_attention
    frac = (
        mem.sglang_mem_fraction_static_mtp_or_dp_attention
        if tight
        else mem.sglang_mem_fraction_static
    )
    extra = (
        f" ({frac}: the MTP draft / DP-attention buffers need more headroom, as in the "
        "playbook's GLM-5.2 command)"
        if tight
        else ""
    )
    return checked(
        engine,
        "--mem-fraction-static",
        frac,
        f"static pool (weights + KV) at {frac} of GPU memory, leaving room for activations and "
        f"CUDA graphs{extra}",
    )


def _chunk_flags(
    engine: Engine, d: Diagnosis, priority: str, images: bool
) -> tuple[list[PlanFlag], list[LeftOut], list[str]]:
    sizes = launch_facts().prefill_chunk
    chunk = sizes.for_priority(priority)
    why = f"{priority} priority: {chunk:,}-token prefill chunks"
    if images and chunk < sizes.images:
        chunk = sizes.images
        why = f"images make prefill dominate: {chunk:,}-token prefill chunks"
    left: list[LeftOut] = []
    notes: list[str] = []
    hybrid = d.kv.hybrid
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
    if d.family.attention_family == "HYBRID":
        left.append(
            LeftOut(
                "--page-size",
                "hybrid: SGLang keeps linear-attention state per request and picks the page "
                "size with the attention backend (1 for triton, 64 for trtllm_mha on SM100)",
            )
        )
    return [checked(engine, "--chunked-prefill-size", str(chunk), why)], left, notes


def _mtp_flags(engine: Engine, cfg: ModelConfig, d: Diagnosis, users: int) -> list[PlanFlag]:
    layers = d.family.mtp_layers
    mtp = launch_facts().mtp
    why = (
        f"the checkpoint has {layers} MTP layer(s) that serve as the draft model; with {users} "
        f"concurrent user(s) (≤ {mtp.max_users}) the GPU has idle compute to verify drafts, "
        "at high concurrency it does not pay"
    )
    if engine == "vllm":
        tokens = mtp.vllm_num_speculative_tokens
        spec = json.dumps(
            {"method": "mtp", "num_speculative_tokens": tokens}, separators=(",", ":")
        )
        return [checked(engine, "--speculative-config", spec, why + f"; {tokens} draft token(s)")]
    algo = "NEXTN" if cfg.model_type.startswith("qwen3") else "EAGLE"
    steps, topk, drafts = mtp.sglang_num_steps, mtp.sglang_eagle_topk, mtp.sglang_num_draft_tokens
    return [
        checked(engine, "--speculative-algorithm", algo, why + f" ({algo} runs the MTP head)"),
        checked(
            engine,
            "--speculative-num-steps",
            str(steps),
            f"{steps} draft step(s) (SGLang's minimum 1/1/2)",
        ),
        checked(engine, "--speculative-eagle-topk", str(topk), f"{topk} candidate(s) per step"),
        checked(
            engine,
            "--speculative-num-draft-tokens",
            str(drafts),
            "steps × topk + 1 verified tokens",
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


def _gate_blocks(gates: GateReport) -> list[str]:
    return [
        f"{g.name}: {g.reason}" + (f" (fix: {g.fix})" if g.fix else "")
        for g in gates.gates
        if g.status == "fail"
    ]


# --- entry point ----------------------------------------------------------------------------


def plan(
    cfg: ModelConfig,
    engine: str,
    gpu: Gpu,
    gpus: int,
    context: int | None = None,
    users: int = 1,
    prefix_overlap: float = 0.0,
    model_id: str | None = None,
    serve_images: bool = False,
    latency_priority: str = "balanced",
) -> LaunchPlan:
    """The launch command for ``cfg`` on ``gpus`` × ``gpu`` with ``engine``."""
    if engine not in ENGINES:
        raise InputError("engine", f"one of {', '.join(ENGINES)}, got {engine!r}")
    eng: Engine = "vllm" if engine == "vllm" else "sglang"
    if isinstance(gpus, bool) or not isinstance(gpus, int) or not 1 <= gpus <= 4096:
        raise InputError("gpus", f"a whole number from 1 to 4096, got {gpus!r}")
    if isinstance(users, bool) or not isinstance(users, int) or users < 1:
        raise InputError("users", f"a positive whole number, got {users!r}")
    if context is not None and (not isinstance(context, int) or not 1 <= context <= 1 << 26):
        raise InputError("context", f"a token count from 1 to {1 << 26:,}, got {context!r}")
    if not isinstance(prefix_overlap, (int, float)) or not 0.0 <= prefix_overlap <= 1.0:
        raise InputError("prefix_overlap", f"a fraction from 0 to 1, got {prefix_overlap!r}")
    if latency_priority not in LATENCY_PRIORITIES:
        raise InputError(
            "latency_priority", f"one of {', '.join(LATENCY_PRIORITIES)}, got {latency_priority!r}"
        )
    if not cfg.architectures:
        raise InputError("architectures", "a non-empty list of model class names")

    probe = diagnose(cfg, Options(context=context, gpu_arch=gpu.arch))
    fam = probe.family
    if serve_images and not fam.multimodal:
        raise InputError(
            "images", f"a multimodal model; {cfg.architectures[0]} has no vision encoder"
        )
    text_only = fam.multimodal and not serve_images
    name = model_id or str(cfg.raw.get("_name_or_path") or "") or "MODEL"
    sw = software_report(cfg.raw, eng, name if model_id else None, text_only=text_only)
    fewest = min_gpus_for(cfg, gpu, "auto", gate_context(cfg, context))
    lay = _choose_layout(probe, cfg, eng, gpus, users, latency_priority, fewest)
    gates = evaluate_gates(cfg, gpu, gpus, "auto", context, tp=lay.tp, min_gpus=fewest)
    d = diagnose(
        cfg,
        Options.on_gpu(
            gpu,
            tp=lay.tp,
            dp=lay.dp,
            expert_parallel=lay.ep,
            context=context,
            users=users,
            gpus=gpus,
        ),
    )

    flags: list[PlanFlag] = []
    left: list[LeftOut] = []
    notes: list[str] = []
    if eng == "sglang":
        flags.append(checked(eng, "--model-path", name, "the checkpoint to serve"))
    flags.append(
        checked(eng, "--host", "0.0.0.0", "listen on every interface (inside a container)")
    )
    flags.append(
        checked(
            eng,
            "--port",
            str(PORT),
            "one port for docker and Kubernetes"
            + (" (SGLang's default is 30000)" if eng == "sglang" else ""),
        )
    )
    flags += _parallel_flags(eng, lay, d, gpus)
    if gpus == 1 and fam.moe:
        left.append(LeftOut("expert parallel", "one GPU holds every expert: nothing to split"))

    # Software report: quantization, parsers, and special flags (tokenizer mode, trust code, ...).
    if sw.quantization is not None:
        flags.append(
            checked(
                eng,
                "--quantization",
                sw.quantization,
                f"{sw.checkpoint_format} checkpoint: {eng} does not pick this method from "
                "config.json by itself",
            )
        )
    else:
        left.append(
            LeftOut(
                "--quantization",
                f"{sw.checkpoint_format} checkpoint: {eng} reads quant_method from config.json "
                "itself; forcing a method can select a slower kernel",
            )
        )
    pf, pl, pn = _parser_flags(eng, sw)
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
        flags.append(checked(eng, flag, value, reason))
        have.add(flag)
    if text_only and "--language-model-only" not in have:
        flags.append(
            checked(
                eng,
                "--language-model-only",
                None,
                f"text-only use of a multimodal ({fam.fusion} fusion) checkpoint: the vision "
                "tower is never loaded, saving its memory and start-up time",
            )
        )
        have.add("--language-model-only")
    if serve_images:
        flags += _mm_flags(eng, lay)

    # Workload-derived values.
    if context is not None:
        ctx_flag = "--max-model-len" if eng == "vllm" else "--context-length"
        flags.append(
            checked(
                eng,
                ctx_flag,
                str(context),
                f"the workload's context ({context:,} tokens); a shorter limit than the model's "
                f"{cfg.max_position_embeddings or 'default':,} frees KV for more concurrent users"
                if cfg.max_position_embeddings
                else f"the workload's context ({context:,} tokens)",
            )
        )
        if cfg.max_position_embeddings and context > cfg.max_position_embeddings:
            notes.append(
                f"context {context:,} exceeds max_position_embeddings "
                f"{cfg.max_position_embeddings:,}: the engine refuses it without rope scaling"
            )
    else:
        left.append(
            LeftOut(
                "--max-model-len" if eng == "vllm" else "--context-length",
                "no workload context given: the engine uses the model's max_position_embeddings "
                f"({cfg.max_position_embeddings or 'from config'})",
            )
        )
    mtp_max_users = launch_facts().mtp.max_users
    mtp = fam.mtp_layers > 0 and users <= mtp_max_users
    flags.append(_memory_flag(eng, d, mtp, lay.attn_dp > 1))
    cf, cl, cn = _chunk_flags(eng, d, latency_priority, serve_images)
    flags += cf
    left += cl
    notes += cn
    if mtp:
        flags += _mtp_flags(eng, cfg, d, users)
    elif fam.mtp_layers > 0:
        left.append(
            LeftOut(
                "--speculative-config" if eng == "vllm" else "--speculative-algorithm",
                f"MTP layers exist, but {users} concurrent users (> {mtp_max_users}) leave no "
                "idle compute for drafts: speculative decoding would cost throughput",
            )
        )
    left += _kv_left_outs(eng, d, gpu)
    cache = "prefix caching" if eng == "vllm" else "radix cache"
    left.append(
        LeftOut(
            "--enable-prefix-caching" if eng == "vllm" else "--disable-radix-cache",
            f"{cache} is on by default; prefix overlap {prefix_overlap:.0%} "
            + (
                "benefits from it"
                if prefix_overlap > 0
                else "gives it little to reuse, but it costs little"
            ),
        )
    )

    blocked = _gate_blocks(gates)
    if (
        d.fit is not None
        and d.fit.users_per_instance < 1
        and not any(b.startswith("fits in memory") for b in blocked)
    ):
        blocked.append(f"fits in memory (plan layout): {d.fit.formula()}")
    if sw.min_version is not None:
        notes.append(f"{eng} >= {sw.min_version} for {sw.architecture}")
    notes.extend(sw.notes)
    return LaunchPlan(
        engine=eng,
        engine_version=engine_version(eng),
        model_id=name,
        gpu=gpu,
        gpus=gpus,
        layout=lay,
        flags=tuple(flags),
        left_to_engine=tuple(left),
        runnable=not blocked,
        blocked_by=tuple(blocked),
        notes=tuple(notes),
        users=users,
        prefix_overlap=float(prefix_overlap),
    )


# --- CLI ------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own exit is replaced by InputError
        raise InputError("plan", message)


def cli_main(argv: list[str]) -> int:
    """``plan SOURCE --engine E --gpu NAME --gpus N [--context T] [--users U]
    [--prefix-overlap P] [--images] [--latency-priority P] [--json]``."""
    from engine.model.loader import load_model

    p = _Parser(prog="plan", add_help=False)
    p.add_argument("source")
    p.add_argument("--engine", required=True)
    p.add_argument("--gpu", required=True)
    p.add_argument("--gpus", type=int, required=True)
    p.add_argument("--context", type=int)
    p.add_argument("--users", type=int, default=1)
    p.add_argument("--prefix-overlap", type=float, default=0.0)
    p.add_argument("--images", action="store_true")
    p.add_argument("--latency-priority", default="balanced")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    loaded = load_model(args.source)
    result = plan(
        loaded.config,
        args.engine,
        lookup_gpu(args.gpu),
        args.gpus,
        context=args.context,
        users=args.users,
        prefix_overlap=args.prefix_overlap,
        model_id=loaded.name,
        serve_images=args.images,
        latency_priority=args.latency_priority,
    )
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(result.commented_shell())
    return 0
