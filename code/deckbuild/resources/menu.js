// deckbuild's slide menu: a reveal.js plugin of our own standing in for the menu Quarto
// turns on by default (https://quarto.org/docs/presentations/revealjs/presenting.html#navigation-menu).
// A button at the bottom left (hidden with `menu: false`) and the M key open a panel that
// lists every slide by number and title; a click goes to that slide, Esc closes it.
// Quarto's menu also has a "Tools" tab; this one lists slides only.
window.DeckbuildMenu = (function () {
  "use strict";

  function slideTitle(slide, n) {
    const heading = slide.querySelector("h1, h2, h3");
    const text = heading ? heading.textContent.trim() : "";
    return text || "Slide " + n;
  }

  function build(deck, panel) {
    const list = panel.querySelector("ol");
    list.textContent = "";
    deck.getSlides().forEach((slide, i) => {
      const item = document.createElement("li");
      const link = document.createElement("a");
      const indices = deck.getIndices(slide);
      link.href = "#";
      link.textContent = slideTitle(slide, i + 1);
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
