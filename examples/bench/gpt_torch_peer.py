#!/usr/bin/env python3
"""Plain-PyTorch peer of `plexus gpt train`: the same GPT-2 model, batches, schedule and AdamW.

    python3 examples/bench/gpt_torch_peer.py --data input.txt [--model init.h5] [options]

With --model it starts from weights `plexus gpt train --iters 0 --save init.h5` wrote (GPT-2
names and layout: Conv1D weights [in x out]); without it, from its own GPT-2 initialisation
(for speed comparisons). It draws the engine's batches: sequence b of micro-batch `counter`
starts at (w1 * 2^32 + w0) mod (n - block), (w0, w1) the first Philox4x32-10 words of
counter (row), b (column group) under key (seed, stream, 0xBA7C) — src/train/gpt_batches.hpp.
Per step: zero grads, micro-batches (loss scaled by 1/grad_accum), clip_grad_norm_, AdamW
(decay on 2-D tensors only) at nanoGPT's warmup + cosine learning rate.

Prints one JSON object per step ({"iter", "loss", "grad_norm", "step_seconds"}) with --jsonl, a
summary table, and with --compare METRICS.jsonl checks its losses against the engine's within
--tol relative (exit 1 on a mismatch).
"""
import argparse
import json
import math
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

M32 = 0xFFFFFFFF


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    for _ in range(10):
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        hi0, lo0 = (p0 >> 32) & M32, p0 & M32
        hi1, lo1 = (p1 >> 32) & M32, p1 & M32
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = (k0 + 0x9E3779B9) & M32
        k1 = (k1 + 0xBB67AE85) & M32
    return c0, c1, c2, c3


def batch_offset(seed, stream, counter, seq, rng):
    layer = 0xBA7C
    w = philox4x32_10(counter & M32, (counter >> 32) & M32, seq & M32, stream & M32, seed & M32,
                      ((seed >> 32) & M32) ^ ((layer * 0x9E3779B9) & M32))
    return ((w[1] << 32) | w[0]) % rng


def get_batch(data, seed, stream, counter, batch, block):
    offs = [batch_offset(seed, stream, counter, b, len(data) - block) for b in range(batch)]
    x = torch.stack([torch.from_numpy(data[o:o + block].astype(np.int64)) for o in offs])
    y = torch.stack([torch.from_numpy(data[o + 1:o + 1 + block].astype(np.int64)) for o in offs])
    return x, y


def lr_at(it, a):
    if it < a.warmup:
        return a.lr * (it + 1) / (a.warmup + 1)
    if it >= a.iters or a.iters <= a.warmup:
        return a.min_lr
    ratio = (it - a.warmup) / (a.iters - a.warmup)
    return a.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (a.lr - a.min_lr)


class GPT(torch.nn.Module):
    """GPT-2 with Conv1D-layout weights [in x out], as Plexus saves them."""

    def __init__(self, layers, heads, embed, block, vocab, tied, dropout):
        super().__init__()
        self.heads, self.tied, self.dropout = heads, tied, dropout
        self.p = {}  # GPT-2 name -> parameter (registered under the name with "." -> "_")

        def P(*shape):
            return torch.nn.Parameter(torch.zeros(*shape))

        self.p["wte"], self.p["wpe"] = P(vocab, embed), P(block, embed)
        for l in range(layers):
            h = f"h.{l}."
            for ln in ("ln_1", "ln_2"):
                self.p[h + ln + ".weight"], self.p[h + ln + ".bias"] = P(embed), P(embed)
            for name, i, o in (("attn.c_attn", embed, 3 * embed), ("attn.c_proj", embed, embed),
                               ("mlp.c_fc", embed, 4 * embed), ("mlp.c_proj", 4 * embed, embed)):
                self.p[h + name + ".weight"], self.p[h + name + ".bias"] = P(i, o), P(o)
        self.p["ln_f.weight"], self.p["ln_f.bias"] = P(embed), P(embed)
        if not tied:
            self.p["lm_head.weight"] = P(vocab, embed)
        for name, param in self.p.items():
            self.register_parameter(name.replace(".", "_"), param)
        self.layers = layers

    def forward(self, idx, targets):
        B, T = idx.shape
        p, drop, train = self.p, self.dropout, self.training
        C = p["wte"].shape[1]
        x = F.dropout(p["wte"][idx] + p["wpe"][:T], drop, train)
        for l in range(self.layers):
            h = f"h.{l}."
            a = F.layer_norm(x, (C,), p[h + "ln_1.weight"], p[h + "ln_1.bias"], 1e-5)
            qkv = a @ p[h + "attn.c_attn.weight"] + p[h + "attn.c_attn.bias"]
            q, k, v = qkv.split(C, dim=2)
            q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
            if hasattr(F, "scaled_dot_product_attention"):
                y = F.scaled_dot_product_attention(q, k, v, dropout_p=drop if train else 0.0, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) / math.sqrt(k.shape[-1])
                att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
                y = F.dropout(F.softmax(att, dim=-1), drop, train) @ v
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            x = x + F.dropout(y @ p[h + "attn.c_proj.weight"] + p[h + "attn.c_proj.bias"], drop, train)
            a = F.layer_norm(x, (C,), p[h + "ln_2.weight"], p[h + "ln_2.bias"], 1e-5)
            m = F.gelu(a @ p[h + "mlp.c_fc.weight"] + p[h + "mlp.c_fc.bias"], approximate="tanh")
            x = x + F.dropout(m @ p[h + "mlp.c_proj.weight"] + p[h + "mlp.c_proj.bias"], drop, train)
        x = F.layer_norm(x, (C,), p["ln_f.weight"], p["ln_f.bias"], 1e-5)
        logits = x @ (p["wte"] if self.tied else p["lm_head.weight"]).t()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def load_h5(path):
    import h5py
    with h5py.File(path, "r") as f:
        cfg = {k: int(f.attrs[k]) for k in ("layers", "heads", "embed", "block", "vocab", "tied")}
        tensors = {k: np.array(f[k], dtype=np.float32) for k in f.keys() if k != "vocab_chars"}
        chars = [c.decode() if isinstance(c, bytes) else c for c in f["vocab_chars"][()]] if "vocab_chars" in f else None
    return cfg, tensors, chars


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--model", help="initial weights (plexus gpt train --iters 0 --save)")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--embed", type=int, default=128)
    ap.add_argument("--block", type=int, default=64)
    ap.add_argument("--untie", action="store_true")
    ap.add_argument("--batch", type=int, default=12)
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--min-lr", type=float, default=1e-4)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--beta2", type=float, default=0.99)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--grad-accum", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--eval-every", type=int, default=0, help="accepted for symmetry with plexus; unused")
    ap.add_argument("--eval-iters", type=int, default=0, help="accepted for symmetry with plexus; unused")
    ap.add_argument("--steps", type=int, default=None, help="run only this many of the --iters steps")
    ap.add_argument("--jsonl", action="store_true")
    ap.add_argument("--compare", help="engine metrics JSONL to check the losses against")
    ap.add_argument("--tol", type=float, default=1e-4)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)

    text = open(a.data, encoding="utf-8").read()
    chars = sorted(set(text))
    if a.model:
        cfg, tensors, saved_chars = load_h5(a.model)
        a.layers, a.heads, a.embed, a.block = cfg["layers"], cfg["heads"], cfg["embed"], cfg["block"]
        a.untie = not cfg["tied"]
        if saved_chars is not None:
            chars = saved_chars
    stoi = {c: i for i, c in enumerate(chars)}
    data = np.array([stoi[c] for c in text], dtype=np.int32)
    train = data[: int(len(data) * 0.9)]

    model = GPT(a.layers, a.heads, a.embed, a.block, len(chars), not a.untie, a.dropout)
    with torch.no_grad():
        if a.model:
            for name, p in model.p.items():
                p.copy_(torch.from_numpy(tensors[name]).view_as(p))
        else:
            for name, p in model.p.items():
                if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
                    p.fill_(1.0)
                elif p.dim() == 2:
                    std = 0.02 / math.sqrt(2 * a.layers) if name.endswith("c_proj.weight") else 0.02
                    p.normal_(0.0, std)
    decay = [p for n, p in model.p.items() if p.dim() >= 2]
    no_decay = [p for n, p in model.p.items() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=a.lr, betas=(0.9, a.beta2), eps=1e-8)

    steps = a.iters if a.steps is None else min(a.steps, a.iters)
    losses, times = [], []
    model.train()
    for it in range(steps):
        t0 = time.perf_counter()
        for g in opt.param_groups:
            g["lr"] = lr_at(it, a)
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for micro in range(a.grad_accum):
            x, y = get_batch(train, a.seed, 0, it * a.grad_accum + micro, a.batch, a.block)
            loss = model(x, y) / a.grad_accum
            loss.backward()
            total += loss.item()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), a.grad_clip if a.grad_clip > 0 else float("inf"))
        opt.step()
        times.append(time.perf_counter() - t0)
        losses.append(total)
        if a.jsonl:
            print(json.dumps({"iter": it + 1, "loss": total, "grad_norm": float(norm), "step_seconds": times[-1]}))
    tail = times[1:] if len(times) > 1 else times
    med = float(np.median(tail)) if tail else 0.0
    tokens = a.batch * a.block * a.grad_accum
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}: {steps} steps, median step "
          f"{med * 1e3:.2f} ms ({tokens / med if med else 0:.0f} tokens/s), final loss {losses[-1] if losses else 0:.4f}")
    print("BENCH_JSON " + json.dumps({"impl": "torch", "torch_version": torch.__version__, "threads": a.threads,
                                      "steps": steps, "step_seconds_median": med, "losses": losses}))

    if a.compare:
        eng = [json.loads(l) for l in open(a.compare)]
        eng = [r for r in eng if "iter" in r]
        bad = 0
        for r in eng[:steps]:
            mine = losses[r["iter"] - 1]
            rel = abs(mine - r["loss"]) / abs(r["loss"])
            if not rel <= a.tol:
                bad += 1
                print(f"step {r['iter']}: plexus {r['loss']:.8f} torch {mine:.8f} (relative {rel:.2e})")
        worst = max(abs(losses[r["iter"] - 1] - r["loss"]) / abs(r["loss"]) for r in eng[:steps])
        print(f"parity over {min(len(eng), steps)} steps: worst relative loss difference {worst:.3e} (tol {a.tol})")
        sys.exit(1 if bad or len(eng) < steps else 0)


if __name__ == "__main__":
    main()
