"""Stacks that take image observations only are exercised with images (issue 24).

SB3's VecTransposeImage and Gymnasium's image wrappers refuse every observation a reference env
gave before: the probe found such a factory refusing every kind but a Dict, and nothing it
transposes or converts was ever checked. An image is a uint8 Box shaped (height, width, channels)
(``BoxObs.kind`` "image" or "gray_image"); the probe tries one only where a flat Box was refused,
and only such a stack draws them, so every system that takes Box draws exactly what it drew before.
A channel-first transpose keeps the stamp: it is decoded, and transitions.exact names the layout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from rlconform.core.hypothesis_isolation import without_local_constants
from rlconform.core.runner import RunCache, RunRecord
from rlconform.core.search import check_spec
from rlconform.core.spec import get_spec
from rlconform.core.system import Capabilities, System, all_systems
from rlconform.core.user import factory_system, probe, with_intents
from rlconform.envs.layouts import decode_transposed
from rlconform.envs.spaces import (
    IMAGE_KINDS,
    IMAGE_SHAPES,
    BoxObs,
    DictObs,
    DiscreteObs,
    LeafObs,
    MultiBinaryObs,
    MultiDiscreteObs,
    ObsSpec,
    TupleObs,
    image_obs,
)
from rlconform.envs.stamp import Stamp
from rlconform.envs.strategies import _BOX_SHAPES, box_obs, image_kinds, obs_specs
from rlconform.reports.left_out import left_out

gymnasium = pytest.importorskip("gymnasium")

PROFILE = "ci"
IMAGES = frozenset(IMAGE_KINDS.values())
SB3_REFUSAL = "AssertionError: The observation space must be an image or dictionary observation space"
OBS_SPECS = ("transitions.exact", "terminal.final_obs", "continuity.fresh_first_obs")


# ------------------------------------------------------------------------------ user factories


def transposed(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecTransposeImage

    return VecTransposeImage(DummyVecEnv(list(env_fns)))


def reset_as_terminal(env_fns: Sequence[Callable[[], Any]]) -> Any:
    """Planted: a wrapper over VecTransposeImage that hands out the reset observation as the
    terminal observation of an episode that ended."""
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class ResetAsTerminal(VecEnvWrapper):  # type: ignore[misc]
        def reset(self) -> Any:
            return self.venv.reset()

        def step_wait(self) -> Any:
            obs, rewards, dones, infos = self.venv.step_wait()
            for i, done in enumerate(dones):
                if done and isinstance(obs, np.ndarray):  # an image batch (a Dict passes through)
                    infos[i]["terminal_observation"] = obs[i].copy()
            return obs, rewards, dones, infos

    return ResetAsTerminal(transposed(env_fns))


def height_width_swapped(env_fns: Sequence[Callable[[], Any]]) -> Any:
    """Planted: a channel-first wrapper that also swaps height and width, (C, W, H)."""
    from gymnasium import spaces
    from stable_baselines3.common.vec_env import DummyVecEnv, VecEnvWrapper

    class SwapTranspose(VecEnvWrapper):  # type: ignore[misc]
        def __init__(self, venv: Any) -> None:
            h, w, c = venv.observation_space.shape
            space = spaces.Box(low=0, high=255, shape=(c, w, h), dtype=np.uint8)
            super().__init__(venv, observation_space=space)

        def reset(self) -> Any:
            return np.transpose(self.venv.reset(), (0, 3, 2, 1))

        def step_wait(self) -> Any:
            obs, rewards, dones, infos = self.venv.step_wait()
            for i, done in enumerate(dones):
                if done and "terminal_observation" in infos[i]:
                    infos[i]["terminal_observation"] = np.transpose(infos[i]["terminal_observation"], (2, 1, 0))
            return np.transpose(obs, (0, 3, 2, 1)), rewards, dones, infos

    venv = DummyVecEnv(list(env_fns))
    from stable_baselines3.common.preprocessing import is_image_space

    if not is_image_space(venv.observation_space):
        venv.close()
        raise AssertionError("this wrapper takes images only")
    return SwapTranspose(venv)


def grayscale(env_fns: Sequence[Callable[[], Any]]) -> Any:
    """Gymnasium's GrayscaleObservation (keep_dim) around each sub-env: RGB images only."""
    from gymnasium.wrappers import GrayscaleObservation

    return gymnasium.vector.SyncVectorEnv([lambda fn=fn: GrayscaleObservation(fn(), keep_dim=True) for fn in env_fns])


def plain(env_fns: Sequence[Callable[[], Any]]) -> Any:
    return gymnasium.vector.SyncVectorEnv(list(env_fns))


class Recording(RunCache):
    """A run cache that keeps every case a search ran, to see which observations it drew."""

    def __init__(self) -> None:
        super().__init__()
        self.cases: list[Any] = []

    def get(self, system: System, case: Any) -> RunRecord:
        self.cases.append(case)
        return super().get(system, case)


def checked(factory: Callable[..., Any], api: str, intended: str | None = None) -> System:
    return probe(with_intents(factory_system(factory, api), intended))


def kinds_run(cache: Recording) -> set[str]:
    return {case.script.obs.kind for case in cache.cases}


@pytest.fixture(scope="module")
def sb3_declared() -> System:
    pytest.importorskip("stable_baselines3")
    return checked(transposed, "sb3.VecEnv", "observation")


# ------------------------------------------------------------------------------ spaces, decoding


def test_images_are_what_sb3_takes_as_images() -> None:
    sb3 = pytest.importorskip("stable_baselines3.common.preprocessing")
    for kind, shape in IMAGE_SHAPES.items():
        spec = image_obs(kind)
        assert spec.kind == kind and spec.shape == shape
        space = spec.build()
        assert sb3.is_image_space(space, check_channels=True)
        assert not sb3.is_image_space_channels_first(space)
        stamp = Stamp(1, 3, 4, 2)
        assert spec.decode(spec.encode(stamp)) == stamp


def test_every_box_drawn_before_images_is_still_a_box() -> None:
    for dtype in ("float32", "float64", "uint8", "int64"):
        for shape in _BOX_SHAPES:
            if int(np.prod(shape)) >= (7 if dtype == "uint8" else 5):
                assert BoxObs(dtype, shape).kind == "box"  # type: ignore[arg-type]
    assert BoxObs("float32", (6, 8, 3)).kind == "box"
    assert BoxObs("uint8", (6, 8, 4)).kind == "box"


def test_a_channel_first_image_decodes_to_its_stamp() -> None:
    spec = image_obs("image")
    stamp = Stamp(0, 2, 5, 1)
    obs = spec.encode(stamp)
    assert decode_transposed(spec, np.moveaxis(obs, -1, 0)) == stamp
    # not a transposed layout: the env's own shape, a height/width swap, a flat Box
    assert decode_transposed(spec, obs) is None
    assert decode_transposed(spec, np.transpose(obs, (2, 1, 0))) is None
    assert decode_transposed(BoxObs(), np.zeros(5)) is None


# ------------------------------------------------------------------------------ determinism


def _old_leaf_obs(caps: Capabilities) -> st.SearchStrategy[LeafObs]:
    """strategies.leaf_obs as it was before image kinds (not in a composite)."""
    options: list[st.SearchStrategy[LeafObs]] = []
    if "box" in caps.obs_kinds:
        options.append(box_obs(caps))
    if "discrete" in caps.obs_kinds:
        options.append(st.just(DiscreteObs()))
    if "multidiscrete" in caps.obs_kinds:
        options.append(st.just(MultiDiscreteObs()))
    if "multibinary" in caps.obs_kinds:
        options.append(st.just(MultiBinaryObs()))
    return st.one_of(*options)


def _old_composite_leaf(caps: Capabilities) -> st.SearchStrategy[LeafObs]:
    options: list[st.SearchStrategy[LeafObs]] = [box_obs(caps)]
    if not caps.composite_box_leaves_only:
        options += [st.just(DiscreteObs()), st.just(MultiDiscreteObs()), st.just(MultiBinaryObs())]
    return st.one_of(*options)


def _old_obs_specs(caps: Capabilities) -> st.SearchStrategy[ObsSpec]:
    """strategies.obs_specs as it was before image kinds."""
    options: list[st.SearchStrategy[ObsSpec]] = [_old_leaf_obs(caps)]  # type: ignore[list-item]
    keys = ("state", "tag", "extra")
    if "dict" in caps.obs_kinds:
        options.append(
            st.lists(_old_composite_leaf(caps), min_size=1, max_size=3).map(
                lambda leaves: DictObs(tuple(zip(keys, leaves, strict=False)))
            )
        )
    if "tuple" in caps.obs_kinds:
        options.append(
            st.lists(_old_composite_leaf(caps), min_size=1, max_size=3).map(lambda leaves: TupleObs(tuple(leaves)))
        )
    return st.one_of(*options)


def _draws(strategy: st.SearchStrategy[Any], n: int = 60) -> list[Any]:
    """``n`` derandomized draws (the seed is a digest of this function: the same for every strategy)."""
    drawn: list[Any] = []

    @settings(
        max_examples=n,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(value: Any) -> None:
        drawn.append(value)

    with without_local_constants():
        collect()
    return drawn


def test_a_plain_vector_env_is_probed_and_drawn_as_before() -> None:
    """The probe of a factory that takes Box tries no image and names none; its capabilities are
    those it had, and its observation specs are drawn exactly as before image kinds existed."""
    system = checked(plain, "gymnasium.vector")
    caps = system.capabilities
    assert caps.obs_kinds == Capabilities().obs_kinds
    assert image_kinds(caps) == []
    note = next(n for n in caps.notes if n.startswith("probed: "))
    assert "image" not in note
    for each in (
        caps,
        Capabilities(),
        Capabilities(obs_kinds=frozenset({"box", "dict"}), composite_box_leaves_only=True),
    ):
        assert _draws(obs_specs(each)) == _draws(_old_obs_specs(each))


def test_bundled_systems_draw_no_image() -> None:
    for system in all_systems():
        assert not (system.capabilities.obs_kinds & IMAGES), system.id
        assert image_kinds(system.capabilities) == [], system.id


# ------------------------------------------------------------------------------ SB3 VecTransposeImage


def test_the_probe_of_vec_transpose_image_accepts_images(sb3_declared: System) -> None:
    caps = sb3_declared.capabilities
    assert caps.obs_kinds == {"dict", "image", "gray_image"}
    found = left_out(caps.notes)
    assert found is not None
    assert found.lines()[0] == (f"Box, Discrete, MultiDiscrete, MultiBinary and Tuple observations: {SB3_REFUSAL}")
    assert found.clause().startswith("checked with Dict, RGB image and grayscale image observations only")


@pytest.mark.parametrize("spec_id", OBS_SPECS)
def test_vec_transpose_image_passes_with_images(sb3_declared: System, spec_id: str) -> None:
    cache = Recording()
    verdict = check_spec(sb3_declared, get_spec(spec_id), PROFILE, cache)
    assert verdict.status == "pass", verdict.message
    assert verdict.examples > 0 and verdict.checked > 0
    assert kinds_run(cache) >= IMAGES


def test_an_undeclared_transpose_is_a_layout_change() -> None:
    pytest.importorskip("stable_baselines3")
    verdict = check_spec(checked(transposed, "sb3.VecEnv"), get_spec("transitions.exact"), PROFILE)
    assert verdict.status == "fail"
    assert "reached the agent transposed to channel-first by the stack (shape (" in verdict.message
    assert "--intended observation" in verdict.message


def test_a_reset_observation_given_as_terminal_is_caught() -> None:
    pytest.importorskip("stable_baselines3")
    system = checked(reset_as_terminal, "sb3.VecEnv", "observation")
    assert system.capabilities.obs_kinds == {"dict", "image", "gray_image"}
    verdict = check_spec(system, get_spec("terminal.final_obs"), PROFILE)
    assert verdict.status == "fail", verdict.message
    assert "(a reset observation)" in verdict.message
    assert verdict.case.script.obs.kind in IMAGES


def test_height_and_width_swapped_is_no_transposed_layout() -> None:
    """A (C, W, H) image is no channel-first layout of the env's: no stamp is read from it, so
    transitions.exact fails it unless the user declared the observations changed (then, as for any
    declared change that leaves no stamp, transitions are matched by position)."""
    pytest.importorskip("stable_baselines3")
    system = checked(height_width_swapped, "sb3.VecEnv")
    assert system.capabilities.obs_kinds == IMAGES
    verdict = check_spec(system, get_spec("transitions.exact"), PROFILE)
    assert verdict.status == "fail", verdict.message
    assert "no observation of this env carries a stamp" in verdict.message
    assert "transposed to channel-first" not in verdict.message


# ------------------------------------------------------------------------------ Gymnasium image wrapper


def test_grayscale_observation_gets_verdicts_and_no_failure() -> None:
    """GrayscaleObservation takes RGB images only (it refuses a 1-channel image, named as left out)
    and changes their values for good: declared, the specs give verdicts, none a failure."""
    system = checked(grayscale, "gymnasium.vector", "observation")
    assert system.capabilities.obs_kinds == {"image"}
    found = left_out(system.capabilities.notes)
    assert found is not None
    assert any(
        line.startswith("grayscale image observations: ValueError: GrayscaleObservation") for line in found.lines()
    )
    for spec_id in OBS_SPECS:
        cache = Recording()
        verdict = check_spec(system, get_spec(spec_id), PROFILE, cache)
        assert not verdict.internal_error, verdict.message
        assert verdict.status in ("pass", "not_applicable"), (spec_id, verdict.status, verdict.message)
        assert kinds_run(cache) == {"image"}
