"""Model dimensions the micro-kernels run at, and the engine's own KV numbers they check.

The checks only need shapes, never weights. ``KernelDims`` holds a model's shapes in
config.json's own terms (zero where the model has no such part: no MLA fields on a GQA model)
and ``EngineKv``, what the engine's sizing (``engine.kv.sizing``) says the same model's paged
groups, hybrid block and recurrent state weigh. Both are built from a config by
``engine.measure.kernels.from_model``; presets are bundled catalog configs. On CPU the heavy
checks run at ``scaled_for_cpu()`` dims (heads and ranks capped) so that all seven finish in
seconds; on CUDA they run at these dims.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from engine import errors as E
from engine.decision import Code, Name
from engine.errors import InputError
from engine.measure.measure_data import measure_facts

# what --model-dims and the kernels' arguments refuse (data/i18n/<lang>/errors.yaml)
FEWER_THAN = Code("error.kernels.fewer_than", "other", "got")
SLOTS_PER_GPU = Code("error.kernels.slots_per_gpu", "got")
NOT_SIZING = Code("error.kernels.not_sizing")
DIMS_FIELD = Code("error.kernels.dims_field", "fields")
DIMS_OBJECT = Code("error.kernels.dims_object")
DIMS_SIZE = Code("error.kernels.dims_size", "most")
NUMBER_TOO_LONG = Code("error.kernels.number_too_long")
PRESET_WITH_MODEL = Code("error.kernels.preset_with_model")
MODEL_OR_PRESET = Code("error.kernels.model_or_preset")
PRESET = Code("error.kernels.preset", "aliases", "example", "got")
DEVICE = Code("error.kernels.device", "got")
NO_CUDA = Code("error.kernels.no_cuda")

# A paged layer group: (name, num_layers, bytes_per_token_per_layer, block_size)
LayerGroup = tuple[str, int, int, int]

# Fields that set what a run simulates (a deployment choice), not the model's shapes: changing
# them leaves the engine's KV numbers for the model valid.
RUN_SETTINGS = frozenset({"ep_size", "num_redundant_experts", "index_share"})


@dataclass(frozen=True)
class EngineKv:
    """The engine's sizing of one model on one TP rank, in the kernels' KV dtype.

    ``groups`` are its token-paged groups; ``hybrid_block`` / ``hybrid_align`` and
    ``attention_bytes_per_token`` its hybrid page alignment (vLLM raises the attention block so
    a page covers one layer's recurrent state); ``state_bytes`` that state per layer and
    sequence, stored in ``state_dtype_bytes`` per state tensor (conv, SSM).
    """

    source: str
    groups: tuple[LayerGroup, ...]
    hybrid_block: int | None = None
    hybrid_align: int | None = None
    attention_bytes_per_token: int | None = None
    state_bytes: int | None = None
    state_dtype_bytes: tuple[int, ...] = ()

    @property
    def bytes_per_token(self) -> int:
        """Sum over the paged groups of layers x bytes per token per layer."""
        return sum(layers * per_layer for _, layers, per_layer, _ in self.groups)


@dataclass(frozen=True)
class KernelDims:
    """Shapes of one model, in config.json's own terms where it has them (0: no such part)."""

    name: str
    num_layers: int
    num_heads: int  # query heads (num_attention_heads)
    # GQA / standard attention (0 on an MLA model: it caches one latent, no per-head K/V)
    num_kv_heads: int
    head_dim: int
    # MLA (DeepSeek-V2/V3): the cached latent is kv_lora_rank + qk_rope_head_dim per token
    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    # DSA lightning indexer (DeepSeek-V3.2 / GLM-5): one fp8 key per cached token per layer
    index_num_heads: int
    index_head_dim: int
    index_topk: int
    # MoE
    hidden_size: int
    moe_intermediate_size: int
    num_experts: int
    experts_per_token: int
    # Hybrid linear attention (Gated DeltaNet, Qwen3-Next); num_linear_layers of num_layers
    num_linear_layers: int
    linear_num_key_heads: int
    linear_num_value_heads: int
    linear_key_head_dim: int
    linear_value_head_dim: int
    linear_conv_kernel_dim: int
    # Run settings (data/measure.yaml kernel_scenario): EP group, EPLB replicas, IndexShare
    ep_size: int = 0  # GPUs the experts are spread over
    num_redundant_experts: int = 0  # EPLB replicas
    index_share: int = 1  # IndexShare: layers sharing one indexer (1 = an indexer per layer)
    # KV cache element size in bytes (2 = bf16, 1 = fp8)
    kv_dtype_bytes: int = 2
    # The engine's KV numbers for these shapes (None once a shape is overridden by hand)
    kv: EngineKv | None = None

    def __post_init__(self) -> None:
        limit = measure_facts().limits.max_dim
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("name", "kv"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
                raise InputError(
                    f"model-dims.{f.name}", E.RANGE(low=0, high=limit, got=E.got(value))
                )
        for required in ("num_layers", "num_heads", "kv_dtype_bytes"):
            if getattr(self, required) == 0:
                raise InputError(f"model-dims.{required}", E.POSITIVE(got=0))
        if self.num_kv_heads and self.num_heads % self.num_kv_heads:
            raise InputError(
                "model-dims.num_kv_heads",
                E.DIVISOR(of=Name("num_heads"), total=self.num_heads, got=self.num_kv_heads),
            )
        if self.num_linear_layers >= self.num_layers:
            raise InputError(
                "model-dims.num_linear_layers",
                FEWER_THAN(other=Name("num_layers"), got=self.num_linear_layers),
            )
        if self.num_linear_layers and self.linear_conv_kernel_dim < 1:
            raise InputError(
                "model-dims.linear_conv_kernel_dim", E.POSITIVE(got=self.linear_conv_kernel_dim)
            )
        if self.num_experts and self.experts_per_token > self.num_experts:
            raise InputError(
                "model-dims.experts_per_token",
                E.AT_MOST_FIELD(
                    of=Name("num_experts"), total=self.num_experts, got=self.experts_per_token
                ),
            )
        if (
            self.num_experts
            and self.ep_size
            and (self.num_experts % self.ep_size or self.num_redundant_experts % self.ep_size)
        ):
            raise InputError("model-dims.ep_size", SLOTS_PER_GPU(got=self.ep_size))

    # ---- derived shapes ------------------------------------------------------------------
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

    def to_dict(self) -> dict[str, Any]:
        """The shape and run fields (what ``--model-dims`` may set), without the engine's KV."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "kv"}

    def with_fields(self, **changes: Any) -> KernelDims:
        """These dims with fields changed. Changing a shape drops ``kv``: the engine's numbers
        describe the unchanged model (to check other shapes, give their config.json)."""
        if "kv" in changes:
            raise InputError("model-dims.kv", NOT_SIZING())
        keeps_kv = set(changes) <= RUN_SETTINGS | {"name"}
        return replace(self, **changes, kv=self.kv if keeps_kv else None)

    def scaled_for_cpu(self) -> KernelDims:
        """Same structure, heads and ranks capped so that CPU checks take milliseconds."""
        kv_heads = min(self.num_kv_heads, 4)
        if kv_heads:
            heads = kv_heads * min(self.num_heads // self.num_kv_heads, 4)
        else:
            heads = min(self.num_heads, 16)  # the GQA cap too: 4 KV heads x 4
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
