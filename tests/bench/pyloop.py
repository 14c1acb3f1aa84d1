"""The benchmarks' Python loop: each iteration builds 400 dicts with
bytearrays, keeps a small summary and marks the batch (a no-op without
heapslope's recorder).  pyloop.py ITERATIONS"""
import ctypes
import sys

mark = getattr(ctypes.CDLL(None), "heapslope_mark_batch", lambda: None)
iters = int(sys.argv[1])
history = []
for i in range(iters):
    batch = [{"step": i, "item": j, "name": "x%d" % j,
              "data": bytearray(32 + j % 200)} for j in range(400)]
    total = sum(len(d["data"]) for d in batch)
    history.append({"step": i, "total": total, "grads": bytearray(2048),
                    "tags": [str(k) for k in range(8)]})
    del batch
    mark()
print("pyloop: %d iterations, %d kept" % (iters, len(history)))
