"""An interpreter the recorder cannot read leaves every stack native,
says so in one line on stderr, and changes nothing else: fakepy313 says
it is CPython 3.13 (no frame layout is known for it), fakepy311 says 3.11
but its thread state is not laid out as 3.11's (the recorder's probe of
the first one fails).  Debian 12 has no other CPython, so these stand in
for one (fakepy.c)."""
import os

from pyframes_common import (analyze, check, check_eq, has_python, main,
                             record, report_text, tmpdir)
from common import HEAPSLOPE, run

FAKEPY = os.environ.get("HEAPSLOPE_PY_FAKEPY", "")
PY_RECORDS = ("pycode", "pyframe", "pystack", "pyat")


def check_fake(name, arg, version, why):
    what = f"{name} {arg}"
    with tmpdir() as d:
        r = record([os.path.join(FAKEPY, name), arg], d,
                   output=f"{name}.hst")
        check_eq(r.out, b"fakepy done\n" if isinstance(r.out, bytes)
                 else "fakepy done\n", f"{what}: stdout")
        err = r.err.decode() if isinstance(r.err, bytes) else r.err
        said = [l for l in err.splitlines() if l.startswith("heapslope: Python")]
        check_eq(len(said), 1, f"{what}: lines about Python on stderr:\n" +
                 err)
        check(version in said[0] and why in said[0] and
              "native-only" in said[0],
              f"{what}: the line does not say {version}, {why!r} and "
              f"native-only: {said[0]!r}")
        dump = run([HEAPSLOPE, "dump", r.trace()], timeout=60)
        check_eq(dump.rc, 0, f"{what}: dump exit status")
        out = dump.out.decode() if isinstance(dump.out, bytes) else dump.out
        kinds = [l.split()[2] for l in out.splitlines()
                 if not l.startswith("#") and len(l.split()) > 2]
        for k in PY_RECORDS:
            check(k not in kinds, f"{what}: the trace has {k} records")
        big = [l for l in out.splitlines() if " malloc " in l and
               "size=1000 " in l + " "]
        check_eq(len(big), 100, f"{what}: mallocs of 1000 bytes")
        rep = analyze(r.trace())
        check(not has_python(rep), f"{what}: Python frames in the report:\n" +
              report_text(rep))
        check(not rep["program"].get("python_frames"),
              f"{what}: program.python_frames is set")


def test_unknown_version():
    check_fake("fakepy313", "unknown", "Python 3.13",
               "no layout of this interpreter's frames is known")


def test_garbled_thread_state():
    check_fake("fakepy311", "garbled", "Python 3.11",
               "its thread state is not laid out as expected")


if __name__ == "__main__":
    main([test_unknown_version, test_garbled_thread_state])
