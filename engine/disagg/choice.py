"""The choice a scenario with a request rate gets: the disaggregated candidate beside the best
aggregated fleet of the same GPU at the same rate, the verdict, and what each costs per hour and
per million tokens at the GPU's price; which plan the launch files are (the scenario's
``disaggregated`` field, else the one that wins)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.capacity import capacity_of, price_for
from engine.decision import Code, Decision
from engine.disagg import disaggregate
from engine.disagg.candidate import Disaggregated
from engine.disagg.compare import Aggregated, Verdict, compare
from engine.disagg.plan import DisaggPlan, disagg_plan
from engine.errors import InputError
from engine.launch.candidate import Layout
from engine.study import Study

# the pools asked for without a request rate to size them for
NO_RATE = Code("error.disagg.rate")


@dataclass(frozen=True)
class Choice:
    """``candidate`` against ``aggregated`` at its rate; ``usd_per_gpu_hour``: the GPU's price
    (None: none known); ``gpus_given``: the scenario's own GPUs; ``asked``: the scenario's
    ``disaggregated`` field (None: the winner's plan)."""

    candidate: Disaggregated
    aggregated: Aggregated | None
    verdict: Verdict
    usd_per_gpu_hour: float | None
    gpus_given: int
    asked: bool | None = None

    @property
    def rate(self) -> float:
        return self.candidate.rate

    @property
    def plans_disaggregated(self) -> bool:
        """Are the launch files the pools'? Asked for, or the pools win."""
        if self.asked is not None:
            return self.asked and self.candidate.sized is not None
        return self.verdict.wins

    @property
    def label(self) -> Decision | None:
        """Why the pools' plan is not the one to run (None: it is the pick)."""
        return None if self.verdict.wins else self.verdict.reason

    @property
    def fits_given(self) -> bool:
        """Do the scenario's own GPUs hold both pools?"""
        gpus = self.candidate.gpus
        return gpus is not None and gpus <= self.gpus_given

    def cost_per_hour(self, gpus: int | None) -> float | None:
        if gpus is None or self.usd_per_gpu_hour is None:
            return None
        return gpus * self.usd_per_gpu_hour

    def cost_per_million(self, gpus: int | None, tokens_per_request: int) -> float | None:
        """USD per million tokens: the hour's cost over the tokens the rate brings in an hour."""
        hourly = self.cost_per_hour(gpus)
        if hourly is None:
            return None
        return hourly / (self.rate * tokens_per_request * 3600) * 1e6


def choose(
    candidate: Disaggregated,
    aggregated: Aggregated | None,
    usd_per_gpu_hour: float | None,
    gpus_given: int,
    asked: bool | None = None,
) -> Choice:
    return Choice(
        candidate, aggregated, compare(candidate, aggregated), usd_per_gpu_hour, gpus_given, asked
    )


def aggregated_at(st: Study, rate: float) -> Aggregated | None:
    """The capacity's pick for the scenario's GPU at ``rate`` (engine.capacity: the fewest
    GPUs of aggregated copies within the targets), its tokens/s per GPU over the whole fleet
    at the rate as the pools' are counted; None where no aggregated copy serves it."""
    pick = capacity_of(st.scenario, rate).primary.pick
    if pick is None:
        return None
    sp = pick.load.speed
    per_gpu = rate * pick.osl / pick.gpus
    text = f"{rate:g} /s × {pick.osl} / {pick.gpus} = {per_gpu:.4g} /s"
    formula = replace(sp.formula, per_gpu=text)
    fleet = replace(sp, output_tokens_per_s_per_gpu=per_gpu, output_tokens_per_s=rate * pick.osl,
                    gpus=pick.gpus, formula=formula)  # fmt: skip
    return Aggregated(pick.gpus, Layout(pick.replicas, pick.layout.split).name(), fleet)


def choice_of(st: Study) -> Choice | None:
    """The scenario's choice at its request rate (None without one)."""
    s = st.scenario
    if s.request_rate is None or st.search_inputs is None:
        return None
    d = disaggregate(st, s.request_rate)
    price = price_for(s.gpu, s.gpu_price)
    return choose(d, aggregated_at(st, s.request_rate),
                  price.usd_per_hour if price is not None else None, s.total_gpus,
                  s.disaggregated)  # fmt: skip


def launch_plan(st: Study) -> DisaggPlan | None:
    """The disaggregated plan when the launch files are the pools' (asked for with
    ``--disaggregated``, or the pools win at the scenario's rate); None: the aggregated plan.
    Raises InputError naming the request rate when the pools are asked for without one, or no
    pair of pools serves it."""
    s = st.scenario
    if s.disaggregated and s.request_rate is None:
        raise InputError("request_rate", NO_RATE())
    c = choice_of(st)
    if c is None or not (c.plans_disaggregated or s.disaggregated):
        return None
    return disagg_plan(st, c.candidate, c.label)
