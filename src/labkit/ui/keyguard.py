"""A question's keyboard guard in the browser (an invisible anywidget inside the question).

JupyterLab runs a notebook's command-mode shortcuts on a key pressed anywhere in the
notebook unless the focused element is editable text (``:read-write``); a radio button is
not, so ArrowDown on a focused prediction choice moved the notebook's active cell instead of
the choice. Lumino skips every shortcut for a target inside an element carrying
``data-lm-suppress-shortcuts`` (a binding's ``:focus`` matches the target itself, so every
focusable element needs it): the guard puts it on its question's box and controls, makes its radio
buttons one named group (ipywidgets names none), so arrow keys and Space do what they do on
radio buttons, and the widget hears the change. After Commit the button the student pressed is
hidden and focus fell to ``<body>``: the guard moves it to the question's box (``tabindex``
-1, its status announced through ``aria-live``), so a keyboard user stays where they were.
"""

from __future__ import annotations

import anywidget
import traitlets

QUESTION_CLASS = "labkit-question"
"""The class of the box a guard protects (a :class:`~labkit.ui.questions.Question`)."""
EXPLORE_CLASS = "labkit-explore-body"
"""The class of a part's controls and charts, whose sliders a ``controls`` guard names."""

_ESM = """
function guard(el) {
  const box = el.closest(".__CLASS__");
  if (!box || box.dataset.labkitGuarded) return !!box;
  box.dataset.labkitGuarded = "1";
  box.setAttribute("data-lm-suppress-shortcuts", "true");
  box.setAttribute("tabindex", "-1");
  box.setAttribute("role", "group");
  const title = box.firstElementChild ? box.firstElementChild.innerText.trim() : "";
  if (title) box.setAttribute("aria-label", title.slice(0, 200));
  for (const s of box.querySelectorAll(".labkit-status")) s.setAttribute("aria-live", "polite");
  // one radio group: arrow keys move the choice (ipywidgets gives its radios no name)
  const group = "labkit-q-" + Math.random().toString(36).slice(2);
  for (const r of box.querySelectorAll('input[type="radio"]')) r.name = group;
  // Lumino matches a binding's ":focus" at the target itself: mark every focusable
  // element of the box, not only the box (Enter on Commit must press it, not edit a cell)
  for (const f of box.querySelectorAll("input, button, select, textarea, [tabindex]")) {
    f.setAttribute("data-lm-suppress-shortcuts", "true");
  }
  let clicked = null;
  box.addEventListener("click", (e) => { clicked = e.target; }, true);
  box.addEventListener("change", (e) => {
    const r = e.target;   // a choice changed by a key: tell the widget as a click would
    if (r.matches('input[type="radio"]') && clicked !== r) r.click();
    clicked = null;
  });
  // after a button press the kernel hides that button: keep focus in the question
  const keep = () => {
    let n = 0;
    const tick = () => {
      const a = document.activeElement;
      if (!a || a === document.body || (box.contains(a) && a.offsetParent === null)) {
        box.focus({ preventScroll: true });
      } else if (++n < 40) setTimeout(tick, 50);
    };
    setTimeout(tick, 50);
  };
  box.addEventListener("click", (e) => { if (e.target.closest("button")) keep(); });
  return true;
}
function name(slider) {
  // a slider's accessible name is its label, its value the readout a student reads (not
  // the log exponent or the option index noUiSlider announces)
  const label = slider.querySelector(".widget-label");
  const readout = slider.querySelector(".widget-readout");
  const handle = slider.querySelector(".noUi-handle");
  if (!handle) return;
  if (label && label.innerText.trim()) handle.setAttribute("aria-label", label.innerText.trim());
  if (readout && readout.innerText.trim()) {
    handle.setAttribute("aria-valuetext", readout.innerText.trim());
  }
}
function controls(el) {
  const body = el.closest(".__BODY__");
  if (!body || body.dataset.labkitNamed) return !!body;
  body.dataset.labkitNamed = "1";
  const all = () => body.querySelectorAll(".widget-slider").forEach(name);
  all();
  new MutationObserver(all).observe(body, { attributes: true, childList: true,
                                             subtree: true, characterData: true,
                                             attributeFilter: ["aria-valuenow"] });
  return true;
}
function render({ model, el }) {
  el.style.display = "none";
  const job = model.get("scope") === "controls" ? controls : guard;
  let tries = 0;
  const again = () => { if (!job(el) && ++tries < 50) setTimeout(again, 100); };
  again();
}
export default { render };
""".replace("__CLASS__", QUESTION_CLASS).replace("__BODY__", EXPLORE_CLASS)


class KeyGuard(anywidget.AnyWidget):
    """The invisible guard a question box holds (see the module docstring); with ``scope``
    ``"controls"``, the one a part's explore body holds: each slider's handle gets its
    label as accessible name and its readout as value text (axe-core's
    aria-input-field-name), kept current as the slider moves."""

    _esm = _ESM
    scope = traitlets.Unicode("question").tag(sync=True)
