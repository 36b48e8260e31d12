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


def test_a_requirement_no_example_met_makes_the_verdict_not_exercised_and_one_met_makes_it_count() -> None:
    """Issue 39: a spec that never saw what it exists for (an episode end) passed with "not
    exercised" inside its message. A requirement (``Checker.requires``) no example met turns the
    search's verdict into "not exercised", with why; one example that met it is enough."""
    unmet = _Tally()
    for _ in range(2):
        ck = Checker()
        ck.expect(True, "")
        ck.requires("an episode end", False, "no episode ended within 5 s (RLCONFORM_EPISODE_SECONDS=9 would let one)")
        unmet.note(ck.outcome.notes)
    assert (
        unmet.unmet()
        == "an episode end in none of them: no episode ended within 5 s (RLCONFORM_EPISODE_SECONDS=9 would let one)"
    )
    assert unmet.with_notes("2 facts") == "2 facts"  # the requirement is no note of its own
    met = _Tally()
    for seen in (False, True, False):
        ck = Checker()
        ck.requires("an episode end", seen, "" if seen else "not this time")
        met.note(ck.outcome.notes)
    assert met.unmet() is None


def test_no_time_limit_and_a_time_limit_each_say_what_budget_would_let_an_episode_end() -> None:
    from rlconform.envs.time_limits import no_end_reason

    assert no_end_reason(5.0, 1000, 1000) == (
        "no episode ended within 5 s of random actions (1000 steps); its time limit ends an episode at step 1000: "
        "RLCONFORM_EPISODE_SECONDS=8 would let one end"
    )
    assert "declares no time limit (env.spec.max_episode_steps)" in no_end_reason(5.0, 300, None)


def test_a_reason_from_an_example_that_had_the_occasion_wins_over_one_that_had_none() -> None:
    """Issue 38: an example in which no sub-env ended says only that; a later one in which one
    ended and its order could not be judged says why, and that is the reason the verdict gives."""
    tally = _Tally()
    for met, why, occasion in (
        (False, "no sub-env ended", False),
        (False, "its steps draw from the random state", True),
        (False, "no sub-env ended", False),
    ):
        ck = Checker()
        ck.requires("an ending sub-env judged", met, why, occasion=occasion)
        tally.note(ck.outcome.notes)
    assert tally.unmet() == "an ending sub-env judged in none of them: its steps draw from the random state"
    only_none = _Tally()
    ck = Checker()
    ck.requires("an ending sub-env judged", False, "no sub-env ended", occasion=False)
    only_none.note(ck.outcome.notes)
    assert only_none.unmet() == "an ending sub-env judged in none of them: no sub-env ended"
