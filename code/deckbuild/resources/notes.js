// deckbuild: asides, footnotes and references as Quarto's revealjs format places them, run
// on the DOM by window.deckbuildNotes(config) (from deckbuildPrepare, after the slides are
// centred and before images are stretched). The rules follow Quarto's HTML postprocessor
// (quarto-cli src/format/reveal/format-reveal.ts: coalesceAsides, handleSlideFootnotes,
// handleRefs, handleCitationLinks); the code is our own.
//   config.deckbuild.slideFootnotes  false for reference-location: document (footnotes on
//                                    a last slide "Footnotes"); true otherwise (Quarto's
//                                    default): each slide's notes at its foot
//   config.deckbuild.slideLevel      the heading level of the "Footnotes" slide's title
//   config.deckbuild.footnotesTitle  that title
(function () {
  "use strict";

  const slides = () => Array.from(document.querySelectorAll(".reveal .slides section.slide"));

  function parentSlide(el) {
    for (let p = el.parentElement; p; p = p.parentElement) {
      if (p.classList.contains("slide")) return p;
    }
    return null;
  }

  // the note a footnote reference points at (pandoc writes href="#/fn1" in revealjs)
  function noteOf(ref) {
    const href = ref.getAttribute("href") || "";
    return document.getElementById(href.replace(/^#\/?/, ""));
  }

  // -- one aside per slide ------------------------------------------------------------
  // The slide's asides and div.aside blocks, each as a div, then its footnotes as an
  // ol.aside-footnotes numbered from 1 on every slide, in one aside at the slide's end.
  function moveAsides(aside, list) {
    list.forEach(el => {
      const div = document.createElement("div");
      div.innerHTML = el.innerHTML;
      aside.appendChild(div);
    });
    list.forEach(el => el.remove());
  }

  function moveFootnotes(aside, refs) {
    const ol = document.createElement("ol");
    ol.className = "aside-footnotes";
    refs.forEach((ref, i) => {
      const note = noteOf(ref);
      if (note) {
        note.querySelectorAll(".footnote-back").forEach(back => back.remove());
        ol.appendChild(note);
      }
      const sup = document.createElement("sup");
      sup.textContent = String(i + 1);
      ref.replaceWith(sup);
    });
    aside.appendChild(ol);
  }

  function coalesceAsides(slide, slideFootnotes) {
    const asides = Array.from(slide.querySelectorAll("aside:not(.notes)"));
    const divs = Array.from(slide.querySelectorAll("div.aside"));
    const refs = Array.from(slide.querySelectorAll('a[role="doc-noteref"]'));
    if (!asides.length && !divs.length && !refs.length) return;
    const aside = document.createElement("aside");
    moveAsides(aside, asides);
    moveAsides(aside, divs);
    if (slideFootnotes && refs.length) moveFootnotes(aside, refs);
    slide.appendChild(aside);
  }

  // -- footnotes at the end (reference-location: document) ---------------------------
  function footnotesSlide(own) {
    const sections = document.querySelectorAll('section[role="doc-endnotes"]');
    if (own.slideFootnotes !== false) {
      sections.forEach(s => s.remove());
      return;
    }
    let id = null;
    if (sections.length === 1) {
      const section = sections[0];
      id = section.id || "footnotes";
      section.id = id;
      const heading = document.createElement("h" + (own.slideLevel || 2));
      heading.textContent = own.footnotesTitle || "Footnotes";
      section.insertBefore(heading, section.firstChild);
      const hr = section.querySelector("hr");
      if (hr) hr.remove();
      section.classList.add("smaller", "scrollable");
      section.classList.remove("center");
      section.querySelectorAll(".footnote-back").forEach(back => back.remove());
    }
    document.querySelectorAll('a[role="doc-noteref"]').forEach(ref => {
      ref.setAttribute("data-footnote-href", ref.getAttribute("href"));
      ref.setAttribute("href", id ? "#/" + id : "");
      ref.setAttribute("onclick", id ? "" : "return false;");
    });
  }

  // -- references -----------------------------------------------------------------------
  // The slide holding #refs is smaller and scrollable (never centred); citations link to it.
  function references() {
    const refs = document.getElementById("refs");
    let id = null;
    if (refs) {
      const slide = parentSlide(refs);
      if (slide) {
        id = slide.id || "references";
        slide.id = id;
        slide.classList.add("smaller", "scrollable");
        slide.classList.remove("center");
      }
      // the CSL style's entry spacing (pandoc writes it on #refs), in lines
      const spacing = parseFloat(refs.getAttribute("data-entry-spacing"));
      if (!isNaN(spacing)) {
        refs.querySelectorAll(":scope > .csl-entry").forEach(e => { e.style.marginBottom = spacing + "em"; });
      }
    }
    document.querySelectorAll('a[role="doc-biblioref"]').forEach(cite => {
      cite.setAttribute("href", id ? "#/" + id : "");
      cite.setAttribute("onclick", id ? "" : "return false;");
    });
  }

  window.deckbuildNotes = function (config) {
    const own = config.deckbuild || {};
    slides().forEach(slide => coalesceAsides(slide, own.slideFootnotes !== false));
    footnotesSlide(own);
    references();
  };
})();
