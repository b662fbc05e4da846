"""Waiting in tests for something only visible by looking (a file, a qdisc, a process): one poll with a
deadline, in one place. Where the code under test offers an event, tests wait on that instead."""
from __future__ import annotations

import time


def wait_until(check, timeout: float, what: str, *, every: float = 0.05):
    """``check()``'s first truthy value, looked at every ``every`` s; AssertionError naming ``what``
    if none comes within ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got or time.monotonic() > deadline:
            break
        time.sleep(every)           # the thing waited for has no event to wait on: look again
    assert got, f"not within {timeout:g} s: {what}"
    return got
