"""End Hypothesis' shrinking of a failure as soon as a search's shrink budget is spent.

A search stops running the system once it has spent its shrink budget (``Profile.shrink_examples``):
every candidate after that passes, unless it is a failure already found, so the smallest failure
found so far stands. Hypothesis does not know this and keeps shrinking: on a case of a few dozen
steps, its shrinker tries tens of thousands of candidates, and answering each one from its own
cache costs it more than running the system did (an AsyncVectorEnv's ``transitions.exact``
failure: 19 of its 30 s after the budget was spent). Nothing that happens after the budget can
change the failure reported: a candidate that passes is not a failure, and a failure already
found was weighed against the smallest one when Hypothesis first saw it. Ending the shrink there
reports the same failure, sooner.
"""

from __future__ import annotations

import math
import sys
from types import CodeType
from typing import Any


class Failures(dict[Any, Any]):
    """The failures a search found, by case. The search's property asks whether a case is among
    them only once the shrink budget is spent (``case in failures``): that question ends
    Hypothesis' shrinking (:func:`end_shrinking`). The property itself is not edited for this:
    derandomized searches seed Hypothesis from its source text.

    Created by the function that runs the search: the engine is looked for below that function's
    frame only, so that a Hypothesis test that runs searches (a user's ``@given`` test calling
    rlconform) keeps shrinking as it would."""

    def __init__(self) -> None:
        super().__init__()
        self._search = sys._getframe(1).f_code

    def __contains__(self, case: object) -> bool:
        end_shrinking(self._search)
        return super().__contains__(case)


def end_shrinking(search: CodeType) -> None:
    """Make the Hypothesis engine running the current example of the search run by ``search`` (the
    code of the function that runs it) stop shrinking once this example returns: its shrink
    deadline (``MAX_SHRINKING_SECONDS`` after the shrink began) is moved to now, and the engine then
    reports the smallest failure it holds, as it does at that deadline.

    The engine is found on the call stack (Hypothesis gives a test function no handle on it),
    between here and ``search``. When none is found there (a replay outside Hypothesis,
    Hypothesis' final replay of the failure, a future Hypothesis without this attribute), nothing
    changes and the search ends as before."""
    try:
        from hypothesis.internal.conjecture.engine import ConjectureRunner
    except ImportError:  # pragma: no cover - a Hypothesis without its engine there
        return
    frame = sys._getframe(1)
    while frame is not None and frame.f_code is not search:
        engine = frame.f_locals.get("self")
        if isinstance(engine, ConjectureRunner):
            if getattr(engine, "finish_shrinking_deadline", None) is not None:
                engine.finish_shrinking_deadline = -math.inf
            return
        frame = frame.f_back  # type: ignore[assignment]
