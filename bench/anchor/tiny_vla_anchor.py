#!/usr/bin/python3
"""The same-work anchor: TinyVLA in plain PyTorch, as a user would write it in
Python, loading the C++ runtime's own checkpoint (model.safetensors +
model.json), so the two run the same weights on the same work.

  tiny_vla_anchor.py describe CHECKPOINT
  tiny_vla_anchor.py check CHECKPOINT DUMP [--device cpu]
      DUMP: a safetensors file of inputs and the C++ policy's outputs
      (`same_work dump`); exits 1 when they disagree beyond tolerance
      (fp32 on a CPU, bf16 on a GPU).
  tiny_vla_anchor.py time CHECKPOINT [--device cpu] [--batches 8,64]
      [--learner-batch 64] [--seconds 3] [--threads N] [--optimizer foreach]
      [--json FILE]

Inference: uint8 images staged in pinned host memory (on a GPU), one copy to
the device, the padded forward under inference mode, sampling of every
action dimension's bins, the tokens, log-probs and values back in one host
copy. Learner: the same batch staged the same way, the forward with autograd,
the runtime's PPO loss (decoupled clip, per-decision ratio, value and entropy
terms, weights 1 / batch), the global gradient norm clipped to 1.0, AdamW over
the runtime's three parameter groups (foreach, or fused where this torch has
it), one host read of the loss and gradient norm. bf16 autocast on a GPU
around the forward passes, fp32 on a CPU. Reads no file of the runtime but the
checkpoint; depends on torch only (the safetensors reader is below).
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8,
          "BOOL": torch.bool, "F64": torch.float64}
IMAGE, PROPRIO, TEXT, ACT = 0, 1, 2, 3
HAS_SDPA = hasattr(F, "scaled_dot_product_attention")


def read_safetensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        a, b = meta["data_offsets"]
        t = torch.frombuffer(bytearray(data[a:b]), dtype=DTYPES[meta["dtype"]])
        out[name] = t.reshape(meta["shape"]).clone()
    return out


class Block(nn.Module):
    def __init__(self, d, heads, mlp_ratio):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, mlp_ratio * d), nn.Linear(mlp_ratio * d, d)

    def forward(self, x, mask):
        B, L, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, L, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        if HAS_SDPA:
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        else:
            s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            a = torch.softmax(s if mask is None else s + mask, -1) @ v
        h = x + self.proj(a.transpose(1, 2).reshape(B, L, d))
        return h + self.fc2(F.gelu(self.fc1(self.ln2(h))))


class TinyVLA(nn.Module):
    """The runtime's TinyVLA (policies/tiny_vla.h), parameter for parameter."""

    def __init__(self, o):
        super().__init__()
        self.o = o
        d, c = o["d_model"], o["stem_channels"]
        for cam in ("agentview", "wrist"):
            setattr(self, f"stem_{cam}_1", nn.Conv2d(3, c, o["patch"], stride=o["patch"]))
            setattr(self, f"stem_{cam}_2", nn.Conv2d(c, d, 3, padding=1))
        self.text_embed = nn.Embedding(o["vocab_size"], d)
        self.proprio_embed = nn.Linear(o["proprio_dim"], d)
        self.blocks = nn.ModuleList(Block(d, o["heads"], o["mlp_ratio"]) for _ in range(o["layers"]))
        self.final_ln = nn.LayerNorm(d)
        self.action_head = nn.Linear(d, o["chunk"] * o["action_dim"] * o["bins"])
        self.value_head = nn.Sequential(nn.Linear(d, d), nn.Tanh(), nn.Linear(d, 1))
        g2 = o["grid"] ** 2
        self.image_pos = nn.Parameter(torch.zeros(2, g2, d))
        self.text_pos = nn.Parameter(torch.zeros(o["max_text_len"], d))
        self.act_token = nn.Parameter(torch.zeros(d))
        self.type_embed = nn.Parameter(torch.zeros(4, d))
        self.action_log_scale = nn.Parameter(torch.zeros(o["action_dim"]))

    def camera(self, img, c1, c2, pos):
        x = img.permute(0, 3, 1, 2).float().div(255.0).sub(0.5)
        x = F.adaptive_avg_pool2d(c2(F.gelu(c1(x))), self.o["grid"])
        return x.flatten(2).transpose(1, 2) + pos

    def forward(self, agentview, wrist, proprio, text, text_len, max_len):
        """max_len: the batch's longest instruction (a host int)."""
        B, d, o = proprio.shape[0], self.o["d_model"], self.o
        text = text[:, :max_len]
        t = self.text_embed(text) + self.text_pos[:max_len] + self.type_embed[TEXT]
        img = torch.cat([self.camera(agentview, self.stem_agentview_1, self.stem_agentview_2,
                                     self.image_pos[0]),
                         self.camera(wrist, self.stem_wrist_1, self.stem_wrist_2,
                                     self.image_pos[1])], 1) + self.type_embed[IMAGE]
        prop = (self.proprio_embed(proprio) + self.type_embed[PROPRIO]).unsqueeze(1)
        act = (self.act_token + self.type_embed[ACT]).expand(B, 1, d)
        x = torch.cat([img, prop, t, act], 1)
        mask = None
        if bool((text_len < max_len).any()):  # only a padded batch needs one
            S, start = x.shape[1], img.shape[1] + 1
            j = torch.arange(S, device=x.device) - start
            pad = (j >= text_len.unsqueeze(1)) & (j >= 0) & (j < max_len)
            mask = torch.zeros(B, 1, 1, S, device=x.device, dtype=x.dtype)
            mask = mask.masked_fill(pad.view(B, 1, 1, S), float("-inf"))
        for blk in self.blocks:
            x = blk(x, mask)
        r = self.final_ln(x[:, -1])
        logits = self.action_head(r).view(B, o["chunk"], o["action_dim"], o["bins"])
        logits = logits * self.action_log_scale.exp().view(1, 1, -1, 1)
        return logits, self.value_head(r.detach()).squeeze(-1)


def load(checkpoint, device):
    with open(os.path.join(checkpoint, "model.json")) as f:
        side = json.load(f)
    net = TinyVLA(side["options"])
    state = read_safetensors(os.path.join(checkpoint, "model.safetensors"))
    net.load_state_dict(state, strict=True)
    return net.to(device)


def describe(net, device, threads):
    o = net.o
    params = sum(p.numel() for p in net.parameters())
    return (f"anchor: plain PyTorch {torch.__version__}, {device_name(device)}, "
            f"{threads} intra-op threads; TinyVLA {params / 1e6:.2f}M: d {o['d_model']}, "
            f"{o['heads']} heads, {o['layers']} layers, MLP {o['mlp_ratio'] * o['d_model']} "
            f"(GELU), pre-LN; attention "
            f"{'F.scaled_dot_product_attention' if HAS_SDPA else 'matmul-softmax-matmul'}, "
            f"a mask only when padded; autocast "
            f"{'bf16 around the forward passes' if device.type == 'cuda' else 'none (fp32)'}; "
            f"syncs: one host copy per inference batch, one host read per step")


def device_name(device):
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"CPU ({os.cpu_count()} cores)"


def autocast(device):
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return torch.autocast("cpu", enabled=False)


class Batch:
    """A pageable batch (as observations arrive) and its staging copy."""

    def __init__(self, net, B, device, seed=0):
        o, g = net.o, torch.Generator().manual_seed(seed)
        self.source = {
            "agentview": torch.randint(0, 256, (B, 64, 64, 3), dtype=torch.uint8, generator=g),
            "wrist": torch.randint(0, 256, (B, 64, 64, 3), dtype=torch.uint8, generator=g),
            "proprio": torch.randn(B, o["proprio_dim"], generator=g),
            "text": torch.randint(2, o["vocab_size"], (B, o["max_text_len"]), generator=g),
        }
        pin = device.type == "cuda"
        self.staged = {k: torch.empty_like(v, pin_memory=pin) for k, v in self.source.items()}
        self.text_len = torch.full((B,), o["max_text_len"], dtype=torch.int64)
        self.max_len = o["max_text_len"]
        self.device = device

    def on_device(self):
        out = {}
        for k, v in self.source.items():
            self.staged[k].copy_(v)
            out[k] = self.staged[k].to(self.device, non_blocking=True)
        out["text_len"] = self.text_len.to(self.device, non_blocking=True)
        return out


def act(net, x, max_len):
    logits, values = net(x["agentview"], x["wrist"], x["proprio"], x["text"],
                         x["text_len"], max_len)
    logits = logits.float()
    B, K, A, bins = logits.shape
    probs = torch.softmax(logits, -1).reshape(-1, bins)
    tokens = torch.multinomial(probs, 1).view(B, K, A)
    logp = torch.log_softmax(logits, -1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1).sum(-1)
    return torch.cat([tokens.flatten(1).float(), logp, values.float().unsqueeze(1)], 1)


def measure(seconds, per_call, call):
    call()  # warm-up: kernels, allocator
    call()
    calls, t0 = 0, time.perf_counter()
    while (wall := time.perf_counter() - t0) < seconds:
        call()
        calls += 1
    return calls * per_call / wall


def time_inference(net, device, B, seconds):
    batch = Batch(net, B, device)
    net.eval()

    def call():
        with torch.inference_mode(), autocast(device):
            act(net, batch.on_device(), batch.max_len).cpu()  # the batch's one host copy
    return measure(seconds, B, call)


def param_groups(net):
    """The runtime's three groups: weights, value head, action temperatures."""
    value = [p for n, p in net.named_parameters() if n.startswith("value_head.")]
    scale = [net.action_log_scale]
    ids = {id(p) for p in value + scale}
    weights = [p for p in net.parameters() if id(p) not in ids]
    return [{"params": weights, "lr": 1e-4, "weight_decay": 0.0},
            {"params": value, "lr": 1e-3, "weight_decay": 0.0},
            {"params": scale, "lr": 1e-2, "weight_decay": 0.0}]


def make_optimizer(net, kind):
    """AdamW with `kind` ("foreach" or "fused"), or None where this torch or
    device has no such implementation."""
    try:
        return torch.optim.AdamW(param_groups(net), **{kind: True})
    except (TypeError, RuntimeError, ValueError):
        return None


def ppo_loss(logits, values, tokens, behav, adv, ret, clip=0.2, is_cap=2.0,
             value_coef=0.5, entropy_coef=0.0):
    """The runtime's DecoupledPpoLoss, per-decision ratio, one pass."""
    B = logits.shape[0]
    w = 1.0 / B
    logp_all = torch.log_softmax(logits.float(), -1)
    steps = logp_all.gather(-1, tokens.unsqueeze(-1)).squeeze(-1).sum(-1)  # [B, K]
    entropy = -(logp_all.exp() * logp_all).sum(-1).sum(-1).mean(1)
    lp = steps.sum(1)
    prox = lp.detach()
    ratio = torch.exp(lp - prox)
    is_w = torch.clamp_max(torch.exp(prox - behav), is_cap)
    surrogate = torch.min(ratio * adv, torch.clamp(ratio, 1 - clip, 1 + clip) * adv) * is_w
    loss = -(surrogate * w).sum()
    loss = loss + value_coef * 0.5 * ((values.float() - ret).pow(2) * w).sum()
    return loss - entropy_coef * (entropy * w).sum()


def time_learner(net, device, B, seconds, opt):
    batch = Batch(net, B, device)
    net.train()
    params = [p for grp in opt.param_groups for p in grp["params"]]
    o, g = net.o, torch.Generator().manual_seed(1)
    tokens = torch.randint(0, o["bins"], (B, o["chunk"], o["action_dim"]), generator=g).to(device)
    behav = torch.full((B,), -5.5 * o["chunk"] * o["action_dim"]).to(device)
    adv = torch.randn(B, generator=g).to(device)
    ret = torch.rand(B, generator=g).to(device)

    def call():
        x = batch.on_device()
        with autocast(device):
            logits, values = net(x["agentview"], x["wrist"], x["proprio"], x["text"],
                                 x["text_len"], batch.max_len)
        loss = ppo_loss(logits, values, tokens, behav, adv, ret)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True) \
            if "foreach" in torch.nn.utils.clip_grad_norm_.__code__.co_varnames \
            else torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        torch.stack([loss.detach().float(), norm.float()]).cpu()  # the step's one host read
    return measure(seconds, B, call)


def check(net, dump, device):
    """Compares with the C++ policy's outputs on the same inputs."""
    d = read_safetensors(dump)
    x = {k: d[k].to(device) for k in ("agentview", "wrist", "proprio", "text", "text_len")}
    max_len = max(1, min(int(d["text_len"].max()), net.o["max_text_len"]))
    net.eval()
    with torch.no_grad(), autocast(device):
        logits, values = net(x["agentview"], x["wrist"], x["proprio"], x["text"],
                             x["text_len"].clamp_max(net.o["max_text_len"]), max_len)
    tol = 5e-2 if device.type == "cuda" else 1e-4
    worst = 0.0
    for name, ours in (("logits", logits), ("values", values)):
        for form in ("padded", "packed"):
            theirs = d[f"{form}_{name}"].float()
            scale = max(1.0, float(theirs.abs().max()))
            err = float((ours.float().cpu() - theirs).abs().max()) / scale
            worst = max(worst, err)
            print(f"check {form:6s} {name:6s}: max |anchor - C++| / max(1, max|C++|) = {err:.2e}"
                  f" (tolerance {tol:.0e})")
    print("check:", "agree" if worst <= tol else "DISAGREE")
    return 0 if worst <= tol else 1


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("verb", choices=["describe", "check", "time"])
    ap.add_argument("checkpoint")
    ap.add_argument("dump", nargs="?")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batches", default="8,64")
    ap.add_argument("--learner-batch", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--optimizers", default="foreach,fused",
                    help="AdamW implementations to time; the fastest is the anchor's learner row")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    if a.threads > 0:
        torch.set_num_threads(a.threads)  # once, here
    torch.manual_seed(0)
    device = torch.device(a.device)
    net = load(a.checkpoint, device)
    print(describe(net, device, torch.get_num_threads()), flush=True)
    if a.verb == "describe":
        return 0
    if a.verb == "check":
        if not a.dump:
            ap.error("check needs DUMP")
        return check(net, a.dump, device)
    rows = []
    batches = [int(b) for b in a.batches.split(",")]
    for B in batches:
        rows.append({"what": "inference", "batch": B,
                     "per_s": time_inference(net, device, B, a.seconds)})
    if a.learner_batch > 0:
        timed = {}
        for kind in a.optimizers.split(","):
            opt = make_optimizer(net, kind)
            if opt is not None:
                timed[kind] = time_learner(net, device, a.learner_batch, a.seconds, opt)
        best = max(timed, key=timed.get)
        for kind, per_s in timed.items():
            rows.append({"what": f"learner_{kind}", "batch": a.learner_batch, "per_s": per_s})
        rows.append({"what": "learner", "batch": a.learner_batch, "per_s": timed[best],
                     "optimizer": best})
    params = sum(p.numel() for p in net.parameters())
    for r in rows:
        r.update({"side": "anchor", "torch": torch.__version__, "device": device_name(device),
                  "params": params, "d_model": net.o["d_model"], "layers": net.o["layers"],
                  "heads": net.o["heads"], "threads": torch.get_num_threads()})
        print(f"anchor {r['what']:15s} batch {r['batch']:4d}: {r['per_s']:10.1f} /s"
              + (f" (AdamW {r['optimizer']})" if "optimizer" in r else ""), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
