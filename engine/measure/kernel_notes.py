"""What each micro-kernel check says about its number, as decision codes (worded in
``data/i18n/<lang>/measure.yaml`` under ``code.measure.kernel``).

Declared here, not beside the checks, because the checks import torch and the catalogs' test
walks every code without it.
"""

from __future__ import annotations

from engine.decision import Code, Decimal

# Timing targets: asserted on CUDA, only "positive and finite" on CPU.
GPU_TARGET = Code("measure.kernel.gpu_target", "target", "note")
CPU_TARGET = Code("measure.kernel.cpu_target", "target", "note")
ERROR = Code("measure.kernel.error", "error", "message", "at")

# 1. paged KV layout
PAGED_SKIPPED = Code("measure.kernel.paged_skipped")
PAGED_GROUP = Code("measure.kernel.paged_group", "layers", "blocks", "block", "bytes", "tokens")
PAGED_PER_TOKEN = Code("measure.kernel.paged_per_token")
PAGED_ALLOC = Code("measure.kernel.paged_alloc")
GDN_STATE = Code("measure.kernel.gdn_state", "conv_shape", "conv_bytes", "ssm_shape", "ssm_bytes")
HYBRID_BLOCK = Code("measure.kernel.hybrid_block")
HYBRID_ATTENTION_BLOCK = Code(
    "measure.kernel.hybrid_attention_block", "attn", "block", "page", "state"
)
HYBRID_PADDING = Code("measure.kernel.hybrid_padding")
# 2. MLA absorption
MLA_SKIPPED = Code("measure.kernel.mla_skipped")
MLA_DIMS = Code("measure.kernel.mla_dims", "heads", "rank", "rope", "nope", "v", "batch", "tokens")
MLA_MATCH = Code("measure.kernel.mla_match", "dims")
MLA_BYTES = Code("measure.kernel.mla_bytes")
MLA_SPEEDUP = Code("measure.kernel.mla_speedup")
# 3. decode bandwidth
COPY = Code("measure.kernel.copy")
COPY_CATALOG = Code("measure.kernel.copy_catalog", "share", "catalog")
DECODE_BYTES = Code("measure.kernel.decode_bytes", "batch", "context")
DECODE_GBPS = Code("measure.kernel.decode_gbps", "copy")
DECODE_GBPS_CATALOG = Code("measure.kernel.decode_gbps_catalog", "copy", "catalog")
DECODE_STEP = Code("measure.kernel.decode_step", "family", "layers", "batch", "context", "roofline")
DECODE_ROOFLINE = Code("measure.kernel.decode_roofline")
# 4. DSA indexer
DSA_SKIPPED = Code("measure.kernel.dsa_skipped")
DSA_MATCH = Code("measure.kernel.dsa_match", "k", "n")
DSA_FLAT = Code("measure.kernel.dsa_flat", "k", "n_max", "n_min")
DSA_LINEAR = Code("measure.kernel.dsa_linear")
DSA_STEP = Code("measure.kernel.dsa_step", "index", "k", "sparse", "dense", "speedup")
DSA_FLOPS = Code("measure.kernel.dsa_flops", "k", "n")
DSA_SHARE = Code("measure.kernel.dsa_share")
DSA_CROSSOVER = Code("measure.kernel.dsa_crossover")
SHARE_CALLS = Code("measure.kernel.share_calls", "layers", "share", "unshared")
SHARE_REDUCTION = Code("measure.kernel.share_reduction", "share")
SHARE_STEP = Code("measure.kernel.share_step", "layers", "n", "shared", "unshared")
SHARE_FLOPS = Code("measure.kernel.share_flops")
# 5. prefix caching
PREFIX_TILED = Code("measure.kernel.prefix_tiled", "layers", "dim", "prefix", "tile", "total")
PREFIX_DENSE = Code("measure.kernel.prefix_dense")
GDN_SKIPPED = Code("measure.kernel.gdn_skipped")
GDN_BITWISE = Code("measure.kernel.gdn_bitwise", "tokens", "chunk", "dk", "dv")
GDN_CLOSE = Code("measure.kernel.gdn_close")
GDN_TIME = Code("measure.kernel.gdn_time", "chunked", "sequential")
# 6. MoE routing
MOE_SKIPPED = Code("measure.kernel.moe_skipped")
MOE_EXPERT = Code("measure.kernel.moe_expert", "tokens", "k", "experts", "coldest")
MOE_BEFORE = Code("measure.kernel.moe_before", "gpus", "per_gpu")
MOE_AFTER = Code("measure.kernel.moe_after", "redundant", "slots")
MOE_HOTTEST = Code("measure.kernel.moe_hottest")
MOE_CONSERVED = Code("measure.kernel.moe_conserved")
MOE_OVERHEAD = Code("measure.kernel.moe_overhead")
MOE_ROUTE = Code("measure.kernel.moe_route")
# 7. torch.cat vs preallocated KV
CAT_NAIVE = Code("measure.kernel.cat_naive", "steps", "row")
CAT_PREALLOC = Code("measure.kernel.cat_prealloc")
CAT_GROWTH = Code("measure.kernel.cat_growth")
CAT_EQUAL = Code("measure.kernel.cat_equal")
CAT_STEPS = Code("measure.kernel.cat_steps", "steps")
CAT_STEPS_RATIO = Code("measure.kernel.cat_steps_ratio", "steps", "ratio")


def ms(seconds: float, digits: int = 3) -> Decimal:
    """A time measured in seconds, shown in milliseconds."""
    return Decimal(seconds * 1e3, digits, "ms")
