// deckbuild's in-browser checks of the current slide (our own; loaded by browser.py only).
// Coordinates are slide coordinates: (client rect - .slides rect) / Reveal.getScale().
window.__deckbuildCheckSlide = function () {
  const cfg = Reveal.getConfig();
  const W = cfg.width, H = cfg.height, TOL = 1.5;
  const slide = Reveal.getCurrentSlide();
  const scale = Reveal.getScale();
  const origin = document.querySelector(".reveal .slides").getBoundingClientRect();
  const toSlide = r => ({
    left: (r.left - origin.left) / scale, top: (r.top - origin.top) / scale,
    right: (r.right - origin.left) / scale, bottom: (r.bottom - origin.top) / scale,
  });
  const problems = [];
  const scrollable = slide.classList.contains("scrollable");

  function hidden(el) {
    for (let e = el; e && e !== slide.parentElement; e = e.parentElement) {
      if (e.matches && (e.matches("aside.notes, .katex-mathml, script, style"))) return true;
      const cs = getComputedStyle(e);
      if (cs.display === "none" || cs.visibility === "hidden") return true;
    }
    return false;
  }

  // intersect a client rect with every ancestor (up to the slide) that clips its content
  function clip(rect, el) {
    let r = { left: rect.left, top: rect.top, right: rect.right, bottom: rect.bottom };
    for (let e = el; e && e !== slide; e = e.parentElement) {
      const cs = getComputedStyle(e);
      if (cs.overflowX !== "visible" || cs.overflowY !== "visible") {
        const b = e.getBoundingClientRect();
        if (cs.overflowX !== "visible") { r.left = Math.max(r.left, b.left); r.right = Math.min(r.right, b.right); }
        if (cs.overflowY !== "visible") { r.top = Math.max(r.top, b.top); r.bottom = Math.min(r.bottom, b.bottom); }
      }
    }
    return r;
  }

  function describe(el) {
    const text = (el.textContent || el.getAttribute && (el.getAttribute("alt") || el.getAttribute("src")) || "")
      .trim().replace(/\s+/g, " ").slice(0, 60);
    const tag = el.tagName ? el.tagName.toLowerCase() : "#text";
    return `${tag}${el.className && typeof el.className === "string" ? "." + el.className.split(" ")[0] : ""} "${text}"`;
  }

  function checkRect(rect, el, what) {
    const c = clip(rect, el);
    if (c.right - c.left <= 0.5 || c.bottom - c.top <= 0.5) return;
    if (scrollable) return;
    const s = toSlide(c);
    if (s.left < -TOL || s.top < -TOL || s.right > W + TOL || s.bottom > H + TOL) {
      problems.push({ kind: "overflow", what: what + " " + describe(el),
        rect: [s.left, s.top, s.right, s.bottom].map(v => Math.round(v)) });
    }
  }

  const walker = document.createTreeWalker(slide, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
  for (let node = walker.currentNode; node; node = walker.nextNode()) {
    if (node.nodeType === Node.TEXT_NODE) {
      if (!node.textContent.trim()) continue;
      const parent = node.parentElement;
      if (hidden(parent)) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      for (const r of range.getClientRects()) checkRect(r, parent, "text");
      continue;
    }
    const el = node;
    if (el.closest("svg") && el.tagName.toLowerCase() !== "svg") continue;
    if (hidden(el)) continue;
    const tag = el.tagName.toLowerCase();
    const cs = getComputedStyle(el);
    const painted = ["img", "svg", "canvas", "video", "iframe", "table"].includes(tag) ||
      (cs.backgroundColor !== "rgba(0, 0, 0, 0)" && cs.backgroundColor !== "transparent") ||
      cs.backgroundImage !== "none" ||
      ["Top", "Right", "Bottom", "Left"].some(s => parseFloat(cs["border" + s + "Width"]) > 0 &&
        cs["border" + s + "Style"] !== "none");
    if (painted && el !== slide) checkRect(el.getBoundingClientRect(), el.parentElement, "box");
    // scroll containers whose content is cut (long code lines, tall code blocks)
    if (el !== slide && !el.closest(".katex") && (cs.overflowX !== "visible" || cs.overflowY !== "visible")
        && el.clientWidth > 2 && el.clientHeight > 2) {
      if (el.scrollWidth > el.clientWidth + 2 || el.scrollHeight > el.clientHeight + 2) {
        problems.push({ kind: "cut", what: `content cut inside ${describe(el)}`,
          rect: [el.clientWidth, el.clientHeight, el.scrollWidth, el.scrollHeight] });
      }
    }
  }

  // math, images, notes
  slide.querySelectorAll(".math").forEach(m => {
    if (!m.querySelector(".katex") || m.querySelector(".katex-error")) {
      problems.push({ kind: "math", what: "math not typeset: " + m.textContent.slice(0, 80) });
    }
  });
  slide.querySelectorAll("img").forEach(img => {
    if (!img.complete || img.naturalWidth === 0) problems.push({ kind: "image", what: "image not loaded: " + (img.getAttribute("src") || "").slice(0, 80) });
  });
  slide.querySelectorAll("aside.notes").forEach(n => {
    if (n.getClientRects().length > 0 && getComputedStyle(n).display !== "none") problems.push({ kind: "notes", what: "speaker notes visible" });
  });
  const bg = slide.getAttribute("data-background-image");
  if (bg && !/^(data:|file:|blob:)/.test(bg)) problems.push({ kind: "image", what: "background image not embedded: " + bg.slice(0, 80) });
  return problems;
};

window.__deckbuildChrome = function () {
  // footer and logo: present, visible, inside the window
  const out = [];
  const footer = document.querySelector(".reveal > .footer");
  const logo = document.querySelector(".reveal > .slide-logo");
  const vw = window.innerWidth, vh = window.innerHeight;
  for (const [name, el] of [["footer", footer], ["logo", logo]]) {
    if (!el) { out.push({ kind: name, what: name + " missing" }); continue; }
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1 || getComputedStyle(el).display === "none" || getComputedStyle(el).visibility === "hidden")
      out.push({ kind: name, what: name + " not visible" });
    else if (r.left < 0 || r.top < 0 || r.right > vw || r.bottom > vh)
      out.push({ kind: name, what: name + " outside the window" });
  }
  if (logo && (!logo.complete || logo.naturalWidth === 0)) out.push({ kind: "logo", what: "logo image not loaded" });
  return out;
};
