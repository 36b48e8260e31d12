"""Integration tier: the REAL Isaac-Cartpole-Direct and Isaac-Cartpole (manager-based) tasks, on
Newton physics, driven by rlconform's contract monitor alone and through every wrapper.

A few sub-envs and 40-step episodes: the runs cross time-outs, and under a constant push the
cart leaves its track (terminations). Real physics
gives no decodable observations: what is checked is what holds for any Isaac Lab env (the
monitor's specs) and that each wrapper hands on the env's own step (the wrapper specs). The
expected verdicts pin what isaaclab 3.0.0 and the wrappers do. Slow (a Warp kernel compile of
about a minute the first time, a few seconds per env after): marked ``slow``, and run in CI.

Parametrized over cpu and cuda; without a CUDA device the cuda cases are skipped and say so.
"""

from __future__ import annotations

import functools

import pytest

pytest.importorskip("isaaclab", reason="isaaclab not installed: the Cartpole tier needs isaaclab==3.0.0")

import torch

from rlconform.libraries.isaaclab import monitor as mon
from rlconform.libraries.isaaclab import wrappers as wr
from rlconform.libraries.isaaclab.cartpole import make_cartpole
from rlconform.libraries.isaaclab.torch_run import Target, TorchCase, drive

pytestmark = pytest.mark.slow

DIRECT = "Isaac-Cartpole-Direct"
MANAGER = "Isaac-Cartpole"
NUM_ENVS = 4
EPISODE_STEPS = 40
#: a constant push (the cart leaves its track or the pole falls: terminations beside the
#: time-outs) and random actions
CASES = (
    TorchCase(seed=3, action_seed=11, steps=90, pattern="push"),
    TorchCase(seed=4, action_seed=12, steps=85, pattern="uniform"),
)
DEVICES = [
    "cpu",
    pytest.param(
        "cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: cuda not exercised")
    ),
]

#: one factory object per configuration: the session builds each env once per process (one
#: SimulationContext at a time) and reuses it while the factory is the same object
FACTORIES = {
    (task, final): functools.partial(make_cartpole, task, compute_final_obs=final, episode_steps=EPISODE_STEPS)
    for task in (DIRECT, MANAGER)
    for final in (True, False)
}

#: every spec that fails on real Cartpole, by wrapper (None: the env alone), with the reason
REUSE = {mon.STABLE}  # both envs return their persistent terminated/time_outs buffers
EXPECTED: dict[str | None, set[str]] = {
    None: REUSE,
    "sb3": REUSE,
    "rsl_rl": REUSE,
    "torchrl_isaaclab": REUSE,
    "skrl": REUSE | {wr.TERMINAL},  # the post-reset observation as the next state
    "torchrl_lib": REUSE | {wr.TERMINAL},  # NaN, extras["final_obs"] ignored
}
#: and with Isaac Lab's default compute_final_obs=False
EXPECTED_NO_FINAL: dict[str | None, set[str]] = {
    None: REUSE | {mon.FINAL_OBS},
    "sb3": REUSE | {mon.FINAL_OBS, wr.TERMINAL},  # terminal_observation: the next episode's first
    "torchrl_isaaclab": REUSE | {mon.FINAL_OBS, wr.TERMINAL},  # NaN
}


def _failing(task: str, final: bool, device: str, wrapper: str | None) -> tuple[set[str], list[str]]:
    target = Target(FACTORIES[(task, final)], NUM_ENVS, device, wrapper)
    failing: set[str] = set()
    lines: list[str] = []
    for case in CASES:
        run = drive(target, case)
        assert run.usable, run.build_error
        assert run.steps == case.steps and run.env_steps == NUM_ENVS * case.steps
        failing |= {v.spec for v in run.violations}
        lines += [f"{v.spec}: {v.render()}" for v in run.violations]
    return failing, lines


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("task", [DIRECT, MANAGER])
@pytest.mark.parametrize("wrapper", [None, *wr.DRIVERS])
def test_cartpole_with_final_obs(task: str, wrapper: str | None, device: str) -> None:
    failing, lines = _failing(task, True, device, wrapper)
    assert failing == EXPECTED[wrapper], "\n".join(lines)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("task", [DIRECT, MANAGER])
@pytest.mark.parametrize("wrapper", [None, "sb3", "torchrl_isaaclab"])
def test_cartpole_without_final_obs(task: str, wrapper: str | None, device: str) -> None:
    failing, lines = _failing(task, False, device, wrapper)
    assert failing == EXPECTED_NO_FINAL[wrapper], "\n".join(lines)


@pytest.mark.parametrize("task", [DIRECT, MANAGER])
def test_cartpole_episodes_end_both_ways(task: str) -> None:
    """The cases do reach what the specs are about: time-outs and terminations."""
    from rlconform.libraries.isaaclab.torch_run import actions, env_for

    target = Target(FACTORIES[(task, True)], NUM_ENVS, "cpu")
    env = env_for(target)
    terminated = time_outs = 0
    for case in CASES:
        generator = torch.Generator().manual_seed(case.action_seed)
        env.reset(seed=case.seed)
        for _ in range(case.steps):
            _, _, term, trunc, _ = env.step(actions(env, case, generator))
            terminated += int(term.sum())
            time_outs += int(trunc.sum())
    assert time_outs > 0 and terminated > 0, (time_outs, terminated)
    assert env.unwrapped.max_episode_length == EPISODE_STEPS
