#!/usr/bin/python3
"""A PyTorch input pipeline with worker processes, the standard set-up of a
trainer: a DataLoader with num_workers=2 hands the loop batches that the
workers built, in shared memory.  With --keep the loop keeps every input
batch (`seen.append(x)`, a classic "history for later" bug); the batches
live in shared-memory mappings, not in the malloc heap.

    dataloader.py [--steps N] [--keep] [--batch-kib K]

Marks each step for heapslope (a no-op without the recorder) and prints one
line at the end: the bytes kept per step."""
import argparse
import ctypes

import torch
from torch.utils.data import DataLoader, Dataset

_lib = ctypes.CDLL(None)
mark_batch = getattr(_lib, "heapslope_mark_batch", lambda: None)


class Inputs(Dataset):
    """Sample i is a row of floats; a batch of ROWS rows is K KiB."""

    def __init__(self, n, row):
        self.n, self.row = n, row

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(self.row, generator=g)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--batch-kib", type=int, default=64)
    a = ap.parse_args()
    rows = 16
    row = a.batch_kib * 1024 // 4 // rows
    torch.manual_seed(0)
    model = torch.nn.Linear(row, 8)
    loader = DataLoader(Inputs(a.steps * rows, row), batch_size=rows,
                        num_workers=2, shuffle=False)
    seen = []
    for x in loader:
        loss = model(x).sum()
        loss.backward()
        model.zero_grad()
        if a.keep:
            seen.append(x)
        mark_batch()
    print(f"kept_bytes_per_step {rows * row * 4 if a.keep else 0}")


if __name__ == "__main__":
    main()
