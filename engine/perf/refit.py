"""What a refit of the speed model's factors needs: a ``Factors`` object with some values
replaced by name (a global factor, or a software stack's cost ``engine/vendor.cost``; the stacks
derived from a like follow it), the names a refit may move, and a plain Nelder-Mead minimiser.
``tools/fit_perf.py`` refits the factors on the published runs with them; ``engine.perf.user_fit``
refits a deployment's on its own benchmark results."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from engine.perf.factors import Factors
from engine.perf.stack import STACK_COSTS, Factor


def split_name(name: str) -> tuple[str | None, str]:
    """A factor's name: ``hbm_fraction`` (global: no stack) or ``vllm/nvidia.kernel_seconds``
    (a software stack's cost) -> (stack key or None, the factor)."""
    key, _, cost = name.rpartition(".")
    return (key or None), cost


def _factor(f: Factors, name: str) -> Factor:
    key, cost = split_name(name)
    if key is None:
        factor: Factor = getattr(f, cost)
        return factor
    stack = next((s for s in f.stacks if s.key == key), None)
    if stack is None or cost not in STACK_COSTS:
        raise KeyError(f"no factor {name}")
    found: Factor = getattr(stack, cost)
    return found


def value_of(f: Factors, name: str) -> float:
    return _factor(f, name).value


def unit_of(f: Factors, name: str) -> str:
    return _factor(f, name).unit


def _sig(v: float) -> float:
    return float(f"{v:.3g}")


def derive(f: Factors, fitted: set[str] | frozenset[str] = frozenset()) -> Factors:
    """Each stack with a ``like`` at its like's costs × its scales, unless it was ``fitted`` on
    measured runs of its own."""
    stacks = {s.key: s for s in f.stacks}
    out = f
    for s in f.stacks:
        if s.like is None or s.key in fitted:
            continue
        like = stacks[s.like]
        update = {}
        for cost in STACK_COSTS:
            scale = s.scales.get(cost)
            ratio = scale.value if scale is not None else 1.0
            why = scale.source if scale is not None else "no scale given: x1"
            update[cost] = Factor(
                value=_sig(like.cost(cost) * ratio),
                unit=getattr(like, cost).unit,
                fitted=False,
                source=f"{s.like} {like.cost(cost):.3g} x {ratio:g}: {why}",
            )
        out = out.with_stack(s.model_copy(update=update))
    return out


def with_values(base: Factors, values: Mapping[str, float], source: str = "trial") -> Factors:
    """``base`` with the named factors' values replaced (global ones, or ``stack.cost``), each
    marked fitted, from ``source``; the stacks derived from a like follow it unless their own
    costs are among ``values``."""
    top = {}
    by_stack: dict[str, dict[str, Factor]] = {}
    for name, v in values.items():
        key, cost = split_name(name)
        factor = Factor(value=v, unit=unit_of(base, name), fitted=True, source=source)
        if key is None:
            top[cost] = factor
        else:
            by_stack.setdefault(key, {})[cost] = factor
    out = base.model_copy(update=top)
    for s in base.stacks:
        if s.key in by_stack:
            out = out.with_stack(s.model_copy(update=by_stack[s.key]))
    return derive(out, set(by_stack))


def fitted_names(base: Factors, stack: str | None = None) -> tuple[str, ...]:
    """The factors data/perf.yaml marks fitted (the global ones), and the costs of ``stack``
    (every stack's when None): a stack derived from a like, fitted on no run of its own, is
    refitted on a user's runs all the same."""
    names = [
        name
        for name in type(base).model_fields
        if isinstance(getattr(base, name), Factor) and getattr(base, name).fitted
    ]
    for s in base.stacks:
        if stack is None or s.key == stack:
            names += [f"{s.key}.{c}" for c in STACK_COSTS]
    return tuple(names)


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
