#!/usr/bin/python3
"""A PyTorch training loop on the CPU with regions around each phase of a
step: forward, backward, optimizer, and an evaluation every step.  With
--leak-eval the evaluation forgets torch.no_grad() and keeps its outputs
(a "history of validation predictions"): each kept output holds on to its
autograd graph and the activations saved for backward, so the heap grows
inside the region "eval" alone.  Without it, the evaluation runs under
no_grad and keeps a float.

    heapslope record -- /usr/bin/python3 tests/regions/torch_regions.py --leak-eval
    heapslope analyze heapslope.python3.*.hst     # "Growth by region"

The region context manager is the README's; without the recorder it does
nothing and the script runs unchanged.
"""
import argparse
import contextlib
import ctypes

import torch
from torch import nn

_lib = ctypes.CDLL(None)
_begin = getattr(_lib, "heapslope_region_begin", None)
_end = getattr(_lib, "heapslope_region_end", None)
mark = getattr(_lib, "heapslope_mark_batch", lambda: None)
if _begin:
    _begin.argtypes = [ctypes.c_char_p]


@contextlib.contextmanager
def region(name):
    if _begin:
        _begin(name.encode())
    try:
        yield
    finally:
        if _end:
            _end()


BATCH = 64
IN, HIDDEN, OUT = 32, 128, 8


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--leak-eval", action="store_true",
                    help="evaluate without torch.no_grad() and keep the "
                         "outputs")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.ReLU(),
                          nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                          nn.Linear(HIDDEN, OUT))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.MSELoss()
    x, y = torch.randn(BATCH, IN), torch.randn(BATCH, OUT)
    xv = torch.randn(BATCH, IN)
    history = []
    for _ in range(args.steps):
        with region("step"):
            with region("forward"):
                loss = loss_fn(model(x), y)
            with region("backward"):
                opt.zero_grad()
                loss.backward()
            with region("optimizer"):
                opt.step()
            with region("eval"):
                if args.leak_eval:
                    history.append(model(xv))  # the graph comes along
                else:
                    with torch.no_grad():
                        history.append(float(model(xv).sum()))
        del loss
        mark()


if __name__ == "__main__":
    main()
