"""Writes pylines_311.h: /usr/bin/python3.11 tests/unit/pylines_311.py > tests/unit/pylines_311.h
(then add back the header comment)."""
import sys
src = '''
def f(a, b):
    x = a + b

    y = [i
         for i in range(x)]
    try:
        z = 1 / a
    except ZeroDivisionError:
        z = 0
    return (x,
            y,
            z)
'''
g = {}
exec(compile(src, "f.py", "exec"), g)
def big():
    pass
# a function with long jumps in line numbers
lines = ["def h():"] + ["    a = 1"] + ["    pass"] * 300 + ["    return a"]
exec(compile("\n".join(lines), "h.py", "exec"), g)
for name in ("f", "h"):
    c = g[name].__code__
    lt = c.co_linetable
    exp = []
    for start, end, line in c.co_lines():
        for off in range(start, end, 2):
            exp.append((off // 2, line or 0))
    print(f"/* {name}: co_firstlineno {c.co_firstlineno} */")
    print(f"static const uint8_t lt_{name}[] = {{ " + ", ".join(f"0x{b:02x}" for b in lt) + " };")
    print(f"static const unsigned exp_{name}[][2] = {{ " + ", ".join(f"{{ {o}, {l} }}" for o, l in exp) + " };")
    print(f"#define FIRST_{name} {c.co_firstlineno}")
