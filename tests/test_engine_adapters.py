"""One adapter per engine: everything vLLM and SGLang do differently is answered by
engine.engines; the rest of the engine never branches on the engine's name, every flag it spells
comes from the one settings table over the pinned flag tables, and the two adapters store the same
KV dtype for a checkpoint unless a sourced rule says they differ."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.engines import ENGINES, SETTINGS, adapter, other
from engine.engines.kvstore import is_dsa
from engine.errors import InputError
from engine.model.config import ModelConfig, normalize
from engine.model.loader import MODELS_DIR, catalog_names, load_catalog
from engine.rules import DATA_DIR, engine_rules

ENGINE_DIR = Path(__file__).resolve().parents[1] / "engine"
BRANCH = re.compile(r"""\bengine\s*[!=]=\s*["']""")


def test_no_module_outside_the_adapters_asks_which_engine_it_is() -> None:
    found = []
    for path in sorted(ENGINE_DIR.rglob("*.py")):
        if path.parent.name == "engines":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if BRANCH.search(line):
                found.append(f"{path.relative_to(ENGINE_DIR.parent)}:{n}: {line.strip()}")
    assert found == []


def test_every_setting_is_a_dest_of_the_pinned_table_and_spelled_as_the_table_spells_it() -> None:
    table = yaml.safe_load((DATA_DIR / "engines" / "settings.yaml").read_text())["settings"]
    assert set(table) == set(SETTINGS)
    for engine in ENGINES:
        eng = adapter(engine)
        rows = json.loads(Path(eng.table_path("flags")).read_text())
        by_dest = {r["dest"]: r["flag"] for r in rows if not r["positional"]}
        for setting, row in table.items():
            dest = row[engine]
            assert eng.has(setting) == (dest is not None), (engine, setting)
            if dest is not None:
                assert eng.flag(setting) == by_dest[dest], (engine, setting)
                info = eng.lookup(eng.flag(setting))
                # only the legacy attention-DP switch is read (from inherited commands), never set
                legacy = setting == "attention_dp_legacy"
                assert info is not None and info.deprecated == legacy, (engine, setting)


def test_the_same_setting_has_each_engines_own_spelling() -> None:
    v, s = adapter("vllm"), adapter("sglang")
    assert (v.flag("tp"), s.flag("tp")) == ("--tensor-parallel-size", "--tp-size")
    assert (v.flag("memory_fraction"), s.flag("memory_fraction")) == (
        "--gpu-memory-utilization",
        "--mem-fraction-static",
    )
    assert s.flag("attention_dp") == "--attn-dp-size" and not v.has("attention_dp")
    assert v.flag("decode_graph_max_bs") == "--max-cudagraph-capture-size"
    assert s.flag("decode_graph_max_bs") == "--cuda-graph-max-bs-decode"
    assert other("vllm") == "sglang" and other("sglang") == "vllm"


def test_an_unknown_engine_is_refused_with_the_field_named() -> None:
    with pytest.raises(InputError) as err:
        adapter("tgi")
    assert err.value.field == "engine"


def test_each_parser_reads_the_command_line_its_own_way() -> None:
    v, s = adapter("vllm"), adapter("sglang")
    assert v.lookup("--max_model_len") is not None  # FlexibleArgumentParser: _ -> -
    assert v.lookup("--speculative-config.method") is not None
    assert v.lookup("-O3") is not None and v.lookup("-O3").flag == "--optimization-level"  # type: ignore[union-attr]
    assert s.lookup("--tp") is not None  # argparse allow_abbrev
    assert s.lookup("--max_model_len") is None and v.lookup("--tp") is None


# --- KV storage: one rule where the engines agree, a sourced rule where they do not --------------

MODELOPT_FIXTURES: dict[str, dict[str, Any]] = {
    # hf_quant_config.json's nested form, merged into quantization_config (ModelOpt <= 0.29)
    "nested-fp8-kv": {
        "quant_method": "modelopt",
        "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"},
    },
    "nested-nvfp4-fp8-kv": {
        "quant_method": "modelopt",
        "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16},
    },
    # config.json's flat form (ModelOpt >= 0.31)
    "flat-fp8-kv-scheme": {
        "quant_method": "modelopt",
        "quant_algo": "FP8",
        "kv_cache_scheme": {"dynamic": False, "num_bits": 8, "type": "float"},
    },
    "flat-no-kv": {"quant_method": "modelopt", "quant_algo": "FP8"},
    "dynamic-fp8-kv-scheme": {
        "quant_method": "modelopt",
        "quant_algo": "FP8",
        "kv_cache_scheme": {"dynamic": True, "num_bits": 8, "type": "float"},
    },
}


def _modelopt(name: str) -> ModelConfig:
    raw = json.loads((MODELS_DIR / "meta-llama__Llama-3.3-70B-Instruct.json").read_text())
    raw["quantization_config"] = MODELOPT_FIXTURES[name]
    return normalize(raw)


def _configs() -> list[tuple[str, ModelConfig]]:
    out = [(n, load_catalog(n).config) for n in catalog_names()]
    return out + [(f"modelopt:{k}", _modelopt(k)) for k in MODELOPT_FIXTURES]


def _differs_by_rule(cfg: ModelConfig) -> set[str]:
    """The data/engine_rules.yaml kv_dtype_differences rules that apply to ``cfg``."""
    qc = cfg.quantization_config or {}
    scheme = qc.get("kv_cache_scheme")
    applies = {
        "dsa": is_dsa(cfg),
        "compressed_mla": cfg.model_type in engine_rules().compressed_mla_packed.model_types,
        "dynamic_fp8_kv_scheme": isinstance(scheme, dict) and scheme.get("dynamic") is True,
    }
    rules = {r.when for r in engine_rules().kv_dtype_differences.rules}
    assert set(applies) == rules  # every rule in data is one this test knows how to apply
    return {k for k, on in applies.items() if on}


def _storage(name: str) -> str:
    return engine_rules().kv_dtype_differences.same_storage.values.get(name, name)


@pytest.mark.parametrize("requested", ["auto", "fp8", "bf16"])
@pytest.mark.parametrize("arch", ["sm_90", "sm_100"])
def test_both_adapters_store_the_same_kv_dtype_unless_a_sourced_rule_says_otherwise(
    requested: str, arch: str
) -> None:
    disagree = []
    for name, cfg in _configs():
        if _differs_by_rule(cfg):
            continue
        v = adapter("vllm").kv_dtype(requested, cfg, arch)
        s = adapter("sglang").kv_dtype(requested, cfg, arch)
        if (_storage(v.stored), v.bytes) != (_storage(s.stored), s.bytes):
            disagree.append((name, v.stored, s.stored))
    assert disagree == []


def test_every_difference_rule_names_its_source_and_is_exercised() -> None:
    rules = engine_rules().kv_dtype_differences.rules
    assert all(r.source.strip() for r in rules)
    hit = set().union(*(_differs_by_rule(cfg) for _, cfg in _configs()))
    assert hit == {r.when for r in rules}


def test_a_nested_modelopt_fp8_kv_config_stores_fp8_e4m3_in_both_engines() -> None:
    # SGLang's ModelOptFp8Config.from_config reads quantization.kv_cache_quant_algo and
    # configure_kv_cache_dtype turns auto into fp8_e4m3 (data/engine_rules.yaml sglang.modelopt_kv)
    cfg = _modelopt("nested-fp8-kv")
    for engine in ENGINES:
        kv = adapter(engine).kv_dtype("auto", cfg, "sm_90")
        assert (kv.stored, kv.bytes) == ("fp8_e4m3", 1), engine
    assert adapter("sglang").kv_dtype("auto", _modelopt("flat-no-kv"), "sm_90").bytes == 2


def test_the_dsa_difference_is_the_documented_one() -> None:
    cfg = load_catalog("deepseek-ai/DeepSeek-V3.2").config
    sg = adapter("sglang")
    auto = engine_rules().sglang.dsa_auto_dtype
    assert sg.kv_dtype("auto", cfg, "sm_90").stored == auto["hopper"]
    assert sg.kv_dtype("auto", cfg, "sm_100").stored == auto["blackwell"]
    assert adapter("vllm").kv_dtype("fp8", cfg, "sm_90").stored == "fp8_ds_mla"


# --- no engine knowledge outside the adapters ---------------------------------------------------


def _pinned_options() -> frozenset[str]:
    """Every option spelling either pinned flag table accepts (aliases included)."""
    out: set[str] = set()
    for path in (DATA_DIR / "engines").glob("*-flags.json"):
        for row in json.loads(path.read_text(encoding="utf-8")):
            out.update(s for s in (row["flag"], *row["aliases"]) if s.startswith("--"))
    return frozenset(out)


def _engine_sources() -> list[tuple[str, ast.Module]]:
    return [
        (str(path.relative_to(ENGINE_DIR.parent)), ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(ENGINE_DIR.rglob("*.py"))
        if path.parent.name != "engines"
    ]


def _options(text: str) -> frozenset[str]:
    return frozenset(text.split())


# String constants outside engine/engines/ spelled like an option of a pinned engine table, and
# why each may stay. Every other engine option is a setting the adapter spells.
_LINT_READS = (
    "the linter's rules read the option of the user's command they check by its canonical "
    "spelling (left: a rule could ask ctx.flag(setting) once each option is a setting)"
)
ALLOWED_OPTION_WORDS: dict[str, tuple[frozenset[str], str]] = {
    "engine/cli.py": (frozenset({"--model"}), "the playbook's own CLI option (lint --model)"),
    "engine/scenario.py": (
        frozenset({"--ep", "--max-num-seqs", "--quantization"}),
        "the playbook's own CLI options (the scenario table's cli column)",
    ),
    "engine/measure/kernels/args.py": (
        frozenset({"--device", "--model"}),
        "the micro-kernels' own CLI options",
    ),
    "engine/present/render.py": (frozenset({"--device"}), "docker run's --device (ROCm devices)"),
    "engine/lint/codes.py": (
        _options(
            "--attn-dp-size --chunked-prefill-size --context-length --data-parallel-size "
            "--disable-radix-cache --dp-size --enable-auto-tool-choice "
            "--enable-expert-parallel --enable-metrics --enable-prefix-caching --ep-size "
            "--gpu-memory-utilization --kv-cache-dtype --max-model-len "
            "--max-num-batched-tokens --model --model-path --quantization --reasoning-parser "
            "--tool-call-parser --trust-remote-code"
        ),
        "the message codes that explain a user's option, one per spelling the catalogs word "
        "(lint.explain.flag.<option>)",
    ),
    "engine/lint/explain.py": (
        _options(
            "--disable-radix-cache --enable-prefix-caching --mem-fraction-static "
            "--speculative-algorithm --speculative-config --tensor-parallel-size --tp-size"
        ),
        _LINT_READS,
    ),
    "engine/lint/lint_context.py": (frozenset({"--config"}), _LINT_READS),
    "engine/lint/rules_shell.py": (frozenset({"--config"}), _LINT_READS),
    "engine/lint/rules_flags.py": (frozenset({"--dtype", "--kv-cache-dtype"}), _LINT_READS),
    "engine/lint/rules_hardware.py": (
        frozenset({"--attention-backend", "--kv-cache-dtype", "--quantization"}),
        _LINT_READS,
    ),
    "engine/lint/rules_model.py": (
        _options(
            "--attention-backend --block-size --decode-attention-backend --dsa-decode-backend "
            "--dsa-prefill-backend --enable-auto-tool-choice --kv-cache-dtype "
            "--prefill-attention-backend --reasoning-parser --tool-call-parser"
        ),
        _LINT_READS,
    ),
}


def test_no_engine_option_is_spelled_outside_the_adapters() -> None:
    """A string constant (f-string parts included) whose first word is an option of either
    pinned table is an engine flag written by hand; outside engine/engines/ only the ones
    listed above, each with its reason, may stay (and each listed one is still there)."""
    options = _pinned_options()
    found: dict[str, set[str]] = {}
    for path, tree in _engine_sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                word = node.value.split("=", 1)[0].split(" ", 1)[0]
                if word in options:
                    found.setdefault(path, set()).add(word)
    unexplained = {
        path: sorted(words - ALLOWED_OPTION_WORDS.get(path, (frozenset(), ""))[0])
        for path, words in found.items()
    }
    assert {p: w for p, w in unexplained.items() if w} == {}
    stale = {p: sorted(a - found.get(p, set())) for p, (a, _) in ALLOWED_OPTION_WORDS.items()}
    assert {p: w for p, w in stale.items() if w} == {}


# Dict literals keyed by an engine's name outside engine/engines/, and why each may stay.
ALLOWED_ENGINE_KEYED = {
    "engine/diagnose.py": 'the diagnose command\'s JSON keeps its "sglang" object (README)',
}


def test_no_dict_outside_the_adapters_is_keyed_by_an_engines_name() -> None:
    """What differs per engine is the adapter's (or data keyed by engine, read through it)."""
    found = {
        path
        for path, tree in _engine_sources()
        for node in ast.walk(tree)
        if isinstance(node, ast.Dict)
        and any(isinstance(k, ast.Constant) and k.value in ENGINES for k in node.keys)
    }
    assert found == set(ALLOWED_ENGINE_KEYED)


def test_each_engines_label_is_said_once_by_its_adapter() -> None:
    """The pages, reports and messages name an engine by its adapter's label; no module outside
    the adapters writes one as a value of its own."""
    labels = {adapter(e).label for e in ENGINES}
    assert labels == {"vLLM", "SGLang"}
    written = [
        (path, node.lineno)
        for path, tree in _engine_sources()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in labels
    ]
    assert written == []
