"""The model's own text in the reader's language (issue 17): what a checkpoint keeps in BF16
(ModelOpt exclude_modules), FP4 experts, and the context limit's formula are decisions worded in
data/i18n/<lang>/model.yaml, config field names as written."""

from __future__ import annotations

import json

from engine.model.loader import MODELS_DIR
from engine.present.charts_data import fit_shown, weights_shown
from engine.scenario import make_scenario
from engine.study import study
from engine.text.words import say
from tests.study_util import run
from tools.lang_check import check
from tools.lang_names import catalog_words

LLAMA = json.loads((MODELS_DIR / "meta-llama__Meta-Llama-3.1-8B.json").read_text())


def _korean_english(text: str) -> list[str]:
    return [f.words for f in check([text], "ko", catalog_words())]


def _modelopt_nvfp4() -> dict:
    quant = {
        "quant_method": "modelopt",
        "quant_algo": "NVFP4",
        "exclude_modules": ["lm_head", "model.layers.*.self_attn*"],
    }
    return {**LLAMA, "quantization_config": quant}


def test_a_modelopt_checkpoint_says_what_it_keeps_in_bf16_in_korean() -> None:
    st = run(_modelopt_nvfp4(), gpu="H200", gpus_per_node=1)
    checkpoint = weights_shown(st, "ko")[1].formula
    assert "BF16" in checkpoint and _korean_english(checkpoint) == [], checkpoint
    english = weights_shown(st, "en")[1].formula
    assert "; output head (lm_head), attention, replicated projections kept in BF16" in english
    assert "어텐션" in checkpoint


def test_fp4_experts_and_a_yarn_context_limit_are_worded_in_korean() -> None:
    st = study(make_scenario(model="deepseek-ai/DeepSeek-V4-Flash", gpu="B200"))
    checkpoint = weights_shown(st, "ko")[1].formula
    assert "FP4" in checkpoint and _korean_english(checkpoint) == [], checkpoint
    limit = fit_shown(st, "ko")[2].formula
    assert say(st.limit.why, markdown=False) in fit_shown(st, "en")[2].formula
    assert "배율" in limit and _korean_english(limit) == [], limit


def test_a_yarn_limit_reads_as_the_config_states_it() -> None:
    st = run(
        {
            **LLAMA,
            "max_position_embeddings": 163_840,
            "rope_scaling": {
                "rope_type": "yarn",
                "factor": 40,
                "original_max_position_embeddings": 4096,
            },
        }
    )
    assert st.limit.tokens == 163_840
    assert say(st.limit.why, markdown=False) == (
        "original_max_position_embeddings 4,096 × yarn factor 40 = 163,840"
    )
    assert say(st.limit.why, "ko") == (
        "original_max_position_embeddings 4,096 × yarn 배율 40 = 163,840"
    )
