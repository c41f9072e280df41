"""Fixtures for the real-browser test: a JupyterLab server on loopback and headless Debian Chromium.

Nothing here downloads a browser. Chromium comes from the system (Debian's ``chromium``
package, or the path in ``TRNSIM_CHROMIUM``) and Playwright drives it through
``executable_path``. When either is missing the tests are skipped with the reason.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = Path(os.environ.get("TRNSIM_NOTEBOOKS", REPO / "notebooks"))  # override to check other notebooks
ARTIFACTS = REPO / "tests" / "artifacts" / "browser"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                 "--disable-background-networking", "--disable-component-update", "--disable-dev-shm-usage"]
INSTALL_HINT = ("as root: apt-get update && apt-get install -y chromium; then pip install playwright "
                "(never run `playwright install`: it downloads a browser)")


def pytest_configure(config):
    config.addinivalue_line("markers", "browser: runs the notebooks in JupyterLab in headless Chromium (slow)")


def chromium_path() -> str | None:
    """The system Chromium: $TRNSIM_CHROMIUM, else chromium / chromium-browser on PATH."""
    env = os.environ.get("TRNSIM_CHROMIUM")
    if env:
        return env if Path(env).is_file() else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass(frozen=True)
class LabServer:
    base_url: str
    token: str
    root: Path
    process: subprocess.Popen

    def url(self, notebook: str) -> str:
        return f"{self.base_url}/lab/tree/{notebook}?reset&token={self.token}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_settings(folder: Path) -> None:
    """No news/update checks (no network, no toast in screenshots); every cell in the DOM."""
    settings = {
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                            "checkForUpdates": False},
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    }
    for rel, value in settings.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory):
    """JupyterLab on 127.0.0.1 serving a *copy* of the notebooks (the browser's saves never touch the repo)."""
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed: pip install -e '.[lab]'")
    work = tmp_path_factory.mktemp("lab")
    root = work / "notebooks"
    shutil.copytree(NOTEBOOKS, root)
    _write_settings(work / "settings")
    token, port = secrets.token_hex(16), _free_port()
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(work / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(work / "workspaces"), JUPYTER_RUNTIME_DIR=str(work / "runtime"))
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
           f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
           "--LabApp.news_url=", "--ServerApp.open_browser=False"]
    log = open(work / "jupyterlab.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=work)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {proc.returncode}; log: {work / 'jupyterlab.log'}")
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"JupyterLab did not answer on {base} within 120 s; log: {work / 'jupyterlab.log'}")
            time.sleep(0.5)
        yield LabServer(base, token, root, proc)
    finally:
        proc.terminate()  # jupyter_server shuts its kernels down on SIGTERM
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


@pytest.fixture(scope="session")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason=f"Playwright is not installed: {INSTALL_HINT}")
    path = chromium_path()
    if path is None:
        pytest.skip(f"Chromium is not installed (looked for $TRNSIM_CHROMIUM, chromium, chromium-browser): "
                    f"{INSTALL_HINT}")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()
