"""One interface, two engines (SQLAlchemy's dialects): everything that differs between vLLM and
SGLang is answered by the engine's adapter — flag spellings (from the one settings table over the
pinned flag tables), how its parser reads a command line, its defaults, its memory accounting, its
parser registries, its multi-node flags and how it stores the KV cache. The rest of the engine asks
``adapter(engine)`` and never which engine it is talking to.

Layering: this package sits above ``model/`` and ``hardware/`` and below ``kv/``, ``launch/``,
``software/``, ``lint/``, ``measure/`` and ``present/``, which ask it; it imports none of them.
"""

from __future__ import annotations

import shlex
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Any, Literal, get_args

from pydantic import Field

from engine import errors as E
from engine.decision import Decision, Name
from engine.engines.adapter_data import EngineFacts, adapter_facts
from engine.engines.cli_table import FlagInfo, Registries, load_flag_table, read_json, table_path
from engine.engines.kvstore import KvDtype
from engine.engines.measure_vocab import MeasureVocab, measure_vocab
from engine.engines.memory import Reserve, Split
from engine.errors import InputError
from engine.hardware.gpus import Gpu
from engine.model.config import ModelConfig
from engine.rules import Strict, load_data

Engine = Literal["vllm", "sglang"]
ENGINES: tuple[Engine, ...] = get_args(Engine)

# The settings of data/engines/settings.yaml (one row each).
Setting = Literal[
    "model",
    "served_model_name",
    "host",
    "port",
    "tp",
    "pp",
    "dp",
    "attention_dp",
    "attention_dp_legacy",
    "ep",
    "memory_fraction",
    "context",
    "block",
    "max_num_seqs",
    "kv_dtype",
    "prefill_chunk",
    "decode_graph_max_bs",
    "speculative",
    "prefix_cache",
    "config_overrides",
    "auto_tool_choice",
    "tool_call_parser",
    "reasoning_parser",
    "chat_template",
    "trust_remote_code",
    "language_model_only",
    "quantization",
    "attention_backend",
    "all_to_all",
    "deepep_mode",
    "nnodes",
    "node_rank",
    "leader_address",
    "leader_port",
    "dp_local",
    "dp_address",
    "dp_rpc_port",
    "dp_start_rank",
    "headless",
    "dp_hybrid_lb",
    "mm_encoder_dp",
    "mm_processor_cache",
    "speculative_steps",
    "speculative_topk",
    "speculative_draft_tokens",
    "multi_layer_eagle",
    "speculative_draft_model",
    "schedule_policy",
    "eplb",
    "eplb_config",
    "eplb_algorithm",
    "eplb_redundant_experts",
    "metrics",
    "cpu_tier_size",
    "cpu_tier_backend",
    "cpu_tier_on",
    "cpu_tier_ratio",
]
SETTINGS: tuple[Setting, ...] = get_args(Setting)


class _SettingRow(Strict):
    vllm: str | None
    sglang: str | None
    meaning: str = Field(min_length=1)


class SettingsTable(Strict):
    source: str = Field(min_length=1)
    settings: dict[str, _SettingRow]


def settings_table() -> SettingsTable:
    return load_data(SettingsTable, "engines/settings.yaml")


@dataclass(frozen=True)
class FlagChoice:
    """A flag an adapter decides for a plan, with the decision that explains it."""

    flag: str
    value: str | None
    why: Decision


class EngineAdapter(ABC):
    """What one engine does differently. Subclasses set the class attributes and implement the
    abstract methods; the shared methods read the pinned tables the same way for both."""

    name: Engine
    # --- how the engine's parser reads a command line
    listed_choices_enforced: bool  # every listed choice is argparse-enforced
    model_positional: bool  # `vllm serve MODEL`: the model is the first positional word
    command_words: int  # words of the program before its options (container command vs args)
    # --- what its flags mean
    expert_parallel_is_switch: bool  # EP is an on/off switch over the TP x DP group
    tp_spans_attention_dp: bool  # the TP size names the whole group, attention DP inside it
    dp_is_attention_dp_for_moe: bool  # the DP size of a MoE model is attention DP
    merges_moe_copies: bool  # one server can hold several whole copies of a MoE model
    speculative_config_json: bool  # speculative decoding is one JSON config, not four flags
    pp_spans_ray_nodes: bool  # PP > 1 without --nnodes runs one stage per node of a Ray cluster
    allows_abbreviation: bool  # argparse accepts a unique prefix of an option
    context_beyond_pool_refused: bool  # refuses to start when one max-length request won't fit
    # --- what its memory accounting keeps where
    fraction_covers_everything: bool  # the fraction bounds all its memory, not a static pool
    state_in_kv_pool: bool  # linear-attention state pages share the KV pool
    sampler_reserve: bool  # its start-up reserve grows with max_num_seqs

    # --- what it is called -------------------------------------------------------------------

    @property
    def label(self) -> str:
        """How a reader names the engine ("vLLM"), from data/engines/adapters.yaml."""
        return self.facts.label

    @property
    def repository(self) -> str:
        """The engine's GitHub repository (owner/name)."""
        return self.facts.repository

    @property
    def facts(self) -> EngineFacts:
        """This engine's row of data/engines/adapters.yaml."""
        return adapter_facts().engine(self.name)

    # --- the pinned tables ------------------------------------------------------------------

    @cached_property
    def _table(self) -> Mapping[str, FlagInfo]:
        return MappingProxyType(load_flag_table(self.name, self.listed_choices_enforced))

    @property
    def flags(self) -> Mapping[str, FlagInfo]:
        """Every option spelling the engine's parser accepts (aliases and ``--no-X`` included)."""
        return self._table

    def table_path(self, kind: Literal["flags", "registries"]) -> str:
        return str(table_path(self.name, kind))

    def lookup(self, spelling: str) -> FlagInfo | None:
        """The option a command-line token names (``--flag=value`` accepted), or None."""
        name = spelling.split("=", 1)[0]
        found = self._table.get(name)
        return found if found is not None else self.lookup_variant(name)

    @abstractmethod
    def lookup_variant(self, name: str) -> FlagInfo | None:
        """An option the engine's parser accepts under another spelling than the table's."""

    def canonical_spelling(self, name: str) -> str:
        """``name`` as the engine's parser normalises it before looking it up."""
        return name

    @cached_property
    def registries(self) -> Registries:
        return self.read_registries(read_json(self.name, "registries"))

    @abstractmethod
    def read_registries(self, raw: Any) -> Registries:
        """The registries file in this engine's extractor's shape."""

    @property
    def version(self) -> str:
        return self.registries.version

    # --- the one settings table -------------------------------------------------------------

    @cached_property
    def _settings(self) -> Mapping[str, str]:
        by_dest = {info.dest: info.flag for info in self._table.values()}
        out: dict[str, str] = {}
        for setting, row in settings_table().settings.items():
            dest = getattr(row, self.name)
            if dest is None:
                continue
            if dest not in by_dest:
                raise ValueError(f"{self.name} {self.version} has no option with dest {dest!r}")
            out[setting] = by_dest[dest]
        return MappingProxyType(out)

    def has(self, setting: Setting) -> bool:
        return setting in self._settings

    def flag(self, setting: Setting) -> str:
        """The engine's canonical spelling of ``setting`` (KeyError: it has none)."""
        return self._settings[setting]

    def words(self, setting: Setting, value: str | None = None) -> str:
        """``setting`` (and ``value``) as a command fragment in this engine's spelling, the value
        checked against the option's listed choices and quoted for a shell; a setting or a
        choice the pinned version lacks is a bug in the caller, not user input."""
        flag = self.flag(setting)
        if value is None:
            return flag
        choices = self._table[flag].choices
        if choices is not None and value not in {str(c) for c in choices}:
            raise RuntimeError(f"{self.name} {flag} has no choice {value!r}")
        return f"{flag} {shlex.quote(value)}"

    def spell(self, settings: Sequence[tuple[Setting, str | None]]) -> tuple[str, ...]:
        """Each (setting, value) as ``words`` writes it."""
        return tuple(self.words(setting, value) for setting, value in settings)

    def setting_of(self, flag: str) -> str | None:
        """The setting an option of this engine is, or None."""
        info = self.lookup(flag)
        if info is None:
            return None
        return next((s for s, f in self._settings.items() if f == info.flag), None)

    # --- the program ------------------------------------------------------------------------

    @abstractmethod
    def program(self, model_id: str) -> list[str]:
        """The program part of argv, before the options."""

    # --- layout -----------------------------------------------------------------------------

    @abstractmethod
    def parallel_flags(
        self, split: Split, merged: int, layout: Decision, experts: Decision
    ) -> list[FlagChoice]:
        """The flags that carry ``split`` (``merged`` copies in one server), each explained;
        ``layout`` is the search's decision for the TP flag, ``experts`` the MoE shape."""

    def tp_size(self, split: Split) -> int:
        """The value of the TP flag for ``split`` (SGLang: the whole group, attention DP
        inside it)."""
        return split.tp * split.dp if self.tp_spans_attention_dp else split.tp

    # one server can hold several copies that each run attention DP (SGLang: no, its
    # --attn-dp-size refuses --dp-size replicas beside it)
    merges_attention_dp_copies: bool = True

    def merges_copies(self, moe: bool, attention_dp: int = 1) -> bool:
        """Can one server hold several whole copies (each with ``attention_dp`` attention
        data-parallel ranks) on a node?"""
        if attention_dp > 1 and not self.merges_attention_dp_copies:
            return False
        return self.merges_moe_copies or not moe

    @abstractmethod
    def multi_node_args(
        self, split: Split, per_node: int, rank: int, leader: str, ports: Mapping[str, int]
    ) -> list[str]:
        """The extra words of node ``rank`` of a copy that spans nodes."""

    def node_serves_api(self, split: Split, rank: int) -> bool:
        """Does node ``rank`` of a copy that spans nodes run an API server?"""
        return rank == 0

    @abstractmethod
    def deepep(self, mode: str) -> list[tuple[Setting, str]]:
        """The settings that put the MoE all-to-all on DeepEP in ``mode`` (normal: prefill,
        high throughput; low_latency: decode, CUDA graphs; auto: per batch)."""

    @abstractmethod
    def eplb(self, redundant: int) -> list[tuple[Setting, str | None]]:
        """The settings that turn expert-parallel load balancing on with ``redundant``
        replicated hot experts."""

    @abstractmethod
    def cpu_tier(
        self, split: Split, gib_per_node: float, per_node: int
    ) -> list[tuple[Setting, str | None, Decision]]:
        """The settings (with why) that give this engine a CPU tier behind its KV cache from
        ``gib_per_node`` GiB of host memory per node of ``per_node`` GPUs, in the unit its
        options take."""

    # Settings that schedule the longest shared prefix first (none: the engine has no such
    # order, and its prefix cache works without one).
    prefix_schedule: tuple[tuple[Setting, str], ...] = ()

    def replicas(self, dp: int, attention_dp: int) -> int:
        """Independent copies a command's DP size makes (SGLang: none under attention DP)."""
        return 1 if attention_dp > 1 else dp

    # --- memory -----------------------------------------------------------------------------

    @abstractmethod
    def weight_divisor(self, role: str, split: Split, vision_replicated: bool) -> int:
        """How many GPUs share one copy of a role's weights, per the engine's model code."""

    @abstractmethod
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
        """The memory fraction the engine uses when none is given, and why (its formula)."""

    def fraction_note(self, formula: Decision) -> Decision:
        """Why the default fraction is what it is, for the candidate's formula."""
        return formula

    def reserve(
        self,
        cfg: ModelConfig,
        gpu: Gpu,
        split: Split,
        chunk_tokens: int | None,
        max_num_seqs: int | None = None,
    ) -> Reserve | None:
        """Non-KV memory the engine keeps inside its fraction (None: outside it)."""
        return None

    def default_max_num_seqs(self, gpu: Gpu) -> int | None:
        """The engine's own cap on running requests for this GPU (None: no cap to trim)."""
        return None

    def decode_graph_bs(self, gpu: Gpu, split: Split) -> int | None:
        """The decode CUDA-graph batch the engine captures by default (None: not in its
        memory accounting)."""
        return None

    @abstractmethod
    def default_prefill_chunk(self, gpu: Gpu, split: Split) -> int:
        """Prompt tokens one step may prefill when the launch sets none (the speed model's
        chunk budget)."""

    # --- KV cache ---------------------------------------------------------------------------

    @abstractmethod
    def kv_dtype(self, requested: str, cfg: ModelConfig, gpu_arch: str | None) -> KvDtype:
        """What the layers store for ``--kv-cache-dtype requested`` on ``gpu_arch``."""

    @abstractmethod
    def kv_dtype_value(self, requested: str, stored: str) -> str:
        """The ``--kv-cache-dtype`` value to write for a request that stores ``stored``."""

    @property
    def kv_cache_dtypes(self) -> frozenset[str]:
        return self.registries.kv_cache_dtypes

    # the --kv-cache-dtype spellings the engine accepts and the dtype each stores
    kv_aliases: Mapping[str, str]

    def ssm_dtype(self, cfg: ModelConfig, vllm_rule: str) -> str:
        """The recurrent (SSM) state dtype, given vLLM's own rule's answer."""
        return vllm_rule

    aligns_hybrid_pages: bool = False  # attention blocks padded to the linear-state page
    token_paged: bool = False  # pages of one token (no block rounding)

    dsa_auto_kv_dtypes: Mapping[str, str] | None = None  # DSA auto dtype per generation

    # --- what it prints ---------------------------------------------------------------------

    @property
    def measure(self) -> MeasureVocab:
        """Its startup-log lines, launch-argument names and /metrics names (data/measure.yaml)."""
        return measure_vocab(self.name)

    # --- parsers ----------------------------------------------------------------------------

    @property
    def tool_call_parsers(self) -> frozenset[str]:
        return self.registries.tool_call_parsers

    @property
    def reasoning_parsers(self) -> frozenset[str]:
        return self.registries.reasoning_parsers

    def check(self) -> None:
        """Load everything once (a bad table or settings row fails here, at start)."""
        _ = self._settings


def check_engine(engine: str) -> Engine:
    if engine not in ENGINES:
        raise InputError(
            "engine",
            f"one of {', '.join(ENGINES)}",
            expects=E.ONE_OF(choices=tuple(Name(e) for e in ENGINES)),
        )
    return engine
