"""A pass says how many of its examples were not built (issue 24).

A system that raises while it is built for some cases (``torchrl.GymEnv.num_envs`` on some
scripts) was checked on the others only, and its verdict read "N facts checked over M examples"
as if every example had been run. The verdict now says how many were not built and why (the first
one's reason); a search whose examples were all built says nothing of it.
"""

from __future__ import annotations

from typing import Any

import pytest

from rlconform.core.search import NOT_BUILT_REASON_CHARS, check_spec
from rlconform.core.spec import get_spec
from rlconform.core.user import factory_system

gymnasium = pytest.importorskip("gymnasium")

SPEC = "flags.terminated"


def refuses_two(env_fns: Any, **kwargs: Any) -> Any:
    """A vector env that cannot be built on two sub-envs (and is correct on any other number)."""
    if len(env_fns) == 2:
        raise ValueError("two sub-envs are not supported")
    return gymnasium.vector.SyncVectorEnv(list(env_fns))


def refuses_two_verbosely(env_fns: Any, **kwargs: Any) -> Any:
    if len(env_fns) == 2:
        raise KeyError("keys mismatch " + "x" * 1000)
    return gymnasium.vector.SyncVectorEnv(list(env_fns))


def builds_one_only(env_fns: Any, **kwargs: Any) -> Any:
    """Built only on one sub-env (most examples draw more): the probe, on one, does not see it."""
    if len(env_fns) != 1:
        raise ValueError("only one sub-env is supported")
    return gymnasium.vector.SyncVectorEnv(list(env_fns))


def correct(env_fns: Any, **kwargs: Any) -> Any:
    return gymnasium.vector.SyncVectorEnv(list(env_fns))


def test_a_pass_counts_the_examples_that_were_not_built() -> None:
    verdict = check_spec(factory_system(refuses_two, "gymnasium.vector"), get_spec(SPEC), "ci")
    assert verdict.status == "pass", verdict.message
    head, note = verdict.message.split("; ", 1)
    assert head.endswith(f"facts checked over {verdict.examples} examples")
    count = int(note.split(" of the ", 1)[0])
    assert 0 < count < verdict.examples
    assert note == (
        f"{count} of the {verdict.examples} examples were not built: building the system raised "
        "(first: ValueError: two sub-envs are not supported)"
    )


def test_a_long_build_error_is_cut() -> None:
    verdict = check_spec(factory_system(refuses_two_verbosely, "gymnasium.vector"), get_spec(SPEC), "ci")
    assert verdict.status == "pass", verdict.message
    reason = verdict.message.split("(first: ", 1)[1]
    assert reason.startswith("KeyError: 'keys mismatch xxx") and reason.endswith("...)")
    assert len(reason) == NOT_BUILT_REASON_CHARS + 1


def test_a_search_whose_examples_were_all_built_says_nothing_of_it() -> None:
    verdict = check_spec(factory_system(correct, "gymnasium.vector"), get_spec(SPEC), "ci")
    assert verdict.status == "pass"
    assert "not built" not in verdict.message


def test_a_system_built_for_no_example_is_an_error_as_before() -> None:
    def never(env_fns: Any, **kwargs: Any) -> Any:
        raise ValueError("never")

    verdict = check_spec(factory_system(never, "gymnasium.vector"), get_spec(SPEC), "ci")
    assert verdict.status == "error"
    assert verdict.message == "the system could not be built for any example: ValueError: never"


def test_a_pass_over_fewer_than_half_of_the_examples_built_is_not_exercised() -> None:
    """Issue 36: the examples that could be built passed and the verdict was a pass, while most
    examples were not built (torchrl.GymEnv.num_envs: the edge cases build, the drawn ones do not)."""
    verdict = check_spec(factory_system(builds_one_only, "gymnasium.vector"), get_spec(SPEC), "ci")
    assert verdict.status == "not_exercised", verdict.message
    assert "too few for a verdict (fewer than half were built)" in verdict.message
    assert "were not built: building the system raised (first: ValueError: only one sub-env" in verdict.message
