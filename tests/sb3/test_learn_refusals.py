"""A library that refuses rlconform's inputs inside ``learn`` is a named refusal, never a FAIL
(issue 35, cause 1).

SB3's episodic ``train_freq`` refuses more than one env, sb3-contrib's MaskablePPO an env without
action masks, HerReplayBuffer an env that is not a goal env: each was an ``algorithm.*`` FAIL
"corrupts training data". Now the refused cases are left out and counted with the library's own
reason, the rest checked; the probe learns a few steps, so that a factory refused for several
sub-envs is checked with fewer (and says so) and one refused for every env is bad input. A crash of
the user's own code in ``learn`` still fails (``learn_refusal`` states the rule).
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

from rlconform.core.family import REFUSED
from rlconform.core.search import check_spec
from rlconform.core.spec import get_spec
from rlconform.core.user import BadInput, factory_system, probe
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import DiscreteAction
from rlconform.libraries.sb3.algorithm_case import BOX_OBS, DICT_OBS, AlgorithmCase
from rlconform.libraries.sb3.algorithm_family import EPISODIC_NOTE
from rlconform.libraries.sb3.algorithm_harness import run_algorithm_case

EPISODIC = "You must use only one env when doing episodic training."
NO_MASKS = "Environment does not support action masking"
OPTIONS: dict[str, Any] = {"seed": 0, "device": "cpu", "policy_kwargs": {"net_arch": [8]}}


def episodic_dqn(env: Any) -> Any:
    from stable_baselines3 import DQN

    return DQN("MlpPolicy", env, train_freq=(1, "episode"), learning_starts=10**6, buffer_size=64, **OPTIONS)


def maskable_ppo(env: Any) -> Any:
    from sb3_contrib import MaskablePPO

    return MaskablePPO("MlpPolicy", env, n_steps=8, batch_size=8, **OPTIONS)


def her_dqn(env: Any) -> Any:
    """HER learning from the start: its first sample reads the goal entries of a goal env."""
    from stable_baselines3 import DQN
    from stable_baselines3.her import HerReplayBuffer

    return DQN(
        "MultiInputPolicy", env, replay_buffer_class=HerReplayBuffer, learning_starts=0, buffer_size=64, **OPTIONS
    )


def crashing_dqn(env: Any) -> Any:
    """The user's own bug: a subclass whose _store_transition raises a ValueError on purpose."""
    from stable_baselines3 import DQN

    class Broken(DQN):
        def _store_transition(self, *args: Any, **kwargs: Any) -> None:
            raise ValueError("my own bug")

    return Broken("MlpPolicy", env, learning_starts=10**6, buffer_size=64, **OPTIONS)


def _case(num_envs: int, obs: Any = BOX_OBS) -> AlgorithmCase:
    script = EnvScript(obs=obs, action=DiscreteAction(3), episodes=(EpisodePlan(2, "terminated"),))
    return AlgorithmCase(script, num_envs, 12)


def _run(factory: Any, num_envs: int, obs: Any = BOX_OBS) -> Any:
    return run_algorithm_case(factory_system(factory, "sb3.Algorithm"), _case(num_envs, obs))


def test_episodic_training_over_several_envs_is_a_refusal_and_one_env_is_checked() -> None:
    refused = _run(episodic_dqn, 3)
    assert refused.build_error is not None and refused.build_error.startswith(REFUSED), refused.build_error
    assert EPISODIC in refused.build_error
    assert "stable_baselines3/common/off_policy_algorithm.py" in refused.build_error
    assert refused.learn_error is None
    one = _run(episodic_dqn, 1)
    assert one.build_error is None and one.learn_error is None and one.samples


def test_maskable_ppo_without_action_masks_is_a_refusal() -> None:
    run = _run(maskable_ppo, 1)
    assert run.build_error is not None and run.build_error.startswith(REFUSED)
    assert NO_MASKS in run.build_error and "sb3_contrib/ppo_mask/ppo_mask.py" in run.build_error
    assert run.learn_error is None


def test_her_without_a_goal_env_is_a_refusal_naming_the_missing_entry() -> None:
    run = _run(her_dqn, 1, DICT_OBS)
    assert run.build_error is not None and run.build_error.startswith(REFUSED)
    assert "KeyError: 'achieved_goal'" in run.build_error and "no entry 'achieved_goal'" in run.build_error


def test_a_crash_of_the_users_own_code_in_learn_still_fails() -> None:
    run = _run(crashing_dqn, 1)
    assert run.build_error is None
    assert run.learn_error == "ValueError: my own bug"
    verdict = check_spec(factory_system(crashing_dqn, "sb3.Algorithm"), get_spec("algorithm.buffer_transitions"), "ci")
    assert verdict.status == "fail" and "my own bug" in verdict.message


def test_an_unprobed_search_counts_the_refused_examples_and_checks_the_rest() -> None:
    verdict = check_spec(factory_system(episodic_dqn, "sb3.Algorithm"), get_spec("algorithm.buffer_transitions"), "ci")
    assert verdict.status == "pass", verdict.message
    head, *notes = verdict.message.split("; ")
    assert head.endswith(f"facts checked over {verdict.examples} examples")
    # unprobed, the Dict observations an MlpPolicy refuses at build are drawn too: counted apart
    (note,) = [n for n in notes if "refused by the library" in n]
    count = int(note.split(" of the ", 1)[0])
    assert 0 < count < verdict.examples
    assert note.startswith(f"{count} of the {verdict.examples} examples were refused by the library, so left out ")
    assert EPISODIC in note and not any(EPISODIC in n for n in notes if "not built" in n)


def test_a_search_whose_every_example_was_refused_is_not_exercised_with_the_reason() -> None:
    verdict = check_spec(factory_system(maskable_ppo, "sb3.Algorithm"), get_spec("algorithm.rollout_transitions"), "ci")
    assert verdict.status == "not_exercised", verdict.message
    # unprobed, the Dict observations an MlpPolicy refuses at build are drawn too: not built
    head, *notes = verdict.message.split("; ")
    assert head.startswith("nothing checked: ") and " examples were refused by the library, so left out" in head
    assert [n for n in notes if "not built" in n]
    assert NO_MASKS in verdict.message


def test_the_probe_narrows_the_sub_envs_of_episodic_training_and_says_why() -> None:
    system = probe(factory_system(episodic_dqn, "sb3.Algorithm"))
    assert system.capabilities.max_envs == 1
    assert system.capabilities.obs_kinds == frozenset({"box"})
    note, episodic = system.capabilities.notes
    # train_freq in episodes: learn waits for an episode end, so every case's envs have a time limit
    assert episodic == EPISODIC_NOTE and system.capabilities.time_limit == "required"
    assert note.startswith("checked with one sub-env only: with 2 sub-envs, model.learn raised AssertionError: ")
    assert EPISODIC in note
    verdict = check_spec(system, get_spec("algorithm.buffer_next_obs"), "ci")
    assert verdict.status == "pass", verdict.message
    assert note in verdict.message and "refused by the library" not in verdict.message


@pytest.mark.parametrize(
    ("name", "reason"),
    [("maskable_ppo", NO_MASKS), ("her_dqn", "KeyError: 'achieved_goal'")],
)
def test_a_factory_the_library_refuses_for_every_env_is_bad_input_with_its_reason(name: str, reason: str) -> None:
    system = factory_system(globals()[name], "sb3.Algorithm")
    with pytest.raises(BadInput) as refused:
        probe(system)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{system.source}: the library refuses every env rlconform can give it")
    assert reason in message and "model.learn raised" in message


def test_a_crash_in_the_probes_learn_narrows_nothing() -> None:
    system = probe(factory_system(crashing_dqn, "sb3.Algorithm"))
    # the user's crash in learn narrows nothing: the search finds it and fails it
    assert system.capabilities.max_envs == 3 and system.capabilities.notes == ()
    assert system.capabilities.time_limit == "allowed"


ARS_MODULE = """
def ars(env):
    from sb3_contrib import ARS

    return ARS("LinearPolicy", env, n_delta=2, seed=0)
"""


def test_an_algorithm_with_no_buffer_is_no_pass(user_module: Any, rlconform_cli: Any) -> None:
    """sb3-contrib's ARS keeps neither a rollout nor a replay buffer: every spec of sb3.Algorithm is
    not applicable. That exited 0 with nothing checked and called ARS "an off-policy algorithm"
    (issue 36); a check in which nothing was checked now says so and exits 1."""
    pytest.importorskip("sb3_contrib")
    user_module("ars_user", ARS_MODULE)
    done = rlconform_cli("check", "ars_user:ars", "--api", "sb3.Algorithm", "--profile", "ci")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "nothing was checked: none of the 9 specs of this --api applies to it" in done.stdout, done.stdout
    assert "off-policy" not in done.stdout and "it keeps neither a rollout nor a replay buffer" in done.stdout
