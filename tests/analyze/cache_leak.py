"""A Python cache leak without batch marks (test_time_range.py): start-up
churn (many imports), then a loop that adds VALUE bytes to a dict every
iteration and sleeps, then a teardown that frees the cache over some
windows (an atexit handler, as a program that closes its caches, or an
interpreter finalizing big modules, does).  Prints what it did as JSON on stdout: the loop's start and end
(time.monotonic), the iterations and the bytes each added."""
import atexit
import json
import sys
import time

t_import = time.monotonic()
# start-up churn: a lot of modules, as `import torch` would
import argparse, ast, asyncio, calendar, collections, concurrent.futures  # noqa
import configparser, csv, dataclasses, datetime, decimal, difflib  # noqa
import email.mime.multipart, email.parser, enum, fractions, ftplib  # noqa
import gettext, glob, gzip, hashlib, heapq, hmac, html.parser  # noqa
import http.client, http.cookiejar, http.server, imaplib, inspect  # noqa
import ipaddress, logging.handlers, lzma, mailbox, multiprocessing  # noqa
import pathlib, pickle, pickletools, pprint, pydoc, queue, random  # noqa
import shelve, smtplib, sqlite3, ssl, statistics, string, tarfile  # noqa
import tempfile, textwrap, threading, tokenize, tomllib, typing  # noqa
import unittest, unittest.mock, urllib.request, uuid, wave  # noqa
import xml.dom.minidom, xml.etree.ElementTree, xmlrpc.client  # noqa
import zipfile, zoneinfo  # noqa
# and data that start-up builds and keeps
table = {i: str(i) * 8 for i in range(100000)}
del table

VALUE = 64 * 1024
iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 300
cache = {}


@atexit.register
def teardown():
    keys = list(cache)
    for n, k in enumerate(keys):
        del cache[k]
        if n % 5 == 0:
            time.sleep(0.01)


t0 = time.monotonic()
for i in range(iterations):
    cache[i] = bytes(VALUE)  # a new object of VALUE + header bytes
    time.sleep(0.01)
t1 = time.monotonic()
print(json.dumps({"start": t0, "end": t1, "iterations": iterations,
                  "bytes_each": sys.getsizeof(cache[0]),
                  "import_s": t0 - t_import}))
