"""``env.wrapper_layers``: each layer of a user's env compared with the layer it wraps.

Before, env-author mode compared the whole env only with itself: a hand-written time limit that
sets ``terminated``, a wrapper that drops the reset info and one that delays the reward passed.
"""

from __future__ import annotations

import pytest

from rlconform.core.profiles import get_profile
from rlconform.core.runner import RunCache
from rlconform.core.search import Verdict, check_spec
from rlconform.core.spec import get_spec
from rlconform.core.user import user_system


def _verdict(name: str) -> Verdict:
    system = user_system(f"rlconform.libraries.envauthor.sample_envs:{name}", "gymnasium.Env")
    return check_spec(system, get_spec("env.wrapper_layers"), get_profile("ci"), cache=RunCache())


@pytest.mark.parametrize(
    ("name", "words"),
    [
        (
            "with_terminating_limit",
            "layer TerminatingLimit (over CounterEnv), its episode step 3: terminated=True where",
        ),
        ("with_reset_info_dropper", "reset dropped the info keys ['start']"),
        ("with_delayed_reward", "is the reward CounterEnv returned one step earlier"),
    ],
)
def test_a_layer_that_departs_from_the_one_it_wraps_fails(name: str, words: str) -> None:
    verdict = _verdict(name)
    assert verdict.status == "fail", verdict.message
    assert words in verdict.message, verdict.message


@pytest.mark.parametrize("name", ["with_step_limit", "with_gymnasium_time_limit", "cartpole"])
def test_correct_layers_pass(name: str) -> None:
    verdict = _verdict(name)
    assert verdict.status == "pass", verdict.message
    assert "compared over" in verdict.message


def test_an_env_without_layers_is_not_applicable() -> None:
    verdict = _verdict("counter")
    assert verdict.status == "not_applicable"
    assert "no wrapper layers" in verdict.message
