"""The choice a scenario with a request rate gets: the disaggregated candidate beside the best
aggregated fleet of the same GPU at the same rate, the verdict, and what each costs per hour and
per million tokens at the GPU's price; which plan the launch files are (the scenario's
``disaggregated`` field, else the one that wins)."""

from __future__ import annotations

from dataclasses import dataclass

from engine.decision import Code, Decision
from engine.disagg.candidate import Disaggregated
from engine.disagg.compare import Aggregated, Verdict, compare

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
