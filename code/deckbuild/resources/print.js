// deckbuild's print view (deck.html?print-pdf, which the PDF is printed from): once reveal.js
// has put every slide on its own .pdf-page ("pdf-ready"), each page gets its own copy of
// the footer and logo, and the slide number, in a box the size of the slide's page:
//  - the footer shown is the one the slide shows on screen: its own `::: footer`, none with
//    data-footer="false", else the deck's (Quarto's print view leaves the deck's footer,
//    fixed in the window, for Chromium to repeat on every page; a copy per page does not
//    depend on the browser repeating fixed elements);
//  - with `showNotes` (the handout: ?print-pdf&showNotes=true), each page grows by the
//    height of the longest notes and the slide's notes are printed under the slide, so the
//    handout has one page per slide, the slide on top and its speaker notes below.
// When the pages are ready the <html> element gets the class deckbuild-print-ready.
(function () {
  "use strict";

  function footerFor(root, slide) {
    const own = slide && slide.querySelector(".footer");
    if (own) return own.cloneNode(true);
    if (!slide || slide.getAttribute("data-footer") === "false") return null;
    const deck = root.querySelector(":scope > .footer-default");
    if (!deck) return null;
    const copy = deck.cloneNode(true);
    copy.style.display = "";
    return copy;
  }

  function addChrome(root, page, height) {
    const box = document.createElement("div");
    box.className = "deckbuild-page-chrome";
    box.style.height = height + "px";
    const footer = footerFor(root, page.querySelector(":scope > section"));
    if (footer) box.appendChild(footer);
    const logo = root.querySelector(":scope > .slide-logo");
    if (logo) box.appendChild(logo.cloneNode(true));
    const number = page.querySelector(":scope > .slide-number-pdf");
    if (number) box.appendChild(number);
    page.appendChild(box);
  }

  // the notes under the slide; every page as tall as the slide plus the longest notes
  function notesBelow(pages, width, height) {
    let tallest = 0;
    pages.forEach(page => {
      const notes = page.querySelector(":scope > .speaker-notes-pdf");
      if (!notes) return;
      notes.classList.add("deckbuild-notes-below");
      Object.assign(notes.style, { top: height + "px", bottom: "auto", left: "0px", width: width + "px" });
      tallest = Math.max(tallest, notes.offsetHeight);
    });
    // a few px to spare: notes that reach the page's very end are broken across pages by
    // Chromium's pagination, and the part on the next page is lost
    const total = height + Math.ceil(tallest) + 16;
    pages.forEach(page => { page.style.height = total + "px"; });
    const style = document.createElement("style");
    style.textContent = `@page { size: ${width}px ${total}px; margin: 0px; }`;
    document.head.appendChild(style);
  }

  function preparePages(Reveal) {
    const config = Reveal.getConfig();
    const root = Reveal.getRevealElement();
    const size = Reveal.getComputedSlideSize(window.innerWidth, window.innerHeight);
    // the page size reveal.js's print view chose
    const width = Math.floor(size.width * (1 + config.margin));
    const height = Math.floor(size.height * (1 + config.margin));
    const pages = Array.from(root.querySelectorAll(".slides > .pdf-page"));
    root.querySelectorAll(":scope > .footer.deckbuild-slide-footer").forEach(f => f.remove());
    pages.forEach(page => addChrome(root, page, height));
    document.documentElement.classList.add("deckbuild-chrome-per-page");
    if (config.showNotes) notesBelow(pages, width, height);
    document.documentElement.classList.add("deckbuild-print-ready");
  }

  window.deckbuildPrint = function (Reveal) {
    Reveal.on("pdf-ready", () => preparePages(Reveal));
  };
})();
