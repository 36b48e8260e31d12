"""Single envs are reset with and without ``options``, and with a seed and options together
(issue 36): a wrapper that drops the seed only when ``reset`` is given options passed, since
single envs were never reset with options."""

from __future__ import annotations

from typing import Any

import pytest

gymnasium = pytest.importorskip("gymnasium")

from rlconform.core.search import check_spec  # noqa: E402
from rlconform.core.spec import get_spec  # noqa: E402
from rlconform.core.user import factory_system, probe  # noqa: E402
from rlconform.envs.plan import Reset, reset_options  # noqa: E402


class DropsSeedWithOptions(gymnasium.Wrapper):  # type: ignore[type-arg]
    """Planted: given options, resets without the seed."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if options is not None:
            return self.env.reset(options=options)
        return self.env.reset(seed=seed)


def drops_seed_with_options(env: Any) -> Any:
    return DropsSeedWithOptions(env)


def passthrough(env: Any) -> Any:
    return gymnasium.Wrapper(env)


def test_resets_come_with_and_without_options() -> None:
    assert reset_options(Reset(seed=3)) == {} and reset_options(Reset(seed=4)) is None
    assert reset_options(Reset(seed=None)) is None


def test_a_wrapper_that_drops_the_seed_given_options_fails_reset_determinism() -> None:
    spec = get_spec("seeding.reset_determinism")
    verdict = check_spec(probe(factory_system(drops_seed_with_options, "gymnasium.Wrapper")), spec, "ci")
    assert verdict.status == "fail", verdict.message
    assert "after reset(seed=" in verdict.message
    correct = check_spec(probe(factory_system(passthrough, "gymnasium.Wrapper")), spec, "ci")
    assert correct.status == "pass", correct.message


class SwingDroppingSeedWithOptions(gymnasium.Env):  # type: ignore[type-arg]
    """Planted, env-author mode: a user's env that reseeds only when reset is given no options."""

    def __init__(self) -> None:
        from rlconform.libraries.envauthor.sample_envs import SwingEnv

        self.inner = SwingEnv()
        self.observation_space, self.action_space = self.inner.observation_space, self.inner.action_space

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        return self.inner.reset(seed=None if options is not None else seed)

    def step(self, action: Any) -> Any:
        return self.inner.step(action)


def swing_dropping_seed_with_options() -> Any:
    return SwingDroppingSeedWithOptions()


def swing() -> Any:
    from rlconform.libraries.envauthor.sample_envs import SwingEnv

    return SwingEnv()


def test_a_users_env_that_drops_the_seed_given_options_fails_in_env_author_mode() -> None:
    """Env-author mode drives the bare env through the same resets: with and without options."""
    spec = get_spec("env.determinism")
    verdict = check_spec(probe(factory_system(swing_dropping_seed_with_options, "gymnasium.Env")), spec, "ci")
    assert verdict.status == "fail", verdict.message
    assert "env.reset(seed=1, options={})" in verdict.message
    # the reproducer's plain calls make the same reset
    assert "env.reset(seed=case.seed, options={})" in (verdict.reproducer or "")
    correct = check_spec(probe(factory_system(swing, "gymnasium.Env")), spec, "ci")
    assert correct.status == "pass", correct.message
