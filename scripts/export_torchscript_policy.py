#!/usr/bin/env python3
"""Exports a small VLA-shaped policy as TorchScript for rl-vla3.

rl-vla3 loads any scripted module with these two methods (policies/torchscript_policy.h):
  act(agentview u8[B,H,W,3], wrist u8[B,H,W,3], proprio f32[B,8], text i64[B,L],
      text_len i64[B], greedy bool) -> (tokens i64[B,K,7], log_probs f32[B,K], values f32[B])
  evaluate(agentview, wrist, proprio, text, text_len, tokens i64[B,K,7])
      -> (log_probs f32[B,K], entropy f32[B,K], values f32[B])

Usage: python3 scripts/export_torchscript_policy.py out.pt [--chunk 4] [--seed 0]
"""
import argparse
from typing import Tuple

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
        mask = torch.arange(text.shape[1]).unsqueeze(0) < text_len.unsqueeze(1)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--chunk", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--without-evaluate", action="store_true",
                        help="export a broken module lacking evaluate() (for tests)")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
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
