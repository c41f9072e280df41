"""Deployment planner for serving an LLM to users in Malaysia.

For a request (where users are, data class, request rate, latency objective, model) the
planner builds options - region x instance type x plan - and ranks them:

1. **In-country GPU**: ap-southeast-5 with g6 (NVIDIA L4), the only accelerator listed there.
2. **Singapore Inferentia2 with a transfer assessment**: ap-southeast-1 inf2, cross-border.
3. **Hybrid**: requests carrying personal data served in-country on g6; the rest, de-identified,
   on Singapore inf2.
4. **In-region Neuron (scenario)**: inf2 in ap-southeast-5, only when the learner switches on
   ``neuron_in_region`` - no source lists it as of the data date.
5. **US East Inferentia2** (cross-border, far, cheapest listed price) for contrast.

Each fleet is sized by the discrete-event simulation (:func:`trnsim.serving.instances_needed`)
so that p99 time to first token *as the user sees it* (network RTT + server TTFT) meets the
objective. Monthly cost = instances x USD/h x 730 h (listed price, or a labelled proxy);
monthly carbon = instances x assumed power x 730 h x PUE x grid intensity (one basis).
The residency verdict comes from :func:`trnsim.deploy.residency.assess`.
Options that break residency, lack capacity, do not fit, or miss the objective rank last,
with the reasons.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from trnsim.deploy import carbon as carbon_mod
from trnsim.deploy.latency import estimate_rtt
from trnsim.catalog.validation import check_bool, check_int, check_number, check_positive, type_error
from trnsim.deploy.catalog import MALAYSIA_REGION, DeployError, check_name, offering, price, price_factor
from trnsim.deploy.checks import MAX_PLAN_BATCH, MAX_PLAN_REQUESTS, MAX_RATE_RPS
from trnsim.deploy.residency import DATA_CLASSES, ResidencyVerdict, assess, transfer_routes


@dataclass(frozen=True)
class PlanRequest:
    """What the learner asks for. Latency objective: p99 time to first token seen by users, in ms."""

    users: str = "Kuala Lumpur"
    data_class: str = "personal"
    rate_rps: float = 2.0
    ttft_slo_ms: float = 1000.0
    model: str = "llama3.1-8b"
    input_tokens: int = 512
    output_tokens: int = 128
    n_data_subjects: int = 100_000
    personal_share: float = 0.3
    neuron_in_region: bool = False
    proxy_price_factor: float | None = None
    transfer_route: str | None = "adequate_protection"
    sensitive_basis: str | None = None       # PDPA s.40 basis for sensitive data (residency.sensitive_bases())
    carbon_basis: str = "lifecycle"
    max_batch: int = 8
    n_requests: int = 300
    seed: int = 0
    rank_by: str = "cost"


@dataclass(frozen=True)
class Fleet:
    """One set of identical instances in one region serving ``rate_rps``."""

    region: str
    instance: str
    tp: int
    batch: int
    rate_rps: float
    instances: int | None
    rtt_ms: float
    server_ttft_p99_ms: float | None
    usd_per_hour: float | None
    price_basis: str
    price_label: str
    kgco2e_per_month: float | None
    carbon_label: str
    capacity: str
    hypothetical: bool
    problem: str = ""

    @property
    def user_ttft_p99_ms(self) -> float | None:
        return None if self.server_ttft_p99_ms is None else self.rtt_ms + self.server_ttft_p99_ms

    @property
    def usd_per_month(self) -> float | None:
        if self.instances is None or self.usd_per_hour is None:
            return None
        return self.instances * self.usd_per_hour * carbon_mod.HOURS_PER_MONTH


@dataclass(frozen=True)
class PlanOption:
    """A ranked option: one or two fleets, a residency verdict, and whether it is feasible."""

    key: str
    label: str
    plan: str
    fleets: tuple[Fleet, ...]
    residency: ResidencyVerdict
    reasons: tuple[str, ...] = field(default_factory=tuple)
    rank: int = 0

    @property
    def feasible(self) -> bool:
        return not self.reasons

    @property
    def hypothetical(self) -> bool:
        return any(f.hypothetical for f in self.fleets)

    @property
    def usd_per_month(self) -> float | None:
        costs = [f.usd_per_month for f in self.fleets]
        return None if any(c is None for c in costs) else float(sum(costs))

    @property
    def estimated_price(self) -> bool:
        return any(f.price_basis == "proxy" for f in self.fleets)

    @property
    def kgco2e_per_month(self) -> float | None:
        vals = [f.kgco2e_per_month for f in self.fleets]
        return None if any(v is None for v in vals) else float(sum(vals))

    @property
    def user_ttft_p99_ms(self) -> float | None:
        vals = [f.user_ttft_p99_ms for f in self.fleets]
        return None if any(v is None for v in vals) else float(max(vals))

    @property
    def rtt_ms(self) -> float:
        return max(f.rtt_ms for f in self.fleets)

    def row(self) -> str:
        sized = all(f.instances is not None for f in self.fleets)
        cost = "-" if not sized else "no price in the sources" if self.usd_per_month is None else f"${self.usd_per_month:>9,.0f}{'*' if self.estimated_price else ' '}"
        co2 = "n/a" if self.kgco2e_per_month is None else f"{self.kgco2e_per_month:,.0f} kg"
        ttft = "-" if self.user_ttft_p99_ms is None else f"{self.user_ttft_p99_ms:,.0f} ms"
        inst = " + ".join(f"{f.instances if f.instances is not None else '?'}x {f.instance}@{f.region}" for f in self.fleets)
        status = "OK" if self.feasible else "NO: " + "; ".join(self.reasons)
        return f"{self.rank}. {self.label:<46} {inst:<44} RTT {self.rtt_ms:5.1f} ms  TTFT p99 {ttft:>9}  {cost}/month  {co2} CO2e  [{status}]"


def _check_overrides(overrides: dict[str, Any]) -> None:
    """``plan(**overrides)`` names only fields of PlanRequest."""
    fields = [f.name for f in dataclasses.fields(PlanRequest)]
    unknown = [k for k in overrides if k not in fields]
    if unknown:
        raise type_error(DeployError)(f"plan() got unknown option(s) {unknown}; PlanRequest fields are {fields}")


def _check_request(req: Any) -> None:
    """Every field of a :class:`~trnsim.deploy.planner.PlanRequest`: types, ranges, finiteness."""
    if not isinstance(req, PlanRequest):
        raise type_error(DeployError)(f"req={req!r}: must be a PlanRequest (or None, with keyword overrides)")
    check_name("users", req.users, "a user site such as 'Kuala Lumpur' or a region code")
    check_name("data_class", req.data_class, "a data class such as 'personal'")
    check_positive("rate_rps", req.rate_rps, error=DeployError, max_value=MAX_RATE_RPS,
                   fix="requests per second the service must sustain")
    check_positive("ttft_slo_ms", req.ttft_slo_ms, error=DeployError, max_value=3.6e6,
                   fix="the p99 time-to-first-token objective in ms, e.g. 1000")
    check_name("model", req.model, "a model name such as 'llama3.1-8b'")
    from trnsim.training import models

    known = models()
    if req.model.strip().lower() not in known:
        raise DeployError(f"model={req.model!r} is not in the model catalog; use one of {', '.join(sorted(known))}")
    check_int("input_tokens", req.input_tokens, error=DeployError, min_value=1, max_value=10_000_000,
              allow_integral_float=False)
    check_int("output_tokens", req.output_tokens, error=DeployError, min_value=1, max_value=10_000_000,
              allow_integral_float=False)
    check_int("n_data_subjects", req.n_data_subjects, error=DeployError, min_value=0, max_value=10**10,
              allow_integral_float=False, fix="how many people's data is processed")
    check_number("personal_share", req.personal_share, error=DeployError, min_value=0.0, max_value=1.0,
                 fix="the fraction of requests carrying personal data")
    check_bool("neuron_in_region", req.neuron_in_region, error=DeployError)
    if req.proxy_price_factor is not None:
        check_positive("proxy_price_factor", req.proxy_price_factor, error=DeployError, max_value=100.0,
                       fix="a price ratio to us-east-1 such as price_factor('ap-southeast-1') ~ 1.4, or None")
    if req.transfer_route is not None:
        check_name("transfer_route", req.transfer_route, "a transfer route key or None")
    if req.carbon_basis not in carbon_mod.BASES:
        raise (DeployError if isinstance(req.carbon_basis, str) else type_error(DeployError))(
            f"carbon_basis={req.carbon_basis!r}: must be one of {carbon_mod.BASES}")
    check_int("max_batch", req.max_batch, error=DeployError, min_value=1, max_value=MAX_PLAN_BATCH,
              allow_integral_float=False)
    check_int("n_requests", req.n_requests, error=DeployError, min_value=10, max_value=MAX_PLAN_REQUESTS,
              allow_integral_float=False, fix="requests simulated per fleet size; a few hundred suffice")
    check_int("seed", req.seed, error=DeployError, min_value=0, max_value=2**63 - 1, allow_integral_float=False)
    check_name("rank_by", req.rank_by, "a ranking order")


def _check(req: PlanRequest) -> None:
    _check_request(req)
    if req.data_class not in DATA_CLASSES:
        raise DeployError(f"data_class {req.data_class!r} unknown: choose one of {DATA_CLASSES}")
    if not req.rate_rps > 0:
        raise DeployError(f"rate_rps must be > 0 (got {req.rate_rps})")
    if not req.ttft_slo_ms > 0:
        raise DeployError(f"ttft_slo_ms must be > 0 (got {req.ttft_slo_ms})")
    if not 0.0 <= req.personal_share <= 1.0:
        raise DeployError(f"personal_share is a fraction in [0, 1] (got {req.personal_share})")
    if req.rank_by not in RANK_BY:
        raise DeployError(f"rank_by {req.rank_by!r} unknown: choose one of {RANK_BY}")
    if req.transfer_route is not None and req.transfer_route not in transfer_routes():
        raise DeployError(f"transfer_route {req.transfer_route!r} unknown: choose one of {tuple(transfer_routes())} or None")


def _config(model, instance: str, req: PlanRequest):
    """Smallest TP that fits with at least one request; batch = min(max_batch, what fits)."""
    from trnsim.serving import max_batch, valid_tp

    for tp in valid_tp(model, instance):
        b = max_batch(model, instance, tp, req.input_tokens, req.output_tokens)
        if b >= 1:
            return tp, min(b, req.max_batch)
    return None


def _fleet(req: PlanRequest, region: str, instances: tuple[str, ...], rate: float, proxy: float) -> Fleet:
    """Cheapest instance type among ``instances`` in ``region`` meeting the objective at ``rate``.

    When none qualifies, the returned fleet has ``instances=None`` and the most informative
    ``problem`` (misses the objective > does not fit > not offered).
    """
    from trnsim.serving import instances_needed, serving_hardware

    rtt = estimate_rtt(req.users, region).typical_ms
    intensity = carbon_mod.grid_intensity(region, req.carbon_basis)
    pue_value, _ = carbon_mod.pue()
    best: Fleet | None = None
    failures: list[tuple[int, Fleet]] = []
    for name in instances:
        off = offering(region, name, neuron_in_region=req.neuron_in_region)
        quote = price(region, name, proxy_factor=proxy if (off.hypothetical or region == MALAYSIA_REGION) else None)
        if (best is not None and best.usd_per_month is not None and quote.usd_per_hour is not None
                and quote.usd_per_hour * carbon_mod.HOURS_PER_MONTH >= best.usd_per_month):
            continue  # even one instance of this type costs more than the best fleet found so far
        hw = serving_hardware(name)
        common = dict(region=region, instance=name, rate_rps=rate, rtt_ms=rtt, usd_per_hour=quote.usd_per_hour,
                      price_basis=quote.basis, price_label=quote.label, carbon_label=intensity.label,
                      capacity=off.status, hypothetical=off.hypothetical)
        unsized = dict(tp=0, batch=0, instances=None, server_ttft_p99_ms=None, kgco2e_per_month=None)
        if not off.available:
            failures.append((0, Fleet(problem=f"{name} is {off.status} in {region}", **unsized, **common)))
            continue
        cfg = _config(req.model, name, req)
        if cfg is None:
            failures.append((1, Fleet(problem=f"{req.model} does not fit on {name}", **unsized, **common)))
            continue
        tp, batch = cfg
        budget = req.ttft_slo_ms - rtt
        n, res = (None, None)
        if budget > 0:
            n, res = instances_needed(req.model, name, tp, batch, req.input_tokens, req.output_tokens, rate, budget,
                                      "continuous", metric="ttft", n_requests=req.n_requests, seed=req.seed)
        if n is None:
            miss = f"misses the {req.ttft_slo_ms:g} ms objective (RTT {rtt:.0f} ms)"
            failures.append((2, Fleet(problem=miss, **{**unsized, "tp": tp, "batch": batch}, **common)))
            continue
        kw, _ = carbon_mod.instance_power_kw(hw.accelerator, hw.accelerators)
        energy = carbon_mod.monthly_energy_kwh(n * kw, pue_value=pue_value)
        cand = Fleet(tp=tp, batch=batch, instances=n, server_ttft_p99_ms=res.ttft_p99_ms,
                     kgco2e_per_month=carbon_mod.monthly_kgco2e(energy, intensity), **common)
        cost = cand.usd_per_month
        if best is None or (cost is not None and (best.usd_per_month is None or cost < best.usd_per_month)):
            best = cand
    if best is not None:
        return best
    return max(failures, key=lambda f: f[0])[1]


INF2 = ("inf2.xlarge", "inf2.24xlarge", "inf2.48xlarge")
RANK_BY = ("cost", "residency", "carbon", "latency")
"""Ranking orders among feasible options: cheapest; no personal data abroad first (then cost);
least carbon; lowest p99 time to first token."""
G6 = ("g6.xlarge",)


def plan(req: PlanRequest | None = None, **overrides) -> list[PlanOption]:
    """Ranked deployment options for ``req`` (or a default request with ``overrides``)."""
    _check_overrides(overrides)
    req = req or PlanRequest()
    if overrides:
        req = PlanRequest(**{**req.__dict__, **overrides})
    _check(req)
    proxy = req.proxy_price_factor if req.proxy_price_factor is not None else price_factor("ap-southeast-1")
    personal = req.data_class in ("personal", "sensitive")
    kw = dict(n_data_subjects=req.n_data_subjects, sensitive_basis=req.sensitive_basis)
    options: list[PlanOption] = []

    f = _fleet(req, MALAYSIA_REGION, G6, req.rate_rps, proxy)
    options.append(PlanOption("in-country-gpu", "In-country GPU (g6, NVIDIA L4)", "in-country", (f,),
                              assess(req.data_class, MALAYSIA_REGION, plan="in-country", **kw)))

    f = _fleet(req, "ap-southeast-1", INF2, req.rate_rps, proxy)
    options.append(PlanOption("singapore-inf2", "Singapore Inferentia2 + transfer assessment", "cross-border", (f,),
                              assess(req.data_class, "ap-southeast-1", plan="cross-border", route=req.transfer_route, **kw)))

    if personal and 0.0 < req.personal_share < 1.0:
        f_my = _fleet(req, MALAYSIA_REGION, G6, req.rate_rps * req.personal_share, proxy)
        f_sg = _fleet(req, "ap-southeast-1", INF2, req.rate_rps * (1 - req.personal_share), proxy)
        options.append(PlanOption("hybrid", f"Hybrid: personal {req.personal_share:.0%} in MY, rest SG", "hybrid",
                                  (f_my, f_sg), assess(req.data_class, "ap-southeast-1", plan="hybrid", **kw)))

    if req.neuron_in_region:
        f = _fleet(req, MALAYSIA_REGION, INF2, req.rate_rps, proxy)
        options.append(PlanOption("in-region-neuron", "In-region Inferentia2 (SCENARIO)", "in-country", (f,),
                                  assess(req.data_class, MALAYSIA_REGION, plan="in-country", **kw)))

    f = _fleet(req, "us-east-1", INF2, req.rate_rps, proxy)
    options.append(PlanOption("us-east-inf2", "US East Inferentia2 + transfer assessment", "cross-border", (f,),
                              assess(req.data_class, "us-east-1", plan="cross-border", route=req.transfer_route, **kw)))

    ranked = []
    for opt in options:
        reasons = [fl.problem for fl in opt.fleets if fl.problem]
        if not opt.residency.ok:
            # name what is missing: an s.40 basis for sensitive data (wherever it is processed) and / or a s.129
            # transfer route (only where personal data crosses the border)
            missing = []
            if req.data_class == "sensitive" and req.sensitive_basis is None:
                missing.append("record an s.40 basis for sensitive data: sensitive_basis=...")
            if (opt.residency.cross_border or opt.plan == "cross-border") and req.transfer_route is None:
                missing.append("choose a transfer route")
            reasons.append("residency: " + opt.residency.verdict
                           + (f" ({'; '.join(missing)})" if missing else ""))
        ranked.append(PlanOption(opt.key, opt.label, opt.plan, opt.fleets, opt.residency, tuple(reasons)))

    def key(o: PlanOption):
        cost = o.usd_per_month
        by_cost = (cost is None, cost if cost is not None else math.inf, o.rtt_ms)
        if req.rank_by == "residency":
            return (not o.feasible, o.residency.cross_border, o.hypothetical) + by_cost
        if req.rank_by == "carbon":
            co2 = o.kgco2e_per_month
            return (not o.feasible, co2 is None, co2 if co2 is not None else math.inf) + by_cost
        if req.rank_by == "latency":
            t = o.user_ttft_p99_ms
            return (not o.feasible, t if t is not None else math.inf) + by_cost
        return (not o.feasible,) + by_cost

    ranked.sort(key=key)
    return [PlanOption(o.key, o.label, o.plan, o.fleets, o.residency, o.reasons, i + 1) for i, o in enumerate(ranked)]


def report(options: list[PlanOption]) -> str:
    """A text table of ranked options, with footnotes on estimates and scenarios."""
    lines = [o.row() for o in options]
    if any(o.estimated_price for o in options):
        lines.append("* estimated price: no on-demand price for that region in the sources; us-east-1 price x a proxy factor")
    if any(o.hypothetical for o in options):
        lines.append("SCENARIO: no source lists Trainium/Inferentia in ap-southeast-5 as of the data date")
    return "\n".join(lines)
