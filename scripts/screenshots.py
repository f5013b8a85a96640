#!/usr/bin/env python
"""Screenshots of every part of every released student notebook, before and after one move.

    .venv/bin/python scripts/screenshots.py OUT_DIR [--only lab1_cloud_fleet ...]

A temporary copy of ``release/`` is served by one real JupyterLab (``JupyterServer`` of
tests/browser) and driven in Debian's chromium through Playwright (``executable_path``: no
browser is ever downloaded). For each notebook: open, Run All, wait for the kernel to go
idle; then for each part, as a student would: commit the first prediction option (which
unlocks the explore area), open its "More" disclosures (``--closed`` keeps them shut),
screenshot the explore box as ``OUT_DIR/<notebook folder>/<letter>-before.png``, move the
first open control of ``.labkit-controls`` (a slider: focus its handle and press ArrowRight
a few times, ArrowLeft at its maximum; toggle buttons: click the next option; a dropdown:
choose the next option), wait until a chart changes or ``--wait`` seconds pass, and
screenshot it again as ``<letter>-after.png``.

``OUT_DIR/index.md`` is a Markdown table of every part: its title (from the banner), the
control moved, its readout before and after, the two images and notes (a chart not drawn,
no chart changed, an error or traceback shown in the part). A part that fails is recorded
there with its error and the run goes on. Images stay small: device scale factor 1, the
tests' viewport width, element screenshots only (the viewport grows taller only when an
explore box would not fit, since JupyterLab scrolls inside the notebook, not the page).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import re
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "browser"), str(ROOT / "tests")]

from playwright.sync_api import Browser, Locator, Page, sync_playwright  # noqa: E402

from browser_helpers import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    VIEWPORT,
    WIDGET_MS,
    JupyterServer,
    NotebookPage,
    figure_snapshot,
    new_page,
    wait_changed,
    wait_drawn,
)
from test_student_session import NOTEBOOKS, NotebookSpec, PartSpec, Student  # noqa: E402

RELEASE = ROOT / "release"
KEY_PRESSES = 3          # ArrowRight presses on a slider's handle
HEADROOM_PX = 240        # JupyterLab's menu, toolbar and margins above a grown viewport
MAX_HEIGHT_PX = 8000     # never grow the viewport taller than this
ERROR_MARKERS = ("Traceback", "Error displaying widget", "model not found")


@dataclasses.dataclass
class Row:
    notebook: str
    part: str
    title: str = ""
    control: str = ""
    before: str = ""
    after: str = ""
    before_png: str = ""
    after_png: str = ""
    notes: list[str] = dataclasses.field(default_factory=list)


# -- one control ------------------------------------------------------------------------------

# The first open control of a part: the first direct child of ``.labkit-controls`` that is
# a slider, toggle buttons or a dropdown (the "More controls" disclosure is not one).
FIRST_CONTROL = (":scope > .widget-slider, :scope > .widget-toggle-buttons, "
                 ":scope > .widget-dropdown")


def control_kind(ctl: Locator) -> str:
    cls = ctl.get_attribute("class") or ""
    for kind in ("slider", "toggle-buttons", "dropdown"):
        if f"widget-{kind}" in cls.split():
            return kind
    return "unknown"


def control_label(ctl: Locator) -> str:
    label = ctl.locator(".widget-label").first
    return label.inner_text().strip() if label.count() else "(no label)"


def control_value(ctl: Locator, kind: str) -> str:
    """What the student reads as the control's value."""
    if kind == "slider":
        return ctl.locator(".widget-readout").first.inner_text().strip()
    if kind == "toggle-buttons":
        active = ctl.locator("button.mod-active")
        return active.first.inner_text().strip() if active.count() else "(none)"
    if kind == "dropdown":
        return ctl.locator("select").first.evaluate(
            "s => s.selectedIndex < 0 ? '(none)' : s.options[s.selectedIndex].text").strip()
    return "?"


def move(page: Page, ctl: Locator, kind: str) -> str:
    """Move the control one student's step; returns how it was moved."""
    if kind == "slider":
        handle = ctl.locator(".noUi-handle").first
        at_max = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")
        key = "ArrowLeft" if at_max else "ArrowRight"
        handle.focus()
        for _ in range(KEY_PRESSES):
            page.keyboard.press(key)
            page.wait_for_timeout(150)
        return f"{key} x{KEY_PRESSES}"
    if kind == "toggle-buttons":
        buttons = ctl.locator("button")
        n = buttons.count()
        active = next((k for k in range(n)
                       if "mod-active" in (buttons.nth(k).get_attribute("class") or "")), -1)
        target = buttons.nth((active + 1) % n)
        target.click()
        return f"click '{target.inner_text().strip()}'"
    if kind == "dropdown":
        select = ctl.locator("select").first
        n, index = select.evaluate("s => [s.options.length, s.selectedIndex]")
        select.select_option(index=(index + 1) % n)
        return "next option"
    raise RuntimeError(f"no way to move a control of class {ctl.get_attribute('class')!r}")


# -- screenshots ------------------------------------------------------------------------------

def fit_viewport(page: Page, area: Locator) -> None:
    """Grow the viewport's height (never its width) so the whole explore box fits."""
    box = area.bounding_box()
    height = VIEWPORT["height"]
    if box is not None and box["height"] + HEADROOM_PX > height:
        height = min(int(box["height"]) + HEADROOM_PX, MAX_HEIGHT_PX)
    if (page.viewport_size or {}).get("height") != height:
        page.set_viewport_size({"width": VIEWPORT["width"], "height": height})
        page.wait_for_timeout(300)  # JupyterLab and bqplot relayout after a resize


def shoot(page: Page, area: Locator, path: Path) -> None:
    fit_viewport(page, area)
    page.mouse.move(0, 0)  # no hover effects (bqplot's toolbar) left from a click
    area.scroll_into_view_if_needed()
    # Put the box's top at the top of the notebook's scroller, so a tall box is whole.
    area.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(200)
    area.screenshot(path=str(path), animations="disabled", timeout=WIDGET_MS)


def snapshots(figs: Locator) -> list[dict]:
    return [figure_snapshot(figs.nth(k)) for k in range(figs.count())]


def settle(figs: Locator, timeout_s: float = 2.0) -> None:
    """Wait until two looks at the figures 250 ms apart agree (a redraw has finished)."""
    deadline = time.monotonic() + timeout_s
    last = snapshots(figs)
    while time.monotonic() < deadline:
        time.sleep(0.25)
        now = snapshots(figs)
        if now == last:
            return
        last = now


def problems_shown(area: Locator) -> list[str]:
    text = area.inner_text()
    found = [m for m in ERROR_MARKERS if m in text]
    if area.locator('[data-mime-type="application/vnd.jupyter.stderr"]').count():
        found.append("stderr output")
    return [f"shows '{m}'" for m in found]


# -- one part, one notebook -------------------------------------------------------------------

def shoot_part(student: Student, i: int, row: Row, out: Path, wait_s: float,
               open_more: bool) -> None:
    nb, page = student.nb, student.nb.page
    letter = row.part
    banner = nb.notebook.locator(".labkit-banner").nth(i)
    title = banner.locator(":scope > div").nth(1)
    row.title = (title.inner_text() if title.count() else banner.inner_text()).strip()

    student.commit(i)
    area = nb.explore(letter)
    body = area.locator(".labkit-explore-body")
    body.wait_for(state="visible", timeout=WIDGET_MS)
    if open_more:
        nb.open_more(area)
    figs = area.locator(".bqplot.figure")
    for k in range(figs.count()):
        figs.nth(k).scroll_into_view_if_needed()
        try:
            wait_drawn(figs.nth(k), timeout_ms=10_000)
        except AssertionError:
            row.notes.append(f"chart {k + 1} of {figs.count()} not drawn")
    row.notes += problems_shown(area)

    ctl = area.locator(".labkit-controls").first.locator(FIRST_CONTROL).first
    if not ctl.count():
        raise RuntimeError("no open slider, toggle buttons or dropdown in .labkit-controls")
    kind = control_kind(ctl)
    row.control = f"{control_label(ctl)} ({kind})"
    row.before = control_value(ctl, kind)

    before_png = out / f"{letter}-before.png"
    shoot(page, area, before_png)
    row.before_png = before_png.name

    before = snapshots(figs)
    how = move(page, ctl, kind)
    row.control += f", {how}"
    try:
        wait_changed(figs, before, timeout_ms=int(wait_s * 1000))
        settle(figs)
    except AssertionError:
        row.notes.append(f"no chart changed within {wait_s:g} s")
    row.after = control_value(ctl, kind)
    if row.after == row.before:
        row.notes.append("the readout did not change")
    after_png = out / f"{letter}-after.png"
    shoot(page, area, after_png)
    row.after_png = after_png.name
    row.notes += [n + " after the move" for n in problems_shown(area) if n not in row.notes]


# Each prediction's radio buttons: the name a student sees (the label around the radio).
RADIO_LABELS = """pred => Array.from(pred.querySelectorAll('input[type=radio]')).map(r =>
  (r.labels && r.labels.length ? r.labels[0].innerText
   : (r.getAttribute('aria-label') || r.value)).trim())"""


def page_spec(nb: NotebookPage, path: str) -> NotebookSpec:
    """The parts as the page shows them (banners and predictions, in order), each to be
    answered with its first option. Read from the page, not from ``labkit.labs`` in this
    process: the kernel's labkit is the one on screen."""
    rel = Path(path)
    lab_id, track = rel.parent.name.split("_", 1)
    banners, preds = nb.notebook.locator(".labkit-banner"), nb.predictions()
    if banners.count() != preds.count() or not banners.count():
        raise RuntimeError(f"{banners.count()} part banners but {preds.count()} predictions")
    parts = []
    for i in range(banners.count()):
        m = re.search(r"Part ([A-Z]):", banners.nth(i).inner_text())
        if m is None:
            raise RuntimeError(f"banner {i + 1} names no part: {banners.nth(i).inner_text()!r}")
        labels = preds.nth(i).evaluate(RADIO_LABELS)
        if not labels:
            raise RuntimeError(f"Part {m.group(1)}: its prediction has no radio buttons")
        choices = tuple((label, label) for label in labels)
        parts.append(PartSpec(m.group(1), choices, key="", figures=0, pick=choices[0]))
    return NotebookSpec(path, rel.parent.name, lab_id, track, tuple(parts), report_md="")


def shoot_notebook(browser: Browser, server: JupyterServer, path: str, out_dir: Path,
                   wait_s: float, open_more: bool) -> list[Row]:
    folder = Path(path).parent.name
    out = out_dir / folder
    out.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    page = new_page(browser)
    nb = NotebookPage(page, server, path)
    started = time.monotonic()
    try:
        ratio = page.evaluate("() => window.devicePixelRatio")
        if ratio != 1:
            raise RuntimeError(f"device pixel ratio {ratio}, not 1")
        nb.load_lab()
        info = nb.open()
        info["run_all_ok"] = nb.run_all()
        print(f"{folder}: opened and ran in {time.monotonic() - started:.0f} s", flush=True)
        spec = page_spec(nb, path)
        rows = [Row(folder, p.letter) for p in spec.parts]
        student = Student(nb, spec, info)
        for i, row in enumerate(rows):
            t0 = time.monotonic()
            try:
                shoot_part(student, i, row, out, wait_s, open_more)
                status = "ok"
            except Exception as exc:
                row.notes.append(f"FAILED: {type(exc).__name__}: {first_line(exc)}")
                traceback.print_exc()
                status = "FAILED"
                with contextlib.suppress(Exception):  # what the page showed when it failed
                    page.screenshot(path=str(out / f"{row.part}-failure.png"))
            print(f"  part {row.part}: {status} in {time.monotonic() - t0:.0f} s"
                  f"{' · ' + '; '.join(row.notes) if row.notes else ''}", flush=True)
    except Exception as exc:
        traceback.print_exc()
        note = f"FAILED (notebook): {type(exc).__name__}: {first_line(exc)}"
        if not rows:
            rows = [Row(folder, "-", notes=[note])]
        for row in rows:
            if not row.before_png and not any(n.startswith("FAILED") for n in row.notes):
                row.notes.append(note)
        with contextlib.suppress(Exception):
            page.screenshot(path=str(out / "failure.png"))
    finally:
        if nb.console_errors:
            (out / "console-errors.txt").write_text("\n".join(nb.console_errors) + "\n",
                                                    encoding="utf-8")
        page.context.close()
        with contextlib.suppress(OSError):  # free the kernel before the next notebook
            for s in server.sessions():
                if s.get("path") == path:
                    server.api(f"/api/sessions/{s['id']}", method="DELETE")
    return rows


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else ""


# -- index.md ---------------------------------------------------------------------------------

def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").strip()


def write_index(out_dir: Path, rows: list[Row], seconds: float) -> Path:
    head = ["notebook", "part", "title", "control moved", "value before", "value after",
            "before", "after", "notes"]
    lines = [
        "# Screenshots of the released notebooks",
        "",
        f"{len(rows)} parts, {sum(bool(r.before_png) + bool(r.after_png) for r in rows)} "
        f"images, {sum(any(n.startswith('FAILED') for n in r.notes) for r in rows)} failed; "
        f"{seconds:.0f} s.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in rows:
        before = f"[{r.before_png}]({r.notebook}/{r.before_png})" if r.before_png else ""
        after = f"[{r.after_png}]({r.notebook}/{r.after_png})" if r.after_png else ""
        values = [r.notebook, r.part, r.title, r.control, r.before, r.after, before, after,
                  "; ".join(r.notes)]
        lines.append("| " + " | ".join(cell(v) for v in values) + " |")
    path = out_dir / "index.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# -- main -------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--only", nargs="+", metavar="FOLDER",
                        help="notebook folders of release/ (e.g. lab1_cloud_fleet)")
    parser.add_argument("--wait", type=float, default=2.0,
                        help="seconds to wait for a chart to change after the move")
    parser.add_argument("--closed", action="store_true",
                        help="leave the 'More' disclosures closed")
    args = parser.parse_args(argv)

    notebooks = NOTEBOOKS
    if args.only:
        unknown = set(args.only) - {Path(p).parent.name for p in NOTEBOOKS}
        if unknown:
            parser.error(f"not released notebook folders: {', '.join(sorted(unknown))}")
        notebooks = [p for p in NOTEBOOKS if Path(p).parent.name in args.only]
    if not CHROMIUM.exists():
        parser.error(f"{CHROMIUM} not found: apt-get install chromium")
    out_dir: Path = args.out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)

    started = time.monotonic()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="labkit-screens-") as tmp_name:
        tmp = Path(tmp_name)
        root, home = tmp / "release", tmp / "home"
        shutil.copytree(RELEASE, root)
        home.mkdir()
        server = JupyterServer(root, home, "screens",
                               env={"LABKIT_LEDGER": str(tmp / "ledger.json")}).start()
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=str(CHROMIUM),
                                             args=CHROMIUM_ARGS, timeout=60_000)
                try:
                    for path in notebooks:
                        rows += shoot_notebook(browser, server, path, out_dir, args.wait,
                                               not args.closed)
                        write_index(out_dir, rows, time.monotonic() - started)
                finally:
                    browser.close()
        finally:
            server.stop()
    seconds = time.monotonic() - started
    index = write_index(out_dir, rows, seconds)
    failed = [f"{r.notebook} {r.part}" for r in rows
              if any(n.startswith("FAILED") for n in r.notes)]
    print(f"{index}: {len(rows)} parts in {seconds:.0f} s; failed: {', '.join(failed) or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
