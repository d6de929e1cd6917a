#!/usr/bin/env python3
"""Plain-PyTorch peer of `plexus gpt sample`: greedy generation with a hand-written KV cache.

    python3 examples/bench/gpt_generate_peer.py --model m.h5 --prompt-file p.txt --tokens 256 [--threads N]

Loads a model file plexus wrote (GPT-2 names, Conv1D weights [in x out]; gpt_torch_peer.load_h5),
encodes the prompt with its character vocabulary, runs one forward pass over the prompt that
keeps every layer's keys and values (the prefill), then one row per new token against the cache,
greedy (argmax; ties to the lowest id, as plexus's --top-k 1). Prints one `BENCH_JSON {...}`
line: the tokens, the seconds to the first new token, the whole time and the decode time per
token after the first.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_torch_peer import load_h5  # noqa: E402


class CachedGPT:
    def __init__(self, cfg, tensors):
        self.cfg = cfg
        self.p = {k: torch.from_numpy(v) for k, v in tensors.items()}
        self.k = [None] * cfg["layers"]
        self.v = [None] * cfg["layers"]

    def forward(self, idx, t0):
        """Logits of the last of tokens idx [T] at positions t0 .. t0 + T - 1; appends their keys and values."""
        p, c = self.p, self.cfg
        C, H = c["embed"], c["heads"]
        T = idx.shape[0]
        x = p["wte"][idx] + p["wpe"][t0:t0 + T]
        for l in range(c["layers"]):
            h = f"h.{l}."
            a = F.layer_norm(x, (C,), p[h + "ln_1.weight"], p[h + "ln_1.bias"], 1e-5)
            qkv = a @ p[h + "attn.c_attn.weight"] + p[h + "attn.c_attn.bias"]
            q, k, v = (t.view(T, H, C // H).transpose(0, 1) for t in qkv.split(C, dim=1))  # [H, T, d]
            self.k[l] = k if t0 == 0 else torch.cat([self.k[l], k], dim=1)
            self.v[l] = v if t0 == 0 else torch.cat([self.v[l], v], dim=1)
            att = (q @ self.k[l].transpose(-2, -1)) / math.sqrt(C // H)
            if T > 1:
                causal = torch.ones(T, T, dtype=torch.bool).triu(1)
                att = att.masked_fill(causal, float("-inf"))
            y = (F.softmax(att, dim=-1) @ self.v[l]).transpose(0, 1).reshape(T, C)
            x = x + y @ p[h + "attn.c_proj.weight"] + p[h + "attn.c_proj.bias"]
            a = F.layer_norm(x, (C,), p[h + "ln_2.weight"], p[h + "ln_2.bias"], 1e-5)
            m = F.gelu(a @ p[h + "mlp.c_fc.weight"] + p[h + "mlp.c_fc.bias"], approximate="tanh")
            x = x + m @ p[h + "mlp.c_proj.weight"] + p[h + "mlp.c_proj.bias"]
        x = F.layer_norm(x[-1:], (C,), p["ln_f.weight"], p["ln_f.bias"], 1e-5)
        return (x @ (p["wte"] if c["tied"] else p["lm_head.weight"]).t())[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt-file", required=True)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    cfg, tensors, chars = load_h5(a.model)
    text = open(a.prompt_file, encoding="utf-8").read().rstrip("\n")
    ids = [chars.index(ch) for ch in text]
    if len(ids) + a.tokens > cfg["block"]:
        sys.exit("the prompt and the tokens must fit the context: this loop keeps one cache")
    model = CachedGPT(cfg, tensors)
    out = []
    with torch.no_grad():
        start = time.perf_counter()
        logits = model.forward(torch.tensor(ids), 0)
        out.append(int(torch.argmax(logits)))
        first = time.perf_counter() - start
        for n in range(1, a.tokens):
            logits = model.forward(torch.tensor([out[-1]]), len(ids) + n - 1)
            out.append(int(torch.argmax(logits)))
        total = time.perf_counter() - start
    per_token = (total - first) / max(1, a.tokens - 1)
    print("BENCH_JSON " + json.dumps({"peer": "torch " + torch.__version__, "threads": a.threads, "tokens": a.tokens,
                                      "seconds": total, "first_token_seconds": first,
                                      "decode_seconds_per_token": per_token, "text": "".join(chars[t] for t in out)}))


if __name__ == "__main__":
    main()
