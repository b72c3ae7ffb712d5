"""Regenerate data/engines/<engine>-<version>-{flags,registries}.json from an installed engine.

Run it with the Python of a virtual environment that has the engine installed (it imports the
engine; nothing else from this project is needed). No GPU is required.

    python -m venv /tmp/vllm && /tmp/vllm/bin/pip install vllm==<version>
    VLLM_TARGET_DEVICE=cpu HF_HUB_OFFLINE=1 /tmp/vllm/bin/python tools/extract_engine_flags.py vllm

    python -m venv /tmp/sglang && /tmp/sglang/bin/pip install "sglang==<version>"
    HF_HUB_OFFLINE=1 /tmp/sglang/bin/python tools/extract_engine_flags.py sglang

Then delete the previous version's two files for that engine (the loaders use the newest version
present), update data/engines/SOURCES.md, and run `make test`: tests/test_software.py checks that
every parser name and --quantization value in data/software.yaml still exists in the new tables.

What it records, per engine:
  flags.json       every option of the parser the engine itself builds (`vllm serve`,
                   `python -m sglang.launch_server`): flag, aliases, choices, default, first
                   sentence of help, dest, group, action class, type, nargs, deprecated.
                   vLLM `Literal[...] | str` options keep their open value list in `choices`
                   with `choices_source` = "metavar(...)"; registry-backed options get
                   `registry_values`.
  registries.json  tool-call and reasoning parser names from the live registries, quantization
                   methods, KV-cache dtypes, attention backends, and (new in this script)
                   `model_architectures`, the model classes the engine implements natively.

Adapted from the engine-gt extraction scripts (shared/engine-gt/scripts/), which produced
the bundled vLLM 0.33.0 and SGLang 0.5.23 tables. Not run by CI.
"""

from __future__ import annotations

import argparse
import enum
import json
import os
import re
import sys
import typing
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "data" / "engines"

# Flags whose parser view is recorded in registries.json for a quick cross-check.
VLLM_VIEW_FLAGS = (
    "--kv-cache-dtype",
    "--quantization",
    "--attention-backend",
    "--tool-call-parser",
    "--reasoning-parser",
    "--mamba-cache-dtype",
    "--mamba-ssm-cache-dtype",
    "--block-size",
    "--dtype",
)
SGLANG_VIEW_FLAGS = (
    "--kv-cache-dtype",
    "--quantization",
    "--attention-backend",
    "--prefill-attention-backend",
    "--decode-attention-backend",
    "--dsa-prefill-backend",
    "--dsa-decode-backend",
    "--tool-call-parser",
    "--reasoning-parser",
    "--page-size",
    "--dtype",
    "--mamba-ssm-dtype",
)


def jsonable(value: Any) -> Any:
    """Argparse defaults and choices as JSON (enums by value, sets sorted, SUPPRESS marked)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return repr(value) if value != value or value in (float("inf"), float("-inf")) else value
    if isinstance(value, enum.Enum):
        return value.value if isinstance(value.value, str | int) else value.name
    if isinstance(value, set | frozenset):
        return sorted((jsonable(v) for v in value), key=str)
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if value is argparse.SUPPRESS:
        return "==SUPPRESS=="
    return repr(value)


def first_sentence(text: Any) -> str | None:
    if not text or text is argparse.SUPPRESS:
        return None
    flat = " ".join(str(text).split())
    m = re.search(r"(?<=[.!?])\s(?=[A-Z`\"'(\[-])", flat)
    return flat[: m.start()] if m else flat


def dump_parser(parser: argparse.ArgumentParser, engine: str) -> list[dict[str, Any]]:
    """One row per argparse action, in parser order."""
    group_of = {id(a): g.title for g in parser._action_groups for a in g._group_actions}
    vllm_deprecated: set[Any] = getattr(parser, "_deprecated", set())
    rows: list[dict[str, Any]] = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        opts = list(action.option_strings)
        long_opts = [o for o in opts if o.startswith("--")]
        flag = (long_opts[0] if long_opts else opts[0]) if opts else action.dest
        row: dict[str, Any] = {
            "flag": flag,
            "aliases": [o for o in opts if o != flag],
            # vLLM keeps argparse's order; SGLang's choice sets are sorted by jsonable().
            "choices": None
            if action.choices is None
            else jsonable(list(action.choices) if engine == "vllm" else action.choices),
        }
        if engine == "vllm":
            # Literal[...] | str options list their known values in metavar and accept any string.
            source = "argparse" if action.choices is not None else None
            metavar = action.metavar
            if action.choices is None and isinstance(metavar, list | tuple):
                row["choices"] = list(metavar)
                source = "metavar(open: other strings accepted)"
            elif action.choices is None and isinstance(metavar, str) and metavar.startswith("{"):
                row["choices"] = metavar[1 : metavar.index("}")].split(",")
                source = "metavar(" + metavar[metavar.index("}") + 1 :].strip() + ")"
            row["choices_source"] = source
        row.update(
            {
                "default": jsonable(action.default),
                "help": first_sentence(action.help),
                "dest": action.dest,
                "group": group_of.get(id(action)),
                "action": type(action).__name__,
                "type": getattr(action.type, "__name__", repr(action.type))
                if action.type
                else None,
                "nargs": jsonable(action.nargs),
                "deprecated": (action in vllm_deprecated)
                if engine == "vllm"
                else "Deprecated" in type(action).__name__
                or "deprecated" in str(action.help or "").lower()[:200],
                "positional": not opts,
            }
        )
        rows.append(row)
    return rows


def parser_view(flags: list[dict[str, Any]], names: tuple[str, ...]) -> dict[str, Any]:
    by_flag = {r["flag"]: r for r in flags}
    return {
        f: {k: by_flag[f].get(k) for k in ("choices", "default", "type")} if f in by_flag else None
        for f in names
    }


def extract_vllm() -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    # vllm/engine/arg_utils.py fills option help only when "--help" is in argv at import time.
    sys.argv = [sys.argv[0], "--help"]
    import vllm
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    top = FlexibleArgumentParser(description="vLLM CLI")
    sub = top.add_subparsers(required=False, dest="subparser")
    flags = dump_parser(ServeSubcommand().subparser_init(sub), "vllm")

    from vllm.config import cache as cache_mod
    from vllm.model_executor.layers.quantization import QUANTIZATION_METHODS
    from vllm.reasoning import ReasoningParserManager
    from vllm.tool_parsers import ToolParserManager
    from vllm.v1.attention.backends.registry import (
        AttentionBackendEnum,
        MambaAttentionBackendEnum,
    )

    def registered(manager: Any, attrs: tuple[str, ...]) -> list[str]:
        names: set[str] = set()
        for attr in attrs:
            table = getattr(manager, attr, None)
            if isinstance(table, dict):
                names |= set(table)
        if hasattr(manager, "list_registered"):
            names |= set(manager.list_registered())
        return sorted(names)

    reg: dict[str, Any] = {
        "vllm_version": vllm.__version__,
        "tool_call_parsers": registered(ToolParserManager, ("tool_parsers", "lazy_parsers")),
        "reasoning_parsers": registered(
            ReasoningParserManager, ("reasoning_parsers", "lazy_parsers")
        ),
        "kv_cache_dtype_literal": list(typing.get_args(cache_mod.CacheDType)),
        "kv_cache_dtypes_registered": list(cache_mod.KV_CACHE_DTYPES),
        "mamba_dtype_literal": list(typing.get_args(cache_mod.MambaDType)),
        "quantization_methods": list(QUANTIZATION_METHODS),
        "attention_backends": {m.name: m.value for m in AttentionBackendEnum},
        "mamba_attention_backends": {m.name: m.value for m in MambaAttentionBackendEnum},
    }
    try:
        from vllm.model_executor.models import ModelRegistry

        reg["model_architectures"] = sorted(ModelRegistry.get_supported_archs())
    except Exception as err:  # older/newer layouts: record why instead of failing
        reg["model_architectures_error"] = f"{type(err).__name__}: {err}"
    reg["parser_view"] = parser_view(flags, VLLM_VIEW_FLAGS)

    registry_values = {
        "--quantization": reg["quantization_methods"],
        "--attention-backend": list(reg["attention_backends"]),
        "--tool-call-parser": reg["tool_call_parsers"],
        "--reasoning-parser": reg["reasoning_parsers"],
        "--kv-cache-dtype": reg["kv_cache_dtypes_registered"],
    }
    for row in flags:
        if row["flag"] in registry_values:
            row["registry_values"] = registry_values[row["flag"]]
    return vllm.__version__, flags, reg


def extract_sglang() -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
    import sglang
    import sglang.srt.arg_groups.choices as choices
    from sglang.srt.server_args import ServerArgs

    core = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(core)
    core_flags = {r["flag"] for r in dump_parser(core, "sglang")}
    # launch_server.py loads plugins before building its parser; they may add options.
    from sglang.srt.plugins import load_plugins

    load_plugins()
    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    flags = dump_parser(parser, "sglang")
    for row in flags:
        row["source"] = "ServerArgs.add_cli_args" if row["flag"] in core_flags else "plugin"

    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.function_call.parser_names import TOOL_CALL_PARSER_NAMES
    from sglang.srt.parser.reasoning_parser import ReasoningParser
    from sglang.srt.parser.reasoning_parser_names import REASONING_PARSER_NAMES

    tool_live = list(FunctionCallParser.ToolCallParserEnum)
    reasoning_live = list(ReasoningParser.DetectorMap)
    reg: dict[str, Any] = {
        "sglang_version": sglang.__version__,
        "tool_call_parsers_live": tool_live,
        "reasoning_parsers_live": reasoning_live,
        "tool_call_parser_names_static": list(TOOL_CALL_PARSER_NAMES),
        "reasoning_parser_names_static": list(REASONING_PARSER_NAMES),
        "tool_call_static_equals_live": sorted(tool_live) == sorted(TOOL_CALL_PARSER_NAMES),
        "reasoning_static_equals_live": sorted(reasoning_live) == sorted(REASONING_PARSER_NAMES),
        "choices_module": {
            k: jsonable(v)
            for k, v in vars(choices).items()
            if k.isupper() and isinstance(v, list | tuple | set | frozenset | dict)
        },
    }
    try:
        from sglang.srt.models.registry import ModelRegistry

        reg["model_architectures"] = sorted(ModelRegistry.get_supported_archs())
    except Exception as err:  # registry layout differs between releases
        reg["model_architectures_error"] = f"{type(err).__name__}: {err}"
    reg["parser_view"] = parser_view(flags, SGLANG_VIEW_FLAGS)
    return sglang.__version__, flags, reg


def write(out_dir: Path, engine: str, version: str, flags: list[Any], reg: dict[str, Any]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for kind, payload in (("flags", flags), ("registries", reg)):
        path = out_dir / f"{engine}-{version}-{kind}.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
        tmp.replace(path)
        print(f"wrote {path}")
    stale = sorted(
        p.name
        for p in out_dir.glob(f"{engine}-*-flags.json")
        if p.name != f"{engine}-{version}-flags.json"
    )
    if stale:
        print(f"older tables still present (remove them and update SOURCES.md): {stale}")


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    cli.add_argument("engine", choices=("vllm", "sglang"))
    cli.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    args = cli.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    extract = extract_vllm if args.engine == "vllm" else extract_sglang
    version, flags, reg = extract()
    write(args.out, args.engine, version, flags, reg)
    tools = reg.get("tool_call_parsers") or reg.get("tool_call_parsers_live") or []
    print(f"{args.engine} {version}: {len(flags)} options, {len(tools)} tool-call parsers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
