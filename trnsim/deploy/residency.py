"""A rule checker for Malaysia's PDPA 2010 as amended in 2024 (educational aid, NOT legal advice).

Given a data class (public, de-identified, personal, sensitive), where the data is processed
(region), how many data subjects, for sensitive data the s.40 basis (explicit consent or a listed
exception), and, for a cross-border plan, which s.129 route the controller relies on, :func:`assess` returns a verdict and the steps each option requires,
each step citing its source in ``data/residency.json``. The rules come from law-firm summaries,
and s.4/s.40 (sensitive personal data) from the Act (source PDPA-ACT).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from trnsim.deploy._data import cite, residency_data, value
from trnsim.deploy.catalog import DeployError, region

DATA_CLASSES = ("public", "de-identified", "personal", "sensitive")
PLANS = ("in-country", "cross-border", "hybrid")


@dataclass(frozen=True)
class Step:
    """One thing the controller must do, with the source key that says so."""

    text: str
    source: str

    def __str__(self) -> str:
        return f"{self.text} [{self.source}]"


@dataclass(frozen=True)
class ResidencyVerdict:
    """Outcome of :func:`assess`.

    ``verdict`` is 'no transfer restriction', 'allowed with steps' or 'not allowed as planned'.
    ``cross_border`` says whether personal data leaves Malaysia under the plan.
    """

    data_class: str
    region: str
    plan: str
    verdict: str
    cross_border: bool
    route: str | None
    steps: tuple[Step, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return self.verdict != "not allowed as planned"

    def sources(self) -> list[str]:
        """Full citations for every source key the steps use."""
        data = residency_data()
        keys = sorted({s.source for s in self.steps})
        return [f"[{k}] {cite(data, k)}" for k in keys]

    def explain(self) -> str:
        """A readable explanation: verdict, steps, sources and the disclaimer."""
        lines = [f"{self.data_class} data, {self.plan} plan, processed in {self.region}: {self.verdict.upper()}"]
        if self.route:
            lines.append(f"  transfer route: {self.route}")
        lines += [f"  - {s}" for s in self.steps]
        lines += [f"  note: {n}" for n in self.notes]
        lines.append("  sources:")
        lines += [f"    {c}" for c in self.sources()]
        lines.append("  " + disclaimer())
        return "\n".join(lines)


def disclaimer() -> str:
    """The checker's disclaimer (educational aid, not legal advice)."""
    return residency_data()["meta"]["disclaimer"]


def transfer_routes() -> dict[str, str]:
    """s.129 route keys -> labels."""
    return {k: v["label"] for k, v in residency_data()["cross_border"]["routes"].items()}


def _check_inputs(data_class: str, plan: str, route: str | None, n_data_subjects: int) -> None:
    from trnsim.catalog.validation import check_int, check_str

    check_str("data_class", data_class, error=DeployError, what=f"one of {DATA_CLASSES}")
    check_str("plan", plan, error=DeployError, what=f"one of {PLANS}")
    if route is not None:
        check_str("route", route, error=DeployError, what="a transfer route key (see transfer_routes()) or None")
    check_int("n_data_subjects", n_data_subjects, error=DeployError, min_value=0, max_value=10**10,
              allow_integral_float=False, fix="how many people's data is processed")
    if data_class not in DATA_CLASSES:
        raise DeployError(f"unknown data class {data_class!r}: choose one of {DATA_CLASSES}")
    if plan not in PLANS:
        raise DeployError(f"unknown plan {plan!r}: choose one of {PLANS}")
    if route is not None and route not in transfer_routes():
        raise DeployError(f"unknown transfer route {route!r}: choose one of {tuple(transfer_routes())}")
    if n_data_subjects < 0:
        raise DeployError(f"n_data_subjects must be >= 0 (got {n_data_subjects})")


def sensitive_bases() -> dict[str, str]:
    """s.40 basis keys -> labels: explicit consent or one of the Act's listed exceptions."""
    return {k: v["label"] for k, v in residency_data()["sensitive_processing"]["bases"].items()}


def _s40_step(sensitive_basis: str | None) -> tuple[Step, bool]:
    """The s.40 step for sensitive personal data, and whether a basis is still missing."""
    sp = residency_data()["sensitive_processing"]
    bases = sp["bases"]
    if sensitive_basis is None:
        options = "; ".join(f"{k}: {v['label']}" for k, v in bases.items())
        return Step("Sensitive personal data (PDPA s.40): processing needs the data subject's explicit consent or a "
                    f"listed exception, wherever it runs. Choose and document one. Options: {options}", "PDPA-ACT"), True
    if sensitive_basis not in bases:
        raise DeployError(f"unknown s.40 basis {sensitive_basis!r}: choose one of {tuple(bases)}")
    b = bases[sensitive_basis]
    return Step(f"Sensitive personal data (PDPA s.40): processing relies on {b['label']}; record it for every data "
                "subject and purpose", b["source"]), False


def _in_country_duties(data_class: str, n_data_subjects: int, monitoring: bool) -> list[Step]:
    d = residency_data()
    steps: list[Step] = []
    dpo = d["dpo"]
    limit = value(dpo["threshold_sensitive_data_subjects"] if data_class == "sensitive" else dpo["threshold_data_subjects"])
    src = (dpo["threshold_sensitive_data_subjects"] if data_class == "sensitive" else dpo["threshold_data_subjects"])["source"]
    if n_data_subjects > limit or monitoring:
        why = f"more than {limit:,} data subjects" if n_data_subjects > limit else "regular and systematic monitoring"
        steps.append(Step(
            f"Appoint a Data Protection Officer ({why}); notify the appointment within "
            f"{value(dpo['notify_within_days'])} days; the DPO must be {value(dpo['residency'])}", src))
    bn = d["breach_notification"]
    steps.append(Step(
        f"Breach plan: notify the Commissioner within {value(bn['commissioner_hours'])} hours of becoming aware of a "
        f"significant-harm breach and affected individuals within {value(bn['individuals_days'])} days; keep breach "
        f"records for at least {value(bn['record_keeping_years'])} years", bn["commissioner_hours"]["source"]))
    steps.append(Step("Processors (e.g. the cloud provider) must meet the Security Principle; put it in the contract",
                      d["security_principle_processors"]["source"]))
    return steps


def assess(
    data_class: str,
    region_code: str,
    *,
    plan: str | None = None,
    route: str | None = None,
    n_data_subjects: int = 0,
    monitoring: bool = False,
    sensitive_basis: str | None = None,
) -> ResidencyVerdict:
    """Check a plan against the PDPA rules in ``data/residency.json``.

    Parameters
    ----------
    data_class : 'public' | 'de-identified' | 'personal' | 'sensitive'
    region_code : where inference runs (the data's destination).
    plan : 'in-country', 'cross-border' or 'hybrid' (personal data stays in Malaysia, only
        de-identified data crosses). Default: in-country if the region is in Malaysia, else cross-border.
    route : s.129 route relied on for a cross-border transfer of personal data (see
        :func:`transfer_routes`). None means no route chosen yet: the verdict is then
        'not allowed as planned' with the options listed.
    n_data_subjects : how many people's data is processed (DPO thresholds).
    monitoring : whether processing involves regular and systematic monitoring.
    sensitive_basis : for 'sensitive' data, the s.40 basis relied on (see :func:`sensitive_bases`:
        explicit consent or a listed exception such as medical purposes). None means not chosen yet:
        the verdict is then 'not allowed as planned', whatever the region.
    """
    from trnsim.catalog.validation import check_bool

    check_bool("monitoring", monitoring, error=DeployError)
    if plan is not None and not isinstance(plan, str):
        _check_inputs(data_class, plan, route, n_data_subjects)
    r = region(region_code)
    plan = plan or ("in-country" if r.in_malaysia else "cross-border")
    _check_inputs(data_class, plan, route, n_data_subjects)
    d = residency_data()
    cb = d["cross_border"]
    personal = bool(value(d["data_classes"][data_class]["is_personal_data"]))
    notes: list[str] = []
    if plan == "in-country" and not r.in_malaysia:
        raise DeployError(
            f"plan 'in-country' needs a region in Malaysia, but {region_code} is in {r.country}; "
            "use plan='cross-border' or 'hybrid', or region 'ap-southeast-5'"
        )
    if plan == "hybrid" and r.in_malaysia:
        raise DeployError("a 'hybrid' plan sends de-identified data to a region outside Malaysia; pick that foreign region")

    if not personal:
        steps = []
        if data_class == "de-identified":
            steps.append(Step("De-identify in Malaysia before the data leaves; test that individuals cannot be "
                              "re-identified, otherwise treat the data as personal", "TRNSIM"))
        return ResidencyVerdict(data_class, region_code, plan, "no transfer restriction", False, None, tuple(steps),
                                ("PDPA duties attach to personal data; this class is treated as non-personal",))

    duties = _in_country_duties(data_class, n_data_subjects, monitoring)
    s40_missing = False
    if data_class == "sensitive":
        notes.append(f"biometric data counts as sensitive personal data since {value(d['data_classes']['sensitive']['includes_biometric_since'])}")
        s40, s40_missing = _s40_step(sensitive_basis)
        duties = [s40] + duties
        if s40_missing:
            notes.append("sensitive personal data needs a s.40 basis (explicit consent or a listed exception) before any processing")
    blocked = "not allowed as planned"

    if plan == "in-country":
        steps = [Step("Keep processing, logs and backups in ap-southeast-5; enforce with a Region-deny guardrail",
                      d["controls"]["region_deny"]["source"]),
                 Step("Hold encryption keys under your own custody (KMS custom key store) if operator access is a concern",
                      d["controls"]["customer_keys"]["source"])] + duties
        return ResidencyVerdict(data_class, region_code, plan, blocked if s40_missing else "no transfer restriction", False,
                                None, tuple(steps), tuple(notes))

    if plan == "hybrid":
        steps = [Step("Route requests carrying personal data to in-country serving (ap-southeast-5); send only "
                      "de-identified text abroad", "TRNSIM"),
                 Step("De-identify in Malaysia before the data leaves; test that individuals cannot be re-identified",
                      "TRNSIM")] + duties
        notes.append("if de-identification fails for some requests, those requests become a cross-border transfer of personal data")
        return ResidencyVerdict(data_class, region_code, plan, blocked if s40_missing else "allowed with steps", False,
                                None, tuple(steps), tuple(notes))

    # cross-border transfer of personal data
    routes = cb["routes"]
    if route is None:
        options = "; ".join(f"{k}: {v['label']}" for k, v in routes.items())
        steps = [Step(f"Choose a s.129 route (the whitelist was removed, in force {value(cb['in_force'])}). Options: {options}",
                      cb["whitelist_removed"]["source"])] + duties
        return ResidencyVerdict(data_class, region_code, plan, "not allowed as planned", True, None, tuple(steps),
                                tuple(notes + ["a cross-border transfer of personal data needs a lawful route"]))
    rt = routes[route]
    steps = []
    if value(rt["requires_tia"]):
        steps.append(Step(
            f"Carry out and document a Transfer Impact Assessment for {r.country} under {value(cb['guideline'])}; "
            f"reassess every {value(cb['tia_reassess_years'])} years", rt["requires_tia"]["source"]))
        steps.append(Step(f"Put recognised safeguards in place: {', '.join(value(cb['safeguards']))}", cb["safeguards"]["source"]))
    else:
        steps.append(Step(f"Rely on the {rt['label']}; document why it applies to every request sent abroad", rt["source"]))
    steps += duties
    notes.append("the s.129 public-interest limb was deleted and cannot be relied on")
    return ResidencyVerdict(data_class, region_code, plan, blocked if s40_missing else "allowed with steps", True,
                            rt["label"], tuple(steps), tuple(notes))
