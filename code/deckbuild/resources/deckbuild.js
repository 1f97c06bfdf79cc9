// deckbuild's browser-side helpers, run before Reveal.initialize.
// Line-highlight steps: a code block whose data-code-line-numbers reads "1|2-3|5"
// highlights lines 1, then 2-3, then 5, one step per (invisible) fragment.
(function () {
  "use strict";

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

  function setupBlock(holder) {
    const spec = holder.getAttribute("data-code-line-numbers") || "";
    if (spec === "true" || spec === "false" || spec === "") return null;
    const pre = holder.tagName === "PRE" ? holder : holder.querySelector("pre");
    if (!pre) return null;
    const steps = spec.split("|").map(parseLines);
    const markers = [];
    for (let k = 1; k < steps.length; k++) {
      const marker = document.createElement("span");
      marker.className = "fragment code-step-marker";
      marker.setAttribute("aria-hidden", "true");
      holder.insertAdjacentElement(k === 1 ? "afterend" : "afterend", marker);
      markers.push(marker);
    }
    markers.reverse();  // inserted afterend one by one: restore document order
    return { pre, steps, markers };
  }

  function apply(block) {
    const shown = block.markers.filter(m => m.classList.contains("visible")).length;
    const lines = block.steps[Math.min(shown, block.steps.length - 1)];
    const spans = block.pre.querySelectorAll("code > span");
    block.pre.classList.toggle("has-line-highlights", lines.size > 0);
    spans.forEach((span, i) => span.classList.toggle("highlight-line", lines.has(i + 1)));
  }

  const blocks = [];
  document.querySelectorAll("[data-code-line-numbers]").forEach(holder => {
    const block = setupBlock(holder);
    if (block) blocks.push(block);
  });

  window.deckbuildUpdateCode = function () { blocks.forEach(apply); };
  window.deckbuildRegister = function (Reveal) {
    ["ready", "slidechanged", "fragmentshown", "fragmenthidden", "pdf-ready"].forEach(
      ev => Reveal.on(ev, window.deckbuildUpdateCode));
    // reveal.js places centred slides when it starts, possibly before the theme's fonts
    // have loaded (a fallback font's line boxes differ): place them again once they have,
    // so they sit where Quarto's do
    Reveal.on("ready", () => {
      if (document.fonts) document.fonts.ready.then(() => Reveal.layout());
    });
  };
})();
