"""Discrete observations small enough for one-hot wrappers are exercised (issue 24).

The stamp-packing Discrete observation has n about 2**40: Gymnasium's ``FlattenObservation``
(a one-hot vector of n entries) cannot take it, so no one-hot stack was ever exercised with a
Discrete observation. ``SmallDiscreteObs`` is ``Discrete(1025)``: its code names the sub-env and
the serial of the env call that made it, and decoding reads it back into the full stamp from the
run's env logs (a code no logged observation has is Garbage; one several share is ambiguous). A
one-hot vector of n entries with a single 1 reads back as its code, reported as a changed layout
like a flattened one. The probe tries the small kind only where the big Discrete was refused, and
only such a system draws it, so every system that takes Discrete draws exactly what it drew before.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from rlconform.core.hypothesis_isolation import without_local_constants
from rlconform.core.runner import RunCache, RunRecord
from rlconform.core.runner import execute as execute_record
from rlconform.core.search import check_spec
from rlconform.core.spec import get_spec
from rlconform.core.system import Capabilities, System, all_systems
from rlconform.core.user import factory_system, probe, with_intents
from rlconform.envs.decode import decode, flattened_shape
from rlconform.envs.driver import Run, reference_family
from rlconform.envs.layouts import decode_one_hot
from rlconform.envs.plan import Case, Reset, Step
from rlconform.envs.reproducer import case_reproducer
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import DiscreteAction, Garbage, SmallDiscreteObs, ambiguous
from rlconform.envs.stamp import Stamp
from rlconform.envs.strategies import obs_specs, small_discrete

gymnasium = pytest.importorskip("gymnasium")

PROFILE = "ci"
SMALL = SmallDiscreteObs()
EXACT_SPECS = ("transitions.exact", "terminal.final_obs", "continuity.fresh_first_obs")
SCRIPT = EnvScript(
    obs=SMALL,
    action=DiscreteAction(n=2),
    episodes=(EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated"), EpisodePlan(1, "terminated")),
)
CASE = Case(SCRIPT, 2, (Reset(seed=3), *tuple(Step((i % 2, 1)) for i in range(9))))


# ------------------------------------------------------------------------------ user factories


def _layered(layer: Callable[[Any], Any], fn: Callable[[], Any]) -> Any:
    return layer(fn())


def _sync(layer: Callable[[Any], Any], mode: str = "NextStep") -> Callable[..., Any]:
    def factory(env_fns: Sequence[Callable[[], Any]]) -> Any:
        from gymnasium.vector import AutoresetMode, SyncVectorEnv

        thunks = [functools.partial(_layered, layer, fn) for fn in env_fns]
        return SyncVectorEnv(thunks, autoreset_mode=AutoresetMode(mode))

    return factory


def _flatten(env: Any) -> Any:
    from gymnasium.wrappers import FlattenObservation

    return FlattenObservation(env)


def plain(env_fns: Sequence[Callable[[], Any]]) -> Any:
    return gymnasium.vector.SyncVectorEnv(list(env_fns))


def flattened(env_fns: Sequence[Callable[[], Any]]) -> Any:
    """Gymnasium's FlattenObservation around each sub-env: a Discrete(n) observation becomes a
    one-hot vector of n entries."""
    return _sync(_flatten)(env_fns)


def flattened_same_step(env_fns: Sequence[Callable[[], Any]]) -> Any:
    return _sync(_flatten, "SameStep")(env_fns)


def _shifted_one_hot(env: Any) -> Any:
    """Planted: a one-hot wrapper that sets the entry after the right one."""
    from gymnasium import ObservationWrapper, spaces

    class ShiftedOneHot(ObservationWrapper):  # type: ignore[misc]
        def __init__(self, inner: Any) -> None:
            super().__init__(inner)
            self.n = int(inner.observation_space.n)
            self.observation_space = spaces.Box(0, 1, (self.n,), np.float32)

        def observation(self, observation: Any) -> Any:
            one_hot = np.zeros(self.n, dtype=np.float32)
            one_hot[(int(observation) + 1) % self.n] = 1.0
            return one_hot

    if not isinstance(env.observation_space, gymnasium.spaces.Discrete) or env.observation_space.n > 10_000:
        raise ValueError("this one-hot wrapper takes small Discrete observations only")
    return ShiftedOneHot(env)


def shifted_one_hot(env_fns: Sequence[Callable[[], Any]]) -> Any:
    return _sync(_shifted_one_hot)(env_fns)


def reset_as_final(env_fns: Sequence[Callable[[], Any]]) -> Any:
    """Planted: SameStep autoreset behind FlattenObservation, where a vector wrapper hands over the
    new episode's first observation as the final one."""
    from gymnasium.vector import VectorWrapper

    class ResetAsFinal(VectorWrapper):  # type: ignore[misc]
        def step(self, actions: Any) -> Any:
            obs, rewards, terminated, truncated, infos = self.env.step(actions)
            if "final_obs" in infos:
                infos = dict(infos)
                infos["final_obs"] = np.array(
                    [
                        obs[i] if ended else final
                        for i, (ended, final) in enumerate(zip(infos["_final_obs"], infos["final_obs"], strict=True))
                    ],
                    dtype=object,
                )
            return obs, rewards, terminated, truncated, infos

    return ResetAsFinal(flattened_same_step(env_fns))


class Recording(RunCache):
    """A run cache that keeps every case a search ran, to see which observations it drew."""

    def __init__(self) -> None:
        super().__init__()
        self.cases: list[Any] = []

    def get(self, system: System, case: Any) -> RunRecord:
        self.cases.append(case)
        return super().get(system, case)

    def kinds(self) -> set[str]:
        return {case.script.obs.kind for case in self.cases}


def draws(strategy: st.SearchStrategy[Any], n: int = 60) -> list[Any]:
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


def execute(system: System, case: Case, *, with_model: bool = False) -> Run:
    run = execute_record(system, case, with_model=with_model)
    assert isinstance(run, Run)
    return run


def checked(factory: Callable[..., Any], intended: str | None = "observation") -> System:
    return probe(with_intents(factory_system(factory, "gymnasium.vector"), intended))


@pytest.fixture(scope="module")
def flat() -> System:
    return checked(flattened)


# ------------------------------------------------------------------------------ the codec


def test_the_codec_is_small_printable_and_never_writes_zero() -> None:
    assert SMALL.n == 1025 and SMALL.build() == gymnasium.spaces.Discrete(1025)
    assert eval(repr(SMALL), {"SmallDiscreteObs": SmallDiscreteObs}) == SMALL
    codes = {int(SMALL.encode(Stamp(env, 1, 0, 0), serial)) for env in range(4) for serial in range(256)}
    assert len(codes) == 4 * 256 and 0 not in codes and max(codes) < SMALL.n
    with pytest.raises(TypeError, match="serial"):
        SMALL.encode(Stamp(0, 1, 0, 0))
    zero = SMALL.decode(np.int64(0))
    assert isinstance(zero, Garbage) and "zero-filled" in zero.reason
    assert isinstance(SMALL.decode(np.float32(3.0)), Garbage)
    assert isinstance(SMALL.decode(np.int64(SMALL.n)), Garbage)


def test_without_the_run_a_code_is_ambiguous_never_a_guess() -> None:
    decoded = SMALL.decode(SMALL.encode(Stamp(1, 2, 3, 4), 7))
    assert ambiguous(decoded), decoded
    assert "env logs" in decoded.reason  # type: ignore[union-attr]


def _obs_and_stamps(run: Run) -> list[tuple[Any, Stamp]]:
    """Every observation a run's calls returned, with the stamp the env put in its info."""
    found = []
    for call in run.calls:
        if call.failed or call.view is None:
            continue
        infos = call.result_snapshot[-1]
        for env, obs in enumerate(call.view.obs_in_env_units()):
            fields = infos["rlconform_stamp"][env]
            found.append((obs, Stamp(*(int(v) for v in fields))))
    return found


def test_every_observation_of_a_run_decodes_to_its_full_stamp() -> None:
    run = execute(checked(plain, None), CASE, with_model=False)
    assert run.usable
    seen = _obs_and_stamps(run)
    assert len(seen) == 20
    for obs, stamp in seen:
        assert np.asarray(obs).shape == () and 0 < int(obs) < SMALL.n
        assert decode(run, obs) == stamp
    # every observation of the run has its own code, and a code none has is no observation
    assert len({int(obs) for obs, _ in seen}) == len({stamp for _, stamp in seen})
    unused = next(code for code in range(1, SMALL.n) if code not in {int(obs) for obs, _ in seen})
    decoded = decode(run, np.int64(unused))
    assert isinstance(decoded, Garbage) and not decoded.ambiguous
    assert "no env of this run returned an observation with this code" in decoded.reason


def test_a_code_two_logged_observations_share_is_ambiguous() -> None:
    """Sub-envs 0 and 4 share a slot of the code: their reset observations (the first call of
    each) have the same code, and decoding it names neither."""
    case = Case(SCRIPT, 5, (Reset(seed=1), Step((0,) * 5)))
    run = execute(checked(plain, None), case, with_model=False)
    first = run.calls[0].view.obs_in_env_units()  # type: ignore[union-attr]
    assert int(first[0]) == int(first[4])
    decoded = decode(run, first[0])
    assert ambiguous(decoded), decoded
    assert "shared by 2 logged observations" in decoded.reason  # type: ignore[union-attr]
    assert isinstance(decode(run, first[1]), Stamp)


# ------------------------------------------------------------------------------ one-hot layout


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int8, np.bool_])
def test_a_one_hot_vector_reads_back_as_its_code(dtype: Any) -> None:
    vector = np.zeros(SMALL.n, dtype=dtype)
    vector[258] = 1
    assert decode_one_hot(SMALL, vector) == 258


def test_a_vector_with_zero_or_several_ones_is_garbage_with_the_reason() -> None:
    zero = decode_one_hot(SMALL, np.zeros(SMALL.n, dtype=np.float32))
    assert isinstance(zero, Garbage) and "no 1" in zero.reason
    two = np.zeros(SMALL.n, dtype=np.int64)
    two[[3, 9]] = 1
    several = decode_one_hot(SMALL, two)
    assert isinstance(several, Garbage) and "2 ones" in several.reason
    half = np.zeros(SMALL.n)
    half[5] = 0.5
    assert isinstance(decode_one_hot(SMALL, half), Garbage)
    first = np.zeros(SMALL.n)
    first[0] = 1
    assert isinstance(decode_one_hot(SMALL, first), Garbage)
    # not a one-hot layout at all: another length, a scalar
    assert decode_one_hot(SMALL, np.zeros(SMALL.n - 1)) is None
    assert decode_one_hot(SMALL, np.int64(3)) is None


def test_a_flattened_observation_decodes_as_a_changed_layout(flat: System) -> None:
    run = execute(flat, CASE, with_model=False)
    seen = _obs_and_stamps(run)
    for obs, stamp in seen:
        assert np.asarray(obs).shape == (SMALL.n,)
        assert decode(run, obs) == stamp
        assert flattened_shape(run, obs) == (SMALL.n,)
    verdict = get_spec("transitions.exact").check(execute(checked(flattened, None), CASE, with_model=False))
    assert verdict.violations
    assert "flattened to shape (1025,) by the stack" in verdict.violations[0].render()


# ------------------------------------------------------------------------------ probe and draws


def test_the_probe_of_a_one_hot_stack_accepts_the_small_discrete(flat: System) -> None:
    """Before the small kind, FlattenObservation refused Discrete (a one-hot vector of 2**40
    entries) and no Discrete observation was ever drawn for it."""
    caps = flat.capabilities
    assert "small_discrete" in caps.obs_kinds and "discrete" not in caps.obs_kinds
    assert small_discrete(caps)
    note = next(n for n in caps.notes if n.startswith("probed: "))
    assert "discrete observations with discrete actions: MemoryError" in note


def test_a_system_that_takes_discrete_is_probed_and_drawn_as_before() -> None:
    caps = checked(plain, None).capabilities
    assert caps.obs_kinds == Capabilities().obs_kinds
    assert not small_discrete(caps)
    with_small = Capabilities(obs_kinds=caps.obs_kinds | {"small_discrete"})
    assert draws(obs_specs(with_small)) == draws(obs_specs(caps))


def test_only_torchrl_gym_wrapper_systems_draw_small_discrete() -> None:
    """The bundled systems keep their draws, but for TorchRL's GymWrapper stacks (issue 24): they
    one-hot encode a Discrete observation and refuse the stamp-packing one, so they take the small
    one; over a SameStep vector env GymWrapper cannot be built with one (FINDINGS E12)."""
    drawing = sorted(s.id for s in all_systems() if small_discrete(s.capabilities))
    assert drawing and all(s.startswith("torchrl.") for s in drawing), drawing
    assert "torchrl.GymWrapper" in drawing and "torchrl.GymWrapper.SyncVectorEnv.SameStep" not in drawing


# ------------------------------------------------------------------------------ searches


@pytest.mark.parametrize("spec_id", EXACT_SPECS)
def test_flatten_observation_passes_the_exact_specs_with_small_discrete(spec_id: str) -> None:
    for factory in (flattened, flattened_same_step):
        cache = Recording()
        verdict = check_spec(checked(factory), get_spec(spec_id), PROFILE, cache)
        assert verdict.status == "pass", (factory.__name__, verdict.message)
        assert verdict.examples > 0 and verdict.checked > 0
        assert "small_discrete" in cache.kinds()


def test_a_one_hot_of_the_wrong_index_is_caught() -> None:
    system = checked(shifted_one_hot)
    assert system.capabilities.obs_kinds == {"small_discrete"}
    verdict = check_spec(system, get_spec("transitions.exact"), PROFILE)
    assert verdict.status == "fail", verdict.message
    assert verdict.case.script.obs == SMALL


def test_a_reset_observation_given_as_final_is_caught() -> None:
    """Caught by the search (on its first edge case, a Box) and, with the small Discrete, on a
    fixed case: the one-hot final observation decodes to the new episode's first step."""
    system = checked(reset_as_final)
    assert "small_discrete" in system.capabilities.obs_kinds
    spec = get_spec("terminal.final_obs")
    verdict = check_spec(system, spec, PROFILE)
    assert verdict.status == "fail", verdict.message
    outcome = spec.check(execute(system, CASE, with_model=False))
    assert outcome.violations
    assert "(a reset observation); expected episode 1 step 2 (the terminal observation)" in (
        outcome.violations[0].render()
    )


def test_a_standalone_reproducer_decodes_small_discrete_observations(tmp_path: Path) -> None:
    """The reproducer rebuilds the script (SmallDiscreteObs is printed as valid Python), replays the
    case and prints every observation decoded from the replayed run's own logs."""
    system = checked(reset_as_final)
    spec = get_spec("terminal.final_obs")
    case = Case(SCRIPT, 2, (Reset(seed=3), *tuple(Step((0, 0)) for _ in range(3))))
    run = execute(system, case, with_model=False)
    assert spec.check(run).violations
    source = case_reproducer(system, spec, case, run, family=reference_family(system.family))
    assert "SmallDiscreteObs()" in source
    path = tmp_path / "repro.py"
    path.write_text(source)
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(path)],
        capture_output=True,
        text=True,
        cwd=root,
        env={"PYTHONPATH": f"{root}{':' + str(Path(__file__).parent)}", "PATH": ""},
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "obs: episode 1 step 0 (a reset observation), episode 1 step 0 (a reset observation)" in done.stdout
    assert "VIOLATION terminal.final_obs" in done.stdout
