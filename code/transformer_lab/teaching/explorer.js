// The explorer slide (transformer_lab.teaching.explorer): the deck's trained models run in
// the page with ONNX Runtime Web, offline. The runtime starts when the slide is first
// shown; then every edit of the input decodes greedily and redraws the chosen head.
(() => {
  "use strict";
  const root = document.currentScript.closest(".tl-explorer");
  const $ = (selector) => root.querySelector(selector);
  // The payload (models, runtime) is inert data, read once the page has loaded: the renderer
  // puts it after reveal.js's start-up script (Quarto leaves it here), so it is looked up by
  // this explorer's key wherever it is.
  const payload = (name) => {
    const found = document.querySelector(`script.tlx-${name}[data-tlx-key="${root.dataset.tlxKey}"]`);
    if (!found) throw new Error(`the explorer's ${name} is missing from the page`);
    return found.textContent;
  };
  let data = null, tasks = null, state = null;

  function readData() {
    data = JSON.parse(payload("data"));
    tasks = Object.fromEntries(data.tasks.map((t) => [t.name, t]));
    for (const t of data.tasks) {
      t.stoi = Object.fromEntries(t.src.itos.map((s, i) => [s, i]));
      t.inside = new Set(t.src.itos.slice(4).filter((s) => s.length > 1).join(""));  // "-" of "twenty-two"
    }
    state = { task: data.tasks[0].name, ...data.start, started: false, ready: false, running: false,
              pending: false, settled: true, typing: null, last: null, sessions: {}, readyMs: null, timings: {} };
  }
  const SETTLE_MS = 1500;  // a last word left alone this long is complete, known or not
  const SVG = "http://www.w3.org/2000/svg";
  const G = { width: 560, height: 450, font: 21, char: 12.0, cellMax: 48, bar: 16, barHeight: 200 };

  const isPrint = () => /print-pdf/i.test(window.location.search);

  // Keys typed in the box (or on a menu) belong to it, not to reveal.js's shortcuts, except
  // PageUp/PageDown (what a presenter's clicker sends): the control lets go of the focus and
  // reveal.js, listening on the document, turns the slide. Esc lets go and stops there, so
  // that the arrows and space move the deck again (reveal.js ignores keys while a text box
  // has the focus; the arrows inside the box move its caret).
  const DECK_KEYS = new Set(["PageUp", "PageDown"]);
  for (const type of ["keydown", "keypress", "keyup"]) {
    root.addEventListener(type, (event) => {
      if (!event.target.matches("input, select, button")) return;
      if (DECK_KEYS.has(event.key)) {
        if (type === "keydown") event.target.blur();
        return;
      }
      event.stopPropagation();
      if (event.key === "Escape" && type === "keydown") {
        event.preventDefault();
        event.target.blur();
      }
    });
  }

  function onSlide() {
    const slide = window.Reveal && Reveal.getCurrentSlide();
    if (!state.started && slide && slide.contains(root)) start();
  }

  // On a phone the slide is scaled down to about a third: the controls' CSS (a media query)
  // sizes them by --tlx-tap, 44 px of the screen in the slide's pixels.
  function tapSize() {
    const scale = Reveal.getScale();
    if (scale > 0) root.style.setProperty("--tlx-tap", `${Math.ceil(44 / scale)}px`);
  }

  function hook() {
    if (isPrint() || !window.Reveal) return;
    readData();
    listen();
    // For the tests and the benchmark: decode without drawing, and the state.
    window.tlExplorer = { state, decode, chooseTask, start, tasks, normalise };
    Reveal.on("resize", tapSize);
    Reveal.on("ready", tapSize);
    if (Reveal.isReady()) tapSize();
    Reveal.on("slidechanged", onSlide);
    Reveal.on("ready", onSlide);
    if (Reveal.isReady()) onSlide();
  }

  async function unpack(packedText) {  // gzipped, base64-encoded (explorer.py: packed)
    const text = packedText.trim();
    const packed = await (await fetch("data:application/octet-stream;base64," + text)).blob();
    const inflated = packed.stream().pipeThrough(new DecompressionStream("gzip"));
    return new Uint8Array(await new Response(inflated).arrayBuffer());
  }

  async function createSessions(task) {
    const options = { executionProviders: ["wasm"], graphOptimizationLevel: "all" };
    const [encoder, decoder] = await Promise.all([unpack(task.encoder), unpack(task.decoder)]);
    return { encoder: await ort.InferenceSession.create(encoder, options),
             decoder: await ort.InferenceSession.create(decoder, options) };
  }

  async function start() {
    state.started = true;
    root.dataset.state = "starting";
    setStatus("Starting ONNX Runtime Web in this page… (shown meanwhile: PyTorch's answer, at build time)");
    const t0 = performance.now();
    try {
      if (!window.ort) {
        const script = document.createElement("script");
        script.textContent = payload("runtime");
        document.head.appendChild(script);
      }
      const [wasm, glue] = await Promise.all([unpack(payload("wasm")), unpack(payload("glue"))]);
      ort.env.wasm.numThreads = 1;
      ort.env.wasm.proxy = false;
      ort.env.wasm.wasmBinary = wasm;
      ort.env.wasm.wasmPaths = { mjs: URL.createObjectURL(new Blob([glue], { type: "text/javascript" })) };
      state.timings.runtimeMs = performance.now() - t0;
      // the shown task's sessions first; the others load after it, while the reader reads
      let previous = Promise.resolve();
      for (const t of [tasks[state.task], ...data.tasks.filter((x) => x.name !== state.task)]) {
        previous = state.sessions[t.name] = previous.then(() => createSessions(t));
        previous.catch(() => {});  // reported by whoever awaits it
      }
      await state.sessions[state.task];
      state.timings.sessionsMs = performance.now() - t0;
      state.ready = true;
      await update();  // the example, decoded and drawn in the page
      state.readyMs = performance.now() - t0;
      root.dataset.state = "ready";
    } catch (error) {
      root.dataset.state = "failed";
      showMessage(`The model could not start in this browser (${error.message || error}).`, true);
    }
  }

  // -- input -> source ids, with the messages a reader needs --------------------------
  // tl.data.normalise_text(text, vocab): lower case; a punctuation mark that is a word of
  // the vocabulary (the dates' ",") split off, one inside its words ("twenty-two") kept,
  // any other dropped ("road," is "road"). tests/test_explorer_browser.py checks they agree.
  function normalise(task, text) {
    const word = task.src.tokenize !== "char";
    let out = "";
    for (const c of text.toLowerCase()) {
      if (!/\p{P}/u.test(c) || task.inside.has(c) || (!word && c in task.stoi)) out += c;
      else if (word && c in task.stoi) out += ` ${c} `;
      else out += word ? " " : "";
    }
    return out;
  }

  function symbols(task, text) {
    return task.src.tokenize === "char" ? Array.from(text) : text.trim().split(/\s+/).filter((s) => s);
  }

  // typing: the last word is still being typed (no space after it, edited moments ago), so
  // an unknown last word is a word in progress, not a mistake.
  function check(task, text, typing = false) {
    const unit = task.src.tokenize === "char" ? "character" : "word";
    const found = symbols(task, text);
    if (found.length === 0) return { problem: `Type ${unit}s for the ${task.name} model.` };
    const unknown = found.filter((s) => !(s in task.stoi) || task.stoi[s] < 4);
    const last = found[found.length - 1];
    if (typing && unit === "word" && unknown.length === 1 && unknown[0] === last && !/\s$/.test(text)) {
      return { typing: last };
    }
    if (unknown.length) {
      return { problem: `Unknown ${unit} “${unknown[0]}”: the ${task.name} model knows only these ` +
                        `${task.src.itos.length - 4} ${unit}s:`, vocabulary: task.src.itos.slice(4) };
    }
    if (found.length > task.maxWords) {
      return { problem: `Too long: at most ${task.maxWords} ${unit}s, this input has ${found.length}.` };
    }
    return { symbols: found, ids: found.map((s) => task.stoi[s]).concat([task.eos]) };
  }

  // -- greedy decoding, one decoder step at a time (the decoder reads the whole prefix) --
  const int64 = (ids) => new ort.Tensor("int64", BigInt64Array.from(ids.map((i) => BigInt(i))), [1, ids.length]);

  async function decode(taskName, text, typing = false) {
    const task = tasks[taskName];
    const checked = check(task, normalise(task, text), typing);
    if (checked.problem || checked.typing) return checked;
    const session = await state.sessions[taskName];
    const t0 = performance.now();
    const src = int64(checked.ids);
    const encoded = await session.encoder.run({ src });
    const maxLen = Math.min(checked.ids.length + 50, task.maxLen);
    const tokens = [task.bos], probabilities = [], logits = [], stepMs = [];
    const vocab = task.tgt.itos.length;
    let decoded = null;
    while (tokens.length < maxLen) {
      const s0 = performance.now();
      decoded = await session.decoder.run({ src, memory: encoded.memory, tgt: int64(tokens) });
      const row = decoded.logits.data.subarray((tokens.length - 1) * vocab, tokens.length * vocab);
      let best = 0;
      for (let v = 1; v < vocab; v++) if (row[v] > row[best]) best = v;
      let sum = 0;
      for (let v = 0; v < vocab; v++) sum += Math.exp(row[v] - row[best]);
      tokens.push(best);
      probabilities.push(1 / sum);
      logits.push(Array.from(row));
      stepMs.push(performance.now() - s0);
      if (best === task.eos) break;
    }
    return { task: taskName, source: checked.ids.map((i) => task.src.itos[i]), tokens, probabilities, logits,
             encoded, decoded, stepMs, totalMs: performance.now() - t0 };
  }

  // -- drawing ---------------------------------------------------------------------------
  function setStatus(text) { $(".tlx-status").textContent = text; }

  function showMessage(text, isError, vocabulary) {
    const box = $(".tlx-message");
    box.replaceChildren(text);
    if (vocabulary) {
      const words = document.createElement("p");
      words.className = "tlx-vocabulary";
      for (const word of vocabulary) {  // one element per word: no line break inside "twenty-two"
        const span = document.createElement("span");
        span.textContent = word;
        words.append(span, " ");
      }
      box.appendChild(words);
    }
    box.classList.toggle("tlx-error", Boolean(isError));
    // the last good answer stays, greyed, under the message: the reader fixes the word
    // without losing what the model said
    root.classList.toggle("tlx-stale", Boolean(text) && state.last !== null);
    root.classList.toggle("tlx-problem", Boolean(text) && state.last === null);
  }

  function shade(weight) {
    const q = data.colors.query.slice(1).match(/../g).map((h) => parseInt(h, 16));
    const w = Math.min(Math.max(weight, 0), 1);
    return "#" + q.map((c) => Math.round(255 + w * (c - 255)).toString(16).padStart(2, "0")).join("").toUpperCase();
  }

  function node(tag, attrs, text) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    if (text !== undefined) el.textContent = text;
    return el;
  }

  function heatmap(weights, rows, columns, maskedFuture) {
    const left = 8 + G.char * Math.max(...rows.map((r) => r.length));
    const top = 8 + G.char * Math.max(...columns.map((c) => c.length));
    const cell = Math.min(G.cellMax, (G.width - left - 70) / columns.length, (G.height - top - 4) / rows.length);
    const svg = node("svg", { class: "tlx-svg", width: G.width, height: G.height, viewBox: `0 0 ${G.width} ${G.height}`,
                              "font-size": G.font, fill: data.colors.ink, role: "img" });
    rows.forEach((label, i) => {
      const y = top + i * cell;
      svg.appendChild(node("text", { x: left - 6, y: y + cell / 2, "text-anchor": "end", "dominant-baseline": "central" }, label));
      columns.forEach((_, j) => {
        const w = weights[i * columns.length + j];
        const rect = node("rect", { x: left + j * cell, y, width: cell, height: cell,
                                    fill: maskedFuture && j > i ? data.colors.mask : shade(w) });
        rect.appendChild(node("title", {}, w.toFixed(3)));
        svg.appendChild(rect);
      });
    });
    columns.forEach((label, j) => {
      svg.appendChild(node("text", { transform: `translate(${left + (j + 0.5) * cell},${top - 6}) rotate(-90)`,
                                     "dominant-baseline": "central" }, label));
    });
    const barX = left + columns.length * cell + 14;
    const defs = node("defs", {});
    const gradient = node("linearGradient", { id: "tlx-bar", x1: 0, y1: 1, x2: 0, y2: 0 });
    gradient.appendChild(node("stop", { offset: 0, "stop-color": "#FFFFFF" }));
    gradient.appendChild(node("stop", { offset: 1, "stop-color": data.colors.query }));
    defs.appendChild(gradient);
    svg.appendChild(defs);
    svg.appendChild(node("rect", { x: barX, y: top, width: G.bar, height: G.barHeight, fill: "url(#tlx-bar)",
                                   stroke: data.colors.ink, "stroke-width": 0.5 }));
    svg.appendChild(node("text", { x: barX + G.bar + 4, y: top + 8, "dominant-baseline": "central" }, "1"));
    svg.appendChild(node("text", { x: barX + G.bar + 4, y: top + G.barHeight - 8, "dominant-baseline": "central" }, "0"));
    return svg;
  }

  function drawMap() {
    const r = state.last;
    if (!r) return;
    const task = tasks[r.task];
    const read = r.tokens.slice(0, -1).map((i) => task.tgt.itos[i]);
    const name = { encoder: "encoder_attention_", decoder_self: "decoder_self_attention_", cross: "cross_attention_" };
    const outputs = state.kind === "encoder" ? r.encoded : r.decoded;
    const tensor = outputs[name[state.kind] + state.layer];
    const [, , rowsN, colsN] = tensor.dims;
    const weights = tensor.data.subarray(state.head * rowsN * colsN, (state.head + 1) * rowsN * colsN);
    const rows = state.kind === "encoder" ? r.source : read;
    const columns = state.kind === "decoder_self" ? read : r.source;
    $(".tlx-heatmap").replaceChildren(heatmap(weights, rows, columns, state.kind === "decoder_self"));
  }

  function drawSteps() {
    const r = state.last, task = tasks[r.task];
    const list = document.createElement("ol");
    list.className = "tlx-steps";
    r.tokens.slice(1).forEach((id, k) => {
      const item = document.createElement("li");
      item.style.animationDelay = `${k * 60}ms`;  // the steps appear in the order they ran
      const token = document.createElement("span");
      token.className = "tlx-token";
      token.textContent = task.tgt.itos[id];
      const p = document.createElement("span");
      p.className = "tlx-p";
      p.textContent = r.probabilities[k].toFixed(2);
      item.append(token, p);
      list.appendChild(item);
    });
    const words = r.tokens.slice(1).filter((id) => id !== task.eos).map((id) => task.tgt.itos[id]);
    const answer = document.createElement("p");
    answer.className = "tlx-answer";
    answer.textContent = words.join(task.tgt.tokenize === "char" ? "" : " ");
    $(".tlx-output").replaceChildren(list, answer);
    drawStatus();
  }

  function drawStatus() {
    const r = state.last, steps = r.stepMs.length;
    setStatus(`ONNX Runtime Web, in this page: ${steps} step${steps === 1 ? "" : "s"} in ${r.totalMs.toFixed(0)} ms`);
  }

  async function update() {
    if (!state.ready) return;
    if (state.running) { state.pending = true; return; }
    state.running = true;
    try {
      do {
        state.pending = false;
        const result = await decode(state.task, $(".tlx-input").value, !state.settled);
        state.typing = result.typing || null;
        // keep the last answer in place, greyed (it is the answer for the words before the
        // one being typed), with a quiet note instead of a message
        root.classList.toggle("tlx-typing", Boolean(result.typing) && state.last !== null);
        if (result.typing) {
          showMessage("");
          // the kept answer is the last complete input's: name it (its last words)
          const kept = state.last ? state.last.source.slice(0, -1) : [];
          setStatus(`typing “${result.typing}”…` + (kept.length ? `: shown, the answer for “${kept.length > 4 ? "… " : ""}` +
                    `${kept.slice(-4).join(tasks[state.last.task].src.tokenize === "char" ? "" : " ")}”` : ""));
          continue;
        }
        if (result.problem) { showMessage(result.problem, true, result.vocabulary); continue; }
        showMessage("");
        const same = state.last && state.last.task === result.task && String(state.last.source) === String(result.source);
        state.last = result;
        if (same) { drawStatus(); continue; }  // "the cat " after "the cat": nothing new to draw
        drawSteps();
        drawMap();
      } while (state.pending);
    } catch (error) {
      showMessage(`Decoding failed: ${error.message || error}`, true);
    } finally {
      state.running = false;
    }
  }

  function fillSelect(select, count, chosen) {
    select.replaceChildren(...Array.from({ length: count }, (_, i) => new Option(String(i), String(i), false, i === chosen)));
  }

  function chooseTask(name) {
    state.task = name;
    const task = tasks[name];
    root.querySelectorAll(".tlx-task").forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.task === name)));
    state.layer = Math.min(state.layer, task.layers - 1);
    state.head = Math.min(state.head, task.heads - 1);
    fillSelect($(".tlx-layer"), task.layers, state.layer);
    fillSelect($(".tlx-head"), task.heads, state.head);
    $(".tlx-input").value = task.example;
    $(".tlx-guide-task").textContent = task.guide;
    state.settled = true;
    update();
  }

  let settle = null;
  function edited() {
    state.settled = false;
    clearTimeout(settle);
    settle = setTimeout(() => { state.settled = true; if (state.typing) update(); }, SETTLE_MS);
    update();
  }

  function listen() {
    root.querySelectorAll(".tlx-task").forEach((b) => b.addEventListener("click", () => chooseTask(b.dataset.task)));
    $(".tlx-input").addEventListener("input", edited);
    $(".tlx-kind").addEventListener("change", (e) => { state.kind = e.target.value; drawMap(); });
    $(".tlx-layer").addEventListener("change", (e) => { state.layer = Number(e.target.value); drawMap(); });
    $(".tlx-head").addEventListener("change", (e) => { state.head = Number(e.target.value); drawMap(); });
  }

  if (document.readyState === "complete") hook(); else window.addEventListener("load", hook);
})();
