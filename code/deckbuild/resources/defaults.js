// deckbuild: what Quarto's revealjs format does to the page before reveal.js starts, run
// on the DOM by window.deckbuildPrepare(config) just before Reveal.initialize(config).
// The rules follow Quarto's documented behaviour and its HTML postprocessor (quarto-cli
// src/format/reveal/format-reveal.ts: applyStretch, handleCenteredSlides; the support
// plugin's controlsAuto and its white-space fix for columns, handleUntitledSlidesInToc);
// the code is our own.
//   config.deckbuild.autoStretch      auto-stretch (default true)
//   config.deckbuild.centerTitleSlide center-title-slide (default true)
//   config.deckbuild.codeCopy         code-copy: "hover" (default), true, false
//   config.controls                   true / false, or "auto" (Quarto's default)
(function () {
  "use strict";

  const slides = () => Array.from(document.querySelectorAll(".reveal .slides section.slide"));
  const hasStretch = el => el.classList.contains("stretch") || el.classList.contains("r-stretch");

  // -- auto-stretch ------------------------------------------------------------------
  // A slide with exactly one image, not in columns, a layout panel, a fragment or an
  // output-location slide, and no aside: the image is sized to the slide's remaining height
  // (reveal.js's r-stretch, which needs it to be a direct child of the slide).
  function inExcludedParent(img) {
    for (let el = img.parentElement; el; el = el.parentElement) {
      const c = el.classList;
      if (c.contains("column") || c.contains("quarto-layout-panel") || c.contains("fragment")
          || c.contains("output-location-slide") || /panel-/.test(el.className)) return true;
    }
    return false;
  }

  function removeEmptyUpwards(el) {
    const parent = el.parentElement;
    el.remove();
    if (parent && parent.nodeName !== "SECTION" && parent.textContent.trim() === "") {
      removeEmptyUpwards(parent);
    }
  }

  function moveToSlide(slide, top, img) {
    const figure = slide.querySelector("div.quarto-figure");
    let caption = null;
    if (figure) {
      const align = figure.className.match(/quarto-figure-(center|left|right)/);
      if (align) img.classList.add(align[0]);
      if (figure.id) { img.id = figure.id; figure.removeAttribute("id"); }
      const figcaption = top.querySelector("figcaption");
      if (figcaption) {
        caption = document.createElement("p");
        caption.className = "caption";
        caption.innerHTML = figcaption.innerHTML;
      }
    }
    const next = top.nextElementSibling;
    removeEmptyUpwards(img);
    slide.insertBefore(img, next);
    if (caption) slide.insertBefore(caption, img.nextElementSibling);
    if (figure && figure.isConnected) removeEmptyUpwards(figure);
  }

  function stretchable(img) {
    return !hasStretch(img) && !/height:/.test(img.getAttribute("style") || "")
      && !img.hasAttribute("height") && !img.classList.contains("absolute")
      && img.parentElement.nodeName !== "A";
  }

  // Quarto writes the logo (and footer) into the deck's last slide and its script moves
  // them out later: its auto-stretch sees the logo there, so a deck with a logo never
  // stretches the image of its last slide
  function imagesOf(slide, all) {
    const images = Array.from(slide.querySelectorAll("img"));
    const logo = document.querySelector(".reveal > .slide-logo");
    return logo && slide === all[all.length - 1] ? images.concat([logo]) : images;
  }

  function stretchSlide(slide, auto, all) {
    if (slide.classList.contains("nostretch")) return;
    const images = imagesOf(slide, all);
    if (images.length !== 1) return;
    const img = images[0];
    if (img.classList.contains("nostretch")) { img.classList.remove("nostretch"); return; }
    if (inExcludedParent(img) || slide.querySelector("aside:not(.notes)")) return;
    const top = Array.from(slide.childNodes).find(node => node.contains(img));
    if (!top || (top.nodeName === "P" && top.childNodes.length > 1)) return;
    const isDiv = top.nodeName === "DIV";
    if (!(top.nodeName === "P" || (isDiv && (top.classList.contains("quarto-figure")
        || top.classList.contains("cell") || hasStretch(top))))) return;
    if (isDiv && hasStretch(top)) top.classList.remove("r-stretch", "stretch");
    if (auto && stretchable(img)) img.classList.add("r-stretch");
    if (hasStretch(img) && img.parentNode.nodeName !== "SECTION") moveToSlide(slide, top, img);
  }

  // -- centred slides, columns, controls ------------------------------------------------
  function centerSlides(config, titleSlides) {
    if (titleSlides) {
      const title = document.getElementById("title-slide");
      if (title) title.classList.add("center");
      document.querySelectorAll(".reveal .title-slide").forEach(s => s.classList.add("center"));
    }
    if (config.center === true) slides().forEach(s => s.classList.add("center"));
  }

  // inline-block columns: white space between them would take room (a 50% + 50% pair wraps)
  function dropColumnWhiteSpace() {
    document.querySelectorAll("div.columns").forEach(columns => {
      Array.from(columns.childNodes).forEach(node => {
        if (node.nodeType === Node.TEXT_NODE && node.nodeValue.trim() === "") node.remove();
      });
    });
  }

  // controls: "auto" shows them only in an embedding page that is not local, or when the
  // deck has vertical slides that the navigation mode makes reachable
  function controlsAuto(config) {
    if (typeof config.controls === "boolean") return;
    const framed = window.self !== window.top;
    const local = ["localhost", "127.0.0.1"].includes(window.location.hostname);
    const vertical = document.querySelector(".reveal .slides > section > section") !== null;
    config.controls = (framed && !local) || (vertical && config.navigationMode !== "linear");
  }

  // -- tabsets (filters/tabsets.lua): the list as tabs, one pane shown, as Quarto's tabby --
  function selectTab(list, link) {
    list.querySelectorAll("a[role=tab]").forEach(a => {
      const on = a === link;
      a.setAttribute("aria-selected", on ? "true" : "false");
      if (on) a.removeAttribute("tabindex"); else a.setAttribute("tabindex", "-1");
      const pane = document.getElementById(a.getAttribute("aria-controls"));
      if (pane) pane.hidden = !on;
    });
  }

  function setupTabsets() {
    document.querySelectorAll(".reveal ul.panel-tabset-tabby").forEach(list => {
      list.setAttribute("role", "tablist");
      const links = Array.from(list.querySelectorAll(":scope > li > a"));
      links.forEach(a => {
        const paneId = decodeURIComponent(a.getAttribute("href").slice(1));
        const pane = document.getElementById(paneId);
        a.parentElement.setAttribute("role", "presentation");
        a.setAttribute("role", "tab");
        a.id = "tabby-toggle_" + paneId;
        a.setAttribute("aria-controls", paneId);
        if (pane) { pane.setAttribute("role", "tabpanel"); pane.setAttribute("aria-labelledby", a.id); }
        a.addEventListener("click", event => { event.preventDefault(); selectTab(list, a); });
      });
      selectTab(list, links.find(a => a.hasAttribute("data-tabby-default")) || links[0]);
    });
  }

  // the TOC slide lists no untitled slide (an empty entry is dropped, as Quarto does)
  function dropUntitledTocEntries() {
    document.querySelectorAll('nav[role="doc-toc"] ul > li').forEach(li => {
      if (li.textContent.trim() === "") li.remove();
    });
  }

  // -- code copy ------------------------------------------------------------------------
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    const area = document.createElement("textarea");
    area.value = text;
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    const done = document.execCommand("copy");
    area.remove();
    return done ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }

  function addCopyButtons(always) {
    document.querySelectorAll(".reveal pre.sourceCode").forEach(pre => {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "code-copy-button" + (always ? " code-copy-always" : "");
      button.title = "Copy to Clipboard";
      button.setAttribute("aria-label", "Copy to Clipboard");
      button.addEventListener("click", event => {
        event.stopPropagation();
        const code = pre.querySelector("code");
        copyText(code ? code.innerText : pre.innerText).then(() => {
          button.classList.add("code-copy-button-checked");
          button.title = "Copied!";
          setTimeout(() => {
            button.classList.remove("code-copy-button-checked");
            button.title = "Copy to Clipboard";
          }, 1000);
        }, () => {});
      });
      pre.appendChild(button);
    });
  }

  window.deckbuildPrepare = function (config) {
    const own = config.deckbuild || {};
    dropColumnWhiteSpace();
    dropUntitledTocEntries();
    setupTabsets();
    centerSlides(config, own.centerTitleSlide !== false);
    if (window.deckbuildNotes) window.deckbuildNotes(config);   // asides, footnotes (notes.js)
    const all = slides();
    all.forEach(slide => stretchSlide(slide, own.autoStretch !== false, all));
    if (own.codeCopy !== false) addCopyButtons(own.codeCopy === true);
    controlsAuto(config);
  };
})();
