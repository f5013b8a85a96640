"""Benchmark: what a student feels when moving a slider, in JupyterLab in Debian's chromium.

Starts JupyterLab from this venv on a temporary copy of ``release/`` (the browser tests'
:class:`JupyterServer` / :class:`NotebookPage`), opens each notebook, runs all cells,
commits every prediction (it unlocks the part's controls and charts), then per part A-D
picks the first slider whose key press changes a chart and presses ArrowRight/ArrowLeft on
its focused noUiSlider handle ``--moves`` times, waiting for each move to settle (kernel
idle, then 150 ms without a frame or mutation). Per move, in page time (performance.now()):

* total      -- keydown -> last change of a mark's geometry (``d``/``x``/``y``/``transform``
                ... of a path/rect/circle/g in the part's ``.bqplot`` figures, seen by a
                MutationObserver; unchanged values ignored). ``paint``: the frame after it.
* in->send   -- keydown -> the slider's ``comm_msg`` leaves on the kernel websocket (tapped);
* queue      -- that send -> the kernel's ``status: busy`` (its header date);
* kernel     -- kernel busy -> idle (header dates): callback, serialisation, sending;
* comm->mark -- dispatch of the last incoming ``comm_msg`` -> last mark change;
* msgs / KB  -- incoming ``comm_msg`` frames of the move and their bytes, and the bytes
                per model.trait (``bytes/move``);
* script / layout / style / task -- Chrome's Performance.getMetrics deltas per move;
* cpu ms/move -- CPU time (/proc) of the renderer, kernel, server, gpu and browser
                processes per move, minus that of a key press that moves nothing (Shift):
                robust when other jobs share the 2 cores, unlike the wall times.

Moves that change no mark are counted (``nochg``) and left out of the statistics. Also
printed: the Figures' front-end ``animation_duration``, the machine's busy share during each
part (wall times are only comparable at similar load). Options: ``--sweep`` walks the
slider end to end instead of alternating two values; ``--drag N`` adds N mouse drags per
part (continuous updates: updates sent, release -> settled, longest frame);
``--open-math`` expands the Math peeks first; ``--windowing MODE`` overrides the tests'
windowingMode 'none'; ``--trace`` / ``--profile`` add a Chrome trace (self time per event
and thread) or a CPU profile (self time per script and function) of each part's moves.

Run: .venv/bin/python benchmarks/bench_browser.py [NOTEBOOK ...] [--all] [--moves 50]
     [--parts ABCD] [--json out.json]
NOTEBOOK is a release folder (``lab1_cloud_fleet``) or ``<folder>/<file>.ipynb``; default:
lab1_cloud_fleet and lab2_iphone (about 3 minutes on 2 cores). Kernels inherit this
process's environment (so ``PYTHONPATH=/other/src`` benchmarks another labkit). Exits 0
unless JupyterLab cannot be driven (2 without chromium).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT / "tests" / "browser", ROOT / "tests"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from playwright.sync_api import Page, sync_playwright  # noqa: E402

from browser_helpers import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    JupyterServer,
    NotebookPage,
    new_page,
    wait_drawn,
)

RELEASE = ROOT / "release"
DEFAULT_NOTEBOOKS = ("lab1_cloud_fleet", "lab2_iphone")
PARTS = "ABCD"
QUIET_MS = 150        # no frame / mutation for this long after the kernel's idle: settled
MOVE_TIMEOUT_MS = 10_000
NO_SEND_MS = 300      # a key press that sends nothing within this long did nothing
NULL_MOVES = 10       # key presses that change nothing (Shift): the harness's own cost
GOAL_MS = 100.0

# Injected before JupyterLab loads: a websocket tap (kernel channels), a MutationObserver on
# one part's figures, long tasks and input timestamps, all in performance.now() time.
BENCH_JS = r"""
(() => {
  const B = {on: false, inputs: [], frames: [], muts: [], longtasks: [], rafs: [],
             painted: null, observer: null, protocols: new Map(), names: {}};
  window.__bench = B;
  const NativeWS = window.WebSocket;
  function TapWS(url, protocols) {
    const ws = protocols === undefined ? new NativeWS(url) : new NativeWS(url, protocols);
    if (String(url).includes('/api/kernels/')) {
      ws.addEventListener('message', ev => {
        if (B.on) B.frames.push({t: performance.now(), dir: 'in', data: ev.data, ws});
      });
      const send = ws.send.bind(ws);
      ws.send = data => {
        if (B.on) B.frames.push({t: performance.now(), dir: 'out', data, ws});
        return send(data);
      };
    }
    return ws;
  }
  TapWS.prototype = NativeWS.prototype;
  for (const k of ['CONNECTING', 'OPEN', 'CLOSING', 'CLOSED']) TapWS[k] = NativeWS[k];
  window.WebSocket = TapWS;

  for (const type of ['keydown', 'pointerdown', 'pointerup']) {
    document.addEventListener(type, e => { if (B.on) B.inputs.push({type, t: e.timeStamp}); },
                              true);
  }
  try {
    new PerformanceObserver(list => {
      if (!B.on) return;
      for (const e of list.getEntries()) B.longtasks.push({t: e.startTime, dur: e.duration});
    }).observe({entryTypes: ['longtask']});
  } catch (e) { /* no long tasks API */ }

  const dec = new TextDecoder('utf8');
  function decodeV1(buf) {
    const dv = new DataView(buf);
    const n = Number(dv.getBigUint64(0, true));
    const off = [];
    for (let i = 0; i < n; i++) off.push(Number(dv.getBigUint64(8 * (i + 1), true)));
    const part = i => dec.decode(buf.slice(off[i], off[i + 1]));
    const msg = {channel: part(0), header: JSON.parse(part(1)),
                 parent_header: JSON.parse(part(2)), content: JSON.parse(part(4))};
    msg.buffers = [];
    for (let i = 5; i < off.length - 1; i++) msg.buffers.push(off[i + 1] - off[i]);
    if (off.length > 5 && off[off.length - 1] < buf.byteLength)
      msg.buffers.push(buf.byteLength - off[off.length - 1]);
    return msg;
  }
  function decodeLegacyBinary(buf) {
    const dv = new DataView(buf);
    const n = dv.getUint32(0);
    const off = [];
    for (let i = 1; i <= n; i++) off.push(dv.getUint32(i * 4));
    const msg = JSON.parse(dec.decode(buf.slice(off[0], off[1])));
    msg.buffers = [];
    for (let i = 1; i < n; i++)
      msg.buffers.push((i + 1 < n ? off[i + 1] : buf.byteLength) - off[i]);
    return msg;
  }
  function parseDate(s) {  // ISO with microseconds -> page time (ms)
    if (!s) return null;
    const m = /^(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:?\d\d)?$/.exec(s);
    if (!m) return Date.parse(s) - performance.timeOrigin;
    const base = Date.parse(m[1] + (m[3] || 'Z'));
    return base + (m[2] ? Number(m[2]) * 1000 : 0) - performance.timeOrigin;
  }
  function parse(f) {
    if (f.p) return f.p;
    let msg, bytes;
    try {
      if (typeof f.data === 'string') { bytes = f.data.length; msg = JSON.parse(f.data); }
      else {
        const buf = f.data instanceof ArrayBuffer ? f.data
          : f.data.buffer.slice(f.data.byteOffset, f.data.byteOffset + f.data.byteLength);
        bytes = buf.byteLength;
        msg = (f.ws.protocol || '').startsWith('v1.') ? decodeV1(buf) : decodeLegacyBinary(buf);
      }
    } catch (e) { f.p = {t: f.t, dir: f.dir, bytes: 0, type: 'unparsed'}; return f.p; }
    const c = msg.content || {}, d = c.data || {};
    const state = d.state || {};
    const keyBytes = {};
    for (const [k, v] of Object.entries(state)) keyBytes[k] = JSON.stringify(v).length;
    (d.buffer_paths || []).forEach((path, i) => {
      const k = path[0];
      keyBytes[k] = (keyBytes[k] || 0) + (msg.buffers[i] || 0);
    });
    f.p = {t: f.t, dir: f.dir, bytes, channel: msg.channel,
           type: (msg.header || {}).msg_type, id: (msg.header || {}).msg_id,
           parent: (msg.parent_header || {}).msg_id, date: parseDate((msg.header || {}).date),
           state: c.execution_state, comm: c.comm_id, method: d.method, keyBytes};
    return f.p;
  }
  B.parse = parse;

  function isMark(el) {
    if (!el || !el.closest) return false;
    if (el.closest('g.axis') || el.closest('.legend') || el.closest('g.g_legend')) return false;
    const tag = el.tagName ? el.tagName.toLowerCase() : '';
    if (['path', 'rect', 'circle', 'line', 'polygon', 'ellipse'].includes(tag)) return true;
    return tag === 'g' && el.closest('svg.svg-figure') !== null;
  }
  function afterPaint() {
    const t = performance.now();
    requestAnimationFrame(() => setTimeout(() => {
      if (B.on && B.lastMark !== null && B.lastMark <= t) B.painted = performance.now();
    }, 0));
  }
  B.observe = function (letter) {
    if (B.observer) B.observer.disconnect();
    const area = document.querySelector(
      `.jp-NotebookPanel:not(.lm-mod-hidden) .labkit-explore-${letter}`);
    const figs = area ? Array.from(area.querySelectorAll('.bqplot.figure')) : [];
    B.observer = new MutationObserver(records => {
      if (!B.on) return;
      const t = performance.now();
      let mark = false;
      for (const r of records) {
        let kind;
        if (r.type === 'attributes') {
          if (r.target.getAttribute(r.attributeName) === r.oldValue) continue;
          kind = isMark(r.target) ? 'mark' : 'other';
        } else if (r.type === 'childList') {
          const nodes = [...r.addedNodes, ...r.removedNodes].filter(n => n.nodeType === 1);
          if (!nodes.length) continue;
          kind = isMark(r.target) || nodes.some(isMark) ? 'mark' : 'other';
        } else kind = 'other';
        B.muts.push({t, kind});
        if (kind === 'mark') mark = true;
      }
      if (mark) { B.lastMark = t; afterPaint(); }
    });
    for (const fig of figs) B.observer.observe(fig, {
      subtree: true, childList: true, characterData: true, attributes: true,
      attributeOldValue: true,
      attributeFilter: ['d', 'x', 'y', 'width', 'height', 'transform', 'x1', 'x2', 'y1', 'y2',
                        'cx', 'cy', 'r', 'points', 'visibility', 'display', 'style']});
    return figs.length;
  };
  B.begin = function (withRaf) {
    B.inputs = []; B.frames = []; B.muts = []; B.longtasks = []; B.rafs = [];
    B.painted = null; B.lastMark = null; B.on = true;
    if (withRaf) {
      const loop = t => { if (B.on) { B.rafs.push(t); requestAnimationFrame(loop); } };
      requestAnimationFrame(loop);
    }
  };
  function settledState() {
    const now = performance.now();
    const inputs = B.inputs;
    if (!inputs.length) return {done: false};
    const outs = B.frames.filter(f => f.dir === 'out').map(parse)
      .filter(p => p.type === 'comm_msg');
    const tIn = inputs[inputs.length - 1].t;
    if (!outs.length) return {done: now - tIn > __NO_SEND__, nothing: true};
    const ids = new Set(outs.map(p => p.id));
    const idle = B.frames.filter(f => f.dir === 'in').map(parse)
      .filter(p => p.type === 'status' && p.state === 'idle' && ids.has(p.parent));
    if (idle.length < ids.size) return {done: false};
    const last = Math.max(tIn, ...B.frames.map(f => f.t), ...B.muts.map(m => m.t),
                          B.painted || 0);
    return {done: now - last >= __QUIET__};
  }
  B.waitDone = function (timeoutMs) {
    const t0 = performance.now();
    return new Promise(resolve => {
      const tick = () => {
        const s = settledState();
        if (s.done) resolve({timeout: false, nothing: !!s.nothing});
        else if (performance.now() - t0 > timeoutMs) resolve({timeout: true});
        else setTimeout(tick, 20);
      };
      tick();
    });
  };
  B.collect = function () {
    B.on = false;
    const ps = B.frames.map(parse);
    const outs = ps.filter(p => p.dir === 'out' && p.type === 'comm_msg');
    const ids = new Set(outs.map(p => p.id));
    const ins = ps.filter(p => p.dir === 'in');
    const comm = ins.filter(p => p.type === 'comm_msg');
    const mine = ins.filter(p => ids.has(p.parent));
    const busy = mine.filter(p => p.type === 'status' && p.state === 'busy');
    const idle = mine.filter(p => p.type === 'status' && p.state === 'idle');
    let kernel = 0, queue = 0;
    for (const o of outs) {
      const b = busy.find(p => p.parent === o.id), i = idle.find(p => p.parent === o.id);
      if (b && i && b.date !== null && i.date !== null) kernel += i.date - b.date;
    }
    if (outs.length && busy.length && busy[0].date !== null) queue = busy[0].date - outs[0].t;
    const marks = B.muts.filter(m => m.kind === 'mark');
    const tIn = B.inputs.length ? B.inputs[0].t : null;
    const traffic = {};
    for (const p of comm) {
      for (const [k, v] of Object.entries(p.keyBytes || {})) {
        const key = `${B.names[p.comm] || p.comm.slice(0, 6)}.${k}`;
        traffic[key] = (traffic[key] || 0) + v;
      }
    }
    const end = Math.max(...B.frames.map(f => f.t), ...B.muts.map(m => m.t), tIn || 0);
    const lt = B.longtasks.filter(l => l.t + l.dur >= (tIn || 0) && l.t <= end);
    let maxFrame = 0;
    for (let i = 1; i < B.rafs.length; i++)
      maxFrame = Math.max(maxFrame, B.rafs[i] - B.rafs[i - 1]);
    const ups = B.inputs.filter(x => x.type === 'pointerup');
    return {
      input: tIn, release: ups.length ? ups[ups.length - 1].t : null,
      send: outs.length ? outs[0].t : null, lastSend: outs.length ? outs[outs.length - 1].t : null,
      nOut: outs.length, outBytes: outs.reduce((a, p) => a + p.bytes, 0),
      kernel, queue,
      idle: idle.length ? idle[idle.length - 1].t : null,
      nComm: comm.length, commBytes: comm.reduce((a, p) => a + p.bytes, 0),
      firstComm: comm.length ? comm[0].t : null,
      lastComm: comm.length ? comm[comm.length - 1].t : null,
      firstMark: marks.length ? marks[0].t : null,
      lastMark: marks.length ? marks[marks.length - 1].t : null,
      nMarkMuts: marks.length, painted: B.painted,
      longtaskMs: lt.reduce((a, l) => a + l.dur, 0), nLongtasks: lt.length, maxFrame,
      traffic, methods: comm.map(p => p.method),
      timeline: ps.filter(p => p.channel !== 'control').map(p => [
        p.dir, p.type + (p.state ? ':' + p.state : '') + (p.method ? ':' + p.method : ''),
        +(p.t - (tIn || 0)).toFixed(1),
        p.date === null || p.date === undefined ? null : +(p.date - (tIn || 0)).toFixed(1),
        p.bytes, p.comm ? (B.names[p.comm] || p.comm.slice(0, 6)) : '',
        Object.keys(p.keyBytes || {}).join(',')]),
      marks: marks.map(m => +(m.t - (tIn || 0)).toFixed(1)),
    };
  };
  B.manager = async function () {
    const app = window.jupyterapp;
    for (const w of app.shell.widgets('main')) {
      if (!w.content || !w.content.widgets) continue;
      for (const cell of w.content.widgets) {
        const area = cell.outputArea;
        if (!area) continue;
        for (const child of area.widgets) {
          for (const r of (child.widgets || [])) {
            if (r._manager && r._manager.promise) return await r._manager.promise;
          }
        }
      }
    }
    return null;
  };
  B.kernelExpr = async function (path, expr) {
    const w = window.__labkit.panel(path);
    const k = w.sessionContext.session.kernel;
    const f = k.requestExecute({code: '', silent: false, store_history: false,
                                user_expressions: {v: expr}});
    const reply = await f.done;
    const v = reply.content.user_expressions.v;
    return v.status === 'ok' ? v.data['text/plain'] : `${v.ename}: ${v.evalue}`;
  };
  B.loadNames = async function () {
    const m = await B.manager();
    if (!m) return {found: false};
    const figs = [];
    for (const [id, pm] of Object.entries(m._models)) {
      const model = await pm;
      const name = model.get('_model_name') || '?';
      B.names[id] = name.replace(/Model$/, '');
      if (name === 'FigureModel') figs.push(model.get('animation_duration'));
    }
    return {found: true, models: Object.keys(B.names).length, figureAnimation: figs};
  };
})();
""".replace("__QUIET__", str(QUIET_MS)).replace("__NO_SEND__", str(NO_SEND_MS))

METRICS = ("ScriptDuration", "LayoutDuration", "RecalcStyleDuration", "TaskDuration")


def notebook_paths(names: list[str], all_: bool) -> list[str]:
    found = sorted(p.relative_to(RELEASE).as_posix() for p in RELEASE.glob("lab*_*/*.ipynb"))
    if all_:
        return found
    out = []
    for name in names or DEFAULT_NOTEBOOKS:
        hits = [p for p in found if p == name or p.split("/")[0] == name.rstrip("/")]
        if not hits:
            raise SystemExit(f"no released notebook {name!r}; known: {', '.join(found)}")
        out += hits
    return out


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = (len(s) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


class Metrics:
    """Chrome's cumulative main-thread durations (Performance.getMetrics), in ms."""

    def __init__(self, page: Page) -> None:
        self.cdp = page.context.new_cdp_session(page)
        self.cdp.send("Performance.enable")

    def read(self) -> dict[str, float]:
        got = {m["name"]: m["value"] for m in self.cdp.send("Performance.getMetrics")["metrics"]}
        return {k: 1000.0 * float(got.get(k, 0.0)) for k in METRICS}


def cpu_times() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine, from /proc/stat (0, 0 elsewhere)."""
    try:
        vals = [float(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    except OSError:
        return 0.0, 0.0
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0.0)
    return sum(vals) - idle, sum(vals)


CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu(roots: list[int]) -> dict[str, float]:
    """CPU ms (user + system) so far of the descendants of ``roots``, by role: kernel,
    server, chromium renderer / gpu / browser / other. Robust to a busy machine, unlike
    wall time: what one move costs, whoever else runs."""
    kids: dict[int, list[int]] = defaultdict(list)
    stats: dict[int, tuple[str, float]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            raw = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2:].split()
        ppid, ut, st = int(fields[1]), float(fields[11]), float(fields[12])
        kids[ppid].append(int(d.name))
        stats[int(d.name)] = (cmd, (ut + st) * 1000.0 / CLK_TCK)
    out: dict[str, float] = defaultdict(float)
    todo, seen = list(roots), set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        todo += kids.get(pid, [])
        if pid not in stats or pid == os.getpid():
            continue
        cmd, ms = stats[pid]
        if "ipykernel" in cmd:
            role = "kernel"
        elif "jupyter-lab" in cmd or "jupyter lab" in cmd or "jupyter_lab" in cmd:
            role = "server"
        elif "chrom" in cmd:
            kind = cmd.split("--type=", 1)[1].split()[0] if "--type=" in cmd else "browser"
            role = {"renderer": "renderer", "gpu-process": "gpu", "browser": "browser"}.get(
                kind, "chrome-other")
        else:
            role = "other"
        out[role] += ms
    return dict(out)


def commit_predictions(nb: NotebookPage, letters: list[str]) -> None:
    """Commit the first choice of each part's prediction (it unlocks the controls)."""
    preds = nb.predictions()
    for i, _ in enumerate(letters):
        pred = preds.nth(i)
        status = pred.locator(".labkit-answer-status")
        if status.count() and "committed:" in status.inner_text():
            continue
        pred.get_by_role("radio").first.check()
        pred.get_by_role("button", name="Commit prediction").click()
        status.filter(has_text="committed:").wait_for()


def one_move(page: Page, metrics: Metrics, handle, key: str | None, *,
             raf: bool = False) -> dict:
    before = metrics.read()
    page.evaluate("r => window.__bench.begin(r)", raf)
    if key is not None:
        handle.press(key)
    return finish_move(page, metrics, before)


def finish_move(page: Page, metrics: Metrics, before: dict[str, float]) -> dict:
    state = page.evaluate("ms => window.__bench.waitDone(ms)", MOVE_TIMEOUT_MS)
    rec = page.evaluate("() => window.__bench.collect()")
    after = metrics.read()
    rec.update(state)
    rec["cpu"] = {k: after[k] - before[k] for k in METRICS}
    return rec


def at_max(handle) -> bool:
    return handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")


def choose_slider(page: Page, metrics: Metrics, area) -> tuple[int, str, str] | None:
    """The first slider of the area whose key press changes a mark (and back again)."""
    sliders = area.locator(".widget-slider").filter(has=page.locator(".noUi-handle"))
    for k in range(sliders.count()):
        s = sliders.nth(k)
        label = s.locator(".widget-label").first.inner_text().strip() or f"slider {k}"
        handle = s.locator(".noUi-handle").first
        first = "ArrowLeft" if at_max(handle) else "ArrowRight"
        back = "ArrowRight" if first == "ArrowLeft" else "ArrowLeft"
        r1 = one_move(page, metrics, handle, first)
        r2 = one_move(page, metrics, handle, back)
        if r1["lastMark"] is not None and r2["lastMark"] is not None:
            return k, label, first
    return None


def summarize_moves(recs: list[dict]) -> dict:
    good = [r for r in recs if r["lastMark"] is not None and r["input"] is not None
            and not r.get("timeout")]

    def col(f):
        return [v for v in (f(r) for r in good) if v is not None]

    out = {
        "n": len(good), "nochg": len(recs) - len(good),
        "timeouts": sum(1 for r in recs if r.get("timeout")),
        "total": col(lambda r: r["lastMark"] - r["input"]),
        "first": col(lambda r: r["firstMark"] - r["input"]),
        "paint": col(lambda r: (r["painted"] or r["lastMark"]) - r["input"]),
        "in_send": col(lambda r: r["send"] - r["input"] if r["send"] else None),
        "queue": col(lambda r: r["queue"] if r["send"] else None),
        "kernel": col(lambda r: r["kernel"] if r["send"] else None),
        "comm_mark": col(lambda r: r["lastMark"] - r["lastComm"] if r["lastComm"] else None),
        "idle_mark": col(lambda r: r["lastMark"] - r["idle"] if r["idle"] else None),
        "msgs": col(lambda r: r["nComm"]),
        "kb": col(lambda r: r["commBytes"] / 1024),
        "nout": col(lambda r: r["nOut"]),
        "longtask": col(lambda r: r["longtaskMs"]),
    }
    for k in METRICS:
        out[k] = col(lambda r, k=k: r["cpu"][k])
    traffic: dict[str, float] = defaultdict(float)
    for r in good:
        for key, b in r["traffic"].items():
            traffic[key] += b / max(1, len(good))
    out["traffic"] = dict(sorted(traffic.items(), key=lambda kv: -kv[1]))
    # where the slow moves spend their time
    slow = [r for r in good if r["lastMark"] - r["input"] > GOAL_MS]
    out["slow"] = len(slow)
    return out


def profile_summary(profile: dict, top: int = 10) -> list[tuple[str, float]]:
    """Self time per script group (extension / lab chunk) and per function, from a CDP CPU
    profile, as a share of the profiled wall time."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    by_fn: dict[str, float] = defaultdict(float)
    by_pkg: dict[str, float] = defaultdict(float)
    for sid, dt in zip(profile.get("samples", []), profile.get("timeDeltas", []), strict=False):
        cf = nodes[sid]["callFrame"]
        full = cf.get("url", "")
        url = full.rsplit("/", 1)[-1].split("?")[0]
        pkg = "(native)" if not full else "page"
        if "/lab/extensions/" in full:
            pkg = full.split("/lab/extensions/", 1)[1].split("/static/")[0]
        elif "/static/lab/" in full or "/lab/static/" in full:
            pkg = f"jupyterlab:{url}"
        name = cf.get("functionName") or "(anonymous)"
        if not full:
            pkg = name if name.startswith("(") else "(native)"
        by_fn[f"{name} [{pkg}]"] += dt
        by_pkg[pkg] += dt
    total = sum(by_pkg.values()) or 1
    rows = [(f"== {k}", 100.0 * v / total) for k, v in
            sorted(by_pkg.items(), key=lambda kv: -kv[1]) if k != "(idle)"][:8]
    rows += [(k, 100.0 * v / total) for k, v in sorted(by_fn.items(), key=lambda kv: -kv[1])
             if not k.startswith("(idle)") and not k.startswith("(program)")][:top]
    return rows


TRACE_CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8.execute",
                    "blink", "cc", "gpu", "toplevel"]


def trace_summary(raw: bytes, top: int = 12) -> dict:
    """Self time per event name on the renderer's main thread and on the other busy threads
    (a Chrome trace of the moves), in ms."""
    data = json.loads(raw)
    events = data["traceEvents"] if isinstance(data, dict) else data
    names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    per_thread: dict = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            per_thread[(e["pid"], e["tid"])].append(e)
    out: dict = {}
    for key, evs in per_thread.items():
        tname = names.get(key, str(key[1]))
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        selft: dict[str, float] = defaultdict(float)
        stack: list = []
        for e in evs:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if stack:
                selft[stack[-1]["name"]] -= min(e["dur"], stack[-1]["ts"] + stack[-1]["dur"]
                                                - e["ts"])
            selft[e["name"]] += e["dur"]
            stack.append(e)
        total = sum(v for v in selft.values())
        if total < 1000:
            continue
        label = f"{tname}#{key[0]}"
        out[label] = {"total_ms": total / 1000, "top": sorted(
            ((k, v / 1000) for k, v in selft.items()), key=lambda kv: -kv[1])[:top]}
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["total_ms"]))


def bench_part(page: Page, nb: NotebookPage, metrics: Metrics, letter: str, args) -> dict:
    area = nb.explore(letter)
    if area.count() == 0:
        return {"letter": letter, "skip": "no explore area"}
    area.scroll_into_view_if_needed()
    nb.open_more(area)  # the charts past the first few sit in collapsed "More" boxes
    figs = area.locator(".bqplot.figure")
    for k in range(figs.count()):
        figs.nth(k).scroll_into_view_if_needed()
        wait_drawn(figs.nth(k))
    area.scroll_into_view_if_needed()
    nfig = page.evaluate("l => window.__bench.observe(l)", letter)
    page.evaluate("() => window.__bench.loadNames()")
    chosen = choose_slider(page, metrics, area)
    if chosen is None:
        return {"letter": letter, "skip": "no slider moves a chart", "figures": nfig}
    k, label, first = chosen
    handle = area.locator(".widget-slider").filter(
        has=page.locator(".noUi-handle")).nth(k).locator(".noUi-handle").first
    handle.scroll_into_view_if_needed()
    keys = [first, "ArrowRight" if first == "ArrowLeft" else "ArrowLeft"]
    prof = None
    if args.profile:
        metrics.cdp.send("Profiler.enable")
        metrics.cdp.send("Profiler.setSamplingInterval", {"interval": 200})
        metrics.cdp.send("Profiler.start")
    if args.trace:
        page.context.browser.start_tracing(page=page, categories=TRACE_CATEGORIES)
    recs = []
    direction = first
    roots = [os.getpid()] + ([nb.server.proc.pid] if nb.server.proc else [])
    cpu0 = process_cpu(roots)
    t0 = time.monotonic()
    for _ in range(NULL_MOVES):  # same harness, same wait, no slider move
        one_move(page, metrics, handle, "Shift")
    cpu_null = process_cpu(roots)
    null_s = (time.monotonic() - t0) / NULL_MOVES
    null_per_move = {k: (cpu_null.get(k, 0) - cpu0.get(k, 0)) / NULL_MOVES for k in cpu_null
                     if k != "other"}
    cpu0, t0 = cpu_null, time.monotonic()
    for j in range(args.moves):
        if args.sweep:  # walk to one end, then back: every reachable value, not two
            lo = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemin")
            if at_max(handle):
                direction = "ArrowLeft"
            elif lo:
                direction = "ArrowRight"
            key = direction
        else:
            key = keys[j % 2]
        rec = one_move(page, metrics, handle, key)
        rec["key"], rec["value"] = key, handle.get_attribute("aria-valuetext") or \
            handle.get_attribute("aria-valuenow")
        recs.append(rec)
    cpu1 = process_cpu(roots)
    move_s = (time.monotonic() - t0) / max(1, len(recs))
    # CPU of a move minus that of a null move, the null move's idle time scaled to the move's
    cpu_per_move = {}
    for k in cpu1:
        if k == "other":
            continue
        raw = (cpu1.get(k, 0) - cpu0.get(k, 0)) / max(1, len(recs))
        cpu_per_move[k] = raw - null_per_move.get(k, 0.0) * min(1.0, move_s / max(null_s, 1e-3))
    trace = None
    if args.trace:
        trace = trace_summary(page.context.browser.stop_tracing())
    if args.profile:
        prof = profile_summary(metrics.cdp.send("Profiler.stop")["profile"])
    drags = [drag(page, metrics, handle, area, j) for j in range(args.drag)]
    res = {"letter": letter, "slider": label, "figures": nfig, **summarize_moves(recs),
           "raw": recs, "profile": prof, "drags": drags, "trace": trace,
           "cpu_per_move": cpu_per_move, "null_cpu_per_move": null_per_move}
    return res


def drag(page: Page, metrics: Metrics, handle, area, j: int) -> dict:
    """Press the handle, drag it across half the track in ~30 steps (~0.6 s), release."""
    track = handle.locator("xpath=ancestor::*[contains(@class,'noUi-target')][1]")
    hb, tb = handle.bounding_box(), track.bounding_box()
    if not hb or not tb:
        return {}
    x0, y = hb["x"] + hb["width"] / 2, hb["y"] + hb["height"] / 2
    x1 = tb["x"] + tb["width"] * (0.2 if x0 > tb["x"] + tb["width"] / 2 else 0.8)
    before = metrics.read()
    page.evaluate("r => window.__bench.begin(r)", True)
    page.mouse.move(x0, y)
    page.mouse.down()
    steps = 30
    for s in range(1, steps + 1):
        page.mouse.move(x0 + (x1 - x0) * s / steps, y)
        time.sleep(0.02)
    page.mouse.up()
    rec = finish_move(page, metrics, before)
    rel = rec.get("release")
    return {"nOut": rec["nOut"], "nComm": rec["nComm"], "kb": rec["commBytes"] / 1024,
            "settle": (rec["lastMark"] - rel) if rel and rec["lastMark"] else None,
            "lastSend_after_release": (rec["lastSend"] - rel) if rel and rec["lastSend"] else None,
            "maxFrame": rec["maxFrame"], "longtask": rec["longtaskMs"],
            "timeout": rec.get("timeout")}


def bench_notebook(browser, server: JupyterServer, path: str, args) -> dict:
    page = new_page(browser)
    page.add_init_script(BENCH_JS)
    nb = NotebookPage(page, server, path)
    t0 = time.monotonic()
    out: dict = {"notebook": path, "parts": []}
    try:
        nb.load_lab()
        nb.open()
        nb.run_all()
        letters = [x for x in PARTS if nb.explore(x).count()]
        commit_predictions(nb, letters)
        if args.open_math:
            heads = nb.notebook.locator(".jupyter-widget-Collapse-header",
                                        has_text="Math peek")
            for k in range(heads.count()):
                heads.nth(k).click()
            page.wait_for_timeout(2000)  # MathJax typesets the opened formulas
            out["math_open"] = heads.count()
        out["run_all_s"] = time.monotonic() - t0
        out["labkit"] = page.evaluate("p => window.__bench.kernelExpr(p, "
                                      "\"__import__('labkit').__file__\")", path)
        if not letters:
            bad = [c["domText"][-300:] for c in nb.cells() if c["domStderr"]]
            print(f"{path}: no part rendered; first error output: {bad[:1]}", flush=True)
        metrics = Metrics(page)
        out["models"] = page.evaluate("() => window.__bench.loadNames()")
        for letter in letters:
            if letter not in args.parts:
                continue
            t1, c1 = time.monotonic(), cpu_times()
            res = bench_part(page, nb, metrics, letter, args)
            c2 = cpu_times()
            res["wall_s"] = time.monotonic() - t1
            res["machine_busy"] = (c2[0] - c1[0]) / max(1.0, c2[1] - c1[1])
            res["loadavg"] = os.getloadavg()[0]
            out["parts"].append(res)
            print_part(path, res, args)
        out["console_errors"] = nb.console_errors[:10]
    finally:
        page.context.close()
        with contextlib.suppress(OSError):
            for s in server.sessions():
                if s.get("path") == path:
                    server.api(f"/api/sessions/{s['id']}", method="DELETE")
    return out


def fmt(x: float) -> str:
    return "   n/a" if x != x else f"{x:6.1f}"


def print_part(path: str, r: dict, args) -> None:
    name = path.split("/")[0]
    if "skip" in r:
        print(f"{name:18s} {r['letter']}  skipped: {r['skip']}", flush=True)
        return
    print(f"{name:18s} {r['letter']}  slider {r['slider']!r}: n={r['n']} nochg={r['nochg']} "
          f"timeouts={r['timeouts']}  total median {med(r['total']):.1f} p95 "
          f"{pct(r['total'], 95):.1f} max {max(r['total'], default=float('nan')):.1f} ms  "
          f"({r['slow']} moves > {GOAL_MS:.0f} ms, {r['wall_s']:.0f} s; machine "
          f"{100 * r['machine_busy']:.0f}% busy, load {r['loadavg']:.1f})", flush=True)
    print("    median/p95 ms: " + "  ".join(
        f"{k} {med(r[k]):.1f}/{pct(r[k], 95):.1f}" for k in
        ("in_send", "queue", "kernel", "comm_mark", "idle_mark", "paint")), flush=True)
    print(f"    per move: {med(r['msgs']):.0f} comm msgs in, {med(r['kb']):.1f} KB in, "
          f"{med(r['nout']):.0f} out; main thread script {med(r['ScriptDuration']):.1f} layout "
          f"{med(r['LayoutDuration']):.1f} style {med(r['RecalcStyleDuration']):.1f} task "
          f"{med(r['TaskDuration']):.1f} ms (p95 task {pct(r['TaskDuration'], 95):.1f}); "
          f"long tasks {med(r['longtask']):.0f} ms", flush=True)
    cpm = r.get("cpu_per_move") or {}
    print("    cpu ms/move (minus a null key press): " + ", ".join(
        f"{k} {v:.1f}" for k, v in sorted(cpm.items(), key=lambda kv: -kv[1])) +
        "; null press: " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(
            (r.get("null_cpu_per_move") or {}).items(), key=lambda kv: -kv[1])), flush=True)
    top = list(r["traffic"].items())[:6]
    print("    bytes/move: " + ", ".join(f"{k} {v / 1024:.1f}K" for k, v in top), flush=True)
    for d in r["drags"]:
        if d:
            print(f"    drag: {d['nOut']} updates sent, {d['nComm']} msgs in ({d['kb']:.0f} KB), "
                  f"last send {fmt(d['lastSend_after_release'] or float('nan'))} ms after "
                  f"release, settled {fmt(d['settle'] or float('nan'))} ms after release, "
                  f"longest frame {d['maxFrame']:.0f} ms", flush=True)
    for thread, t in (r.get("trace") or {}).items():
        n = max(1, r["n"] + r["nochg"])
        print(f"    trace {thread}: {t['total_ms'] / n:.1f} ms/move: " + ", ".join(
            f"{k} {v / n:.1f}" for k, v in t["top"][:8]), flush=True)
    if r.get("profile"):
        print("    cpu profile (share of the moves' wall time):", flush=True)
        for k, v in r["profile"]:
            print(f"      {v:5.1f}%  {k[:110]}", flush=True)


def print_summary(results: list[dict]) -> None:
    print("\nSummary (ms; total = keydown -> last mark change; breakdown = medians)")
    hdr = (f"{'notebook':18s} {'part':4s} {'n':>3s} {'nochg':>5s} {'median':>7s} {'p95':>7s} "
           f"{'max':>7s} | {'in>send':>7s} {'queue':>6s} {'kernel':>6s} {'comm>mk':>7s} "
           f"{'msgs':>4s} {'KB':>6s} {'task':>6s} {'cpu%':>4s} | cpu ms/move: "
           f"{'rend':>5s} {'kern':>5s} {'serv':>5s} {'gpu':>5s} {'brow':>5s}")
    print(hdr)
    print("-" * len(hdr))
    worst = 0.0
    for nbres in results:
        name = nbres["notebook"].split("/")[0]
        for r in nbres["parts"]:
            if "skip" in r:
                print(f"{name:18s} {r['letter']:4s} skipped: {r['skip']}")
                continue
            p95 = pct(r["total"], 95)
            worst = max(worst, p95) if p95 == p95 else worst
            print(f"{name:18s} {r['letter']:4s} {r['n']:3d} {r['nochg']:5d} "
                  f"{med(r['total']):7.1f} {p95:7.1f} {max(r['total'], default=0):7.1f} | "
                  f"{med(r['in_send']):7.1f} {med(r['queue']):6.1f} {med(r['kernel']):6.1f} "
                  f"{med(r['comm_mark']):7.1f} {med(r['msgs']):4.0f} {med(r['kb']):6.1f} "
                  f"{med(r['TaskDuration']):6.1f} {100 * r['machine_busy']:4.0f} | "
                  + " ".join(f"{(r.get('cpu_per_move') or {}).get(k, 0):5.1f}" for k in
                             ("renderer", "kernel", "server", "gpu", "browser")))
    print(f"worst p95 {worst:.1f} ms (goal < {GOAL_MS:.0f} ms)")
    for nbres in results:
        figs = (nbres.get("models") or {}).get("figureAnimation")
        if figs is not None:
            print(f"{nbres['notebook'].split('/')[0]}: {len(figs)} bqplot Figures, front-end "
                  f"animation_duration values {sorted(set(figs))}; Run All + commits "
                  f"{nbres.get('run_all_s', 0):.0f} s; kernel labkit {nbres.get('labkit')}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="*", help="release folders, e.g. lab1_cloud_fleet")
    ap.add_argument("--all", action="store_true", help="all released notebooks")
    ap.add_argument("--moves", type=int, default=50, help="key presses per part (default 50)")
    ap.add_argument("--parts", default=PARTS, help="which parts (default ABCD)")
    ap.add_argument("--drag", type=int, default=0, help="mouse drags per part (default 0)")
    ap.add_argument("--profile", action="store_true", help="CPU profile of each part's moves")
    ap.add_argument("--trace", action="store_true",
                    help="Chrome trace of each part's moves: self time per event and thread")
    ap.add_argument("--sweep", action="store_true",
                    help="walk each slider end to end instead of alternating two values")
    ap.add_argument("--open-math", action="store_true",
                    help="expand every part's 'Math peek' accordion first (as a curious "
                         "student would); by default they stay collapsed")
    ap.add_argument("--windowing", choices=("none", "full", "defer", "contentVisibility"),
                    help="JupyterLab's notebook windowingMode (default: the tests' 'none'; "
                         "JupyterLab's own default is contentVisibility)")
    ap.add_argument("--json", type=Path, help="write every move's record here")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args(argv)
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} not found (apt-get install chromium)", file=sys.stderr)
        return 2
    paths = notebook_paths(args.notebooks, args.all)
    tmp = Path(tempfile.mkdtemp(prefix="labkit-bench-browser-"))
    t0 = time.monotonic()
    results = []
    server = None
    try:
        root, home = tmp / "release", tmp / "home"
        shutil.copytree(RELEASE, root)
        home.mkdir()
        env = {"LABKIT_LEDGER": str(tmp / "ledger.json"), "PYTHONWARNINGS": "ignore"}
        if os.environ.get("PYTHONPATH"):
            print(f"kernel PYTHONPATH={os.environ['PYTHONPATH']}")
        server = JupyterServer(root, home, "bench", env=env)
        if args.windowing:  # the tests render every cell ('none'); a student's default differs
            path = (home / "lab-settings" / "@jupyterlab" / "notebook-extension"
                    / "tracker.jupyterlab-settings")
            path.write_text(json.dumps({"windowingMode": args.windowing}), encoding="utf-8")
        server.start()
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                         timeout=60_000)
            try:
                for path in paths:
                    results.append(bench_notebook(browser, server, path, args))
            finally:
                browser.close()
    finally:
        if server is not None:
            server.stop()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print_summary(results)
    print(f"wall time {time.monotonic() - t0:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
