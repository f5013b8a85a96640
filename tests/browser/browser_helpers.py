"""Helpers for the browser tests: a real JupyterLab server and a page that drives it.

:class:`JupyterServer` starts ``jupyter lab`` from this virtualenv on 127.0.0.1 (free port,
no token, no xsrf check, ``window.jupyterapp`` exposed, news off, notebook windowing off so
every cell is in the DOM) with its own config, runtime, settings and workspace folders.
:class:`NotebookPage` drives one notebook in a Playwright page through JupyterLab's own
commands (``docmanager:open``, ``notebook:run-all-cells``, ``docmanager:save``,
``notebook:close-and-shutdown``) and reads cells back from the notebook model and the DOM.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from playwright.sync_api import Browser, Locator, Page

from course_helpers import free_port

BIN = Path(sys.executable).parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1400, "height": 1000}

SERVER_START_S = 90       # jupyter lab answering /api
SERVER_STOP_S = 20        # each stage of a shutdown
APP_LOAD_MS = 90_000      # JupyterLab's front end loaded and restored
KERNEL_MS = 90_000        # a kernel started and ready
RUN_ALL_MS = 240_000      # every cell of a notebook executed
WIDGET_MS = 30_000        # a kernel round trip from a click to the changed widget

# User settings for the servers: render every cell (JupyterLab 4 windows a notebook, so
# cells out of view may be missing from the DOM or never laid out), no news or update
# checks (no network here), no autosave racing the explicit saves.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}


class JupyterServer:
    """``jupyter lab`` serving ``root`` (also its working directory); state under ``home``."""

    def __init__(self, root: Path, home: Path, name: str, *, env: dict[str, str] | None = None,
                 extra_args: tuple[str, ...] = ()) -> None:
        self.root, self.home, self.name = root, home, name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = home / f"{name}-server.log"
        settings = home / "lab-settings"
        for rel, values in LAB_SETTINGS.items():
            path = settings / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values), encoding="utf-8")
        self.env = {
            **os.environ, **(env or {}),
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "JUPYTER_CONFIG_DIR": str(home / "jupyter-config"),
            "JUPYTER_RUNTIME_DIR": str(home / "jupyter-runtime"),
            "JUPYTERLAB_SETTINGS_DIR": str(settings),
            "JUPYTERLAB_WORKSPACES_DIR": str(home / "lab-workspaces"),
            "IPYTHONDIR": str(home / "ipython"),
        }
        self.cmd = [
            str(BIN / "jupyter"), "lab", "--no-browser", "--ip=127.0.0.1",
            f"--port={self.port}", "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={root}", "--IdentityProvider.token=",
            "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
            "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
            "--allow-root", *extra_args,
        ]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> JupyterServer:
        """Start and poll ``/api`` until it answers (the process must stay alive)."""
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(self.cmd, cwd=self.root, env=self.env, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + SERVER_START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name}: jupyter lab exited with "
                                   f"{self.proc.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(OSError):
                if self.api("/api") is not None:
                    return self
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"{self.name}: jupyter lab did not answer /api within "
                           f"{SERVER_START_S} s:\n{self.log_tail()}")

    def api(self, path: str, method: str = "GET") -> object:
        req = urllib.request.Request(f"{self.url}{path}", method=method)
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
        return json.loads(body) if body else {}

    def sessions(self) -> list[dict]:
        return list(self.api("/api/sessions"))  # type: ignore[arg-type]

    def stop(self) -> None:
        """Shut down through the REST API (kernels too); signal the process group if stuck."""
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(OSError, urllib.error.URLError):
            self.api("/api/shutdown", method="POST")
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(SERVER_STOP_S)
                return
            except subprocess.TimeoutExpired:
                continue

    def log_tail(self, n: int = 6000) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-n:]
        except OSError:
            return "(no log)"


# Injected into every page before JupyterLab loads: small functions over window.jupyterapp,
# each finding the notebook panel by its path (so several notebooks may be open at once).
INIT_SCRIPT = r"""
window.__labkit = {
  withTimeout(promise, ms, what) {
    return Promise.race([promise, new Promise((_, reject) =>
      setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms))]);
  },
  panel(path) {
    for (const w of window.jupyterapp.shell.widgets('main')) {
      if (w.context && w.context.path === path && w.content && w.content.widgets) return w;
    }
    return null;
  },
  mustPanel(path) {
    const w = this.panel(path);
    if (!w) throw new Error(`no open notebook ${path}`);
    window.jupyterapp.shell.activateById(w.id);
    return w;
  },
  async open(path, ms) {
    const app = window.jupyterapp;
    await this.withTimeout(app.restored, ms, 'JupyterLab restored');
    const w = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
    await this.withTimeout(w.context.ready, ms, `${path} loaded`);
    await this.withTimeout(w.sessionContext.ready, ms, `${path} kernel session`);
    app.shell.activateById(w.id);
    return {windowing: w.content.notebookConfig.windowingMode,
            kernel: w.sessionContext.kernelDisplayName, cells: w.content.widgets.length};
  },
  kernelStatus(path) {
    const w = this.panel(path);
    const k = w && w.sessionContext.session && w.sessionContext.session.kernel;
    return k ? k.status : 'none';
  },
  async runAll(path, ms) {
    const w = this.mustPanel(path);
    // The command queues every cell but settles (false) at the FIRST failing cell, even one
    // tagged raises-exception, and then clears the [*] of the cells still queued, while the
    // kernel goes on with them. So after it, send a silent empty request: the kernel answers
    // requests in order, so its reply (and idle) come after every queued cell's output.
    const ok = await this.withTimeout(
      window.jupyterapp.commands.execute('notebook:run-all-cells'), ms, `run all of ${path}`);
    const kernel = w.sessionContext.session.kernel;
    const barrier = kernel.requestExecute(
      {code: '', silent: true, store_history: false, stop_on_error: false});
    await this.withTimeout(barrier.done, ms, `the cells queued in ${path}`);
    return ok;
  },
  async save(path, ms) {
    const w = this.mustPanel(path);
    await this.withTimeout(window.jupyterapp.commands.execute('docmanager:save'), ms, 'save');
    return w.context.model.dirty;
  },
  startCloseAndShutdown(path) {
    this.mustPanel(path);
    // Asks "Shut down the notebook?" first; the caller answers the dialog like a student.
    window.jupyterapp.commands.execute('notebook:close-and-shutdown');
    return true;
  },
  pendingWidgetViews(path) {
    // Widget outputs whose view has not rendered yet.
    const w = this.panel(path);
    if (!w) return -1;
    const outs = w.content.node.querySelectorAll(
      '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.widget-view+json"]');
    return Array.from(outs).filter(o => !o.querySelector('.jupyter-widgets')).length;
  },
  cells(path) {
    const w = this.panel(path);
    return w.content.widgets.map((cell, index) => {
      const m = cell.model.toJSON();
      const meta = m.metadata || {};
      const node = cell.node;
      const area = node.querySelector('.jp-OutputArea');
      return {
        index, type: m.cell_type, count: m.execution_count === undefined ? null
          : m.execution_count,
        source: Array.isArray(m.source) ? m.source.join('') : (m.source || ''),
        tags: meta.tags || [], nbgrader: meta.nbgrader || {},
        outputs: (m.outputs || []).map(o => ({
          type: o.output_type, name: o.name || null, ename: o.ename || null,
          evalue: o.evalue || null, mimes: o.data ? Object.keys(o.data) : []})),
        domStderr: node.querySelectorAll(
          '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]').length,
        domText: area ? area.innerText.slice(0, 4000) : '',
      };
    });
  },
};
"""

# A fingerprint of one bqplot figure: what a student sees change when a control moves.
FIGURE_SNAPSHOT = """fig => {
  const q = s => Array.from(fig.querySelectorAll(s));
  const plot = fig.querySelector('rect.plotarea_background');
  return {
    plot: plot ? [Number(plot.getAttribute('width')), Number(plot.getAttribute('height'))]
               : [0, 0],
    ticks: q('g.axis g.tick text').map(e => e.textContent),
    lines: q('svg.svg-figure path.line').map(e => e.getAttribute('d') || ''),
    bars: q('svg.svg-figure rect.bar').map(e => ['x', 'y', 'width', 'height']
      .map(a => e.getAttribute(a)).join(',')),
    points: q('svg.svg-figure g.object_grp').map(e => e.getAttribute('transform') || ''),
  };
}"""


def figure_snapshot(fig: Locator) -> dict:
    return fig.evaluate(FIGURE_SNAPSHOT)


def _number(text: str) -> float | None:
    try:
        x = float(text)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def drawn_marks(snap: dict) -> int:
    """Marks placed with real geometry: lines through two or more points, bars with a width
    at a finite position (a zero value is a zero-height bar on the axis), scatter points."""
    lines = [d for d in snap["lines"] if "L" in d and "NaN" not in d]
    bars = [b for b in snap["bars"] if None not in (nums := [_number(v) for v in b.split(",")])
            and nums[2] > 0 and nums[3] >= 0]
    points = [p for p in snap["points"] if p.startswith("translate(") and "NaN" not in p]
    return len(lines) + len(bars) + len(points)


class NotebookPage:
    """One notebook of ``server`` (``path`` relative to its root) in one Playwright page."""

    def __init__(self, page: Page, server: JupyterServer, path: str) -> None:
        self.page, self.server, self.path = page, server, path
        self.file = server.root / path
        self.folder = self.file.parent
        self.console_errors: list[str] = []
        page.on("console", lambda m: self.console_errors.append(m.text[:500])
                if m.type == "error" else None)
        page.on("pageerror", lambda e: self.console_errors.append(f"pageerror: {e}"[:500]))

    # -- JupyterLab commands ---------------------------------------------------------------
    def load_lab(self) -> None:
        """Load JupyterLab with a fresh workspace (nothing restored from an earlier page)."""
        self.page.goto(f"{self.server.url}/lab?reset", timeout=APP_LOAD_MS)
        self.page.wait_for_function("() => window.jupyterapp !== undefined",
                                    timeout=APP_LOAD_MS)

    def open(self) -> dict:
        info = self.page.evaluate("([p, ms]) => window.__labkit.open(p, ms)",
                                  [self.path, KERNEL_MS])
        self.wait_kernel_idle()
        return info

    def wait_kernel_idle(self, timeout_ms: int = KERNEL_MS) -> None:
        self.page.wait_for_function("p => window.__labkit.kernelStatus(p) === 'idle'",
                                    arg=self.path, timeout=timeout_ms)

    def run_all(self) -> bool:
        """Run All; wait until the kernel has answered every queued cell and every widget
        view has rendered. Returns the command's result (False once any cell raised)."""
        ok = self.page.evaluate("([p, ms]) => window.__labkit.runAll(p, ms)",
                                [self.path, RUN_ALL_MS])
        self.wait_kernel_idle(RUN_ALL_MS)
        self.page.wait_for_function("p => window.__labkit.pendingWidgetViews(p) === 0",
                                    arg=self.path, timeout=WIDGET_MS)
        return bool(ok)

    def save(self) -> bool:
        """``docmanager:save``; returns the model's dirty flag afterwards."""
        return bool(self.page.evaluate("([p, ms]) => window.__labkit.save(p, ms)",
                                       [self.path, WIDGET_MS]))

    def close_and_shutdown(self) -> None:
        """File > Close and Shut Down Notebook, answering its dialog with Ok."""
        self.page.evaluate("p => window.__labkit.startCloseAndShutdown(p)", self.path)
        dialog = self.page.locator(".jp-Dialog")
        dialog.locator(".jp-mod-accept").click(timeout=WIDGET_MS)
        self.page.wait_for_function("p => window.__labkit.panel(p) === null", arg=self.path,
                                    timeout=WIDGET_MS)
        deadline = time.monotonic() + WIDGET_MS / 1000
        while any(s.get("path") == self.path for s in self.server.sessions()):
            if time.monotonic() > deadline:
                raise AssertionError(f"the kernel session of {self.path} is still running")
            time.sleep(0.2)

    def cells(self) -> list[dict]:
        return self.page.evaluate("p => window.__labkit.cells(p)", self.path)

    # -- the notebook's content -----------------------------------------------------------
    @property
    def notebook(self) -> Locator:
        return self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook")

    def predictions(self) -> Locator:
        return self.notebook.locator(".labkit-prediction")

    def reveal_gates(self) -> Locator:
        """Each part's reveal (gates that are not inside an explore area), in part order."""
        return self.notebook.locator(
            "xpath=.//div[contains(concat(' ', @class, ' '), ' labkit-reveal-gate ')]"
            "[not(ancestor::div[contains(@class, 'labkit-explore-')])]")

    def explore(self, letter: str) -> Locator:
        return self.notebook.locator(f".labkit-explore-{letter}")

    def open_more(self, area: Locator) -> None:
        """Open every collapsed "More" disclosure in ``area`` (a part's controls and charts
        beyond the few it opens with), so everything in it is drawn."""
        more = area.locator(".labkit-more")
        for k in range(more.count()):
            header = more.nth(k).locator(".jupyter-widget-Collapse-header").first
            if "jupyter-widget-Collapse-open" not in (more.nth(k).locator(
                    ".jupyter-widget-Collapse").first.get_attribute("class") or ""):
                header.scroll_into_view_if_needed()
                header.click()

    def slider_handle(self, area: Locator, label: str) -> Locator:
        slider = area.locator(".widget-slider").filter(
            has=self.page.locator(".widget-label", has_text=label))
        return slider.locator(".noUi-handle")


def new_page(browser: Browser) -> Page:
    """A page in its own browser context (downloads accepted, explicit default timeout)."""
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
    context.set_default_timeout(WIDGET_MS)
    page = context.new_page()
    page.add_init_script(INIT_SCRIPT)
    return page


def wait_drawn(fig: Locator, timeout_ms: int = WIDGET_MS) -> dict:
    """Poll a bqplot figure until it is laid out with tick labels and drawn marks."""
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        snap = figure_snapshot(fig)
        if (min(snap["plot"]) > 0 and any(t.strip() for t in snap["ticks"])
                and drawn_marks(snap) > 0):
            return snap
        if time.monotonic() > deadline:
            raise AssertionError(f"figure not drawn within {timeout_ms} ms: {snap}")
        time.sleep(0.1)


def wait_changed(figs: Locator, before: list[dict], timeout_ms: int = WIDGET_MS) -> list[dict]:
    """Poll the figures until one shows other tick labels or mark geometry than ``before``."""
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        after = [figure_snapshot(figs.nth(k)) for k in range(len(before))]
        if after != before:
            return after
        if time.monotonic() > deadline:
            raise AssertionError(f"no chart changed within {timeout_ms} ms")
        time.sleep(0.1)
