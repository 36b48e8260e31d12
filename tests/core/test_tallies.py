"""Tallies (``Checker.count``): a number a spec reports summed over a search's examples.

Issue 25 asks env-author mode to say how many episode ends each stack saw, not only whether: each
example's count is carried in the notes and the search sums them into one line per tally.
"""

from __future__ import annotations

import re

from rlconform.core.profiles import Profile
from rlconform.core.search import _Tally, check_spec
from rlconform.core.spec import Checker, get_spec
from rlconform.core.user import user_system


def test_a_tally_is_summed_over_the_examples_and_reported_once() -> None:
    tally = _Tally()
    for n in (3, 4):
        ck = Checker()
        ck.note("a note")
        ck.count("episode ends crossed through X", n)
        tally.note(ck.outcome.notes)
    assert tally.with_notes("2 facts") == "2 facts; a note; episode ends crossed through X: 7"


def test_env_author_mode_says_how_many_episode_ends_each_stack_saw() -> None:
    profile = Profile("tallies", 2, 1, True, "two derandomized examples", 20, 5, 10.0)
    system = user_system("rlconform.libraries.envauthor.sample_envs:counter", "gymnasium.Env")
    message = check_spec(system, get_spec("env.stack_equivalence"), profile).message
    counts = dict(re.findall(r"episode ends crossed through (\S+): (\d+)", message))
    assert {"gymnasium.SyncVectorEnv.SameStep", "sb3.DummyVecEnv"} <= set(counts), message
    assert all(int(n) > 0 for n in counts.values()), counts
    bare = check_spec(system, get_spec("env.api_shape"), profile).message
    assert re.search(r"episode ends the bare env crossed: [1-9]\d*", bare), bare
