"""Terminal and first observations are checked through a TorchRL stack's observation transforms
(issue 24): ``CatFrames`` on the observation along its last dimension is read as frame stacking
(the newest frame is the observation, the older ones must be the episode's preceding steps or the
padding CatFrames declares: copies of the first frame, or a constant), and ``ObservationNorm`` is
inverted with its own ``loc``/``scale``. So ``terminal.final_obs`` and
``continuity.fresh_first_obs`` check every episode end of a declared stack
(``--intended observation``) instead of reporting "not applicable", and a stack that hands over
the wrong observation behind such a transform still fails.

Each test drives a real stack on one fixed case and reads the specs directly (no search).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rlconform.core.runner import execute
from rlconform.core.spec import Outcome, get_spec
from rlconform.core.system import System
from rlconform.core.user import factory_system, with_intents
from rlconform.envs.decode import decode_stacked
from rlconform.envs.driver import Run
from rlconform.envs.plan import Case, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxObs, DiscreteAction, Garbage
from rlconform.envs.stamp import Stamp

pytest.importorskip("torchrl")

SCRIPT = EnvScript(
    obs=BoxObs(),
    action=DiscreteAction(n=2),
    episodes=(EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated"), EpisodePlan(1, "terminated")),
)
SPECS = ("terminal.final_obs", "continuity.fresh_first_obs", "transitions.exact")


def _case(num_envs: int) -> Case:
    return Case(SCRIPT, num_envs, (Reset(seed=3), *(Step((i % 2,) * num_envs) for i in range(9))))


def _run(factory: Any, num_envs: int = 1, *, declared: bool = True) -> Run:
    system: System = factory_system(factory, "torchrl.EnvBase")
    if declared:
        system = with_intents(system, "observation")
    run = execute(system, _case(num_envs), with_model=False)
    assert run.usable, run.build_error
    return run


def _messages(outcome: Outcome) -> list[str]:
    return [v.render() for v in outcome.violations]


# --- the stacks (module level: user factories are importable) ------------------------------


def _transformed(env_fn: Any, *transforms: Any) -> Any:
    from torchrl.envs import Compose, GymWrapper, TransformedEnv

    return TransformedEnv(GymWrapper(env_fn()), transforms[0] if len(transforms) == 1 else Compose(*transforms))


def _cat(**kwargs: Any) -> Any:
    from torchrl.envs import CatFrames

    return CatFrames(N=3, dim=-1, in_keys=["observation"], **kwargs)


def _norm(loc: Any, scale: Any, *, standard_normal: bool) -> Any:
    import torch
    from torchrl.envs import ObservationNorm

    return ObservationNorm(
        torch.as_tensor(loc, dtype=torch.float32),
        torch.as_tensor(scale, dtype=torch.float32),
        in_keys=["observation"],
        standard_normal=standard_normal,
    )


def cat_frames_same(env_fn: Any) -> Any:
    return _transformed(env_fn, _cat())


def cat_frames_constant(env_fn: Any) -> Any:
    return _transformed(env_fn, _cat(padding="constant", padding_value=-1.0))


def cat_frames_serial(env_fn: Any) -> Any:
    """Two sub-envs whose episodes end at different steps: CatFrames resets one buffer at a time."""
    from torchrl.envs import Compose, GymWrapper, SerialEnv, StepCounter, TransformedEnv

    return TransformedEnv(SerialEnv(2, lambda: GymWrapper(env_fn())), Compose(StepCounter(), _cat()))


def observation_norm(env_fn: Any) -> Any:
    return _transformed(env_fn, _norm(3.0, 0.25, standard_normal=False))


def observation_norm_standard(env_fn: Any) -> Any:
    return _transformed(env_fn, _norm([1.0, 2.0, 3.0, 4.0, 5.0], 7.0, standard_normal=True))


def norm_then_cat_frames(env_fn: Any) -> Any:
    """The frames are normalised before they are stacked: the constant padding is in normalised units."""
    return _transformed(env_fn, _norm(1.0, 2.0, standard_normal=True), _cat(padding="constant", padding_value=0.5))


def cat_frames_then_norm(env_fn: Any) -> Any:
    return _transformed(env_fn, _cat(), _norm(-2.0, 0.5, standard_normal=False))


CORRECT = [
    (cat_frames_same, 1),
    (cat_frames_constant, 1),
    (cat_frames_serial, 2),
    (observation_norm, 1),
    (observation_norm_standard, 1),
    (norm_then_cat_frames, 1),
    (cat_frames_then_norm, 1),
]


# --- planted defects behind the same transforms ----------------------------------------------


def _planted(kind: str) -> Any:
    """A TransformedEnv whose ``step_and_maybe_reset`` hands over the wrong observation where a
    sub-env's episode ended: ``"final"`` puts the new episode's reset observation under
    ``("next", "observation")``; ``"first"`` leaves the old episode's last observation at the root
    the next step starts from."""
    import torch
    from torchrl.envs import TransformedEnv

    class Planted(TransformedEnv):  # type: ignore[misc]
        def step_and_maybe_reset(self, tensordict: Any) -> Any:
            data, root = super().step_and_maybe_reset(tensordict)
            done = data.get(("next", "done"))
            nxt, first = data.get(("next", "observation")), root.get("observation")
            if kind == "final":
                data.set(("next", "observation"), torch.where(done, first, nxt))
            else:
                root.set("observation", torch.where(done, nxt, first))
            return data, root

    return Planted


def lost_terminal_obs_behind_cat_frames(env_fn: Any) -> Any:
    from torchrl.envs import GymWrapper

    return _planted("final")(GymWrapper(env_fn()), _cat())


def stale_first_obs_behind_observation_norm(env_fn: Any) -> Any:
    from torchrl.envs import GymWrapper

    return _planted("first")(GymWrapper(env_fn()), _norm(3.0, 0.25, standard_normal=False))


def cat_frames_other_dim(env_fn: Any) -> Any:
    from torchrl.envs import CatFrames

    return _transformed(env_fn, CatFrames(N=2, dim=-2, in_keys=["observation"]))


# --- the tests --------------------------------------------------------------------------------


@pytest.mark.parametrize("spec_id", SPECS)
@pytest.mark.parametrize(("factory", "num_envs"), CORRECT, ids=[f.__name__ for f, _ in CORRECT])
def test_correct_observation_transforms_are_checked_and_pass(factory: Any, num_envs: int, spec_id: str) -> None:
    """Declared, every episode end behind the transform is compared (before this change the
    observations decoded to no stamp and the two specs were not applicable)."""
    outcome = get_spec(spec_id).check(_run(factory, num_envs))
    assert outcome.violations == [] and outcome.not_applicable is None, (_messages(outcome), outcome.not_applicable)
    assert outcome.checked > 0, outcome.notes


def test_a_lost_terminal_observation_behind_cat_frames_fails() -> None:
    messages = _messages(get_spec("terminal.final_obs").check(_run(lost_terminal_obs_behind_cat_frames)))
    assert any("step 0" in m and "(the terminal observation)" in m for m in messages), messages


def test_a_stale_first_observation_behind_observation_norm_fails() -> None:
    messages = _messages(get_spec("continuity.fresh_first_obs").check(_run(stale_first_obs_behind_observation_norm)))
    assert any("(its reset observation)" in m for m in messages), messages


def test_the_frame_stacking_is_described_with_its_padding() -> None:
    semantics = _run(norm_then_cat_frames).semantics
    # CatFrames pads with 0.5 after ObservationNorm(loc=1, scale=2, standard_normal): 2.0 in env units
    assert (semantics["frame_stack"], semantics["frame_stack_padding"]) == (3, "constant")
    assert semantics["frame_stack_padding_value"] == pytest.approx(2.0)
    assert _run(cat_frames_same).semantics["frame_stack_padding"] == "same"


def test_cat_frames_along_another_dim_is_not_read_as_frame_stacking() -> None:
    script = SCRIPT.__class__(obs=BoxObs(shape=(2, 5)), action=SCRIPT.action, episodes=SCRIPT.episodes)
    system = with_intents(factory_system(cat_frames_other_dim, "torchrl.EnvBase"), "observation")
    run = execute(system, Case(script, 1, (Reset(seed=3), *(Step((i % 2,)) for i in range(5)))), with_model=False)
    assert run.usable, run.build_error
    assert not run.semantics.get("frame_stack")
    assert get_spec("terminal.final_obs").check(run).not_applicable is not None


def test_same_padding_repeats_the_first_frame_of_the_episode() -> None:
    spec = BoxObs(shape=(5,))
    first, second = spec.encode(Stamp(0, 2, 0, 9)), spec.encode(Stamp(0, 2, 1, 9))
    assert decode_stacked(spec, np.concatenate([first, first, first]), 3, "same") == Stamp(0, 2, 0, 9)
    assert decode_stacked(spec, np.concatenate([first, first, second]), 3, "same") == Stamp(0, 2, 1, 9)
    zeros = decode_stacked(spec, np.concatenate([np.zeros(5, np.float32), first, second]), 3, "same")
    assert isinstance(zeros, Garbage) and "frame -2" in zeros.reason
    other = spec.encode(Stamp(0, 1, 0, 9))
    stale = decode_stacked(spec, np.concatenate([other, first, first]), 3, "same")
    assert isinstance(stale, Garbage) and "frame -2" in stale.reason


def test_constant_padding_is_the_declared_value() -> None:
    spec = BoxObs(shape=(5,))
    first = spec.encode(Stamp(0, 2, 0, 9))
    padded = np.concatenate([np.full(5, -1.0, np.float32), np.full(5, -1.0, np.float32), first])
    assert decode_stacked(spec, padded, 3, "constant", -1.0) == Stamp(0, 2, 0, 9)
    wrong = decode_stacked(spec, padded, 3, "constant", 0.0)
    assert isinstance(wrong, Garbage) and "frame -1" in wrong.reason
