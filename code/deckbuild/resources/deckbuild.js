// deckbuild's browser-side helpers, run before Reveal.initialize: code annotations'
// anchors, then line-highlight steps (whose copies of the code keep the anchors).
// Line-highlight steps, as Quarto's line-highlight plugin shows them: a code block whose
// data-code-line-numbers reads "1|2-3|5" highlights lines 1; each later step is a copy of
// the <code> in the same <pre>, a fragment laid over the first (position: absolute) with
// its own lines highlighted, so that stepping through the fragments moves the highlight.
(function () {
  "use strict";

  const STEPS = /^[\d|,-]+$/;

  function parseLines(spec) {
    const lines = new Set();
    spec.split(",").map(s => s.trim()).filter(Boolean).forEach(part => {
      const m = part.match(/^(\d+)(?:-(\d+))?$/);
      if (!m) return;
      const a = parseInt(m[1], 10), b = m[2] ? parseInt(m[2], 10) : a;
      for (let i = Math.min(a, b); i <= Math.max(a, b); i++) lines.add(i);
    });
    return lines;
  }

  function highlight(code, spec) {
    const lines = parseLines(spec);
    code.setAttribute("data-code-line-numbers", spec);
    code.parentElement.classList.add("code-wrapper");
    const spans = code.querySelectorAll(":scope > span");
    spans.forEach((span, i) => span.classList.toggle("highlight-line", lines.has(i + 1)));
    code.classList.toggle("has-line-highlights", lines.size > 0 && spans.length > 0);
  }

  // one copy of ``code`` per step after the first, each a fragment appended to its <pre>
  function addSteps(code, steps) {
    let index = parseInt(code.getAttribute("data-fragment-index"), 10);
    steps.slice(1).forEach((step, k) => {
      const copy = code.cloneNode(true);
      copy.classList.add("fragment");
      copy.querySelectorAll(":scope > span[id]").forEach(span => { span.id += "-" + (k + 1); });
      if (isNaN(index)) copy.removeAttribute("data-fragment-index");
      else copy.setAttribute("data-fragment-index", index++);
      code.parentElement.appendChild(copy);
      highlight(copy, step);
    });
    code.removeAttribute("data-fragment-index");
  }

  function setupBlock(holder) {
    const spec = (holder.getAttribute("data-code-line-numbers") || "").replace(/\s+/g, "");
    if (!STEPS.test(spec)) return;
    const codes = holder.tagName === "CODE" ? [holder] : holder.querySelectorAll("pre > code");
    holder.removeAttribute("data-code-line-numbers");
    codes.forEach(code => {
      const steps = spec.split("|");
      if (steps.length > 1) addSteps(code, steps);
      highlight(code, steps[0]);
    });
  }

  // code annotations (filters/annotations.lua): Quarto's numbered anchor before each
  // marked line, the gutter its page script expects, the classes of an annotated block
  function annotate(holder) {
    const pre = holder.querySelector("pre"), code = pre && pre.querySelector("code");
    if (!code) return;
    const spans = Array.from(code.children).filter(el => el.tagName === "SPAN");
    holder.getAttribute("data-code-annotations").split(",").forEach(pair => {
      const [line, number] = pair.split(":");
      const span = spans[parseInt(line, 10) - 1];
      if (!span) return;
      const anchor = document.createElement("a");
      anchor.className = "code-annotation-anchor";
      anchor.setAttribute("data-target-cell", holder.id);
      anchor.setAttribute("data-target-annotation", number);
      anchor.setAttribute("href", "");
      anchor.addEventListener("click", event => event.preventDefault());
      anchor.textContent = number;
      code.insertBefore(anchor, span);
      span.classList.add("code-annotation-target");
    });
    ["code-annotation-gutter-bg", "code-annotation-gutter"].forEach(name => {
      const div = document.createElement("div");
      div.className = name;
      code.appendChild(div);
    });
    pre.classList.add("code-annotation-code", "code-annotated");
  }

  document.querySelectorAll(".reveal [data-code-annotations]").forEach(annotate);
  document.querySelectorAll(".reveal [data-code-line-numbers]").forEach(setupBlock);

  // a step shown or hidden scrolls its block to the first highlighted line
  function scrollToHighlight(code) {
    const pre = code && code.parentElement;
    const first = code && code.querySelector(":scope > span.highlight-line");
    if (!pre || !first || pre.scrollHeight <= pre.clientHeight) return;
    pre.scrollTop = Math.max(0, first.offsetTop - pre.clientHeight / 3);
  }

  // A slide's own `::: footer` replaces the deck's footer while it is shown, and
  // `data-footer="false"` shows none (Quarto's documented per-slide footer); the slide's
  // div itself stays hidden (`.reveal .slide .footer`), a copy is shown in the window.
  function showSlideFooter(reveal, slide) {
    const root = reveal.getRevealElement();
    root.querySelectorAll(":scope > .footer.deckbuild-slide-footer").forEach(f => f.remove());
    const deckFooter = root.querySelector(":scope > .footer-default");
    const own = slide && slide.querySelector(".footer");
    if (own) {
      const copy = own.cloneNode(true);
      copy.classList.add("deckbuild-slide-footer");
      root.appendChild(copy);
    }
    if (deckFooter) {
      const none = own || (slide && slide.getAttribute("data-footer") === "false");
      deckFooter.style.display = none ? "none" : "block";
    }
    fitFooters(root);
  }

  // The footer keeps its pixel size in any window (as Quarto's footer.css sets it), so in a
  // narrow one (the speaker view's previews, a phone held upright) a long footer wrapped
  // onto several lines over the slide. It stays on one line (white-space: nowrap in the
  // template) and, where it is wider than the window, its font shrinks to fit (not under
  // 6 px; past that it is cut at the window's edge). The text is centred in the window, so
  // the logo (bottom right) and the menu button (bottom left), where they sit at the
  // footer's height, narrow it on both sides: it keeps GAP px from each.
  const GAP = 6;
  function fitFooters(root) {
    root.querySelectorAll(":scope > .footer").forEach(footer => {
      footer.style.fontSize = "";
      if (getComputedStyle(footer).display === "none" || !footer.clientWidth) return;
      const size = parseFloat(getComputedStyle(footer).fontSize);
      const box = footer.getBoundingClientRect(), middle = box.left + box.width / 2;
      let half = footer.clientWidth / 2;
      root.querySelectorAll(":scope > .slide-logo, .slide-menu-button").forEach(other => {
        const r = other.getBoundingClientRect();
        if (r.width <= 0 || r.height <= 0 || r.bottom <= box.top || r.top >= box.bottom) return;
        half = Math.min(half, r.left >= middle ? r.left - middle - GAP : middle - r.right - GAP);
      });
      const range = document.createRange();   // the text's own width (its <p> is as wide as the window)
      range.selectNodeContents(footer.firstElementChild || footer);
      const text = range.getBoundingClientRect().width;
      if (text > 2 * half + 1) footer.style.fontSize = Math.max(6, size * Math.max(0, 2 * half) / text) + "px";
    });
  }

  window.deckbuildRegister = function (Reveal) {
    Reveal.on("ready", event => showSlideFooter(Reveal, event.currentSlide));
    Reveal.on("slidechanged", event => showSlideFooter(Reveal, event.currentSlide));
    Reveal.on("fragmentshown", event => event.fragments.forEach(f => {
      if (f.matches("pre > code")) scrollToHighlight(f);
    }));
    Reveal.on("fragmenthidden", event => event.fragments.forEach(f => {
      if (f.matches("pre > code")) scrollToHighlight(f.previousElementSibling);
    }));
    // reveal.js places centred slides when it starts, possibly before the theme's fonts
    // have loaded (a fallback font's line boxes differ): place them again once they have,
    // so they sit where Quarto's do
    Reveal.on("ready", () => {
      if (document.fonts) document.fonts.ready.then(() => Reveal.layout());
    });
    Reveal.on("resize", () => fitFooters(Reveal.getRevealElement()));
    if (document.fonts) document.fonts.ready.then(() => fitFooters(Reveal.getRevealElement()));
  };
})();
