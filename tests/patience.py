"""How long a test waits for something that will happen: one factor for every wait in the suite.

A test never guesses how fast the machine is. It waits for an event (a log line, a row, a check
run, a process exit) and gives up only after PATIENCE seconds, which is far longer than anything
takes on a quiet machine, so that a machine busy with other work (a loaded CI runner, eight
people's test runs on two cores) makes the suite slower, never red. A wait returns as soon as its
condition holds, so patience costs time only when a test is about to fail anyway.

CI_REGISTRAR_TEST_PATIENCE (seconds, default 120) scales it: lower it to see a hung test fail
sooner, raise it on a machine slower still.
"""

from __future__ import annotations

import os
import time

PATIENCE = float(os.environ.get("CI_REGISTRAR_TEST_PATIENCE") or 120)


def wait_for(predicate, interval: float = 0.05, patience: float | None = None):
    """predicate()'s first true value, polled every `interval` seconds; its last value (false)
    after `patience` seconds (PATIENCE by default: a wait longer than PATIENCE is a hang)."""
    deadline = time.monotonic() + (PATIENCE if patience is None else patience)
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()
