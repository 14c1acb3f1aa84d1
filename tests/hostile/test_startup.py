#!/usr/bin/env python3
"""1. Programs whose start-up calls pthread_getattr_np (glibc allocates
inside it, holding the thread's lock): a C program doing it from a new
thread and the main thread, Rust programs (std's runtime does it on every
thread), the JVM.  Each must finish under record with its native output.

Rust is Debian's rustc (/usr/bin/rustc, package rustc) and Java Debian's
JDK (javac, java: default-jdk-headless); `./quickstart test` installs
both.  The programs are compiled here, into a temporary directory."""
import os
import shutil
import subprocess

from hostile import HANG, Case, cases, check, check_sized, fail, hprog, tmpdir

RUSTC = "/usr/bin/rustc"

HELLO_RS = 'fn main() { println!("hi") }\n'

# 8 threads; each keeps K Vec::with_capacity(777) (one malloc(777) each,
# stored, so the optimizer cannot drop it), K Strings and a HashMap
THREADS_RS = """
use std::collections::HashMap;
use std::thread;

const K: usize = 2000;

fn main() {
    let handles: Vec<_> = (0..8)
        .map(|t| {
            thread::spawn(move || {
                let mut map = HashMap::new();
                let mut sum = 0usize;
                for i in 0..K {
                    let mut v: Vec<u8> = Vec::with_capacity(777);
                    v.push((i % 251) as u8);
                    let s = format!("thread {} item {}", t, i);
                    sum += s.len() + v[0] as usize;
                    map.insert(i, (s, v));
                }
                (t, map.len(), sum)
            })
        })
        .collect();
    for h in handles {
        let (t, n, sum) = h.join().unwrap();
        println!("thread {}: {} entries, checksum {}", t, n, sum);
    }
}
"""

ALLOC_JAVA = """
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public class Alloc {
    public static void main(String[] args) throws Exception {
        final long[] sums = new long[4];
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            final int id = t;
            Thread th = new Thread(() -> {
                Map<Integer, String> m = new HashMap<>();
                long s = 0;
                for (int i = 0; i < 20000; i++) {
                    String v = "item " + i + " of thread " + id;
                    m.put(i, v);
                    s += v.length();
                }
                sums[id] = s + m.size();
            });
            threads.add(th);
            th.start();
        }
        for (Thread th : threads)
            th.join();
        for (int t = 0; t < 4; t++)
            System.out.println("thread " + t + ": " + sums[t]);
    }
}
"""


def compile_rust(d, name, source):
    if not os.access(RUSTC, os.X_OK):
        fail(f"{RUSTC} is missing: install Debian's rustc (./quickstart test "
             "does)")
    src = os.path.join(d, name + ".rs")
    with open(src, "w") as f:
        f.write(source)
    out = os.path.join(d, name)
    p = subprocess.run([RUSTC, "-O", "-o", out, src], capture_output=True,
                       text=True, timeout=300)
    check(p.returncode == 0, f"rustc {src} failed:\n{p.stderr}")
    return out


def java_tool(name):
    path = shutil.which(name)
    if not path:
        fail(f"{name} is missing: install default-jdk-headless "
             "(./quickstart test does)")
    return path


def test_getattr():
    n = 1000
    with Case("getattr") as c:
        c.both([hprog("getattr"), str(n)], timeout=HANG)
        c.check_quiet()
        (t, _), = c.stats().items()
        check_sized(t, {777: 2 * n}, "getattr")


def test_rust_hello():
    with tmpdir() as d:
        exe = compile_rust(d, "hello", HELLO_RS)
        with Case("rust hello") as c:
            c.both([exe], timeout=HANG)
            check(c.n.out == b"hi\n", f"rust hello natively: {c.n.out!r}")
            c.check_quiet()
            c.stats()


def test_rust_threads():
    with tmpdir() as d:
        exe = compile_rust(d, "threads", THREADS_RS)
        with Case("rust threads") as c:
            c.both([exe], timeout=HANG)
            c.check_quiet()
            (t, _), = c.stats().items()
            check_sized(t, {777: 8 * 2000}, "rust threads")


def test_java_version():
    with Case("java -version") as c:
        c.both([java_tool("java"), "-version"], timeout=2 * HANG)
        c.check_quiet()
        c.stats()


def test_java_alloc():
    with tmpdir() as d:
        src = os.path.join(d, "Alloc.java")
        with open(src, "w") as f:
            f.write(ALLOC_JAVA)
        p = subprocess.run([java_tool("javac"), "-d", d, src],
                           capture_output=True, text=True, timeout=300)
        check(p.returncode == 0, f"javac failed:\n{p.stderr}")
        with Case("java Alloc") as c:
            c.both([java_tool("java"), "-cp", d, "Alloc"], timeout=2 * HANG)
            c.check_quiet()
            c.stats()


if __name__ == "__main__":
    cases({"getattr": [test_getattr],
           "rust": [test_rust_hello, test_rust_threads],
           "java": [test_java_version, test_java_alloc]})
