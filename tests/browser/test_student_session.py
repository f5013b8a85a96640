"""A student's session in a real browser: JupyterLab 4 in Debian's chromium, the released
notebook of each track (a temporary copy of ``release/``), driven as a student would.

The tests of :class:`TestStudentSession` are one session per notebook, in order: Run All on
the blank notebook, commit every prediction, look at every chart, move a slider, save /
close / reopen, download the report; on the first notebook a prediction and a slider by
keyboard alone; on each notebook with a recipe in :data:`MEMORY_WALL`, Part B pushed past
the memory wall; on one notebook per lab (:data:`ANSWER_NOTEBOOKS`), every prediction
committed by mouse before anything else and, last, saved, closed and reopened. Each
notebook is opened once for all of them (:func:`on`). Each test first brings the notebook
to the state it needs (committing is idempotent), so any one of them can also run alone.

The notebooks are every ``release/lab*_*/*.ipynb``: a new lab's notebooks join the
parametrisation by being released. The expected parts, choices, figure counts and report
names come from the lab's own module (``labkit.labs.<notebook name>``), built here
in-process on a scratch answer store.
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import json
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, expect

from browser_helpers import (
    WIDGET_MS,
    JupyterServer,
    NotebookPage,
    new_page,
    wait_changed,
    wait_drawn,
)
from course_helpers import ROOT
from labkit.core.answers import DEFAULT_ANSWERS_PATH, AnswerStore

pytestmark = pytest.mark.browser
expect.set_options(timeout=WIDGET_MS)

RELEASE = ROOT / "release"
NOTEBOOKS = sorted(p.relative_to(RELEASE).as_posix() for p in RELEASE.glob("lab*_*/*.ipynb"))
DEFAULT_REPORT_MD = "labkit_report.md"
SLIDER_PART = "B"
# Part B controls (by name) that push a session's memory past the wall, and whether the
# wall is reachable there (robotaxi's replicas hold thousands of sessions even at the
# extremes). The browser finds each control by the label the part gives it on that track.
MEMORY_WALL: dict[str, tuple[tuple[tuple[str, str], ...], bool]] = {
    "lab1_cloud_fleet": ((("devices", "Home"),), True),
    "lab1_iphone": ((("context", "End"),), True),
    "lab1_oura_ring": ((("windows", "End"),), True),
    "lab1_robotaxi": ((("windows", "End"),), False),
}


def _control_label(assignment: str, control: str, tmp: Path) -> str:
    """The label Part B shows for ``control`` on the assignment's track."""
    from labkit.labs.registry import LABS

    lab, track = assignment.split("_", 1)
    part = LABS[lab].lab(track, store=AnswerStore(tmp / "labels.json")).part(SLIDER_PART)
    return str(part.controls[control].description)


WALL_NOTEBOOKS = [p for p in NOTEBOOKS if Path(p).parent.name in MEMORY_WALL]
# Committing and restoring go through the same widget and answer store on every track
# (tests/labs checks each part's restore in-process): one notebook per lab in the browser.
ANSWER_NOTEBOOKS = [p for p in NOTEBOOKS
                    if Path(p).parent.name in ("lab1_oura_ring", "lab2_cloud_fleet")]


@dataclass(frozen=True)
class PartSpec:
    letter: str
    choices: tuple[tuple[str, object], ...]
    key: str
    figures: int
    pick: tuple[str, object]  # the (label, value) this student commits


@dataclass(frozen=True)
class NotebookSpec:
    path: str
    assignment: str
    lab_id: str
    track: str
    parts: tuple[PartSpec, ...]
    report_md: str  # the report the synthesis writes beside the notebook

    @property
    def report_download(self) -> str:
        """The Markdown report's download name: ``<report stem>_<track>.md``."""
        return f"{Path(self.report_md).stem}_{self.track}.md"

    def part_index(self, letter: str) -> int:
        return [p.letter for p in self.parts].index(letter)


def notebook_spec(path: str, scratch: Path) -> NotebookSpec:
    """Parts, prediction choices and figure counts of ``release/<path>``, from its lab."""
    rel = Path(path)
    assignment = rel.parent.name
    lab_id, track = assignment.split("_", 1)
    module = importlib.import_module(f"labkit.labs.{rel.stem}")
    lab = module.Lab(track, store=AnswerStore(scratch / DEFAULT_ANSWERS_PATH))
    parts = []
    for i, part in enumerate(lab.parts()):
        choices = tuple(part.predict.choices)
        parts.append(PartSpec(part.letter, choices, part.predict.key, len(part.figures),
                              choices[(i + 1) % len(choices)]))
    return NotebookSpec(path, assignment, lab_id, track, tuple(parts),
                        getattr(module, "REPORT_MD", DEFAULT_REPORT_MD))


@dataclass
class Student:
    nb: NotebookPage
    spec: NotebookSpec
    open_info: dict

    def prediction(self, i: int) -> Locator:
        return self.nb.predictions().nth(i)

    def commit(self, i: int) -> None:
        """Choose this student's answer for part ``i`` and press Commit (if not yet done)."""
        pred = self.prediction(i)
        status = pred.locator(".labkit-answer-status")
        label = self.spec.parts[i].pick[0]
        if status.count() and "committed:" in status.inner_text():
            return
        pred.get_by_role("radio", name=label, exact=True).check()
        pred.get_by_role("button", name="Commit prediction").click()
        expect(status).to_contain_text(f"committed: {label}")

    def commit_all(self) -> None:
        for i in range(len(self.spec.parts)):
            self.commit(i)

    def answers(self) -> AnswerStore:
        """The file grading reads: ``labkit_answers.json`` beside the notebook."""
        return AnswerStore(self.nb.folder / DEFAULT_ANSWERS_PATH)


def _readout(ctl: object) -> str | None:
    """What a slider's readout shows for its kernel value (None: not a slider)."""
    import ipywidgets as ipw

    from labkit.core.format import d3_format

    if isinstance(ctl, ipw.SelectionSlider):   # the label at its index (``label`` is not
        return str(ctl._options_labels[ctl.index])   # set when the first option is kept)
    if isinstance(ctl, ipw.IntSlider):
        return d3_format(ctl.readout_format, ctl.value)
    if isinstance(ctl, ipw.FloatSlider | ipw.FloatLogSlider):
        return d3_format(ctl.readout_format, ctl.value)
    return None


def is_graded_test(cell: dict) -> bool:
    meta = cell["nbgrader"]
    return cell["source"].lstrip().startswith("expect_") or (
        bool(meta.get("grade")) and not meta.get("solution"))


def failed(cell: dict) -> bool:
    return cell["domStderr"] > 0 or any(
        o["type"] == "error" or (o["type"] == "stream" and o["name"] == "stderr")
        for o in cell["outputs"])


def decoded_link(link: Locator) -> str:
    href = link.get_attribute("href") or ""
    head, _, payload = href.partition(",")
    if head.endswith(";base64"):
        return base64.b64decode(payload).decode("utf-8")
    return urllib.parse.unquote(payload)


@pytest.fixture(scope="class")
def student(notebook: str, browser: Browser, student_server: JupyterServer,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Student]:
    """The notebook open in its own browser context, every cell run once (blank answers)."""
    spec = notebook_spec(notebook, tmp_path_factory.mktemp("spec"))
    path = notebook
    page = new_page(browser)
    nb = NotebookPage(page, student_server, path)
    try:
        nb.load_lab()
        info = nb.open()
        info["run_all_ok"] = nb.run_all()
        yield Student(nb, spec, info)
    finally:
        page.context.close()
        with contextlib.suppress(OSError):  # free the kernel now, not at the session's end
            for s in student_server.sessions():
                if s.get("path") == path:
                    student_server.api(f"/api/sessions/{s['id']}", method="DELETE")


def on(notebooks: list[str]) -> pytest.MarkDecorator:
    """Run a test of :class:`TestStudentSession` on these notebooks: pytest groups the
    class's tests by notebook, in the order they are written, so each notebook is opened
    and run once for all the tests that name it."""
    return pytest.mark.parametrize("notebook", notebooks,
                                   ids=[Path(p).parent.name for p in notebooks], scope="class")


class TestStudentSession:
    @on(NOTEBOOKS)
    def test_run_all_renders_every_part_and_only_graded_tests_fail(self, student: Student):
        nb, spec = student.nb, student.spec
        assert student.open_info["windowing"] == "none", student.open_info
        cells = nb.cells()
        code = [c for c in cells if c["type"] == "code" and c["source"].strip()]
        bad = [(c["index"], c["source"][:60], c["domText"][-300:]) for c in code
               if failed(c) and not is_graded_test(c)]
        assert not bad, f"error output outside the graded test cells: {bad}"
        not_run = [(c["index"], c["source"][:40]) for c in code if c["count"] is None]
        assert not not_run, f"Run All stopped before these cells: {not_run}"
        tests = [c for c in code if is_graded_test(c)]
        assert tests and all(failed(c) for c in tests), "a blank notebook passed a graded test"
        broken = [c["index"] for c in code if "Error displaying widget" in c["domText"]
                  or "model not found" in c["domText"]]
        assert not broken, f"widgets failed to render in cells {broken}"

        n = len(spec.parts)
        root = nb.notebook
        expect(root.locator(".labkit-header")).to_have_count(1)
        expect(root.locator(".labkit-banner")).to_have_count(n)
        expect(nb.predictions()).to_have_count(n)
        expect(root.locator(".labkit-checkpoint")).to_have_count(n)
        expect(nb.reveal_gates()).to_have_count(n)
        expect(root.locator(".labkit-synthesis")).to_have_count(1)
        for i, part in enumerate(spec.parts):
            explore = nb.explore(part.letter)
            expect(explore).to_have_count(1)
            expect(explore.locator(".labkit-gate")).to_contain_text("Commit your prediction")
            expect(explore.locator(".bqplot")).to_have_count(0)
            expect(nb.reveal_gates().nth(i).locator(".labkit-gate")).to_contain_text(
                "Commit your prediction first")

    @on(ANSWER_NOTEBOOKS)
    def test_committing_a_prediction_reveals_it_and_locks_the_answer(self, student: Student):
        nb, spec = student.nb, student.spec
        for i, part in enumerate(spec.parts):
            pred, label = student.prediction(i), part.pick[0]
            explore, reveal = nb.explore(part.letter), nb.reveal_gates().nth(i)
            commit = pred.get_by_role("button", name="Commit prediction")
            radios = pred.get_by_role("radio")
            expect(radios).to_have_count(len(part.choices))
            expect(commit).to_be_disabled()
            for k in range(len(part.choices)):
                expect(radios.nth(k)).to_be_enabled()

            pred.get_by_role("radio", name=label, exact=True).check()
            expect(commit).to_be_enabled()
            commit.click()

            expect(pred.locator(".labkit-answer-status")).to_contain_text(f"committed: {label}")
            for k in range(len(part.choices)):
                expect(radios.nth(k)).to_be_disabled()
            expect(pred.get_by_role("radio", name=label, exact=True)).to_be_checked()
            expect(commit).to_be_hidden()
            expect(pred.get_by_role("button", name="Revise")).to_be_visible()
            expect(reveal.locator(".labkit-reveal")).to_contain_text(f"You predicted {label}")
            expect(reveal.locator(".labkit-gate")).to_have_count(0)
            expect(explore.locator(".labkit-gate")).to_have_count(0)
            expect(explore.locator(".labkit-explore-body")).to_be_visible()

    @on(NOTEBOOKS[:1])
    def test_a_prediction_and_a_slider_by_keys(self, student: Student):
        """One prediction committed and one slider moved with the keyboard alone, before
        anything else is committed: arrow keys change the choice (not the notebook's active
        cell), Enter commits, focus stays in the question, and an arrow key moves a slider
        (and back, to the kernel's value the next test compares)."""
        nb = student.nb
        page = nb.page
        active = "() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) " \
                 ".jp-Cell')].findIndex(c => c.classList.contains('jp-mod-active'))"
        pred = student.prediction(0)
        radios = pred.get_by_role("radio")
        expect(pred).to_have_attribute("data-lm-suppress-shortcuts", "true")
        radios.nth(0).focus()
        page.keyboard.press("Space")
        expect(radios.nth(0)).to_be_checked()
        before = page.evaluate(active)
        page.keyboard.press("ArrowDown")
        expect(radios.nth(1)).to_be_checked()
        assert page.evaluate(active) == before, "ArrowDown moved the notebook's active cell"
        button = pred.get_by_role("button", name="Commit prediction")
        # The kernel enables Commit once it has the choice; Tab skips a disabled button, so
        # wait for it as a person would see it turn active, then Tab to it.
        expect(button).to_be_enabled()
        for _ in range(6):   # Tab leaves the radio group for the Commit button
            page.keyboard.press("Tab")
            if button.evaluate("b => b === document.activeElement"):
                break
        assert button.evaluate("b => b === document.activeElement"), \
            "Tab never reached the Commit button"
        page.keyboard.press("Enter")
        expect(pred.locator(".labkit-answer-status")).to_contain_text("committed:")
        page.wait_for_function(
            "el => el.contains(document.activeElement) || el === document.activeElement",
            arg=pred.element_handle())
        area = nb.explore(student.spec.parts[0].letter)
        handle = area.locator(".widget-slider .noUi-handle").first
        readout = area.locator(".widget-slider .widget-readout").first
        cards = area.locator(".labkit-readout")
        start, shown = readout.text_content(), cards.text_content()
        handle.focus()
        page.keyboard.press("ArrowRight")
        expect(readout).not_to_have_text(start)
        expect(cards).not_to_have_text(shown)  # the kernel has the move: nothing in flight
        page.keyboard.press("ArrowLeft")
        expect(readout).to_have_text(start)
        expect(cards).to_have_text(shown)

    @on(NOTEBOOKS)
    def test_every_slider_shows_the_kernel_s_starting_value(self, student: Student,
                                                             tmp_path: Path):
        """The front end keeps each slider's value: rendered, a slider whose value sat off
        its grid sent another value back (the ring's demand read 1.02, not 1.00) and the
        cards disagreed with the reveal. Each readout is compared with the kernel's value
        formatted as ipywidgets formats it (d3), before anything is touched (so it
        runs before the test that moves a slider)."""
        student.commit_all()
        module = importlib.import_module(f"labkit.labs.{Path(student.spec.path).stem}")
        lab = module.Lab(student.spec.track, store=AnswerStore(tmp_path / "a.json"))
        seen = 0
        for part in lab.parts():
            want = {str(c.description): _readout(c) for c in part.controls.values()
                    if _readout(c) is not None}
            sliders = student.nb.explore(part.letter).locator(".widget-slider")
            for k in range(sliders.count()):
                label = sliders.nth(k).locator(".widget-label").inner_text().strip()
                if label in want:
                    got = sliders.nth(k).locator(".widget-readout").inner_text().strip()
                    assert got == want[label], (part.letter, label, got, want[label])
                    seen += 1
        assert seen, "no slider was compared"

    @on(NOTEBOOKS)
    def test_every_chart_is_drawn(self, student: Student):
        student.commit_all()
        for part in student.spec.parts:
            student.nb.open_more(student.nb.explore(part.letter))
            figs = student.nb.explore(part.letter).locator(".bqplot.figure")
            expect(figs).to_have_count(part.figures)
            for k in range(part.figures):
                figs.nth(k).scroll_into_view_if_needed()
                wait_drawn(figs.nth(k))

    @on(NOTEBOOKS)
    def test_moving_a_slider_changes_the_chart(self, student: Student):
        i = student.spec.part_index(SLIDER_PART)
        student.commit(i)
        area = student.nb.explore(SLIDER_PART)
        slider = area.locator(".widget-slider").first
        handle, value = slider.locator(".noUi-handle"), slider.locator(".widget-readout")
        figs = area.locator(".bqplot.figure")
        expect(figs).to_have_count(student.spec.parts[i].figures)
        before = [wait_drawn(figs.nth(k)) for k in range(figs.count())]
        shown, cards = value.text_content(), area.locator(".labkit-readout").text_content()
        at_max = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")

        handle.press("ArrowLeft" if at_max else "ArrowRight")  # the keyboard, as a student

        expect(value).not_to_have_text(shown)
        after = wait_changed(figs, before)
        changed = [k for k, (b, a) in enumerate(zip(before, after, strict=True))
                   if b["ticks"] != a["ticks"] or b["lines"] != a["lines"]
                   or b["bars"] != a["bars"] or b["points"] != a["points"]]
        assert changed, "no chart changed its tick labels or marks"
        expect(area.locator(".labkit-readout")).not_to_have_text(cards)

    @on(NOTEBOOKS)
    def test_report_downloads_and_is_saved_beside_the_notebook(self, student: Student):
        nb, spec = student.nb, student.spec
        student.commit(0)
        first = spec.parts[0]
        line = f"Prediction: {first.pick[0]} (committed"
        synthesis = nb.notebook.locator(".labkit-synthesis")
        links = synthesis.locator("a.labkit-download")
        expect(links).to_have_count(2)
        if line not in decoded_link(links.first):  # committed after the synthesis ran
            synthesis.get_by_role("button", name="Refresh report").click()
            # The kernel re-renders the links with the answer; poll through the locator,
            # never a handle, since a re-render replaces the <a> elements.
            deadline = time.monotonic() + WIDGET_MS / 1000
            while line not in decoded_link(links.first) and time.monotonic() < deadline:
                nb.page.wait_for_timeout(200)
        expected = decoded_link(links.first)
        assert line in expected, "the report link never showed the committed prediction"

        with nb.page.expect_download(timeout=WIDGET_MS) as info:
            links.first.click()
        download = info.value
        assert download.suggested_filename == spec.report_download
        text = Path(download.path()).read_text(encoding="utf-8")
        assert text == expected and line in text

        with nb.page.expect_download(timeout=WIDGET_MS) as info:
            links.nth(1).click()
        data = json.loads(Path(info.value.path()).read_text(encoding="utf-8"))
        assert data["lab"] == spec.lab_id and data["track"]["id"] == spec.track
        assert data["parts"][first.letter]["prediction"]["entry"]["first"] == first.pick[1]

        on_disk = nb.folder / spec.report_md
        assert on_disk.exists(), f"{spec.report_md} was not written beside the notebook"
        assert line in on_disk.read_text(encoding="utf-8")

    @on(NOTEBOOKS)
    def test_axe_finds_no_serious_violation(self, student: Student):
        """axe-core in the browser, on what labkit renders (every output area) after Run
        All and one committed prediction per part: no serious or critical WCAG 2.1 A/AA
        violation. Last of the class: it reuses the session's page (one Run All per
        notebook) once the other tests have committed what they commit."""
        from axe_playwright_python.sync_playwright import Axe

        student.commit_all()
        for part in student.spec.parts:
            student.nb.open_more(student.nb.explore(part.letter))
        results = Axe().run(student.nb.page, context={"include": [[
            ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-OutputArea-output"]]},
            options={"runOnly": {"type": "tag",
                                 "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
                     "resultTypes": ["violations"]})
        bad = [(v["id"], v["impact"], v["help"], [n["target"] for n in v["nodes"]][:3])
               for v in results.response["violations"]
               if v["impact"] in ("serious", "critical")]
        assert not bad, "\n".join(map(str, bad))

    @on(WALL_NOTEBOOKS)
    def test_pushing_memory_past_the_wall_shows_out_of_memory(
            self, student: Student, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
        monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
        """Part B's controls of :data:`MEMORY_WALL`'s recipe pushed to their ends: the
        out-of-memory callout where the wall is reachable. Last: it leaves Part B there."""
        steps, reachable = MEMORY_WALL[student.spec.assignment]
        student.commit(student.spec.part_index("B"))
        area = student.nb.explore("B")
        # the out-of-memory callout (a hard-deadline track has a deadline callout beside it)
        oom = area.locator(".widget-html.labkit-callout-danger").filter(
            has_text="Out of memory")
        cards = area.locator(".labkit-readout")
        for control, key in steps:
            label = _control_label(student.spec.assignment, control, tmp_path)
            handle = student.nb.slider_handle(area, label)
            expect(handle).to_have_count(1)
            before = cards.text_content()
            handle.press(key)
            if handle.get_attribute("aria-valuenow") != (
                    handle.get_attribute("aria-valuemax" if key == "End" else "aria-valuemin")):
                raise AssertionError(f"{label}: {key} did not move the slider to its end")
            if not reachable:
                expect(cards).not_to_have_text(before)
        if reachable:
            expect(oom).to_be_visible()
            expect(oom).to_contain_text("Out of memory")
            expect(oom).to_contain_text("FAILURE")
            expect(cards).to_contain_text("OOM")
        else:
            expect(oom).to_have_count(0)
            expect(cards).not_to_contain_text("OOM")

    @on(ANSWER_NOTEBOOKS)
    def test_saved_prediction_survives_close_and_reopen(self, student: Student):
        nb, spec = student.nb, student.spec
        student.commit_all()
        assert nb.save() is False, "the notebook is still dirty after docmanager:save"
        store = student.answers()
        for part in spec.parts:
            entry = store.get(spec.lab_id, part.key)
            assert entry is not None and entry.first == part.pick[1], (part.key, entry)

        nb.close_and_shutdown()
        nb.open()
        nb.run_all()

        for i, part in enumerate(spec.parts):
            pred, label = student.prediction(i), part.pick[0]
            expect(pred.locator(".labkit-answer-status")).to_contain_text(f"committed: {label}")
            expect(pred.get_by_role("radio", name=label, exact=True)).to_be_checked()
            radios = pred.get_by_role("radio")
            for k in range(len(part.choices)):
                expect(radios.nth(k)).to_be_disabled()
            expect(nb.reveal_gates().nth(i).locator(".labkit-reveal")).to_contain_text(
                f"You predicted {label}")
            expect(nb.explore(part.letter).locator(".labkit-gate")).to_have_count(0)
        assert json.loads((nb.folder / DEFAULT_ANSWERS_PATH).read_text(encoding="utf-8"))


def test_every_memory_wall_recipe_names_a_released_notebook():
    assert set(MEMORY_WALL) <= {Path(p).parent.name for p in NOTEBOOKS}
