"""Every flag of the command with what the engine's help says it does and why it is there (the
Study's plan's reason where the plan sets the same value), and the flags the plan leaves to the
engine that the command leaves out too."""

from __future__ import annotations

from engine.engines import adapter
from engine.launch.plan import PARALLEL_FLAGS
from engine.lint.context import Ctx
from engine.lint.report import FlagExplanation
from engine.software.tables import flag_table

# Why a flag is typically in a command, by the engine's own spelling; {value} is the value.
_REASONS: dict[str, str] = {
    "--model": "The checkpoint to serve ({value}).",
    "--model-path": "The checkpoint to serve ({value}).",
    "--quantization": "Tells the engine how the checkpoint's weights are quantized ({value}); it "
    "must match the checkpoint, it converts nothing.",
    "--tool-call-parser": "Turns the model's own tool-call text ({value}) into OpenAI "
    "tool_calls; without it tool calls arrive as plain text. Names differ per family.",
    "--reasoning-parser": "Moves the thinking block into reasoning_content ({value}); without it "
    "the thinking stays in the answer.",
    "--trust-remote-code": "Runs Python modelling / tokenizer code from the model repository; "
    "read it first.",
    "--chunked-prefill-size": "Prefill runs {value} tokens at a time, bounding activation memory "
    "and letting decode steps interleave with long prompts.",
    "--max-num-batched-tokens": "At most {value} tokens per scheduler step (vLLM's prefill chunk).",
    "--gpu-memory-utilization": "Share of each GPU vLLM may use in all ({value}); the KV cache "
    "gets what is left after weights and activations.",
    "--max-model-len": "Longest request (prompt + output): {value} tokens.",
    "--context-length": "Longest request (prompt + output): {value} tokens.",
    "--kv-cache-dtype": "KV cache precision ({value}); fp8 halves the bytes per token.",
    "--enable-expert-parallel": "MoE experts stay whole, a set per GPU; tokens travel to them "
    "(all-to-all).",
    "--ep-size": "Expert parallelism over {value} GPUs: experts whole per GPU, tokens travel.",
    "--data-parallel-size": "{value} data-parallel ranks (replicas, or attention-DP with MoE).",
    "--dp-size": "{value} data-parallel groups (replicas, or attention-DP groups).",
    "--attn-dp-size": "{value} attention-DP groups inside the TP group: each keeps its own "
    "requests' KV.",
    "--enable-auto-tool-choice": "Lets the model decide to call a tool (tool_choice='auto').",
    "--enable-prefix-caching": "Reuses the KV of prompt prefixes already seen.",
    "--disable-radix-cache": "Turns SGLang's prefix cache off.",
    "--enable-metrics": "Exposes /metrics (token_usage) for measuring real KV use.",
}


# What a command cannot say: the workload. The plan's reasons for these read the Study's
# default users and prefix overlap, so the linter does not repeat them.
_WORKLOAD_FLAGS = frozenset(
    {
        "--speculative-config",
        "--speculative-algorithm",
        "--enable-prefix-caching",
        "--disable-radix-cache",
    }
)


def _reason(ctx: Ctx, canonical: str, value: str | None) -> str:
    st = ctx.study or ctx.base
    plan = st.plan if st is not None else None
    if plan is not None and canonical not in PARALLEL_FLAGS | _WORKLOAD_FLAGS:
        for f in plan.flags:
            if f.flag == canonical and (f.value == value or (f.value is None and value is None)):
                return f.reason
    if canonical in ("--tensor-parallel-size", "--tp-size"):
        text = (
            f"Splits every layer over {value} GPUs (one team per request); it must divide the "
            "attention heads."
        )
        if st is not None and st.family.attention_family in ("MLA", "DSA"):
            text += " With MLA / DSA the latent KV is copied on every TP rank."
        return text
    if canonical == "--mem-fraction-static":
        number = None
        if value is not None and len(value) <= 32:
            try:
                number = float(value)
            except ValueError:
                number = None
        left = f"; {1 - number:.0%} stays free" if number is not None and 0 < number <= 1 else ""
        return (
            f"Share of each GPU for weights + the KV pool ({value}){left} for prefill "
            "activations, CUDA graphs and NCCL buffers."
        )
    template = _REASONS.get(canonical)
    return "" if template is None else template.format(value=value)


def explanations(ctx: Ctx) -> tuple[FlagExplanation, ...]:
    out: list[FlagExplanation] = []
    if adapter(ctx.engine).model_positional and ctx.parsed.positionals:
        _, word = ctx.parsed.positionals[0]
        out.append(
            FlagExplanation("MODEL", "model_tag", word, "The model to serve (positional).", "")
        )
    for arg in ctx.parsed.args:
        if arg.info is None or arg.canonical is None:
            out.append(
                FlagExplanation(
                    arg.written, "", arg.value, f"Not a flag of {ctx.label}.", "See the findings."
                )
            )
            continue
        meaning = arg.info.help.strip().split("\n")[0]
        if arg.canonical != arg.written and arg.abbreviation_of is None:
            meaning = f"(another spelling of {arg.canonical}) {meaning}"
        out.append(
            FlagExplanation(
                arg.written,
                arg.canonical,
                arg.value,
                meaning,
                _reason(ctx, arg.canonical, arg.value),
            )
        )
    return tuple(out)


def left_to_engine(ctx: Ctx) -> tuple[FlagExplanation, ...]:
    """What the plan deliberately leaves to the engine and the command leaves out as well."""
    st = ctx.study or ctx.base
    if st is None or st.plan is None:
        return ()
    table = flag_table(ctx.engine)
    set_here = {a.canonical for a in ctx.parsed.args if a.canonical is not None}
    out: list[FlagExplanation] = []
    for x in st.plan.left_to_engine:
        info = table.get(x.flag)
        if info is None or info.flag in set_here or info.flag in _WORKLOAD_FLAGS:
            continue
        out.append(
            FlagExplanation(x.flag, info.flag, None, info.help.strip().split("\n")[0], x.reason)
        )
    return tuple(out)
