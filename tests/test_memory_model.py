"""Memory per GPU as the engines count it, checked against real start-up logs recorded in
data/memory.yaml (vLLM's available KV cache) and SGLang's own mem_fraction_static heuristic."""

from __future__ import annotations

import pytest
import yaml

from engine.decision import Decimal
from engine.engines import adapter
from engine.engines.memory import Split
from engine.hardware.gpus import lookup_gpu
from engine.rules import DATA_DIR
from tests.study_util import run

GIB = 1 << 30
OBSERVED = yaml.safe_load((DATA_DIR / "memory.yaml").read_text())["vllm_kv_pool"]["observations"]


@pytest.mark.parametrize(
    ("model", "observed_model", "tp"),
    [
        ("meta-llama/Meta-Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct", 1),
        ("Qwen/Qwen3-32B", "Qwen/Qwen3-32B", 1),
    ],
)
def test_vllm_kv_pool_on_h100_is_within_a_gib_of_the_logged_start_up(
    model: str, observed_model: str, tp: int
) -> None:
    row = next(o for o in OBSERVED if o["model"] == observed_model and o["tp"] == tp)
    st = run(
        model,
        gpu="H100",
        gpus_per_node=tp,
        tp=tp,
        memory_fraction=row["gpu_memory_utilization"],
        context=2048,
        users=1,  # the logged start-ups ran at vLLM's default --max-num-seqs
    )
    assert st.fit.max_num_seqs is None
    predicted = st.fit.kv_space_per_gpu / GIB
    # the log's weights are the same checkpoint's; the reserve formula is fitted on these logs
    assert predicted == pytest.approx(row["available_kv_gib"], abs=1.0)


def test_a_few_users_get_vllms_sampler_reserve_back_with_max_num_seqs() -> None:
    # Qwen3.5-35B-A3B in BF16 on one H100: 64.6 GiB weights fit in 0.92 × 79.6 GiB, but the
    # profile run's sampler rows for the default 1,024 sequences (10 × 1,024 × 248,320 × 4 B)
    # leave no room for a 32k request; 16 users need 16 sequences.
    st = run("Qwen/Qwen3.5-35B-A3B", gpu="H100", gpus_per_node=1, users=16, context=32768)
    fit = st.fit
    assert fit.max_num_seqs == 16
    assert fit.reserve is not None
    activations = dict((name, b) for name, b, _ in fit.reserve.parts)["activations"]
    assert activations == int(10 * 16 * st.model.config.vocab_size * 4)
    assert fit.context == 32768 and 1 <= fit.users <= 16  # the KV left holds 11 of them
    assert st.plan.runnable
    assert ("--max-num-seqs", "16") in [(f.flag, f.value) for f in st.plan.flags]
    # SGLang's fraction heuristic has no such term: no flag there
    sg = run("Qwen/Qwen3.5-35B-A3B", gpu="H100", gpus_per_node=1, engine="sglang")
    assert sg.fit.max_num_seqs is None


def test_users_beyond_the_default_sequences_keep_vllms_default() -> None:
    st = run("meta-llama/Meta-Llama-3.1-8B", gpu="H100", gpus_per_node=1, users=2000)
    assert st.fit.max_num_seqs is None


def test_vllm_uses_the_pinned_tables_default_utilization() -> None:
    vllm = adapter("vllm")
    fraction, _ = vllm.default_fraction(
        lookup_gpu("H100"), Split(tp=1), chunk_tokens=None, mla=False, vision=None
    )
    assert fraction == 0.92
    assert run("meta-llama/Meta-Llama-3.1-8B").fit.fraction == 0.92


def test_sglang_default_fraction_for_deepseek_v3_on_8_h100_is_its_heuristic() -> None:
    # memory_hook.py: 512 + 1.5 × 8192 + 8/8 × 1024 + (2 × 512 + 1536 MLA) MB on 81,559 MiB
    frac, formula = adapter("sglang").default_fraction(
        lookup_gpu("H100"), Split(tp=8), chunk_tokens=8192, mla=True, vision=None
    )
    assert frac == round((81_559 - 16_384) / 81_559, 3) == 0.799
    assert formula["reserved"] == Decimal(16_384, 0, "MiB")


def test_sglang_dp_attention_reserves_more_for_its_graphs() -> None:
    gpu = lookup_gpu("H200")
    sglang = adapter("sglang")
    plain, _ = sglang.default_fraction(gpu, Split(tp=8), chunk_tokens=8192, mla=True, vision=None)
    dp, _ = sglang.default_fraction(
        gpu, Split(tp=1, dp=8), chunk_tokens=8192, mla=True, vision=None
    )
    assert dp < plain


def test_h100_memory_is_what_the_device_reports() -> None:
    assert lookup_gpu("H100").device_memory_bytes == 81_559 * 2**20
    assert run("meta-llama/Meta-Llama-3.1-8B", gpu="H100").fit.memory_per_gpu == 81_559 * 2**20
