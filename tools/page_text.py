"""A page's text as a reader sees it, from a real browser: the main area and the sidebar, block
by block, each line tagged with what it is, for the language check (tools.lang_check).

Read from the DOM, not from what is scrolled into view: text inside collapsed expanders and
inactive tabs counts (a reader opens them). Each line is one block (a paragraph, a list item, a
table cell, a label, a chart's text) tagged:

- ``text``: prose and labels the page writes: it must be in the page's language;
- ``formula``: a plain-text ``st.code`` block (a formula with its numbers plugged in);
- ``code``: a command, a script, YAML, JSON or an inline code span, kept as the engine or the
  shell spells it;
- ``source``: a citation: a Sources list (``ui.show.sources`` marks it) or a link to another
  site, titled as the source titles itself.

Icons drawn as ligature text (``keyboard_arrow_right``), toolbar labels and what a reader typed
into a field are not text; an empty field's placeholder is. A
table (``st.dataframe``) draws on a canvas; its cells are read from the accessible copy the grid
keeps inside that canvas, one line per cell.
"""

from __future__ import annotations

from typing import Any

from ui.show import SOURCE_KEY

WALK = r"""
([sourceClass]) => {
  const BLOCK = new Set(["P", "DIV", "LI", "UL", "OL", "H1", "H2", "H3", "H4", "H5", "H6",
    "TR", "TD", "TH", "TABLE", "SUMMARY", "LABEL", "PRE", "BR", "SECTION", "DETAILS",
    "BUTTON", "BLOCKQUOTE", "DT", "DD", "HR", "OPTION", "text", "tspan", "g"]);
  const out = [];
  let buf = "", kind = "text";
  const flush = () => {
    const line = buf.replace(/\s+/g, " ").trim();
    if (line) out.push([kind, line]);
    buf = "";
  };
  const skip = (el) => {
    const tag = el.tagName.toUpperCase();
    if (["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "IFRAME"].includes(tag)) return true;
    const id = el.getAttribute("data-testid") || "";
    if (id === "stIconMaterial" || id.endsWith("Icon") || id === "stElementToolbar") return true;
    const ligature = el.getAttribute("translate") === "no";
    if (ligature && el.getAttribute("aria-hidden") === "true") return true;
    if (el.classList.contains("modebar-container")) return true;  // plotly's toolbar
    return false;
  };
  const classify = (el, inherited) => {
    if (inherited !== "text") return inherited;
    const id = el.getAttribute("data-testid") || "";
    const tag = el.tagName.toUpperCase();
    if ([...el.classList].some((c) => c.startsWith(sourceClass))) return "source";
    if (id === "stCode") {
      const code = el.querySelector("code");
      const langs = code ? [...code.classList].filter((c) => c.startsWith("language-")) : [];
      const plain = langs.every((c) => c === "language-plaintext");
      return plain ? "formula" : "code";
    }
    if (tag === "CODE" || tag === "PRE" || tag === "KBD") return "code";
    if (tag === "A") {
      const href = el.getAttribute("href") || "";
      if (/^https?:/.test(href) && !href.startsWith(location.origin)) return "source";
    }
    return "text";
  };
  const walk = (node, k) => {
    if (node.nodeType === Node.TEXT_NODE) {
      if (k !== kind) { flush(); kind = k; }
      buf += node.data;
      return;
    }
    if (node.nodeType !== Node.ELEMENT_NODE || skip(node)) return;
    const el = node;
    const own = classify(el, k);
    const block = BLOCK.has(el.tagName) || BLOCK.has(el.tagName.toUpperCase()) || own !== k
      || el.getAttribute("role") === "gridcell" || el.getAttribute("role") === "columnheader";
    if (block) flush();
    if (el.tagName === "INPUT" || el.tagName === "TEXTAREA") {
      // what a reader typed is theirs; an empty field's hint is the page's
      const ph = el.getAttribute("placeholder");
      if (ph && !el.value) { flush(); kind = own; buf = ph; flush(); kind = k; }
      return;
    }
    for (const child of el.childNodes) walk(child, own);
    if (block) { flush(); kind = k; }
  };
  const areas = {main: '[data-testid="stMain"]', sidebar: '[data-testid="stSidebar"]'};
  const result = {};
  for (const [name, sel] of Object.entries(areas)) {
    const root = document.querySelector(sel);
    out.length = 0; buf = ""; kind = "text";
    if (root) walk(root, "text");
    flush();
    result[name] = out.slice();
  }
  return result;
}
"""

# Open every collapsed expander (its body is drawn on first open: tables size themselves then)
# and visit every tab, so nothing the page hides is left out.
OPEN_ALL = r"""
() => {
  const closed = '[data-testid="stExpander"] details:not([open]) > summary';
  for (const summary of document.querySelectorAll(closed)) summary.click();
}
"""


# Every table in sight has drawn its cells (a table loads its code lazily, then draws when it is
# first shown: one in a tab not yet visited waits for its visit).
TABLES_DRAWN = r"""
() => [...document.querySelectorAll('[data-testid="stDataFrame"]')]
  .filter((d) => d.getClientRects().length)
  .every((d) => d.querySelector('canvas table [role="columnheader"]'))
"""


# A table draws (and keeps in its accessible copy) only the columns in sight: scroll each one
# across, half a view at a time, and keep every cell seen.
TABLE_CELLS = r"""
async () => {
  const seen = new Map();
  const pause = () => new Promise((done) => setTimeout(done, 150));
  for (const grid of document.querySelectorAll('[data-testid="stDataFrame"]')) {
    if (!grid.getClientRects().length) continue;
    const area = grid.closest('[data-testid="stSidebar"]') ? "sidebar" : "main";
    const scroller = grid.querySelector(".dvn-scroller");
    const step = scroller ? Math.max(scroller.clientWidth / 2, 100) : 1;
    const end = scroller ? scroller.scrollWidth : 0;
    for (let x = 0; ; x += step) {
      if (scroller) { scroller.scrollLeft = x; await pause(); }
      for (const cell of grid.querySelectorAll('[role="gridcell"], [role="columnheader"]')) {
        const text = cell.textContent.replace(/\s+/g, " ").trim();
        const key = area + "|" + (cell.id || cell.getAttribute("aria-colindex")) + "|" + text;
        if (text && !seen.has(key)) seen.set(key, [area, text]);
      }
      if (!scroller || x >= end) break;
    }
    if (scroller) scroller.scrollLeft = 0;
  }
  return [...seen.values()];
}
"""


# How much the page holds now: it is drawn when this stops changing and nothing loads.
DRAWN_SIZE = r"""
() => document.querySelector('[data-testid="stSkeleton"], [data-testid^="stSkeleton"]')
  ? -1
  : document.body.innerHTML.length
"""


def settle(page: Any, quiet_ms: int = 500, timeout_ms: int = 60_000) -> None:
    """Wait until ``page`` is drawn: no element still loading, and the document unchanged for
    ``quiet_ms`` (Streamlit sends a page element by element; a run may not have started yet)."""
    last, waited = -2, 0
    while waited < timeout_ms:
        size = page.evaluate(DRAWN_SIZE)
        if size == last and size >= 0:
            return
        last = size
        page.wait_for_timeout(quiet_ms)
        waited += quiet_ms
    raise TimeoutError(f"the page kept changing for {timeout_ms} ms")


def page_lines(page: Any) -> dict[str, list[tuple[str, str]]]:
    """The main area's and the sidebar's lines, ``{"main": [(kind, text), …], "sidebar": …}``,
    after opening every expander and visiting every tab of ``page`` (a Playwright page)."""
    settle(page)
    page.evaluate(OPEN_ALL)
    page.wait_for_function(TABLES_DRAWN)
    seen: dict[str, list[tuple[str, str]]] = {"main": [], "sidebar": []}
    tabs = page.locator('[data-testid="stMain"] [role="tab"]')
    count = tabs.count()
    for i in range(max(count, 1)):
        if count:
            tabs.nth(i).click()
            page.evaluate(OPEN_ALL)
            page.wait_for_function(TABLES_DRAWN)
        page.wait_for_timeout(300)
        got = page.evaluate(WALK, [f"st-key-{SOURCE_KEY}"])
        for area, text in page.evaluate(TABLE_CELLS):
            got[area].append(["text", text])
        for area in seen:
            for kind, line in got[area]:
                item = (str(kind), str(line))
                if item not in seen[area]:
                    seen[area].append(item)
    return seen
