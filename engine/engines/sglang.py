"""SGLang 0.5.23: ``python3 -m sglang.launch_server --model-path MODEL``, a plain argparse
parser (a unique prefix of an option is accepted); ``--tp-size`` is the whole TP group with
``--attn-dp-size`` attention data-parallel groups inside it and ``--dp-size`` whole replicas;
``--mem-fraction-static`` covers only the weights and the KV pool, and when it is not given SGLang
computes it from the GPU, the prefill chunk and the decode CUDA-graph batch
(``arg_groups/memory_hook.py``); KV pages are single tokens, the Mamba state has its own pool."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from engine.decision import Code, Decimal, Decision, Name, Percent, Source
from engine.engines.adapter_data import adapter_facts
from engine.engines.base import EngineAdapter, FlagChoice, Setting
from engine.engines.cli_table import FlagInfo, Registries
from engine.engines.kvstore import (
    KV_MODELOPT,
    KvDtype,
    is_dsa,
    model_dtype,
    modelopt_kv_dtype,
)
from engine.engines.memory import GIB, Split, device_memory, memory_rules
from engine.errors import InputError
from engine.hardware.gpus import Gpu
from engine.model.config import ModelConfig
from engine.rules import engine_rules

# SGLang's --kv-cache-dtype spellings and what each stores.
KV_ALIASES = {
    "auto": "auto",
    "bf16": "bfloat16",
    "bfloat16": "bfloat16",
    "fp16": "float16",
    "float16": "float16",
    "fp8": "fp8_e4m3",
    "fp8_e4m3": "fp8_e4m3",
    "fp8_e5m2": "fp8_e5m2",
    "fp8_ds_mla": "fp8_e4m3",
}

TIER_ON = Code("plan.tier.sglang_on")
TIER_SIZE = Code("plan.tier.sglang_size", "gb", "node", "per_node")
TP_GROUP_ATTENTION_DP = Code("flag.sglang.attention_dp", "dp", "tp", "group", "since", "legacy")
EXPERT_PARALLEL = Code("flag.sglang.expert_parallel", "experts", "group")
PP_STAGES = Code("flag.pp_stages", "pp")
DP_REPLICAS = Code("flag.dp_replicas", "n")
# How SGLang decides the KV dtype it stores (configure_kv_cache_dtype, the DSA backends).
KV_DSA_PICK = Code("kv.dtype.sglang_dsa", "stored", "generation")
KV_DECLARED_FP8 = Code("kv.dtype.declared_fp8", "stored")
KV_HOPPER_CELL = Code("kv.dtype.sglang_hopper_cell", "bytes")
# SGLang's own --mem-fraction-static (memory_hook.py), with its numbers plugged in.
FRACTION_FORMULA = Code("memory.fraction.sglang", "reserved", "memory", "fraction")
FRACTION_GRAPH_BS = Code("memory.fraction.sglang_graph_bs", "base", "bs")
FRACTION_CAPPED = Code("memory.fraction.sglang_capped", "base", "fraction")
FRACTION_DEEPEP = Code("memory.fraction.sglang_deepep", "base", "buffers")
FRACTION_VISION = Code("memory.fraction.sglang_vision", "base", "scale", "factor", "fraction")
FRACTION_OWN = Code("memory.fraction.sglang_own", "flag", "formula")


class _SglangRegistries(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    sglang_version: str
    tool_call_parsers_live: list[str] | None = None
    reasoning_parsers_live: list[str] | None = None
    tool_call_parser_names_static: list[str] = Field(min_length=1)
    reasoning_parser_names_static: list[str] = Field(min_length=1)
    choices_module: dict[str, list[str]]
    model_architectures: list[str] | None = None  # written by newer extractor runs only


def _blackwell(arch: str | None) -> bool:
    """SGLang's DSA passes test ``major >= 10`` (sm_100, sm_103, sm_120 ...; not sm_90)."""
    return arch is not None and arch.startswith("sm_") and int(arch[3:]) >= 100


class SglangAdapter(EngineAdapter):
    name = "sglang"
    listed_choices_enforced = True
    model_positional = False
    command_words = 3
    expert_parallel_is_switch = False
    tp_spans_attention_dp = True
    dp_is_attention_dp_for_moe = False
    merges_moe_copies = True  # --dp-size: "data-parallel replicas of the model"
    # --attn-dp-size with --dp-size replicas is refused (data/engines/adapters.yaml
    # attention_dp.flag_added: PR #41818's test 'rejects replicas combined with attention DP')
    merges_attention_dp_copies = False
    speculative_config_json = False
    pp_spans_ray_nodes = False
    allows_abbreviation = True
    context_beyond_pool_refused = False
    fraction_covers_everything = False
    state_in_kv_pool = False
    sampler_reserve = False
    token_paged = True

    @property
    def dsa_auto_kv_dtypes(self) -> Mapping[str, str]:  # type: ignore[override]
        return engine_rules().sglang.dsa_auto_dtype

    # --- tables -----------------------------------------------------------------------------

    def lookup_variant(self, name: str) -> FlagInfo | None:
        """A unique prefix (``--tp`` for ``--tp-size``): a plain argparse.ArgumentParser, whose
        allow_abbrev is on."""
        if not name.startswith("--"):
            return None
        owners = {id(info): info for flag, info in self.flags.items() if flag.startswith(name)}
        return next(iter(owners.values())) if len(owners) == 1 else None

    def read_registries(self, raw: Any) -> Registries:
        s = _SglangRegistries.model_validate(raw)
        kv = self.flags["--kv-cache-dtype"].choices or ()
        archs = s.model_architectures
        return Registries(
            version=s.sglang_version,
            tool_call_parsers=frozenset(
                s.tool_call_parsers_live or s.tool_call_parser_names_static
            ),
            reasoning_parsers=frozenset(
                s.reasoning_parsers_live or s.reasoning_parser_names_static
            ),
            quantization_methods=frozenset(s.choices_module["QUANTIZATION_CHOICES"]),
            kv_cache_dtypes=frozenset(kv),
            attention_backends=frozenset(s.choices_module["ATTENTION_BACKEND_CHOICES"]),
            model_architectures=frozenset(archs) if archs is not None else None,
        )

    # --- program and layout -----------------------------------------------------------------

    def program(self, model_id: str) -> list[str]:
        return ["python3", "-m", "sglang.launch_server"]

    def parallel_flags(
        self, split: Split, merged: int, layout: Decision, experts: Decision
    ) -> list[FlagChoice]:
        group = self.tp_size(split)
        out = [FlagChoice(self.flag("tp"), str(group), layout)]
        if split.dp > 1:
            facts = adapter_facts().engines.sglang.attention_dp
            why = TP_GROUP_ATTENTION_DP(
                dp=split.dp,
                tp=split.tp,
                group=group,
                since=Source(facts.flag_added),
                legacy=Name(facts.legacy_spelling.format(dp=split.dp)),
            )
            out.append(FlagChoice(self.flag("attention_dp"), str(split.dp), why))
        if split.ep:
            out.append(
                FlagChoice(
                    self.flag("ep"), str(group), EXPERT_PARALLEL(experts=experts, group=group)
                )
            )
        if split.pp > 1:
            out.append(FlagChoice(self.flag("pp"), str(split.pp), PP_STAGES(pp=split.pp)))
        if merged > 1:
            out.append(FlagChoice(self.flag("dp"), str(merged), DP_REPLICAS(n=merged)))
        return out

    def multi_node_args(
        self, split: Split, per_node: int, rank: int, leader: str, ports: Mapping[str, int]
    ) -> list[str]:
        return [
            self.flag("nnodes"),
            str(split.gpus // per_node),
            self.flag("node_rank"),
            str(rank),
            self.flag("leader_address"),
            f"{leader}:{ports['dist_init']}",
        ]

    def deepep(self, mode: str) -> list[tuple[Setting, str]]:
        """--moe-a2a-backend deepep with --deepep-mode (auto switches per batch); DeepEP needs
        ep_size = tp_size (docs/advanced_features/expert_parallelism.md), as the plan sets."""
        return [("all_to_all", "deepep"), ("deepep_mode", mode)]

    def eplb(self, redundant: int) -> list[tuple[Setting, str | None]]:
        """--enable-eplb, the DeepSeek placement and --ep-num-redundant-experts (the playbook's
        'Skewed expert load' command)."""
        return [
            ("eplb", None),
            ("eplb_algorithm", "deepseek"),
            ("eplb_redundant_experts", str(redundant)),
        ]

    # longest prefix match first, so requests that share a cached prefix run together (the
    # playbook's SGLang deployment for shared-prefix workloads: --schedule-policy lpm)
    prefix_schedule: tuple[tuple[Setting, str], ...] = (("schedule_policy", "lpm"),)

    def cpu_tier(
        self, split: Split, gib_per_node: float, per_node: int
    ) -> list[tuple[Setting, str | None, Decision]]:
        """The hierarchical cache and its host pool in GB (10^9 bytes) per TP rank: each rank's
        scheduler allocates its own (mem_cache/memory_pool_host.py: ``hicache_size * 1e9 //
        size_per_token``), so a node's memory goes to each GPU evenly."""
        gb = max(1, math.floor(gib_per_node * (1 << 30) / per_node / 1e9))
        node = Decimal(gib_per_node, 0, "GiB")
        return [
            ("cpu_tier_on", None, TIER_ON()),
            ("cpu_tier_size", str(gb), TIER_SIZE(gb=gb, node=node, per_node=per_node)),
        ]

    # --- memory -----------------------------------------------------------------------------

    def weight_divisor(self, role: str, split: Split, vision_replicated: bool) -> int:
        full_tp = split.tp * split.dp  # --tp-size under DP-attention
        if role in ("replicated", "router", "norm"):
            return 1
        if role == "routed_experts":
            return split.moe_group
        if role == "vision":
            return 1 if vision_replicated else full_tp
        if role == "embedding":
            # VocabParallelEmbedding(enable_tp=not is_dp_attention_enabled())
            return 1 if split.dp > 1 else full_tp
        if role in ("lm_head", "dense_ffn", "shared_experts"):
            # lm_head and the dense / shared MLPs use the full TP group by default
            # (--enable-dp-lm-head and --moe-dense-tp-size 1 change that)
            return full_tp
        return split.tp  # attention and linear mixers: the attention TP group

    def capacity(self, gpu: Gpu, full_tp: int) -> tuple[int, int]:
        """(chunked_prefill_size, decode CUDA-graph max batch) SGLang picks for this GPU."""
        gib = device_memory(gpu) / GIB
        tiers = memory_rules().sglang_static_memory.capacity_defaults.tiers
        for tier in tiers:
            if tier.below_gib is None or gib < tier.below_gib:
                bs = (
                    tier.decode_graph_max_bs_tp_lt4
                    if full_tp < 4
                    else tier.decode_graph_max_bs_tp_ge4
                )
                return tier.chunked_prefill_size, bs
        raise AssertionError("data/memory.yaml capacity tiers must end with an open tier")

    def decode_graph_bs(self, gpu: Gpu, split: Split) -> int | None:
        return self.capacity(gpu, split.tp * split.dp)[1]

    def default_prefill_chunk(self, gpu: Gpu, split: Split) -> int:
        return self.capacity(gpu, split.tp * split.dp)[0]  # chunked_prefill_size

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
        """SGLang's own --mem-fraction-static when none is given (memory_hook.py
        handle_gpu_memory_settings, reserve_for_graph_mb), and the formula with the numbers
        plugged in. ``vision``: (layers, hidden) of an encoder that is loaded;
        ``decode_graph_bs``: a --cuda-graph-max-bs-decode the plan sets (None: the default)."""
        rules_all = memory_rules()
        rules = rules_all.sglang_static_memory
        c = rules.mem_fraction_static_default.constants_mb
        gpu_mem = device_memory(gpu) / (1 << 20)
        full_tp = split.tp * split.dp
        chunk_default, default_bs = self.capacity(gpu, full_tp)
        decode_bs = decode_graph_bs or default_bs
        chunk = chunk_tokens or chunk_default
        if split.dp > 1 and decode_graph_bs is not None:
            # the fraction the plan pins for DP-attention: each rank prefills chunk // dp tokens
            # (server_args._handle_data_parallelism divides chunked_prefill_size by dp_size),
            # so its activations are those of that chunk, not of the whole budget the
            # engine's own default reserves for before the division
            chunk = max(1, chunk // split.dp)
        activation = max(chunk, c.min_activation_tokens)
        graph = decode_bs * c.per_decode_graph_bs
        if split.dp > 1:
            graph += decode_bs * split.dp * c.dp_attention_per_bs_per_dp
            if decode_bs > c.dp_attention_extra_from_bs:
                graph += decode_bs * split.dp * c.dp_attention_extra_above_300_bs
        if mla:
            graph += c.prefill_graph_mla
        else:
            graph += _prefill_capture_sizes(chunk) * c.per_prefill_graph_bs_non_mla
        reserved = c.base + activation * c.per_activation_token
        reserved += full_tp * split.pp / 8 * c.per_tp_pp_over_8 + graph
        if gpu_mem > c.floor_from_gib * 1024:
            reserved = max(reserved, c.floor_above_60gib)
        if deepep:  # reserve_for_deepep_a2a_mb: DeepEP buffers with decode graphs on
            reserved += c.deepep_a2a
        fraction = round((gpu_mem - reserved) / gpu_mem, 3)
        mib = "MiB"
        formula: Decision = FRACTION_FORMULA(
            reserved=Decimal(reserved, 0, mib), memory=Decimal(gpu_mem, 0, mib), fraction=fraction
        )
        if decode_graph_bs is not None:
            formula = FRACTION_GRAPH_BS(base=formula, bs=decode_bs)
            # a fraction the plan pins stays within what the official commands run at
            top = rules_all.raised_fraction.sglang.value
            if fraction > top:
                fraction = top
                formula = FRACTION_CAPPED(base=formula, fraction=Percent(top))
        if deepep:
            formula = FRACTION_DEEPEP(base=formula, buffers=Decimal(c.deepep_a2a, 0, mib))
        if vision is not None:
            v = rules.vlm_adjust
            layers, hidden = vision
            ratio = layers * hidden**2 / (v.baseline_layers * v.baseline_hidden**2)
            factor = max(v.min_factor, min(v.max_factor, 1 - v.sensitivity * (ratio - 1)))
            fraction = fraction * v.base * factor
            formula = FRACTION_VISION(
                base=formula,
                scale=v.base,
                factor=Decimal(factor, 3),
                fraction=Decimal(fraction, 3),
            )
        return max(0.05, min(fraction, 0.99)), formula

    def fraction_note(self, formula: Decision) -> Decision:
        return FRACTION_OWN(flag=Name(self.flag("memory_fraction")), formula=formula)

    # --- KV cache ---------------------------------------------------------------------------

    def kv_dtype(self, requested: str, cfg: ModelConfig, gpu_arch: str | None) -> KvDtype:
        """SGLang picks the DSA KV dtype itself (bf16 on Hopper, fp8_e4m3 on Blackwell), and
        otherwise stores ``auto`` as the checkpoint's declared FP8 KV or the model dtype
        (configure_kv_cache_dtype; the ModelOpt fields as ModelOptFp8Config reads them)."""
        key = requested.strip().lower()
        if key not in KV_ALIASES:
            raise InputError("kv_dtype", f"a KV dtype SGLang accepts; got {requested!r}")
        name = KV_ALIASES[key]
        rules = engine_rules().sglang
        why: Decision | None = None
        if name == "auto":
            declared = modelopt_kv_dtype(cfg, static_only=rules.modelopt_kv.static_only)
            q = cfg.quantization_config or {}
            if is_dsa(cfg):
                gen = "blackwell" if _blackwell(gpu_arch) else "hopper"
                name = rules.dsa_auto_dtype[gen]
                why = KV_DSA_PICK(stored=Name(name), generation=Name(gen.capitalize()))
            elif declared is not None:
                name = "fp8_e4m3" if declared.startswith("fp8") else declared
                why = KV_MODELOPT(stored=Name(name))
            elif str(q.get("kv_cache_quant_algo", "")).upper() == "FP8":
                name, why = "fp8_e4m3", KV_DECLARED_FP8(stored=Name("fp8_e4m3"))
            else:
                name = model_dtype(cfg)
        if is_dsa(cfg) and name.startswith("fp8") and not _blackwell(gpu_arch):
            cell = rules.dsa_fp8_cell_on_hopper_bytes
            return KvDtype(requested, name, 1, cell, KV_HOPPER_CELL(bytes=cell))
        size = 2 if name in ("bfloat16", "float16") else 1
        return KvDtype(requested, name, size, None, why)

    def kv_dtype_value(self, requested: str, stored: str) -> str:
        """The shortest ``--kv-cache-dtype`` value SGLang accepts for a stored dtype ("bf16")."""
        accepted = self.kv_cache_dtypes
        names = [k for k, v in KV_ALIASES.items() if v == stored and k in accepted]
        return min(names, key=len, default=stored)

    kv_aliases: Mapping[str, str] = KV_ALIASES

    def ssm_dtype(self, cfg: ModelConfig, vllm_rule: str) -> str:
        """SGLang keeps the SSM state in ``mamba_ssm_dtype`` when the config names it, else in
        float32 (configs/mamba_utils.py:mamba2_state_dtype)."""
        field = cfg.field("mamba_ssm_dtype")
        if isinstance(field, str) and field:
            return field
        return engine_rules().sglang.mamba_ssm_dtype_default

    def __repr__(self) -> str:
        return f"SglangAdapter({self.version})"


def _prefill_capture_sizes(max_bs: int) -> int:
    rules = memory_rules().sglang_static_memory.prefill_graph_capture_sizes
    count = 0
    for start, stop, step in rules.ranges:
        end = max_bs if stop is None else min(stop, max_bs)
        if end >= start:
            count += (end - start) // step + 1
    return count
