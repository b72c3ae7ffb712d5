"""What a refit of the speed model's factors needs: a ``Factors`` object with some values
replaced, and a plain Nelder-Mead minimiser. ``tools/fit_perf.py`` refits the global factors on
the published runs with them; ``engine.perf.user_fit`` refits a deployment's on its own
benchmark results."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from engine.perf.factors import Factor, Factors


def with_values(base: Factors, values: Mapping[str, float], source: str = "trial") -> Factors:
    """``base`` with the named factors' values replaced (each marked fitted, from ``source``)."""
    update = {
        name: Factor(value=v, unit=getattr(base, name).unit, fitted=True, source=source)
        for name, v in values.items()
    }
    return base.model_copy(update=update)


def nelder_mead(
    fn: Callable[[list[float]], float], x0: list[float], step: float, iters: int
) -> list[float]:
    """Minimise ``fn`` from ``x0`` (a plain Nelder-Mead: reflect, expand, contract, shrink)."""
    n = len(x0)
    simplex = [list(x0)] + [
        [x + (step if i == j else 0.0) for j, x in enumerate(x0)] for i in range(n)
    ]
    scores = [fn(p) for p in simplex]
    for _ in range(iters):
        order = sorted(range(n + 1), key=lambda i: scores[i])
        simplex = [simplex[i] for i in order]
        scores = [scores[i] for i in order]
        centroid = [sum(p[j] for p in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]
        reflect = [c + (c - w) for c, w in zip(centroid, worst, strict=True)]
        fr = fn(reflect)
        if fr < scores[0]:
            expand = [c + 2 * (c - w) for c, w in zip(centroid, worst, strict=True)]
            fe = fn(expand)
            simplex[-1], scores[-1] = (expand, fe) if fe < fr else (reflect, fr)
        elif fr < scores[-2]:
            simplex[-1], scores[-1] = reflect, fr
        else:
            contract = [c + 0.5 * (w - c) for c, w in zip(centroid, worst, strict=True)]
            fc = fn(contract)
            if fc < scores[-1]:
                simplex[-1], scores[-1] = contract, fc
            else:
                best = simplex[0]
                simplex = [best] + [
                    [b + 0.5 * (x - b) for b, x in zip(best, p, strict=True)] for p in simplex[1:]
                ]
                scores = [scores[0]] + [fn(p) for p in simplex[1:]]
        if max(scores) - min(scores) < 1e-6:
            break
    return simplex[min(range(n + 1), key=lambda i: scores[i])]
