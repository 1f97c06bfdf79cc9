"""The explorer slide: the deck's trained models run in the page, offline.

    html = explorer_html([ExplorerTask("pronoun", pronoun.model, pronoun.src_vocab, pronoun.tgt_vocab,
                                       example="the cat did not cross the road because it was too tired"),
                          ExplorerTask("dates", ...)])
    html    # an IPython HTML object: a cell that ends with it shows the explorer

Each model is exported to ONNX (:func:`transformer_lab.export.to_onnx`: the encoder and
one decoder step, every layer's attention weights as outputs) and embedded in the HTML
with its vocabularies, beside ONNX Runtime Web (npm ``onnxruntime-web``, wasm backend).
``explorer.js`` (next to this file) starts the runtime when the slide is first shown,
decodes greedily what the reader types (one step at a time, as Section 6.1's decoder
does with beam size 1) and draws any head of the encoder self-attention, the decoder
self-attention or the cross-attention as a heatmap.

From ``file://`` nothing may be fetched, so the runtime comes in pieces the page
assembles: the runtime's script as text, its WebAssembly binary gzipped and base64-encoded
(inflated with ``DecompressionStream``), its glue module as a Blob URL, one thread and no
worker proxy. The markup is filled with the first task's example as PyTorch decodes it:
that is the still image a PDF shows (with a note), and what the page shows until the
runtime is ready.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import html
import json
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from .. import checks
from ..data import BOS_ID, EOS_ID, Vocabulary
from ..decoding import greedy_decode
from ..export import to_onnx_bytes
from ..model import Transformer
from ..recording import record_attention
from .style import PALETTE

HERE = Path(__file__).parent
MAX_WORDS = 20  # longest input, in source symbols (<eos> not counted)
KINDS = {"encoder": "encoder self-attention", "decoder_self": "decoder self-attention",
         "cross": "cross-attention"}
#: The one-line guide above the answer for the deck's two tasks (ExplorerTask.guide).
GUIDES = {"pronoun": "Type a sentence with “it”: the answer is the model's guess at the noun “it” refers to. "
                     "Try “wide” for “tired”.",
          "dates": "Type a date in words, such as “march third, nineteen ninety-nine”: the answer is that date as "
                   "year-month-day."}
#: Under every task's guide: how to read the controls and the numbers.
READING = ("Each row of the map reads the columns; layers and heads count from 0. On inputs like the training "
           "data, probabilities are a little above 0.9, not near 1: label smoothing (ε = 0.1, Section 5.4) trains "
           "toward 0.9 + 0.1/V for V output tokens, with dropout, which is off here.")
#: The payload's ``<script>`` elements (inert data, about 8 MB) carry this attribute: our
#: renderer moves them after reveal.js's start-up script, so that the browser parses them
#: after the deck is ready (opening the deck waits for nothing of the explorer). Quarto
#: leaves them in the slide; ``explorer.js`` finds them by ``data-tlx-key`` wherever they are.
AFTER_BODY = "data-deckbuild-after-body"
RUNTIME_DIR = Path("onnxruntime-web") / "dist"
RUNTIME_FILES = {"script": "ort.wasm.min.js", "glue": "ort-wasm-simd-threaded.mjs",
                 "wasm": "ort-wasm-simd-threaded.wasm"}


@dataclass(frozen=True)
class ExplorerTask:
    """One trained model on the explorer's task switch; ``example`` is the input shown
    first; ``guide`` the line that says what to type and what the answer means (``None``:
    :data:`GUIDES`' line for ``name``, else none)."""

    name: str
    model: Transformer
    src_vocab: Vocabulary
    tgt_vocab: Vocabulary
    example: str
    guide: str | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"name must be a short identifier such as 'dates', got {self.name!r}")
        if not isinstance(self.model, Transformer):
            raise TypeError(f"model must be a transformer_lab.Transformer, got {type(self.model).__name__}")
        for name in ("src_vocab", "tgt_vocab"):
            if not isinstance(getattr(self, name), Vocabulary):
                raise TypeError(f"{name} must be a Vocabulary, got {type(getattr(self, name)).__name__}")
        if self.guide is not None and not isinstance(self.guide, str):
            raise TypeError(f"guide must be a str or None, got {type(self.guide).__name__}")
        source_ids(self.src_vocab, self.example)  # raises on an unknown word or a long input

    @property
    def guide_text(self) -> str:
        return GUIDES.get(self.name, "") if self.guide is None else self.guide


def source_ids(src_vocab: Vocabulary, text: str) -> list[int]:
    """``text``'s ids with ``<eos>``, as the page computes them: every symbol must be in the
    vocabulary and there must be 1 to ``MAX_WORDS`` of them."""
    symbols = src_vocab.tokens(text)
    unknown = [s for s in symbols if s not in src_vocab.stoi]
    if unknown:
        raise ValueError(f"text must use the model's source vocabulary, got unknown symbol(s) {unknown}")
    if not 1 <= len(symbols) <= MAX_WORDS:
        raise ValueError(f"text must hold 1 to {MAX_WORDS} symbols, got {len(symbols)}")
    return src_vocab.encode(text)


@dataclass(frozen=True)
class Decoded:
    """Greedy decoding of one input with everything the slide shows: the source symbols
    (S,), the tokens the decoder read (T,: ``<bos>`` and the outputs before the last),
    the outputs (T,) with their probabilities, and the attention weights of every layer:
    ``encoder`` (L, H, S, S), ``decoder_self`` (L, H, T, T), ``cross`` (L, H, T, S)."""

    source: list[str]
    read: list[str]
    output: list[str]
    probabilities: list[float]
    attention: dict[str, torch.Tensor]


@torch.no_grad()
def decode(task: ExplorerTask, text: str) -> Decoded:
    """What the explorer computes for ``text``, with PyTorch: greedy decoding, then the
    weights of the last step (the decoder reads the whole prefix, as in the page)."""
    model = task.model.eval()
    src = torch.tensor([source_ids(task.src_vocab, text)])  # (1, S)
    max_len = min(src.size(1) + 50, model.config.max_len)  # Section 6.1: input length + 50
    tokens = greedy_decode(model, src, max_len, BOS_ID, EOS_ID)[0]  # (L,)
    read = tokens[:-1][None]  # (1, T): the last step's input
    with record_attention(model) as record:
        memory = model.encode(src)
        logits = model.decode(read, memory, model.src_mask(src))  # (1, T, V)
    probabilities = logits[0].softmax(-1).gather(1, tokens[1:, None])[:, 0]  # (T,)
    weights = {kind: torch.stack(getattr(record, kind))[:, 0] for kind in KINDS}  # (L, H, ., .)
    return Decoded([task.src_vocab.itos[i] for i in src[0]], [task.tgt_vocab.itos[i] for i in read[0]],
                   [task.tgt_vocab.itos[i] for i in tokens[1:]], probabilities.tolist(), weights)


def packed(data: bytes) -> str:
    """``data`` gzipped and base64-encoded, as the page inflates it."""
    return base64.b64encode(gzip.compress(data, compresslevel=9, mtime=0)).decode("ascii")


def node_modules() -> Path:
    """The ``node_modules`` holding ``onnxruntime-web``: ``DECKBUILD_NODE_MODULES``, else the
    nearest one above the working directory (cells run in slides/), else the checkout's."""
    candidates = [Path(os.environ["DECKBUILD_NODE_MODULES"])] if os.environ.get("DECKBUILD_NODE_MODULES") else []
    candidates += [p / "node_modules" for p in (Path.cwd(), *Path.cwd().parents)]
    candidates.append(HERE.parents[2] / "node_modules")
    for path in candidates:
        if (path / RUNTIME_DIR / RUNTIME_FILES["wasm"]).is_file():
            return path
    raise FileNotFoundError(f"onnxruntime-web not found in node_modules (looked in {[str(p) for p in candidates]}): "
                            f"run `npm ci` (or `make deck-setup`) in the project")


@functools.lru_cache(maxsize=2)
def runtime_pieces(modules: Path) -> dict[str, str]:
    """ONNX Runtime Web's script (text, its source-map comment removed), glue module and
    WebAssembly binary (both packed) from ``modules``."""
    dist = modules / RUNTIME_DIR
    script = (dist / RUNTIME_FILES["script"]).read_text(encoding="utf-8")
    script = "\n".join(line for line in script.splitlines() if not line.startswith("//# sourceMappingURL"))
    return {"script": script, "glue": packed((dist / RUNTIME_FILES["glue"]).read_bytes()),
            "wasm": packed((dist / RUNTIME_FILES["wasm"]).read_bytes())}


def task_data(task: ExplorerTask) -> dict:
    """What the page needs of one task: both graphs (packed), vocabularies and sizes."""
    encoder, decoder = to_onnx_bytes(task.model)
    config = task.model.config
    return {"name": task.name, "example": task.example, "guide": task.guide_text,
            "encoder": packed(encoder), "decoder": packed(decoder),
            "src": task.src_vocab.to_dict(), "tgt": task.tgt_vocab.to_dict(), "layers": config.num_layers,
            "heads": config.num_heads, "maxWords": MAX_WORDS, "maxLen": config.max_len,
            "bos": BOS_ID, "eos": EOS_ID, "pad": config.pad_id}


def _script_json(value) -> str:
    """JSON that cannot end the ``<script>`` element holding it."""
    return json.dumps(value, separators=(",", ":")).replace("</", "<\\/")


def resource(name: str) -> str:
    return (HERE / name).read_text(encoding="utf-8")


def explorer_html(tasks: list[ExplorerTask], kind: str = "encoder", layer: int = -1, head: int = 0):
    """The explorer as an ``IPython.display.HTML`` object (see the module docstring). The
    still image shows ``tasks[0]``'s example and head ``head`` of ``layer`` of ``kind``."""
    from IPython.display import HTML

    if not isinstance(tasks, (list, tuple)) or not tasks or not all(isinstance(t, ExplorerTask) for t in tasks):
        raise TypeError(f"tasks must be a non-empty list of ExplorerTask, got {tasks!r:.80}")
    if len({t.name for t in tasks}) != len(tasks):
        raise ValueError(f"tasks must have distinct names, got {[t.name for t in tasks]}")
    checks.one_of("kind", kind, tuple(KINDS))
    first = tasks[0].model.config
    layer = checks.index("layer", layer % first.num_layers if isinstance(layer, int) and layer < 0 else layer,
                         first.num_layers)
    head = checks.index("head", head, first.num_heads)
    pieces = runtime_pieces(node_modules())
    data = {"tasks": [task_data(t) for t in tasks], "colors": {"query": PALETTE["query"], "mask": PALETTE["mask"],
                                                              "ink": PALETTE["ink"]},
            "kinds": KINDS, "start": {"kind": kind, "layer": layer, "head": head}}
    still = decode(tasks[0], tasks[0].example)
    colors = "".join(f"--tlx-{k}: {PALETTE[k]}; " for k in ("query", "mask", "ink"))
    payload = {"data": ("application/json", _script_json(data)), "runtime": ("text/plain", pieces["script"]),
               "glue": ("application/octet-stream", pieces["glue"]), "wasm": ("application/octet-stream", pieces["wasm"])}
    key = hashlib.sha256("".join(text for _, text in payload.values()).encode()).hexdigest()[:12]
    parts = [f"<style>.reveal .tl-explorer {{ {colors}}}\n{resource('explorer.css')}</style>", markup(tasks, still, kind, layer, head),
             *(f'<script type="{kind_}" class="tlx-{name}" data-tlx-key="{key}" {AFTER_BODY}>{text}</script>'
               for name, (kind_, text) in payload.items()),
             f"<script>{resource('explorer.js')}</script>"]
    return HTML(f'<div class="tl-explorer" data-tlx-key="{key}">' + "\n".join(parts) + "</div>")


def markup(tasks: list[ExplorerTask], still: Decoded, kind: str, layer: int, head: int) -> str:
    """The explorer's elements, filled with ``still`` (the first task's example)."""
    e = html.escape
    buttons = "".join(f'<button type="button" class="tlx-task" data-task="{e(t.name)}" aria-pressed='
                      f'"{str(i == 0).lower()}">{e(t.name)}</button>' for i, t in enumerate(tasks))
    options = lambda n, chosen: "".join(f'<option value="{i}"{" selected" * (i == chosen)}>{i}</option>'
                                        for i in range(n))
    kinds = "".join(f'<option value="{k}"{" selected" * (k == kind)}>{e(v)}</option>' for k, v in KINDS.items())
    config = tasks[0].model.config
    return f"""<div class="tlx-top">
<div class="tlx-tasks" role="group" aria-label="task">{buttons}</div>
<input class="tlx-input" type="text" value="{e(tasks[0].example)}" spellcheck="false" autocomplete="off"
 aria-label="input for the model">
</div>
<div class="tlx-controls">
<p class="tlx-guide"><span class="tlx-guide-task">{e(tasks[0].guide_text)}</span> {e(READING)}</p>
<div class="tlx-message" role="status"></div>
<div class="tlx-output">{steps_markup(still, tasks[0].tgt_vocab)}</div>
<p class="tlx-status">PyTorch, at build time</p>
</div>
<div class="tlx-map">
<div class="tlx-pick"><select class="tlx-kind" aria-label="attention">{kinds}</select>
<label>layer <select class="tlx-layer">{options(config.num_layers, layer)}</select></label>
<label>head <select class="tlx-head">{options(config.num_heads, head)}</select></label></div>
<div class="tlx-heatmap">{heatmap_svg(still, kind, layer, head)}</div>
</div>
<p class="tlx-print-note">A still of the explorer on its first example: open the HTML deck to type your own.</p>"""


def steps_markup(decoded: Decoded, tgt_vocab: Vocabulary) -> str:
    """The decoded tokens, one per step, with the probability the model gave each."""
    shown = [(t, p) for t, p in zip(decoded.output, decoded.probabilities)]
    chips = "".join(f'<li><span class="tlx-token">{html.escape(t)}</span><span class="tlx-p">{p:.2f}</span></li>'
                    for t, p in shown)
    words = [t for t in decoded.output if t != tgt_vocab.itos[EOS_ID]]
    return f'<ol class="tlx-steps">{chips}</ol><p class="tlx-answer">{html.escape(tgt_vocab.join(words))}</p>'


def heatmap_svg(decoded: Decoded, kind: str, layer: int, head: int) -> str:
    """One head's weights as an SVG heatmap, laid out as ``explorer.js`` draws it."""
    weights = decoded.attention[kind][layer, head].tolist()  # (rows, columns)
    rows = decoded.source if kind == "encoder" else decoded.read
    columns = decoded.read if kind == "decoder_self" else decoded.source
    return render_heatmap(weights, rows, columns, masked_future=kind == "decoder_self")


GEOMETRY = dict(width=560, height=450, font=21, char=12.0, cell_max=48, bar=16, bar_height=200)


def render_heatmap(weights: list[list[float]], rows: list[str], columns: list[str], masked_future: bool) -> str:
    """rows x columns weights in [0, 1]: white to the query colour; masked cells (a key
    after the query, in decoder self-attention) in the mask colour; a colour bar 0 to 1."""
    g, e = GEOMETRY, html.escape
    left = 8 + g["char"] * max(map(len, rows))
    top = 8 + g["char"] * max(map(len, columns))
    cell = min(g["cell_max"], (g["width"] - left - 70) / len(columns), (g["height"] - top - 4) / len(rows))
    out = [f'<svg class="tlx-svg" width="{g["width"]}" height="{g["height"]}" viewBox="0 0 {g["width"]} '
           f'{g["height"]}" font-size="{g["font"]}" fill="{PALETTE["ink"]}" role="img">']
    for i, row in enumerate(weights):
        y = top + i * cell
        out.append(f'<text x="{left - 6:.1f}" y="{y + cell / 2:.1f}" text-anchor="end" '
                   f'dominant-baseline="central">{e(rows[i])}</text>')
        for j, w in enumerate(row):
            color = PALETTE["mask"] if masked_future and j > i else _shade(w)
            out.append(f'<rect x="{left + j * cell:.1f}" y="{y:.1f}" width="{cell:.1f}" height="{cell:.1f}" '
                       f'fill="{color}"><title>{w:.3f}</title></rect>')
    for j, column in enumerate(columns):
        x = left + (j + 0.5) * cell
        out.append(f'<text transform="translate({x:.1f},{top - 6:.1f}) rotate(-90)" '
                   f'dominant-baseline="central">{e(column)}</text>')
    bar_x, bar_h = left + len(columns) * cell + 14, g["bar_height"]
    out.append(f'<defs><linearGradient id="tlx-bar" x1="0" y1="1" x2="0" y2="0"><stop offset="0" '
               f'stop-color="#FFFFFF"/><stop offset="1" stop-color="{PALETTE["query"]}"/></linearGradient></defs>'
               f'<rect x="{bar_x:.1f}" y="{top:.1f}" width="{g["bar"]}" height="{bar_h}" fill="url(#tlx-bar)" '
               f'stroke="{PALETTE["ink"]}" stroke-width="0.5"/>'
               f'<text x="{bar_x + g["bar"] + 4:.1f}" y="{top + 8:.1f}" dominant-baseline="central">1</text>'
               f'<text x="{bar_x + g["bar"] + 4:.1f}" y="{top + bar_h - 8:.1f}" dominant-baseline="central">0</text>')
    out.append("</svg>")
    return "".join(out)


def _shade(weight: float) -> str:
    """White (0) to the query colour (1), linearly in RGB."""
    query = PALETTE["query"].lstrip("#")
    target = [int(query[k:k + 2], 16) for k in (0, 2, 4)]
    w = min(max(weight, 0.0), 1.0)
    return "#" + "".join(f"{round(255 + w * (c - 255)):02X}" for c in target)
