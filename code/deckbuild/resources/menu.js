// deckbuild's slide menu: a reveal.js plugin of our own standing in for the menu Quarto
// turns on by default (https://quarto.org/docs/presentations/revealjs/presenting.html#navigation-menu).
// A button at the bottom left (hidden with `menu: false`) and the M key open a panel that
// lists every slide by number and title; a click goes to that slide, Esc closes it.
// Quarto's menu also has a "Tools" tab; this one lists slides only.
window.DeckbuildMenu = (function () {
  "use strict";

  // A heading's text as read: its textContent would repeat each KaTeX formula three times
  // (the MathML, its TeX annotation and the HTML), so each formula counts by its TeX.
  function plainTitle(heading) {
    const copy = heading.cloneNode(true);
    copy.querySelectorAll("aside, .footnote-ref").forEach(e => e.remove());
    copy.querySelectorAll(".katex").forEach(k => {
      const tex = k.querySelector("annotation");
      k.replaceWith(tex ? tex.textContent.trim() : (k.querySelector(".katex-html") || k).textContent);
    });
    return copy.textContent.replace(/\s+/g, " ").trim();
  }

  // The entry shows the heading as the slide does, its formulas typeset once (KaTeX's HTML;
  // the MathML copy, hidden on screen, stays out so that the entry's text is the title's),
  // and is labelled with the plain title.
  function fillEntry(link, slide, n) {
    const heading = slide.querySelector("h1, h2, h3");
    const plain = heading ? plainTitle(heading) : "";
    if (!plain) {
      link.textContent = "Slide " + n;
      return;
    }
    const copy = heading.cloneNode(true);
    copy.querySelectorAll("aside, .footnote-ref, .katex-mathml").forEach(e => e.remove());
    copy.querySelectorAll("[id]").forEach(e => e.removeAttribute("id"));
    copy.querySelectorAll("a").forEach(a => a.replaceWith(...a.childNodes));
    link.append(...copy.childNodes);
    link.setAttribute("aria-label", plain);
  }

  function build(deck, panel) {
    const list = panel.querySelector("ol");
    list.textContent = "";
    deck.getSlides().forEach((slide, i) => {
      const item = document.createElement("li");
      const link = document.createElement("a");
      const indices = deck.getIndices(slide);
      link.href = "#";
      fillEntry(link, slide, i + 1);
      link.dataset.h = indices.h;
      link.dataset.v = indices.v || 0;
      link.addEventListener("click", (event) => {
        event.preventDefault();
        close(panel);
        deck.slide(indices.h, indices.v || 0);
      });
      item.appendChild(link);
      list.appendChild(item);
    });
  }

  function markCurrent(deck, panel) {
    const now = deck.getIndices();
    panel.querySelectorAll("a").forEach((a) => {
      const current = +a.dataset.h === now.h && +a.dataset.v === (now.v || 0);
      a.classList.toggle("current", current);
      if (current && panel.classList.contains("open")) a.scrollIntoView({ block: "nearest" });
    });
  }

  function open(deck, panel) {
    panel.classList.add("open");
    markCurrent(deck, panel);
  }

  function close(panel) {
    panel.classList.remove("open");
  }

  function init(deck) {
    const config = deck.getConfig().deckbuildMenu || {};
    const root = deck.getRevealElement();
    const panel = document.createElement("nav");
    panel.className = "slide-menu";
    panel.setAttribute("aria-label", "Slides");
    panel.innerHTML = '<div class="slide-menu-title">Slides</div><ol></ol>';
    root.appendChild(panel);
    const toggle = () => (panel.classList.contains("open") ? close(panel) : open(deck, panel));
    if (config.openButton !== false) {
      const button = document.createElement("button");
      button.className = "slide-menu-button";
      button.setAttribute("aria-label", "Slide menu (M)");
      button.title = "Slide menu (M)";
      button.addEventListener("click", toggle);
      root.appendChild(button);
    }
    deck.addKeyBinding({ keyCode: 77, key: "M", description: "Slide menu" }, toggle);
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && panel.classList.contains("open")) {
        close(panel);
        event.stopPropagation();
      }
    }, true);
    deck.on("ready", () => build(deck, panel));
    deck.on("slidechanged", () => markCurrent(deck, panel));
  }

  return { id: "deckbuild-menu", init: init, open: (deck) => open(deck, document.querySelector(".slide-menu")) };
})();
