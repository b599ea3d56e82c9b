#!/usr/bin/python3
"""The redis-py worker with one rule of docs/PROTOCOL.md taken out: a key
given twice is accepted (the last one wins, as json.loads does by
default). examples/workers_test.go shows the strict check catches it."""

import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "python-redis"))
sys.path.insert(0, os.path.join(here, "..", "python-lockfault"))
import lockfault_worker as lw  # noqa: E402
from worker import RedisPy  # noqa: E402


def lenient_parse(line):
    try:
        c = json.loads(line, parse_constant=lw._no_constant)
    except ValueError as e:
        raise lw.malformed("data after the JSON object (one object per line)" if str(e).startswith("Extra data") else str(e))
    if not isinstance(c, dict):
        raise lw.malformed("not a JSON object")
    return c


lw.parse = lenient_parse
sys.exit(lw.main(RedisPy))
