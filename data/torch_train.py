#!/usr/bin/python3
"""A small PyTorch training loop on the CPU, to record with heapslope.

    heapslope record -- python3 data/torch_train.py --keep
    heapslope analyze heapslope.python3.*.hst

A tiny transformer encoder learns a toy task on synthetic data (fixed
seeds: every run computes the same thing).  With --keep the loop also keeps
each step's output in a Python list, detached from the graph: the "history
of outputs" a user adds for plotting or debugging.  That history grows the
heap by 160 KiB per step, allocated by c10::alloc_cpu for the encoder's
last layer norm, and it is what heapslope should find.

After each step the script marks the batch for heapslope (the mark exists
only under the recorder; without it the script runs unchanged), then reads
glibc's own view of the heap, mallinfo2(), and the process's RSS.
--stats FILE writes those per-step numbers as JSON, so that heapslope's
figures can be checked against the allocator's.
"""
import argparse
import ctypes
import json
import os
import sys

import torch
from torch import nn

# The model and the data: a few seconds for 50 steps on one core.  The
# encoder's output, the tensor --keep holds on to, is BATCH x SEQ x D_MODEL
# floats: 160 KiB per step.
VOCAB = 64
D_MODEL = 32
HEADS = 4
FEEDFORWARD = 4 * D_MODEL
LAYERS = 2
BATCH = 32
SEQ = 40


class Mallinfo2(ctypes.Structure):
    """glibc's struct mallinfo2 (malloc.h): ten size_t."""
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena",     # bytes the arenas took from the system (not mmapped)
        "ordblks",   # free chunks
        "smblks",    # fastbin chunks
        "hblks",     # mmapped chunks
        "hblkhd",    # bytes in mmapped chunks
        "usmblks",   # unused (0)
        "fsmblks",   # bytes in fastbins
        "uordblks",  # bytes in use (not counting mmapped chunks)
        "fordblks",  # bytes free in the arenas
        "keepcost",  # free bytes at the top of the heap (trimmable)
    )]


LIBC = ctypes.CDLL(None)
# Present only when the process runs under `heapslope record`.
MARK_BATCH = getattr(LIBC, "heapslope_mark_batch", None)
try:
    MALLINFO2 = LIBC.mallinfo2
    MALLINFO2.restype = Mallinfo2
    MALLINFO2.argtypes = []
except AttributeError:  # not glibc, or glibc < 2.33
    MALLINFO2 = None
PAGE = os.sysconf("SC_PAGE_SIZE")


def measure(step):
    """The allocator's and the kernel's view of memory after one step."""
    with open("/proc/self/statm") as f:
        rss = int(f.read().split()[1]) * PAGE
    m = {"step": step, "rss": rss}
    if MALLINFO2 is not None:
        mi = MALLINFO2()
        m.update(in_use=mi.uordblks, free=mi.fordblks, arena=mi.arena,
                 keepcost=mi.keepcost, hblkhd=mi.hblkhd)
    return m


def storage_bytes(t):
    """Bytes of the memory block behind tensor t."""
    if hasattr(t, "untyped_storage"):  # PyTorch 2
        return t.untyped_storage().nbytes()
    return t.storage().nbytes()


def slope(ys, first):
    """Least-squares slope of ys[first:] against the step number."""
    pts = list(enumerate(ys))[first:]
    n = len(pts)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        layer = nn.TransformerEncoderLayer(D_MODEL, HEADS, FEEDFORWARD,
                                           dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, LAYERS)
        self.head = nn.Linear(D_MODEL, VOCAB)

    def forward(self, tokens):
        hidden = self.encoder(self.embed(tokens))
        return hidden, self.head(hidden)


def synthetic_batch(gen, seq):
    """Random tokens; the target of each token is its left neighbour plus
    one, a task the model can learn from context."""
    tokens = torch.randint(0, VOCAB, (BATCH, seq), generator=gen)
    target = (torch.roll(tokens, 1, dims=1) + 1) % VOCAB
    return tokens, target


def train_step(model, opt, loss_fn, tokens, target):
    """One step of training; returns the encoder's output."""
    hidden, logits = model(tokens)
    loss = loss_fn(logits.reshape(-1, VOCAB), target.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    return hidden


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=50,
                    help="training steps (batches), default 50")
    ap.add_argument("--keep", action="store_true",
                    help="keep every step's output (detached) in a list")
    ap.add_argument("--grow-seq", type=int, default=0, metavar="N",
                    help="lengthen the sequences by N tokens every step (a "
                    "length curriculum); --keep then keeps the first "
                    f"{SEQ} positions of each output, still 160 KiB")
    ap.add_argument("--stats", metavar="FILE",
                    help="write per-step mallinfo2 and RSS as JSON")
    # One thread by default, not PyTorch's one per core: with one thread
    # every allocation comes from glibc's main arena in the same order in
    # each run, and the recorder's writer thread keeps a core to itself.
    # More threads only speed up the matrix products of this small model.
    ap.add_argument("--threads", type=int, default=1,
                    help="torch.set_num_threads (default 1)")
    args = ap.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(1)
    model = Model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    history = []  # the growth: one tensor per step, dropped only at exit
    series = []
    kept_bytes = 0
    for step in range(args.steps):
        seq = SEQ + args.grow_seq * step
        tokens, target = synthetic_batch(gen, seq)
        hidden = train_step(model, opt, loss_fn, tokens, target)
        if args.keep:
            # the whole output, or with --grow-seq a copy of its first
            # SEQ positions: the same 160 KiB every step either way
            kept = hidden.detach()
            if args.grow_seq:
                kept = kept[:, :SEQ].clone()
            kept_bytes = storage_bytes(kept)
            history.append(kept)
        # what the next step would free anyway, freed before the measure
        del tokens, target, hidden

        if MARK_BATCH is not None:
            MARK_BATCH()
        series.append(measure(step))

    warmup = min(len(series) // 10, 5)  # as `heapslope analyze` does
    summary = {k: slope([m[k] for m in series], warmup)
               for k in ("in_use", "free", "rss") if series and k in series[0]}
    print(f"torch_train: {args.steps} steps, keep={args.keep}, slopes "
          f"after {warmup} warm-up steps (B/step): " +
          ", ".join(f"{k} {v:+.0f}" for k, v in summary.items()),
          file=sys.stderr)
    if args.stats:
        with open(args.stats, "w") as f:
            json.dump({"steps": args.steps, "keep": args.keep,
                       "grow_seq": args.grow_seq,
                       "kept_tensor_bytes": kept_bytes, "series": series},
                      f, indent=1)


if __name__ == "__main__":
    main()
