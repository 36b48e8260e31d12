"""The call deadline (rlconform.core.watchdog.deadline) that turns a hung library call into a verdict."""

from __future__ import annotations

import time

import pytest

from rlconform.core.watchdog import CallTimeout, deadline, deadlines_available

pytestmark = pytest.mark.skipif(not deadlines_available(), reason="no SIGALRM deadlines on this platform")


def test_a_call_past_its_deadline_is_interrupted() -> None:
    start = time.monotonic()
    with pytest.raises(CallTimeout, match=r"no answer within 0\.2 s"), deadline(0.2):
        time.sleep(5)
    assert time.monotonic() - start < 2


def test_a_lost_alarm_is_followed_by_another() -> None:
    """A signal handler's exception raised inside a gc callback is dropped ("Exception ignored"); the
    body here drops the first CallTimeout the same way, and the call must still end at the next alarm."""
    dropped = 0
    start = time.monotonic()
    with pytest.raises(CallTimeout), deadline(0.2):
        try:
            time.sleep(5)
        except CallTimeout:
            dropped += 1
        time.sleep(5)
    assert dropped == 1
    assert time.monotonic() - start < 2


def test_no_alarm_after_the_body() -> None:
    with deadline(0.1):
        pass
    time.sleep(0.3)  # a repeating timer left armed would raise here
