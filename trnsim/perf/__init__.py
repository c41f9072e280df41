"""trnsim.perf: the kernel cost model.

Pure per-instruction cycle formulas (``cost``), DMA transfer costs (``dma``), a dependency-driven
in-order scheduler (``schedule``), the ``Profile`` record with its bottleneck summary (``profile``),
the cost of ``nki.collectives`` calls via ``trnsim.cluster.cost_collective`` (``collective``;
``profile_ranks`` profiles a multi-rank kernel, one Profile per rank), a roofline (``roofline``), NKI's ``benchmark`` decorator (``benchmark``), neuron-profile's summary
metrics (``metrics``) and the predicted-vs-published check on real-hardware kernel latencies
(``validation.published_vs_predicted``; import it from ``trnsim.perf.validation``). Constants come from the
catalog (``trnsim.target(name).core``/``.chip``); modelling choices from data/perf_model.json.
"""
from trnsim.perf.benchmark import BenchmarkError, benchmark
from trnsim.perf.errors import CostModelError
from trnsim.perf.cost import compute_cycles, instruction_cost_ns, tensor_peak_tflops
from trnsim.perf.dma import dma_cost_ns, dma_params, dma_plan, stream_throughput_fraction
from trnsim.perf.metrics import NeuronProfileMetrics, neuron_profile_metrics
from trnsim.perf.collective import COLLECTIVE_OPS, CollectiveCost, collective_cost
from trnsim.perf.profile import Occupancy, Profile, profile, profile_ranks, profile_trace
from trnsim.perf.roofline import Roofline, matmul_intensity, roofline
from trnsim.perf.schedule import ENGINE_NAMES, Timeline, schedule, schedule_instructions

__all__ = [
    "CostModelError", "compute_cycles", "instruction_cost_ns", "tensor_peak_tflops",
    "dma_cost_ns", "dma_params", "dma_plan", "stream_throughput_fraction",
    "NeuronProfileMetrics", "neuron_profile_metrics",
    "ENGINE_NAMES", "Timeline", "schedule", "schedule_instructions",
    "Profile", "Occupancy", "profile", "profile_ranks", "profile_trace",
    "COLLECTIVE_OPS", "CollectiveCost", "collective_cost",
    "Roofline", "roofline", "matmul_intensity",
    "benchmark", "BenchmarkError",
]
