"""Student content made safe to show, in the notebook itself, before any page renders it.

nbgrader's formgrader and feedback render the autograded notebook with nbconvert templates
that trust it: image metadata goes into unquoted attributes, markdown cells go through
``markdown2html`` uncleaned, ``filenames`` metadata becomes an ``<img src>``, and
nbconvert's own ``sanitize_html`` (bleach) is quadratic on nested HTML. So
:class:`SanitizeNotebook` (an nbgrader preprocessor, run by autograde and again by
feedback) rewrites the notebook to carry only content that is safe *whatever the templates
do with it*:

* markdown is rendered exactly as nbconvert renders it and cleaned with nh3 (ammonia;
  HTML nested deep never reaches its parser, which is slow on it: :class:`HtmlPolicy`).
  A source whose rendering nh3 would not change is kept byte for byte (an
  untouched memo keeps its nbgrader checksum; maths stays ``$...$`` text); any other is
  stored as its cleaned HTML, *verified* by rendering it again, else as escaped text;
* outputs keep text, cleaned HTML and valid small PNG/JPEG/GIF images only; their
  metadata only integer ``width``/``height``; cell and notebook metadata only what nbgrader
  and the templates need, as plain values;
* every string loses control characters and lone surrogates; each text is capped in size,
  and past the notebook's time budget the remaining cells become escaped plain text.

Links may point at http(s)/mailto (a click away); nothing loads from any host: images are
``data:`` URIs or nothing. What was removed is listed in :attr:`SanitizeNotebook.removed`.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
import time
import uuid
from collections.abc import Mapping
from html.parser import HTMLParser
from typing import Any

import nh3
from nbconvert.filters import strip_files_prefix
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbformat import NotebookNode, from_dict
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Float, Integer

MAX_TEXT_BYTES = 256 * 1024      # one markdown source, one HTML output
MAX_IMAGE_BYTES = 2 * 1024**2    # one image, as base64
MAX_DEPTH = 64                   # element nesting kept (bleach/bs4 downstream are not linear)
TIME_BUDGET = 30.0               # seconds per notebook before the rest is plain text

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = "(an interactive view: open the notebook in JupyterLab to use it)"
DROPPED_NOTE = "[output not shown: the grader keeps only text, HTML and PNG/JPEG/GIF images]"

IMAGE_TYPES = {"image/png": (b"\x89PNG\r\n\x1a\n",), "image/jpeg": (b"\xff\xd8\xff",),
               "image/gif": (b"GIF87a", b"GIF89a")}
TEXT_TYPES = ("text/plain", "text/html", "text/markdown")

TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "caption", "code", "col", "colgroup", "dd", "del",
    "details", "div", "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5",
    "h6", "hr", "i", "img", "input", "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s",
    "samp", "small", "span", "strike", "strong", "sub", "summary", "sup", "table", "tbody",
    "td", "tfoot", "th", "thead", "tr", "tt", "u", "ul", "var"})
# elements removed with their content (a script's text is no prose)
CONTENT_TAGS = frozenset({"script", "style", "textarea", "title", "noscript", "xmp", "iframe",
                          "noembed", "noframes", "template", "object", "svg", "math",
                          "select"})
_CELL = {"colspan", "rowspan", "style"}
ATTRIBUTES: dict[str, set[str]] = {
    "*": {"class", "title"}, "a": {"href"}, "img": {"src", "alt", "width", "height"},
    "td": _CELL, "th": _CELL, "ol": {"start"}, "col": {"span"}, "colgroup": {"span"},
    "input": {"disabled", "checked"}, **{f"h{n}": {"id"} for n in range(1, 7)}}
TAG_VALUES = {"input": {"type": {"checkbox"}}}  # markdown task lists: a disabled checkbox
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                  "source", "track", "wbr"})
# ids of nbgrader's own pages: a student's heading must not take them over
PAGE_IDS = frozenset({"top", "toc", "notebook", "notebook-container", "statusmessage",
                      "help"})
_FORMATTING = frozenset({"a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small",
                         "strike", "strong", "tt", "u"})
_SIBLINGS = frozenset({"p", "li", "dt", "dd", "tr", "td", "th", "option"})
_START = re.compile(r"<[A-Za-z]")  # every start tag an HTML parser sees begins so
_FEW_TAGS = 1000
_DOUBTS = 16  # formatting elements left open before the depth estimate is doubtful
_HOSTILE = re.compile(
    r"<\s*/?\s*(?:script|iframe|object|embed|svg|math|style|link|meta|base|form|frame|applet"
    r"|template)\b|\son[a-z]+\s*=|(?:java|vb)script\s*:|data\s*:\s*text|url\s*\(|@import"
    r"|expression\s*\(|\ssrc\s*=\s*[\"']?\s*(?!data:image/)[^\s>\"']", re.I)

_LINK = re.compile(r"(?:https?://|mailto:)[^\s\"'<>\\`]+|#[^\s\"'<>\\`]*", re.I)
_DATA_IMAGE = re.compile(r"data:(image/(?:png|jpeg|gif));base64,([A-Za-z0-9+/]+={0,2})")
_STYLE = re.compile(r"text-align:\s*(?:left|right|center|justify)\s*;?")
_SIZE = re.compile(r"[1-9][0-9]{0,4}%?")
_ID = re.compile(r"[^\s\"'<>&`]{1,300}")
_CLASS = re.compile(r"[a-z][a-z0-9]{0,3}|highlight|anchor-link|task-list-item(?:-checkbox)?"
                    r"|dataframe|language-[\w+-]{1,30}")
_CELL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_GRADE_ID = re.compile(r"[A-Za-z0-9_-]{0,128}")
_TAG = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_PLAIN = re.compile(r"[^A-Za-z0-9 ._+()/-]")
_UNSAFE_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f-\x9f]")
_SURROGATES = re.compile("[\ud800-\udfff]")


def clean_text(value: object) -> str:
    """``value`` as a string (nbformat's list of lines joined) without control characters
    (tab, newlines and ANSI's escape kept) and with lone surrogates replaced: one of those
    makes writing the notebook, and so the whole feedback, fail."""
    if isinstance(value, list):
        value = "".join(str(v) for v in value)
    text = value if isinstance(value, str) else "" if value is None else str(value)
    return _SURROGATES.sub("\ufffd", _UNSAFE_CHARS.sub("", text))


def cap(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` UTF-8 bytes; True when it was cut."""
    if len(text) * 4 <= limit or len(data := text.encode("utf-8")) <= limit:
        return text, False
    return data[:limit].decode("utf-8", "ignore"), True


def image_data(mime: str, value: object, limit: int = MAX_IMAGE_BYTES) -> str | None:
    """The base64 of a ``mime`` image if it decodes, is at most ``limit`` long and starts
    like such an image; else None."""
    text = re.sub(r"\s+", "", value if isinstance(value, str) else clean_text(value))
    if mime not in IMAGE_TYPES or not text or len(text) > limit:
        return None
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return text if raw.startswith(IMAGE_TYPES[mime]) else None


def plain_markdown(text: str) -> str:
    """Markdown that renders as ``text``, escaped, in a ``<pre>``: a CommonMark HTML block
    of the ``<pre>`` kind runs to the line holding ``</pre>``, which escaped text lacks."""
    return "<pre>" + html.escape(text, quote=False) + "</pre>"


def render_markdown(source: str, images: Mapping[str, str] | None = None) -> str:
    """``source`` rendered as nbconvert's ``markdown2html`` and the templates' following
    ``strip_files_prefix`` render it (default exporter settings). With ``images``, an
    ``attachment:NAME`` image becomes its data URI (a missing one: no image)."""
    renderer = _Renderer(escape=False) if images is None else _Inline(images)
    return str(strip_files_prefix(MarkdownWithMath(renderer=renderer).render(source)))


class _Renderer(IPythonRenderer):
    """nbconvert's renderer with no attachments: an ``attachment:`` image is an error."""


class _Inline(IPythonRenderer):
    """nbconvert's renderer, attachments inlined from checked data URIs."""

    def __init__(self, images: Mapping[str, str]) -> None:
        super().__init__(escape=False)
        self.images = images

    def _embed_image_or_attachment(self, src: str) -> str:
        if src.startswith("attachment:"):
            return self.images.get(src[len("attachment:"):], "")
        return src


def attachment_images(attachments: object) -> dict[str, str]:
    """name -> data URI of each attachment holding a valid PNG, JPEG or GIF image."""
    images: dict[str, str] = {}
    for name, bundle in (attachments or {}).items() if isinstance(attachments, Mapping) else ():
        for mime in IMAGE_TYPES:
            data = image_data(mime, bundle.get(mime)) if isinstance(bundle, Mapping) else None
            if data is not None and isinstance(name, str):
                images[name] = f"data:{mime};base64,{data}"
                break
    return images


class _Scan(HTMLParser):
    """What Python's HTML tokenizer sees: tags with sorted attributes, text, anything else
    (comments, declarations) as ``!``. Also an estimate of how deep a browser's parser
    (and html5ever, nh3's) would nest the elements, and whether the estimate is doubtful:
    markup hidden from this tokenizer (in a comment, a script) or formatting elements
    left open inside others (which the HTML parser re-opens)."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tokens: list[tuple[Any, ...]] = []
        self.stack: list[str] = []
        self.deepest = self.doubts = 0
        self.feed(text)
        self.close()

    def _open(self, tag: str) -> None:
        if tag in VOID:
            return
        if tag in _SIBLINGS and self.stack and self.stack[-1] == tag:
            self.stack.pop()  # <li>a<li>b: the second closes the first
        self.stack.append(tag)
        self.deepest = max(self.deepest, len(self.stack))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tokens.append(("<", tag, tuple(sorted((k, v or "") for k, v in attrs))))
        self._open(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tokens.append(("<", tag, tuple(sorted((k, v or "") for k, v in attrs))))
        self._open(tag)  # a browser ignores the slash of <div/>: it stays open

    def handle_endtag(self, tag: str) -> None:
        self.tokens.append(("/", tag))
        if tag in self.stack:  # else a browser ignores it, and so does the estimate
            while (top := self.stack.pop()) != tag:
                self.doubts += top in _FORMATTING
        else:
            self.doubts += tag in _FORMATTING

    def handle_data(self, data: str) -> None:
        if self.stack and self.stack[-1] in ("script", "style") and _START.search(data):
            self.doubts += _DOUBTS
        if self.tokens and self.tokens[-1][0] == "t":
            self.tokens[-1] = ("t", self.tokens[-1][1] + data)
        else:
            self.tokens.append(("t", data))

    def handle_comment(self, data: str) -> None:
        self.tokens.append(("!", data))
        self.doubts += _DOUBTS if _START.search(data) else 0

    def handle_decl(self, decl: str) -> None:
        self.handle_comment(decl)

    def handle_pi(self, data: str) -> None:
        self.handle_comment(data)

    def unknown_decl(self, data: str) -> None:
        self.handle_comment(data)

    def text(self) -> str:
        """The text outside scripts and styles."""
        out, skip = [], 0
        for token in self.tokens:
            if token[0] in ("<", "/") and token[1] in CONTENT_TAGS:
                skip = max(0, skip + (1 if token[0] == "<" else -1))
            elif token[0] == "t" and not skip:
                out.append(token[1])
        return "".join(out)


class HtmlPolicy:
    """nh3 configured for student HTML on nbgrader's pages, and the checks that prove a
    piece of HTML already obeys it. ``reserved_ids``: ids nh3 must not let through (the
    formgrader finds its score inputs by grade id).

    nh3's parser (html5ever) takes time in the product of length and nesting depth: 1.6 s
    for 240 KB of nested ``<div>``. HTML with many tags that nests (or may nest) deeper
    than :data:`MAX_DEPTH` never reaches it: it is reduced to its text, in linear time."""

    def __init__(self, reserved_ids: frozenset[str] = frozenset()) -> None:
        self.reserved = PAGE_IDS | reserved_ids
        self.flattened = 0  # how many times :meth:`clean` gave text only
        self._cleaner = nh3.Cleaner(
            tags=set(TAGS), clean_content_tags=set(CONTENT_TAGS),
            attributes={k: set(v) for k, v in ATTRIBUTES.items()},
            tag_attribute_values={k: {a: set(v) for a, v in d.items()}
                                  for k, d in TAG_VALUES.items()},
            attribute_filter=self.attribute, strip_comments=True, link_rel=None,
            url_schemes={"http", "https", "mailto", "data"})

    def attribute(self, tag: str, name: str, value: str) -> str | None:
        """The value kept for attribute ``name`` of ``tag`` (None: dropped)."""
        if name == "href":
            ok = bool(_LINK.fullmatch(value))
        elif name == "src":
            match = _DATA_IMAGE.fullmatch(value)
            ok = bool(match and image_data(match[1], match[2]))
        elif name in ("width", "height"):
            ok = bool(_SIZE.fullmatch(value))
        elif name == "style":
            ok = bool(_STYLE.fullmatch(value))
        elif name == "id":
            ok = bool(_ID.fullmatch(value)) and value not in self.reserved
        elif name == "class":
            kept = [c for c in value.split() if _CLASS.fullmatch(c)]
            return " ".join(kept) or None
        else:
            ok = not name.startswith("on")
        return value if ok else None

    @staticmethod
    def too_deep(text: str, scan: _Scan | None = None) -> bool:
        """Whether ``text`` has many tags and nests, or may nest, past :data:`MAX_DEPTH`
        (few tags cannot nest deep: each costs nh3 little)."""
        if len(_START.findall(text)) <= _FEW_TAGS:
            return False
        scan = scan or _Scan(text)
        return scan.deepest > MAX_DEPTH or scan.doubts >= _DOUBTS

    def clean(self, text: str) -> str:
        """``text`` cleaned by nh3, or, :meth:`too_deep`, its escaped text in a ``<pre>``."""
        scan = _Scan(text) if len(_START.findall(text)) > _FEW_TAGS else None
        if scan is not None and self.too_deep(text, scan):
            self.flattened += 1
            return self.flatten(text, scan)
        return str(self._cleaner.clean(text))

    @staticmethod
    def flatten(text: str, scan: _Scan | None = None) -> str:
        """The text of ``text`` (no script or style), escaped, in a ``<pre>``."""
        return "<pre>" + html.escape((scan or _Scan(text)).text(), quote=False) + "</pre>"

    def obeys(self, text: str) -> bool:
        """Whether ``text``, as tokenized, has only allowed tags and attribute values, no
        comment, at most :data:`MAX_DEPTH` deep, and reads the same after nh3 cleans it."""
        scan = _Scan(text)
        if (scan.deepest > MAX_DEPTH or self.too_deep(text, scan)
                or not all(map(self._allowed, scan.tokens))):
            return False
        return scan.tokens == _Scan(self.clean(text)).tokens

    def _allowed(self, token: tuple[Any, ...]) -> bool:
        if token[0] in ("t", "/"):
            return True
        if token[0] != "<" or token[1] not in TAGS:
            return False
        tag, names = token[1], ATTRIBUTES["*"] | ATTRIBUTES.get(token[1], set())
        for name, value in token[2]:
            if name == "type" and TAG_VALUES.get(tag, {}).get("type") == {value}:
                continue
            if name not in names or self.attribute(tag, name, value) != value:
                return False
        return True

    def renders_safe(self, source: str) -> bool:
        """Whether markdown ``source``, rendered as nbgrader's templates render it, obeys
        the policy (a missing attachment, which fails the page, does not)."""
        try:
            return self.obeys(render_markdown(source))
        except Exception:  # nbconvert's InvalidNotebook for an attachment, a lexer error
            return False

    @staticmethod
    def hostile(text: str) -> bool:
        """Whether ``text`` looks as if it could run or fetch (a script-like element, an
        event handler, a script URL, CSS that loads, an image not inline): for the report
        of what was removed, not a safety check."""
        return bool(_HOSTILE.search(text))


class SanitizeNotebook(NbGraderPreprocessor):
    """Autograde and feedback preprocessor: the notebook keeps only content safe to show.

    Runs after the kernel and output limits in autograde (what the formgrader renders) and
    first in feedback (a notebook autograded elsewhere). Grading reads the same errors,
    streams and ``text/plain`` results as before."""

    max_text_bytes = Integer(MAX_TEXT_BYTES, help="bytes kept of one markdown source or "
                             "HTML output").tag(config=True)
    max_image_bytes = Integer(MAX_IMAGE_BYTES, help="base64 characters of one image"
                              ).tag(config=True)
    time_budget = Float(TIME_BUDGET, help="seconds per notebook; later cells become escaped "
                        "plain text").tag(config=True)

    removed: list[str] = []  # noqa: RUF012 -- what was removed, per job: reset by the worker

    def preprocess(self, nb: NotebookNode, resources: Any) -> tuple[NotebookNode, Any]:
        deadline = time.monotonic() + self.time_budget
        policy = HtmlPolicy(_grade_ids(nb))
        nb.metadata = notebook_metadata(nb.get("metadata", {}))
        late = False
        for index, cell in enumerate(nb.cells):
            if not late and time.monotonic() > deadline:
                late = True
                self._note(index, "time budget spent: this and later cells as plain text")
            nb.cells[index] = self._cell(cell, index, policy, late)
        return nb, resources

    def _note(self, index: int, what: str) -> None:
        type(self).removed.append(f"cell {index + 1}: {what}")

    def _cell(self, cell: NotebookNode, index: int, policy: HtmlPolicy,
              plain: bool) -> NotebookNode:
        kind = cell.get("cell_type")
        new: dict[str, Any] = {"cell_type": kind, "metadata": cell_metadata(cell)}
        if kind == "markdown":
            new["source"] = self._markdown(cell, index, policy, plain)
        elif kind == "code":
            count = cell.get("execution_count")
            new["source"] = clean_text(cell.get("source", ""))
            new["execution_count"] = count if type(count) is int else None
            new["outputs"] = [o for out in cell.get("outputs", [])
                              if (o := self._output(out, index, policy, plain)) is not None]
        else:  # raw (nbconvert would clean it with bleach) or unknown: escaped text
            text, _ = cap(clean_text(cell.get("source", "")), self.max_text_bytes)
            new.update(cell_type="raw", source=html.escape(text, quote=False))
        if "id" in cell:
            valid = isinstance(cell.id, str) and _CELL_ID.fullmatch(cell.id)
            new["id"] = cell.id if valid else uuid.uuid4().hex[:8]
        return from_dict(new)

    def _markdown(self, cell: NotebookNode, index: int, policy: HtmlPolicy,
                  plain: bool) -> str:
        text, cut = cap(clean_text(cell.get("source", "")), self.max_text_bytes)
        if cut:
            text += f"\n\n*[cut by the grader at {self.max_text_bytes // 1024} KiB]*"
            self._note(index, "markdown cut to size")
        if plain:
            return plain_markdown(text)
        if policy.renders_safe(text):  # unchanged: an untouched answer keeps its checksum
            return text
        rendered = render_markdown(text, attachment_images(cell.get("attachments")))
        self._note(index, "markdown rewritten as clean HTML" + (
            " (it held HTML that could run or fetch)" if policy.hostile(rendered) else ""))
        stored = "<div>" + policy.clean(rendered).replace("\r", "&#13;").replace(
            "\n", "&#10;") + "</div>"  # one line: a CommonMark HTML block, kept verbatim
        for candidate in (stored, plain_markdown(text)):
            if policy.renders_safe(candidate):
                return candidate
        return ""

    def _output(self, out: NotebookNode, index: int, policy: HtmlPolicy,
                plain: bool) -> NotebookNode | None:
        kind = out.get("output_type")
        if kind == "stream":
            name = out.get("name") if out.get("name") in ("stdout", "stderr") else "stdout"
            return from_dict({"output_type": "stream", "name": name,
                              "text": clean_text(out.get("text", ""))})
        if kind == "error":
            trace = out.get("traceback", [])
            return from_dict({"output_type": "error", "ename": clean_text(out.get("ename")),
                              "evalue": clean_text(out.get("evalue")),
                              "traceback": [clean_text(t) for t in trace]
                              if isinstance(trace, list) else []})
        if kind not in ("display_data", "execute_result"):
            self._note(index, f"output of type {str(kind)[:40]!r} dropped")
            return None
        data = self._data(out.get("data", {}), index, policy, plain)
        new: dict[str, Any] = {"output_type": kind, "data": data,
                               "metadata": self._metadata(out.get("metadata", {}), data,
                                                          index)}
        if kind == "execute_result":
            count = out.get("execution_count")
            new["execution_count"] = count if type(count) is int else None
        return from_dict(new)

    def _data(self, data: object, index: int, policy: HtmlPolicy,
              plain: bool) -> dict[str, str]:
        bundle = dict(data) if isinstance(data, Mapping) else {}
        if WIDGET_VIEW in bundle:  # static HTML cannot run it; its repr is the whole state
            return {"text/plain": WIDGET_NOTE}
        kept: dict[str, str] = {}
        if "text/plain" in bundle:
            kept["text/plain"] = clean_text(bundle["text/plain"])
        html_text = None if plain else self._html(bundle, index, policy)
        if html_text is not None:
            kept["text/html"] = html_text
        for mime in IMAGE_TYPES if not plain else ():
            if mime in bundle:
                image = image_data(mime, bundle[mime], self.max_image_bytes)
                if image is None:
                    self._note(index, f"{mime} output dropped (not a valid image)")
                else:
                    kept[mime] = image
        dropped = sorted(set(bundle) - set(TEXT_TYPES) - set(IMAGE_TYPES))
        if dropped:
            self._note(index, f"output {', '.join(m[:60] for m in dropped)} dropped")
        return kept or {"text/plain": DROPPED_NOTE}

    def _html(self, bundle: dict[str, Any], index: int, policy: HtmlPolicy) -> str | None:
        """The output's HTML (or its markdown, rendered), cleaned and verified."""
        source = bundle.get("text/html")
        if source is None and "text/markdown" in bundle:
            source, _ = cap(clean_text(bundle["text/markdown"]), self.max_text_bytes)
            try:
                source = render_markdown(source, {})
            except Exception:  # a lexer failing on a hostile code block
                source = plain_markdown(source)
        if source is None:
            return None
        text, cut = cap(clean_text(source), self.max_text_bytes)
        if policy.hostile(text):
            self._note(index, "HTML output cleaned (it held HTML that could run or fetch)")
        flattened = policy.flattened
        cleaned = policy.clean(text)
        if policy.flattened > flattened:
            self._note(index, "HTML output reduced to its text (nested too deeply)")
        if cut:
            cleaned += f"<p><em>[cut by the grader at {self.max_text_bytes // 1024} KiB]</em></p>"
            self._note(index, "HTML output cut to size")
        if policy.obeys(cleaned):
            return cleaned
        self._note(index, "HTML output reduced to its text (nested too deeply)")
        flat = policy.flatten(text)
        return flat if policy.obeys(flat) else None

    def _metadata(self, meta: object, data: Mapping[str, str],
                  index: int) -> dict[str, dict[str, int]]:
        """Only positive integer ``width``/``height`` of the images kept."""
        meta = meta if isinstance(meta, Mapping) else {}
        kept: dict[str, dict[str, int]] = {}
        for mime in IMAGE_TYPES:
            sizes = meta.get(mime) if mime in data else None
            if isinstance(sizes, Mapping):
                ints = {k: v for k, v in sizes.items() if k in ("width", "height")
                        and type(v) is int and 0 < v <= 100_000}
                if ints:
                    kept[mime] = ints
                if set(sizes) - set(ints) - {"needs_background", "unconfined"}:
                    self._note(index, f"{mime} metadata dropped")
        odd = set(meta) - set(IMAGE_TYPES) - {"needs_background", "scrolled", "collapsed"}
        if odd:
            self._note(index, f"output metadata {', '.join(sorted(map(str, odd)))[:80]} "
                       "dropped")
        return kept


_NBGRADER_BOOLS = ("grade", "solution", "locked", "task")
_NBGRADER_NUMBERS = ("points",)


def nbgrader_metadata(meta: object) -> dict[str, Any] | None:
    """nbgrader's cell metadata with each known key of the right type (none of a cell
    whose ``grade_id`` could not be nbgrader's)."""
    if not isinstance(meta, Mapping):
        return None
    grade_id = meta.get("grade_id")
    if grade_id is not None and not (isinstance(grade_id, str) and _GRADE_ID.fullmatch(grade_id)):
        return None
    kept: dict[str, Any] = {k: meta[k] for k in _NBGRADER_BOOLS if type(meta.get(k)) is bool}
    kept |= {k: meta[k] for k in _NBGRADER_NUMBERS
             if type(meta.get(k)) in (int, float) and abs(meta[k]) < 1e9}
    if grade_id is not None:
        kept["grade_id"] = grade_id
    if type(meta.get("schema_version")) is int:
        kept["schema_version"] = meta["schema_version"]
    if isinstance(meta.get("checksum"), str) and re.fullmatch(r"[0-9a-f]{1,128}",
                                                             meta["checksum"]):
        kept["checksum"] = meta["checksum"]
    if meta.get("cell_type") in ("code", "markdown", "raw"):
        kept["cell_type"] = meta["cell_type"]
    return kept


def cell_metadata(cell: NotebookNode) -> dict[str, Any]:
    """Only ``nbgrader`` (typed) and ``tags`` (short names) of a cell's metadata."""
    meta = cell.get("metadata", {})
    meta = meta if isinstance(meta, Mapping) else {}
    kept: dict[str, Any] = {}
    nbgrader = nbgrader_metadata(meta.get("nbgrader"))
    if nbgrader is not None:
        kept["nbgrader"] = nbgrader
    tags = meta.get("tags")
    if isinstance(tags, list):
        kept["tags"] = [t for t in tags if isinstance(t, str) and _TAG.fullmatch(t)][:32]
    return kept


def notebook_metadata(meta: object) -> dict[str, Any]:
    """``kernelspec`` and ``language_info`` with plain short strings only (templates print
    some of them unescaped); nothing else."""
    meta = meta if isinstance(meta, Mapping) else {}
    keys = {"kernelspec": ("name", "display_name", "language"),
            "language_info": ("name", "version", "pygments_lexer", "file_extension",
                              "mimetype", "nbconvert_exporter")}
    kept: dict[str, Any] = {}
    for section, names in keys.items():
        values = meta.get(section)
        if isinstance(values, Mapping):
            kept[section] = {k: _PLAIN.sub("", values[k])[:80] for k in names
                             if isinstance(values.get(k), str)}
    return kept


def _grade_ids(nb: NotebookNode) -> frozenset[str]:
    """Every grade id of ``nb`` and the formgrader's ids derived from it."""
    ids = set()
    for cell in nb.get("cells", []):
        meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(
            cell.get("metadata"), Mapping) else {}
        gid = meta.get("grade_id") if isinstance(meta, Mapping) else None
        if isinstance(gid, str):
            ids |= {gid, f"{gid}-comment", f"{gid}_extra_credit"}
    return frozenset(ids)
