#!/usr/bin/env python3
"""An OpenVLA-shaped policy for rl-vla3: one camera, a SentencePiece prompt, 256 bins.

Exports `one_camera.pt` (a TorchScript module that declares its interface) and the SentencePiece
model `one_camera.model` it reads its prompt with, both in OUT_DIR. docs/policies.md walks
through it; any module with these two methods trains with rl-vla3:

  interface() -> str       the declaration (JSON, rl-vla3/interface/v1)
  heads(images, proprio, text, text_len) -> (params, values)

Usage: /usr/bin/python3 scripts/examples/one_camera_policy.py OUT_DIR [--size 64] [--seed 0]
"""
import argparse
import json
import os
from typing import List, Tuple

import sentencepiece as spm
import torch
import torch.nn as nn

# A prompt corpus for the tokenizer. A real policy ships the tokenizer it was pretrained with
# (LLaMA's, for OpenVLA); this one learns its pieces from instructions like rl-vla3's.
CORPUS = [
    "lift the red cube", "put the red cube in the basket", "put the blue cube in the bowl",
    "open the drawer", "close the drawer", "stack the green cube on the red cube",
    "put the red cube on the plate", "push the button", "pick up the green cube",
    "what action should the robot take to lift the red cube",
]


def train_tokenizer(prefix: str) -> None:
    corpus = prefix + ".corpus.txt"
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(CORPUS * 10))
    spm.SentencePieceTrainer.train(input=corpus, model_prefix=prefix, vocab_size=60,
                                   hard_vocab_limit=False, minloglevel=2)
    os.remove(corpus)
    os.remove(prefix + ".vocab")  # the pieces as text; the .model holds them


class OneCameraPolicy(nn.Module):
    def __init__(self, size: int, vocab: int, chunk: int = 4, bins: int = 256,
                 width: int = 128, max_len: int = 24):
        super().__init__()
        self.chunk, self.bins = chunk, bins
        # The declaration travels inside the module; the model file is named relative to the
        # .pt's folder, and rl-vla3 copies it into every checkpoint.
        self.declaration = json.dumps({
            "format": "rl-vla3/interface/v1",
            "cameras": [{"name": "agentview", "height": size, "width": size}],
            "proprio": 0,
            "action": {"kind": "bins", "size": 7, "bins": bins, "low": -1, "high": 1},
            "chunk": chunk,
            "instruction": {"tokenizer": "sentencepiece", "model": "one_camera.model",
                            "max_len": max_len},
        })
        self.vision = nn.Sequential(
            nn.Conv2d(3, 32, 8, stride=8), nn.GELU(), nn.Conv2d(32, 64, 3, padding=1), nn.GELU(),
            nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(64 * 16, width))
        self.prompt = nn.Embedding(vocab, width)
        self.trunk = nn.Sequential(nn.Linear(2 * width, width), nn.GELU(),
                                   nn.Linear(width, width), nn.GELU())
        self.action_head = nn.Linear(width, chunk * 7 * bins)
        self.value_head = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, 1))

    @torch.jit.export
    def interface(self) -> str:
        return self.declaration

    @torch.jit.export
    def heads(self, images: List[torch.Tensor], proprio: torch.Tensor, text: torch.Tensor,
              text_len: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        image = images[0].permute(0, 3, 1, 2).float() / 255.0      # uint8 [B,H,W,3] -> [B,3,H,W]
        mask = torch.arange(text.shape[1], device=text.device).unsqueeze(0) < text_len.unsqueeze(1)
        words = self.prompt(text.clamp(0, self.prompt.num_embeddings - 1))
        words = (words * mask.unsqueeze(-1)).sum(1) / text_len.clamp(min=1).unsqueeze(1)
        h = self.trunk(torch.cat([self.vision(image), words], dim=1))
        logits = self.action_head(h).view(-1, self.chunk, 7 * self.bins)  # [B, K, sum(bins)]
        return logits, self.value_head(h.detach()).squeeze(-1)

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
    prefix = os.path.join(args.out_dir, "one_camera")
    train_tokenizer(prefix)
    vocab = spm.SentencePieceProcessor(model_file=prefix + ".model").get_piece_size()
    torch.jit.script(OneCameraPolicy(args.size, vocab)).save(prefix + ".pt")
    print(f"wrote {prefix}.pt and {prefix}.model")


if __name__ == "__main__":
    main()
