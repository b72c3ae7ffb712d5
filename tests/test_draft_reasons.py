"""Why MTP drafts are left off: the reason quotes the speed model's comparison as it is."""

from __future__ import annotations

from dataclasses import replace

from engine.launch.flags import SPEC_SLOWER, draft_why
from engine.launch.plan_inputs import PlanInputs
from engine.launch.ranking import layout_rules
from engine.perf.estimate import Speed
from tests.study_util import run


def test_drafts_left_off_within_the_models_error_are_not_called_slower() -> None:
    """Latency first: drafts that lower the TPOT by less than the tie fraction are a gain
    inside the model's error (flag.mtp.tie); only drafts that do not lower it are slower."""
    st = run("deepseek-ai/DeepSeek-V3", gpu="H200", users=16, latency="latency")
    base = st.search.pick.speed
    assert base is not None
    tie = layout_rules().speed_tie_fraction
    faster = replace(base, tpot_ms=base.tpot_ms * (1 - tie / 2))
    slower = replace(base, tpot_ms=base.tpot_ms * (1 + tie / 2))

    def core(with_drafts: Speed) -> PlanInputs:
        return PlanInputs(
            st.model, st.model.config, st.gpu, st.architecture, st.family, st.weights,
            st.limit, st.context_asked, False, st.text_only, st.gates, (with_drafts, base),
        )  # fmt: skip

    assert draft_why(core(faster), SPEC_SLOWER, st.scenario).code == "flag.mtp.tie"
    assert draft_why(core(slower), SPEC_SLOWER, st.scenario).code == "flag.mtp.slower"
