"""Every known mistake, written into a learner's own answer (not the package's code), is
diagnosed by name, one test per mistake; the answers themselves pass."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # the grader lives in exercises/, beside the package

from exercises.grader import EXERCISES, PASSED, WRONG, exercise, grade  # noqa: E402

# A learner's answers, written apart from the package in the styles the exercises invite
# (-inf and nan_to_num, scatter_add, a Python loop over examples): each passes as written,
# and each known mistake below is an edit of them.
SOLUTIONS = {
    1: '''
import math
import torch


def attention_weights(query, key, mask=None, *, bias=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if bias is not None:
        scores = scores + bias
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights * mask
    return weights


def scaled_dot_product_attention(query, key, value, mask=None, dropout_p=0.0, *, bias=None, on_weights=None):
    weights = attention_weights(query, key, mask, bias=bias)
    if on_weights is not None:
        on_weights(weights)
    weights = torch.nn.functional.dropout(weights, dropout_p)
    return weights @ value
''',
    2: '''
import torch


def causal_mask(size, device=None):
    i = torch.arange(size, device=device)
    return i[None, :] <= i[:, None]


def padding_mask(tokens, pad_id):
    return (tokens != pad_id).unsqueeze(1).unsqueeze(2)
''',
    3: '''
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_k=None, d_v=None, dropout=0.0, bias=True):
        super().__init__()
        self.d_model, self.num_heads = d_model, num_heads

    def split_heads(self, x, head_dim):
        B, L, _ = x.shape
        return x.reshape(B, L, self.num_heads, head_dim).permute(0, 2, 1, 3)

    def merge_heads(self, x):
        B, H, T, Kv = x.shape
        return x.permute(0, 2, 1, 3).contiguous().view(B, T, H * Kv)
''',
    4: '''
import math
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_k=None, d_v=None, dropout=0.0, bias=True):
        super().__init__()
        self.h = num_heads
        self.d_k = d_k or d_model // num_heads
        self.d_v = d_v or d_model // num_heads
        self.w_q = nn.Linear(d_model, num_heads * self.d_k, bias=bias)
        self.w_k = nn.Linear(d_model, num_heads * self.d_k, bias=bias)
        self.w_v = nn.Linear(d_model, num_heads * self.d_v, bias=bias)
        self.w_o = nn.Linear(num_heads * self.d_v, d_model, bias=bias)
        self.drop = nn.Dropout(dropout)

    def split_heads(self, x, head_dim):
        B, L, _ = x.shape
        return x.view(B, L, self.h, head_dim).transpose(1, 2)

    def merge_heads(self, x):
        B, H, T, Kv = x.shape
        return x.transpose(1, 2).reshape(B, T, H * Kv)

    def forward(self, query, key, value, mask=None, cache=None):
        q = self.split_heads(self.w_q(query), self.d_k)
        k = self.split_heads(self.w_k(key), self.d_k)
        v = self.split_heads(self.w_v(value), self.d_v)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.d_k)
        if mask is not None:
            s = s.masked_fill(~mask, -1e9)
        w = self.drop(s.softmax(-1))
        return self.w_o(self.merge_heads(w @ v))
''',
    5: '''
import math
from torch import nn


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size, d_model, padding_idx=None):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)
        self.d_model = d_model

    def forward(self, tokens, name="tokens"):
        return self.embedding(tokens) * math.sqrt(self.d_model)
''',
    6: '''
import torch


def sinusoidal_positional_encoding(length, d_model, *, dtype=torch.float32, device=None):
    position = torch.arange(length, dtype=dtype, device=device).unsqueeze(1)
    div = torch.pow(10000.0, torch.arange(0, d_model, 2, dtype=dtype, device=device) / d_model)
    pe = torch.zeros(length, d_model, dtype=dtype, device=device)
    pe[:, 0::2] = torch.sin(position / div)
    pe[:, 1::2] = torch.cos(position / div)
    return pe


class PositionalEncoding(torch.nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.d_model, self.max_len = d_model, max_len
        self.dropout = torch.nn.Dropout(dropout)
        self.register_buffer("table", sinusoidal_positional_encoding(max_len, d_model), persistent=False)

    def forward(self, x, offset=0):
        pe = self.table[offset : offset + x.size(1)]
        return self.dropout(x + pe.to(x.dtype))
''',
    7: '''
import torch
from torch import nn


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.w_1, self.w_2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.w_2(self.dropout(torch.relu(self.w_1(x))))
''',
    8: '''
from torch import nn


class _Layer(nn.Module):
    def __init__(self, d_model, dropout, norm_first, layer_norm_eps):
        super().__init__()
        self.norm_first = norm_first
        self.dropout = nn.Dropout(dropout)

    def sublayer_input(self, x, norm):
        return norm(x) if self.norm_first else x

    def residual(self, x, sublayer_output, norm):
        y = x + self.dropout(sublayer_output)
        return y if self.norm_first else norm(y)
''',
    9: '''
from torch import nn

from transformer_lab import LayerConfig


class EncoderLayer(nn.Module):
    def __init__(self, d_model, self_attn, feed_forward, dropout=0.1, *, norm_first=False, layer_norm_eps=1e-5):
        super().__init__()
        self.self_attn, self.feed_forward = self_attn, feed_forward
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x, src_mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.dropout(self.self_attn(h, h, h, mask=src_mask))
            return x + self.dropout(self.feed_forward(self.norm2(x)))
        x = self.norm1(x + self.dropout(self.self_attn(x, x, x, mask=src_mask)))
        return self.norm2(x + self.dropout(self.feed_forward(x)))


class Encoder(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, dropout=0.1, **options):
        super().__init__()
        c = LayerConfig(d_model, num_heads, d_ff, dropout, **options)
        self.layers = nn.ModuleList(
            EncoderLayer(c.d_model, c.self_attention(c), c.feed_forward(c), c.dropout, norm_first=c.norm_first,
                         layer_norm_eps=c.layer_norm_eps) for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model, eps=c.layer_norm_eps) if c.norm_first else None

    def forward(self, x, src_mask=None):
        for layer in self.layers:
            x = layer(x, src_mask)
        return x if self.norm is None else self.norm(x)
''',
    10: '''
from torch import nn


class DecoderLayer(nn.Module):
    def __init__(self, d_model, self_attn, cross_attn, feed_forward, dropout=0.1, *, norm_first=False,
                 layer_norm_eps=1e-5):
        super().__init__()
        self.self_attn, self.cross_attn, self.feed_forward = self_attn, cross_attn, feed_forward
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model, eps=layer_norm_eps) for _ in range(3))
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def _sub(self, x, norm, f):
        if self.norm_first:
            return x + self.dropout(f(norm(x)))
        return norm(x + self.dropout(f(x)))

    def forward(self, x, memory, src_mask=None, tgt_mask=None, cache=None):
        sc, cc = cache if cache is not None else (None, None)
        x = self._sub(x, self.norm1, lambda h: self.self_attn(h, h, h, mask=tgt_mask, cache=sc))
        x = self._sub(x, self.norm2, lambda h: self.cross_attn(h, memory, memory, mask=src_mask, cache=cc))
        return self._sub(x, self.norm3, self.feed_forward)
''',
    11: '''
import torch


def noam_learning_rate(step, d_model, warmup_steps=4000, factor=1.0):
    if step == 0:
        return 0.0
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)


class WarmupSchedule(torch.optim.lr_scheduler.LRScheduler):
    def __init__(self, optimizer, d_model, warmup_steps=4000, factor=1.0, last_epoch=-1):
        self.d_model, self.warmup_steps, self.factor = d_model, warmup_steps, factor
        super().__init__(optimizer, last_epoch)

    def rate(self, update):
        return noam_learning_rate(update, self.d_model, self.warmup_steps, self.factor)

    def get_lr(self):
        return [base * self.rate(self.last_epoch + 1) for base in self.base_lrs]
''',
    12: '''
import torch
from torch import nn


class LabelSmoothingLoss(nn.Module):
    def __init__(self, smoothing=0.1, ignore_index=0):
        super().__init__()
        self.smoothing, self.ignore_index = smoothing, ignore_index

    def forward(self, logits, target):
        V = logits.size(-1)
        logp = logits.log_softmax(-1)
        q = torch.full_like(logp, self.smoothing / V)
        q = q.scatter_add(-1, target.unsqueeze(-1), torch.full_like(logp[..., :1], 1 - self.smoothing))
        loss = -(q * logp).sum(-1)
        keep = target != self.ignore_index
        return loss[keep].mean()
''',
    13: '''
from dataclasses import dataclass

import torch


@dataclass
class KVCache:
    k: object = None
    v: object = None
    static: bool = False

    @property
    def length(self):
        return 0 if self.k is None else self.k.size(-2)

    @property
    def filled(self):
        return self.static and self.k is not None

    def update(self, k, v):
        if self.k is not None and not self.static:
            k = torch.cat((self.k, k), dim=-2)
            v = torch.cat((self.v, v), dim=-2)
        self.k, self.v = k, v
        return k, v

    def reorder(self, index):
        if self.k is not None:
            self.k, self.v = self.k.index_select(0, index), self.v.index_select(0, index)


@torch.no_grad()
def greedy_decode(model, src, max_len, bos_id, eos_id, use_cache=True, src_mask=None):
    if src_mask is None:
        src_mask = model.src_mask(src)
    memory = model.encode(src, src_mask)
    out = torch.full((src.size(0), 1), bos_id, dtype=torch.long)
    done = torch.zeros(src.size(0), dtype=torch.bool)
    cache = model.new_cache() if use_cache else None
    for _ in range(max_len - 1):
        inp = out[:, -1:] if use_cache else out
        nxt = model.decode(inp, memory, src_mask, cache=cache)[:, -1].argmax(-1)
        nxt[done] = model.config.pad_id
        out = torch.cat([out, nxt[:, None]], 1)
        done = done | (nxt == eos_id)
        if done.all():
            break
    return out
''',
    14: '''
import math

import torch


def gnmt_length_penalty(length, alpha):
    return ((5 + length) / 6) ** alpha


def _finish(finished, seqs, b, k, step, top, beam, tok, eos_id, last, alpha):
    for r in range(k):
        if top[b, r] == -math.inf or not (last or tok[b, r] == eos_id):
            continue
        hypothesis = torch.cat([seqs[b * k + beam[b, r]], tok[b, r].view(1)])
        finished[b].append((top[b, r].item() / gnmt_length_penalty(step, alpha), hypothesis))


def _no_better(hyps, k, top, tok, eos_id, step, alpha):
    if len(hyps) < k:
        return False
    live = [top[r].item() for r in range(len(top)) if tok[r] != eos_id]
    if not live or live[0] == -math.inf:
        return True
    kth = sorted((score for score, _ in hyps), reverse=True)[k - 1]
    return kth >= live[0] / gnmt_length_penalty(step, alpha)


@torch.no_grad()
def beam_search(model, src, beam_size, max_len, bos_id, eos_id, length_penalty=0.6, src_mask=None):
    B, k = src.size(0), beam_size
    if max_len == 1:
        return torch.full((B, 1), bos_id, dtype=torch.long)
    if src_mask is None:
        src_mask = model.src_mask(src)
    memory = model.encode(src, src_mask).repeat_interleave(k, 0)
    src_mask = src_mask.repeat_interleave(k, 0)
    cache = model.new_cache()
    seqs = torch.full((B * k, 1), bos_id, dtype=torch.long)
    scores = torch.full((B, k), -math.inf)
    scores[:, 0] = 0
    finished, done = [[] for _ in range(B)], [False] * B
    for step in range(1, max_len):
        logp = model.decode(seqs[:, -1:], memory, src_mask, cache=cache)[:, -1].log_softmax(-1)
        V = logp.size(-1)
        cand = (scores.view(-1, 1) + logp).view(B, k * V)
        top, idx = cand.topk(2 * k, dim=-1)
        beam, tok = idx // V, idx % V
        last = step == max_len - 1
        rows, tokens, kept = [], [], []
        for b in range(B):
            if not done[b]:
                _finish(finished, seqs, b, k, step, top, beam, tok, eos_id, last, length_penalty)
                done[b] = last or _no_better(finished[b], k, top[b], tok[b], eos_id, step, length_penalty)
            keep = [r for r in range(2 * k) if tok[b, r] != eos_id][:k]
            rows += [b * k + int(beam[b, r]) for r in keep]
            tokens += [int(tok[b, r]) for r in keep]
            kept.append(top[b, keep])
        if all(done):
            break
        rows = torch.tensor(rows)
        seqs = torch.cat([seqs[rows], torch.tensor(tokens)[:, None]], 1)
        scores = torch.stack(kept)
        cache.reorder(rows)
    best = [max(hyps, key=lambda h: h[0])[1] for hyps in finished]
    out = torch.full((B, max(len(h) for h in best)), model.config.pad_id, dtype=torch.long)
    for b, hypothesis in enumerate(best):
        out[b, : len(hypothesis)] = hypothesis
    return out
''',
    15: '''
import math

import torch
from torch import nn

import transformer_lab as tl


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def turn(self, x, offset):
        pos = torch.arange(offset, offset + x.size(-2), dtype=torch.float32)
        angle = torch.outer(pos, self.inv_freq)
        angle = torch.cat((angle, angle), dim=-1)
        return x * angle.cos() + rotate_half(x) * angle.sin()

    def forward(self, q, k, offset=0):
        return self.turn(q, offset), self.turn(k, offset)


class RotaryMultiHeadAttention(tl.MultiHeadAttention):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__(d_model, num_heads, dropout=dropout)
        self.rotary = RotaryEmbedding(self.d_k)

    def forward(self, query, key, value, mask=None, cache=None):
        offset = 0 if cache is None else cache.length
        q = self.split_heads(self.w_q(query), self.d_k)
        k = self.split_heads(self.w_k(key), self.d_k)
        v = self.split_heads(self.w_v(value), self.d_v)
        q, k = self.rotary(q, k, offset)
        if cache is not None:
            k, v = cache.update(k, v)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
        w = torch.nn.functional.dropout(s.softmax(-1), self.dropout, self.training)
        return self.w_o(self.merge_heads(w @ v))
''',
    16: '''
import torch
from torch import nn

import transformer_lab as tl


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0, *, d_k=None, d_v=None, bias=True,
                 positions=None, rotary_base=10000.0):
        super().__init__()
        if positions is not None:
            raise ValueError("positions must be None")
        self.h, self.g = num_heads, num_kv_heads
        self.d_k = d_k or d_model // num_heads
        self.d_v = d_v or d_model // num_heads
        self.dropout = dropout
        self.w_q = nn.Linear(d_model, num_heads * self.d_k, bias=bias)
        self.w_k = nn.Linear(d_model, num_kv_heads * self.d_k, bias=bias)
        self.w_v = nn.Linear(d_model, num_kv_heads * self.d_v, bias=bias)
        self.w_o = nn.Linear(num_heads * self.d_v, d_model, bias=bias)

    def split_heads(self, x, n, d):
        return x.view(x.size(0), x.size(1), n, d).transpose(1, 2)

    def forward(self, query, key, value, mask=None, cache=None):
        q = self.split_heads(self.w_q(query), self.h, self.d_k)
        if cache is not None and cache.filled:
            k, v = cache.k, cache.v
        else:
            k = self.split_heads(self.w_k(key), self.g, self.d_k)
            v = self.split_heads(self.w_v(value), self.g, self.d_v)
            if cache is not None:
                k, v = cache.update(k, v)
        k = k.repeat_interleave(self.h // self.g, dim=1)
        v = v.repeat_interleave(self.h // self.g, dim=1)
        p = self.dropout if self.training else 0.0
        out = tl.scaled_dot_product_attention(q, k, v, mask, p)
        B, H, T, Kv = out.shape
        return self.w_o(out.transpose(1, 2).reshape(B, T, H * Kv))
''',
}

ALL = "all"  # an edit that replaces every occurrence

# (exercise, mistake name): the edits of the learner's answer that make that mistake.
EDITS = {
    (1, "mask after the softmax"): [("scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)", "pass")],
    (1, "divided by d_k"): [("/ math.sqrt(query.size(-1))", "/ query.size(-1)")],
    (1, "not scaled"): [(" / math.sqrt(query.size(-1))", "")],
    (1, "softmax over the queries"): [("torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=-2)")],
    (1, "mask inverted"): [("masked_fill(~mask,", "masked_fill(mask,"), ("weights * mask", "weights * ~mask")],
    (1, "masked with -inf"): [("torch.finfo(scores.dtype).min", "float('-inf')")],
    (1, "empty row uniform"): [("    if mask is not None:\n        weights = weights * mask\n", "")],
    (1, "on_weights not called"): [("    if on_weights is not None:\n        on_weights(weights)\n", "")],
    (1, "empty row averages the values"): [(
        "weights = attention_weights(query, key, mask, bias=bias)",
        "s = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))\n"
        "    weights = (s if mask is None else s.masked_fill(~mask, -1e9)).softmax(-1)")],
    (2, "diagonal excluded"): [("i[None, :] <= i[:, None]", "i[None, :] < i[:, None]")],
    (2, "sees the next token"): [("i[None, :] <= i[:, None]", "i[None, :] <= i[:, None] + 1")],
    (2, "causal mask inverted"): [("i[None, :] <= i[:, None]", "i[None, :] > i[:, None]")],
    (2, "float mask"): [("return i[None, :] <= i[:, None]", "return (i[None, :] <= i[:, None]).float()")],
    (2, "padding mask inverted"): [("tokens != pad_id", "tokens == pad_id")],
    (2, "padding mask of shape (B, S)"): [(".unsqueeze(1).unsqueeze(2)", "")],
    (2, "padding mask hides queries"): [(".unsqueeze(1).unsqueeze(2)", ".unsqueeze(1).unsqueeze(3)")],
    (3, "heads on the sequence axis"): [("x.reshape(B, L, self.num_heads, head_dim).permute(0, 2, 1, 3)",
                                         "x.reshape(B, self.num_heads, L, head_dim)")],
    (3, "heads on the batch axis"): [("head_dim).permute(0, 2, 1, 3)",
                                      "head_dim).permute(0, 2, 1, 3).reshape(B * self.num_heads, L, head_dim)")],
    (3, "every H-th feature"): [("x.reshape(B, L, self.num_heads, head_dim).permute(0, 2, 1, 3)",
                                 "x.reshape(B, L, head_dim, self.num_heads).permute(0, 3, 1, 2)")],
    (3, "merged without the transpose"): [("x.permute(0, 2, 1, 3).contiguous().view(B, T, H * Kv)",
                                           "x.reshape(B, T, H * Kv)")],
    (3, "heads concatenated along positions"): [("x.permute(0, 2, 1, 3).contiguous().view(B, T, H * Kv)",
                                                 "x.reshape(B, H * T, Kv)")],
    (4, "projections in a Python list"): [
        ("self.w_q = nn.Linear(d_model, num_heads * self.d_k, bias=bias)",
         "self.linears = [nn.Linear(d_model, d_model, bias=bias) for _ in range(4)]"),
        ("self.w_k = nn.Linear(d_model, num_heads * self.d_k, bias=bias)", ""),
        ("self.w_v = nn.Linear(d_model, num_heads * self.d_v, bias=bias)", ""),
        ("self.w_o = nn.Linear(num_heads * self.d_v, d_model, bias=bias)", ""),
        ("self.w_q(", "self.linears[0]("), ("self.w_k(", "self.linears[1]("), ("self.w_v(", "self.linears[2]("),
        ("self.w_o(", "self.linears[3](")],
    (4, "heads on the sequence axis"): [("x.view(B, L, self.h, head_dim).transpose(1, 2)", "x.view(B, self.h, L, head_dim)")],
    (4, "merged without the transpose"): [("x.transpose(1, 2).reshape(B, T, H * Kv)", "x.reshape(B, T, H * Kv)")],
    (4, "divided by d_k"): [("/ math.sqrt(self.d_k)", "/ self.d_k")],
    (4, "mask not used"): [("        if mask is not None:\n            s = s.masked_fill(~mask, -1e9)\n", "")],
    (4, "no output projection"): [("return self.w_o(self.merge_heads(w @ v))", "return self.merge_heads(w @ v)")],
    (5, "missing sqrt(d_model) scale"): [("self.embedding(tokens) * math.sqrt(self.d_model)", "self.embedding(tokens)")],
    (5, "divided by sqrt(d_model)"): [("* math.sqrt(self.d_model)", "/ math.sqrt(self.d_model)")],
    (5, "scaled by d_model"): [("* math.sqrt(self.d_model)", "* self.d_model")],
    (5, "padding_idx not passed"): [(", padding_idx=padding_idx)", ")")],
    (6, "sin and cos swapped"): [("torch.sin(position", "torch.SIN(position"), ("torch.cos(position", "torch.sin(position"),
                                 ("torch.SIN(position", "torch.cos(position")],
    (6, "sines and cosines in halves"): [("pe[:, 0::2]", "pe[:, : d_model // 2]"), ("pe[:, 1::2]", "pe[:, d_model // 2 :]")],
    (6, "exponent i/d_model"): [("torch.arange(0, d_model, 2,", "torch.arange(0, d_model // 2,")],
    (6, "odd columns use their own index"): [("torch.arange(0, d_model, 2,", "torch.arange(0, d_model,"),
                                             ("torch.sin(position / div)", "torch.sin(position / div[0::2])"),
                                             ("torch.cos(position / div)", "torch.cos(position / div[1::2])")],
    (7, "no ReLU"): [("torch.relu(self.w_1(x))", "self.w_1(x)")],
    (7, "ReLU after W_2"): [("return self.w_2(", "return torch.relu(self.w_2("), ("(self.w_1(x))))", "(self.w_1(x)))))")],
    (7, "dropout on the output"): [("self.w_2(self.dropout(torch.relu(self.w_1(x))))",
                                    "self.dropout(self.w_2(torch.relu(self.w_1(x))))")],
    (7, "GELU instead of ReLU"): [("torch.relu(", "torch.nn.functional.gelu(")],
    (8, "post-LN and pre-LN swapped"): [("if self.norm_first", "if not self.norm_first", ALL)],
    (8, "norm_first ignored"): [("return norm(x) if self.norm_first else x", "return x"),
                                ("return y if self.norm_first else norm(y)", "return norm(y)")],
    (8, "residual missing"): [("y = x + self.dropout(sublayer_output)", "y = self.dropout(sublayer_output)")],
    (8, "dropout on the sum"): [("y = x + self.dropout(sublayer_output)", "y = self.dropout(x + sublayer_output)")],
    (8, "pre-LN normalises the sum too"): [("return y if self.norm_first else norm(y)", "return norm(y)")],
    (9, "src_mask not used"): [("mask=src_mask", "mask=None", ALL)],
    (9, "feed-forward first"): [(
        "            h = self.norm1(x)\n"
        "            x = x + self.dropout(self.self_attn(h, h, h, mask=src_mask))\n"
        "            return x + self.dropout(self.feed_forward(self.norm2(x)))\n"
        "        x = self.norm1(x + self.dropout(self.self_attn(x, x, x, mask=src_mask)))\n"
        "        return self.norm2(x + self.dropout(self.feed_forward(x)))\n",
        "            x = x + self.dropout(self.feed_forward(self.norm1(x)))\n"
        "            h = self.norm2(x)\n"
        "            return x + self.dropout(self.self_attn(h, h, h, mask=src_mask))\n"
        "        x = self.norm1(x + self.dropout(self.feed_forward(x)))\n"
        "        return self.norm2(x + self.dropout(self.self_attn(x, x, x, mask=src_mask)))\n")],
    (9, "one LayerNorm for both sub-layers"): [("self.norm2(x", "self.norm1(x", ALL)],
    (9, "post-LN and pre-LN swapped"): [("if self.norm_first:", "if not self.norm_first:")],
    (9, "residual missing"): [("x = x + self.dropout(", "x = self.dropout("), ("return x + self.dropout(", "return self.dropout("),
                              ("self.norm1(x + ", "self.norm1("), ("self.norm2(x + ", "self.norm2(")],
    (10, "tgt_mask not used"): [("mask=tgt_mask", "mask=None")],
    (10, "src_mask not used"): [("mask=src_mask", "mask=None")],
    (10, "masks swapped"): [("mask=tgt_mask", "mask=TGT"), ("mask=src_mask", "mask=tgt_mask"), ("mask=TGT", "mask=src_mask")],
    (10, "cross-attention first"): [(
        "        x = self._sub(x, self.norm1, lambda h: self.self_attn(h, h, h, mask=tgt_mask, cache=sc))\n"
        "        x = self._sub(x, self.norm2, lambda h: self.cross_attn(h, memory, memory, mask=src_mask, cache=cc))\n",
        "        x = self._sub(x, self.norm1, lambda h: self.cross_attn(h, memory, memory, mask=src_mask, cache=cc))\n"
        "        x = self._sub(x, self.norm2, lambda h: self.self_attn(h, h, h, mask=tgt_mask, cache=sc))\n")],
    (10, "caches not passed on"): [(", cache=sc)", ")"), (", cache=cc)", ")")],
    (10, "post-LN and pre-LN swapped"): [("if self.norm_first:", "if not self.norm_first:")],
    (10, "residual missing"): [("return x + self.dropout(f(norm(x)))", "return self.dropout(f(norm(x)))"),
                               ("return norm(x + self.dropout(f(x)))", "return norm(self.dropout(f(x)))")],
    (11, "max instead of min"): [("min(", "max(")],
    (11, "warm-up never ends"): [("min(step ** -0.5, step * warmup_steps ** -1.5)", "step * warmup_steps ** -1.5")],
    (11, "no warm-up"): [("min(step ** -0.5, step * warmup_steps ** -1.5)", "step ** -0.5")],
    (11, "warmup_steps^-0.5"): [("warmup_steps ** -1.5", "warmup_steps ** -0.5")],
    (11, "d_model^0.5"): [("d_model ** -0.5", "d_model ** 0.5")],
    (11, "step counted from 0"): [("min(step ** -0.5, step * warmup_steps ** -1.5)",
                                   "min((step + 1) ** -0.5, (step + 1) * warmup_steps ** -1.5)")],
    (11, "factor ignored"): [("return factor * ", "return ")],
    (11, "step 0 divides by zero"): [("    if step == 0:\n        return 0.0\n", "")],
    (12, "spread over V - 1 tokens"): [("self.smoothing / V)", "self.smoothing / (V - 1))"),
                                        ("q.scatter_add(", "q.scatter(")],
    (12, "padding column kept at zero"): [("self.smoothing / V)", "self.smoothing / (V - 2))\n        q[..., self.ignore_index] = 0"),
                                           ("q.scatter_add(", "q.scatter(")],
    (12, "padding averaged in"): [("return loss[keep].mean()", "return loss.mean()")],
    (12, "summed, not averaged"): [("return loss[keep].mean()", "return loss[keep].sum()")],
    (12, "KL divergence"): [("loss = -(q * logp).sum(-1)", "loss = torch.nn.functional.kl_div(logp, q, reduction='none').sum(-1)")],
    (12, "smoothing ignored"): [("loss = -(q * logp).sum(-1)", "loss = -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1)")],
    (13, "appended along the heads"): [("dim=-2)", "dim=1)", ALL)],
    (13, "replaced, not appended"): [("        if self.k is not None and not self.static:\n"
                                      "            k = torch.cat((self.k, k), dim=-2)\n"
                                      "            v = torch.cat((self.v, v), dim=-2)\n", "")],
    (13, "static cache appends"): [("if self.k is not None and not self.static:", "if self.k is not None:")],
    (13, "new keys first"): [("torch.cat((self.k, k)", "torch.cat((k, self.k)"), ("torch.cat((self.v, v)", "torch.cat((v, self.v)")],
    (13, "concatenation not stored"): [("            k = torch.cat((self.k, k), dim=-2)\n            v = torch.cat((self.v, v), dim=-2)\n",
                                        "            return torch.cat((self.k, k), dim=-2), torch.cat((self.v, v), dim=-2)\n")],
    (13, "whole prefix fed with the cache"): [("inp = out[:, -1:] if use_cache else out", "inp = out")],
    (13, "new cache every step"): [("    for _ in range(max_len - 1):\n",
                                    "    for _ in range(max_len - 1):\n        cache = model.new_cache() if use_cache else None\n")],
    (13, "no padding after EOS"): [("        nxt[done] = model.config.pad_id\n", "")],
    (13, "stops at the first EOS"): [("if done.all():", "if done.any():")],
    (13, "src_mask not passed to decode"): [("model.decode(inp, memory, src_mask, cache=cache)", "model.decode(inp, memory, cache=cache)")],
    (13, "max_len without BOS"): [("range(max_len - 1)", "range(max_len)")],
    (14, "plain length normalisation"): [("return ((5 + length) / 6) ** alpha", "return length ** alpha")],
    (14, "power of the numerator only"): [("return ((5 + length) / 6) ** alpha", "return (5 + length) ** alpha / 6")],
    (14, "length penalty missing"): [("top[b, r].item() / gnmt_length_penalty(step, alpha)", "top[b, r].item()")],
    (14, "length penalty applied at every step"): [
        ("cand = (scores.view(-1, 1) + logp).view(B, k * V)",
         "cand = ((scores.view(-1, 1) + logp) / gnmt_length_penalty(step, length_penalty)).view(B, k * V)"),
        ("top[b, r].item() / gnmt_length_penalty(step, alpha)", "top[b, r].item()"),
        # the running scores are normalised already: the stopping rule compares them as they are
        ("eos_id, step, length_penalty)", "eos_id, step, 0.0)")],
    (14, "cache not reordered"): [("        cache.reorder(rows)\n", "")],
    (14, "all beams start at 0"): [("scores = torch.full((B, k), -math.inf)\n    scores[:, 0] = 0", "scores = torch.zeros(B, k)")],
    (14, "logits summed"): [("[:, -1].log_softmax(-1)", "[:, -1]")],
    # issue 31: the common bugs the grader could not name, and the reimplementation bugs of the mistakes gallery
    (1, "bias scaled with the scores"): [(
        "scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))\n    if bias is not None:\n"
        "        scores = scores + bias\n",
        "scores = query @ key.transpose(-2, -1)\n    if bias is not None:\n        scores = scores + bias\n"
        "    scores = scores / math.sqrt(query.size(-1))\n")],
    (1, "-1e9 fill in float16"): [("torch.finfo(scores.dtype).min", "-1e9")],
    (1, "on_weights after dropout"): [
        ("    if on_weights is not None:\n        on_weights(weights)\n", ""),
        ("    weights = torch.nn.functional.dropout(weights, dropout_p)\n",
         "    weights = torch.nn.functional.dropout(weights, dropout_p)\n"
         "    if on_weights is not None:\n        on_weights(weights)\n")],
    (1, "dropout_p ignored"): [("    weights = torch.nn.functional.dropout(weights, dropout_p)\n", "")],
    (1, "dropout not rescaled"): [("weights = torch.nn.functional.dropout(weights, dropout_p)",
                                   "weights = weights * (torch.rand_like(weights) >= dropout_p)")],
    (2, "triu instead of tril"): [("i[None, :] <= i[:, None]", "i[None, :] >= i[:, None]")],
    (2, "padding mask of shape (B, 1, S)"): [(".unsqueeze(1).unsqueeze(2)", ".unsqueeze(-2)")],
    (3, "heads merged interleaved"): [("x.permute(0, 2, 1, 3).contiguous().view(B, T, H * Kv)",
                                       "x.permute(0, 2, 3, 1).reshape(B, T, H * Kv)")],
    (4, "scaled by sqrt(d_model)"): [("/ math.sqrt(self.d_k)", "/ math.sqrt(self.w_q.in_features)")],
    (4, "heads merged interleaved"): [("x.transpose(1, 2).reshape(B, T, H * Kv)", "x.permute(0, 2, 3, 1).reshape(B, T, H * Kv)")],
    (4, "mask read as True = masked"): [("s.masked_fill(~mask, -1e9)", "s.masked_fill(mask, -1e9)")],
    (4, "dropout on in eval mode"): [("w = self.drop(s.softmax(-1))",
                                      "w = torch.nn.functional.dropout(s.softmax(-1), self.drop.p)"),
                                     ("import math\n", "import math\nimport torch\n")],
    (6, "positions counted from 1"): [("torch.arange(length, dtype=dtype, device=device)",
                                       "torch.arange(1, length + 1, dtype=dtype, device=device)")],
    (6, "offset ignored"): [("self.table[offset : offset + x.size(1)]", "self.table[: x.size(1)]")],
    (6, "dropout on the table only"): [("return self.dropout(x + pe.to(x.dtype))", "return x + self.dropout(pe.to(x.dtype))")],
    (7, "ReLU moved after W_2"): [("self.w_2(self.dropout(torch.relu(self.w_1(x))))",
                                   "torch.relu(self.w_2(self.dropout(self.w_1(x))))")],
    (7, "dropout on in eval mode"): [("self.w_2(self.dropout(torch.relu(self.w_1(x))))",
                                      "self.w_2(torch.nn.functional.dropout(torch.relu(self.w_1(x)), self.dropout.p))")],
    (8, "LayerNorm on the sub-layer's output"): [(
        "        y = x + self.dropout(sublayer_output)\n        return y if self.norm_first else norm(y)\n",
        "        if self.norm_first:\n            return x + self.dropout(sublayer_output)\n"
        "        return x + norm(self.dropout(sublayer_output))\n")],
    (9, "feed-forward residual missing"): [
        ("return self.norm2(x + self.dropout(self.feed_forward(x)))", "return self.norm2(self.dropout(self.feed_forward(x)))"),
        ("return x + self.dropout(self.feed_forward(self.norm2(x)))", "return self.dropout(self.feed_forward(self.norm2(x)))")],
    (9, "pre-LN without a final LayerNorm"): [("return x if self.norm is None else self.norm(x)", "return x")],
    (9, "every layer reads the stack's input"): [(
        "        for layer in self.layers:\n            x = layer(x, src_mask)\n"
        "        return x if self.norm is None else self.norm(x)\n",
        "        out = x\n        for layer in self.layers:\n            out = layer(x, src_mask)\n"
        "        return out if self.norm is None else self.norm(out)\n")],
    (9, "src_mask not passed to the layers"): [("x = layer(x, src_mask)", "x = layer(x)")],
    (10, "feed-forward residual missing"): [(
        "        return self._sub(x, self.norm3, self.feed_forward)\n",
        "        h = self.norm3(x) if self.norm_first else x\n        out = self.dropout(self.feed_forward(h))\n"
        "        return out if self.norm_first else self.norm3(out)\n")],
    (10, "cross-attention queries from the memory"): [("self.cross_attn(h, memory, memory,", "self.cross_attn(memory, h, h,")],
    (10, "self-attention reads the memory"): [("self.self_attn(h, h, h,", "self.self_attn(h, memory, memory,")],
    (11, "step and warmup_steps swapped"): [("step * warmup_steps ** -1.5", "warmup_steps * step ** -1.5")],
    (11, "first update at step 0"): [("self.rate(self.last_epoch + 1)", "self.rate(self.last_epoch)")],
    (11, "base learning rate ignored"): [("[base * self.rate(self.last_epoch + 1) for base in self.base_lrs]",
                                          "[self.rate(self.last_epoch + 1) for base in self.base_lrs]")],
    (12, "no log_softmax"): [("logp = logits.log_softmax(-1)", "logp = logits")],
    (12, "padding counted in the smoothing term"): [(
        "        loss = -(q * logp).sum(-1)\n        keep = target != self.ignore_index\n        return loss[keep].mean()\n",
        "        nll = torch.nn.functional.nll_loss(logp.flatten(0, 1), target.flatten(), ignore_index=self.ignore_index)\n"
        "        return (1 - self.smoothing) * nll + self.smoothing * (-logp.mean(-1)).mean()\n")],
    (13, "appended along the features"): [("dim=-2)", "dim=-1)", ALL)],
    (13, "last token only, without the cache"): [("inp = out[:, -1:] if use_cache else out", "inp = out[:, -1:]")],
    (13, "squeeze drops the batch axis"): [("        nxt[done] = model.config.pad_id\n",
                                            "        nxt[done] = model.config.pad_id\n        nxt = nxt.squeeze()\n")],
    (14, "stops at the first k finished"): [(
        "done[b] = last or _no_better(finished[b], k, top[b], tok[b], eos_id, step, length_penalty)",
        "done[b] = last or len(finished[b]) >= k")],
    (14, "length penalty counts BOS"): [("gnmt_length_penalty(step, alpha)", "gnmt_length_penalty(step + 1, alpha)", ALL)],
    # issue 32: rotary positions and grouped-query attention
    (15, "pairs interleaved"): [("torch.cat((angle, angle), dim=-1)", "angle.repeat_interleave(2, dim=-1)"),
                                ("    a, b = x.chunk(2, dim=-1)\n    return torch.cat((-b, a), dim=-1)\n",
                                 "    return torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)\n")],
    (15, "angle table interleaved"): [("torch.cat((angle, angle), dim=-1)", "angle.repeat_interleave(2, dim=-1)")],
    (15, "rotated the other way"): [("+ rotate_half(x) * angle.sin()", "- rotate_half(x) * angle.sin()")],
    (15, "offset ignored"): [("torch.arange(offset, offset + x.size(-2),", "torch.arange(x.size(-2),")],
    (15, "positions counted from 1"): [("torch.arange(offset, offset + x.size(-2),",
                                        "torch.arange(offset + 1, offset + x.size(-2) + 1,")],
    (15, "exponent i/d"): [("torch.arange(0, head_dim, 2).float()", "torch.arange(head_dim // 2).float()")],
    (15, "only q rotated"): [("return self.turn(q, offset), self.turn(k, offset)", "return self.turn(q, offset), k")],
    (15, "values rotated too"): [("        q, k = self.rotary(q, k, offset)\n",
                                  "        q, k = self.rotary(q, k, offset)\n        v, _ = self.rotary(v, v, offset)\n")],
    (15, "offset not passed"): [("self.rotary(q, k, offset)", "self.rotary(q, k)")],
    (15, "keys used unrotated"): [("q, k = self.rotary(q, k, offset)", "q, _ = self.rotary(q, k, offset)")],
    (15, "rotated before the split into heads"): [
        ("self.rotary = RotaryEmbedding(self.d_k)", "self.rotary = RotaryEmbedding(d_model)"),
        ("        q = self.split_heads(self.w_q(query), self.d_k)\n        k = self.split_heads(self.w_k(key), self.d_k)\n",
         "        q, k = self.rotary(self.w_q(query), self.w_k(key), offset)\n"
         "        q, k = self.split_heads(q, self.d_k), self.split_heads(k, self.d_k)\n"),
        ("        q, k = self.rotary(q, k, offset)\n", "")],
    (15, "positions on the heads axis"): [
        ("        q = self.split_heads(self.w_q(query), self.d_k)\n        k = self.split_heads(self.w_k(key), self.d_k)\n",
         "        q = self.w_q(query).view(query.size(0), -1, self.num_heads, self.d_k)\n"
         "        k = self.w_k(key).view(key.size(0), -1, self.num_heads, self.d_k)\n"),
        ("        q, k = self.rotary(q, k, offset)\n",
         "        q, k = self.rotary(q, k, offset)\n        q, k = q.transpose(1, 2), k.transpose(1, 2)\n")],
    (15, "input rotated instead of q and k"): [
        ("self.rotary = RotaryEmbedding(self.d_k)", "self.rotary = RotaryEmbedding(d_model)"),
        ("        q, k = self.rotary(q, k, offset)\n", ""),
        ("        offset = 0 if cache is None else cache.length\n",
         "        offset = 0 if cache is None else cache.length\n        query, key = self.rotary(query, key, offset)\n")],
    (16, "key/value heads tiled"): [("repeat_interleave(self.h // self.g, dim=1)", "repeat(1, self.h // self.g, 1, 1)", ALL)],
    (16, "cache holds the copies"): [
        ("        k = k.repeat_interleave(self.h // self.g, dim=1)\n        v = v.repeat_interleave(self.h // self.g, dim=1)\n", ""),
        ("            v = self.split_heads(self.w_v(value), self.g, self.d_v)\n",
         "            v = self.split_heads(self.w_v(value), self.g, self.d_v)\n"
         "            k = k.repeat_interleave(self.h // self.g, dim=1)\n"
         "            v = v.repeat_interleave(self.h // self.g, dim=1)\n")],
    (16, "num_kv_heads ignored"): [("num_kv_heads * self.d_k", "num_heads * self.d_k"),
                                   ("num_kv_heads * self.d_v", "num_heads * self.d_v"),
                                   ("self.h, self.g = num_heads, num_kv_heads", "self.h, self.g = num_heads, num_heads")],
    (16, "query heads grouped by num_kv_heads"): [
        ("        k = k.repeat_interleave(self.h // self.g, dim=1)\n        v = v.repeat_interleave(self.h // self.g, dim=1)\n",
         "        group = torch.arange(self.h) // self.g\n        k, v = k[:, group], v[:, group]\n")],
    (16, "keys projected to d_model"): [("nn.Linear(d_model, num_kv_heads * self.d_k, bias=bias)",
                                         "nn.Linear(d_model, d_model, bias=bias)"),
                                        ("k = self.split_heads(self.w_k(key), self.g, self.d_k)",
                                         "k = self.split_heads(self.w_k(key), self.g, -1)")],
}


def edited(number: int, edits) -> str:
    source = SOLUTIONS[number]
    for old, new, *scope in edits:
        count = source.count(old)
        assert count == 1 or (scope == [ALL] and count > 1), f"edit {old!r} matches {count} times"
        source = source.replace(old, new)
    return source


def learner_file(tmp_path: Path, number: int, source: str) -> Path:
    path = tmp_path / f"{exercise(number).stem}.py"
    path.write_text(source)
    return path


@pytest.mark.parametrize("number", range(1, len(EXERCISES) + 1))
def test_a_learners_own_answer_passes(number, tmp_path):
    result = grade(exercise(number), path=learner_file(tmp_path, number, SOLUTIONS[number]))
    assert result.status == PASSED, result.report()


def test_every_known_mistake_has_a_test_here():
    known = {(e.number, m.name) for e in EXERCISES for part in e.parts for m in part.mistakes}
    assert known == set(EDITS)
    assert len(known) >= 10


@pytest.mark.parametrize("number, name", sorted(EDITS), ids=[f"{n}-{name}" for n, name in sorted(EDITS)])
def test_a_known_mistake_is_diagnosed_by_name(number, name, tmp_path):
    result = grade(exercise(number), path=learner_file(tmp_path, number, edited(number, EDITS[number, name])))
    assert result.status == WRONG
    assert result.mistake is not None and result.mistake.name == name, result.report()
    report = result.report()
    assert f'known mistake "{name}": {result.mistake.says}' in report
    assert "see slides/chapters/" in report
