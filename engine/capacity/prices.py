"""What a GPU-hour costs: ``data/gpu_prices.yaml`` (public on-demand prices, each with its
source, quote and date), or the user's own price, which always wins."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from pydantic import Field

from engine.hardware.gpus import lookup_gpu
from engine.rules import Strict, load_data


class _Row(Strict):
    gpu: str = Field(min_length=1)
    usd_per_hour: float = Field(gt=0)
    source: str = Field(min_length=1)
    quote: str = Field(min_length=1)
    date: str = Field(pattern=r"^\d{4}-\d{2}(-\d{2})?$")


class _Prices(Strict):
    basis: str
    prices: list[_Row]


@dataclass(frozen=True)
class Price:
    """USD per GPU-hour for one GPU, and where it came from (``source`` None: the user's)."""

    gpu: str
    usd_per_hour: float
    source: str | None
    date: str | None

    @property
    def own(self) -> bool:
        return self.source is None


@cache
def listed_prices() -> dict[str, Price]:
    """GPU key -> its listed price (each row's GPU resolved through the catalog)."""
    data = load_data(_Prices, "gpu_prices.yaml")
    out: dict[str, Price] = {}
    for row in data.prices:
        key = lookup_gpu(row.gpu).key
        if key in out:
            raise ValueError(f"data/gpu_prices.yaml: {key} listed twice")
        out[key] = Price(key, row.usd_per_hour, row.source, row.date)
    return out


def price_basis() -> str:
    return load_data(_Prices, "gpu_prices.yaml").basis


def price_for(gpu: str, own: float | None = None) -> Price | None:
    """The price of one GPU-hour: the user's ``own`` when given, else the listed one (None: no
    public price was read for this GPU)."""
    if own is not None:
        return Price(gpu, own, None, None)
    return listed_prices().get(gpu)
