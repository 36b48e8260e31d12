"""A factory given the wrong ``--api``, or a mistyped name, is bad input with a "did you mean".

Before, an SB3 factory passed as ``--api gymnasium.vector`` (and the reverse) was checked anyway,
with 4-7 failures and 9-14 "not exercised" that said nothing of the real mistake, and a
ready-made vector env (``gymnasium.make_vec``) passed as ``--api gymnasium.Env`` was accepted as
one env. The product is now recognised by its library's base class (``Family.claims``).
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("stable_baselines3")

import gymnasium

from rlconform.core.user import BadInput, factory_system, probe, user_system


def _sb3_factory(env_fns: list[Any]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    return DummyVecEnv(env_fns)


def _gymnasium_factory(env_fns: list[Any]) -> Any:
    return gymnasium.vector.SyncVectorEnv(env_fns)


def _ready_made_vector_env() -> Any:
    return gymnasium.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync")


def _single_env() -> Any:
    return gymnasium.make("CartPole-v1")


def _refusal(factory: Any, api: str) -> str:
    with pytest.raises(BadInput) as caught:
        probe(factory_system(factory, api))
    return str(caught.value)


@pytest.mark.parametrize(
    ("factory", "api", "fits"),
    [
        (_sb3_factory, "gymnasium.vector", "sb3.VecEnv"),
        (_gymnasium_factory, "sb3.VecEnv", "gymnasium.vector"),
        (_ready_made_vector_env, "gymnasium.Env", "gymnasium.vector"),
    ],
)
def test_a_product_of_another_api_is_refused_naming_it(factory: Any, api: str, fits: str) -> None:
    message = _refusal(factory, api)
    # a VectorEnv is what both vector APIs check: the one taking env factories and the ready-made one
    assert f"--api {fits}" in message.split(" checks, not ")[0], message
    assert f"not --api {api}" in message and "did you mean" in message, message
    assert "\n" not in message


@pytest.mark.parametrize(("factory", "api"), [(_sb3_factory, "sb3.VecEnv"), (_single_env, "gymnasium.Env")])
def test_the_right_api_is_not_refused(factory: Any, api: str) -> None:
    probe(factory_system(factory, api))


def test_a_signature_that_fits_another_api_says_which() -> None:
    with pytest.raises(BadInput, match=r"did you mean --api gymnasium.Env\?"):
        factory_system(_single_env, "gymnasium.vector")


def _replay_buffer() -> ReplayBuffer:  # noqa: F821  (an annotation only, never evaluated)
    raise AssertionError("never built: only its signature is read")


def test_a_factory_of_no_arguments_is_told_the_family_its_annotation_names() -> None:
    """An env factory and a replay-buffer factory both take no arguments: the replay-buffer API is
    suggested only where the factory says it returns one (before, every env factory given to the
    wrong --api was also told "or --api torchrl.ReplayBuffer")."""
    with pytest.raises(BadInput, match=r"did you mean --api torchrl.ReplayBuffer\?"):
        factory_system(_replay_buffer, "gymnasium.vector")


def test_a_mistyped_api_module_or_callable_gets_the_closest_names() -> None:
    with pytest.raises(
        BadInput, match=r"unknown API family 'gymnasium.vectr' \(did you mean 'gymnasium.vector'\?\); known"
    ):
        user_system("rlconform.libraries.envauthor.sample_envs:counter", "gymnasium.vectr")
    with pytest.raises(BadInput, match=r"has no attribute 'countr' \(did you mean 'counter'\?\)$"):
        user_system("rlconform.libraries.envauthor.sample_envs:countr", "gymnasium.Env")
    with pytest.raises(
        BadInput,
        match=r"module 'rlconform.libraries.envauthor.sample_env' not found "
        r"\(did you mean 'rlconform.libraries.envauthor.sample_envs'\?\)$",
    ):
        user_system("rlconform.libraries.envauthor.sample_env:counter", "gymnasium.Env")
