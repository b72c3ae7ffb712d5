"""The rules that turn the Study's decisions into one engine's flags, each with its reason, and
the flags left to the engine on purpose: layout, parsers, KV dtype, memory fraction, prefill
chunk, speculative decoding, multimodal, context."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

from engine.kv.sglang import SGLANG_ALIASES
from engine.kv.sizing import KvSizing
from engine.launch.command import LeftOut, PlanFlag, checked
from engine.launch.facts import launch_facts
from engine.launch.layout import Candidate, Layout
from engine.launch.nodes import copies_per_node, merges_copies
from engine.model.family import AttentionFamily
from engine.scenario import Engine, Scenario
from engine.software.report import SoftwareReport
from engine.software.tables import kv_cache_dtypes, reasoning_parsers, tool_call_parsers

if TYPE_CHECKING:
    from engine.study import _Core


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


def parallel_flags(
    engine: Engine, lay: Layout, fit: Candidate, moe: bool, experts: str, per_node: int
) -> list[PlanFlag]:
    s = lay.split
    out: list[PlanFlag] = []
    merged = copies_per_node(lay, per_node) if merges_copies(engine, moe) else 1
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


def parser_flags(
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


def kv_flags(
    engine: Engine, core: _Core, s: Scenario, kv: KvSizing
) -> tuple[list[PlanFlag], list[LeftOut]]:
    fam = core.family.attention_family
    gpu = core.gpu
    if s.kv_dtype != "auto":
        value = s.kv_dtype if engine == "vllm" else _sglang_spelling(kv.kv_dtype.stored)
        if engine == "vllm" and value not in kv_cache_dtypes("vllm"):
            value = kv.kv_dtype.stored
        why = f"the KV dtype chosen for this scenario (stored as {kv.kv_dtype.stored})"
        if fam == AttentionFamily.DSA:
            why += "; DSA engines pick the KV dtype per layer themselves, this overrides them"
        return [checked(engine, "--kv-cache-dtype", value, why)], []
    if fam == AttentionFamily.DSA:
        # what the engine's own auto rule stores on this GPU (engine.kv: the Study's sizing)
        stored = kv.kv_dtype.stored
        picked = _sglang_spelling(stored) if engine == "sglang" else stored
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


def memory_flag(
    engine: Engine, s: Scenario, fit: Candidate
) -> tuple[list[PlanFlag], list[LeftOut]]:
    """The memory fraction (set only when the scenario chose one) and, for vLLM, a
    ``--max-num-seqs`` when the layout search needed the sampler reserve back."""
    out: list[PlanFlag] = []
    seqs_flag = "--max-num-seqs" if engine == "vllm" else "--max-running-requests"
    if s.max_num_seqs is not None:
        out.append(
            checked(
                engine,
                seqs_flag,
                str(s.max_num_seqs),
                f"{s.max_num_seqs:,} requests at once per engine, as chosen for this scenario",
            )
        )
    elif engine == "vllm" and fit.max_num_seqs is not None and fit.reserve is not None:
        out.append(
            checked(
                engine,
                seqs_flag,
                str(fit.max_num_seqs),
                "the workload's users per engine rounded up to a power of two: vLLM reserves "
                "sampler memory for max_num_seqs requests at start-up, and its default leaves "
                f"too little for the KV cache here (reserve now {fit.reserve.formula()})",
            )
        )
    flag = "--gpu-memory-utilization" if engine == "vllm" else "--mem-fraction-static"
    if s.memory_fraction is not None:
        what = (
            "weights, activations and KV cache"
            if engine == "vllm"
            else "the static pool (weights + KV)"
        )
        reason = f"{s.memory_fraction:g} of each GPU for {what}, as chosen for this scenario"
        return [*out, checked(engine, flag, f"{s.memory_fraction:g}", reason)], []
    default = (
        f"the pinned table's default {fit.fraction:g}"
        if engine == "vllm"
        else f"SGLang's own choice for this GPU and layout (≈ {fit.fraction:g})"
    )
    return out, [LeftOut(flag, f"{default}; the sizing on every page used the same value")]


def chunk_flags(
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


def mtp_flags(engine: Engine, core: _Core, users: int) -> list[PlanFlag]:
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


def mm_flags(engine: Engine, lay: Layout) -> list[PlanFlag]:
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


def context_flag(engine: Engine, core: _Core, fit: Candidate) -> PlanFlag:
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
