"""Headless tests of the notebook-13 panels."""
import matplotlib

matplotlib.use("Agg")

from trnsim.course.ui.deploy import MapPanel, PlannerPanel


def test_map_panel():
    p = MapPanel(draw=False)
    assert p.summary.splitlines()[0].startswith("ap-southeast-5")
    p.origin.value = "Kota Kinabalu"
    lines = p.summary.splitlines()
    assert lines[0].startswith("ap-southeast-1")  # from Sabah, Singapore is nearer than Kuala Lumpur
    my = next(line for line in lines if line.startswith("ap-southeast-5"))
    assert "1,6" in my  # ~1,600 km across the South China Sea
    q = MapPanel()
    q.neuron_in_region.value = True
    assert q.out.outputs


def test_planner_panel_follows_controls():
    p = PlannerPanel(draw=False)
    keys = {o.key for o in p.options}
    assert "in-region-neuron" not in keys
    p.neuron_in_region.value = True
    assert "in-region-neuron" in {o.key for o in p.options}
    p.route.value = None
    assert p.result.residency.ok  # the top option never breaks residency
    assert "not legal advice" in p.summary
    p.data_class.value = "public"
    assert all(not o.residency.cross_border for o in p.options)


def test_planner_panel_error():
    p = PlannerPanel(draw=False)
    p.data_class.value = "sensitive"   # health data with no PDPA s.40 basis chosen: no plan is allowed
    p.model.value = "llama3.1-70b"
    assert not p.error and not p.result.feasible  # shown as infeasible, with reasons
    assert p.result.reasons
