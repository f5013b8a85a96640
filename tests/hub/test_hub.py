"""The course on a real JupyterHub, end to end, as the README's "Deploying on JupyterHub"
section sets it up.

``jupyterhub -f course/jupyterhub_config.py`` (the file itself; the test only sets its
``LABKIT_HUB_*`` variables and loopback ports) runs as root from the users' environment:
PAM logins for real Unix accounts made here (an instructor, the grader account, two
students), every server spawned as its user by LocalProcessSpawner, npm's
configurable-http-proxy, the grading service as the grader account, the nbgrader
exchange in a temporary root (mode 1777, as nbgrader documents), the gradebook on a
throw-away PostgreSQL server. Servers and the service each get a subdomain of
``hub.labkit.test``, which Chromium resolves to loopback.

In headless Chromium a student logs in, fetches ``lab1_<track>`` from the Assignments
list, runs it, answers every exercise, commits every prediction and checkpoint, saves
and submits; a second student submits the notebook untouched. The grader runs
``nbgrader collect``, ``labkit course grade``, ``labkit course feedback`` and
``nbgrader release_feedback``; the instructor opens the formgrader in the grading
service, which lists both submissions; the student fetches the feedback and sees the
score, and no hidden test is in it.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from browser_helpers import (
    CHROMIUM,
    CHROMIUM_ARGS,
    INIT_SCRIPT,
    LAB_SETTINGS,
    RUN_ALL_MS,
    VIEWPORT,
    NotebookPage,
)
from course_helpers import free_port, hidden_secrets, nbgrader_meta, notebook_path
from hub_helpers import (
    DOMAIN,
    Account,
    Hub,
    as_user,
    check_prerequisites,
    chown_tree,
    copy_course,
    create_account,
    remove_account,
    users_environment,
)
from labkit.core.answers import AnswerStore
from labkit.course.feedback import WIDGET_NOTE
from labkit.labs import LABS
from pg_helpers import Cluster, pg_cluster

pytestmark = pytest.mark.hub

LAB, TRACK = "lab1", "cloud_fleet"
ASSIGNMENT = LABS[LAB].assignment(TRACK)
NOTEBOOK = LABS[LAB].notebook
NAMES = {"instructor": "lkhub-instructor", "grader": "lkhub-grader",
         "alice": "lkhub-alice", "bob": "lkhub-bob"}
MEMO_POINTS = 3.0  # the manually graded memo (course/labs/lab1.py)
LOGIN_MS = 120_000  # login, spawn and JupyterLab loaded
ARTIFACTS = Path(__file__).resolve().parents[1] / "browser" / "artifacts"


@dataclass
class Course:
    hub: Hub
    bin_dir: Path
    accounts: dict[str, Account]
    course_root: Path
    exchange: Path
    pg: Cluster
    browser: Browser

    def grader(self, *cmd: str) -> str:
        """A command as the grader account in the course repository."""
        return as_user(self.accounts["grader"], list(cmd), cwd=self.course_root,
                       bin_dir=self.bin_dir,
                       extra_env={"LABKIT_EXCHANGE_ROOT": str(self.exchange)})

    def user_url(self, who: str) -> str:
        name = self.accounts[who].name
        return f"http://{name}.{DOMAIN}:{self.hub.port}/user/{name}"


def _student_settings(account: Account) -> None:
    """What a student's own JupyterLab settings may hold: the browser helpers need the
    app object and every cell rendered (as in tests/browser)."""
    cfg = account.home / ".jupyter"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "jupyter_server_config.json").write_text(json.dumps(
        {"LabApp": {"expose_app_in_browser": True, "news_url": None}}))
    for rel, values in LAB_SETTINGS.items():
        path = cfg / "lab" / "user-settings" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    chown_tree(cfg, account)


def _setup_course(c: Course) -> None:
    """README steps 3-4 as the grader: the repository, its gradebook, the release."""
    grader = c.accounts["grader"]
    copy_course(c.course_root)
    jupyter = grader.home / ".jupyter"
    jupyter.mkdir()
    (jupyter / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.db_url = {c.pg.create('labkit')!r}\n")
    chown_tree(grader.home, grader)
    c.grader("labkit", "course", "init", ASSIGNMENT)
    c.grader("nbgrader", "release_assignment", ASSIGNMENT)


@pytest.fixture(scope="module")
def course() -> Iterator[Course]:
    check_prerequisites()
    base = Path(tempfile.mkdtemp(prefix="labkit-hub-"))
    base.chmod(0o755)
    homes, exchange, state = base / "home", base / "exchange", base / "hub"
    for d in (homes, state):
        d.mkdir()
    exchange.mkdir()
    exchange.chmod(0o1777)  # nbgrader: world-writable with the sticky bit
    try:
        bin_dir = users_environment(base / "env")
        shutil.copy(Path(__file__).resolve().parents[2] / "course" /
                    "global_nbgrader_config.py", base / "env" / "etc" / "jupyter" /
                    "nbgrader_config.py")
        accounts = {who: create_account(name, homes) for who, name in NAMES.items()}
        for who in ("alice", "bob", "instructor"):
            _student_settings(accounts[who])
        course_root = accounts["grader"].home / "labkit"
        settings = {"GRADER": accounts["grader"].name, "COURSE_ROOT": str(course_root),
                    "INSTRUCTORS": accounts["instructor"].name,
                    "STUDENTS": f"{accounts['alice'].name} {accounts['bob'].name}",
                    "GRADING_URL": f"http://127.0.0.1:{free_port()}",
                    "EXCHANGE_ROOT": str(exchange)}
        with pg_cluster() as pg, sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=str(CHROMIUM), timeout=60_000,
                args=[*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {DOMAIN} 127.0.0.1, "
                      f"MAP *.{DOMAIN} 127.0.0.1"])
            c = Course(Hub(state, bin_dir, settings, (free_port(), free_port(), free_port())),
                       bin_dir, accounts, course_root, exchange, pg, browser)
            _setup_course(c)
            c.hub.start()
            try:
                yield c
            finally:
                c.hub.stop()
                browser.close()
    finally:
        for name in NAMES.values():
            remove_account(name)
        shutil.rmtree(base, ignore_errors=True)


def _login(c: Course, who: str) -> Page:
    context = c.browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(60_000)
    page = context.new_page()
    page.add_init_script(INIT_SCRIPT)
    account = c.accounts[who]
    page.goto(f"{c.hub.url}/hub/login", timeout=LOGIN_MS)
    page.fill("#username_input", account.name)
    page.fill("#password_input", account.password)
    page.click("#login_submit")
    return page


def _lab(c: Course, who: str) -> Page:
    """Logged in, the server spawned, the student's JupyterLab loaded."""
    page = _login(c, who)
    try:
        page.wait_for_url(re.compile(rf"{re.escape(c.user_url(who))}/lab"), timeout=LOGIN_MS)
        page.wait_for_function("() => window.jupyterapp !== undefined", timeout=LOGIN_MS)
    except Exception as exc:
        raise AssertionError(_where(c, page, f"{who}'s JupyterLab did not load: {exc}")) from None
    page.evaluate("() => window.jupyterapp.restored")
    return page


def _where(c: Course, page: Page, what: str) -> str:
    """A failure's evidence: the page's address and text, a screenshot, the hub's log."""
    ARTIFACTS.mkdir(exist_ok=True)
    stem = ARTIFACTS / f"hub-{len(list(ARTIFACTS.glob('hub-*.png')))}"
    try:
        page.screenshot(path=f"{stem}.png", full_page=True)
        body = page.locator("body").inner_text(timeout=5_000)[:2000]
    except Exception as exc:  # the page may be gone
        body = f"(page unreadable: {exc})"
    (ARTIFACTS / "hub-jupyterhub.log").write_text(c.hub.log_tail(400_000))
    return f"{what}\nat {page.url}\n{body}\nhub log:\n{c.hub.log_tail(6000)}"


def _open_assignments(page: Page) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
    page.locator(".lm-Menu-itemLabel", has_text="Assignment List").click()
    expect(page.locator("#released_assignments_list")).to_be_visible()


def _press(page: Page, list_id: str, label: str) -> None:
    """The button of the course's assignment row in one of the Assignments lists."""
    button = page.locator(f"#{list_id} button", has_text=label)
    expect(button).to_have_count(1, timeout=60_000)
    button.click()


class _HubServer:
    """What NotebookPage needs of a server: its root (the user's home) and URL."""

    def __init__(self, root: Path, url: str) -> None:
        self.root, self.url = root, url


def _solutions() -> dict[str, str]:
    source = nbformat.read(notebook_path("source", LAB, TRACK), as_version=4)
    return {nbgrader_meta(c)["grade_id"]: re.sub(r"### (BEGIN|END) SOLUTION\n?", "", c.source)
            for c in source.cells if nbgrader_meta(c).get("solution")
            and not nbgrader_meta(c)["grade_id"].endswith(("-predict", "-checkpoint"))}


TYPE_SOLUTIONS = """([path, sols]) => {
  const w = window.__labkit.mustPanel(path);
  let n = 0;
  for (const cell of w.content.widgets) {
    const meta = cell.model.getMetadata('nbgrader') || {};
    if (meta.grade_id in sols) { cell.model.sharedModel.setSource(sols[meta.grade_id]); n++; }
  }
  return n;
}"""


def _commit(page: Page, nb: NotebookPage, selector: str, labels: list[str],
            button: str) -> None:
    boxes = nb.notebook.locator(selector)
    expect(boxes).to_have_count(len(labels))
    for i, label in enumerate(labels):
        box = boxes.nth(i)
        box.get_by_role("radio", name=label, exact=True).check()
        box.get_by_role("button", name=button).click()
        expect(box.locator(".labkit-answer-status")).to_contain_text(f"committed: {label}")


def _work_and_submit(c: Course) -> None:
    """Alice: fetch, run, answer everything, save, submit -- all in the browser."""
    page = _lab(c, "alice")
    _open_assignments(page)
    menu_items = page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader")
    menu_items.click()
    labels = page.locator(".lm-Menu-itemLabel").all_inner_texts()
    page.keyboard.press("Escape")
    assert "Assignment List" in labels and not any("Formgrader" in t for t in labels), labels
    _press(page, "released_assignments_list", "Fetch")
    home = c.accounts["alice"].home
    expect(page.locator("#fetched_assignments_list button", has_text="Submit")).to_have_count(1)
    assert (home / ASSIGNMENT / NOTEBOOK).exists()

    nb = NotebookPage(page, _HubServer(home, c.user_url("alice")),  # type: ignore[arg-type]
                      f"{ASSIGNMENT}/{NOTEBOOK}")
    nb.open()
    typed = page.evaluate(TYPE_SOLUTIONS, [nb.path, _solutions()])
    assert typed >= 5, typed  # four exercises and the memo
    nb.run_all()
    lab = LABS[LAB].lab(TRACK, store=AnswerStore(Path(tempfile.mkdtemp()) / "a.json"))
    parts = [lab.part(p) for p in "ABCD"]
    _commit(page, nb, ".labkit-prediction", [_label(p.predict, -1) for p in parts],
            "Commit prediction")
    _commit(page, nb, ".labkit-checkpoint", [_label(p.checkpoint, 0) for p in parts],
            "Commit answer")
    assert not nb.save()
    _open_assignments(page)
    _press(page, "fetched_assignments_list", "Submit")
    expect(page.locator("#submitted_assignments_list")).to_contain_text(ASSIGNMENT,
                                                                        timeout=RUN_ALL_MS)
    page.context.close()


def _label(question: object, index: int) -> str:
    options, choices = question.options, question.choices  # type: ignore[attr-defined]
    return next(label for label, value in choices if value == options[index])


def _submit_untouched(c: Course) -> None:
    page = _lab(c, "bob")
    _open_assignments(page)
    _press(page, "released_assignments_list", "Fetch")
    _press(page, "fetched_assignments_list", "Submit")
    expect(page.locator("#submitted_assignments_list")).to_contain_text(ASSIGNMENT)
    page.context.close()


def _formgrader_lists_submissions(c: Course) -> None:
    """The instructor opens the formgrader in the grading service (its iframe renders:
    JupyterHub's frame-ancestors fix) and sees both submissions."""
    page = _login(c, "instructor")
    base = f"http://labkit--service.{DOMAIN}:{c.hub.port}/services/labkit"
    service = re.compile(rf"labkit--service\.{re.escape(DOMAIN)}:\d+/services/labkit/lab")
    try:
        page.wait_for_url(re.compile(r"/(hub|user)/"), timeout=LOGIN_MS)
        response = page.goto(f"{base}/", timeout=LOGIN_MS)
        page.wait_for_url(service, timeout=LOGIN_MS)
        page.wait_for_function("() => document.querySelector('.lm-MenuBar-itemLabel')",
                               timeout=LOGIN_MS)
    except Exception as exc:
        raise AssertionError(_where(c, page, f"the grading service did not load: {exc}")) \
            from None
    assert response is not None
    assert "frame-ancestors 'self'" in response.all_headers().get("content-security-policy", "")
    page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
    page.locator(".lm-Menu-itemLabel", has_text="Formgrader").first.click()
    frame = page.frame_locator("iframe").first
    expect(frame.locator("body")).to_contain_text(ASSIGNMENT, timeout=60_000)
    page.goto(f"{base}/formgrader/manage_submissions/{ASSIGNMENT}")
    table = page.locator("body")
    for who in ("alice", "bob"):
        expect(table).to_contain_text(c.accounts[who].name, timeout=60_000)
    page.context.close()


def _feedback_in_the_browser(c: Course) -> str:
    """Fetch Feedback, "(view feedback)" (JupyterLab's file browser goes to the folder),
    then the page itself as the student's server serves it."""
    page = _lab(c, "alice")
    _open_assignments(page)
    _press(page, "submitted_assignments_list", "Fetch Feedback")
    link = page.locator("#submitted_assignments_list a", has_text="view feedback")
    expect(link).to_have_count(1, timeout=60_000)
    link.click()
    listing = page.locator(".jp-DirListing-item", has_text=f"{NOTEBOOK.removesuffix('.ipynb')}")
    expect(listing.first).to_be_visible()
    home = c.accounts["alice"].home
    (html,) = (home / ASSIGNMENT / "feedback").glob(f"*/{Path(NOTEBOOK).stem}.html")
    page.goto(f"{c.user_url('alice')}/files/{html.relative_to(home).as_posix()}")
    text = page.locator("body").inner_text()
    page.context.close()
    return text


def test_a_class_on_jupyterhub_fetches_works_submits_is_graded_and_gets_feedback(course):
    c = course
    _work_and_submit(c)
    _submit_untouched(c)

    c.grader("nbgrader", "collect", ASSIGNMENT)
    collected = c.course_root / "submitted"
    assert {p.name for p in collected.iterdir()} == {c.accounts["alice"].name,
                                                     c.accounts["bob"].name}
    out = c.grader("labkit", "course", "grade", ASSIGNMENT)
    assert "graded 2 submission(s)" in out and " 0 failed" in out, out
    # the summary row: submissions, mean, min (bob, untouched), max (alice), points
    row = next(line.split() for line in out.splitlines() if line.startswith(f"{ASSIGNMENT} "))
    assert row[1] == "2" and float(row[3]) == 0.0, row
    best, points = float(row[4]), float(row[5])
    c.grader("labkit", "course", "feedback", LAB)
    c.grader("nbgrader", "release_feedback", ASSIGNMENT)
    _formgrader_lists_submissions(c)

    text = _feedback_in_the_browser(c)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "hub-feedback.txt").write_text(text)  # what the student read, for a failure
    score = re.search(r"Score:\s*([\d.]+)\s*/\s*([\d.]+)", text)
    assert score, text[:2000]
    got, out_of = float(score.group(1)), float(score.group(2))
    # every autograded point (the memo waits for a person) out of the assignment's points
    assert got == best == points - MEMO_POINTS and out_of == points, (score.group(0), row)
    lines, numbers = hidden_secrets(LAB, TRACK)
    # The expected values (integers such as 365 days also label her widgets, so
    # tests/test_course_report.py checks those on feedback it renders itself).
    expected = {n for n in numbers if "." in n}
    assert len(lines) >= 8 and expected
    assert not [line for line in lines if line in text]
    assert not [n for n in expected if n in text]
    assert "BEGIN HIDDEN TESTS" not in text
    assert "children=(" not in text and WIDGET_NOTE in text  # widgets: a note, not a repr
