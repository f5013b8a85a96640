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
and submits; a second student submits the notebook untouched; a third submits, with
``nbgrader submit``, full answers carrying every page attack a browser could run
(:mod:`labkit.course.fixtures.pages`: image-size attributes, markdown scripts and links,
remote ``filenames``, embedding HTML). The grader runs ``nbgrader collect``, ``labkit
course grade``, ``labkit course feedback`` and ``nbgrader release_feedback``; the
instructor opens the formgrader in the grading service (under its Content-Security-Policy),
which lists the submissions, opens the third one and grades its memo; the student fetches
the feedback and sees the score, and no hidden test is in it. Neither the formgrader's view
of the third submission nor its feedback page runs the student's JavaScript or requests
anything but the hub: a canary server listens on the fixtures' loopback port.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import nbformat
import pytest
from playwright.sync_api import (
    Browser,
    ConsoleMessage,
    Page,
    Request,
    expect,
    sync_playwright,
)

from browser_helpers import (
    CHROMIUM,
    CHROMIUM_ARGS,
    INIT_SCRIPT,
    LAB_SETTINGS,
    RUN_ALL_MS,
    VIEWPORT,
    NotebookPage,
)
from course_helpers import ROOT, free_port, hidden_secrets, nbgrader_meta, notebook_path
from hub_helpers import (
    DOMAIN,
    Account,
    CanaryServer,
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
from labkit.course.fixtures.honest import write_honest
from labkit.course.fixtures.pages import (
    CANARY,
    CANARY_PORT,
    TITLE_MARK,
    WINDOW_FLAG,
    browser_attack,
)
from labkit.course.submission import ANSWERS_FILE
from labkit.labs import LABS
from labkit.ui.headless import LIVE
from pg_helpers import Cluster, pg_cluster

pytestmark = pytest.mark.hub

LAB, TRACK = "lab1", "cloud_fleet"
ASSIGNMENT = LABS[LAB].assignment(TRACK)
NOTEBOOK = LABS[LAB].notebook
NAMES = {"instructor": "lkhub-instructor", "grader": "lkhub-grader",
         "alice": "lkhub-alice", "bob": "lkhub-bob", "carol": "lkhub-carol"}
STUDENTS = ("alice", "bob", "carol")  # carol submits the page attacks
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
    canary: CanaryServer
    not_inert: dict[str, dict] = field(default_factory=dict)  # page: what ran or loaded

    def grader(self, *cmd: str) -> str:
        """A command as the grader account in the course repository."""
        return as_user(self.accounts["grader"], list(cmd), cwd=self.course_root,
                       bin_dir=self.bin_dir,
                       extra_env={"LABKIT_EXCHANGE_ROOT": str(self.exchange)})

    def student(self, who: str, *cmd: str) -> str:
        """A command as a student, in their home (where JupyterLab runs nbgrader)."""
        account = self.accounts[who]
        return as_user(account, list(cmd), cwd=account.home, bin_dir=self.bin_dir,
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
                    "STUDENTS": " ".join(accounts[who].name for who in STUDENTS),
                    "GRADING_URL": f"http://127.0.0.1:{free_port()}",
                    "EXCHANGE_ROOT": str(exchange)}
        with pg_cluster() as pg, sync_playwright() as pw, CanaryServer(CANARY_PORT) as canary:
            browser = pw.chromium.launch(
                executable_path=str(CHROMIUM), timeout=60_000,
                args=[*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {DOMAIN} 127.0.0.1, "
                      f"MAP *.{DOMAIN} 127.0.0.1"])
            c = Course(Hub(state, bin_dir, settings, (free_port(), free_port(), free_port())),
                       bin_dir, accounts, course_root, exchange, pg, browser, canary)
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
    # a checkpoint's point is for its right first answer: alice gives it (carol's honest
    # answers file does too)
    _commit(page, nb, ".labkit-checkpoint",
            [_label(p.checkpoint, p.checkpoint.options.index(p.checkpoint_expected))
             for p in parts], "Commit answer")
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
    JupyterHub's frame-ancestors fix; the service's strict CSP) and sees every submission,
    then opens carol's page attacks and grades her memo there."""
    page = _login(c, "instructor")
    lab = _Traffic(page)  # what the CSP refuses the service's JupyterLab: nothing
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
    assert response.all_headers().get("content-security-policy") == GRADING_CSP
    page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
    page.locator(".lm-Menu-itemLabel", has_text="Formgrader").first.click()
    frame = page.frame_locator("iframe").first
    expect(frame.locator("body")).to_contain_text(ASSIGNMENT, timeout=60_000)
    page.goto(f"{base}/formgrader/manage_submissions/{ASSIGNMENT}")
    table = page.locator("body")
    for who in STUDENTS:
        expect(table).to_contain_text(c.accounts[who].name, timeout=60_000)
    assert not lab.refused, lab.refused  # JupyterLab and the formgrader lists work under it
    _grade_page_attacks(c, page, base)
    page.context.close()


# labkit.course.hub.GRADING_CONFIG's Content-Security-Policy, as this checkout (installed
# into the users' environment) has it: every formgrader page must work under it.
GRADING_CSP = json.loads(
    (ROOT / "src/labkit/course/hub/grading/jupyter_server_config.json").read_text())[
    "ServerApp"]["tornado_settings"]["headers"]["Content-Security-Policy"]
MEMO_ID = f"{LAB}-memo"
MATHJAX = "https://cdnjs.cloudflare.com/ajax/libs/mathjax/"  # nbconvert's template's


def _grade_page_attacks(c: Course, listing: Page, base: str) -> None:
    """Carol's submission in the formgrader's own view (``/formgrader/submissions/<id>/``,
    the page that renders the autograded notebook): it works -- the autograded score is
    loaded, the memo's manual grade is saved -- and nothing of hers runs or loads."""
    stem = Path(NOTEBOOK).stem
    subs = listing.evaluate("async url => (await fetch(url)).json()",  # (the page's origin)
                            f"{base}/formgrader/api/submitted_notebooks/{ASSIGNMENT}/{stem}")
    (sub,) = [s for s in subs if s["student"] == c.accounts["carol"].name]
    page = listing.context.new_page()
    traffic = _Traffic(page)
    response = page.goto(f"{base}/formgrader/submissions/{sub['id']}/")
    assert response is not None and response.ok, response
    assert response.all_headers().get("content-security-policy") == GRADING_CSP
    check = page.locator(f'[id="{LAB}-a-exercise-check"]')
    expect(check).to_have_attribute("placeholder", re.compile(r"^2(\.0)?$"))  # formgrade.js ran
    page.locator("span.glyphicon.name-hidden").click()  # an inline handler the CSP admits
    expect(page.locator("a.name-shown")).to_contain_text(c.accounts["carol"].name)
    memo = page.locator(f'[id="{MEMO_ID}"]')
    expect(memo).to_be_visible()
    memo.fill(str(MEMO_POINTS))
    with page.expect_response(lambda r: "/formgrader/api/grade/" in r.url
                              and r.request.method == "PUT") as saved:
        memo.blur()
    assert saved.value.ok and saved.value.json()["manual_score"] == MEMO_POINTS
    _check_inert(c, page, traffic, "the formgrader's view of carol's submission")
    # the CSP refuses nothing of the formgrader's own but nbconvert's MathJax (a CDN)
    assert not [m for m in traffic.refused if MATHJAX not in m], traffic.refused
    page.close()


class _Traffic:
    """Every request a page (and its frames) makes, and why the failed ones failed."""

    def __init__(self, page: Page) -> None:
        self.urls: list[str] = []
        self.failures: dict[str, str] = {}
        self.refused: list[str] = []  # what the page's Content-Security-Policy refused
        page.on("request", self._sent)
        page.on("requestfailed", self._failed)
        page.on("console", self._console)

    def _console(self, message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text:
            self.refused.append(message.text[:300])

    def _sent(self, request: Request) -> None:
        self.urls.append(request.url)

    def _failed(self, request: Request) -> None:
        self.failures.setdefault(request.url, request.failure or "")

    def foreign(self, port: int) -> list[str]:
        """Requests for anything but the hub's hosts (data:, about: and blob: are local)
        that were sent: not refused by the page's Content-Security-Policy."""
        def local(url: str) -> bool:
            parts = urlsplit(url)
            host = parts.hostname or ""
            return parts.scheme in ("data", "about", "blob") or (
                (host == DOMAIN or host.endswith(f".{DOMAIN}")) and parts.port == port)
        return [u for u in self.urls if not local(u)
                and "csp" not in self.failures.get(u, "").lower()]  # "csp": never sent


# Run in every frame: the canary's marks, and student markup left live in the DOM (an
# attribute naming the canary, a javascript: URL) even if nothing triggered it yet.
SCAN_JS = f"""() => {{
  const live = [];
  for (const el of document.querySelectorAll('*')) {{
    for (const a of el.attributes) {{
      const v = a.value.toLowerCase().replace(/\\s/g, '');
      if (v.includes('{TITLE_MARK.lower()}') || v.includes('{CANARY.lower()}')
          || v.includes('127.0.0.1:{CANARY_PORT}') || v.startsWith('javascript:'))
        live.push(`<${{el.tagName.toLowerCase()}} ${{a.name}}="${{a.value.slice(0, 90)}}">`);
    }}
  }}
  return {{title: document.title, flag: window.{WINDOW_FLAG} || null, live}};
}}"""


def _check_inert(c: Course, page: Page, traffic: _Traffic, what: str) -> None:
    """Record in ``c.not_inert`` what of the student's ran or loaded on ``page``: a canary
    mark in a frame, live canary markup, a request to the canary server or off the hub, a
    terminal (the test asserts there is nothing, once every page was seen)."""
    page.wait_for_load_state("networkidle")
    scans = []
    for frame in page.frames:
        try:
            scans.append({"frame": frame.url[:80], **frame.evaluate(SCAN_JS)})
        except Exception as exc:  # a frame the page removed meanwhile
            scans.append({"frame": frame.url[:80], "error": str(exc)[:200]})
    problems = {
        "canary JavaScript ran": [
            {k: s.get(k) for k in ("frame", "title", "flag")} for s in scans
            if s.get("flag") or str(s.get("title", "")).startswith(TITLE_MARK)],
        "live student markup": [m for s in scans for m in s.get("live", [])],
        "canary server hits": c.canary.take(),
        "requests off the hub": traffic.foreign(c.hub.port),
        "terminal API calls": [u for u in traffic.urls if "/api/terminals" in u],
    }
    found = {k: v for k, v in problems.items() if v}
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"hub-page-attacks-{re.sub(r'[^a-z]+', '-', what.lower())}.json").write_text(
        json.dumps({"page": what, "found": found, "requests": traffic.urls,
                    "failures": traffic.failures, "refused": traffic.refused}, indent=1))
    if found:
        c.not_inert[what] = found


def _submit_page_attacks(c: Course) -> None:
    """Carol: ``nbgrader fetch_assignment``, full answers carrying every page attack a
    browser can take (:func:`labkit.course.fixtures.pages.browser_attack`) put in place of
    the fetched notebook, ``nbgrader submit``."""
    home = c.accounts["carol"].home
    c.student("carol", "nbgrader", "fetch_assignment", ASSIGNMENT)
    work = Path(tempfile.mkdtemp()) / "carol" / ASSIGNMENT
    browser_attack(LAB)(write_honest("full", ROOT, ASSIGNMENT, work), work)
    for name in (NOTEBOOK, ANSWERS_FILE):
        shutil.copy(work / name, home / ASSIGNMENT / name)
    shutil.rmtree(work.parent.parent)
    chown_tree(home / ASSIGNMENT, c.accounts["carol"])
    c.student("carol", "nbgrader", "submit", ASSIGNMENT)


def _page_attack_feedback_is_inert(c: Course) -> None:
    """Carol fetches her feedback and opens it from her own server: it renders and is
    inert."""
    home = c.accounts["carol"].home
    c.student("carol", "nbgrader", "fetch_feedback", ASSIGNMENT)
    (html,) = (home / ASSIGNMENT / "feedback").glob(f"*/{Path(NOTEBOOK).stem}.html")
    login = _login(c, "carol")
    login.wait_for_url(re.compile(rf"{re.escape(c.user_url('carol'))}/"), timeout=LOGIN_MS)
    page = login.context.new_page()
    traffic = _Traffic(page)
    page.goto(f"{c.user_url('carol')}/files/{html.relative_to(home).as_posix()}")
    expect(page.locator("body")).to_contain_text("Score")
    _check_inert(c, page, traffic, "carol's feedback page")
    login.context.close()


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
    _submit_page_attacks(c)

    c.grader("nbgrader", "collect", ASSIGNMENT)
    collected = c.course_root / "submitted"
    assert {p.name for p in collected.iterdir()} == {c.accounts[w].name for w in STUDENTS}
    out = c.grader("labkit", "course", "grade", ASSIGNMENT)
    assert "graded 3 submission(s)" in out and " 0 failed" in out, out
    # the summary row: submissions, mean, min (bob, untouched), max (alice; carol's page
    # attacks keep her full answers), points
    row = next(line.split() for line in out.splitlines() if line.startswith(f"{ASSIGNMENT} "))
    assert row[1] == "3" and float(row[3]) == 0.0, row
    best, points = float(row[4]), float(row[5])
    assert float(row[2]) == round(2 * best / 3, 2), row  # carol lost nothing either
    c.grader("labkit", "course", "feedback", LAB)
    c.grader("nbgrader", "release_feedback", ASSIGNMENT)
    _formgrader_lists_submissions(c)
    _page_attack_feedback_is_inert(c)
    assert not c.not_inert, json.dumps(c.not_inert, indent=1)[:12000]

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
    # The box grades headless (labkit.core.headless): no widget is built, so the feedback
    # holds neither a widget's repr nor the note that replaces a widget, but the parts' line
    # saying their views show in the live notebook.
    assert "children=(" not in text and WIDGET_NOTE not in text and LIVE in text


INLINE_HANDLER = re.compile(r'\son[a-z]+="([^"]*)"', re.I)


def test_the_grading_csp_admits_exactly_the_formgraders_own_inline_handlers():
    """The formgrader's templates (nbgrader's, as installed) put a few fixed JavaScript
    handlers in attributes (``onclick="toggle_name(true);"``): GRADING_CSP admits exactly
    those by hash, so no other handler (a student's ``onerror``) runs in the grading
    service. Its inline ``<script>`` elements carry per-page values (ids, the base URL): no
    stable hash, hence ``'unsafe-inline'`` for elements only."""
    import base64
    import hashlib

    from nbgrader.server_extensions.formgrader import handlers

    templates = [p.read_text() for p in Path(handlers.template_path).rglob("*") if p.is_file()]
    handlers_found = {m for t in templates for m in INLINE_HANDLER.findall(t)}
    hashes = {"sha256-" + base64.b64encode(hashlib.sha256(h.encode()).digest()).decode()
              for h in handlers_found}
    directives = dict(d.strip().split(" ", 1) for d in GRADING_CSP.split(";"))
    admitted = set(re.findall(r"'(sha256-[^']+)'", directives["script-src-attr"]))
    assert handlers_found and admitted == hashes, (handlers_found, admitted ^ hashes)
    assert "'unsafe-inline'" not in directives["script-src-attr"]
    scripts = [m for t in templates for m in re.findall(r"<script[^>]*>(.*?)</script>", t, re.S)
               if m.strip() and "mathjax" not in m.lower()]
    assert scripts and all("{{" in m or "{%" in m for m in scripts if "var " in m)
    for name in ("default-src", "connect-src", "base-uri", "form-action", "frame-ancestors"):
        assert directives[name] == "'self'", name
    assert directives["object-src"] == "'none'" and directives["img-src"] == "'self' data:"
