#!/usr/bin/env python3
"""An Octo/OpenVLA-OFT-shaped policy for rl-vla3: a continuous 7-D Gaussian chunk of 8.

Reads three cameras (agentview, the wrist and sideview: every built-in scene has them), the 8
proprio values and the instruction as UTF-8 bytes; emits per chunk step 7 means and 7 log standard deviations. rl-vla3 samples, scores
(closed-form log-probability and entropy) and maps [low, high] onto the controller. Exports
`gaussian_chunk.pt` in OUT_DIR; docs/policies.md walks through it.

Usage: /usr/bin/python3 scripts/examples/gaussian_chunk_policy.py OUT_DIR [--size 64] [--seed 0]
"""
import argparse
import json
import os
from typing import List, Tuple

import torch
import torch.nn as nn


CAMERAS = ["agentview", "wrist", "sideview"]  # heads() reads them in this order


class GaussianChunkPolicy(nn.Module):
    def __init__(self, size: int, chunk: int = 8, width: int = 128, max_len: int = 64):
        super().__init__()
        self.chunk = chunk
        self.declaration = json.dumps({
            "format": "rl-vla3/interface/v1",
            "cameras": [{"name": name, "height": size, "width": size}
                        for name in CAMERAS],
            "proprio": 8,
            "action": {"kind": "gaussian", "size": 7, "low": -1, "high": 1},
            "chunk": chunk,
            "instruction": {"tokenizer": "bytes", "max_len": max_len},
        })
        self.cameras = nn.ModuleList([nn.Sequential(
            nn.Conv2d(3, 32, 8, stride=8), nn.GELU(), nn.Conv2d(32, 64, 3, padding=1), nn.GELU(),
            nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(64 * 16, width))
            for _ in CAMERAS])
        self.prompt = nn.Embedding(256, width)                       # one id per byte
        self.proprio = nn.Linear(8, width)
        self.trunk = nn.Sequential(nn.Linear((len(CAMERAS) + 2) * width, width), nn.GELU(),
                                   nn.Linear(width, width), nn.GELU())
        self.mean = nn.Linear(width, chunk * 7)
        # A state-independent log-std per chunk step and dimension, as PPO usually has.
        self.log_std = nn.Parameter(torch.full((chunk, 7), -1.0))
        self.value_head = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, 1))

    @torch.jit.export
    def interface(self) -> str:
        return self.declaration

    @torch.jit.export
    def heads(self, images: List[torch.Tensor], proprio: torch.Tensor, text: torch.Tensor,
              text_len: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        features: List[torch.Tensor] = []
        for i, camera in enumerate(self.cameras):
            features.append(camera(images[i].permute(0, 3, 1, 2).float() / 255.0))
        mask = torch.arange(text.shape[1], device=text.device).unsqueeze(0) < text_len.unsqueeze(1)
        words = self.prompt(text.clamp(0, 255))
        words = (words * mask.unsqueeze(-1)).sum(1) / text_len.clamp(min=1).unsqueeze(1)
        h = self.trunk(torch.cat(features + [words, self.proprio(proprio)], dim=1))
        b = h.shape[0]
        mean = torch.tanh(self.mean(h)).view(b, self.chunk, 7)
        log_std = self.log_std.unsqueeze(0).expand(b, self.chunk, 7)
        params = torch.cat([mean, log_std], dim=2)                    # [B, K, 2 x 7]
        return params, self.value_head(h.detach()).squeeze(-1)

    def forward(self, proprio: torch.Tensor) -> torch.Tensor:
        return proprio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--size", type=int, default=64, help="camera height and width")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    torch.manual_seed(args.seed)
    out = os.path.join(args.out_dir, "gaussian_chunk.pt")
    torch.jit.script(GaussianChunkPolicy(args.size)).save(out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
