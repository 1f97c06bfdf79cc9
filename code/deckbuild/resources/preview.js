// deckbuild preview: added by the preview server to the pages it serves (never written
// into a built deck). window.deckbuildPreview is the server's state when it served the
// page: {version, generation, error, where}. The script asks the server for the next
// state (the request waits until a build finishes); a build that changed the deck reloads
// the page on the same slide, a failed build shows its error over the last good deck.
(function () {
  "use strict";
  const served = window.deckbuildPreview;
  const KEY = "deckbuild-preview-slide";
  let generation = served.generation;

  function show(state) {
    let box = document.getElementById("deckbuild-error");
    if (!state.error) {
      if (box) box.remove();
      return;
    }
    if (!box) {
      box = document.createElement("div");
      box.id = "deckbuild-error";
      box.setAttribute("role", "alert");
      box.style.cssText = "position:fixed;inset:1em;z-index:10000;overflow:auto;margin:0;" +
        "padding:1em;background:#fff8f8;color:#700;border:3px solid #c00;" +
        "font:14px/1.4 monospace;white-space:pre-wrap;text-align:left";
      document.body.appendChild(box);
    }
    box.textContent = "deckbuild preview: the last build failed" +
      (state.where ? " at " + state.where : "") + ". Below is the last good deck; " +
      "fix the source and save to rebuild.\n\n" + state.error;
  }

  function reload() {
    // the URL keeps the slide when the deck has `hash: true`; remember it here as well
    if (window.Reveal && Reveal.isReady && Reveal.isReady()) {
      sessionStorage.setItem(KEY, JSON.stringify(Reveal.getIndices()));
    }
    location.reload();
  }

  function restoreSlide() {
    const saved = sessionStorage.getItem(KEY);
    sessionStorage.removeItem(KEY);
    if (!saved || !window.Reveal) return;
    const go = function () {                        // unless the URL's hash put it back
      const at = JSON.parse(saved), now = Reveal.getIndices();
      if (now.h !== at.h || now.v !== at.v || now.f !== at.f) Reveal.slide(at.h, at.v, at.f);
    };
    if (Reveal.isReady()) go(); else Reveal.on("ready", go);
  }

  async function follow() {
    for (;;) {
      try {
        const answer = await fetch("/__deckbuild/version?after=" + generation,
                                   {cache: "no-store"});
        const state = await answer.json();
        generation = state.generation;
        if (state.version !== served.version) {
          reload();
          return;
        }
        show(state);
      } catch (e) {                                 // the server is restarting: try again
        await new Promise(function (done) { setTimeout(done, 1000); });
      }
    }
  }

  restoreSlide();
  show(served);
  follow();
})();
