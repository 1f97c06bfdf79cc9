// deckbuild's in-browser checks of the current slide (our own; loaded by browser.py only).
// Coordinates are slide coordinates: (client rect - .slides rect) / Reveal.getScale().
// An element's text as its author wrote it: KaTeX holds each formula three times (the
// MathML, the TeX annotation, the visible HTML); a message shows it once, as $TeX$.
window.__deckbuildPlainText = function (el) {
  const tex = (k) => {
    const source = k.querySelector('annotation[encoding="application/x-tex"]');
    return source ? `$${source.textContent.trim()}$` : (k.querySelector(".katex-html") || k).textContent;
  };
  const inside = el.closest && el.closest(".katex");
  if (inside) return tex(inside);
  if (!el.querySelector || !el.querySelector(".katex")) return el.textContent;
  const copy = el.cloneNode(true);
  copy.querySelectorAll(".katex").forEach((k) => k.replaceWith(tex(k)));
  return copy.textContent;
};

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
  // a slide that scrolls (its own .scrollable, or `scrollable: true` for the whole deck)
  const scrollable = ["auto", "scroll"].includes(getComputedStyle(slide).overflowY);

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
    const text = (__deckbuildPlainText(el) || el.getAttribute && (el.getAttribute("alt") || el.getAttribute("src")) || "")
      .trim().replace(/\s+/g, " ").slice(0, 60);
    const tag = el.tagName ? el.tagName.toLowerCase() : "#text";
    return `${tag}${el.className && typeof el.className === "string" ? "." + el.className.split(" ")[0] : ""} "${text}"`;
  }

  // A text rect is the font's full height (ascent + descent); where that is taller than the
  // line height (Source Sans Pro: 1.257em against a heading's 1.2) the excess lies outside
  // the line box, half above and half below, and is not laid out: compare the line box.
  function lineBox(r, el) {
    const extra = (r.height - parseFloat(getComputedStyle(el).lineHeight) * scale) / 2;
    if (!(extra > 0)) return r;
    return { left: r.left, right: r.right, top: r.top + extra, bottom: r.bottom - extra };
  }

  // The footer and logo are fixed in the window at pixel sizes, not in the slide, so the
  // smaller the window the further they reach into the slide: in this 1155 x 770 window the
  // footer's text covers the slide's last ~3 px, in a 1280 x 720 one (a 720p projector) its
  // last ~10. Content that ends inside the slide can still be painted under the footer
  // there. The footer's text (its line boxes, not its full-width box) is placed as it sits
  // in a window REF px high (same distance from the window's bottom, same width in px), and
  // the logo where it is now; content that meets them is an overflow too.
  const REF = 720;
  const chrome = [];
  const margin = (cfg.margin || 0) * H / 2;         // slide px below the slide, at any scale
  const refScale = REF / (H + 2 * margin);
  document.querySelectorAll(".reveal > .footer, .reveal > .slide-logo").forEach(el => {
    const cs = getComputedStyle(el);
    if (cs.display === "none" || cs.visibility === "hidden") return;
    const text = __deckbuildPlainText(el).trim().slice(0, 40);
    if (el.classList.contains("slide-logo")) {
      const r = el.getBoundingClientRect();
      if (r.width > 0.5 && r.height > 0.5) chrome.push({ name: "logo", text, rect: toSlide(r) });
      return;
    }
    const runs = [];
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (!n.textContent.trim()) continue;
      const range = document.createRange();
      range.selectNodeContents(n);
      const lineHeight = parseFloat(getComputedStyle(n.parentElement).lineHeight);
      for (const r of range.getClientRects()) runs.push([r, lineHeight]);
    }
    for (const [raw, lineHeight] of runs) {
      if (raw.width <= 0.5 || raw.height <= 0.5) continue;
      // its line box (the footer is not scaled with the slide)
      const extra = Math.max(0, (raw.height - (lineHeight || raw.height)) / 2);
      const r = { left: raw.left, right: raw.right, top: raw.top + extra, bottom: raw.bottom - extra };
      const fromBottom = window.innerHeight - r.top, below = window.innerHeight - r.bottom;
      const left = (r.left - window.innerWidth / 2) / refScale + W / 2;
      chrome.push({ name: "footer", text, rect: {
        left, right: left + (r.right - r.left) / refScale,
        top: H + margin - fromBottom / refScale, bottom: H + margin - below / refScale } });
    }
  });
  const reported = new Set();

  function checkChrome(s, el, what) {
    for (const c of chrome) {
      const dx = Math.min(s.right, c.rect.right) - Math.max(s.left, c.rect.left);
      const dy = Math.min(s.bottom, c.rect.bottom) - Math.max(s.top, c.rect.top);
      const key = c.name + "|" + describe(el);
      if (dx > TOL && dy > TOL && !reported.has(key)) {
        reported.add(key);
        problems.push({ kind: "overflow", what: `${what} ${describe(el)} runs under the ${c.name}` +
          (c.name === "footer" ? ` "${c.text}"` : ""),
          rect: [s.left, s.top, s.right, s.bottom].map(v => Math.round(v)) });
      }
    }
  }

  const outside = new Map();
  function checkRect(rect, el, what) {
    const c = clip(rect, el);
    if (c.right - c.left <= 0.5 || c.bottom - c.top <= 0.5) return;
    if (scrollable) return;
    const s = toSlide(c);
    if (s.left < -TOL || s.top < -TOL || s.right > W + TOL || s.bottom > H + TOL) {
      // one finding per element (a paragraph's lines, a formula's pieces), over all its rects
      const message = what + " " + describe(el.closest(".katex") || el);
      const rect = [s.left, s.top, s.right, s.bottom].map(v => Math.round(v));
      const seen = outside.get(message);
      if (seen) {
        seen.rect = [Math.min(seen.rect[0], rect[0]), Math.min(seen.rect[1], rect[1]),
                     Math.max(seen.rect[2], rect[2]), Math.max(seen.rect[3], rect[3])];
      } else {
        outside.set(message, { kind: "overflow", what: message, rect });
        problems.push(outside.get(message));
      }
    } else {
      checkChrome(s, el, what);
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
      for (const r of range.getClientRects()) checkRect(lineBox(r, parent), parent, "text");
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

// ---------------------------------------------------------------------------------------
// Form checks of the current slide (all fragments shown), in slide coordinates (the
// configured width x height, e.g. 1050 x 700): screen sizes divided by Reveal.getScale().
//   text:   every painted text run with its size in slide px (HTML text: font-size times
//           the CSS transforms between it and the slide; SVG text, inline or inside an
//           <img>: font-size times its screen CTM; KaTeX: each formula's base size)
//   raster: <img> elements that are not SVG (their text cannot be measured)
//   box:    bounding box of everything painted on the slide (footer, logo, number are
//           outside the slide element), and whether all of it lies inside the title
//   prose:  rendered text of prose, tables and cell outputs (not of code blocks), by block
window.__deckbuildForm = function () {
  const cfg = Reveal.getConfig();
  const W = cfg.width, H = cfg.height;
  const slide = Reveal.getCurrentSlide();
  const scale = Reveal.getScale();
  const origin = document.querySelector(".reveal .slides").getBoundingClientRect();
  const SKIP = "aside.notes, .katex-mathml, script, style, noscript, template";
  const short = t => t.trim().replace(/\s+/g, " ").slice(0, 40);
  const round = v => Math.round(v * 10) / 10;

  function hidden(el, stop) {
    for (let e = el; e && e !== stop; e = e.parentElement) {
      if (e.matches && e.matches(SKIP)) return true;
      const cs = getComputedStyle(e);
      if (cs.display === "none" || cs.visibility === "hidden" || cs.opacity === "0") return true;
    }
    return false;
  }
  // product of the CSS transform scales between el and stop (exclusive)
  function cssScale(el, stop) {
    let s = 1;
    for (let e = el; e && e !== stop; e = e.parentElement) {
      const t = getComputedStyle(e).transform;
      if (t && t !== "none") { const m = new DOMMatrixReadOnly(t); s *= Math.hypot(m.c, m.d); }
    }
    return s;
  }
  function painted(rects) {
    return Array.from(rects).filter(r => r.width > 0.5 && r.height > 0.5);
  }
  // the vertical scale of an SVG element's user space on screen (rotation-invariant)
  function svgScale(el) {
    const m = el.getScreenCTM();
    return m ? Math.hypot(m.c, m.d) : 0;
  }

  const text = [], raster = [], rects = [];
  const heading = slide.querySelector(":scope > h1, :scope > h2, :scope > h3, :scope > hgroup, :scope > .title");
  let outsideTitle = false;
  function addRect(r, el) {
    rects.push(r);
    if (!heading || !heading.contains(el)) outsideTitle = true;
  }
  function svgTexts(root, where) {
    root.querySelectorAll("text").forEach(t => {
      const nodes = [];
      const w = document.createTreeWalker(t, NodeFilter.SHOW_TEXT);
      for (let n = w.nextNode(); n; n = w.nextNode()) if (n.textContent.trim()) nodes.push(n);
      for (const n of nodes) {
        const el = n.parentElement;
        if (hidden(el, root.parentElement)) continue;
        const px = parseFloat(getComputedStyle(el).fontSize) * svgScale(t) / scale;
        if (px > 0) text.push({ where, string: short(n.textContent), px: round(px) });
      }
    });
  }
  function decodeSvg(src) {
    const comma = src.indexOf(",");
    const head = src.slice(0, comma), body = src.slice(comma + 1);
    if (/;base64$/i.test(head)) {
      const bytes = Uint8Array.from(atob(body), c => c.charCodeAt(0));
      return new TextDecoder().decode(bytes);
    }
    return decodeURIComponent(body);
  }
  function imgName(img) {
    const fig = img.closest("figure");
    const cap = fig && fig.querySelector("figcaption");
    return short(img.getAttribute("alt") || img.getAttribute("aria-label") ||
                 (cap ? cap.textContent : "") || "without alt text");
  }
  // an SVG image: a copy laid out over the image, in a context like an image's (no
  // inherited styles), measured, then removed
  function imgSvg(img) {
    const r = img.getBoundingClientRect();
    const doc = new DOMParser().parseFromString(decodeSvg(img.currentSrc || img.src), "image/svg+xml");
    const svg = doc.documentElement;
    if (!svg || svg.tagName.toLowerCase() !== "svg") {
      raster.push({ where: "image", string: imgName(img) + " (SVG that does not parse)" });
      return;
    }
    // an SVG image without a viewBox is scaled from its width and height, as in <img>
    const w0 = parseFloat(svg.getAttribute("width")), h0 = parseFloat(svg.getAttribute("height"));
    if (!svg.hasAttribute("viewBox") && w0 > 0 && h0 > 0 && [svg.getAttribute("width"), svg.getAttribute("height")].every(v => /^\s*[\d.]+(px)?\s*$/.test(v)))
      svg.setAttribute("viewBox", `0 0 ${w0} ${h0}`);
    const box = document.createElement("div");
    box.setAttribute("style", `all: initial; position: fixed; left: ${r.left}px; top: ${r.top}px; ` +
      `width: ${r.width}px; height: ${r.height}px; opacity: 0; pointer-events: none;`);
    const copy = document.importNode(svg, true);
    copy.setAttribute("width", r.width);
    copy.setAttribute("height", r.height);
    copy.style.display = "block";
    box.appendChild(copy);
    document.body.appendChild(box);
    try {
      svgTexts(copy, "image " + imgName(img));
    } finally {
      box.remove();
    }
  }

  const prose = [];
  let block = null, blockText = "";
  function flush() { if (block && blockText.trim()) prose.push(blockText.replace(/\s+/g, " ").trim()); }
  function blockOf(el) {
    for (let e = el; e && e !== slide; e = e.parentElement) {
      const d = getComputedStyle(e).display;
      if (!d.startsWith("inline") || e.tagName.toLowerCase() === "text") return e;
    }
    return slide;
  }
  const inOutput = el => !!el.closest(".cell-output, .cell-output-stdout, .cell-output-display, .cell-output-stderr");
  const isCode = el => !inOutput(el) && !!el.closest(".cell-code, pre, code");

  const runs = new Map();
  const walker = document.createTreeWalker(slide, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.nodeType === Node.TEXT_NODE) {
      const parent = node.parentElement;
      if (!node.textContent.trim() || hidden(parent, slide)) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      const rs = painted(range.getClientRects());
      if (!rs.length) continue;
      rs.forEach(r => addRect(r, parent));
      if (!isCode(parent)) {
        const b = blockOf(parent);
        if (b !== block) { flush(); block = b; blockText = ""; }
        blockText += node.textContent;
      }
      if (parent.closest("svg") || parent.closest(".katex")) continue;   // measured below
      // one run per block and size: a code line's highlighted tokens are one string
      const px = round(parseFloat(getComputedStyle(parent).fontSize) * cssScale(parent, slide));
      const b = blockOf(parent);
      if (!runs.has(b)) runs.set(b, new Map());
      const bySize = runs.get(b);
      if (!bySize.has(px)) {
        const run = { where: isCode(parent) ? "code" : inOutput(parent) ? "output" : "text", string: "", px };
        bySize.set(px, run);
        text.push(run);
      }
      bySize.get(px).string += node.textContent;
      continue;
    }
    const el = node, tag = el.tagName.toLowerCase();
    if (el.closest("svg") && tag !== "svg") continue;
    if (hidden(el, slide)) continue;
    // painted: text (above), replaced elements, tables and boxes with a background;
    // borders are not content (a heading's rule or a code frame spans the slide whatever
    // the slide holds)
    const cs = getComputedStyle(el);
    if (["img", "svg", "canvas", "video", "iframe", "table"].includes(tag) ||
        (cs.backgroundColor !== "rgba(0, 0, 0, 0)" && cs.backgroundColor !== "transparent") ||
        cs.backgroundImage !== "none") {
      painted([el.getBoundingClientRect()]).forEach(r => addRect(r, el));
    }
    if (tag === "svg" && !el.parentElement.closest("svg")) svgTexts(el, "svg");
    if (tag === "img" && el.getBoundingClientRect().width > 0) {
      const src = el.currentSrc || el.src || el.getAttribute("data-src") || "";
      if (/^data:image\/svg\+xml/i.test(src)) imgSvg(el);
      else raster.push({ where: "image", string: imgName(el) });
    }
  }
  flush();
  text.forEach(t => { t.string = short(t.string); });

  // KaTeX: each formula at its base size, named by its TeX source
  slide.querySelectorAll(".katex").forEach(k => {
    if (hidden(k, slide) || !painted(k.getClientRects()).length) return;
    const tex = k.querySelector("annotation");
    const px = parseFloat(getComputedStyle(k).fontSize) * cssScale(k, slide);
    text.push({ where: "math", string: short(tex ? tex.textContent : k.textContent), px: round(px) });
  });

  // the deck's chrome shown with this slide: footer and slide number (screen px / scale)
  document.querySelectorAll(".reveal > .footer, .reveal > .slide-number").forEach(el => {
    if (hidden(el, document.documentElement) || !painted(el.getClientRects()).length) return;
    const w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let px = Infinity;
    for (let n = w.nextNode(); n; n = w.nextNode()) {
      if (!n.textContent.trim() || hidden(n.parentElement, el.parentElement)) continue;
      px = Math.min(px, parseFloat(getComputedStyle(n.parentElement).fontSize) * cssScale(n.parentElement, null) / scale);
    }
    if (px < Infinity) text.push({ where: el.classList.contains("footer") ? "footer" : "slide number",
                                   string: short(__deckbuildPlainText(el)), px: round(px) });
  });

  let bbox = null;
  for (const r of rects) {
    const s = [(r.left - origin.left) / scale, (r.top - origin.top) / scale,
               (r.right - origin.left) / scale, (r.bottom - origin.top) / scale];
    const c = [Math.max(0, s[0]), Math.max(0, s[1]), Math.min(W, s[2]), Math.min(H, s[3])];
    if (c[2] <= c[0] || c[3] <= c[1]) continue;
    bbox = bbox ? [Math.min(bbox[0], c[0]), Math.min(bbox[1], c[1]), Math.max(bbox[2], c[2]), Math.max(bbox[3], c[3])] : c;
  }
  return { width: W, height: H, text, raster, prose, bbox: bbox && bbox.map(v => Math.round(v)),
           hasTitle: !!heading, onlyTitle: !!heading && rects.length > 0 && !outsideTitle,
           deckTitle: slide.id === "title-slide" };
};
