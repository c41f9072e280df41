"""Argument checks at the boundary of trnsim.training's public functions (raise :class:`PlanError`).

Each public function calls one of these first, so a bad argument is refused with its name,
its value, the valid range and the fix before any model is looked up or any loop runs.
The upper bounds are this simulator's limits (what it can hold and compute in seconds),
not hardware facts; the error says so.
"""
from __future__ import annotations

from typing import Any

from trnsim.training.systems import PlanError
from trnsim.catalog.validation import check_bool, check_choice, check_int, check_positive, check_str, type_error

MAX_DEVICES = 16_384
"""Simulator limit: devices (NeuronCores or GPUs) in one plan; the collective model builds every rank."""
MAX_SEQ_LEN = 10_000_000
"""Simulator limit on the context length (tokens)."""
MAX_GLOBAL_BATCH = 10_000_000
"""Simulator limit on sequences per step (keeps FLOP counts far from float overflow)."""
MAX_DEGREE = MAX_DEVICES
MAX_VIRTUAL_STAGES = 1024
MAX_MICRO_BATCH = 1_000_000


def check_model_arg(model: Any) -> None:
    """``model`` is a catalog name or a ModelSpec."""
    from trnsim.training.models import ModelSpec

    if not isinstance(model, (str, ModelSpec)):
        raise type_error(PlanError)(
            f"model={model!r}: must be a model name from trnsim.training.models() or a ModelSpec, "
            f"not {type(model).__name__}")


def check_instance_arg(instance: Any) -> None:
    check_str("instance", instance, error=PlanError,
              what="a Neuron instance name (e.g. 'trn1.32xlarge') or a GPU system name")


def check_nodes(nodes: Any, devices_per_node: int | None = None) -> int:
    """``nodes`` is a whole number >= 1 and the world stays within :data:`MAX_DEVICES`."""
    top = MAX_DEVICES if devices_per_node is None else max(1, MAX_DEVICES // devices_per_node)
    return check_int("nodes", nodes, error=PlanError, min_value=1, max_value=top,
                     fix=f"a cluster needs at least one node; the simulator holds at most {MAX_DEVICES:,} devices"
                         + (f" ({top:,} nodes of this system)" if devices_per_node else ""))


def check_plan_args(model: Any, instance: Any, nodes: Any, tp: Any, pp: Any, dp: Any, *, seq_len: Any,
                    global_batch: Any, micro_batch: Any, zero1: Any, sequence_parallel: Any, recompute: Any,
                    dtype: Any, flash_attention: Any, virtual_stages: Any, overlap_dp: Any) -> None:
    """Types and ranges of every argument of :func:`trnsim.training.estimate` / ``make_plan``."""
    from trnsim.training.models import RECOMPUTE_MODES

    check_model_arg(model)
    check_instance_arg(instance)
    check_nodes(nodes)
    for name, v in (("tp", tp), ("pp", pp)):
        check_int(name, v, error=PlanError, min_value=1, max_value=MAX_DEGREE,
                  fix="parallel degrees count devices: use 1 for no parallelism")
    if dp is not None:
        check_int("dp", dp, error=PlanError, min_value=1, max_value=MAX_DEGREE,
                  fix="or leave dp=None to fill the world")
    check_int("seq_len", seq_len, error=PlanError, min_value=1, max_value=MAX_SEQ_LEN,
              fix="tokens per sequence, e.g. 2048")
    check_int("global_batch", global_batch, error=PlanError, min_value=1, max_value=MAX_GLOBAL_BATCH,
              fix="sequences per optimizer step, e.g. 512")
    check_int("micro_batch", micro_batch, error=PlanError, min_value=1, max_value=MAX_MICRO_BATCH,
              fix="sequences per pipeline micro-batch, e.g. 1")
    check_int("virtual_stages", virtual_stages, error=PlanError, min_value=1, max_value=MAX_VIRTUAL_STAGES,
              fix="1 for a plain 1F1B schedule")
    for name, v in (("zero1", zero1), ("sequence_parallel", sequence_parallel)):
        check_bool(name, v, error=PlanError)
    # None means "the published recipe's default for this system" (see make_plan)
    for name, v in (("flash_attention", flash_attention), ("overlap_dp", overlap_dp)):
        if v is not None:
            check_bool(name, v, error=PlanError)
    if recompute is not None:
        check_choice("recompute", recompute, RECOMPUTE_MODES, error=PlanError)
    check_str("dtype", dtype, error=PlanError, what="a dtype name such as 'bf16'")


def check_world(nodes: int, devices_per_node: int, system_name: str) -> None:
    """The world (nodes x devices per node) fits the simulator."""
    if nodes * devices_per_node > MAX_DEVICES:
        raise PlanError(
            f"nodes={nodes}: {nodes} x {devices_per_node} devices of {system_name} = {nodes * devices_per_node:,} "
            f"exceeds the simulator limit of {MAX_DEVICES:,} devices; use nodes <= {MAX_DEVICES // devices_per_node:,}")


def check_search_args(model: Any, instance: Any, nodes: Any, seq_len: Any, global_batch: Any, *,
                      micro_batches: Any, recompute_modes: Any, zero1: Any, sequence_parallel: Any, dtype: Any,
                      flash_attention: Any) -> None:
    """Types and ranges of every argument of :func:`trnsim.training.search`."""
    from trnsim.training.models import RECOMPUTE_MODES

    check_model_arg(model)
    check_instance_arg(instance)
    check_nodes(nodes)
    check_int("seq_len", seq_len, error=PlanError, min_value=1, max_value=MAX_SEQ_LEN)
    check_int("global_batch", global_batch, error=PlanError, min_value=1, max_value=MAX_GLOBAL_BATCH)
    for name, seq in (("micro_batches", micro_batches), ("recompute_modes", recompute_modes)):
        if isinstance(seq, (str, bytes)) or not hasattr(seq, "__iter__"):
            raise type_error(PlanError)(f"{name}={seq!r}: must be a tuple or list")
        if not 1 <= len(tuple(seq)) <= 64:
            raise PlanError(f"{name}={seq!r}: give between 1 and 64 entries")
    for mb in micro_batches:
        check_int("micro_batches[]", mb, error=PlanError, min_value=1, max_value=MAX_MICRO_BATCH)
    for rc in recompute_modes:
        check_choice("recompute_modes[]", rc, RECOMPUTE_MODES, error=PlanError)
    for name, v in (("zero1", zero1), ("sequence_parallel", sequence_parallel)):
        check_bool(name, v, error=PlanError)
    if flash_attention is not None:          # None: the published recipe's default
        check_bool("flash_attention", flash_attention, error=PlanError)
    check_str("dtype", dtype, error=PlanError, what="a dtype name such as 'bf16'")


def check_throughput_args(seq_len: Any, tokens_per_s: Any, devices: Any, peak_tflops_per_device: Any) -> None:
    """Arguments of :func:`trnsim.training.mfu_from_throughput`."""
    check_int("seq_len", seq_len, error=PlanError, min_value=1, max_value=MAX_SEQ_LEN)
    check_positive("tokens_per_s", tokens_per_s, error=PlanError, fix="a measured training throughput")
    check_int("devices", devices, error=PlanError, min_value=1, max_value=10**9)
    check_positive("peak_tflops_per_device", peak_tflops_per_device, error=PlanError,
                   fix="the vendor dense peak of one device in TFLOPS")
