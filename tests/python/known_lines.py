"""Allocation sites at known lines, for test_known_lines.py: every batch,
each site keeps one block of its own size, so each site is one stack
growing by exactly that size a batch.  A site's line carries a marker
comment (`# SITE:name`), and each call on the way to it one more
(`# CALL:name`): the test finds the lines by these markers.

    known_lines.py BATCHES [TRUTH.json]

Before the first batch ends, the sites run WARMUP times more into a list
that is dropped: CPython 3.11 specializes a call after a few runs, which
changes the C path to it (`coro.send` stops going through
PyObject_Vectorcall), so a site's stack before and after would be two.

With TRUTH.json, writes each site's size and the chain of Python frames
the interpreter itself had on the site's line (sys._getframe: qualname,
co_filename, line, innermost first): `at(site)`, called on the
allocating line, takes it and returns the size.  The sites:
  module          the loop at module level
  plain           bytearray in a function
  ctypes          libc's malloc called through ctypes (a C extension)
  gen             inside a generator, driven by a for loop
  coro_send       inside a coroutine driven by .send()
  asyncio         inside a coroutine awaited by an asyncio task
  except_direct   in an except block
  except_callee   in a function called from an except block
  finally_direct  in a finally block an exception unwinds through
  finally_callee  in a function called from that finally block
  thread          on a threading.Thread
  native_thread   malloc as the start routine of a pthread that never
                  runs Python: no Python frame
  shared_1/2      one function (SITE:shared) from two call sites
  method          a method (Model.step)
  nested          a nested function (outer.<locals>.inner)
  listcomp        inside a list comprehension (a frame of its own in 3.11)
"""
import asyncio
import ctypes
import json
import sys
import threading

# far apart (each 1.17 times the last), none a multiple of another
SIZES = {
    "module": 100003, "plain": 117017, "ctypes": 136999, "gen": 160001,
    "coro_send": 187003, "asyncio": 219001, "except_direct": 256019,
    "except_callee": 299993, "finally_direct": 351011,
    "finally_callee": 410009, "thread": 480017, "native_thread": 561019,
    "shared_1": 656003, "shared_2": 767003, "method": 897019,
    "nested": 1049011, "listcomp": 1227007,
}

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
mark = getattr(libc, "heapslope_mark_batch", lambda: None)
truth = {}
record_truth = False  # set after the warm-up, whose module line is another


def at(site):
    """The size of site; the first time, also the caller's chain of
    frames (the caller is on the allocating line)."""
    if record_truth and site not in truth:
        chain = []
        f = sys._getframe(1)
        while f is not None:
            chain.append([f.f_code.co_qualname, f.f_code.co_filename,
                          f.f_lineno])
            f = f.f_back
        truth[site] = chain
    return SIZES[site]


def plain(keep):
    keep.append(bytearray(at("plain")))  # SITE:plain


def c_call(keep):
    keep.append(libc.malloc(at("ctypes")))  # SITE:ctypes


def generate(keep):
    keep.append(bytearray(at("gen")))  # SITE:gen
    yield


def drive_generator(keep):
    for _ in generate(keep):  # CALL:gen
        pass


async def coroutine(keep):
    keep.append(bytearray(at("coro_send")))  # SITE:coro_send


def drive_coroutine(keep):
    coro = coroutine(keep)
    try:
        coro.send(None)  # CALL:coro_send
    except StopIteration:
        pass


async def async_leaf(keep):
    keep.append(bytearray(at("asyncio")))  # SITE:asyncio
    await asyncio.sleep(0)


async def async_task(keep):
    await async_leaf(keep)  # CALL:asyncio


def drive_asyncio(loop, keep):
    loop.run_until_complete(async_task(keep))  # CALL:asyncio_loop


def except_direct(keep):
    try:
        raise ValueError("caught here")
    except ValueError:
        keep.append(bytearray(at("except_direct")))  # SITE:except_direct


def except_callee(keep):
    keep.append(bytearray(at("except_callee")))  # SITE:except_callee


def except_calls(keep):
    try:
        {}["missing"]
    except KeyError:
        except_callee(keep)  # CALL:except_callee


def raiser():
    raise LookupError("unwinding")


def finally_callee(keep):
    keep.append(bytearray(at("finally_callee")))  # SITE:finally_callee


def unwinds(keep):
    """The exception raiser() raised goes through this frame's finally
    (and on to catches_unwind): raiser's frame is gone by then."""
    try:
        raiser()
    finally:
        keep.append(bytearray(at("finally_direct")))  # SITE:finally_direct
        finally_callee(keep)  # CALL:finally_callee


def catches_unwind(keep):
    try:
        unwinds(keep)  # CALL:unwinds
    except LookupError:
        pass


def thread_body(keep):
    keep.append(bytearray(at("thread")))  # SITE:thread


def drive_thread(keep):
    t = threading.Thread(target=thread_body, args=(keep,))
    t.start()
    t.join()


def drive_native_thread(keep):
    """pthread_create(malloc, SIZE): the thread's start routine is malloc
    itself, its exit value the block."""
    tid = ctypes.c_ulong()
    start = ctypes.cast(libc.malloc, ctypes.c_void_p)
    size = ctypes.c_void_p(SIZES["native_thread"])
    if libc.pthread_create(ctypes.byref(tid), None, start, size) != 0:
        sys.exit("pthread_create failed")
    block = ctypes.c_void_p()
    libc.pthread_join(tid, ctypes.byref(block))
    keep.append(block.value)


def shared(keep, site):
    keep.append(bytearray(at(site)))  # SITE:shared


class Model:
    def step(self, keep):
        keep.append(bytearray(at("method")))  # SITE:method


def outer(keep):
    def inner():
        keep.append(bytearray(at("nested")))  # SITE:nested
    inner()  # CALL:nested


def comprehension(keep):
    keep.extend([bytearray(at("listcomp")) for _ in range(1)])  # SITE:listcomp


def one_batch(loop, model, keep):
    plain(keep)  # CALL:plain
    c_call(keep)  # CALL:ctypes
    drive_generator(keep)  # CALL:drive_generator
    drive_coroutine(keep)  # CALL:drive_coroutine
    drive_asyncio(loop, keep)  # CALL:drive_asyncio
    except_direct(keep)  # CALL:except_direct
    except_calls(keep)  # CALL:except_calls
    catches_unwind(keep)  # CALL:catches_unwind
    drive_thread(keep)  # CALL:drive_thread
    drive_native_thread(keep)  # CALL:drive_native_thread
    shared(keep, "shared_1")  # CALL:shared_1
    shared(keep, "shared_2")  # CALL:shared_2
    model.step(keep)  # CALL:method
    outer(keep)  # CALL:outer
    comprehension(keep)  # CALL:comprehension


WARMUP = 20
loop = asyncio.new_event_loop()
model = Model()
for _ in range(WARMUP):
    scratch = []
    one_batch(loop, model, scratch)
    for block in scratch:
        if isinstance(block, int):
            libc.free(ctypes.c_void_p(block))
keep = []
record_truth = len(sys.argv) > 2
for batch in range(int(sys.argv[1])):
    keep.append(bytearray(at("module")))  # SITE:module
    one_batch(loop, model, keep)  # CALL:one_batch
    mark()
loop.close()
if record_truth:
    truth["native_thread"] = []
    with open(sys.argv[2], "w") as f:
        json.dump({"sizes": SIZES, "chains": truth}, f, indent=1)
