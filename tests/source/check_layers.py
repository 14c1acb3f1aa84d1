#!/usr/bin/env python3
"""The layers of src/ include only the layers below them: base <- format
<- analyze <- report <- cli, and the recorder (record/) only base, format
and launch/contract.h, the environment contract it shares with record
(and the public header it implements).
So the analyzer can never reach the recorder's headers, nor the recorder
the analyzer's.  Prints each include that crosses a line it may not."""
import os
import re
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                   "src")
# layer: the layers (or single headers) it may include
ALLOWED = {
    "base": {"base"},
    "format": {"base", "format"},
    "launch": {"base", "format", "launch"},
    "record": {"base", "format", "record", "launch/contract.h", "include"},
    "analyze": {"base", "format", "analyze"},
    "report": {"base", "format", "analyze", "report"},
    "cli": {"base", "format", "analyze", "report", "launch", "cli"},
    "include": set(),
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def target(layer, name):
    """The src-relative path an include names (local, ../x/ or x/)."""
    if name.startswith("../"):
        return os.path.normpath(name[3:])
    if "/" in name:
        return os.path.normpath(name)
    return f"{layer}/{name}"


def main():
    bad, n = [], 0
    for layer in sorted(os.listdir(SRC)):
        d = os.path.join(SRC, layer)
        if not os.path.isdir(d):
            continue
        if layer not in ALLOWED:
            bad.append(f"src/{layer}/: a folder no layer rule names")
            continue
        for f in sorted(os.listdir(d)):
            if not f.endswith((".c", ".h")):
                continue
            text = open(os.path.join(d, f), encoding="utf-8").read()
            for name in INCLUDE.findall(text):
                n += 1
                t = target(layer, name)
                if t.split("/")[0] not in ALLOWED[layer] and \
                        t not in ALLOWED[layer]:
                    bad.append(f"src/{layer}/{f}: includes {t}")
    for b in bad:
        print("FAIL " + b, file=sys.stderr)
    print(f"{n} includes checked, {len(bad)} across a layer")
    return 1 if bad or n < 100 else 0


if __name__ == "__main__":
    sys.exit(main())
