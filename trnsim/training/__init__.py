"""LLM training on simulated clusters: model catalog and math, plan estimator and search,
and a tiny numpy GPT trained data- and tensor-parallel over simulated NeuronCores.

* ``model(name)`` / ``models()``: the catalog (``data/models.json``) as :class:`ModelSpec`.
* ``estimate(model, instance, nodes, tp, pp, ...)``: one parallel plan -> :class:`Estimate`.
* ``search(model, instance, nodes, seq_len, global_batch)``: ranked plans and rejections.
* ``system(name)``: a Neuron instance or a GPU reference system as :class:`SystemSpec`.
* ``trnsim.training.tinygpt`` and ``trnsim.training.parallel``: the numpy GPT.
"""
from trnsim.training.estimate import (
    Estimate,
    MemoryBreakdown,
    Plan,
    chinchilla_tokens,
    estimate,
    make_plan,
    mfu_from_throughput,
)
from trnsim.training.models import RECOMPUTE_MODES, ModelSpec, model, model_sources, models
from trnsim.training.search import Rejection, SearchResult, search
from trnsim.training.systems import PlanError, SystemSpec, gpu_system_names, system

__all__ = [
    "ModelSpec", "model", "models", "model_sources", "RECOMPUTE_MODES",
    "Estimate", "MemoryBreakdown", "Plan", "estimate", "make_plan", "mfu_from_throughput", "chinchilla_tokens",
    "Rejection", "SearchResult", "search", "PlanError", "SystemSpec", "system", "gpu_system_names",
]
