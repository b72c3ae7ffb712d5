"""Parameter counts from the config and checkpoint bytes from its quantization_config.

Counts are built from named blocks (embeddings, attention per family, dense FFN, routed
and shared experts, MTP layers, vision tower) so every total can be unfolded."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from engine.decision import Code, Decimal, Decision, Name, Source
from engine.model.architecture import Architecture, LayerPlan, Mixer
from engine.model.checkpoint import detect_checkpoint_format
from engine.model.config import ModelConfig, model_defaults, module_kind
from engine.model.loader import CheckpointIndex
from engine.rules import engine_rules

# activations whose MLP has a gate and an up projection (vLLM MergedColumnParallelLinear
# gate_up_proj): SwiGLU / GeGLU, gpt-oss / MiniMax-M3's clamped swigluoai, Kimi-K3's SiTU-GLU
GATED_ACTS = (
    "silu",
    "swiglu",
    "gelu_pytorch_tanh",
    "gelu_tanh",
    "geglu",
    "swish",
    "swigluoai",
    "situ",
)

# What a block is in the engines' model code, which decides how a parallel layout splits it:
# embedding / lm_head (vocab-parallel), attention (column/row-parallel over the attention TP
# group), replicated (ReplicatedLinear: MLA down-projections, the DSA indexer, MTP eh_proj),
# linear_mixer (GDN / Mamba projections, TP-split), dense_ffn and shared_experts (TP-split MLPs),
# routed_experts (FusedMoE: split over the MoE group, whole experts under EP), router, norm,
# vision (the encoder tower).
Role = Literal[
    "embedding",
    "lm_head",
    "attention",
    "replicated",
    "linear_mixer",
    "dense_ffn",
    "shared_experts",
    "routed_experts",
    "router",
    "norm",
    "vision",
]
ROLES: tuple[Role, ...] = get_args(Role)
# Each role's name (data/i18n/<lang>/kv.yaml code.memory.role; engine.engines.placement words
# the per-GPU shares with the same codes).
ROLE_WORD: dict[Role, Code] = {role: Code(f"memory.role.{role}") for role in ROLES}
# What the weights report adds to the checkpoint format's own details (data/i18n/<lang>/
# model.yaml code.model.weights): each a clause that follows them.
PER_MODULE = Code("model.weights.per_module", "used")
KIND_ALGO = Code("model.weights.kind_algo", "kind", "algo")
KEPT_BF16 = Code("model.weights.kept_bf16", "roles")
FP4_EXPERTS = Code("model.weights.fp4_experts")


@dataclass(frozen=True)
class ParamBlock:
    """``count`` parameters of one ``role``. ``quantizable``: a linear weight the checkpoint's
    quantization applies to. ``mtp``: part of the multi-token-prediction layers. ``loaded``:
    False for checkpoint copies the engine does not hold twice (DeepSeek's MTP module stores
    its own embedding and output head; vLLM's proposer shares the target model's)."""

    name: str
    count: int
    quantizable: bool
    role: Role
    mtp: bool = False
    loaded: bool = True  # False: stored in the checkpoint, but the engine reuses another copy

    @property
    def expert(self) -> bool:
        """A routed-expert weight (only top-k of them are active per token)."""
        return self.role == "routed_experts"

    @property
    def vision(self) -> bool:
        return self.role == "vision"


@dataclass(frozen=True)
class WeightReport:
    blocks: tuple[ParamBlock, ...]
    block_bytes: tuple[int, ...]  # stored bytes of each block, in the order of ``blocks``
    params_total: int
    params_active: int
    weight_bytes: int
    expert_bytes: int
    format: str
    weight_dtype: str  # bf16, fp16, fp8, nvfp4, mxfp4, int4 ... (what hardware gates read)
    details: tuple[Decision, ...]  # how the weights are stored: the format's details, then ours
    checkpoint_bytes: int = 0  # every stored block, copies the engine shares included

    @property
    def non_expert_bytes(self) -> int:
        return self.weight_bytes - self.expert_bytes

    def bytes_of(self, roles: Iterable[Role], mtp: bool | None = None) -> int:
        """Bytes the engine holds for the blocks with one of ``roles`` (only MTP blocks, only
        main-model blocks, or both when ``mtp`` is None); shared checkpoint copies excluded."""
        wanted = set(roles)
        return sum(
            n
            for b, n in zip(self.blocks, self.block_bytes, strict=True)
            if b.loaded and b.role in wanted and (mtp is None or b.mtp == mtp)
        )


def is_gated(cfg: ModelConfig) -> bool:
    """Gated (SwiGLU/GeGLU: gate, up, down) unless the activation or the model family
    says a plain two-matrix MLP (relu2, gelu without a gate: Falcon, GPT-2, ...)."""
    act = cfg.hidden_act.lower()
    if act:
        return act in GATED_ACTS
    return cfg.model_type not in engine_rules().ungated_ffn_model_types.values


def _ffn(hidden: int, inter: int, gated: bool) -> int:
    return (3 if gated else 2) * hidden * inter


def _dim(vc: Mapping[str, Any], *names: str) -> int | None:
    """The first of ``names`` that is a sane positive integer (vision configs of the wrong
    type or absurd size count as absent rather than crash)."""
    for n in names:
        v = vc.get(n)
        if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 1_048_576:
            return v
    return None


def _vision_params(vc: Mapping[str, Any]) -> int:
    """The vision tower: ViT blocks (qkv + out projections with biases, a plain or gated MLP,
    two norms), the patch embedding, position embeddings, and the patch merger(s) that project
    into the language model (Qwen2.5/3-VL; Qwen3-VL adds one per deepstack layer)."""
    # vt_*: Kimi-K2.5 / K3's MoonViT spelling (vt_hidden_size, vt_num_hidden_layers, ...)
    h = _dim(vc, "hidden_size", "embed_dim", "width", "vt_hidden_size")
    depth = _dim(vc, "num_hidden_layers", "depth", "layers", "vt_num_hidden_layers")
    if h is None or depth is None:
        return 0
    inter = _dim(vc, "intermediate_size", "mlp_dim", "vt_intermediate_size") or 4 * h
    patch = _dim(vc, "patch_size") or 14
    chans = _dim(vc, "in_channels", "num_channels") or 3
    tps = _dim(vc, "temporal_patch_size") or 1
    out = _dim(vc, "out_hidden_size")
    act = str(vc.get("hidden_act") or vc.get("hidden_activation") or "").lower()
    gated = act in model_defaults()["gated_vision_acts"]
    per_layer = 4 * h * h + 4 * h + (3 if gated else 2) * h * inter + 4 * h
    total = depth * per_layer + patch * patch * chans * tps * h
    total += (_dim(vc, "num_position_embeddings") or 0) * h
    if out:
        merge = _dim(vc, "spatial_merge_size") or 2
        m = merge * merge * h
        deepstack = vc.get("deepstack_visual_indexes")
        n_mergers = 1 + (len(deepstack) if isinstance(deepstack, list) else 0)
        total += n_mergers * (m * m + m + m * out + out + 2 * m)
    return total


def _moe_layer_blocks(
    cfg: ModelConfig, ffn: str, gated: bool, moe_inter: int, dense_inter: int, mtp: bool
) -> list[ParamBlock]:
    """Routed experts, router, shared experts (and the dense FFN of a moe+dense layer).
    A latent MoE (``moe_latent_size``) routes on the hidden state but runs every routed
    expert at the latent width, between a down- and an up-projection that every rank holds
    whole (vLLM nemotron_h.py NemotronHMoE fc1/fc2_latent_proj, ReplicatedLinear; Kimi-K3's
    routed_expert_down_proj / _up_proj and routed_expert_norm); shared experts stay at the
    hidden width."""
    h = cfg.hidden_size
    width = cfg.moe_latent_size or h
    out = [
        ParamBlock(
            "routed experts",
            cfg.num_experts * _ffn(width, moe_inter, gated),
            True,
            "routed_experts",
            mtp,
        ),
        ParamBlock("routers", h * cfg.num_experts, False, "router", mtp),
    ]
    if cfg.moe_latent_size:
        latent = cfg.moe_latent_size
        out.append(ParamBlock("latent MoE projections", 2 * h * latent, True, "replicated", mtp))
        if cfg.moe_latent_norm:
            out.append(ParamBlock("latent MoE norms", latent, False, "norm", mtp))
    shared = 0
    if cfg.shared_expert_intermediate_size:
        n_shared = cfg.n_shared_experts or 1
        shared += n_shared * _ffn(h, cfg.shared_expert_intermediate_size, gated)
        shared += 0 if cfg.n_shared_experts else h  # Qwen's shared-expert gate
    elif cfg.n_shared_experts:
        shared += cfg.n_shared_experts * _ffn(h, moe_inter, gated)
    elif cfg.field("interleave_moe_layer_step"):
        shared += _ffn(h, dense_inter, gated)  # Llama 4 shared expert
    out.append(ParamBlock("shared experts", shared, True, "shared_experts", mtp))
    if ffn == "moe+dense":
        out.append(ParamBlock("dense FFN", _ffn(h, dense_inter, gated), True, "dense_ffn", mtp))
    return out


def _norms(h: int, layer: LayerPlan) -> int:
    """One RMSNorm before the mixer and one before the FFN, for the parts a layer has
    (a Nemotron-H block or a DeciLM no-op layer has one)."""
    return h * ((layer.mixer != Mixer.NONE) + (layer.ffn != "none"))


def _layer_blocks(
    cfg: ModelConfig, layer: LayerPlan, gated: bool, inter: tuple[int, int, int], mtp: bool
) -> list[ParamBlock]:
    """Mixer and FFN of one decoder layer; ``inter`` = (moe, dense, Llama-4 dense) widths."""
    h = cfg.hidden_size
    moe_inter, dense_inter, dense_inter_mlp = inter
    prefix = "MTP " if mtp else ""
    out = [ParamBlock(f"{prefix}norms", _norms(h, layer), False, "norm", mtp)]
    if layer.mixer.is_attention:
        tp_part, rep_part = layer.mixer.family.params(cfg, layer)
        out.append(ParamBlock(f"{prefix}attention", tp_part, True, "attention", mtp))
        out.append(
            ParamBlock(
                f"{prefix}attention (replicated_projections)", rep_part, True, "replicated", mtp
            )
        )
    for lin in layer.mixers:
        if lin.is_linear:
            count = lin.family.params(cfg, layer)[0]
            out.append(ParamBlock(f"{prefix}linear mixers", count, True, "linear_mixer", mtp))
    if layer.ffn in ("moe", "moe+dense"):
        out += _moe_layer_blocks(cfg, layer.ffn, gated, moe_inter, dense_inter, mtp)
    elif layer.ffn == "dense":
        width = layer.ffn_intermediate or (
            dense_inter_mlp if cfg.field("interleave_moe_layer_step") else dense_inter
        )
        out.append(ParamBlock(f"{prefix}dense FFN", _ffn(h, width, gated), True, "dense_ffn", mtp))
    return out


def _mtp_blocks(
    cfg: ModelConfig, arch: Architecture, gated: bool, inter: tuple[int, int, int]
) -> list[ParamBlock]:
    """The multi-token-prediction layers as the engines' model code builds them, by the config
    field that counts them (see each reader)."""
    if not cfg.mtp_layers or not arch.layers:
        return []
    if cfg.mtp_kind == "mtp_num_hidden_layers":
        return _mtp_hidden_layers(cfg, arch, gated, inter)
    if cfg.mtp_block_types:
        return _mtp_block_types(cfg, arch, gated, inter)
    return _nextn_predict_layers(cfg, arch, gated, inter)


def _mtp_head(h: int) -> list[ParamBlock]:
    """What joins an MTP layer to the model: the projection of [embedding; hidden] (2h -> h)
    and three norms."""
    return [
        ParamBlock("MTP replicated projections", 2 * h * h, True, "replicated", True),
        ParamBlock("MTP norms", 3 * h, False, "norm", True),
    ]


def _mtp_hidden_layers(
    cfg: ModelConfig, arch: Architecture, gated: bool, inter: tuple[int, int, int]
) -> list[ParamBlock]:
    """``mtp_num_hidden_layers`` (Qwen3-Next / Qwen3.5, vLLM qwen3_next_mtp.py): ``fc`` (2h -> h)
    and three norms once, then full-attention decoder layers with the model's FFN; the
    embedding and head are the target's (a dedicated embedding only with
    ``mtp_use_dedicated_embeddings``)."""
    h = cfg.hidden_size
    template = next((lay for lay in arch.layers if lay.mixer in ("full", "mla")), arch.layers[-1])
    layer = LayerPlan(
        template.index,
        template.mixer,
        template.num_kv_heads,
        template.head_dim,
        template.head_dim_v,
        None,
        template.indexer,
        0,
        "moe" if cfg.num_experts > 1 else "dense",
        template.num_heads,
    )
    out = _mtp_head(h)
    if cfg.field("mtp_use_dedicated_embeddings") is True:
        out.append(ParamBlock("MTP embeddings", cfg.vocab_size * h, False, "embedding", True))
    for _ in range(cfg.mtp_layers):
        out += _layer_blocks(cfg, layer, gated, inter, True)
    return out


def _mtp_block_types(
    cfg: ModelConfig, arch: Architecture, gated: bool, inter: tuple[int, int, int]
) -> list[ParamBlock]:
    """``mtp_layers_block_type`` (Nemotron-H, vLLM nemotron_h_mtp.py): per MTP layer eh_proj
    (2h -> h), enorm, hnorm, final norm and one block of each listed kind."""
    attn = next((lay for lay in arch.layers if lay.mixer == "full"), None)
    out: list[ParamBlock] = []
    for _ in range(cfg.mtp_layers):
        out += _mtp_head(cfg.hidden_size)
        for kind in cfg.mtp_block_types or ():
            k = kind.lower()
            if k in ("attention", "full_attention") and attn is not None:
                block = LayerPlan(
                    attn.index,
                    Mixer.FULL,
                    attn.num_kv_heads,
                    attn.head_dim,
                    attn.head_dim_v,
                    ffn="none",
                )
            elif k == "moe":
                block = LayerPlan(0, Mixer.NONE, ffn="moe")
            elif k in ("mlp", "dense"):
                block = LayerPlan(0, Mixer.NONE, ffn="dense")
            else:
                continue
            out += _layer_blocks(cfg, block, gated, inter, True)
    return out


def _nextn_predict_layers(
    cfg: ModelConfig, arch: Architecture, gated: bool, inter: tuple[int, int, int]
) -> list[ParamBlock]:
    """``num_nextn_predict_layers`` (DeepSeek-V3 / GLM, vLLM deepseek_mtp.py): per MTP layer
    enorm, hnorm, eh_proj (2h -> h), a decoder layer like the model's last one (MoE routed
    experts stay routed experts), shared_head.norm, and the embedding and output head the
    checkpoint stores again (vLLM's proposer shares the target's: not loaded twice)."""
    h = cfg.hidden_size
    last = arch.layers[-1]
    # the MTP block's FFN: MoE like the model's layers, unless the model's code builds its MTP
    # blocks past every MoE layer index (data/model_defaults.yaml mtp_dense_ffn_model_types)
    dense_mtp = cfg.model_type in model_defaults()["mtp_dense_ffn_model_types"]
    layer = LayerPlan(
        last.index,
        last.mixer,
        last.num_kv_heads,
        last.head_dim,
        last.head_dim_v,
        last.window,
        last.indexer,
        last.compress_ratio,
        "moe" if cfg.num_experts > 1 and not dense_mtp else "dense",
        last.num_heads,
    )
    out: list[ParamBlock] = []
    for _ in range(cfg.mtp_layers):
        out += _mtp_head(h)
        out += _layer_blocks(cfg, layer, gated, inter, True)
        out.append(
            ParamBlock("MTP embedding copy", cfg.vocab_size * h, False, "embedding", True, False)
        )
        out.append(
            ParamBlock("MTP lm_head copy", cfg.vocab_size * h, False, "lm_head", True, False)
        )
    return out


def param_blocks(cfg: ModelConfig, arch: Architecture) -> list[ParamBlock]:
    h = cfg.hidden_size
    gated = is_gated(cfg)
    blocks = [ParamBlock("embeddings", cfg.vocab_size * h, False, "embedding")]
    if not cfg.tie_word_embeddings:
        blocks.append(ParamBlock("lm_head", cfg.vocab_size * h, False, "lm_head"))
    moe_inter = cfg.moe_intermediate_size or cfg.intermediate_size or 4 * h
    # a dense FFN of its own width where the config names one (MiniMax-M3's leading dense
    # layers: vLLM minimax_m3 MiniMaxM3MLP(intermediate_size=config.dense_intermediate_size))
    dense_field = cfg.field("dense_intermediate_size")
    dense_inter = (
        dense_field
        if isinstance(dense_field, int) and not isinstance(dense_field, bool) and dense_field > 0
        else cfg.intermediate_size or 4 * h
    )
    if cfg.field("intermediate_size_mlp"):
        dense_inter_mlp = int(cfg.field("intermediate_size_mlp"))
    else:
        dense_inter_mlp = dense_inter
    inter = (moe_inter, dense_inter, dense_inter_mlp)
    # layers alike but for their index have the same blocks: build each kind once
    kinds: dict[tuple[object, ...], tuple[LayerPlan, int]] = {}
    for layer in arch.layers:
        sig = (
            layer.mixer, layer.num_kv_heads, layer.head_dim, layer.head_dim_v, layer.window,
            layer.indexer, layer.compress_ratio, layer.ffn, layer.num_heads,
            layer.ffn_intermediate, layer.linear,
        )  # fmt: skip
        first, n = kinds.get(sig, (layer, 0))
        kinds[sig] = (first, n + 1)
    layer_blocks: list[tuple[ParamBlock, int]] = []
    for first, n in kinds.values():
        layer_blocks += [(b, n) for b in _layer_blocks(cfg, first, gated, inter, False)]
    layer_blocks.append((ParamBlock("norms", h, False, "norm"), 1))
    layer_blocks += [(b, 1) for b in _mtp_blocks(cfg, arch, gated, inter)]
    # one block per (name, role, mtp, quantizable, loaded): the sums over layers
    merged: dict[tuple[str, Role, bool, bool, bool], int] = {}
    for b, n in layer_blocks:
        key = (
            b.name if not b.mtp else "MTP layers: " + b.name.removeprefix("MTP "),
            b.role,
            b.mtp,
            b.quantizable,
            b.loaded,
        )
        merged[key] = merged.get(key, 0) + b.count * n
    blocks += [ParamBlock(n, c, q, r, m, ld) for (n, r, m, q, ld), c in merged.items()]
    if cfg.vision_config:
        blocks.append(
            ParamBlock("vision tower", _vision_params(cfg.vision_config), False, "vision")
        )
    return [b for b in blocks if b.count]


def _dtype_bits(dtype: str, cfg: ModelConfig, group_size: int | None, zero_bits: int) -> float:
    """Stored bits per weight of ``dtype``, scales and zero points included (data/
    engine_rules.yaml weight_storage)."""
    rules = engine_rules().weight_storage
    bits = float(rules.bits.get(dtype, rules.bits["bf16"]))
    if dtype in rules.group_scale:
        scale_bits, group = rules.group_scale[dtype]
        bits += scale_bits / group
    elif dtype == "fp8":
        block = (cfg.quantization_config or {}).get("weight_block_size")
        if (
            isinstance(block, list)
            and len(block) == 2
            and all(isinstance(b, int) and b > 0 for b in block)
        ):
            bits += rules.fp8_block_scale_bits / (block[0] * block[1])
    elif dtype.startswith("int") and group_size:
        bits += (rules.int_group_scale_bits + zero_bits) / group_size
    return bits


# module kind (data/model_defaults.yaml module_kinds) -> the weight roles it stores
_KIND_ROLES: dict[str, tuple[Role, ...]] = {
    "experts": ("routed_experts",),
    "shared_experts": ("shared_experts",),
    "attention": ("attention", "replicated"),
    "linear_mixer": ("linear_mixer",),
    "dense_ffn": ("dense_ffn",),
    "lm_head": ("lm_head",),
}


def _modelopt_roles(cfg: ModelConfig) -> tuple[dict[Role, float], str | None, Decision | None]:
    """Per-role bits of a ModelOpt checkpoint: a MIXED_PRECISION one stores each kind of
    module in the algorithm its ``quantized_layers`` list gives (unlisted kinds unquantized);
    any other keeps the kinds its ``exclude_modules`` name for every layer in BF16.
    Returns (role bits, the lowest-precision weight dtype present, note)."""
    qc = cfg.quantization_config or {}
    inner = qc.get("quantization")
    inner = inner if isinstance(inner, dict) else qc
    algo_dtypes = model_defaults()["modelopt_algo_dtypes"]
    bf16 = float(engine_rules().weight_storage.bits["bf16"])
    roles: dict[Role, float] = {}
    summary = inner.get("quantized_layers_summary") or qc.get("quantized_layers_summary")
    if isinstance(summary, dict) and isinstance(summary.get("by_kind"), dict):
        best: dict[str, tuple[int, str]] = {}
        for algo, kinds in summary["by_kind"].items():
            for kind, count in (kinds or {}).items():
                if count > best.get(kind, (0, ""))[0]:
                    best[kind] = (count, str(algo))
        present: list[str] = []
        for kind, role_list in _KIND_ROLES.items():
            algo = best.get(kind, (0, ""))[1]
            dtype = algo_dtypes.get(algo)
            for role in role_list:
                roles[role] = _dtype_bits(dtype, cfg, 16, 0) if dtype else bf16
            if dtype:
                present.append(dtype)
        order = ("nvfp4", "mxfp4", "int4", "fp8", "int8")
        low = next((d for d in order if d in present), None)
        used = tuple(KIND_ALGO(kind=Name(k), algo=Name(v[1])) for k, v in sorted(best.items()))
        return roles, low, PER_MODULE(used=used)
    excluded: list[Role] = []
    for pattern in inner.get("exclude_modules") or qc.get("exclude_modules") or []:
        parts = [p.strip("*") for p in str(pattern).split(".")]
        if any(p.isdigit() for p in parts):
            continue  # one layer's module: too few weights to move the total
        kind = module_kind(".".join(parts))
        for role in _KIND_ROLES.get(kind, ()):
            if role not in roles:
                roles[role] = bf16
                excluded.append(role)
    kept = KEPT_BF16(roles=tuple(ROLE_WORD[r]() for r in excluded)) if excluded else None
    return roles, None, kept


def _format(
    cfg: ModelConfig,
) -> tuple[str, str, float, dict[Role, float], tuple[Decision, ...]]:
    """(format name, weight dtype, bits per quantized weight, bits per role where a role
    differs, how the weights are stored). The format is the one
    engine.software.software_report detects; the storage bits per format (scales and zero
    points included) come from data/engine_rules.yaml."""

    fmt = detect_checkpoint_format(cfg.raw)
    rules = engine_rules().weight_storage
    dtype = fmt.weight_dtype
    if dtype in ("unknown", "mixed") and fmt.bits:
        dtype = f"int{fmt.bits}"
    zero = (fmt.bits or 0) if fmt.quant_method in rules.zero_point_methods else 0
    bits = _dtype_bits(dtype, cfg, fmt.group_size, zero)
    details = list(fmt.details)
    weight_dtype = fmt.weight_dtype
    roles: dict[Role, float] = {}
    if fmt.quant_method == "modelopt":
        roles, low, extra = _modelopt_roles(cfg)
        details += [extra] if extra is not None else []
        if low is not None:
            weight_dtype = low
    if str(cfg.field("expert_dtype") or "").lower() == "fp4":  # DeepSeek-V4: FP4 experts
        scale_bits, group = rules.group_scale["mxfp4"]
        roles["routed_experts"] = rules.bits["mxfp4"] + scale_bits / group
        details.append(FP4_EXPERTS())
    if fmt.weight_dtype in rules.experts_only:  # e.g. gpt-oss: attention etc. stay bf16
        roles["routed_experts"], bits = bits, float(rules.bits["bf16"])
    return fmt.name, weight_dtype, bits, roles, tuple(details)


def weight_report(cfg: ModelConfig, arch: Architecture) -> WeightReport:
    blocks = tuple(param_blocks(cfg, arch))
    fmt, wdtype, qbits, role_bits, details = _format(cfg)
    total = sum(b.count for b in blocks)
    inactive = 0
    if cfg.num_experts > 1 and cfg.experts_per_token:
        for b in blocks:
            if b.expert:
                inactive += b.count * (cfg.num_experts - cfg.experts_per_token) // cfg.num_experts
    mtp = sum(b.count for b in blocks if b.mtp)
    vision = sum(b.count for b in blocks if b.vision)
    # active = every weight a text token touches, the embedding row included (Qwen and
    # NVIDIA count it; OpenAI's gpt-oss cards leave the embedding out); MTP layers only draft
    active = total - inactive - mtp - vision
    if cfg.num_experts > 1 and cfg.experts_per_token:
        for b in blocks:
            if b.expert and b.mtp:  # MTP experts were counted in inactive; keep them out once
                active += b.count * (cfg.num_experts - cfg.experts_per_token) // cfg.num_experts
    bits = [b.count * (role_bits.get(b.role, qbits) if b.quantizable else 16) for b in blocks]
    block_bytes = tuple(int(x / 8) for x in bits)
    weight_bytes = int(sum(x for b, x in zip(blocks, bits, strict=True) if b.loaded) / 8)
    expert_bytes = int(
        sum(x for b, x in zip(blocks, bits, strict=True) if b.expert and b.loaded) / 8
    )
    checkpoint_bytes = int(sum(bits) / 8)
    return WeightReport(
        blocks,
        block_bytes,
        total,
        active,
        weight_bytes,
        expert_bytes,
        fmt,
        wdtype,
        details,
        checkpoint_bytes,
    )


# the computed checkpoint against its safetensors index (data/i18n/<lang>/model.yaml)
CHECKPOINT_BYTES = Code(
    "model.checkpoint.bytes", "computed", "measured", "source", "difference", "relative"
)
CHECKPOINT_PARAMS = Code("model.checkpoint.params", "bytes", "computed", "measured")


@dataclass(frozen=True)
class CheckpointComparison:
    """The computed checkpoint beside the measured one (its safetensors index): bytes and,
    when the index states them, parameters; ``difference`` is computed minus measured."""

    measured_bytes: int
    computed_bytes: int
    measured_parameters: int | None
    computed_parameters: int
    source: str

    @property
    def difference_bytes(self) -> int:
        return self.computed_bytes - self.measured_bytes

    @property
    def relative_difference(self) -> float:
        return self.difference_bytes / self.measured_bytes

    def formula(self) -> Decision:
        """The two figures and their difference, with the parameters where the index has them."""
        bytes_line = CHECKPOINT_BYTES(
            computed=self.computed_bytes,
            measured=self.measured_bytes,
            source=Source(self.source),
            difference=Decimal(self.difference_bytes, 0, "B"),
            relative=Decimal(100 * self.relative_difference, 2, "%"),
        )
        if not self.measured_parameters:
            return bytes_line
        return CHECKPOINT_PARAMS(
            bytes=bytes_line,
            computed=self.computed_parameters,
            measured=self.measured_parameters,
        )


def compare_checkpoint(report: WeightReport, index: CheckpointIndex) -> CheckpointComparison:
    """Every stored block (shared copies included) against the index's total_size."""
    return CheckpointComparison(
        index.total_size,
        report.checkpoint_bytes,
        index.total_parameters,
        report.params_total,
        index.source,
    )
