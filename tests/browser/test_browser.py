"""Every notebook, run in real JupyterLab in headless Chromium, the way a learner runs it.

For each notebook in notebooks/: open it, run all cells, then assert that

* no cell raised (cells tagged ``raises-exception`` excepted) and every code cell ran;
* every widget view rendered (one rendered view per widget output, no
  "Error displaying widget" and no widget error view anywhere);
* in every widget panel, moving a control (a dropdown, a multi-select, a slider key press,
  a number box, a toggle button, a checkbox, a button) produces a NEW figure and no error text
  (a control whose change only shows an error does not count);
* no control of any panel is clipped at a notebook width of about 1,000 px: no truncated label,
  no dropdown or number box too narrow for its value, nothing past the right edge of the output;

and save a screenshot to tests/artifacts/browser/<notebook>.png (also when the test fails).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = Path(os.environ.get("TRNSIM_NOTEBOOKS", REPO / "notebooks"))  # override to check other notebooks
ARTIFACTS = REPO / "tests" / "artifacts" / "browser"

pytestmark = pytest.mark.browser

COURSE = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
VIEWPORT = {"width": 1150, "height": 900}   # with the left area closed: a notebook column of about 1,000 px
KERNEL_READY_S = 180
RUN_ALL_S = 600
CONTROL_EFFECT_S = 30
RAISES_TAGS = {"raises-exception", "nbval-raises-exception"}

JS_KERNEL_IDLE = """() => {
  const app = window.jupyterapp; if (!app) return false;
  const w = app.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!(k && k.status === 'idle' && w.content && w.content.widgets.length);
}"""

JS_RUN_ALL = """async (timeoutMs) => {
  const app = window.jupyterapp;
  const run = app.commands.execute('notebook:run-all-cells');
  const timer = new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), timeoutMs));
  return await Promise.race([run, timer]);
}"""

JS_CELLS = """() => {
  const nb = window.jupyterapp.shell.currentWidget;
  return nb.content.widgets.map((c, i) => {
    const code = c.model.type === 'code';
    const outs = code ? c.model.outputs.toJSON() : [];
    return {index: i, type: c.model.type, tags: c.model.getMetadata('tags') || [],
            source: c.model.sharedModel.getSource(), count: code ? c.model.executionCount : null,
            errors: outs.filter(o => o.output_type === 'error').map(o => `${o.ename}: ${o.evalue}`),
            widgets: outs.filter(o => o.data && o.data['application/vnd.jupyter.widget-view+json']).length};
  });
}"""

# Top-level widget views: an output of a cell's output area whose first child is a widget.
JS_MARK_PANELS = """() => {
  const nb = window.jupyterapp.shell.currentWidget;
  let n = 0; const found = [];
  nb.content.widgets.forEach((c, i) => {
    if (c.model.type !== 'code') return;
    c.node.querySelectorAll('.jp-Cell-outputArea > .jp-OutputArea-child > .jp-OutputArea-output').forEach(o => {
      if (o.querySelector(':scope > .jupyter-widgets')) {
        o.setAttribute('data-trnsim-panel', String(n));
        found.push({panel: n, cell: i}); n += 1;
      }
    });
  });
  return found;
}"""

# Widget views that failed: "Error displaying widget" (no model) or the error view ("Click to show javascript error").
JS_BROKEN_WIDGETS = """() => {
  const bad = Array.from(document.querySelectorAll('.jupyter-widgets-error-widget')).map(e => e.innerText.trim());
  document.querySelectorAll('.jp-OutputArea-output').forEach(e => {
    if (e.innerText.includes('Error displaying widget')) bad.push(e.innerText.trim().slice(0, 120));
  });
  return bad;
}"""

# What a panel *shows* (not its controls): text of Output/HTML/Label widgets and its images.
JS_SIGNATURE = """(el) => {
  const parts = [];
  el.querySelectorAll('.widget-output, .widget-html-content, .widget-htmlmath-content, .widget-label-basic')
    .forEach(e => parts.push(e.innerText));
  el.querySelectorAll('img').forEach(i => parts.push(i.getAttribute('src') || ''));
  el.querySelectorAll('canvas').forEach(c => { try { parts.push(c.toDataURL()); } catch (e) {} });
  return parts.join('\\u0001');
}"""


# The figures a panel shows (their PNG sources) and any error text in its Output widgets.
JS_FIGURES_AND_ERRORS = """(el) => ({
  figures: Array.from(el.querySelectorAll('img')).map(i => i.getAttribute('src') || ''),
  errors: Array.from(el.querySelectorAll('[data-mime-type="application/vnd.jupyter.stderr"], .jp-RenderedText.jp-mod-error'))
            .map(e => e.innerText.trim()).filter(t => t.length > 0),
})"""

# Controls that do not fit: a truncated label (ellipsis), a dropdown or number box narrower than its value,
# or a control reaching past the right edge of the cell's output area.
JS_CLIPPED = """(el) => {
  const area = el.getBoundingClientRect();
  const ctx = document.createElement('canvas').getContext('2d');
  const textWidth = (node, text) => { const cs = getComputedStyle(node); ctx.font = `${cs.fontSize} ${cs.fontFamily}`;
                                      return ctx.measureText(text).width; };
  const visible = n => n.offsetParent !== null && n.getClientRects().length > 0;
  const bad = [];
  el.querySelectorAll('.widget-label, .widget-label-basic span, .widget-readout').forEach(l => {
    if (visible(l) && l.innerText.trim() && l.scrollWidth > l.clientWidth + 1)
      bad.push(`label "${l.innerText.trim()}" is cut (${l.scrollWidth} px of text in ${l.clientWidth} px)`);
  });
  el.querySelectorAll('select:not([multiple])').forEach(s => {
    const t = s.selectedIndex >= 0 ? s.options[s.selectedIndex].text : '';
    if (visible(s) && textWidth(s, t) > s.clientWidth - 18)
      bad.push(`dropdown shows "${t}" in ${s.clientWidth} px`);
  });
  el.querySelectorAll('.widget-text input').forEach(i => {
    if (visible(i) && textWidth(i, i.value) > i.clientWidth - 8) bad.push(`box shows "${i.value}" in ${i.clientWidth} px`);
  });
  el.querySelectorAll('.widget-dropdown, .widget-text, .widget-slider, .widget-checkbox, .widget-toggle-buttons, '
                      + '.widget-select-multiple, .widget-button, .widget-play').forEach(c => {
    const r = c.getBoundingClientRect();
    if (visible(c) && r.right > area.right + 1)
      bad.push(`control "${(c.innerText || '').trim().slice(0, 30)}" ends at ${Math.round(r.right)} px, `
               + `past the output area's right edge at ${Math.round(area.right)} px`);
  });
  return {bad: bad, width: Math.round(area.width)};
}"""


def _signature(panel) -> tuple[str, int]:
    """Hash of what the panel shows, and how many characters of it there are."""
    shown = panel.evaluate(JS_SIGNATURE)
    return hashlib.sha256(shown.encode()).hexdigest(), len(shown.replace("\u0001", "").strip())


def _settled_signature(page, panel) -> tuple[str, int]:
    """The panel's signature once the kernel is idle and the view has stopped changing.

    Readings are taken only while the kernel is idle; two equal, non-empty readings in a row
    count as settled. A panel still blank (or still changing) after CONTROL_EFFECT_S seconds
    is returned as it is, and the caller's assertions report it.
    """
    page.wait_for_timeout(300)  # give the change time to reach the kernel
    deadline = time.monotonic() + CONTROL_EFFECT_S
    last = None
    while True:
        remaining_ms = max(1000, int((deadline - time.monotonic()) * 1000))
        page.wait_for_function(JS_KERNEL_IDLE, timeout=remaining_ms)
        now = _signature(panel)
        if now == last and now[1] > 0:
            return now
        if time.monotonic() > deadline:
            return now
        last = now
        page.wait_for_timeout(400)


def _control_actions(panel):
    """(description, action) pairs for the controls of a panel, most informative first."""
    actions = []
    for i in range(panel.locator("select:not([multiple])").count()):
        sel = panel.locator("select:not([multiple])").nth(i)

        def pick_other(sel=sel):
            values = sel.evaluate("s => Array.from(s.options).map(o => o.value)")
            current = sel.evaluate("s => s.value")
            other = next((v for v in values if v != current), None)
            if other is None:
                return False
            sel.select_option(other)
            return True

        actions.append((f"dropdown {i}", pick_other))
    for i in range(panel.locator("select[multiple]").count()):
        sel = panel.locator("select[multiple]").nth(i)

        def pick_set(sel=sel):
            values = sel.evaluate("s => Array.from(s.options).map(o => o.value)")
            current = sel.evaluate("s => Array.from(s.selectedOptions).map(o => o.value)")
            for k in (2, 3, 1):
                if len(values) >= k and values[:k] != current:
                    sel.select_option(values[:k])
                    return True
            return False

        actions.append((f"multi-select {i}", pick_set))
    for i in range(panel.locator(".noUi-handle").count()):
        handle = panel.locator(".noUi-handle").nth(i)

        def nudge(handle=handle):
            handle.focus()
            handle.press("ArrowRight")
            handle.press("ArrowRight")
            return True

        actions.append((f"slider {i}", nudge))
    for i in range(panel.locator(".widget-text input[type=number]").count()):
        box = panel.locator(".widget-text input[type=number]").nth(i)

        def bump(box=box):
            value = box.input_value()
            try:
                new = str(float(value) + 1)
            except ValueError:
                return False
            box.fill(new.rstrip("0").rstrip(".") if "." in new else new)
            box.press("Enter")
            return True

        actions.append((f"number box {i}", bump))
    for kind, selector in (("toggle button", ".widget-toggle-buttons button:not(.mod-active)"),
                           ("checkbox", ".widget-checkbox input[type=checkbox]"),
                           ("button", "button.widget-button")):
        for i in range(panel.locator(selector).count()):
            target = panel.locator(selector).nth(i)
            actions.append((f"{kind} {i}", lambda target=target: (target.click(), True)[1]))
    return actions


def _shutdown(page) -> None:
    try:
        page.evaluate("async () => { const w = window.jupyterapp.shell.currentWidget;"
                      " if (w && w.sessionContext) await w.sessionContext.shutdown(); }")
    except Exception:  # the page may already be gone; the server stops its kernels at the end anyway
        pass


@pytest.mark.skipif(not COURSE, reason="no notebooks in notebooks/")
@pytest.mark.parametrize("notebook", COURSE)
def test_notebook_in_jupyterlab(notebook, browser, lab_server):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / f"{Path(notebook).stem}.png"
    page = browser.new_page(viewport=VIEWPORT)
    page_errors: list[str] = []
    page.on("pageerror", lambda exc: page_errors.append(str(exc)))
    try:
        page.goto(lab_server.url(notebook), timeout=KERNEL_READY_S * 1000)
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=KERNEL_READY_S * 1000)
        page.wait_for_function(JS_KERNEL_IDLE, timeout=KERNEL_READY_S * 1000)
        page.evaluate("() => window.jupyterapp.commands.execute('application:toggle-left-area')")
        page.evaluate(JS_RUN_ALL, RUN_ALL_S * 1000)
        page.wait_for_function(JS_KERNEL_IDLE, timeout=RUN_ALL_S * 1000)
        page.wait_for_timeout(1500)  # let the last widget views render

        cells = page.evaluate(JS_CELLS)
        code = [c for c in cells if c["type"] == "code" and c["source"].strip()]
        errors = [f"cell {c['index']}: {e}" for c in code if not RAISES_TAGS & set(c["tags"]) for e in c["errors"]]
        assert not errors, f"{notebook}: cells raised in JupyterLab:\n" + "\n".join(errors)
        not_run = [c["index"] for c in code if c["count"] is None]
        assert not not_run, f"{notebook}: cells {not_run} did not run (Run All stopped early?)"

        broken = page.evaluate(JS_BROKEN_WIDGETS)
        assert not broken, (f"{notebook}: widget views failed to render ({broken[:3]}); "
                            "is the jupyterlab_widgets extension installed and matching ipywidgets?")
        panels = page.evaluate(JS_MARK_PANELS)
        expected = sum(c["widgets"] for c in code)
        assert len(panels) == expected, \
            f"{notebook}: {expected} widget outputs but {len(panels)} rendered widget views"

        clipped = []
        for p in panels:
            panel = page.locator(f'[data-trnsim-panel="{p["panel"]}"]')
            panel.scroll_into_view_if_needed()
            fit = panel.evaluate(JS_CLIPPED)
            p["output_width_px"] = fit["width"]
            clipped += [f"cell {p['cell']}: {b}" for b in fit["bad"]]
            before, size = _settled_signature(page, panel)
            assert size > 0, f"{notebook}: widget panel in cell {p['cell']} shows nothing before any control moves"
            figures_before = set(panel.evaluate(JS_FIGURES_AND_ERRORS)["figures"])
            tried, only_errors = [], []
            for label, act in _control_actions(panel):
                if not act():
                    continue
                tried.append(label)
                after, size = _settled_signature(page, panel)
                assert size > 0, f"{notebook}: widget panel in cell {p['cell']} went blank after moving {label}"
                if after == before:
                    continue
                shown = panel.evaluate(JS_FIGURES_AND_ERRORS)
                new_figures = [f for f in shown["figures"] if f and f not in figures_before]
                if shown["errors"] or not (new_figures or not figures_before):
                    # an error message, or text without a new figure, is not a successful change
                    only_errors.append(f"{label}: " + (shown["errors"][0][:100] if shown["errors"] else "no new figure"))
                    before, figures_before = after, set(shown["figures"])
                    continue
                p["changed_by"] = label
                break
            else:
                pytest.fail(f"{notebook}: widget panel in cell {p['cell']}: moving "
                            f"{', '.join(tried) or 'no control (none found)'} produced no new figure without an "
                            f"error" + (f" ({'; '.join(only_errors[:3])})" if only_errors else ""))
        assert not clipped, f"{notebook}: controls clipped at a {VIEWPORT['width']} px window:\n" + "\n".join(clipped)
        summary = {"notebook": notebook, "code_cells": len(code), "panels": panels}
        (ARTIFACTS / f"{Path(notebook).stem}.json").write_text(json.dumps(summary, indent=1))
        if panels:
            page.locator('[data-trnsim-panel="0"]').scroll_into_view_if_needed()
        assert not page_errors, f"{notebook}: JavaScript errors in the page: {page_errors[:3]}"
    finally:
        try:
            page.screenshot(path=str(shot))
        finally:
            _shutdown(page)
            page.close()
    assert shot.is_file() and shot.stat().st_size > 10_000


# ---------------------------------------------------------------------------------------------
# The JupyterLite site: it cannot run a kernel here (the Pyodide runtime lives on a CDN and this
# machine is offline), so check what can be checked offline: the site serves every notebook with
# its install cell, opens it with the Pyodide kernel, and asks the network for nothing but the
# Pyodide runtime (as the README says).
# ---------------------------------------------------------------------------------------------
PYODIDE_CDN_HOST = "cdn.jsdelivr.net"


@pytest.fixture(scope="session")
def lite_site(tmp_path_factory):
    pytest.importorskip("jupyterlite_core", reason="jupyterlite-core is not installed: "
                                                   "pip install jupyterlite-core==0.8.6 jupyterlite-pyodide-kernel==0.8.6")
    pytest.importorskip("jupyterlite_pyodide_kernel", reason="jupyterlite-pyodide-kernel is not installed")
    import functools
    import http.server
    import threading

    from trnsim.course.lite import build_site

    site = build_site(tmp_path_factory.mktemp("lite") / "site", NOTEBOOKS)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(Quiet, directory=str(site.output_dir)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.skipif(not COURSE, reason="no notebooks in notebooks/")
@pytest.mark.parametrize("notebook", COURSE)
def test_lite_site_opens_notebook(notebook, browser, lite_site):
    import nbformat

    site, base = lite_site
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport=VIEWPORT)
    off_site: list[str] = []

    def only_loopback(route):
        url = route.request.url
        if url.startswith(base):
            route.continue_()
        else:  # never leave the machine; record what the site asked for
            off_site.append(url)
            route.abort()

    context.route("**/*", only_loopback)
    page = context.new_page()
    try:
        page.goto(base + "/" + site.url_for(notebook), timeout=120_000)
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
        expected = len(nbformat.read(NOTEBOOKS / notebook, as_version=4).cells) + 2  # + the install note and cell
        page.wait_for_function(f"() => document.querySelectorAll('.jp-Notebook .jp-Cell').length === {expected}",
                               timeout=60_000)
        assert page.locator(".jp-Notebook .jp-Cell", has_text="piplite.install").count() == 1
        page.get_by_text("Python (Pyodide)").first.wait_for(timeout=60_000)
        page.wait_for_timeout(1000)
        hosts = {u.split("/")[2] for u in off_site}
        assert hosts <= {PYODIDE_CDN_HOST}, f"the site asked the network for more than Pyodide: {sorted(off_site)}"
    finally:
        page.screenshot(path=str(ARTIFACTS / f"lite_{Path(notebook).stem}.png"))
        context.close()
