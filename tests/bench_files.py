"""Benchmark result files in the tools' own formats, built as their writers build them.

``vllm_result`` is ``vllm bench serve --save-result``'s JSON: vllm-project/vllm
vllm/benchmarks/serve.py@009e6d4a main_async builds ``result_json`` (date, endpoint_type,
backend, label, model_id, tokenizer_id, num_prompts, request_rate ("inf" as text),
burstiness, max_concurrency), merges benchmark()'s ``result`` (duration, completed, failed,
total_input_tokens, total_output_tokens, request_throughput, request_goodput,
output_throughput, total_token_throughput, the per-request lists, max_output_tokens_per_s,
max_concurrent_requests, rtfx) and process_one_metric's mean / median / std / p99 per metric,
drops the per-request lists unless --save-detailed (queue_times and latencies stay), and writes
it with ``json.dump`` (one line, no newline; --append-result adds "\\n" between runs).

``sglang_line`` is one line of ``python -m sglang.bench_serving --output-file``: sgl-project/sglang
python/sglang/benchmark/serving.py@00f9ec47 benchmark() builds ``result`` (tag, backend,
dataset_name, request_rate (a float: json.dumps writes inf as Infinity), max_concurrency,
sharegpt_output_len, random_input_len, random_output_len, random_range_ratio, server_info,
duration, completed, the token totals, the throughputs, mean / median / std / p90 / p95 / p99
of e2e latency, TTFT, TPOT and ITL, concurrency, accept_length, max_output_tokens_per_s,
max_concurrent_requests) and appends ``json.dumps(result) + "\\n"``.
"""

from __future__ import annotations

import json
from typing import Any


def _stats(name: str, mean: float, percentiles: tuple[str, ...]) -> dict[str, float]:
    out = {f"mean_{name}_ms": mean, f"median_{name}_ms": mean * 0.98, f"std_{name}_ms": mean * 0.1}
    for p in percentiles:
        out[f"p{p}_{name}_ms"] = mean * 1.3
    return out


def vllm_result(
    concurrency: int | None,
    num_prompts: int,
    isl: int,
    osl: int,
    ttft_ms: float,
    tpot_ms: float,
    output_throughput: float,
    model: str = "meta-llama/Meta-Llama-3.1-8B",
) -> dict[str, Any]:
    """serve.py main_async's ``result_json`` for a run without --save-detailed."""
    duration = num_prompts * osl / output_throughput
    e2el = ttft_ms + (osl - 1) * tpot_ms
    result: dict[str, Any] = {
        "date": "20261207-120000",
        "endpoint_type": "openai",
        "backend": "openai",
        "label": None,
        "model_id": model,
        "tokenizer_id": model,
        "num_prompts": num_prompts,
        "request_rate": "inf",
        "burstiness": 1.0,
        "max_concurrency": concurrency,
        "duration": duration,
        "completed": num_prompts,
        "failed": 0,
        "total_input_tokens": isl * num_prompts,
        "total_output_tokens": osl * num_prompts,
        "request_throughput": num_prompts / duration,
        "request_goodput": None,
        "output_throughput": output_throughput,
        "total_token_throughput": (isl + osl) * num_prompts / duration,
        "latencies": [e2el / 1000] * num_prompts,
        "queue_times": [0.0] * num_prompts,
        "max_output_tokens_per_s": output_throughput * 1.1,
        "max_concurrent_requests": concurrency or num_prompts,
        "rtfx": 0.0,
    }
    result |= _stats("ttft", ttft_ms, ("99",))
    result |= _stats("tpot", tpot_ms, ("99",))
    result |= _stats("itl", tpot_ms, ("99",))
    result |= _stats("e2el", e2el, ("99",))
    result |= _stats("client_queue_time", 0.0, ("99",))
    return result


def vllm_file(result: dict[str, Any]) -> bytes:
    """As ``json.dump(result_json, outfile)`` writes it."""
    return json.dumps(result).encode()


def sglang_line(
    concurrency: int | None,
    num_prompts: int,
    isl: int,
    osl: int,
    ttft_ms: float,
    tpot_ms: float,
    output_throughput: float,
) -> dict[str, Any]:
    """serving.py benchmark()'s ``result`` (without --output-details)."""
    duration = num_prompts * osl / output_throughput
    e2e = ttft_ms + (osl - 1) * tpot_ms
    result: dict[str, Any] = {
        "tag": None,
        "backend": "sglang",
        "dataset_name": "random",
        "request_rate": float("inf"),
        "max_concurrency": concurrency,
        "sharegpt_output_len": None,
        "random_input_len": isl,
        "random_output_len": osl,
        "random_range_ratio": 1.0,
        "server_info": {"model_path": "deepseek-ai/DeepSeek-V3", "internal_states": [{}]},
        "duration": duration,
        "completed": num_prompts,
        "total_input_tokens": isl * num_prompts,
        "total_input_text_tokens": isl * num_prompts,
        "total_input_vision_tokens": 0,
        "total_output_tokens": osl * num_prompts,
        "total_output_tokens_retokenized": osl * num_prompts,
        "request_throughput": num_prompts / duration,
        "input_throughput": isl * num_prompts / duration,
        "output_throughput": output_throughput,
        "total_throughput": (isl + osl) * num_prompts / duration,
    }
    result |= _stats("e2e_latency", e2e, ("90", "95", "99"))
    result |= _stats("ttft", ttft_ms, ("90", "95", "99"))
    result |= _stats("tpot", tpot_ms, ("90", "95", "99"))
    result |= _stats("itl", tpot_ms, ("90", "95", "99"))
    result |= {
        "concurrency": concurrency or num_prompts,
        "accept_length": None,
        "max_output_tokens_per_s": output_throughput * 1.1,
        "max_concurrent_requests": concurrency or num_prompts,
    }
    return result


def sglang_file(lines: list[dict[str, Any]]) -> bytes:
    """As benchmark() appends them: ``json.dumps(result) + "\\n"`` per run."""
    return "".join(json.dumps(r) + "\n" for r in lines).encode()
