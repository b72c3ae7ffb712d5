"""Where a parallel layout puts the model's weights: the bytes of each role (attention and dense
parts, routed experts, embeddings, the LM head, MTP layers, the vision encoder) on the busiest GPU
of one copy, as each engine shards that role (``EngineAdapter.weight_divisor``). Which role a
parameter block has follows the engines' model code (``engine.model.weights.Role``); how the
rest of a GPU's memory is counted is ``engine.engines.memory``'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.decision import Code, Decimal, Decision
from engine.engines import Engine, adapter
from engine.engines.memory import Split
from engine.model.weights import ROLES, Role, WeightReport


@dataclass(frozen=True)
class WeightShare:
    """Bytes of one role on the busiest GPU: the role's total ÷ the GPUs sharing one copy,
    × the share of layers on the busiest pipeline stage."""

    role: Role
    bytes_total: int
    divisor: int
    stage_share: float
    bytes_per_gpu: int

    def formula(self) -> Decision:
        role, total, per = ROLE_NAME[self.role](), self.bytes_total, self.bytes_per_gpu
        if self.stage_share == 1:
            if self.divisor == 1:
                return SHARE_WHOLE(role=role, total=total, bytes=per)
            return SHARE_DIVIDED(role=role, total=total, divisor=self.divisor, bytes=per)
        stage = Decimal(self.stage_share, 3)
        if self.divisor == 1:
            return SHARE_WHOLE_STAGE(role=role, total=total, stage=stage, bytes=per)
        return SHARE_DIVIDED_STAGE(
            role=role, total=total, divisor=self.divisor, stage=stage, bytes=per
        )


# What a block of weights is (engine.model.weights.Role), in the reader's words.
ROLE_NAME: dict[Role, Code] = {role: Code(f"memory.role.{role}") for role in ROLES}
# One role's weights on the busiest GPU, with its numbers (exact bytes).
SHARE_WHOLE = Code("memory.share.whole", "role", "total", "bytes")
SHARE_DIVIDED = Code("memory.share.divided", "role", "total", "divisor", "bytes")
SHARE_WHOLE_STAGE = Code("memory.share.whole_stage", "role", "total", "stage", "bytes")
SHARE_DIVIDED_STAGE = Code(
    "memory.share.divided_stage", "role", "total", "divisor", "stage", "bytes"
)


def weights_per_gpu(
    w: WeightReport,
    engine: Engine,
    split: Split,
    *,
    num_layers: int,
    mtp: bool,
    vision: bool,
    vision_replicated: bool = False,
) -> tuple[int, tuple[WeightShare, ...]]:
    """Weight bytes on the busiest GPU of one model copy, by role. ``mtp``: the MTP layers are
    loaded (speculative decoding on); ``vision``: the encoder is loaded (not text-only).

    With pipeline stages the busiest is the first or the last: it holds ``ceil(L / pp)`` of the
    ``L`` layers plus the embedding and encoder (first) or the LM head (last)."""
    stage = math.ceil(num_layers / split.pp) / num_layers if split.pp > 1 else 1.0
    shares: list[WeightShare] = []
    first = last = body = 0
    for role in ROLES:
        if role == "vision" and not vision:
            continue
        total = w.bytes_of([role], mtp=None if mtp else False)
        if total == 0:
            continue
        div = adapter(engine).weight_divisor(role, split, vision_replicated)
        share = 1.0 if role in _ENDS else stage
        per = math.ceil(total / div * share)
        if role == "lm_head":
            last += per
        elif role in _ENDS:
            first += per
        else:
            body += per
        shares.append(WeightShare(role, total, div, share, per))
    busiest = body + (max(first, last) if split.pp > 1 else first + last)
    return busiest, tuple(shares)


_ENDS = ("embedding", "lm_head", "vision")
