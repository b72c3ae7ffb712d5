"""What every mixer family owns, and the one registry they are found in.

A mixer family is a layer's token mixer as the engines' model code builds it — full attention,
a sliding or chunked window, MLA, DeepSeek-V4's compressed attention, a linear / SSM state
(Gated DeltaNet, Kimi Delta Attention, Mamba-1/2, lightning attention, LFM2's short
convolution) — or a feature a layer adds to one (a DSA indexer, a KV cache borrowed from an
earlier layer). Each is one small class that owns, in one place:

* its **detection**: which config fields describe it, with the evidence row (field → value →
  rule, the rule a ``Decision``) the family page shows;
* its **layer**: the ``LayerPlan`` it builds from the config for one decoder layer;
* its **cache spec**: the ``engine.model.cache_specs`` objects one layer keeps on one TP rank
  (vLLM's ``get_kv_cache_spec`` of that layer class);
* its **weights**: the (TP-split, replicated) parameters of its projections;
* its **label**: a ``Decision`` the catalogs word in each language.

A family registers itself by subclassing ``MixerFamily`` (``key`` set): no other file lists
the families, so adding one is a new module in this package, its catalog wording and its test.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from engine import errors as E
from engine.decision import Code, Decision, Name
from engine.errors import InputError
from engine.model.cache_specs import CacheSpec
from engine.model.config import ModelConfig, model_defaults
from engine.model.evidence import Evidence
from engine.rules import engine_rules

_FAMILIES: dict[str, MixerFamily] = {}
_INTERNED: dict[str, Mixer] = {}


class Mixer(str):
    """A layer's token mixer: the key of a registered mixer family ("full", "mla", "gdn" …).
    It compares and serialises as its key (as the ``StrEnum`` it replaces did); ``family`` is
    the class that owns its rules. The constants name the mixers the architecture builder and
    the family verdict refer to; a new family needs none."""

    __slots__ = ()

    FULL: ClassVar[Mixer]
    SLIDING: ClassVar[Mixer]
    CHUNKED: ClassVar[Mixer]
    MLA: ClassVar[Mixer]
    COMPRESSED: ClassVar[Mixer]
    NONE: ClassVar[Mixer]

    def __new__(cls, key: str) -> Mixer:
        known = _INTERNED.get(key)
        if known is not None:
            return known  # one object per key, as an enum member is
        if key not in _FAMILIES:
            raise ValueError(f"{key!r} is not a mixer family ({', '.join(sorted(_FAMILIES))})")
        made = _INTERNED[key] = super().__new__(cls, key)
        return made

    @property
    def family(self) -> MixerFamily:
        return _FAMILIES[self]

    @property
    def is_linear(self) -> bool:
        """A recurrent state instead of a per-token KV cache."""
        return self.family.linear

    @property
    def is_attention(self) -> bool:
        """Softmax attention that keeps per-token KV (full, windowed, latent, compressed)."""
        return self.family.attention

    @property
    def is_head_attention(self) -> bool:
        """Attention with K/V heads of its own (not MLA's latent, not V4's compressed entries)."""
        return self.family.head_attention


@dataclass(frozen=True)
class LayerPlan:
    """One decoder layer. ``mixer`` is the token mixer (see ``Mixer``); a plain string is
    read as its member. ``linear`` is a second, linear mixer the same layer also runs
    (Falcon-H1's parallel Mamba-2, Zamba2's hybrid layers): its state is kept beside the KV.
    ``kv_shared``: the layer reads another layer's KV cache and allocates none (vLLM
    ``kv_sharing_target_layer_name``, Gemma 3n / Gemma 4's last num_kv_shared_layers)."""

    index: int
    mixer: Mixer
    num_kv_heads: int = 0
    head_dim: int = 0
    head_dim_v: int = 0
    window: int | None = None
    indexer: bool = False
    compress_ratio: int = 0
    ffn: str = "dense"  # dense | moe | moe+dense | none
    num_heads: int = 0  # query heads of this layer (0: num_attention_heads)
    ffn_intermediate: int = 0  # this layer's dense FFN width (0: intermediate_size)
    linear: Mixer | None = None
    kv_shared: bool = False

    def __post_init__(self) -> None:
        if type(self.mixer) is not Mixer:
            object.__setattr__(self, "mixer", Mixer(self.mixer))
        if self.linear is not None and type(self.linear) is not Mixer:
            object.__setattr__(self, "linear", Mixer(self.linear))

    @property
    def mixers(self) -> tuple[Mixer, ...]:
        """Every token mixer of the layer (the main one, then a parallel linear one)."""
        return (self.mixer,) if self.linear is None else (self.mixer, self.linear)


@dataclass(frozen=True)
class CacheContext:
    """What a cache spec depends on besides the layer: the config, the attention TP size, the
    KV dtype the engine stores (its name, bytes per element and, for DeepSeek's packed MLA
    layouts, the fixed row size) and the dtypes of a linear mixer's conv and recurrent states
    (each engine resolves those its own way: engine/kv/sizing.py)."""

    cfg: ModelConfig
    tp: int
    kv_dtype: str
    kv_bytes: int
    mla_packed_bytes: int | None
    conv_dtype: str
    conv_bytes: int
    ssm_dtype: str
    ssm_bytes: int
    indexer_quant_block: int
    indexer_scale_bytes: int

    def divides(self, n: int, name: str) -> None:
        """A state split over TP needs a TP size that divides it (vLLM asserts the same)."""
        if n % self.tp:
            raise InputError(
                "tp",
                f"a TP size that divides {name} ({n}); got {self.tp}",
                expects=E.TP_DIVIDES(what=Name(name), n=n, got=self.tp),
            )


@dataclass(frozen=True)
class LayerShape:
    """What the architecture builder knows of decoder layer ``index`` before its mixer builds
    it: its FFN and the attention shape the config gives it (per-layer lists applied)."""

    index: int
    ffn: str
    kv_heads: int
    q_heads: int
    head_dim: int
    head_dim_v: int
    indexed: bool = False  # a DSA indexer on this layer (engine/model/mixers/dsa.py)


@dataclass(frozen=True)
class Schedule:
    """A model's layer kinds as one family's config fields spell them, and why."""

    kinds: list[str]
    evidence: Evidence


class MixerFamily:
    """One token-mixer family (see the module docstring). Subclasses set ``key`` and the
    class flags, declare their ``LABEL`` code, and override what applies to them."""

    key: ClassVar[str] = ""
    LABEL: ClassVar[Code]
    # a recurrent state instead of per-token KV (HYBRID when any layer has one)
    linear: ClassVar[bool] = False
    # softmax attention with per-token KV
    attention: ClassVar[bool] = False
    # attention with K/V heads of its own (split over TP, replicated below one per rank)
    head_attention: ClassVar[bool] = False
    # per-layer kind words (layer_types and the pattern lists) that name this family
    layer_kinds: ClassVar[tuple[str, ...]] = ()
    # the order families are tried (lower first): linear families by their state fields,
    # attention families by what they claim
    priority: ClassVar[int] = 100
    # the order the families' own layer schedules are read (lower first; see ``schedule``)
    schedule_priority: ClassVar[int] = 100

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if cls.key:
            if cls.key in _FAMILIES:
                raise ValueError(f"mixer family {cls.key!r} registered twice")
            _FAMILIES[cls.key] = cls()

    def label(self, layer: LayerPlan | None = None) -> Decision:
        """How the layer strip names a layer of this family."""
        return self.LABEL()

    # --- detection -----------------------------------------------------------------------

    def claims(self, cfg: ModelConfig) -> bool:
        """Attention families: this family builds the model's attention layers instead of
        full / windowed attention (MLA where vLLM's use_mla holds, DeepSeek-V4's compressed
        attention where the config gives compress_ratios)."""
        return False

    def describes(self, cfg: ModelConfig) -> bool:
        """Linear families: the config carries this mixer's state dimensions."""
        return False

    def evidence(self, cfg: ModelConfig) -> list[Evidence]:
        """The evidence rows of a model whose layers this family builds (read from the
        config before the layers are)."""
        return []

    def schedule(self, cfg: ModelConfig, linear: Mixer | None) -> Schedule | None:
        """The layer kinds (one per layer, as ``layer_types`` words them) that this family's
        own config fields spell, with the evidence row; None when the config does not spell
        the schedule this family's way. ``linear``: the model's linear mixer, if any. The
        builder reads the config's generic spellings first, then asks the families in
        ``schedule_priority`` order."""
        return None

    def takes_layers(self, cfg: ModelConfig) -> list[bool] | None:
        """Attention families that replace full attention on some layers: which ones, read
        from the config (None: none). The builder asks every family once."""
        return None

    def indexed_layers(self, cfg: ModelConfig) -> list[bool]:
        """Which layers carry a DSA indexer when this family builds them."""
        return [False] * cfg.num_hidden_layers

    def layer_evidence(self, cfg: ModelConfig, layers: tuple[LayerPlan, ...]) -> list[Evidence]:
        """Rows about the layers of this family once all are built (their shapes, counts)."""
        return []

    # --- the layer, its cache, its weights ------------------------------------------------

    def layer(self, cfg: ModelConfig, shape: LayerShape) -> LayerPlan:
        """The ``LayerPlan`` of one decoder layer of this family."""
        raise InputError("layer_types", f"layer {shape.index} cannot be a {self.key} layer")

    def cache_specs(self, layer: LayerPlan, ctx: CacheContext) -> tuple[CacheSpec, ...]:
        """What one such layer keeps on one TP rank (vLLM ``get_kv_cache_spec``)."""
        return ()

    def params(self, cfg: ModelConfig, layer: LayerPlan) -> tuple[int, int]:
        """(TP-split, replicated) parameters of the mixer's projections."""
        return 0, 0


def head_size(cfg: ModelConfig) -> int:
    """vLLM ``get_head_size``: ``head_dim`` if set, else ``hidden_size // num_attention_heads``;
    MiniCPM3's decoupled-RoPE heads (data/model_defaults.yaml decoupled_rope_head_model_types)
    cache qk_nope_head_dim + qk_rope_head_dim per head."""
    if (
        cfg.model_type in model_defaults()["decoupled_rope_head_model_types"]
        and cfg.qk_nope_head_dim
        and cfg.qk_rope_head_dim
    ):
        return cfg.qk_nope_head_dim + cfg.qk_rope_head_dim
    if cfg.head_dim:
        return cfg.head_dim
    return cfg.hidden_size // cfg.num_attention_heads


def uses_mla(cfg: ModelConfig) -> bool:
    """vLLM ``ModelConfig.use_mla``: a DeepSeek-MLA model_type with ``kv_lora_rank`` set."""
    return cfg.kv_lora_rank is not None and cfg.model_type in engine_rules().mla_model_types.values


def family(key: str) -> MixerFamily:
    return _FAMILIES[key]


def families() -> Iterator[MixerFamily]:
    """Every registered family, in registration order."""
    return iter(_FAMILIES.values())


def scheduling_families() -> list[MixerFamily]:
    """Families in the order their own layer schedules are read."""
    return sorted(_FAMILIES.values(), key=lambda f: f.schedule_priority)


def linear_families() -> list[MixerFamily]:
    """Linear families in the order their state fields are tried."""
    return sorted((f for f in _FAMILIES.values() if f.linear), key=lambda f: f.priority)


def for_layer_kind(kind: str) -> MixerFamily | None:
    """The family a per-layer kind word names ("sliding_attention" → sliding window)."""
    return next((f for f in _FAMILIES.values() if kind in f.layer_kinds), None)


def require(v: int | None, name: str) -> int:
    """A state dimension the config must give."""
    if v is None:
        raise InputError(name, "a positive integer for the linear-attention state; it is missing")
    return v
