"""config.json -> one typed, normalised ``ModelConfig``.

Hugging Face configs spell the same thing many ways (``n_head``, ``num_kv_heads``,
``multi_query``) and nest the language model of multimodal checkpoints under
``text_config`` / ``language_config`` / ``llm_config``. Everything is resolved here,
once, at the boundary; the rules downstream read plain typed fields.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine import errors as E
from engine.decision import Code, Decision, Name
from engine.errors import InputError
from engine.rules import data_yaml

TEXT_CONFIG_KEYS = ("text_config", "language_config", "llm_config", "thinker_config")
VISION_CONFIG_KEYS = ("vision_config", "visual", "vision_tower_config", "mm_vision_tower")
AUDIO_CONFIG_KEYS = ("audio_config",)

# alias -> canonical name, applied when the canonical name is absent (first alias wins).
ALIASES: dict[str, tuple[str, ...]] = {
    "hidden_size": ("n_embd", "d_model", "dim", "model_dim"),
    "num_hidden_layers": ("n_layer", "n_layers", "num_layers"),
    "num_attention_heads": ("n_head", "n_heads", "num_heads"),
    # vLLM transformers_utils/config.py CONFIG_FIELD_ALIASES["total_num_kv_heads"] (Step's
    # num_attention_groups included); n_kv_heads is a spelling vLLM does not read
    "num_key_value_heads": (
        "num_kv_heads",
        "n_head_kv",
        "multi_query_group_num",
        "num_attention_groups",
        "n_kv_heads",
    ),
    "head_dim": ("attention_head_dim", "head_size", "kv_channels"),
    "intermediate_size": ("ffn_hidden_size", "n_inner", "ffn_dim", "inter_dim"),
    "max_position_embeddings": ("n_positions", "seq_length", "max_seq_len", "max_sequence_length"),
    "num_experts": ("n_routed_experts", "num_local_experts", "moe_num_experts", "n_experts"),
    "experts_per_token": (
        "num_experts_per_tok",
        "top_k_experts",
        "moe_topk",
        "num_selected_experts",
        "moe_k",
        "n_activated_experts",
        "moe_top_k",
        "num_experts_per_token",  # Kimi-Linear / Kimi-K3 (kimi_linear.py)
    ),
    "dtype": ("torch_dtype",),
    "vocab_size": ("padded_vocab_size",),
}

PosInt = Annotated[int, Field(strict=True, ge=1)]
NonNegInt = Annotated[int, Field(strict=True, ge=0)]
SizeInt = Annotated[int, Field(strict=True, ge=1, le=1_048_576)]
LayerInt = Annotated[int, Field(strict=True, ge=1, le=4096)]
HeadInt = Annotated[int, Field(strict=True, ge=1, le=65_536)]
DimInt = Annotated[int, Field(strict=True, ge=1, le=65_536)]
ContextInt = Annotated[int, Field(strict=True, ge=1, le=1 << 34)]

# The largest real config.json known is a ModelOpt NVFP4 checkpoint's that lists every quantized
# module (22,422 entries, about 3 MB; tools/nvfp4_config.py). 8 MiB leaves room for a
# model with two and a half times as many modules and refuses anything larger before parsing:
# a 30 MB upload cost 22 s of CPU and 1.3 GB retained. Streamlit's server.maxUploadSize
# (.streamlit/config.toml, the Dockerfile) is this figure in MiB.
MAX_CONFIG_MIB = 8
MAX_CONFIG_BYTES = MAX_CONFIG_MIB * 1024 * 1024
MAX_DEPTH = 64  # deeper nesting is hostile input, not a config
# Pages show config strings: one may not be megabytes (the longest in the bundled configs and
# the 3 MB ModelOpt one is 118 characters).
MAX_STRING_CHARS = 65_536
_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_LAYERS = 4096
# Subtrees of quantization_config that list modules one by one: summarised at the boundary
# (counts per algorithm) so the rules and every later copy never walk 20,000 entries.
PER_MODULE_KEYS = ("quantized_layers",)
PER_MODULE_LIST_KEYS = ("exclude_modules", "ignore", "ignored_layers", "modules_to_not_convert")
LONG_LIST = 4096  # a module list longer than this keeps its first KEEP_LIST_ENTRIES
KEEP_LIST_ENTRIES = 64


class BlockConfig(BaseModel):
    """One layer of a per-layer block config (DeciLM / ``nemotron-nas``), as vLLM's
    ``nemotron_nas.py`` builds it: an attention that is a no-op (no weights, no cache) or
    has ``num_attention_heads // n_heads_in_group`` KV heads, and an FFN that is a no-op
    or ``_ffn_mult_to_intermediate_size(ffn_mult)`` wide."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kv_heads: Annotated[int, Field(strict=True, ge=0, le=65_536)]  # 0: attention is a no-op
    ffn_intermediate: Annotated[int, Field(strict=True, ge=0, le=4_194_304)]  # 0: FFN no-op


# Where a field config.json leaves out was taken from (data/i18n/<lang>/model.yaml).
DEFAULT_FROM = {
    by: Code(f"family.evidence.default_from.{by}", "name")
    for by in ("transformers", "vllm", "no_attention", "counted")
}
DEFAULT_NESTED = Code("family.evidence.default_from.nested", "source")


class DefaultFrom(BaseModel):
    """Where a field absent from config.json was taken from: a library's defaults for a
    model_type (``transformers``, ``vllm``; ``nested``: for a config nested as text_config), an
    attention-free architecture (``no_attention``), or the length of a per-layer list
    (``counted``); ``name`` names the model type, the architecture or the list."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    by: Literal["transformers", "vllm", "no_attention", "counted"]
    name: str
    nested: bool = False

    def said(self) -> Decision:
        found = DEFAULT_FROM[self.by](name=Name(self.name))
        return DEFAULT_NESTED(source=found) if self.nested else found


class ModelConfig(BaseModel):
    """The fields the rules read, typed and bounded. ``raw`` keeps the flattened
    original (unknown fields included) so every verdict can cite what it read."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    architectures: list[str] = Field(default_factory=list)
    model_type: str = ""
    wrapper_model_type: str = ""  # top-level model_type of a multimodal wrapper
    dtype: str = "bfloat16"
    hidden_size: SizeInt
    num_hidden_layers: LayerInt
    num_attention_heads: HeadInt
    num_key_value_heads: HeadInt
    head_dim: DimInt | None = None
    intermediate_size: Annotated[int, Field(strict=True, ge=0, le=4_194_304)] | None = None
    vocab_size: Annotated[int, Field(strict=True, ge=1, le=100_000_000)] = 32_000
    max_position_embeddings: ContextInt | None = None
    tie_word_embeddings: bool = False
    hidden_act: str = ""
    # sliding / local attention
    sliding_window: ContextInt | None = None
    layer_types: list[str] | None = None
    attention_chunk_size: ContextInt | None = None
    # per-layer values given as lists (one entry per layer); 0 = no attention / no window
    layer_kv_heads: list[Annotated[int, Field(strict=True, ge=0, le=65_536)]] | None = None
    layer_q_heads: list[Annotated[int, Field(strict=True, ge=0, le=65_536)]] | None = None
    layer_windows: list[Annotated[int, Field(strict=True, ge=0, le=1 << 34)]] | None = None
    block_configs: list[BlockConfig] | None = None
    layer_ffn_widths: list[Annotated[int, Field(strict=True, ge=0, le=4_194_304)]] | None = None
    num_kv_shared_layers: Annotated[int, Field(strict=True, ge=0, le=4096)] = 0
    # sliding-window layers with their own shapes (swa_* fields, vLLM mimo_v2_flash.py)
    swa_num_attention_heads: HeadInt | None = None
    swa_num_key_value_heads: HeadInt | None = None
    swa_head_dim: DimInt | None = None
    swa_v_head_dim: DimInt | None = None
    attn_output_gate: bool = False
    # MLA / DSA / DeepSeek-V4
    kv_lora_rank: DimInt | None = None
    q_lora_rank: DimInt | None = None
    qk_rope_head_dim: DimInt | None = None
    qk_nope_head_dim: DimInt | None = None
    v_head_dim: DimInt | None = None
    index_topk: PosInt | None = None
    index_head_dim: DimInt | None = None
    index_n_heads: HeadInt | None = None
    compress_ratios: list[NonNegInt] | None = None
    o_lora_rank: DimInt | None = None
    o_groups: HeadInt | None = None
    # MoE
    num_experts: Annotated[int, Field(strict=True, ge=0, le=65_536)] = 0
    experts_per_token: Annotated[int, Field(strict=True, ge=0, le=65_536)] = 0
    moe_intermediate_size: Annotated[int, Field(strict=True, ge=1, le=4_194_304)] | None = None
    n_shared_experts: Annotated[int, Field(strict=True, ge=0, le=1024)] = 0
    shared_expert_intermediate_size: Annotated[int, Field(strict=True, ge=0)] | None = None
    # latent MoE: routed experts run at this width between a down- and an up-projection
    # (vLLM nemotron_h.py moe_latent_size; Kimi-K3's routed_expert_hidden_size)
    moe_latent_size: Annotated[int, Field(strict=True, ge=1, le=1_048_576)] | None = None
    moe_latent_norm: bool = False  # an RMSNorm on the latent before the up-projection
    first_k_dense_replace: NonNegInt = 0
    moe_layer_freq: PosInt = 1
    moe_layers: list[bool] | None = None  # moe_layer_freq given per layer (1 = MoE)
    decoder_sparse_step: PosInt = 1
    mlp_only_layers: list[NonNegInt] = Field(default_factory=list)
    # MTP
    mtp_layers: Annotated[int, Field(strict=True, ge=0, le=64)] = 0
    mtp_kind: str = (
        ""  # which field gave the count: mtp_num_hidden_layers / num_nextn_predict_layers
    )
    mtp_block_types: list[str] | None = None  # mtp_layers_block_type (Nemotron-H)
    # linear attention / Mamba
    linear_num_key_heads: HeadInt | None = None
    linear_num_value_heads: HeadInt | None = None
    linear_key_head_dim: DimInt | None = None
    linear_value_head_dim: DimInt | None = None
    linear_conv_kernel_dim: DimInt | None = None
    mamba_num_heads: HeadInt | None = None
    mamba_head_dim: DimInt | None = None
    mamba_n_groups: HeadInt | None = None
    ssm_state_size: DimInt | None = None
    conv_kernel: DimInt | None = None
    mamba_expand: Annotated[int, Field(strict=True, ge=1, le=64)] | None = None
    mamba_intermediate_size: SizeInt | None = None
    mamba_dt_rank: DimInt | None = None
    # Kimi Delta Attention (linear_attn_config of Kimi-Linear); kda_layers are 1-based
    kda_layers: list[PosInt] | None = None
    kda_num_heads: HeadInt | None = None
    kda_head_dim: DimInt | None = None
    kda_conv_kernel: DimInt | None = None
    # LFM2 short convolution (conv_L_cache, conv_dim)
    short_conv_kernel: DimInt | None = None
    short_conv_dim: SizeInt | None = None
    # an attention-free model class (data/model_defaults.yaml attention_free_architectures)
    attention_free: str = ""
    # quantisation and multimodal parts (kept as plain JSON)
    quantization_config: dict[str, Any] | None = None
    vision_config: dict[str, Any] | None = None
    audio_config: dict[str, Any] | None = None
    # fields absent from config.json and taken from data/model_defaults.yaml
    defaults_applied: dict[str, DefaultFrom] = Field(default_factory=dict)
    raw: dict[str, Any] = Field(default_factory=dict)

    @property
    def architecture(self) -> str:
        return self.architectures[0] if self.architectures else "unknown"

    def field(self, name: str) -> Any:
        """A field of the flattened original config (for evidence and rare rules)."""
        return self.raw.get(name)


def _first(raw: Mapping[str, Any], names: tuple[str, ...]) -> tuple[str, Any] | None:
    for n in names:
        if n in raw and raw[n] is not None:
            return n, raw[n]
    return None


def flatten(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Merge a nested language-model config over the top level (the text part wins)."""
    flat = {k: v for k, v in raw.items() if k not in TEXT_CONFIG_KEYS}
    for key in TEXT_CONFIG_KEYS:
        sub = raw.get(key)
        if isinstance(sub, Mapping):
            inner = sub.get("text_config")
            if isinstance(inner, Mapping):  # e.g. thinker_config.text_config
                sub = inner
            for k, v in sub.items():
                if k == "architectures" and flat.get("architectures"):
                    continue
                flat[k] = v
            flat["_text_config_key"] = key
            break
    return flat


def _text_refused(text: str) -> bool:
    """A key or a string value of the config is too long or holds a lone surrogate."""
    return len(text) > MAX_STRING_CHARS or (not text.isascii() and bool(_SURROGATE.search(text)))


def _bad_text(field: str, text: str, *, key: bool) -> InputError:
    """The refusal of a key (``key``) or a string value ``text`` that ``_text_refused``
    refuses."""
    if len(text) > MAX_STRING_CHARS:
        long = E.LONG_KEY if key else E.LONG_TEXT
        return InputError(field, long(most=MAX_STRING_CHARS, got=len(text)))
    return InputError(field, E.SURROGATE_KEY() if key else E.SURROGATE_TEXT())


def _key(path: str, key: Any) -> str:
    """The path of ``key`` under ``path`` as an error names it: at most 64 characters of the
    key, with what is not printable (a lone surrogate, a control) as an escape."""
    shown = str(key) if len(str(key)) <= 64 else str(key)[:63] + "…"
    if not shown.isprintable():
        shown = shown.encode("ascii", "backslashreplace").decode("ascii")
    return f"{path}.{shown}" if path else shown


def _too_deep(path: str) -> InputError:
    return InputError(path or "config.json", E.NESTING(most=MAX_DEPTH))


def _nan(field: str) -> InputError:
    return InputError(field, E.NOT_NAN())


def check_tree(obj: Any) -> None:
    """One iterative walk over the parsed JSON: no NaN anywhere (+-Infinity is allowed,
    configs publish it: time_step_limit), at most MAX_DEPTH levels of nesting, and every key
    and string valid Unicode text of at most MAX_STRING_CHARS (a page shows them)."""
    stack: list[tuple[Any, str, int]] = [(obj, "", 0)]
    pop, push = stack.pop, stack.append
    while stack:
        node, path, depth = pop()
        if isinstance(node, dict):
            if depth >= MAX_DEPTH:
                raise _too_deep(path)
            for k, v in node.items():
                if _text_refused(k):
                    raise _bad_text(_key(path, k), k, key=True)
                if isinstance(v, (dict, list)):
                    push((v, _key(path, k), depth + 1))
                elif isinstance(v, float) and v != v:
                    raise _nan(_key(path, k))
                elif isinstance(v, str) and _text_refused(v):
                    raise _bad_text(_key(path, k), v, key=False)
        elif isinstance(node, list):
            if depth >= MAX_DEPTH:
                raise _too_deep(path)
            for i, v in enumerate(node):
                if isinstance(v, (dict, list)):
                    push((v, f"{path}[{i}]", depth + 1))
                elif isinstance(v, float) and v != v:
                    raise _nan(f"{path}[{i}]")
                elif isinstance(v, str) and _text_refused(v):
                    raise _bad_text(f"{path}[{i}]", v, key=False)


def _summarise_modules(qc: dict[str, Any]) -> dict[str, Any]:
    """quantization_config with its per-module listings reduced: ``quantized_layers``
    becomes ``quantized_layers_summary`` (modules per quant_algo, and per algo the module
    kinds, e.g. ``experts``); very long module lists keep their head and a count."""
    out = dict(qc)
    for key in PER_MODULE_KEYS:
        layers = out.get(key)
        if not isinstance(layers, dict):
            continue
        algos: dict[str, int] = {}
        kinds: dict[str, dict[str, int]] = {}
        for name, spec in layers.items():
            algo = spec.get("quant_algo") if isinstance(spec, dict) else spec
            algo_s = str(algo).upper() if algo is not None else "NONE"
            algos[algo_s] = algos.get(algo_s, 0) + 1
            kind = module_kind(str(name))
            per = kinds.setdefault(algo_s, {})
            per[kind] = per.get(kind, 0) + 1
        del out[key]
        out[f"{key}_summary"] = {"modules": len(layers), "by_algo": algos, "by_kind": kinds}
    for key in PER_MODULE_LIST_KEYS:
        names = out.get(key)
        if isinstance(names, list) and len(names) > LONG_LIST:
            out[key] = names[:KEEP_LIST_ENTRIES]
            out[f"{key}_count"] = len(names)
    return out


def module_kind(name: str) -> str:
    """Which kind of block a checkpoint module name belongs to (data/engine_rules.yaml
    module_kinds: first pattern found in the dotted name wins)."""
    parts = name.split(".")
    for kind, patterns in model_defaults()["module_kinds"].items():
        if any(p in parts for p in patterns):
            return str(kind)
    return "other"


def prune(raw: dict[str, Any]) -> dict[str, Any]:
    """Drop what the rules never read from huge configs (per-module quantization listings),
    at the top level and in a nested language-model config."""
    qc = raw.get("quantization_config")
    if isinstance(qc, dict) and any(k in qc for k in (*PER_MODULE_KEYS, *PER_MODULE_LIST_KEYS)):
        raw = {**raw, "quantization_config": _summarise_modules(qc)}
    for key in TEXT_CONFIG_KEYS:
        sub = raw.get(key)
        if isinstance(sub, dict) and isinstance(sub.get("quantization_config"), dict):
            raw = {**raw, key: prune(sub)}
    return raw


def _default(value: Any, default: Any) -> Any:
    """``value``, or ``default`` when it is absent (None): a 0 or false stays, for validation
    to refuse by name, never read as absent."""
    return default if value is None else value


def _pick(flat: Mapping[str, Any], name: str) -> Any:
    if name in flat and flat[name] is not None:
        return flat[name]
    hit = _first(flat, ALIASES.get(name, ()))
    return None if hit is None else hit[1]


def _bool(flat: Mapping[str, Any], name: str, default: bool) -> bool:
    v = flat.get(name, default)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise InputError(name, E.TRUE_FALSE_GOT(got=E.got(v)))
    return v


def _kv_heads(flat: Mapping[str, Any], num_heads: Any) -> Any:
    """vLLM ModelConfig.get_total_num_kv_heads: the first KV-head attribute present (MPT's
    ``attn_config.kv_n_heads`` included), else one head for ``multi_query`` (Falcon), else
    as many KV heads as query heads (MHA)."""
    attn_cfg = flat.get("attn_config")
    if isinstance(attn_cfg, Mapping) and attn_cfg.get("kv_n_heads") is not None:
        return attn_cfg["kv_n_heads"]
    v = _pick(flat, "num_key_value_heads")
    if v is not None:
        return v
    if flat.get("multi_query") is True:
        return 1
    return num_heads


def _too_many(name: str, n: int) -> InputError:
    return InputError(name, E.MAX_ENTRIES(most=MAX_LAYERS, got=n))


def _str_list(v: Any, name: str, expected: Decision) -> list[str] | None:
    if v is None:
        return None
    if not isinstance(v, list) or not all(isinstance(t, str) for t in v):
        raise InputError(name, expected)
    if len(v) > MAX_LAYERS:
        raise _too_many(name, len(v))
    return list(v)


def _layer_types(flat: Mapping[str, Any]) -> list[str] | None:
    name = "layer_types" if flat.get("layer_types") is not None else "layers_block_type"
    return _str_list(flat.get(name), name, E.LAYER_TYPE_LIST())


def _int_list(v: list[Any], name: str, *, allow_null: bool = False) -> list[int]:
    """A per-layer list of non-negative integers (booleans as 0/1; null as 0 if allowed)."""
    if len(v) > MAX_LAYERS:
        raise _too_many(name, len(v))
    out: list[int] = []
    for i, x in enumerate(v):
        if x is None and allow_null:
            out.append(0)
        elif isinstance(x, bool):
            out.append(int(x))
        elif isinstance(x, int) and 0 <= x <= 1 << 34:
            out.append(x)
        else:
            raise InputError(f"{name}[{i}]", E.PER_LAYER_INTEGER(got=E.got(x)))
    return out


def _per_layer(v: Any, name: str) -> tuple[Any, list[int] | None]:
    """A head count given once or per layer: (scalar for the model-wide field, list)."""
    if not isinstance(v, list):
        return v, None
    counts = _int_list(v, name)
    if not counts or not any(counts):
        raise InputError(name, E.POSITIVE_OR_PER_LAYER())
    return max(counts), counts


def _sliding_window(flat: Mapping[str, Any]) -> tuple[Any, list[int] | None]:
    """(model-wide window, per-layer windows). ``use_sliding_window: false`` (Qwen2/Qwen3)
    switches the published window off; ``sliding_window_size`` is the spelling vLLM's
    mimo_v2_flash.py reads; a list gives each layer its window (null/0: full attention)."""
    sw = flat.get("sliding_window_size")
    if sw is None:
        sw = flat.get("sliding_window")
    if sw is None or flat.get("use_sliding_window", True) is False:
        return None, None
    if isinstance(sw, list):
        windows = _int_list(sw, "sliding_window", allow_null=True)
        nonzero = [w for w in windows if w]
        return (max(nonzero) if nonzero else None), (windows if nonzero else None)
    return sw, None


def _moe_layers(flat: Mapping[str, Any]) -> tuple[Any, list[bool] | None]:
    """``moe_layer_freq``: an integer (DeepSeek: MoE where layer % freq == 0) or one entry
    per layer (MiMo-V2-Flash, MiniMax-M3: 1 = MoE, vLLM mimo_v2_flash.py is_moe_layer)."""
    v = flat.get("moe_layer_freq")
    if isinstance(v, list):
        return 1, [bool(x) for x in _int_list(v, "moe_layer_freq")]
    return v or 1, None


def _ffn_mult_to_intermediate_size(ffn_mult: float, hidden: int) -> int:
    """vLLM nemotron_nas.py: int(2 * ffn_mult * hidden / 3) rounded up to a multiple of 256."""
    size = int(2 * ffn_mult * hidden / 3)
    return size if size % 256 == 0 else size + 256 - size % 256


def _block_configs(v: Any, heads: Any, hidden: Any) -> list[dict[str, int]] | None:
    if v is None:
        return None
    if not isinstance(v, list) or not v:
        raise InputError("block_configs", E.BLOCK_CONFIGS())
    if len(v) > MAX_LAYERS:
        raise _too_many("block_configs", len(v))
    if not isinstance(heads, int) or isinstance(heads, bool) or heads < 1:
        raise InputError("num_attention_heads", E.POSITIVE_USED_BY(by=Name("block_configs")))
    if not isinstance(hidden, int) or isinstance(hidden, bool) or hidden < 1:
        raise InputError("hidden_size", E.POSITIVE_USED_BY(by=Name("block_configs")))
    out = []
    for i, block in enumerate(v):
        attn = block.get("attention") if isinstance(block, dict) else None
        ffn = block.get("ffn") if isinstance(block, dict) else None
        if not isinstance(attn, dict) or not isinstance(ffn, dict):
            raise InputError(f"block_configs[{i}]", E.BLOCK_OBJECT())
        kv = 0
        if attn.get("no_op") is not True:
            group = attn.get("n_heads_in_group")
            if not isinstance(group, int) or isinstance(group, bool) or group < 1 or heads % group:
                raise InputError(
                    f"block_configs[{i}].attention.n_heads_in_group",
                    E.DIVISOR(of=Name("num_attention_heads"), total=heads, got=E.got(group)),
                )
            kv = heads // group
        inter = 0
        if ffn.get("no_op") is not True:
            mult = ffn.get("ffn_mult")
            size = ffn.get("intermediate_size")
            if isinstance(mult, (int, float)) and not isinstance(mult, bool) and 0 < mult < 1e3:
                inter = _ffn_mult_to_intermediate_size(float(mult), hidden)
            elif isinstance(size, int) and not isinstance(size, bool) and size > 0:
                inter = size
            else:
                raise InputError(f"block_configs[{i}].ffn.ffn_mult", E.FFN_MULT(got=E.got(mult)))
        out.append({"kv_heads": kv, "ffn_intermediate": inter})
    return out


def _layer_count(flat: Mapping[str, Any]) -> tuple[Any, str | None]:
    """``num_hidden_layers`` (or an alias); else the length of a per-layer list, as
    transformers' NemotronHConfig derives it from ``layers_block_type``."""
    n = _pick(flat, "num_hidden_layers")
    if n is not None:
        return n, None
    for key in model_defaults()["layer_count_lists"]:
        v = flat.get(key)
        if isinstance(v, (list, str)) and v:
            return len(v), key
    return None, None


@cache
def model_defaults() -> dict[str, Any]:
    """data/model_defaults.yaml, validated once: ``defaults`` (model_type -> {field: (value,
    where from, nested_only)},
    transformers' per-model config defaults for fields config.json leaves out) and the
    config-reading rules (``layer_count_lists``, ``layer_pattern_lists``, ``module_kinds``)."""
    raw = data_yaml("model_defaults.yaml")
    table: dict[str, dict[str, tuple[Any, DefaultFrom, bool]]] = {}
    for entry in raw["defaults"]:
        if not entry.get("source"):
            raise ValueError("data/model_defaults.yaml: every defaults entry needs a source")
        by = entry.get("by", "transformers")
        nested = bool(entry.get("nested_only", False))
        for mt in entry["model_types"]:
            for k, v in entry["fields"].items():
                table.setdefault(mt, {})[k] = (
                    v,
                    DefaultFrom(by=by, name=mt, nested=nested),
                    nested,
                )
    rules = raw["rules"]
    for key, rule in rules.items():
        if not isinstance(rule, dict) or not rule.get("source"):
            raise ValueError(f"data/model_defaults.yaml: rule {key} needs a source")
    return {"defaults": table, **{k: v["values"] for k, v in rules.items()}}


def _with_defaults(
    flat: dict[str, Any], wrapper_type: Any
) -> tuple[dict[str, Any], dict[str, DefaultFrom]]:
    """The flattened config with absent fields filled from the text model's transformers
    defaults (then the wrapper's), and which fields were filled from which model_type."""
    table = model_defaults()["defaults"]
    applied: dict[str, DefaultFrom] = {}
    merged = flat
    nested = "_text_config_key" in flat
    for mt in (flat.get("model_type"), wrapper_type):
        if not isinstance(mt, str) or mt not in table:
            continue
        for k, (v, why, nested_only) in table[mt].items():
            if nested_only and not nested:
                continue
            if merged.get(k) is None and k not in applied:
                if merged is flat:
                    merged = dict(flat)
                merged[k] = v
                applied[k] = why
    return merged, applied


def _ssm_fields(flat: Mapping[str, Any], free: Mapping[str, Any] | None) -> dict[str, Any]:
    """SSM state dimensions under their canonical names: an attention-free class's own keys
    (data/model_defaults.yaml attention_free_architectures), else the first spelling present
    (ssm_field_spellings: Falcon-H1 / Granite's mamba_n_heads, Zamba2's mamba_headdim ...)."""
    if free is not None:
        return {name: flat.get(key) for name, key in free["fields"].items()}
    out: dict[str, Any] = {}
    for name, spellings in model_defaults()["ssm_field_spellings"].items():
        hit = _first(flat, tuple(spellings))
        out[name] = None if hit is None else hit[1]
    return out


def _per_layer_width(v: Any) -> tuple[Any, list[int] | None]:
    """``intermediate_size`` given once or per layer (Gemma 3n's MatFormer widths, vLLM
    gemma3n.py: intermediate_size[layer_idx]): (widest, per-layer list)."""
    if not isinstance(v, list):
        return v, None
    widths = _int_list(v, "intermediate_size")
    if not widths or not any(widths):
        raise InputError("intermediate_size", E.POSITIVE_OR_PER_LAYER())
    return max(widths), widths


def _first_of_list(v: Any) -> Any:
    """vLLM get_num_experts: a per-layer list (ERNIE-VL remote code) counts its first entry."""
    return (v[0] if v else None) if isinstance(v, list) else v


def _max_of_list(v: Any) -> Any:
    """vLLM get_num_experts_per_token: a per-layer list (Hunyuan's moe_topk) counts its max."""
    if isinstance(v, list):
        return max(_int_list(v, "num_experts_per_tok"), default=0)
    return v


# fields read as config.json writes them (after flattening the nested text config)
_AS_IS = (
    "attention_chunk_size",
    "swa_num_attention_heads",
    "swa_num_key_value_heads",
    "swa_head_dim",
    "swa_v_head_dim",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "index_topk",
    "index_head_dim",
    "index_n_heads",
    "compress_ratios",
    "o_lora_rank",
    "o_groups",
    "linear_num_key_heads",
    "linear_num_value_heads",
    "linear_key_head_dim",
    "linear_value_head_dim",
    "linear_conv_kernel_dim",
)


def _shape(
    flat: Mapping[str, Any], raw: Mapping[str, Any], applied: dict[str, DefaultFrom]
) -> tuple[dict[str, Any], Mapping[str, Any] | None]:
    """The model's shape: its classes, width, layers, heads (per layer where listed), FFN
    widths; and the attention-free class's row, where it is one."""
    hidden = _pick(flat, "hidden_size")
    if hidden is None:
        raise InputError("hidden_size", E.MISSING(what=E.KIND["positive_integer_model_width"]()))
    archs = flat.get("architectures") or raw.get("architectures") or []
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise InputError("architectures", E.MODEL_CLASSES())
    free = model_defaults()["attention_free_architectures"].get(archs[0] if archs else "")
    heads, q_list = _per_layer(_pick(flat, "num_attention_heads"), "num_attention_heads")
    if free is not None:
        # no attention layer exists: the head fields are the SSM's (Mamba-2's num_heads)
        heads, q_list = 1, None
        applied["num_attention_heads"] = DefaultFrom(by="no_attention", name=archs[0])
    if heads is None:
        raise InputError("num_attention_heads", E.MISSING(what=E.KIND["positive_integer"]()))
    layers, counted_from = _layer_count(flat)
    if layers is None:
        raise InputError("num_hidden_layers", E.MISSING(what=E.KIND["positive_integer_or_list"]()))
    if counted_from is not None:
        applied["num_hidden_layers"] = DefaultFrom(by="counted", name=counted_from)
    kv, kv_list = _per_layer(_kv_heads(flat, heads), "num_key_value_heads")
    if free is not None:
        kv, kv_list = 1, None
    inter, inter_list = _per_layer_width(_pick(flat, "intermediate_size"))
    window, window_list = _sliding_window(flat)
    shape = {
        "architectures": archs,
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "intermediate_size": 0 if free is not None else inter,
        "sliding_window": window,
        "layer_types": _layer_types(flat),
        "layer_kv_heads": kv_list,
        "layer_q_heads": q_list,
        "layer_windows": window_list,
        "block_configs": _block_configs(flat.get("block_configs"), heads, hidden),
        "layer_ffn_widths": inter_list,
    }
    return shape, free


def _words(flat: Mapping[str, Any], raw: Mapping[str, Any]) -> dict[str, Any]:
    """What the config says of itself: its model types, dtype, activation and vocabulary."""
    dtype = _pick(flat, "dtype") or raw.get("torch_dtype") or raw.get("dtype") or "bfloat16"
    act = ("mlp_hidden_act", "hidden_act", "hidden_activation", "activation_function")
    return {
        "model_type": str(flat.get("model_type") or ""),
        "wrapper_model_type": str(raw.get("model_type") or ""),
        "dtype": str(dtype),
        "head_dim": _pick(flat, "head_dim"),
        "vocab_size": _default(_pick(flat, "vocab_size"), 32_000),
        "max_position_embeddings": _pick(flat, "max_position_embeddings"),
        "tie_word_embeddings": _bool(flat, "tie_word_embeddings", False),
        "hidden_act": str(next((flat[k] for k in act if flat.get(k)), "")),
        "num_kv_shared_layers": flat.get("num_kv_shared_layers") or 0,
        "attn_output_gate": _bool(flat, "attn_output_gate", False),
    }


def _moe(flat: Mapping[str, Any]) -> dict[str, Any]:
    """The experts: how many, how many a token uses, their widths, shared and latent ones, and
    which layers have them."""
    shared_inter = flat.get("shared_expert_intermediate_size")
    if shared_inter is None:
        shared_inter = flat.get("moe_shared_expert_intermediate_size")
    moe_freq, moe_list = _moe_layers(flat)
    return {
        "num_experts": _first_of_list(_pick(flat, "num_experts")) or 0,
        "experts_per_token": _max_of_list(_pick(flat, "experts_per_token")) or 0,
        "moe_intermediate_size": flat.get("moe_intermediate_size")
        or flat.get("expert_intermediate_size"),
        "n_shared_experts": flat.get("n_shared_experts") or flat.get("num_shared_experts") or 0,
        "shared_expert_intermediate_size": shared_inter,
        "moe_latent_size": flat.get("moe_latent_size") or flat.get("routed_expert_hidden_size"),
        "moe_latent_norm": flat.get("latent_moe_use_norm") is True,
        "first_k_dense_replace": flat.get("first_k_dense_replace") or 0,
        "moe_layer_freq": moe_freq,
        "moe_layers": moe_list,
        "decoder_sparse_step": flat.get("decoder_sparse_step") or 1,
        "mlp_only_layers": flat.get("mlp_only_layers") or [],
    }


def _mtp(flat: Mapping[str, Any]) -> dict[str, Any]:
    """The multi-token-prediction layers: how many, under which key, of which block kinds."""
    kind = next(
        (k for k in ("num_nextn_predict_layers", "mtp_num_hidden_layers") if flat.get(k)), ""
    )
    blocks = flat.get("mtp_layers_block_type")
    return {
        "mtp_layers": flat.get(kind) if kind else 0,
        "mtp_kind": kind,
        "mtp_block_types": _str_list(blocks, "mtp_layers_block_type", E.BLOCK_KIND_LIST()),
    }


def _recurrent(
    flat: Mapping[str, Any], hidden: Any, free: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The recurrent layers' state dimensions: SSM, short convolution and Kimi Delta Attention."""
    ssm = _ssm_fields(flat, free)
    conv = flat.get("conv_L_cache")
    out = {
        **ssm,
        "mamba_dt_rank": ssm.get("mamba_dt_rank")
        or flat.get("mamba_dt_rank")
        or flat.get("time_step_rank"),
        "short_conv_kernel": conv,
        "short_conv_dim": (flat.get("conv_dim") or hidden) if conv else None,
        "attention_free": str(free["mixer"]) if free is not None else "",
    }
    lac = flat.get("linear_attn_config")
    if isinstance(lac, Mapping) and lac.get("kda_layers") is not None:
        out["kda_layers"] = lac.get("kda_layers")
        out["kda_num_heads"] = lac.get("num_heads")
        out["kda_head_dim"] = lac.get("head_dim")
        out["kda_conv_kernel"] = lac.get("short_conv_kernel_size", 4)
    if out["mamba_dt_rank"] == "auto":
        out["mamba_dt_rank"] = None
    return out


def normalize(raw: Mapping[str, Any]) -> ModelConfig:
    """Validate and normalise a parsed config.json. Raises InputError naming the field."""
    if not isinstance(raw, Mapping):
        raise InputError("config.json", E.FILE_OBJECT())
    check_tree(raw)
    raw = prune(dict(raw))
    original = flatten(raw)
    flat, applied = _with_defaults(original, raw.get("model_type"))
    shape, free = _shape(flat, raw, applied)
    vision = _first(raw, VISION_CONFIG_KEYS)
    audio = _first(raw, AUDIO_CONFIG_KEYS)
    qcfg = raw.get("quantization_config", flat.get("quantization_config"))
    values: dict[str, Any] = {
        **{name: flat.get(name) for name in _AS_IS},
        **shape,
        **_words(flat, raw),
        **_moe(flat),
        **_mtp(flat),
        **_recurrent(flat, shape["hidden_size"], free),
        "quantization_config": qcfg if isinstance(qcfg, dict) else None,
        "vision_config": vision[1] if vision and isinstance(vision[1], dict) else None,
        "audio_config": audio[1] if audio and isinstance(audio[1], dict) else None,
        "defaults_applied": applied,
        "raw": original,
    }
    try:
        cfg = ModelConfig.model_validate(values)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "config.json"
        got = first.get("input")
        raise InputError(loc, _expects(first["type"], first.get("ctx"), got)) from None
    _cross_checks(cfg)
    return cfg


def _short_repr(v: Any, limit: int = 80) -> str:
    s = repr(v)
    return s if len(s) <= limit else s[: limit - 1] + "…"


_KINDS = {"string_type": "string", "list_type": "list", "bool_type": "boolean"}
_KINDS |= {"bool_parsing": "boolean", "dict_type": "object"}


def _expects(kind: str, ctx: Mapping[str, Any] | None, value: Any) -> Decision:
    """What a field expects, from pydantic's kind of error and its context."""
    ctx = ctx or {}
    got = E.got(value)
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return E.INTEGER(got=got)
    if kind == "greater_than_equal":
        return E.INTEGER_AT_LEAST(low=ctx["ge"], got=got)
    if kind == "less_than_equal":
        return E.AT_MOST_REAL(high=ctx["le"], got=got)
    if kind in _KINDS:
        return E.OF_TYPE(kind=E.KIND[_KINDS[kind]](), got=got)
    return E.VALID(kind=Name(kind), got=got)


def _per_layer_lengths(cfg: ModelConfig) -> None:
    n = cfg.num_hidden_layers
    lists: dict[str, list[Any] | None] = {
        "layer_types": cfg.layer_types,
        "num_key_value_heads": cfg.layer_kv_heads,
        "num_attention_heads": cfg.layer_q_heads,
        "sliding_window": cfg.layer_windows,
        "block_configs": cfg.block_configs,
        "moe_layer_freq": cfg.moe_layers,
        "intermediate_size": cfg.layer_ffn_widths,
    }
    for name, v in lists.items():
        if v is not None and len(v) < n:
            raise InputError(name, E.PER_LAYER(layers=n, got=len(v)))


def _cross_checks(cfg: ModelConfig) -> None:
    per_layer = cfg.layer_kv_heads is not None or cfg.layer_q_heads is not None
    if (
        cfg.num_attention_heads % cfg.num_key_value_heads
        and cfg.kv_lora_rank is None
        and not per_layer
    ):
        raise _not_divisor(
            "num_key_value_heads",
            cfg.num_key_value_heads,
            "num_attention_heads",
            cfg.num_attention_heads,
        )
    if cfg.experts_per_token > cfg.num_experts and cfg.num_experts > 0:
        raise _over("num_experts_per_tok", cfg.experts_per_token, "num_experts", cfg.num_experts)
    _per_layer_lengths(cfg)
    if cfg.kv_lora_rank is not None and cfg.qk_rope_head_dim is None:
        raise InputError("qk_rope_head_dim", E.NEEDED_WITH(other=Name("kv_lora_rank (MLA)")))
    if cfg.index_topk is not None and cfg.kv_lora_rank is not None and cfg.index_head_dim is None:
        raise InputError("index_head_dim", E.NEEDED_WITH(other=Name("index_topk (DSA)")))
    _derived_shapes(cfg)


def _not_divisor(name: str, value: int, of: str, total: int) -> InputError:
    return InputError(name, E.DIVISOR(of=Name(of), total=total, got=value))


def _over(name: str, value: int, of: str, total: int) -> InputError:
    return InputError(name, E.AT_MOST_FIELD(of=Name(of), total=total, got=value))


def _divides(name: str, value: int | None, of: str, total: int | None) -> None:
    if value and total and total % value:
        raise _not_divisor(name, value, of, total)


def _derived_shapes(cfg: ModelConfig) -> None:
    """Every dimension the rules derive and then divide or size by is at least 1 and splits
    evenly, named by the field to fix: the attention head size (hidden_size //
    num_attention_heads when head_dim is absent, as vLLM's get_head_size derives it), the query
    heads per KV head, a sliding-window layer's heads, the linear-attention and Mamba head
    groups, per-layer head counts."""
    attention = not cfg.attention_free
    latent = cfg.kv_lora_rank is not None
    decoupled = bool(cfg.qk_nope_head_dim and cfg.qk_rope_head_dim)
    derived_head = attention and not latent and not decoupled and cfg.head_dim is None
    if derived_head and cfg.hidden_size // cfg.num_attention_heads < 1:
        raise InputError(
            "num_attention_heads",
            E.HEAD_SIZE(hidden=cfg.hidden_size, heads=cfg.num_attention_heads),
        )
    per_layer = cfg.layer_kv_heads is not None or cfg.layer_q_heads is not None
    if (
        attention
        and not latent
        and not per_layer
        and cfg.num_key_value_heads > cfg.num_attention_heads
    ):
        raise _over(
            "num_key_value_heads",
            cfg.num_key_value_heads,
            "num_attention_heads",
            cfg.num_attention_heads,
        )
    swa_q = cfg.swa_num_attention_heads
    _divides(
        "swa_num_key_value_heads", cfg.swa_num_key_value_heads, "swa_num_attention_heads", swa_q
    )
    if swa_q and cfg.swa_head_dim is None and cfg.head_dim is None and cfg.hidden_size // swa_q < 1:
        raise InputError(
            "swa_num_attention_heads",
            E.AT_MOST_FIELD(of=Name("hidden_size"), total=cfg.hidden_size, got=swa_q),
        )
    _divides(
        "linear_num_key_heads", cfg.linear_num_key_heads, "linear_num_value_heads",
        cfg.linear_num_value_heads,
    )  # fmt: skip
    _divides("mamba_n_groups", cfg.mamba_n_groups, "mamba_num_heads", cfg.mamba_num_heads)
    if cfg.mamba_head_dim and cfg.mamba_num_heads is None:
        width = cfg.mamba_intermediate_size or (cfg.mamba_expand or 2) * cfg.hidden_size
        if width // cfg.mamba_head_dim < 1:
            raise InputError("mamba_head_dim", E.MAMBA_HEAD_DIM(width=width))
    if cfg.layer_q_heads and cfg.layer_kv_heads:
        for i, (q, kv) in enumerate(zip(cfg.layer_q_heads, cfg.layer_kv_heads, strict=False)):
            if q and kv and (q % kv if q >= kv else True):
                raise InputError(
                    f"num_key_value_heads[{i}]", E.LAYER_DIVISOR(layer=i, heads=q, got=kv)
                )
