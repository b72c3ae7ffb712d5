"""Symptom → ranked causes, for the model and GPU at hand.

Each symptom has a handful of known causes. Every cause scores its own likelihood from the model
facts and the GPU (a DSA model on an RTX 4090 has a different first suspect than a dense GQA
model on the same card) and says which facts moved it; ``troubleshoot`` returns them best first,
each with the mechanism, how to confirm it, the fixes and the source of the claim.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.errors import InputError
from engine.lint import ModelFacts, dsa_kernel_path

if TYPE_CHECKING:
    from engine.hardware.gpus import Gpu

PLAYBOOK = "Playbook text (../shared/seeds/004)"
FACTS = "Fact base (../shared/reference/facts.md)"
ENGINE_BENCH = "Playbook background text (../shared/seeds/000, §3)"


@dataclass(frozen=True)
class Symptom:
    id: str
    label: str


SYMPTOMS: tuple[Symptom, ...] = (
    Symptom("no-tool-calls", "The model never calls tools"),
    Symptom("thinking-leaks", "Thinking text leaks into the answers"),
    Symptom("memory-fills-fast", "Memory fills fast / few users fit"),
    Symptom("slow-ttft-shared-prefix", "TTFT is high although prompts share a prefix"),
    Symptom("outputs-change-with-prefix-cache", "Outputs change when the prefix cache is on"),
    Symptom(
        "no-valid-attention-backend",
        "Startup crash: 'No valid attention backend' (Ada / sm_120)",
    ),
    Symptom("moe-one-gpu-busy", "One GPU busy while the others idle (MoE)"),
    Symptom("hybrid-prefix-hits-zero", "Prefix cache hits near 0 % on a hybrid model"),
)


@dataclass(frozen=True)
class Cause:
    id: str
    title: str
    why: str  # the mechanism
    check: str  # how to confirm it on the running system
    fixes: tuple[str, ...]
    score: float  # 0–1: how well it fits this model and GPU
    fit: str  # which facts raised or lowered the score
    source: str


_CauseFn = Callable[[ModelFacts, "Gpu | None"], Cause]


def _arch(gpu: Gpu | None) -> str:
    return "" if gpu is None else gpu.arch


def _gpu_label(gpu: Gpu | None) -> str:
    return "no GPU given" if gpu is None else f"{gpu.name} ({gpu.arch})"


def _block_size(f: ModelFacts) -> str:
    """The model's hybrid attention block, or the usual size when the facts do not have it."""
    block = f.attention_block_tokens
    return (
        f"{block} tokens" if block else "hundreds of tokens, e.g. Qwen3.5-4B: 528; Qwen3-Next: 544"
    )


def _parser_fix(flag: str, vllm: str | None, sglang: str | None, vllm_extra: str = "") -> str:
    v = f"vLLM: `{flag} {vllm or 'NAME'}{vllm_extra}`"
    s = f"SGLang: `{flag} {sglang or 'NAME'}`"
    return f"{v}; {s}" + ("" if vllm and sglang else " (NAME: the parser for this family)")


# --- the model never calls tools ------------------------------------------------------------


def _tool_parser_missing(f: ModelFacts, gpu: Gpu | None) -> Cause:
    score, fit = (
        (0.9, "the model is meant to call tools")
        if f.has_tool_parser_need
        else (0.4, "the facts do not say the model calls tools")
    )
    return Cause(
        "tool-parser-missing",
        "No tool-call parser on the server",
        "The model writes tool calls in its own text format; without the parser the server "
        "returns that text as the answer, so clients see no tool_calls and it looks like the "
        "model 'does not use tools' — easy to mistake for a model-quality problem.",
        "Look for tool-call markup (e.g. <tool_call>) inside message.content.",
        (
            _parser_fix(
                "--tool-call-parser",
                f.tool_call_parser.vllm,
                f.tool_call_parser.sglang,
                " --enable-auto-tool-choice",
            ),
        ),
        score,
        fit,
        f"{PLAYBOOK} ('4. 소프트웨어 버전 확인': missing parser → tools not recognised)",
    )


def _tool_parser_wrong(f: ModelFacts, gpu: Gpu | None) -> Cause:
    known = f.tool_call_parser.vllm or f.tool_call_parser.sglang
    score = 0.6 if f.has_tool_parser_need and known else 0.35
    return Cause(
        "tool-parser-wrong",
        "Tool-call parser of another model family",
        "Parser names follow the model family, not the vendor: GLM-4.5/4.6 use glm45 but "
        "GLM-4.7/5.x use glm47; Qwen3-Coder / Qwen3.5 use qwen3_coder, plain Qwen3 hermes "
        "(vLLM). A neighbouring name parses nothing.",
        "Compare the flag with the family's parser name for this engine version.",
        (_parser_fix("--tool-call-parser", f.tool_call_parser.vllm, f.tool_call_parser.sglang),),
        score,
        "the expected parser name is known" if known else "expected parser name unknown",
        f"{PLAYBOOK} ('파서 이름이 모델 계열마다 다르다'); {FACTS} §3",
    )


def _auto_tool_choice(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "auto-tool-choice-off",
        "vLLM: parser set but --enable-auto-tool-choice missing",
        "vLLM only lets the model decide to call a tool (tool_choice='auto', the default of "
        "most agent frameworks) with --enable-auto-tool-choice; without it such requests are "
        "refused or answered without tools.",
        "Check the vLLM command for --enable-auto-tool-choice.",
        ("vLLM: add `--enable-auto-tool-choice` next to `--tool-call-parser`.",),
        0.5 if f.has_tool_parser_need else 0.3,
        "applies to vLLM deployments only",
        f"{FACTS} §3 (recipe commands pair the two flags)",
    )


def _tool_template(f: ModelFacts, gpu: Gpu | None) -> Cause:
    deepseek = f.architecture.startswith("Deepseek")
    return Cause(
        "tool-chat-template",
        "Chat template does not render the tools",
        "If the chat template ignores the tools field, the model never sees the tool list. "
        "Some families ship a separate tool template (DeepSeek-V3/R1/V3.1: "
        "tool_chat_template_deepseekv3/r1/v31.jinja).",
        "Render one request with the template and look for the tool definitions.",
        ("Pass the family's tool template with `--chat-template`.",),
        0.55 if deepseek else 0.25,
        "DeepSeek family: separate tool template" if deepseek else "template usually built in",
        f"{FACTS} §3 (parser table: DeepSeek rows need --chat-template)",
    )


def _not_tool_model(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "not-a-tool-model",
        "The model was not trained to call tools",
        "A base or plain chat model has no tool-call format to emit; no parser fixes that.",
        "Check the model card for function / tool calling.",
        ("Use the instruct / tool-calling variant of the model.",),
        0.1 if f.has_tool_parser_need else 0.7,
        "the model is meant to call tools"
        if f.has_tool_parser_need
        else "no tool-call format known for this model",
        f"{PLAYBOOK} ('4. 소프트웨어 버전 확인')",
    )


# --- thinking leaks -------------------------------------------------------------------------


def _reasoning_missing(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "reasoning-parser-missing",
        "No reasoning parser on the server",
        "Thinking models write their reasoning between markers (<think>…</think>); the "
        "reasoning parser moves it into reasoning_content. Without it, it stays in the answer.",
        "Look for <think> blocks in message.content; reasoning_content is empty.",
        (_parser_fix("--reasoning-parser", f.reasoning_parser.vllm, f.reasoning_parser.sglang),),
        0.9 if f.has_reasoning_parser_need else 0.4,
        "the model emits thinking text"
        if f.has_reasoning_parser_need
        else "the facts do not mark this as a thinking model",
        f"{PLAYBOOK} ('빠뜨리면 … 사고 토큰이 응답에 섞여 나오게 된다')",
    )


def _reasoning_wrong(f: ModelFacts, gpu: Gpu | None) -> Cause:
    known = f.reasoning_parser.vllm or f.reasoning_parser.sglang
    return Cause(
        "reasoning-parser-wrong",
        "Reasoning parser of another family",
        "Markers differ per family: GLM-5 reuses glm45; DeepSeek-R1 is deepseek_r1 / "
        "deepseek-r1 but V3.1+ is deepseek_v3 / deepseek-v3; Qwen3 thinking-only checkpoints "
        "use SGLang qwen3-thinking. A parser looking for other markers passes everything "
        "through.",
        "Compare the flag with the family's reasoning parser for this engine.",
        (_parser_fix("--reasoning-parser", f.reasoning_parser.vllm, f.reasoning_parser.sglang),),
        0.55 if known and f.has_reasoning_parser_need else 0.3,
        "expected parser name known" if known else "expected parser name unknown",
        f"{FACTS} §3",
    )


def _thinking_toggle(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "thinking-mode-toggle",
        "Hybrid-thinking model switched by the request",
        "Some models think only when the chat template is told to (DeepSeek-V3.1: "
        "chat_template_kwargs={'thinking': true}); mixing modes across clients gives answers "
        "with and without a parsed thinking block.",
        "Compare the chat_template_kwargs of a leaking request and a clean one.",
        ("Set the thinking switch the same way in every client, or per route.",),
        0.3,
        "generic",
        f"{FACTS} §3 (DeepSeek-V3.1 row)",
    )


def _client_concat(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "client-shows-reasoning",
        "The client prints reasoning_content with the answer",
        "With the parser on, the server separates the two; a UI that concatenates both "
        "streams shows the thinking anyway.",
        "Call the API directly: is message.content clean?",
        ("Render reasoning_content separately (or hide it) in the client.",),
        0.2,
        "generic",
        "Serving Playbook rule (OpenAI-compatible responses carry reasoning_content apart)",
    )


# --- memory fills fast ----------------------------------------------------------------------


def _mem_moe_no_ep(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "moe-without-ep",
        "MoE served without expert parallelism",
        "Without EP the experts are sliced over every TP rank or, with data parallelism, "
        "copied onto every DP rank: expert weights then take DP× the memory and the KV cache "
        "gets what is left — the playbook's 'concurrency drops to half or less'.",
        "Compare weight memory per GPU in the startup log with total expert bytes / GPUs.",
        (
            "vLLM: `--enable-expert-parallel`",
            "SGLang 0.5.23: `--ep-size N` (not `--enable-moe-ep`, which does not exist)",
        ),
        0.85 if f.moe else 0.02,
        f"MoE with {f.num_experts or 'many'} experts" if f.moe else "dense model: no experts",
        f"{PLAYBOOK} ('남이 만든 설정을 넘겨받아 운영', 'MoE와 전문가 병렬')",
    )


def _mem_mla_replicated(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "mla-latent-replicated",
        "MLA latent KV replicated on every TP rank",
        "The compressed latent does not split by head, so with TP=8 each of the 8 GPUs keeps "
        "the whole cache: the compression saved is spent again on copies.",
        "KV bytes per token per GPU (from /metrics or the startup log) stay the same as TP grows.",
        (
            "At high concurrency use DP-attention: SGLang `--attn-dp-size N` with `--tp-size N`; "
            "vLLM `--data-parallel-size N --enable-expert-parallel`.",
            "At low concurrency keep TP+EP (it measured 52 % ahead at 64–128 requests).",
        ),
        0.8 if f.is_mla else 0.03,
        f"{f.attention_family}: latent KV" if f.is_mla else "no latent KV",
        f"{PLAYBOOK} ('MLA 서빙의 난제'); vLLM MLAAttentionSpec max_tp_shards=1",
    )


def _mem_kv_per_token(f: ModelFacts, gpu: Gpu | None) -> Cause:
    score = {"MHA": 0.8, "GQA": 0.5, "MQA": 0.2}.get(f.attention_family, 0.2)
    fp8 = gpu is None or gpu.fp8
    fix = (
        "FP8 KV cache (`--kv-cache-dtype fp8` / `fp8_e4m3`) halves bytes per token"
        if fp8
        else f"FP8 KV on {_gpu_label(gpu)} only halves storage (no FP8 math): still worth it "
        "for capacity"
    )
    return Cause(
        "kv-per-token-large",
        "Every token's KV is large",
        "KV = 2 × layers × KV heads × head dim × bytes per token. The playbook's example: a "
        "27B-class MHA model in FP8 keeps 384 KB per token, 12.6 GB per 32K-token user — 9 "
        "users in an H200's 114 GB left after weights; its GQA-8 twin fits 36.",
        "Compare the engine's KV bytes per token with the sizing step.",
        (fix, "Cap `--max-model-len` / `--context-length` at what users need."),
        score,
        f"{f.attention_family}: {f.num_kv_heads} KV heads for {f.num_attention_heads} query heads",
        f"{PLAYBOOK} ('KV 캐시가 커지는 이유', 'GQA')",
    )


def _mem_hybrid_state(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "hybrid-state-slots",
        "Linear-attention state slots per request",
        "Hybrid layers keep a constant state per request (for example Qwen3-Next-80B: about "
        "39.5 MB across its 36 GDN layers) and, with prefix caching in align mode, extra "
        "copies per running request; many short requests fill memory with states, not tokens.",
        "SGLang logs 'Mamba Cache is allocated. max_mamba_cache_size: N'; compare N with "
        "the running requests.",
        (
            "SGLang: size `--max-mamba-cache-size` to the concurrency you need.",
            "Keep the state in bf16 where the model allows (`--mamba-ssm-dtype`).",
        ),
        0.7 if f.is_hybrid else 0.02,
        "hybrid linear attention" if f.is_hybrid else "no linear-attention layers",
        f"{FACTS} §5 (hybrid prefix caching); ../shared/engine-gt/vllm-kv-notes.md §5",
    )


def _mem_fraction(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "memory-fraction-low",
        "A conservative memory fraction",
        "--gpu-memory-utilization / --mem-fraction-static set the share for weights + KV; an "
        "inherited 0.80 leaves 20 % idle on a large GPU.",
        "Read the value in the command and the peak memory in nvidia-smi.",
        ("Raise it in steps (0.85 → 0.9) while watching peak memory under load.",),
        0.3,
        "generic",
        f"{PLAYBOOK} (inherited command: '--mem-fraction-static 0.80 — why?')",
    )


def _mem_dsa_hopper(f: ModelFacts, gpu: Gpu | None) -> Cause:
    hopper = _arch(gpu) == "sm_90"
    return Cause(
        "dsa-bf16-kv-on-hopper",
        "DSA keeps a bf16 KV cache on Hopper by design",
        "SGLang picks bfloat16 for DSA on Hopper and fp8_e4m3 only on Blackwell (SM ≥ 10); "
        "the cache is twice the FP8 size. This is the engine's tuned choice — at 1M context, "
        "FP8 KV is close to mandatory on 8×H200.",
        "The startup log shows kv_cache_dtype=bfloat16.",
        (
            "Accept fewer users, move to Blackwell, or (measured) override with fp8_e4m3 "
            "knowing the engine's per-phase choice is lost.",
        ),
        0.55 if f.is_dsa and hopper else (0.2 if f.is_dsa else 0.01),
        f"DSA on {_gpu_label(gpu)}" if f.is_dsa else "not a DSA model",
        f"../shared/engine-gt/sglang-auto-notes.md (_dsa_kv_cache_dtype_default); {PLAYBOOK}",
    )


# --- TTFT under shared prefixes -------------------------------------------------------------


def _ttft_cache_off(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "prefix-cache-off",
        "Prefix caching is off",
        "Both engines reuse a shared prefix's KV by default; an inherited "
        "`--disable-prefix-caching` (older vLLM: `--no-enable-prefix-caching`) / "
        "`--disable-radix-cache` (common in AMD and reproducibility recipes) makes every "
        "request prefill the whole prompt.",
        "vLLM: vllm:prefix_cache_hits stays 0; SGLang: sglang:cache_hit_rate is 0.",
        ("Remove the flag (keep it only for reproducibility runs).",),
        0.55,
        "generic",
        f"{FACTS} §3 recipes (AMD adds --no-enable-prefix-caching), §6 metrics",
    )


def _ttft_routing(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "replicas-without-cache-aware-routing",
        "Replicas behind a round-robin balancer",
        "Each replica has its own prefix cache; spreading requests that share a prefix over N "
        "replicas divides the hit rate by up to N.",
        "Hit rate per replica is much lower than the prompts' real overlap.",
        (
            "Route by prefix: the SGLang router's cache_aware policy, or hash the first "
            "~1,000 prompt tokens at the ingress.",
        ),
        0.6,
        "generic (any deployment with more than one replica)",
        f"{ENGINE_BENCH} §4 (prefix-aware routing)",
    )


def _ttft_engine(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "engine-for-overlap",
        "The engine does not fit the overlap",
        "At ≥ 60 % prefix overlap SGLang's RadixAttention measured 31.2 vs vLLM's 22.4 tok/s "
        "(80 %: 30.5 vs 16.0); block-hash caches miss when prefixes diverge mid-block.",
        "Measure the prompts' prefix overlap.",
        ("At ≥ 60 % overlap run SGLang (`--schedule-policy lpm`).",),
        0.45,
        "generic",
        ENGINE_BENCH,
    )


def _ttft_hybrid_block(f: ModelFacts, gpu: Gpu | None) -> Cause:
    size = _block_size(f)
    return Cause(
        "prefix-shorter-than-block",
        "The shared prefix is shorter than one attention block",
        f"Hybrid models get an attention block sized to the linear state page ({size}); only "
        "full blocks are cached, so a shorter shared prefix is never reused.",
        "vLLM logs 'Setting attention block size to N tokens'; compare N with the prefix.",
        ("Make the shared prefix at least one block long, or accept recomputation.",),
        0.75 if f.is_hybrid else 0.05,
        "hybrid model: inflated block size" if f.is_hybrid else "not a hybrid model",
        f"{FACTS} §5 (vLLM issue #40696: 'Setting attention block size to 528 tokens')",
    )


def _ttft_page_size(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "full-pages-only",
        "Only full pages are matched",
        "Prefix caches match whole pages: in SGLang a 32-token prompt with page size 64 never "
        "hits; DSA models run with page 64 (× index_kpool in SGLang).",
        "Compare the shared prefix length with the engine's page / block size.",
        ("Keep shared prefixes well above one page; do not raise the page size by hand.",),
        0.5 if f.is_dsa else 0.3,
        "DSA: large pages" if f.is_dsa else "generic",
        f"{FACTS} §2c; ../shared/engine-gt/sglang-auto-notes.md (DSA page size)",
    )


def _ttft_evicted(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "prefix-evicted",
        "Prefixes are evicted before they are reused",
        "When the KV cache is nearly full the oldest prefixes go first; a shared prompt that "
        "returns after the pool turned over is recomputed.",
        "KV usage near 100 % together with falling hit rate.",
        (
            "Give the cache more memory, fewer max tokens per request, or offload to CPU "
            "(LMCache / --kv-offloading-backend).",
        ),
        0.35,
        "generic",
        f"{PLAYBOOK} (LMCache tier); {FACTS} §5",
    )


# --- outputs change with the prefix cache on ------------------------------------------------


def _out_hybrid(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "hybrid-not-bit-identical",
        "Restored linear-attention state is not bit-identical",
        "The GDN state update is a sequential sum that kernels split into chunks; the chunking "
        "depends on the batch, so a state restored from cache and one recomputed differ in the "
        "last bits, and a token on a probability boundary can flip. Quality is unchanged; "
        "token-level reproducibility is not guaranteed (GDN has no batch-invariant mode).",
        "Rerun with the cache off: the differences disappear.",
        (
            "Evaluation and regression runs: turn the cache off (vLLM "
            "`--disable-prefix-caching`, SGLang `--disable-radix-cache`).",
            "Production: accept it; scores measure the same.",
        ),
        0.9 if f.is_hybrid else 0.05,
        "hybrid linear attention" if f.is_hybrid else "standard attention is bit-identical",
        f"{PLAYBOOK} ('비트 단위로 같지 않는 문제')",
    )


def _out_batch(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "batch-nondeterminism",
        "Batch composition changes the arithmetic",
        "Any model's kernels add in an order that depends on what else is in the batch; a "
        "cache hit changes how much of the prompt is computed and with whom.",
        "The same prompt alone vs under load gives different tokens even without the cache.",
        (
            "SGLang: `--enable-deterministic-inference` (batch-invariant ops), at a throughput "
            "cost; vLLM: its batch-invariant mode.",
        ),
        0.4 if f.is_hybrid else 0.6,
        "secondary on hybrid models" if f.is_hybrid else "first suspect for standard attention",
        f"{PLAYBOOK} (batch-invariant); "
        "sglang-0.5.23-flags.json (--enable-deterministic-inference)",
    )


def _out_sampling(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "sampling-not-seeded",
        "Sampling without a fixed seed",
        "With temperature > 0 every run samples anew; the cache is a coincidence.",
        "Compare two cache-off runs of the same request.",
        ("Use temperature 0 or a fixed seed for comparisons.",),
        0.3,
        "generic",
        "Serving Playbook rule",
    )


# --- startup: no valid attention backend ----------------------------------------------------


def _crash_dsa(f: ModelFacts, gpu: Gpu | None) -> Cause:
    if not f.is_dsa:
        score, fit = 0.02, "not a DSA model"
    elif gpu is None:
        score, fit = 0.6, "DSA model, GPU unknown"
    else:
        path = dsa_kernel_path(gpu)
        score, fit = {
            "none": (0.95, f"DSA on {_gpu_label(gpu)}: no sparse kernels exist there"),
            "sm120": (0.7, f"DSA on {_gpu_label(gpu)}: only a separate, newer SM12x path"),
            "native": (0.1, f"DSA on {_gpu_label(gpu)}: kernels exist"),
            "other-vendor": (0.3, f"DSA on {_gpu_label(gpu)}: vendor stack decides"),
        }[path]
    return Cause(
        "dsa-no-kernel",
        "DSA sparse kernels do not exist for this GPU",
        "The lightning-indexer GEMM, top-k page mapping and sparse MLA decode are built for "
        "sm_90 (Hopper) and sm_100 (datacenter Blackwell); Ada (sm_89) has no fallback and "
        "the stock engines crash at start.",
        "The error lists the sparse backends with 'compute capability not supported'.",
        (
            "Serve the model on Hopper or datacenter Blackwell.",
            "On this GPU pick a GQA dense or small hybrid model instead.",
        ),
        score,
        fit,
        f"{PLAYBOOK} ('하드웨어가 안 맞으면 실행이 안됨'); {FACTS} §2b",
    )


def _crash_sm120(f: ModelFacts, gpu: Gpu | None) -> Cause:
    sm120 = _arch(gpu).startswith("sm_12")
    score = (0.75 if f.is_mla else 0.35) if sm120 else 0.03
    return Cause(
        "sm100-kernels-on-sm120",
        "sm_100 kernels do not run on sm_120",
        "Workstation/consumer Blackwell has a different programming model (no tcgen05 / tensor "
        "memory): FlashMLA, DeepGEMM, CUTLASS MLA and trtllm-gen MLA built for sm_100 reject "
        "it; older releases list every MLA backend as 'compute capability not supported'.",
        "The error names FLASHINFER_MLA / CUTLASS_MLA / FLASHMLA as unsupported.",
        (
            "Use a release with SM12x paths (vLLM ≥ 0.24 for GLM-5.1 DSA; vLLM 0.33 "
            "FLASHINFER_MLA_SPARSE_SM120, SGLang 0.5.23 flashinfer_sparse_mla).",
            "Or serve on sm_90 / sm_100.",
        ),
        score,
        f"{_gpu_label(gpu)}, {f.attention_family}",
        f"{PLAYBOOK} ('sm_100과 sm_120은 프로그래밍 모델이 다름'); {FACTS} §1, §2a–2b",
    )


def _crash_mla_fp8(f: ModelFacts, gpu: Gpu | None) -> Cause:
    arch = _arch(gpu)
    small = arch.startswith("sm_8") or arch.startswith("sm_12")
    score = (0.65 if small else 0.15) if f.attention_family == "MLA" else 0.05
    return Cause(
        "mla-fp8-kv-on-triton",
        "MLA + FP8 KV where only TRITON_MLA exists",
        "On sm_80/86/89/120 the only MLA backend is TRITON_MLA, which has refused FP8 KV "
        "('TRITON_MLA: [kv_cache_dtype not supported]').",
        "The error lists TRITON_MLA with kv_cache_dtype not supported.",
        ("Drop `--kv-cache-dtype fp8` (auto) on this GPU.",),
        score,
        f"{f.attention_family} on {_gpu_label(gpu)}",
        f"{FACTS} §2a (RTX PRO 6000, vLLM 0.14.0 report)",
    )


def _crash_forced_backend(f: ModelFacts, gpu: Gpu | None) -> Cause:
    dense = not f.is_mla
    return Cause(
        "forced-backend",
        "A pinned --attention-backend that this GPU lacks",
        "Inherited commands often pin a backend tuned on another GPU: FLASH_ATTN_MLA, "
        "FLASH_ATTN_MLA_SPARSE and SGLang fa3 are Hopper-only, FLASHINFER_MLA_SPARSE and "
        "trtllm_mla are Blackwell-only. The engine's own pick would have worked.",
        "Remove the flag and start again.",
        ("Drop `--attention-backend` and let the engine choose for the GPU.",),
        0.6 if dense else 0.3,
        "standard attention has a kernel on every GPU: a pinned backend is the likely cause"
        if dense
        else "secondary to kernel availability for this family",
        f"{FACTS} §2a–2c; {PLAYBOOK} ('5. 엔진에게 맡길 것')",
    )


def _crash_fp8_flash_attn(f: ModelFacts, gpu: Gpu | None) -> Cause:
    arch = _arch(gpu)
    dense = not f.is_mla
    score = 0.5 if dense and arch and arch != "sm_90" else 0.1
    return Cause(
        "fp8-kv-flash-attn",
        "FP8 KV with FlashAttention outside Hopper",
        "vLLM's FlashAttention backend reads FP8 KV only as FA3 on Hopper; elsewhere the "
        "FlashInfer / Triton backends must take it, and pinning FLASH_ATTN leaves none.",
        "The error lists FLASH_ATTN with kv_cache_dtype not supported.",
        ("Drop `--attention-backend FLASH_ATTN`, or the FP8 KV.",),
        score,
        f"{f.attention_family} on {_gpu_label(gpu)}",
        f"{FACTS} §2d (flash_attn_supports_fp8)",
    )


# --- one GPU busy (MoE) ---------------------------------------------------------------------


def _busy_imbalance(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "expert-load-imbalance",
        "Expert load imbalance",
        "A few experts are picked far more often than the rest (measured: expert 47 at 7.2× the "
        "mean, expert 231 at 0.23×); the GPU holding the hot one works while others wait, and "
        "every MoE layer waits for the slowest GPU.",
        "Record expert load: SGLang `--expert-distribution-recorder-mode stat`; vLLM EPLB "
        "log_balancedness.",
        (
            "EPLB: vLLM `--enable-eplb --eplb-config '{\"num_redundant_experts\": 32}'`; "
            "SGLang `--enable-eplb --eplb-algorithm deepseek --ep-num-redundant-experts 32` "
            "(7.2× → 1.9×, +18 % throughput, +12.5 % expert weights for 32 of 256).",
        ),
        0.9 if f.moe else 0.02,
        "MoE with EP" if f.moe else "dense model: no experts",
        f"{PLAYBOOK} ('전문가 부하 편중')",
    )


def _busy_small_batch(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "few-tokens-few-experts",
        "Batches too small to touch every expert",
        "With few tokens in flight only a few experts are selected; the GPUs that hold the "
        "others have nothing to do.",
        "The imbalance fades as concurrency rises.",
        ("Batch more (more concurrency per replica), or use fewer EP ranks.",),
        0.5 if f.moe else 0.02,
        "MoE" if f.moe else "dense model",
        f"{PLAYBOOK} ('대가 - 가중치를 던 만큼 통신이 늘어남')",
    )


def _busy_dp_idle(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "dp-attention-idle-groups",
        "DP-attention groups without requests",
        "Each DP-attention group serves its own requests; with few requests some groups idle "
        "while one works. TP+EP measured 52 % ahead of DP+EP at 64–128 concurrent requests.",
        "Per-group running requests (one scheduler per group) are uneven or zero.",
        ("At low concurrency use TP+EP instead of DP-attention.",),
        (0.45 if f.is_mla else 0.3) if f.moe else 0.1,
        "MLA/DSA MoE: DP-attention is common" if f.is_mla and f.moe else "less likely",
        f"{PLAYBOOK} ('MLA 서빙의 난제': AMD ROCm measurement)",
    )


def _busy_dense(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "dense-uneven-routing",
        "Not experts: uneven request routing or pipeline stages",
        "A dense model has no experts to imbalance; one busy GPU means one replica gets the "
        "traffic (sticky routing) or pipeline stages wait on each other.",
        "Compare running requests per replica.",
        ("Check the balancer; prefer TP over PP for inference.",),
        0.6 if not f.moe else 0.05,
        "dense model" if not f.moe else "MoE: experts are the first suspect",
        f"{PLAYBOOK} ('GQA': PP rarely used in inference)",
    )


# --- prefix hits ~0 % on a hybrid model -----------------------------------------------------


def _hits_block(f: ModelFacts, gpu: Gpu | None) -> Cause:
    size = _block_size(f)
    return Cause(
        "prompts-shorter-than-block",
        "Prompts shorter than one attention block",
        "vLLM grows the attention block of a hybrid model until one attention page equals "
        f"one linear-state page ({size}); only whole blocks are cached, so shorter prompts "
        "never produce a hit.",
        "vLLM startup log: 'Setting attention block size to N tokens'.",
        (
            "Make shared prefixes longer than N tokens.",
            "Align LMCache --chunk-size and --max-num-batched-tokens to multiples of N.",
        ),
        0.9 if f.is_hybrid else 0.1,
        "hybrid model" if f.is_hybrid else "not a hybrid model",
        f"{PLAYBOOK} ('블록 크기 하나가 다른 설정을 연쇄적으로 정함'); {FACTS} §5 (issue #40696)",
    )


def _hits_partial(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "partial-pages",
        "Chunks that are not a multiple of the block",
        "With N = 64 and 100-token chunks, the second page holds 36 tokens and is never "
        "cached; every misaligned chunk loses its tail.",
        "Compare chunk sizes (LMCache, batched tokens) with N.",
        ("Set chunk sizes to multiples of N; recheck when the model (and N) changes.",),
        0.6 if f.is_hybrid else 0.3,
        "hybrid model" if f.is_hybrid else "generic",
        f"{PLAYBOOK} ('블록 크기 하나가 다른 설정을 연쇄적으로 정함')",
    )


def _hits_mamba_mode(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "hybrid-prefix-caching-unsupported",
        "Prefix caching off for the linear-attention layers",
        "Hybrid prefix caching came late (Qwen3-Next first shipped without it; vLLM's align "
        "mode is still experimental and is 'none' when prefix caching is disabled).",
        "Check the engine version and the startup log's cache mode.",
        ("Upgrade to a release with hybrid prefix caching and leave prefix caching on.",),
        0.5 if f.is_hybrid else 0.05,
        "hybrid model" if f.is_hybrid else "not a hybrid model",
        f"{FACTS} §5; {PLAYBOOK} ('정렬 모드는 아직 실험 단계')",
    )


def _hits_not_hybrid(f: ModelFacts, gpu: Gpu | None) -> Cause:
    return Cause(
        "not-hybrid",
        "Not a hybrid model: ordinary cache misses",
        "Standard attention caches bit-identically; near-zero hits mean the prefixes really "
        "differ, the cache is off, or requests are spread over replicas.",
        "Check the prefix cache flags and the routing.",
        ("See 'TTFT is high although prompts share a prefix'.",),
        0.6 if not f.is_hybrid else 0.02,
        "standard attention" if not f.is_hybrid else "hybrid model",
        f"{PLAYBOOK} ('접두사 캐싱')",
    )


_CAUSES: dict[str, tuple[_CauseFn, ...]] = {
    "no-tool-calls": (
        _tool_parser_missing,
        _tool_parser_wrong,
        _auto_tool_choice,
        _tool_template,
        _not_tool_model,
    ),
    "thinking-leaks": (_reasoning_missing, _reasoning_wrong, _thinking_toggle, _client_concat),
    "memory-fills-fast": (
        _mem_moe_no_ep,
        _mem_mla_replicated,
        _mem_kv_per_token,
        _mem_hybrid_state,
        _mem_dsa_hopper,
        _mem_fraction,
    ),
    "slow-ttft-shared-prefix": (
        _ttft_hybrid_block,
        _ttft_routing,
        _ttft_cache_off,
        _ttft_page_size,
        _ttft_engine,
        _ttft_evicted,
    ),
    "outputs-change-with-prefix-cache": (_out_hybrid, _out_batch, _out_sampling),
    "no-valid-attention-backend": (
        _crash_dsa,
        _crash_sm120,
        _crash_mla_fp8,
        _crash_forced_backend,
        _crash_fp8_flash_attn,
    ),
    "moe-one-gpu-busy": (_busy_imbalance, _busy_small_batch, _busy_dp_idle, _busy_dense),
    "hybrid-prefix-hits-zero": (_hits_block, _hits_partial, _hits_mamba_mode, _hits_not_hybrid),
}


def _symptom_id(symptom: str) -> str:
    if isinstance(symptom, str):
        wanted = symptom.strip().casefold()
        for s in SYMPTOMS:
            if wanted in (s.id, s.label.casefold()):
                return s.id
    ids = ", ".join(s.id for s in SYMPTOMS)
    raise InputError("symptom", f"one of {ids} (or its label), got {symptom!r}")


def troubleshoot(symptom: str, facts: ModelFacts, gpu: Gpu | None) -> list[Cause]:
    """The known causes of ``symptom`` (an id or label from ``SYMPTOMS``), most likely first
    for this model and GPU."""
    if not isinstance(facts, ModelFacts):
        raise InputError("model", "the model's facts (ModelFacts)")
    causes = [fn(facts, gpu) for fn in _CAUSES[_symptom_id(symptom)]]
    return sorted(causes, key=lambda c: -c.score)
