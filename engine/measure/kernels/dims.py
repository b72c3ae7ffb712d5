"""Model dimensions the micro-kernels run at, as a plain frozen dataclass.

The checks only need shapes, never weights. ``KernelDims()`` is DeepSeek-V3.2-like for the MLA,
DSA-indexer and MoE fields (DeepSeek-V3 plus a 128-dim, 64-head indexer picking 2,048 tokens)
and Llama-like for the GQA fields (8 KV heads of 128); the hybrid fields are Qwen3-Next's GDN
layer. Presets give one model each. On CPU the heavy checks run at ``scaled_for_cpu()`` dims
(heads and ranks capped) so that all seven finish in seconds; on CUDA they run at these dims.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from engine.errors import InputError

# A paged layer group: (name, num_layers, bytes_per_token_per_layer, block_size)
LayerGroup = tuple[str, int, int, int]


@dataclass(frozen=True)
class KernelDims:
    """Shapes of one model, in config.json's own terms where it has them."""

    name: str = "deepseek-v3.2-like + llama-gqa"
    num_layers: int = 61
    num_heads: int = 128  # query heads (num_attention_heads)
    # GQA / standard attention
    num_kv_heads: int = 8
    head_dim: int = 128
    # MLA (DeepSeek-V2/V3): the cached latent is kv_lora_rank + qk_rope_head_dim per token
    kv_lora_rank: int = 512
    qk_rope_head_dim: int = 64
    qk_nope_head_dim: int = 128
    v_head_dim: int = 128
    # DSA lightning indexer (DeepSeek-V3.2 / GLM-5): one fp8 key per cached token per layer
    index_num_heads: int = 64
    index_head_dim: int = 128
    index_topk: int = 2048
    index_share: int = 4  # IndexShare: layers sharing one indexer (1 = an indexer per layer)
    # MoE
    hidden_size: int = 7168
    moe_intermediate_size: int = 2048
    num_experts: int = 256
    experts_per_token: int = 8
    ep_size: int = 32  # GPUs the experts are spread over
    num_redundant_experts: int = 32  # EPLB replicas
    # Hybrid linear attention (Gated DeltaNet, Qwen3-Next); num_linear_layers of num_layers
    num_linear_layers: int = 0
    linear_num_key_heads: int = 16
    linear_num_value_heads: int = 32
    linear_key_head_dim: int = 128
    linear_value_head_dim: int = 128
    linear_conv_kernel_dim: int = 4
    # KV cache element size in bytes (2 = bf16, 1 = fp8)
    kv_dtype_bytes: int = 2

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "name":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(f"model-dims.{f.name}", f"a non-negative integer, got {value!r}")
        for required in ("num_layers", "num_heads", "kv_dtype_bytes"):
            if getattr(self, required) == 0:
                raise InputError(f"model-dims.{required}", "a positive integer")
        if self.num_kv_heads and self.num_heads % self.num_kv_heads:
            raise InputError(
                "model-dims.num_kv_heads",
                f"a divisor of num_heads ({self.num_heads}), got {self.num_kv_heads}",
            )
        if self.num_linear_layers >= self.num_layers:
            raise InputError("model-dims.num_linear_layers", "fewer than num_layers")
        if self.num_experts and self.experts_per_token > self.num_experts:
            raise InputError("model-dims.experts_per_token", "at most num_experts")
        if (
            self.num_experts
            and self.ep_size
            and (self.num_experts % self.ep_size or self.num_redundant_experts % self.ep_size)
        ):
            raise InputError(
                "model-dims.ep_size",
                "a divisor of num_experts and of num_redundant_experts (equal slots per GPU)",
            )

    # ---- derived sizes -------------------------------------------------------------------
    @property
    def has_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def has_indexer(self) -> bool:
        return self.has_mla and self.index_head_dim > 0 and self.index_topk > 0

    @property
    def mla_latent_dim(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim

    @property
    def gqa_bytes_per_token_per_layer(self) -> int:
        """K and V of every KV head: 2 x num_kv_heads x head_dim x dtype bytes."""
        return 2 * self.num_kv_heads * self.head_dim * self.kv_dtype_bytes

    @property
    def num_attention_layers(self) -> int:
        return self.num_layers - self.num_linear_layers

    @property
    def gdn_state_shapes(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """vLLM gated_delta_net_state_shape at TP1: conv (K-1, 2 hk nk + hv nv), SSM (nv, hv, hk)"""
        conv_dim = (
            2 * self.linear_key_head_dim * self.linear_num_key_heads
            + self.linear_value_head_dim * self.linear_num_value_heads
        )
        return (
            (self.linear_conv_kernel_dim - 1, conv_dim),
            (self.linear_num_value_heads, self.linear_value_head_dim, self.linear_key_head_dim),
        )

    @property
    def mla_bytes_per_token_per_layer(self) -> int:
        """One latent vector (kv_lora_rank + rope) per token: MLA has no per-head K/V."""
        return self.mla_latent_dim * self.kv_dtype_bytes

    @property
    def indexer_bytes_per_token_per_layer(self) -> int:
        """fp8 index key plus one fp32 scale per 128 elements (vLLM DeepseekV32IndexerCache)."""
        return self.index_head_dim + self.index_head_dim // 128 * 4

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    # ---- presets ---------------------------------------------------------------------------
    @classmethod
    def deepseek_v3(cls) -> KernelDims:
        """DeepSeek-V3/R1: 61 MLA layers (512 + 64), 256 experts top-8, no indexer."""
        return cls(
            name="deepseek-v3", index_head_dim=0, index_num_heads=0, index_topk=0, index_share=1
        )

    @classmethod
    def deepseek_v32(cls) -> KernelDims:
        """DeepSeek-V3.2: V3 plus the lightning indexer (64 heads x 128, top-2048)."""
        return cls(name="deepseek-v3.2", index_share=1)

    @classmethod
    def llama_3_1_8b(cls) -> KernelDims:
        return cls(
            name="llama-3.1-8b",
            num_layers=32,
            num_heads=32,
            num_kv_heads=8,
            head_dim=128,
            kv_lora_rank=0,
            qk_rope_head_dim=0,
            qk_nope_head_dim=0,
            v_head_dim=0,
            index_num_heads=0,
            index_head_dim=0,
            index_topk=0,
            index_share=1,
            hidden_size=4096,
            moe_intermediate_size=0,
            num_experts=0,
            experts_per_token=0,
            ep_size=0,
            num_redundant_experts=0,
        )

    @classmethod
    def llama_70b(cls) -> KernelDims:
        return replace(
            cls.llama_3_1_8b(), name="llama-3.1-70b", num_layers=80, num_heads=64, hidden_size=8192
        )

    @classmethod
    def qwen3_next_80b(cls) -> KernelDims:
        """Qwen3-Next-80B-A3B: 12 full-attention layers (2 KV heads x 256) + 36 GDN layers."""
        return cls(
            name="qwen3-next-80b-a3b",
            num_layers=48,
            num_heads=16,
            num_kv_heads=2,
            head_dim=256,
            kv_lora_rank=0,
            qk_rope_head_dim=0,
            qk_nope_head_dim=0,
            v_head_dim=0,
            index_num_heads=0,
            index_head_dim=0,
            index_topk=0,
            index_share=1,
            hidden_size=2048,
            moe_intermediate_size=512,
            num_experts=512,
            experts_per_token=10,
            ep_size=32,
            num_redundant_experts=32,
            num_linear_layers=36,
        )

    def scaled_for_cpu(self) -> KernelDims:
        """Same structure, heads and ranks capped so that CPU checks take milliseconds."""
        kv_heads = min(self.num_kv_heads, 4)
        if kv_heads:
            heads = kv_heads * min(self.num_heads // self.num_kv_heads, 4)
        else:
            heads = min(self.num_heads, 8)
        return replace(
            self,
            name=f"{self.name} (scaled for CPU)",
            num_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=min(self.head_dim, 64),
            kv_lora_rank=min(self.kv_lora_rank, 64),
            qk_rope_head_dim=min(self.qk_rope_head_dim, 16),
            qk_nope_head_dim=min(self.qk_nope_head_dim, 32),
            v_head_dim=min(self.v_head_dim, 32),
            index_num_heads=min(self.index_num_heads, 4),
            index_head_dim=min(self.index_head_dim, 32),
            index_topk=min(self.index_topk, 128),
            linear_key_head_dim=min(self.linear_key_head_dim, 32),
            linear_value_head_dim=min(self.linear_value_head_dim, 32),
        )


PRESETS = {
    "default": KernelDims,
    "deepseek-v3": KernelDims.deepseek_v3,
    "deepseek-v3.2": KernelDims.deepseek_v32,
    "llama-3.1-8b": KernelDims.llama_3_1_8b,
    "llama-3.1-70b": KernelDims.llama_70b,
    "qwen3-next-80b": KernelDims.qwen3_next_80b,
}


def read_dims_spec(text: str) -> dict[str, Any]:
    """The JSON object behind ``--model-dims``: inline JSON, or a path to a JSON file."""
    source = text.strip()
    path = Path(source)
    if source and not source.startswith("{") and path.is_file():
        source = path.read_text(encoding="utf-8")
    try:
        data = json.loads(source)
    except json.JSONDecodeError as err:
        raise InputError("model-dims", f"a JSON object of KernelDims fields ({err.msg})") from None
    if not isinstance(data, dict):
        raise InputError("model-dims", "a JSON object of KernelDims fields")
    return data


def dims_from_spec(spec: dict[str, Any]) -> KernelDims:
    """``{"preset": "llama-3.1-70b", "num_layers": 40}``: a preset (default ``KernelDims()``)
    with fields overridden."""
    data = dict(spec)
    preset = data.pop("preset", "default")
    if preset not in PRESETS:
        raise InputError("model-dims.preset", f"one of {', '.join(PRESETS)}; got {preset!r}")
    known = {f.name for f in fields(KernelDims)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise InputError(
            f"model-dims.{unknown[0]}", f"a KernelDims field ({', '.join(sorted(known))})"
        )
    return replace(PRESETS[preset](), **data)


def dims_from_json(text: str) -> KernelDims:
    """``--model-dims``: a JSON object (or a path to one) of KernelDims fields, optionally with
    ``"preset"``; without it the fields override ``KernelDims()``."""
    return dims_from_spec(read_dims_spec(text))


@dataclass(frozen=True)
class Sizes:
    """Workload sizes per device: small on CPU (seconds in total), real on CUDA."""

    context: int  # tokens in the KV cache for the decode-bandwidth check
    concurrency: int  # requests decoded together
    mla_tokens: int
    mla_batch: int
    dsa_lengths: tuple[int, ...]
    prefix_tokens: int
    suffix_tokens: int
    prefix_dim: int
    tile: int
    gdn_tokens: int
    gdn_chunk: int
    moe_tokens: int
    cat_steps: int
    copy_bytes: int
    paged_tokens: int
    repeats: int

    @classmethod
    def for_device(cls, device: str) -> Sizes:
        """The CPU column for ``cpu``, the CUDA column for ``cuda``."""
        column = 1 if device == "cuda" else 0
        return cls(**{name: pair[column] for name, pair in _SIZES.items()})

    @classmethod
    def cpu(cls) -> Sizes:
        return cls.for_device("cpu")

    @classmethod
    def cuda(cls) -> Sizes:
        return cls.for_device("cuda")


# Sizes field: (CPU, CUDA). CPU keeps all seven checks to seconds; CUDA runs serving sizes.
_SIZES: dict[str, tuple[Any, Any]] = {
    "context": (4096, 8192),
    "concurrency": (2, 32),
    "mla_tokens": (1024, 4096),
    "mla_batch": (2, 4),
    "dsa_lengths": ((512, 2048, 8192), (8192, 32768, 131072)),
    "prefix_tokens": (64, 1024),
    "suffix_tokens": (40, 1024),
    "prefix_dim": (64, 512),
    "tile": (16, 64),
    "gdn_tokens": (256, 4096),
    "gdn_chunk": (64, 64),
    "moe_tokens": (8192, 65536),
    "cat_steps": (256, 2048),
    "copy_bytes": (64 * 2**20, 2 * 2**30),
    "paged_tokens": (4096, 32768),
    "repeats": (3, 5),
}
