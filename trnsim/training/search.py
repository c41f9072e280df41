"""Search the space of parallel plans and rank the feasible ones.

Enumerates TP (the system's supported degrees), PP (divisors of the layer count), the
data-parallel degree that fills the world, micro-batch sizes and recompute modes; every
candidate goes through :func:`trnsim.training.estimate`. A candidate is rejected when it
breaks a rule (PlanError, e.g. heads not divisible by TP) or does not fit in device memory;
the rejection keeps the reason.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from trnsim.training.checks import check_search_args, check_world
from trnsim.training.estimate import Estimate, _estimate, make_plan
from trnsim.training.models import ModelSpec, model as get_model
from trnsim.training.systems import GIB, PlanError, system as get_system


@dataclass(frozen=True)
class Rejection:
    label: str
    reason: str


@dataclass(frozen=True)
class SearchResult:
    """Feasible plans ranked fastest first, and the rejected ones with their reasons."""

    ranked: tuple[Estimate, ...]
    rejected: tuple[Rejection, ...] = field(default_factory=tuple)

    @property
    def best(self) -> Estimate | None:
        return self.ranked[0] if self.ranked else None

    def reasons(self) -> dict[str, int]:
        """How many candidates each kind of rule rejected (rule = text before the first ':')."""
        out: dict[str, int] = {}
        for r in self.rejected:
            key = r.reason.split(":")[0]
            out[key] = out.get(key, 0) + 1
        return out

    def table(self, top: int = 5) -> str:
        w = max([52] + [len(e.plan.label()) for e in self.ranked[:top]])
        lines = [f"{'plan':{w}s} {'step s':>8s} {'MFU':>6s} {'GiB/dev':>8s}"]
        for e in self.ranked[:top]:
            lines.append(f"{e.plan.label():{w}s} {e.step_time_s:8.3g} {100 * e.mfu:5.1f}% {e.memory.total_bytes / GIB:8.1f}")
        return "\n".join(lines)


def search(
    model: str | ModelSpec, instance: str, nodes: int, seq_len: int, global_batch: int, *,
    micro_batches: tuple[int, ...] = (1, 2, 4), recompute_modes: tuple[str, ...] = ("none", "selective", "full"),
    zero1: bool = True, sequence_parallel: bool = True, dtype: str = "bf16", flash_attention: bool | None = None,
) -> SearchResult:
    """Rank every valid plan for ``model`` on ``nodes`` x ``instance`` (fastest step first)."""
    check_search_args(model, instance, nodes, seq_len, global_batch, micro_batches=micro_batches,
                      recompute_modes=recompute_modes, zero1=zero1, sequence_parallel=sequence_parallel, dtype=dtype,
                      flash_attention=flash_attention)
    nodes, seq_len, global_batch = int(nodes), int(seq_len), int(global_batch)
    spec = get_model(model)
    sys = get_system(instance)
    check_world(nodes, sys.devices_per_node, sys.name)
    world = nodes * sys.devices_per_node
    tps = sys.supported_tp or tuple(t for t in range(1, sys.devices_per_node + 1) if sys.devices_per_node % t == 0)
    pps = tuple(p for p in range(1, spec.n_layers + 1) if spec.n_layers % p == 0 and p <= world)
    ranked: list[Estimate] = []
    rejected: list[Rejection] = []
    seen: set[str] = set()
    for tp in tps:
        for pp in pps:
            if world % (tp * pp):
                continue
            for mb in micro_batches:
                for rc in recompute_modes:
                    label = f"TP{tp} PP{pp} DP{world // (tp * pp)} mb{mb} {rc}"
                    try:
                        plan, sp, sy, notes = make_plan(
                            spec, sys.name, nodes, tp, pp, None, seq_len=seq_len, global_batch=global_batch,
                            micro_batch=mb, zero1=zero1, sequence_parallel=sequence_parallel, recompute=rc,
                            dtype=dtype, flash_attention=flash_attention)
                    except PlanError as exc:
                        if str(exc) not in seen:
                            seen.add(str(exc))
                            rejected.append(Rejection(label, str(exc)))
                        break  # the rule does not depend on the recompute mode
                    est = _estimate(plan, sp, sy, notes)
                    if not est.fits:
                        m = est.memory
                        rejected.append(Rejection(label, f"memory: needs {m.total_bytes / GIB:.1f} GiB per "
                                                         f"{sys.device_name}, has {m.capacity_bytes / GIB:.1f} GiB"))
                        continue
                    ranked.append(est)
    ranked.sort(key=lambda e: (e.step_time_s, e.memory.total_bytes))
    return SearchResult(tuple(ranked), tuple(rejected))
