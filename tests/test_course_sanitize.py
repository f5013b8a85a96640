"""labkit.course.sanitize: nothing a student writes runs, or fetches, in the pages that show
the autograded notebook.

Hostile notebooks (one payload per road in: image metadata, markdown, raw HTML, output
HTML and markdown, SVG, ``filenames``, attachments, surrogates, nested HTML) are rendered
through nbgrader's real ``formgrade`` template (as its formgrader renders a submission:
an ``HTMLExporter`` with ``template_name = "formgrade"``) after
:class:`SanitizeNotebook`, and through the feedback pipeline
(:func:`labkit.course.feedback.feedback_config`) straight from the hostile notebook. A page
passes when every element, attribute, script and style the student added obeys the policy:
no event handler, no script, no ``javascript:``, nothing fetched from a host. Controls show
the same checks catch the attacks on the unsanitized notebook.
"""

from __future__ import annotations

import base64
import html
import re
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nbconvert import HTMLExporter
from nbformat.v4 import (
    new_code_cell,
    new_markdown_cell,
    new_notebook,
    new_output,
    new_raw_cell,
)
from nbgrader.preprocessors import GetGrades, NbGraderPreprocessor
from nbgrader.server_extensions.formgrader import handlers
from nbgrader.utils import compute_checksum
from traitlets.config import Config

from labkit.course import feedback as fb
from labkit.course import sanitize as sz
from labkit.course.sanitize import SanitizeNotebook

TEMPLATES = Path(handlers.template_path)
BOOTSTRAP = TEMPLATES.parent / "static" / "node_modules" / "bootstrap" / "dist" / "css"
EVIL = "evil.example"
RUN = "window.__x=1"
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJR"
       "U5ErkJggg==")
JPEG = base64.b64encode(b"\xff\xd8\xff\xe0" + bytes(60)).decode()
SVG = f'<svg xmlns="http://www.w3.org/2000/svg" onload="{RUN}"><script>{RUN}</script></svg>'
HANDLER = f'1 onerror="{RUN}"'

MARKDOWN = [
    f'<img src=x onerror="{RUN}">',
    f"<script>{RUN}</script>",
    f"[click](javascript:{RUN})",
    "[click](JaVaScRiPt&#58;alert(1))",
    "[v](vbscript:msgbox(1))",
    "[d](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    f"<http://{EVIL}/autolink>",
    f"[ref][1]\n\n[1]: javascript:{RUN}",
    f'<div onmouseover="{RUN}">\n\nraw block\n\n</div>',
    f"![remote](http://{EVIL}/pixel.png)",
    f'<img src="https://{EVIL}/pixel.png">',
    f'<div style="background-image:url(http://{EVIL}/bg.png)">styled</div>',
    f"<style>@import url(http://{EVIL}/x.css); p {{background:url(//{EVIL}/y)}}</style>",
    SVG,
    f'<iframe src="http://{EVIL}/"></iframe>',
    f'<a href="//{EVIL}/protocol-relative">pr</a>',
    f'<!-- --!><img src=x onerror="{RUN}"> -->',
    f'<math><mtext><table><mglyph><style><img src=x onerror="{RUN}">',
    f'<form action="http://{EVIL}/"><button formaction="javascript:{RUN}">go</button></form>',
    f'<object data="http://{EVIL}/x.swf"></object>',
    f'<meta http-equiv="refresh" content="0;url=http://{EVIL}/">',
    f'<base href="http://{EVIL}/">',
    f'<link rel="stylesheet" href="http://{EVIL}/x.css">',
    f'<img srcset="http://{EVIL}/a.png 1x">',
    f'<video poster="http://{EVIL}/p.png"></video>',
    f'<table background="http://{EVIL}/t.png"><tr><td>t</td></tr></table>',
    "![att](attachment:missing.png)",
    '<h2 id="lab1-memo">takes the score input\'s id</h2>',
    "<textarea><img src=x onerror=alert(1)></textarea>",
    f'<a href="java\tscript:{RUN}">tab</a>',
    f"<div/><p/><img/src=x/onerror={RUN}>",
]
HTML = [*MARKDOWN[:2], *MARKDOWN[8:26], *MARKDOWN[28:]]


class _Page(HTMLParser):
    """Every element (tag, attributes), script and style of a page."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, tuple[tuple[str, str], ...]]] = []
        self.scripts: list[str] = []
        self.styles: list[str] = []
        self._in: str | None = None
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, tuple((k, v or "") for k, v in attrs)))
        self._in = tag if tag in ("script", "style") else None
        if tag == "script":
            self.scripts.append("")

    handle_startendtag = handle_starttag

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            self.scripts[-1] += data
        elif self._in == "style":
            self.styles.append(data)


FETCH = {"src", "srcset", "background", "poster", "data", "action", "formaction",
         "xlink:href", "href"}
NEVER = {"script", "iframe", "object", "embed", "frame", "form", "base", "meta", "link",
         "style", "svg", "math", "button", "textarea", "video", "audio", "source"}


def _squash(value: str) -> str:
    return re.sub(r"[\s\x00-\x1f]+", "", html.unescape(value)).lower()


def problems(page: str, baseline: str) -> list[str]:
    """What the student added to ``page`` (beside the template's own ``baseline`` page)
    that could run or fetch."""
    ours, base = _Page(page), _Page(baseline)
    found = [f"script {s[:60]!r}" for s in ours.scripts if s not in base.scripts]
    found += [f"style {s[:60]!r}" for s in ours.styles if s not in base.styles]
    known = set(base.elements)
    for tag, attrs in ours.elements:
        if (tag, attrs) in known:
            continue
        if tag in NEVER:
            found.append(f"<{tag}>")
        for name, value in attrs:
            low = _squash(value)
            if name.startswith("on") or "javascript:" in low or "vbscript:" in low:
                found.append(f"<{tag} {name}={value[:60]!r}>")
            elif name == "href" and tag == "a":
                if not re.match(r"(https?://|mailto:|#)", low):
                    found.append(f"<a href={value[:60]!r}>")
            elif name in FETCH and not low.startswith("data:image/"):
                found.append(f"<{tag} {name}={value[:60]!r}>")
            elif name == "style" and re.search(r"url\(|expression|@import", low):
                found.append(f"<{tag} style={value[:60]!r}>")
    return found


def _formgrade_exporter(sanitize_html: bool = False) -> HTMLExporter:
    """The exporter nbgrader's formgrader renders a submission with (its
    ``build_extra_config``); ``sanitize_html`` off: the notebook must be safe on its own."""
    cfg = Config()
    cfg.HTMLExporter.template_name = "formgrade"
    cfg.HTMLExporter.extra_template_basedirs = [str(TEMPLATES)]
    cfg.HTMLExporter.sanitize_html = sanitize_html
    return HTMLExporter(config=cfg)


FORMGRADE = {"assignment_id": "lab1", "notebook_id": "lab1", "submission_id": "abc",
             "index": 0, "total": 1, "base_url": "", "student": "eve", "last_name": "",
             "first_name": "", "notebook_path": "autograded/eve/lab1/lab1.ipynb"}


def formgrade_page(nb: nbformat.NotebookNode, *, sanitize: bool = True) -> str:
    """The formgrader's page of ``nb`` as autograde leaves it: sanitized (unless not
    ``sanitize``), written and read back like the autograded file."""
    nb = nbformat.from_dict(nbformat.from_dict(nb))
    if sanitize:
        nb, _ = SanitizeNotebook().preprocess(nb, {})
        nb = nbformat.reads(nbformat.writes(nb), as_version=4)
    return _formgrade_exporter().from_notebook_node(nb, resources=dict(FORMGRADE))[0]


class _Grades(NbGraderPreprocessor):
    """GetGrades without a gradebook: every grade cell scores 0, every answer has a
    grader's comment with markdown."""

    def preprocess_cell(self, cell: Any, resources: Any, index: int) -> tuple[Any, Any]:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") or meta.get("task"):
            meta["score"] = 0
            meta.setdefault("points", 1)
        if meta.get("solution") or meta.get("task"):
            meta["comment"] = "Good *start*."
        return cell, resources


NBGRADER = {"notebook": "lab1", "score": 0, "max_score": 3, "late_penalty": 0}


def feedback_exporter() -> HTMLExporter:
    """``GenerateFeedback``'s exporter as :func:`feedback_config` sets it up (its template
    settings as ``GenerateFeedback.__init__`` adds them), GetGrades without a database."""
    cfg = fb.feedback_config()
    cfg.HTMLExporter.template_name = "feedback"
    cfg.HTMLExporter.extra_template_basedirs = [str(TEMPLATES)]
    cfg.HTMLExporter.extra_template_paths = [str(BOOTSTRAP)]
    cfg.Exporter.default_preprocessors = []
    exporter = cfg.GenerateFeedback.exporter_class(config=cfg)
    for pp in cfg.GenerateFeedback.preprocessors:
        exporter.register_preprocessor(_Grades if pp is GetGrades else pp)
    return exporter


def feedback_page(nb: nbformat.NotebookNode) -> tuple[str, dict]:
    nb = nbformat.from_dict(nbformat.from_dict(nb))
    return feedback_exporter().from_notebook_node(nb, resources={"nbgrader": dict(NBGRADER)})


@pytest.fixture(scope="module")
def baselines() -> dict[str, str]:
    plain = new_notebook(cells=[_memo("plain")])  # the template's own inputs of an answer
    return {"formgrade": formgrade_page(plain), "feedback": feedback_page(plain)[0]}


@pytest.fixture(autouse=True)
def _fresh_removed():
    SanitizeNotebook.removed = []
    yield
    SanitizeNotebook.removed = []


def _memo(source: str) -> nbformat.NotebookNode:
    return new_markdown_cell(source, metadata={"nbgrader": {
        "grade": True, "solution": True, "locked": False, "grade_id": "lab1-memo",
        "points": 3, "schema_version": 3}})


def _image(mime: str, data: str, meta: dict) -> nbformat.NotebookNode:
    return new_output("display_data", data={mime: data, "text/plain": "<Figure>"},
                      metadata=meta)


def hostile_notebook(markdown: list[str] = MARKDOWN,
                     html_out: list[str] = HTML) -> nbformat.NotebookNode:
    """Every road in at once: the memo and a scratch cell, outputs of each kind, metadata."""
    outputs = [
        _image("image/png", PNG, {"image/png": {"width": HANDLER}}),
        _image("image/jpeg", JPEG, {"image/jpeg": {"height": HANDLER}, "height": HANDLER}),
        _image("image/png", PNG, {"filenames": {"image/png": f"http://{EVIL}/f.png"}}),
        new_output("display_data", data={"image/svg+xml": SVG}),
        new_output("display_data", data={"application/javascript": RUN,
                                         "text/html": f"<b onclick='{RUN}'>js</b>"}),
        new_output("display_data", data={sz.WIDGET_VIEW: {"model_id": "x"},
                                         "text/plain": "VBox(children=(...))"}),
        new_output("execute_result", execution_count=3,
                   data={"text/html": f"<script>{RUN}</script>"},
                   metadata={"text/html": {"isolated": True}}),
        *[new_output("display_data", data={"text/html": h}) for h in html_out],
        *[new_output("display_data", data={"text/markdown": m}) for m in markdown],
    ]
    code = new_code_cell("show()", outputs=outputs, execution_count=3,
                         metadata={"tags": [f'x" onmouseover="{RUN}'], "trusted": True})
    nb = new_notebook(cells=[_memo("My memo.\n\n" + "\n\n".join(markdown)),
                             *[new_markdown_cell(m) for m in markdown], code,
                             new_raw_cell(f"<script>{RUN}</script>")])
    code["id"] = f'x" onmouseover="{RUN}'  # after new_notebook, which would refuse it
    nb.metadata = {"kernelspec": {"name": "python3", "language": "python",
                                  "display_name": f"<img src=x onerror={RUN}>"},
                   "widgets": {"application/vnd.jupyter.widget-state+json": {
                       "state": {}, "version_major": 2, "version_minor": 0}}}
    return nb


def test_the_checks_see_every_road_when_nothing_is_sanitized(baselines):
    """Control: the hostile notebook, unsanitized, runs and fetches on both templates
    (so the checks below can fail)."""
    # without the payloads that fail the page or leave a <style> open (which hides the
    # rest of the page from the checks' tokenizer)
    nb = hostile_notebook([m for m in MARKDOWN if not re.search("attachment:|<math", m)])
    nb.cells[-2]["id"] = "plain"   # nbconvert refuses an invalid id: the page would fail
    raw_formgrade = _formgrade_exporter().from_notebook_node(
        nbformat.from_dict(nb), resources=dict(FORMGRADE))[0]
    found = problems(raw_formgrade, baselines["formgrade"])
    assert any("width=" not in p and "onerror" in p for p in found)   # markdown <img onerror>
    assert any(f"http://{EVIL}/f.png" in p for p in found)             # filenames metadata
    assert any("<script>" in p or "script " in p for p in found)
    assert re.search(r'<img[^>]* onerror=\S*window.__x=1[^>]* width="1"', raw_formgrade)
    cfg = Config()
    cfg.HTMLExporter.template_name = "feedback"
    cfg.HTMLExporter.extra_template_basedirs = [str(TEMPLATES)]
    cfg.HTMLExporter.extra_template_paths = [str(BOOTSTRAP)]
    cfg.HTMLExporter.sanitize_html = True                              # the old feedback
    old = HTMLExporter(config=cfg)
    old.register_preprocessor(_Grades)
    stock = old.from_notebook_node(nbformat.from_dict(nb),
                                   resources={"nbgrader": dict(NBGRADER)})[0]
    assert [p for p in problems(stock, baselines["feedback"]) if "onerror" in p]


def test_hostile_notebook_is_safe_on_the_formgrade_page(baselines):
    page = formgrade_page(hostile_notebook())
    assert problems(page, baselines["formgrade"]) == []
    assert "My memo." in page and f"http://{EVIL}/autolink" in page  # a link, a click away


def test_hostile_notebook_is_safe_in_feedback(baselines):
    """Feedback sanitizes by itself: a notebook autograded by stock nbgrader is safe too."""
    page, resources = feedback_page(hostile_notebook())
    assert problems(page, baselines["feedback"]) == []
    assert resources["should_sanitize_html"] is False       # nh3 instead of bleach
    assert "My memo." in page and sz.WIDGET_NOTE in page and sz.DROPPED_NOTE in page
    assert "Good <em>start</em>." in page                   # the grader's comment survives


def test_sanitized_notebook_records_what_it_removed():
    SanitizeNotebook().preprocess(hostile_notebook(), {})
    removed = "\n".join(SanitizeNotebook.removed)
    for what in ("image/svg+xml", "application/javascript", "filenames",
                 "image/png metadata", "markdown rewritten", "could run or fetch"):
        assert what in removed, what


def test_image_metadata_keeps_only_integer_sizes():
    good = _image("image/png", PNG, {"image/png": {"width": 120, "height": True},
                                     "width": HANDLER})
    bad = _image("image/jpeg", JPEG, {"image/jpeg": {"height": "1 onerror=x", "width": -4}})
    nb = new_notebook(cells=[new_code_cell("", outputs=[good, bad])])
    nb, _ = SanitizeNotebook().preprocess(nb, {})
    assert [o.metadata for o in nb.cells[0].outputs] == [{"image/png": {"width": 120}}, {}]
    page = formgrade_page(nb, sanitize=False)
    assert 'width="120"' in page and "onerror" not in page.split("<body>")[1]


def test_an_update_display_data_cannot_plant_an_attribute(baselines):
    """A real kernel: a display shown with a harmless size, then updated (through its
    display id) to hostile ones; what nbclient stored is rewritten, what is shown safe."""
    from nbconvert.preprocessors import ExecutePreprocessor

    code = ("import base64\nfrom IPython.display import Image, display\n"
            f"png = base64.b64decode('{PNG}')\n"
            "h = display(Image(data=png, format='png'), metadata={'width': 10},"
            " display_id=True)\n"
            f"h.update(Image(data=png, format='png'), metadata={{'image/png': {{'height': "
            f"{HANDLER!r}}}, 'width': {HANDLER!r}}})\n")
    nb = new_notebook(cells=[new_code_cell(code)])
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3",
                              "language": "python"}
    ExecutePreprocessor(timeout=120, kernel_name="python3").preprocess(nb, {})
    (shown,) = [o for o in nb.cells[0].outputs if o.output_type == "display_data"]
    assert HANDLER in str(shown.metadata)                     # the update landed
    raw = _formgrade_exporter().from_notebook_node(nbformat.from_dict(nb),
                                                   resources=dict(FORMGRADE))[0]
    assert [p for p in problems(raw, baselines["formgrade"]) if "onerror" in p]
    assert problems(formgrade_page(nb), baselines["formgrade"]) == []
    assert problems(feedback_page(nb)[0], baselines["feedback"]) == []


HONEST = """# Results

We measured $t = \\frac{n}{b}$ and $$x^2 < y$$ for *each* run:

| run | seconds |
|:----|--------:|
| a   | 1.5     |

```python
def speedup(a, b):
    return a / b
```

- [x] checked
- see [the docs](https://docs.python.org/3/) or mail <mailto:ta@example.edu>
"""


def _honest_notebook() -> nbformat.NotebookNode:
    chart = new_markdown_cell("Chart: ![chart](attachment:chart.png)")
    chart["attachments"] = {"chart.png": {"image/png": PNG}}
    table = ("<table class=\"dataframe\"><thead><tr><th>a</th></tr></thead>"
             "<tbody><tr><td>1</td></tr></tbody></table>")
    code = new_code_cell("speedup(3, 2)", execution_count=1, outputs=[
        new_output("stream", name="stdout", text="ok\n"),
        _image("image/png", PNG, {"image/png": {"width": 100}}),
        new_output("display_data", data={"text/html": table, "text/plain": "df"}),
        new_output("execute_result", execution_count=1, data={"text/plain": "1.5"}),
        new_output("error", ename="AssertionError", evalue="Part A: too high",
                   traceback=["\x1b[0;31mAssertionError\x1b[0m: Part A: too high"])])
    return new_notebook(cells=[_memo(HONEST), chart, code])


def test_honest_notebook_keeps_its_content_and_its_grades(baselines):
    nb = _honest_notebook()
    before = compute_checksum(nb.cells[0])
    outputs = nbformat.from_dict(nb.cells[2].outputs)
    clean, _ = SanitizeNotebook().preprocess(nbformat.from_dict(nb), {})
    assert clean.cells[0].source == HONEST                 # safe as written: kept verbatim
    assert compute_checksum(clean.cells[0]) == before   # so its nbgrader checksum holds
    assert "attachments" not in clean.cells[1]
    assert f"data:image/png;base64,{PNG}" in clean.cells[1].source
    assert [o.output_type for o in clean.cells[2].outputs] == [o.output_type for o in outputs]
    assert clean.cells[2].outputs[3].data == {"text/plain": "1.5"}   # partial credit reads it
    assert clean.cells[2].outputs[4].evalue == "Part A: too high"
    assert SanitizeNotebook.removed == ["cell 2: markdown rewritten as clean HTML"]
    for page, base in ((formgrade_page(nb), baselines["formgrade"]),
                       (feedback_page(nb)[0], baselines["feedback"])):
        assert problems(page, base) == []
        for shown in ("<table>", 'style="text-align:right"', "\\frac{n}{b}", "x^2 &lt; y",
                      'class="highlight"', 'href="https://docs.python.org/3/"',
                      f'src="data:image/png;base64,{PNG}"', 'width="100"', "<td>1</td>",
                      "Part A: too high", "1.5"):
            assert shown in page, shown


@pytest.mark.parametrize("attachments", [
    {}, {"chart.png": {"image/png": "not base64!"}},
    {"chart.png": {"image/svg+xml": SVG}}, {"chart.png": "junk"},
    {"chart.png": {"image/png": base64.b64encode(b"GIF89a....").decode()}}])
def test_missing_or_invalid_attachments_never_break_a_page(attachments, baselines):
    memo = _memo("See ![chart](attachment:chart.png) and ![](attachment:other.png)")
    nb = new_notebook(cells=[memo])
    memo["attachments"] = attachments  # after new_notebook, which would refuse "junk"
    for page, base in ((formgrade_page(nb), baselines["formgrade"]),
                       (feedback_page(nb)[0], baselines["feedback"])):
        assert "See " in page and problems(page, base) == []
        assert "data:image/svg" not in page


def test_the_unsanitized_missing_attachment_breaks_the_page():
    """Control: nbconvert fails the whole page on a missing attachment."""
    from nbconvert.filters.markdown_mistune import InvalidNotebook

    with pytest.raises(InvalidNotebook):
        _formgrade_exporter().from_notebook_node(
            new_notebook(cells=[new_markdown_cell("![x](attachment:gone.png)")]),
            resources=dict(FORMGRADE))


def test_control_characters_and_lone_surrogates_are_replaced(baselines):
    bad = "memo \ud800 and \x00\x07 bell \x1b[31mred\x1b[0m"
    nb = new_notebook(cells=[_memo(bad), new_code_cell("print(1)\ud83d", outputs=[
        new_output("stream", name="stdout", text=bad),
        new_output("error", ename="E\ud800", evalue=bad, traceback=[bad])])])
    with pytest.raises(UnicodeEncodeError):
        nbformat.writes(nb).encode("utf-8")                # control: the file cannot be written
    clean, _ = SanitizeNotebook().preprocess(nb, {})
    text = nbformat.writes(clean)
    text.encode("utf-8")
    assert "\x00" not in text and "\x07" not in text and "\ufffd" in clean.cells[0].source
    assert "\x1b[31m" in clean.cells[1].outputs[0].text    # ANSI colours stay for ansi2html
    assert "memo" in feedback_page(nb)[0]


def _nested(size: int) -> str:
    n = size // 11
    return "<div>" * n + "deep" + "</div>" * n


def test_huge_nested_html_is_text_before_any_quadratic_parser(monkeypatch):
    """240 KB of nested <div>s: nh3's parser (like bleach's) is slow on deep nesting, so the
    output never reaches it: the policy reduces it to text from one linear scan. Feedback
    never runs bleach on a sanitized notebook."""
    payload = _nested(240_000)
    calls: list[int] = []
    policy = sz.HtmlPolicy()
    real = policy._cleaner
    monkeypatch.setattr(policy, "_cleaner", type("Spy", (), {
        "clean": lambda self, t: calls.append(len(t)) or real.clean(t)})())
    assert policy.clean(payload) == "<pre>deep</pre>" and calls == []
    assert policy.too_deep(payload) and not policy.too_deep(_nested(2_000))
    cheat = "<!-->" + payload + "-->"                 # hidden from Python's tokenizer
    assert policy.too_deep(cheat) and calls == []
    nb = new_notebook(cells=[new_code_cell("", outputs=[
        new_output("display_data", data={"text/html": payload})])])
    clean, _ = SanitizeNotebook().preprocess(nbformat.from_dict(nb), {})
    assert clean.cells[0].outputs[0].data == {"text/html": "<pre>deep</pre>"}
    assert any("nested too deeply" in r for r in SanitizeNotebook.removed)
    page, resources = feedback_page(nb)
    assert resources["should_sanitize_html"] is False and "deep" in page


def test_markdown_nesting_and_misnested_formatting_are_bounded():
    policy = sz.HtmlPolicy()
    assert policy.too_deep("<div><b a=1></div>" * 600)     # <b>s the parser re-opens
    assert policy.too_deep("<div/>" * 2000)
    assert policy.too_deep("<div></span>" * 2000)
    assert not policy.too_deep("<ul>" + "<li>item" * 3000 + "</ul>")
    md = new_markdown_cell(_nested(30_000))
    clean, _ = SanitizeNotebook().preprocess(new_notebook(cells=[md]), {})
    assert "<div>" * (sz.MAX_DEPTH + 1) not in sz.render_markdown(clean.cells[0].source)


def test_sizes_are_capped_with_a_visible_note():
    pp = SanitizeNotebook(max_text_bytes=1024)
    nb = new_notebook(cells=[new_markdown_cell("é" * 5000), new_code_cell("", outputs=[
        new_output("display_data", data={"text/html": "<p>" + "x" * 5000 + "</p>"})])])
    clean, _ = pp.preprocess(nb, {})
    assert len(clean.cells[0].source.encode()) < 1200 and "cut by the grader" in (
        clean.cells[0].source)
    assert "cut by the grader" in clean.cells[1].outputs[0].data["text/html"]
    big = _image("image/png", PNG + "A" * 100, {})
    clean, _ = SanitizeNotebook(max_image_bytes=64).preprocess(
        new_notebook(cells=[new_code_cell("", outputs=[big])]), {})
    assert "image/png" not in clean.cells[0].outputs[0].data


def test_past_the_time_budget_cells_become_escaped_text(baselines):
    nb = hostile_notebook()
    clean, _ = SanitizeNotebook(time_budget=-1.0).preprocess(nb, {})
    assert all(c.source.startswith("<pre>") for c in clean.cells
               if c.cell_type == "markdown")
    shown = {m for c in clean.cells if c.cell_type == "code" for o in c.outputs
             for m in o.get("data", {})}
    assert shown <= {"text/plain"}
    assert any("time budget" in r for r in SanitizeNotebook.removed)
    assert problems(formgrade_page(clean, sanitize=False), baselines["formgrade"]) == []


def test_metadata_keeps_what_nbgrader_needs_as_plain_values():
    cell = new_code_cell("x")
    planted = new_markdown_cell("x")
    nb = new_notebook(cells=[cell, planted])  # before the metadata, which it would refuse
    cell.metadata = nbformat.from_dict({
        "nbgrader": {"grade": True, "solution": False, "locked": True, "points": 2,
                     "grade_id": "lab1-a-check", "schema_version": 3,
                     "checksum": "0" * 32, "comment": "<img src=x onerror=1>",
                     "score": "<b>", "cell_type": "code"},
        "tags": ["ok-tag", '"><img src=x>', 3], "jupyter": {"source_hidden": True},
        "alt": '"><img src=x onerror=1>'})
    planted.metadata = nbformat.from_dict({"nbgrader": {
        "grade_id": '"><img src=x>', "solution": True}})
    nb.metadata = nbformat.from_dict({
        "kernelspec": {"name": "python3", "display_name": "<script>x</script>Python"},
        "language_info": {"name": "python", "codemirror_mode": {"name": "<x>"}},
        "title": "<script>"})
    clean, _ = SanitizeNotebook().preprocess(nb, {})
    assert clean.cells[0].metadata == {"nbgrader": {
        "grade": True, "solution": False, "locked": True, "points": 2,
        "grade_id": "lab1-a-check", "schema_version": 3, "checksum": "0" * 32,
        "cell_type": "code"}, "tags": ["ok-tag"]}
    assert clean.cells[1].metadata == {}
    assert clean.metadata == {"kernelspec": {"name": "python3",
                                             "display_name": "scriptx/scriptPython"},
                              "language_info": {"name": "python"}}


def test_a_heading_cannot_take_the_formgraders_ids():
    memo = _memo("# lab1-memo\n\n## Findings")
    clean, _ = SanitizeNotebook().preprocess(new_notebook(cells=[memo]), {})
    page = formgrade_page(clean, sanitize=False)
    assert page.count('id="lab1-memo"') == 1                # the grader's score input only
    assert 'id="Findings"' in page


def test_feedback_page_forbids_scripts_and_remote_fetches():
    page, _ = feedback_page(new_notebook(cells=[new_markdown_cell("hi")]))
    head = page.split("<head>", 1)[1]
    assert head.startswith('<meta http-equiv="Content-Security-Policy" content="'
                           "default-src 'none'; img-src data:;")
    assert "script-src" not in fb.CSP and "http" not in fb.CSP
    assert fb.with_csp("<p>x</p>").startswith("<head><meta http-equiv=")
    assert fb.with_csp('<HEAD lang="en"><title>').startswith('<HEAD lang="en"><meta ')


def test_feedback_keeps_bleach_when_nothing_else_sanitizes():
    """The switch is tied to SanitizeNotebook: an exporter without it keeps nbconvert's
    ``sanitize_html`` as configured."""
    cfg = fb.feedback_config()
    resources = fb.FeedbackExporter(config=cfg).from_notebook_node(new_notebook())[1]
    assert resources["should_sanitize_html"] is True


def test_worker_sanitizes_after_the_output_limit(monkeypatch, tmp_path):
    """labkit's autograde (worker._autograde) runs SanitizeNotebook right after LimitOutput,
    before the scores are saved, so the autograded notebook the formgrader reads is clean."""
    from nbgrader.apps import api

    from labkit.course import worker

    seen: list[Config] = []

    class _API:
        def __init__(self, coursedir: Any = None, config: Config | None = None) -> None:
            seen.append(config)

        def autograde(self, *args: Any, **kwargs: Any) -> dict:
            return {"success": True}

    monkeypatch.setattr(api, "NbGraderAPI", _API)
    worker._autograde(tmp_path, {"assignment": "a", "student": "s", "course_id": "c",
                                 "timeout": 5, "notebooks": ["n"]})
    names = [p.__name__ for p in seen[0].Autograde.autograde_preprocessors]
    assert names[names.index("LimitOutput") + 1] == "SanitizeNotebook"
    assert names.index("SanitizeNotebook") < names.index("TimedSaveAutoGrades")


FRAGMENTS = [*MARKDOWN, "**bold**", "`code`", "$x<y$", "\n\n", "<div>", "</div>", "<p>",
             "<b>", "</i>", "|a|b|\n|-|-|\n|1|2|", "- item", "> quote", '"', "'", "<",
             f"<img src=data:image/png;base64,{PNG} onload={RUN}>", "&lt;script&gt;"]


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(md=st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=8),
       out=st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=8))
def test_any_mix_of_payloads_stays_safe(md, out, baselines):
    markdown, html_out = ["".join(md)], ["".join(out)]
    nb = hostile_notebook(markdown, html_out)
    assert problems(formgrade_page(nb), baselines["formgrade"]) == []
    assert problems(feedback_page(nb)[0], baselines["feedback"]) == []
    clean, _ = SanitizeNotebook().preprocess(nbformat.from_dict(nb), {})
    again, _ = SanitizeNotebook().preprocess(nbformat.from_dict(clean), {})
    assert again.cells[0].source == clean.cells[0].source    # sanitizing twice changes nothing


def test_a_large_honest_table_is_cleaned_not_flattened():
    rows = "".join(f"<tr><td>{i}</td><td>{i * 2}</td></tr>" for i in range(3000))
    table = f'<table class="dataframe"><tbody>{rows}</tbody></table>'
    start = time.process_time()   # this process's CPU: a busy machine does not inflate it
    clean, _ = SanitizeNotebook().preprocess(new_notebook(cells=[new_code_cell("", outputs=[
        new_output("display_data", data={"text/html": table})])]), {})
    assert clean.cells[0].outputs[0].data["text/html"].count("<tr>") == 3000
    assert time.process_time() - start < 20   # linear: well under 1 s; a quadratic cleaner is not
