"""vLLM 0.33.0: ``vllm serve MODEL``, a FlexibleArgumentParser that reads ``--flag_name`` as
``--flag-name`` and ``--config.key`` into a dict option; ``--gpu-memory-utilization`` bounds
everything it allocates, and the start-up profile reserves activations (the sampler's rows for
``max_num_seqs`` requests), non-torch memory and CUDA graphs inside it; DP ranks of a MoE model
are attention data-parallel ranks with the experts spread over TP x DP; hybrid models pad the
attention block to the linear-attention state page."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from engine.decision import Bytes, Code, Decimal, Decision, Name
from engine.engines.base import EngineAdapter, FlagChoice, Setting
from engine.engines.cli_table import FlagInfo, Registries
from engine.engines.kvstore import (
    DTYPE_BYTES,
    KV_MODEL_DTYPE,
    KV_MODELOPT,
    KvDtype,
    is_dsa,
    model_dtype,
    modelopt_kv_dtype,
)
from engine.engines.memory import (
    GIB,
    RESERVE_ACTIVATIONS,
    RESERVE_CUDA_GRAPHS,
    RESERVE_NON_TORCH,
    Reserve,
    Split,
    device_memory,
    memory_rules,
)
from engine.errors import InputError
from engine.hardware.gpus import Gpu
from engine.model.config import ModelConfig
from engine.rules import engine_rules

# vLLM's --kv-cache-dtype spellings (CacheDType) and what each stores.
KV_ALIASES = {
    "auto": "auto",
    "bf16": "bfloat16",
    "bfloat16": "bfloat16",
    "fp16": "float16",
    "float16": "float16",
    "half": "float16",
    "fp8": "fp8",
    "fp8_e4m3": "fp8_e4m3",
    "fp8_e5m2": "fp8_e5m2",
    "fp8_ds_mla": "fp8_ds_mla",
    "nvfp4_ds_mla": "nvfp4_ds_mla",
}

DP_ATTENTION = Code("flag.vllm.dp_attention", "dp")
TIER_NATIVE = Code("plan.tier.vllm_backend")
TIER_SIZE = Code("plan.tier.vllm_size", "gib", "node", "gpus", "per_node")
DP_REPLICAS = Code("flag.dp_replicas", "n")
PP_STAGES = Code("flag.pp_stages", "pp")
EXPERT_PARALLEL = Code("flag.vllm.expert_parallel", "experts", "group")
FRACTION_TABLE = Code("memory.fraction.vllm_table", "flag")
# How ``--kv-cache-dtype auto`` (or a DSA backend) decides what vLLM stores.
KV_HOOK = Code("kv.dtype.vllm_hook", "stored", "model_type", "arch")
KV_PACKED_BY = Code("kv.dtype.packed_by", "backend", "arch", "asked", "stored", "bytes")
KV_PACKED = Code("kv.dtype.packed", "stored", "bytes")
KV_PLAIN = Code("kv.dtype.plain", "backend", "arch", "stored")
KV_COMPRESSED_PACKED = Code("kv.dtype.compressed_packed", "asked", "stored", "bytes")


class _VllmRegistries(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    vllm_version: str
    tool_call_parsers: list[str] = Field(min_length=1)
    reasoning_parsers: list[str] = Field(min_length=1)
    quantization_methods: list[str] = Field(min_length=1)
    kv_cache_dtypes_registered: list[str] = Field(min_length=1)
    attention_backends: dict[str, str | None]
    model_architectures: list[str] | None = None  # written by newer extractor runs only


class VllmAdapter(EngineAdapter):
    name = "vllm"
    listed_choices_enforced = False
    model_positional = True
    command_words = 2
    expert_parallel_is_switch = True
    tp_spans_attention_dp = False
    dp_is_attention_dp_for_moe = True
    merges_moe_copies = False  # its DP ranks of a MoE model share the experts: one layout
    speculative_config_json = True
    pp_spans_ray_nodes = True
    allows_abbreviation = False
    context_beyond_pool_refused = True
    fraction_covers_everything = True
    state_in_kv_pool = True
    sampler_reserve = True
    aligns_hybrid_pages = True

    # --- tables -----------------------------------------------------------------------------

    def canonical_spelling(self, name: str) -> str:
        """FlexibleArgumentParser turns ``_`` into ``-`` in option names."""
        if not name.startswith("-"):
            return name
        dashes = "--" if name.startswith("--") else "-"
        return dashes + name[len(dashes) :].replace("_", "-")

    def lookup_variant(self, name: str) -> FlagInfo | None:
        """``--flag_with_underscores``, ``--json-option.key`` / ``-cc.key`` (dotted keys into
        a dict-valued option such as ``--speculative-config.method``) and ``-O3`` / ``-O.key``
        (the optimization level and compilation config)."""
        if not name.startswith("-"):
            return None
        table = self.flags
        if re.fullmatch(r"-O[0-9]*", name) or name.startswith("-O."):
            target = "--compilation-config" if name.startswith("-O.") else "--optimization-level"
            return table.get(target)
        dashed = self.canonical_spelling(name)
        if dashed in table:
            return table[dashed]
        head = dashed.split(".", 1)[0]
        if "." in dashed and head in table and table[head].takes_value:
            return table[head]
        return None

    def read_registries(self, raw: Any) -> Registries:
        v = _VllmRegistries.model_validate(raw)
        archs = v.model_architectures
        return Registries(
            version=v.vllm_version,
            tool_call_parsers=frozenset(v.tool_call_parsers),
            reasoning_parsers=frozenset(v.reasoning_parsers),
            quantization_methods=frozenset(v.quantization_methods),
            kv_cache_dtypes=frozenset(v.kv_cache_dtypes_registered),
            attention_backends=frozenset(v.attention_backends),
            model_architectures=frozenset(archs) if archs is not None else None,
        )

    # --- program and layout -----------------------------------------------------------------

    def program(self, model_id: str) -> list[str]:
        return ["vllm", "serve", model_id]

    def parallel_flags(
        self, split: Split, merged: int, layout: Decision, experts: Decision
    ) -> list[FlagChoice]:
        out = [FlagChoice(self.flag("tp"), str(split.tp), layout)]
        dp = split.dp * merged
        if dp > 1:
            why = DP_ATTENTION(dp=split.dp) if split.dp > 1 else DP_REPLICAS(n=merged)
            out.append(FlagChoice(self.flag("dp"), str(dp), why))
        if split.pp > 1:
            out.append(FlagChoice(self.flag("pp"), str(split.pp), PP_STAGES(pp=split.pp)))
        if split.ep:
            why = EXPERT_PARALLEL(experts=experts, group=split.moe_group)
            out.append(FlagChoice(self.flag("ep"), None, why))
        return out

    def multi_node_args(
        self, split: Split, per_node: int, rank: int, leader: str, ports: Mapping[str, int]
    ) -> list[str]:
        nodes = split.gpus // per_node
        if split.dp > 1:
            # DP + EP across nodes as the recipes' multi-node DEP strategy runs it: every node
            # its local DP ranks behind its own API server (the plan adds
            # --data-parallel-hybrid-lb), the first node's address coordinating
            local = split.dp // nodes
            out = [
                self.flag("dp_local"),
                str(local),
                self.flag("dp_address"),
                leader,
                self.flag("dp_rpc_port"),
                str(ports["dp_rpc"]),
            ]
            if rank:
                out += [self.flag("dp_start_rank"), str(rank * local)]
            return out
        out = [
            self.flag("nnodes"),
            str(nodes),
            self.flag("node_rank"),
            str(rank),
            self.flag("leader_address"),
            leader,
            self.flag("leader_port"),
            str(ports["master"]),
        ]
        return out + ([self.flag("headless")] if rank else [])

    def node_serves_api(self, split: Split, rank: int) -> bool:
        """Under hybrid load balancing every node of a DP copy serves its own API."""
        return rank == 0 or split.dp > 1

    def deepep(self, mode: str) -> list[tuple[Setting, str]]:
        """One backend per server: high throughput for prefill, low latency (CUDA-graph
        friendly) for decode and for a server that does both (vLLM docs
        serving/expert_parallel_deployment.md)."""
        backend = "deepep_high_throughput" if mode == "normal" else "deepep_low_latency"
        return [("all_to_all", backend)]

    def eplb(self, redundant: int) -> list[tuple[Setting, str | None]]:
        """--enable-eplb with the redundant experts inside --eplb-config (EPLBConfig
        num_redundant_experts, the pinned table's default of that option)."""
        return [("eplb", None), ("eplb_config", json.dumps({"num_redundant_experts": redundant}))]

    def cpu_tier(
        self, split: Split, gib_per_node: float, per_node: int
    ) -> list[tuple[Setting, str | None, Decision]]:
        """vLLM's own CPU offloading connector (no other service to run) and its size in GiB
        for the whole engine, which vLLM splits over the engine's TP × PP ranks
        (vllm/config/vllm.py _post_init_kv_transfer_config: kv_offloading_size × 2^30 bytes
        server-wide; every DP rank is an engine of its own): the node's memory × those ranks'
        share of the node's GPUs."""
        ranks = split.tp * split.pp
        gib = math.floor(gib_per_node * ranks / per_node * 100) / 100
        node = Decimal(gib_per_node, 0, "GiB")
        size = TIER_SIZE(gib=Decimal(gib, 1, "GiB"), node=node, gpus=ranks, per_node=per_node)
        return [("cpu_tier_backend", "native", TIER_NATIVE()), ("cpu_tier_size", f"{gib:g}", size)]

    # no prefix_schedule: --scheduling-policy is fcfs or priority (the pinned table's choices);
    # the prefix cache reuses blocks in any order

    # --- memory -----------------------------------------------------------------------------

    def weight_divisor(self, role: str, split: Split, vision_replicated: bool) -> int:
        """VocabParallelEmbedding / ParallelLMHead and every column/row-parallel linear use the
        attention TP group; each DP rank holds its own copy; experts spread over TP x DP."""
        if role in ("replicated", "router", "norm"):
            return 1
        if role == "routed_experts":
            return split.moe_group
        if role == "vision":
            return 1 if vision_replicated else split.tp
        return split.tp

    def default_fraction(
        self,
        gpu: Gpu,
        split: Split,
        *,
        chunk_tokens: int | None,
        mla: bool,
        vision: tuple[int, int] | None,
        decode_graph_bs: int | None = None,
        deepep: bool = False,
    ) -> tuple[float, Decision]:
        return self.table_fraction(), FRACTION_TABLE(flag=Name(self.flag("memory_fraction")))

    def table_fraction(self) -> float:
        """``vllm serve``'s default --gpu-memory-utilization, from the pinned flag table."""
        info = self.lookup(self.flag("memory_fraction"))
        assert info is not None and isinstance(info.default, int | float)
        return float(info.default)

    def batch_defaults(self, gpu: Gpu) -> tuple[int, int]:
        """(max_num_batched_tokens, max_num_seqs) vLLM picks for the API server on ``gpu``
        (EngineArgs.get_batch_defaults: tiers by device memory, A100 kept out of the large
        tier)."""
        gib = device_memory(gpu) / GIB
        name = gpu.name.lower()
        for tier in sorted(
            memory_rules().vllm_kv_pool.batch_defaults.tiers, key=lambda t: -t.min_device_gib
        ):
            if gib >= tier.min_device_gib and not (
                tier.excludes_name and tier.excludes_name in name
            ):
                return tier.max_num_batched_tokens_api_server, tier.max_num_seqs_api_server
        raise AssertionError("data/memory.yaml batch tiers must include a 0 GiB tier")

    def default_max_num_seqs(self, gpu: Gpu) -> int | None:
        return self.batch_defaults(gpu)[1]

    def default_prefill_chunk(self, gpu: Gpu, split: Split) -> int:
        return self.batch_defaults(gpu)[0]  # max_num_batched_tokens

    def reserve(
        self,
        cfg: ModelConfig,
        gpu: Gpu,
        split: Split,
        chunk_tokens: int | None,
        max_num_seqs: int | None = None,
    ) -> Reserve | None:
        """The profile run's peak (dominated by the sampler's fp32 logit rows for
        min(max_num_seqs, max_num_batched_tokens) requests), non-torch memory and the CUDA-graph
        estimate vLLM subtracts since 0.21 (``data/memory.yaml`` reserve_estimate, fitted on
        logs). ``max_num_seqs``: a ``--max-num-seqs`` the plan sets (None: the default)."""
        r = memory_rules().vllm_kv_pool.reserve_estimate
        batched, default_seqs = self.batch_defaults(gpu)
        seqs = max_num_seqs or default_seqs
        tokens = chunk_tokens or batched
        rows = min(seqs, tokens)
        vocab = cfg.vocab_size
        act = int(r.activation_logit_copies * rows * vocab * 4)
        non_torch = r.non_torch_gib_tp1 if split.gpus == 1 else r.non_torch_gib_tp_gt1
        graphs = int(r.cuda_graph_gib * GIB)
        return Reserve(
            (
                (
                    "activations",
                    act,
                    RESERVE_ACTIVATIONS(
                        bytes=Bytes(act), copies=r.activation_logit_copies, rows=rows, vocab=vocab
                    ),
                ),
                (
                    "non-torch",
                    int(non_torch * GIB),
                    RESERVE_NON_TORCH(bytes=Bytes(int(non_torch * GIB))),
                ),
                ("CUDA graphs", graphs, RESERVE_CUDA_GRAPHS(bytes=Bytes(graphs))),
            )
        )

    # --- KV cache ---------------------------------------------------------------------------

    def kv_dtype(self, requested: str, cfg: ModelConfig, gpu_arch: str | None) -> KvDtype:
        """vLLM maps ``auto`` to the checkpoint's declared KV dtype or the model dtype, stores
        every 8-bit mode as one byte, and for DSA (sparse MLA) models lets the backend it picks
        rewrite the dtype: on Hopper FlashMLA-sparse stores any fp8 request as the packed
        656-byte ``fp8_ds_mla`` row, on datacenter Blackwell FlashInfer keeps plain fp8 (576 B).
        Without a GPU the DSA layout assumed is Hopper's (sm_90), the most common target."""
        key = requested.strip().lower()
        if key not in KV_ALIASES:
            raise InputError("kv_dtype", f"one of {', '.join(KV_ALIASES)}; got {requested!r}")
        asked = KV_ALIASES[key]
        name = asked
        sparse = engine_rules().sparse_mla_backends
        packed_bytes = engine_rules().ds_mla_packed_bytes.values
        arch = gpu_arch or "sm_90"
        why: Decision | None = None
        declared = modelopt_kv_dtype(cfg) if name == "auto" else None
        if declared is not None:
            name = declared
            why = KV_MODELOPT(stored=Name(name))
        elif name == "auto":
            name = model_dtype(cfg)
            why = KV_MODEL_DTYPE(stored=Name(name))
            auto_fp8 = sparse.auto_fp8_model_types
            if is_dsa(cfg) and cfg.model_type in auto_fp8.values and arch in auto_fp8.archs:
                name = "fp8_e4m3"
                why = KV_HOOK(stored=Name(name), model_type=Name(cfg.model_type), arch=Name(arch))
        v4 = engine_rules().compressed_mla_packed
        fp8 = name == "fp8_ds_mla" or DTYPE_BYTES.get(name) == 1
        if cfg.model_type in v4.model_types and fp8:
            # DeepSeek-V4 stores any fp8 request as its packed row (fp8_ds_mla)
            rope = cfg.qk_rope_head_dim or 0
            packed = v4.row_bytes(cfg.head_dim or 0, rope)
            why = KV_COMPRESSED_PACKED(asked=Name(name), stored=Name("fp8_ds_mla"), bytes=packed)
            return KvDtype(requested, "fp8_ds_mla", 1, packed, why)
        if name in packed_bytes and not is_dsa(cfg):
            raise InputError("kv_dtype", f"{name} is a DSA-only layout; this model has no indexer")
        if is_dsa(cfg):
            layout = sparse.fp8_layout.get(arch)
            if layout is not None and (asked in layout.packs or name in layout.packs):
                packed = packed_bytes["fp8_ds_mla"]
                why = KV_PACKED_BY(
                    backend=Name(layout.backend),
                    arch=Name(arch),
                    asked=Name(name),
                    stored=Name("fp8_ds_mla"),
                    bytes=packed,
                )
                return KvDtype(requested, "fp8_ds_mla", 1, packed, why)
            if name in packed_bytes:
                packed = packed_bytes[name]
                return KvDtype(
                    requested, name, 1, packed, KV_PACKED(stored=Name(name), bytes=packed)
                )
            if DTYPE_BYTES[name] == 1 and layout is not None:
                why = KV_PLAIN(backend=Name(layout.backend), arch=Name(arch), stored=Name(name))
        return KvDtype(requested, name, DTYPE_BYTES[name], None, why)

    def kv_dtype_value(self, requested: str, stored: str) -> str:
        """The scenario's own spelling when vLLM registers it, else the stored dtype."""
        return requested if requested in self.kv_cache_dtypes else stored

    kv_aliases: Mapping[str, str] = KV_ALIASES

    def __repr__(self) -> str:
        return f"VllmAdapter({self.version})"
