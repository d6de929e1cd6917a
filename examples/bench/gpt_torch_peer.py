#!/usr/bin/env python3
"""Plain-PyTorch peer of `plexus gpt train`: the same GPT-2 model, batches, schedule and AdamW.

    python3 examples/bench/gpt_torch_peer.py --data input.txt [--model init.h5] [options]
    python3 examples/bench/gpt_torch_peer.py --data input.txt --device cuda [--tf32] [--flash] [--compile]

With --model it starts from weights `plexus gpt train --iters 0 --save init.h5` wrote (GPT-2
names and layout: Conv1D weights [in x out]); without it, from its own GPT-2 initialisation
(nanoGPT's: normal(0, 0.02), residual projections 0.02/sqrt(2 * layers), drawn on the CPU so
both devices start alike). It draws the engine's batches: sequence b of micro-batch `counter`
starts at (w1 * 2^32 + w0) mod (n - block), (w0, w1) the first Philox4x32-10 words of
counter (row), b (column group) under key (seed, stream, 0xBA7C) — src/train/gpt_batches.hpp.
Per step: zero grads, micro-batches (loss scaled by 1/grad_accum), clip_grad_norm_, AdamW
(decay on 2-D tensors only; fused on cuda) at nanoGPT's warmup + cosine learning rate.

On cuda everything is fp32 with TF32 off (--tf32 allows it); attention is the explicit masked
softmax unless --flash (F.scaled_dot_product_attention); --compile wraps the model in
torch.compile. A step's time is taken between two device synchronisations.

With --eval-every N, as plexus: before training and after every N-th and the last step, the mean
loss (dropout off, no grad) over the same --eval-iters batches each time: val_loss on the
validation split (plexus's stream 1), train_loss on the training split (stream 2, peer only).

Prints one JSON object per step ({"iter", "loss", "lr", "grad_norm", "step_seconds",
"tokens_per_second", "val_loss" and "train_loss" when evaluated}, plexus --metrics names) and a
summary object with --jsonl, a summary line, one `BENCH_JSON {...}` line, and with --compare
METRICS.jsonl checks its losses (and validation losses) against the engine's within --tol
relative (exit 1 on a mismatch).
"""
import argparse
import contextlib
import json
import math
import platform
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

U = np.uint64  # 32-bit words held in uint64 numpy arrays: a 32 x 32-bit product fits
M32, S32 = U(0xFFFFFFFF), U(32)
TRAIN_STREAM, VAL_STREAM, TRAIN_EVAL_STREAM = 0, 1, 2  # 0 and 1 as plexus's kTrainStream, kValStream
CHUNK = 256  # training micro-batches whose starts are drawn at once


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    for _ in range(10):
        p0 = U(0xD2511F53) * c0
        p1 = U(0xCD9E8D57) * c2
        c0, c1, c2, c3 = (p1 >> S32) ^ c1 ^ k0, p1 & M32, (p0 >> S32) ^ c3 ^ k1, p0 & M32
        k0 = (k0 + U(0x9E3779B9)) & M32
        k1 = (k1 + U(0xBB67AE85)) & M32
    return c0, c1, c2, c3


def batch_offsets(seed, stream, first, count, batch, rng):
    """Starts [count x batch] of the sequences of micro-batches first .. first + count - 1."""
    layer, m = 0xBA7C, 0xFFFFFFFF
    c = np.repeat(np.arange(first, first + count, dtype=U), batch)
    seq = np.tile(np.arange(batch, dtype=U), count)
    w = philox4x32_10(c & M32, c >> S32, seq, np.full_like(c, stream), U(seed & m),
                      U(((seed >> 32) & m) ^ ((layer * 0x9E3779B9) & m)))
    return (((w[1] << S32) | w[0]) % U(rng)).astype(np.int64).reshape(count, batch)


def get_batch(data, starts, block, device):
    rows = starts[:, None] + np.arange(block)
    return tuple(torch.from_numpy(data[r].astype(np.int64)).to(device) for r in (rows, rows + 1))


def lr_at(it, a):
    if it < a.warmup:
        return a.lr * (it + 1) / (a.warmup + 1)
    if it >= a.iters or a.iters <= a.warmup:
        return a.min_lr
    ratio = (it - a.warmup) / (a.iters - a.warmup)
    return a.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (a.lr - a.min_lr)


class GPT(torch.nn.Module):
    """GPT-2 with Conv1D-layout weights [in x out], as Plexus saves them."""

    def __init__(self, layers, heads, embed, block, vocab, tied, dropout, flash):
        super().__init__()
        self.heads, self.tied, self.dropout, self.flash = heads, tied, dropout, flash
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
            if self.flash:
                y = F.scaled_dot_product_attention(q, k, v, dropout_p=drop if train else 0.0, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) / math.sqrt(k.shape[-1])
                causal = torch.ones(T, T, dtype=torch.bool, device=idx.device).triu(1)
                att = att.masked_fill(causal, float("-inf"))
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


def device_name(dev):
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    try:
        return next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        return platform.machine()


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
    ap.add_argument("--eval-every", type=int, default=0, help="evaluate every N steps, as plexus (0 = never)")
    ap.add_argument("--eval-iters", type=int, default=20, help="batches per split per evaluation")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--tf32", action="store_true", help="cuda: allow TF32 matrix products (default: full fp32)")
    ap.add_argument("--flash", action="store_true", help="attention by F.scaled_dot_product_attention")
    ap.add_argument("--bf16", action="store_true",
                    help="cuda: forward and backward under torch.autocast(bfloat16) -- bf16 matrix products with "
                         "fp32 accumulation and fp32 weights/Adam, as plexus --matmul-precision bf16")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--steps", type=int, default=None, help="run only this many of the --iters steps")
    ap.add_argument("--jsonl", action="store_true")
    ap.add_argument("--compare", help="engine metrics JSONL to check the losses against")
    ap.add_argument("--tol", type=float, default=1e-4)
    a = ap.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device is available to this torch")
    if a.flash and not hasattr(F, "scaled_dot_product_attention"):
        ap.error(f"--flash: torch {torch.__version__} has no scaled_dot_product_attention")
    if a.compile and not hasattr(torch, "compile"):
        ap.error(f"--compile: torch {torch.__version__} has no torch.compile")
    if a.bf16 and a.device != "cuda":
        ap.error("--bf16 needs --device cuda")
    if a.eval_every > 0 and a.eval_iters < 1:
        ap.error("--eval-iters must be at least 1")
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = a.tf32
        torch.backends.cudnn.allow_tf32 = a.tf32
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
    n_train = int(len(data) * 0.9)
    train, val = data[:n_train], data[n_train:]
    if a.eval_every > 0 and len(val) < a.block + 1:
        ap.error(f"the validation split has {len(val)} tokens, fewer than --block + 1")

    model = GPT(a.layers, a.heads, a.embed, a.block, len(chars), not a.untie, a.dropout, a.flash)
    with torch.no_grad():
        for name, p in model.p.items():  # initialised on the CPU (the same weights on every device)
            if a.model:
                p.copy_(torch.from_numpy(tensors[name]).view_as(p))
            elif name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
                p.fill_(1.0)
            elif p.dim() == 2:
                std = 0.02 / math.sqrt(2 * a.layers) if name.endswith("c_proj.weight") else 0.02
                p.normal_(0.0, std)
    model.to(dev)
    model.p = {name: getattr(model, name.replace(".", "_")) for name in model.p}  # the moved parameters
    params = sum(p.numel() for p in model.p.values())
    fwd = torch.compile(model) if a.compile else model
    decay = [p for n, p in model.p.items() if p.dim() >= 2]
    no_decay = [p for n, p in model.p.items() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=a.lr, betas=(0.9, a.beta2), eps=1e-8,
                            **({"fused": True} if dev.type == "cuda" else {}))

    # Evaluation (plexus's schedule and batches): the same --eval-iters batches of each split every time.
    evals = {} if a.eval_every <= 0 else {
        split: [get_batch(d, o, a.block, dev) for o in batch_offsets(a.seed, stream, 0, a.eval_iters, a.batch,
                                                                       len(d) - a.block)]
        for split, d, stream in (("train_loss", train, TRAIN_EVAL_STREAM), ("val_loss", val, VAL_STREAM))}

    @torch.no_grad()
    def estimate_loss():
        model.eval()
        out = {split: torch.stack([fwd(x, y) for x, y in b]).double().mean().item() for split, b in evals.items()}
        model.train()
        return out

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    steps = a.iters if a.steps is None else min(a.steps, a.iters)
    tokens = a.batch * a.block * a.grad_accum
    losses, times, records = [], [], []
    t_start = time.perf_counter()
    initial = last_eval = estimate_loss() if evals else {}
    best_val = initial.get("val_loss")
    model.train()
    for it in range(steps):
        sync()
        t0 = time.perf_counter()
        lr = lr_at(it, a)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad(set_to_none=True)
        micro_losses = []
        for micro in range(a.grad_accum):
            counter = it * a.grad_accum + micro
            if counter % CHUNK == 0:  # the batch starts, drawn CHUNK micro-batches at a time
                starts = batch_offsets(a.seed, TRAIN_STREAM, counter, CHUNK, a.batch, len(train) - a.block)
            x, y = get_batch(train, starts[counter % CHUNK], a.block, dev)
            with torch.autocast("cuda", dtype=torch.bfloat16) if a.bf16 else contextlib.nullcontext():
                loss = fwd(x, y) / a.grad_accum
            loss.backward()
            micro_losses.append(loss.detach())
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), a.grad_clip if a.grad_clip > 0 else float("inf"))
        opt.step()
        sync()
        times.append(time.perf_counter() - t0)
        losses.append(sum(float(l) for l in micro_losses))
        rec = {"iter": it + 1, "loss": losses[-1], "lr": lr, "grad_norm": float(norm), "step_seconds": times[-1],
               "tokens_per_second": tokens / times[-1]}
        if evals and ((it + 1) % a.eval_every == 0 or it + 1 == a.iters):
            last_eval = estimate_loss()
            rec.update(last_eval)
            best_val = min(best_val, last_eval["val_loss"])
        if a.jsonl:
            print(json.dumps(rec), flush=True)
        elif "val_loss" in rec:
            print(f"iter {it + 1}: train loss {rec['train_loss']:.4f}, val loss {rec['val_loss']:.4f}", flush=True)
        records.append(rec)
    total_seconds = time.perf_counter() - t_start
    tail = times[1:] if len(times) > 1 else times
    med = float(np.median(tail)) if tail else 0.0
    if a.jsonl:
        print(json.dumps({"summary": True, "initial_val_loss": initial.get("val_loss"),
                          "initial_train_loss": initial.get("train_loss"), "best_val_loss": best_val,
                          "total_seconds": total_seconds, "params": params}))
    print(f"torch {torch.__version__} on {device_name(dev)}, threads {torch.get_num_threads()}: {steps} steps, "
          f"median step {med * 1e3:.2f} ms ({tokens / med if med else 0:.0f} tokens/s), final loss "
          f"{losses[-1] if losses else 0:.4f}" + (f", val loss {last_eval['val_loss']:.4f}" if evals else ""))
    print("BENCH_JSON " + json.dumps({
        "impl": "torch", "device": a.device, "device_name": device_name(dev), "torch_version": torch.__version__,
        "threads": a.threads, "steps": steps, "params": params, "step_seconds_median": med,
        "step_ms_median": med * 1e3, "tokens_per_step": tokens, "tokens_per_second": tokens / med if med else 0.0,
        "final_loss": losses[-1] if losses else None, "final_train_loss": last_eval.get("train_loss"),
        "final_val_loss": last_eval.get("val_loss"), "best_val_loss": best_val,
        "options": {**vars(a), "adamw_fused": dev.type == "cuda"}, "losses": losses}))

    if a.compare:
        eng = [json.loads(l) for l in open(a.compare)]
        eng = [r for r in eng if "iter" in r][:steps]
        bad, worst = 0, 0.0
        for r in eng:
            for key in ("loss", "val_loss"):
                mine = records[r["iter"] - 1].get(key)
                if key not in r or mine is None:
                    continue
                rel = abs(mine - r[key]) / abs(r[key])
                worst = max(worst, rel)
                if not rel <= a.tol:
                    bad += 1
                    print(f"step {r['iter']} {key}: plexus {r[key]:.8f} torch {mine:.8f} (relative {rel:.2e})")
        print(f"parity over {len(eng)} steps: worst relative loss difference {worst:.3e} (tol {a.tol})")
        sys.exit(1 if bad or len(eng) < steps else 0)


if __name__ == "__main__":
    main()
