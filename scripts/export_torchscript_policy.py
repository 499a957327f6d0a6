#!/usr/bin/env python3
"""Exports a small VLA-shaped policy as TorchScript for rl-vla3.

A declared policy (--declare JSON, docs/policies.md) has `interface() -> str` (the JSON, or
with --manifest the file <stem>.interface.json beside the .pt instead) and
  heads(images List[u8[B,H,W,3]], proprio f32[B,P], text i64[B,L], text_len i64[B])
      -> (params f32[B,K,W], values f32[B])
with W the declared action head's width (sum of bins, or 2 x size for a Gaussian).

An undeclared one (TinyVLA's shape) has these two methods (policies/torchscript_policy.h):
  act(agentview u8[B,H,W,3], wrist u8[B,H,W,3], proprio f32[B,8], text i64[B,L],
      text_len i64[B], greedy bool) -> (tokens i64[B,K,7], log_probs f32[B,K], values f32[B])
  evaluate(agentview, wrist, proprio, text, text_len, tokens i64[B,K,7])
      -> (log_probs f32[B,K], entropy f32[B,K], values f32[B])

Usage: python3 scripts/export_torchscript_policy.py out.pt [--chunk 4] [--seed 0]
       python3 scripts/export_torchscript_policy.py out.pt --declare '{"format": ...}' [--manifest]
"""
import argparse
import json
import os
from typing import List, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F


class MyPolicy(nn.Module):
    def __init__(self, chunk: int = 4, bins: int = 256, vocab: int = 64, width: int = 64):
        super().__init__()
        self.chunk = chunk
        self.bins = bins
        self.vision = nn.Sequential(nn.Conv2d(6, 16, 8, stride=8), nn.GELU(),
                                    nn.AdaptiveAvgPool2d(2), nn.Flatten())
        self.text = nn.Embedding(vocab, width)
        self.proprio = nn.Linear(8, width)
        self.trunk = nn.Sequential(nn.Linear(64 + 2 * width, width), nn.GELU())
        self.action_head = nn.Linear(width, chunk * 7 * bins)
        self.value_head = nn.Linear(width, 1)

    def _logits(self, agentview: torch.Tensor, wrist: torch.Tensor, proprio: torch.Tensor,
                text: torch.Tensor, text_len: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        images = torch.cat([agentview, wrist], dim=3).permute(0, 3, 1, 2).float() / 255.0
        b = text.shape[0]
        mask = torch.arange(text.shape[1], device=text.device).unsqueeze(0) < text_len.unsqueeze(1)
        embedded = self.text(text.clamp(0, self.text.num_embeddings - 1))
        words = (embedded * mask.unsqueeze(-1)).sum(1) / text_len.clamp(min=1).unsqueeze(1)
        h = self.trunk(torch.cat([self.vision(images), words, self.proprio(proprio)], dim=1))
        return self.action_head(h).view(b, self.chunk, 7, self.bins), self.value_head(h).squeeze(-1)

    @torch.jit.export
    def act(self, agentview: torch.Tensor, wrist: torch.Tensor, proprio: torch.Tensor,
            text: torch.Tensor, text_len: torch.Tensor,
            greedy: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        logits, values = self._logits(agentview, wrist, proprio, text, text_len)
        if greedy:
            tokens = logits.argmax(-1)
        else:
            probs = F.softmax(logits, -1).reshape(-1, self.bins)
            tokens = torch.multinomial(probs, 1).view(logits.shape[0], self.chunk, 7)
        logp = F.log_softmax(logits, -1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1).sum(-1)
        return tokens, logp, values

    @torch.jit.export
    def evaluate(self, agentview: torch.Tensor, wrist: torch.Tensor, proprio: torch.Tensor,
                 text: torch.Tensor, text_len: torch.Tensor,
                 tokens: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        logits, values = self._logits(agentview, wrist, proprio, text, text_len)
        logp_all = F.log_softmax(logits, -1)
        logp = logp_all.gather(-1, tokens.unsqueeze(-1)).squeeze(-1).sum(-1)
        entropy = -(logp_all.exp() * logp_all).sum(-1).sum(-1)
        return logp, entropy, values

    def forward(self, proprio: torch.Tensor) -> torch.Tensor:
        return self.proprio(proprio)


class DeclaredPolicy(nn.Module):
    """A policy of any declared shape: one small conv encoder per camera."""

    def __init__(self, interface: dict, vocab: int = 64, width: int = 64,
                 out_width: int = -1, out_chunk: int = -1, raise_in_heads: bool = False):
        super().__init__()
        self.raise_in_heads = raise_in_heads
        action = interface["action"]
        size = int(action["size"])
        if action.get("kind", "bins") == "gaussian":
            head_width = 2 * size
        else:
            bins = action["bins"]
            head_width = sum(bins) if isinstance(bins, list) else size * int(bins)
        self.declaration = json.dumps(interface)
        self.chunk = out_chunk if out_chunk > 0 else int(interface["chunk"])
        self.head_width = out_width if out_width > 0 else head_width
        cameras = interface["cameras"]
        self.encoders = nn.ModuleList([
            nn.Sequential(nn.Conv2d(3, 8, 8, stride=8), nn.GELU(), nn.AdaptiveAvgPool2d(2),
                          nn.Flatten()) for _ in cameras])
        self.proprio_size = int(interface.get("proprio", 8))
        self.proprio = nn.Linear(max(self.proprio_size, 1), width)
        self.text = nn.Embedding(vocab, width)
        self.trunk = nn.Sequential(nn.Linear(32 * len(cameras) + 2 * width, width), nn.GELU())
        self.action_head = nn.Linear(width, self.chunk * self.head_width)
        self.value_head = nn.Linear(width, 1)

    @torch.jit.export
    def interface(self) -> str:
        return self.declaration

    @torch.jit.export
    def heads(self, images: List[torch.Tensor], proprio: torch.Tensor, text: torch.Tensor,
              text_len: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        if self.raise_in_heads:
            raise RuntimeError("this policy refuses every observation")
        features: List[torch.Tensor] = []
        for i, encoder in enumerate(self.encoders):
            features.append(encoder(images[i].permute(0, 3, 1, 2).float() / 255.0))
        b = text.shape[0]
        mask = torch.arange(text.shape[1], device=text.device).unsqueeze(0) < text_len.unsqueeze(1)
        embedded = self.text(text.clamp(0, self.text.num_embeddings - 1))
        words = (embedded * mask.unsqueeze(-1)).sum(1) / text_len.clamp(min=1).unsqueeze(1)
        if self.proprio_size > 0:
            p = self.proprio(proprio)
        else:
            p = torch.zeros(b, words.shape[1])
        h = self.trunk(torch.cat(features + [words, p], dim=1))
        params = self.action_head(h).view(b, self.chunk, self.head_width)
        return params, self.value_head(h).squeeze(-1)

    def forward(self, proprio: torch.Tensor) -> torch.Tensor:
        return proprio


class Undeclared(nn.Module):
    """A declared policy's network without its interface() (for --manifest)."""

    def __init__(self, inner: DeclaredPolicy):
        super().__init__()
        self.inner = inner

    @torch.jit.export
    def heads(self, images: List[torch.Tensor], proprio: torch.Tensor, text: torch.Tensor,
              text_len: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return self.inner.heads(images, proprio, text, text_len)

    def forward(self, proprio: torch.Tensor) -> torch.Tensor:
        return proprio


def export_declared(args: argparse.Namespace) -> None:
    interface = json.loads(args.declare)
    policy: nn.Module = DeclaredPolicy(interface, out_width=args.out_width,
                                       out_chunk=args.out_chunk,
                                       raise_in_heads=args.raise_in_heads)
    if args.manifest:
        policy = Undeclared(policy)
        stem = os.path.splitext(args.out)[0]
        with open(stem + ".interface.json", "w", encoding="utf-8") as f:
            json.dump(interface, f, indent=2)
    torch.jit.script(policy).save(args.out)
    print(f"wrote {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--chunk", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--without-evaluate", action="store_true",
                        help="export a broken module lacking evaluate() (for tests)")
    parser.add_argument("--declare", metavar="JSON",
                        help="export a declared policy of this interface (rl-vla3/interface/v1)")
    parser.add_argument("--manifest", action="store_true",
                        help="declare in <stem>.interface.json instead of an interface() method")
    parser.add_argument("--out-width", type=int, default=-1,
                        help="emit this many params per step, not the declared (for tests)")
    parser.add_argument("--out-chunk", type=int, default=-1,
                        help="emit this chunk, not the declared (for tests)")
    parser.add_argument("--raise-in-heads", action="store_true",
                        help="heads() raises (a TorchScript exception; for tests)")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    if args.declare:
        export_declared(args)
        return
    policy = MyPolicy(chunk=args.chunk)
    if args.without_evaluate:
        class Broken(nn.Module):
            def __init__(self, inner: MyPolicy):
                super().__init__()
                self.inner = inner

            @torch.jit.export
            def act(self, agentview: torch.Tensor, wrist: torch.Tensor, proprio: torch.Tensor,
                    text: torch.Tensor, text_len: torch.Tensor,
                    greedy: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
                return self.inner.act(agentview, wrist, proprio, text, text_len, greedy)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return x
        policy = Broken(policy)
    torch.jit.script(policy).save(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
