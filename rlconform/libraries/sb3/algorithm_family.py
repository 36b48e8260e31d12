"""Family ``sb3.Algorithm``: what an SB3 algorithm stores for training (``--api sb3.Algorithm``).

A user's factory ``make(env: VecEnv) -> BaseAlgorithm`` is handed a VecEnv of rlconform's
decodable reference envs (``DummyVecEnv``, ``SubprocVecEnv`` or ``VecNormalize(DummyVecEnv)``,
whose sub-envs end by termination and by time-out at different steps); the algorithm's own
collection code runs through ``model.learn(total_timesteps=...)``, never a re-implementation of it.
What it stored is then read the way its loss reads it: every valid row of ``model.replay_buffer``
is sampled through the buffer's own ``_get_samples`` (``env=None``: in env units, as stored) for
every sub-env, and compared with the env logs, the ground truth (:mod:`rlconform.envs.truth`).

Off-policy buffers (``ReplayBuffer``, ``DictReplayBuffer``, ``NStepReplayBuffer``, with the user's
subclasses) are read row by row as below. An on-policy algorithm (PPO, A2C, a user's
``RolloutBuffer`` subclass) collects one rollout, ``model.learn(total_timesteps=model.n_steps *
num_envs)``, read at ``on_rollout_end`` before any gradient step and compared with a reference GAE
(:mod:`rlconform.libraries.sb3.algorithm_rollouts`); its row t of sub-env e is that sub-env's t-th
step.

Which sub-env a sampled row comes from: SB3's buffers draw the sub-env of each index with
``np.random.randint(0, n_envs, size=len(batch_inds))`` first; rlconform seeds NumPy's global
generator, draws those indices itself, and chooses the batch indices so that every (row, sub-env)
pair is sampled (the generator's state is restored afterwards). A row whose observation decodes
to another sub-env is read as that sub-env's.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from rlconform.core.family import FactoryShape
from rlconform.core.reproducer import ReproducerParts, case_lines, write
from rlconform.core.system import Capabilities, Probed, System, SystemTable
from rlconform.core.user import BadInput, close_within_limit, returned_type, spawns_workers
from rlconform.core.watchdog import child_processes, reap
from rlconform.envs.calllog import FileSink, LogSink, MemorySink
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxAction, BoxObs, DictObs, DiscreteAction
from rlconform.envs.truth import GroundTruth, build_truth
from rlconform.envs.whole_run import WholeRunFamily
from rlconform.libraries.sb3.algorithm_rollouts import (
    RolloutCollected,
    RolloutFacts,
    RolloutReference,
    reading_callback,
    reference_gae,
)
from rlconform.libraries.sb3.algorithm_values import bootstrap_values
from rlconform.libraries.sb3.vecenv_family import preload_forkserver
from rlconform.specs.families import SB3_ALGORITHM

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from rlconform.core.spec import Spec

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()

#: VecNormalize(DummyVecEnv) with SB3's defaults (``clip_obs=10``: FINDINGS S8), and with clipping
#: out of reach, so that what a user's algorithm does with VecNormalize is checked apart from S8
VECNORMALIZE = "VecNormalize"
VECNORMALIZE_UNCLIPPED = "VecNormalize(clip_obs=1e6)"
UNCLIPPED = 1e6
#: a small clip_obs, as users set for bounded inputs: nearly every terminal observation is clipped
VECNORMALIZE_SMALL_CLIP = "VecNormalize(clip_obs=1)"
SMALL_CLIP = 1.0
#: the VecEnvs rlconform hands a user's factory (a bundled system's option ``vec_envs`` names its own)
VEC_ENVS = ("DummyVecEnv", "SubprocVecEnv", VECNORMALIZE_UNCLIPPED)
VEC_ENVS_OPTION = "vec_envs"
#: the observations a case draws: a Box (ReplayBuffer) or a Dict of Boxes (DictReplayBuffer)
BOX_OBS = BoxObs()
DICT_OBS = DictObs(entries=(("state", BoxObs()), ("wide", BoxObs(shape=(7,)))))
DISCRETE_ACTION = DiscreteAction(3)
BOX_ACTION = BoxAction(2)
#: the seed of NumPy's global generator while the buffer is sampled (restored afterwards)
SAMPLE_SEED = 20240527


@dataclass(frozen=True)
class AlgorithmCase:
    """One check: ``model.learn(total_timesteps=steps * num_envs)`` over ``num_envs`` reference
    envs following ``script``, vectorized by ``vec_env``."""

    script: EnvScript
    num_envs: int
    steps: int
    vec_env: str = "DummyVecEnv"


@dataclass
class SampledRow:
    """One (row, sub-env) of the buffer as its ``_get_samples`` returns it, in env units."""

    row: int
    env: int
    obs: Any
    action: np.ndarray
    reward: float
    next_obs: Any
    #: the done the loss reads (SB3: ``dones * (1 - timeouts)``)
    done: float
    #: the n-step buffer's discount of the bootstrap (None: the buffer returns none)
    discount: float | None = None


@dataclass
class BufferFacts:
    class_name: str = ""
    n_envs: int = 0
    rows: int = 0
    pos: int = 0
    full: bool = False
    handle_timeout_termination: bool = True
    optimize_memory_usage: bool = False
    n_steps: int = 1
    gamma: float = 0.99


@dataclass
class AlgorithmRun:
    """What the specs read of one case (the core's RunRecord: ``system``, ``build_error``)."""

    system: System
    case: AlgorithmCase
    build_error: str | None = None
    learn_error: str | None = None
    sample_error: str | None = None
    algorithm: str = ""
    truth: GroundTruth | None = None
    buffer: BufferFacts | None = None
    samples: list[SampledRow] = field(default_factory=list)
    #: (row, sub-env) pairs the sampling did not reach
    unsampled: list[tuple[int, int]] = field(default_factory=list)
    #: an on-policy algorithm's rollout, and its reference (None: off-policy, or not read)
    rollout: RolloutFacts | None = None
    reference: RolloutReference | None = None
    rollout_error: str | None = None
    #: why the reference cannot be computed for this model (rlconform's limit, not a failure)
    reference_unavailable: str | None = None
    #: the model has a rollout_buffer (OnPolicyAlgorithm)
    on_policy: bool = False
    #: an off-policy algorithm: the value its target bootstraps from at each true time-out's final
    #: observation, by (sub-env, transition index), and how it was read
    #: (rlconform.libraries.sb3.algorithm_values)
    final_values: dict[tuple[int, int], float] = field(default_factory=dict)
    final_values_read: str = ""
    memo: dict[Any, Any] = field(default_factory=dict)

    @property
    def usable(self) -> bool:
        """The model was built and the env logs read (the core's RunRecord)."""
        return self.build_error is None and self.truth is not None

    @property
    def semantics(self) -> dict[str, Any]:
        """The core's RunRecord: this family reads no stack semantics."""
        return {}


# ----------------------------------------------------------------------------------- building


def build_vec_env(case: AlgorithmCase, sinks: list[LogSink]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecNormalize

    from rlconform.envs.reference_env import make_reference_env

    fns: list[Callable[[], Any]] = [
        functools.partial(make_reference_env, case.script, i, sinks[i]) for i in range(case.num_envs)
    ]
    if case.vec_env == "SubprocVecEnv":
        preload_forkserver()
        return SubprocVecEnv(fns)
    venv = DummyVecEnv(fns)
    if case.vec_env == VECNORMALIZE:
        return VecNormalize(venv)
    if case.vec_env == VECNORMALIZE_UNCLIPPED:
        return VecNormalize(venv, clip_obs=UNCLIPPED)
    if case.vec_env == VECNORMALIZE_SMALL_CLIP:
        return VecNormalize(venv, clip_obs=SMALL_CLIP)
    return venv


def _to_numpy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _to_numpy(v) for k, v in value.items()}
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    return None if value is None else np.asarray(value)


def _index(value: Any, k: int) -> Any:
    if isinstance(value, Mapping):
        return {key: v[k] for key, v in value.items()}
    return value[k]


def valid_rows(buffer: Any) -> list[int]:
    """The rows SB3's ``sample`` draws from: every row of a full buffer (but the write position
    when observations and next observations share one array), else the rows written so far."""
    size = int(buffer.buffer_size)
    pos = int(buffer.pos)
    if bool(buffer.full):
        skip = {pos} if getattr(buffer, "optimize_memory_usage", False) else set()
        return [r for r in range(size) if r not in skip]
    return list(range(pos))


def sample_every_row(buffer: Any, run: AlgorithmRun) -> None:
    """Every (valid row, sub-env) pair through the buffer's own ``_get_samples``."""
    n_envs = int(buffer.n_envs)
    rows = valid_rows(buffer)
    if not rows:
        return
    pending = {e: list(rows) for e in range(n_envs)}
    length = len(rows) * n_envs * 6 + 64
    state = np.random.get_state()
    try:
        np.random.seed(SAMPLE_SEED)
        drawn = np.random.randint(0, high=n_envs, size=(length,))
        inds = np.empty(length, dtype=np.int64)
        wanted: list[tuple[int, int]] = []
        for k, e in enumerate(drawn):
            row = pending[int(e)].pop() if pending[int(e)] else rows[k % len(rows)]
            inds[k] = row
            wanted.append((row, int(e)))
        np.random.seed(SAMPLE_SEED)
        samples = buffer._get_samples(inds, env=None)
    finally:
        np.random.set_state(state)
    run.unsampled = [(r, e) for e, left in pending.items() for r in left]
    obs = _to_numpy(samples.observations)
    next_obs = _to_numpy(samples.next_observations)
    actions = _to_numpy(samples.actions)
    rewards = _to_numpy(samples.rewards).reshape(-1)
    dones = _to_numpy(samples.dones).reshape(-1)
    discounts = getattr(samples, "discounts", None)
    discounts = None if discounts is None else _to_numpy(discounts).reshape(-1)
    seen: set[tuple[int, int]] = set()
    for k, (row, env) in enumerate(wanted):
        if (row, env) in seen:
            continue
        seen.add((row, env))
        run.samples.append(
            SampledRow(
                row=row,
                env=env,
                obs=_index(obs, k),
                action=np.asarray(actions[k]),
                reward=float(rewards[k]),
                next_obs=_index(next_obs, k),
                done=float(dones[k]),
                discount=None if discounts is None else float(discounts[k]),
            )
        )


def run_algorithm_case(system: System, case: AlgorithmCase) -> AlgorithmRun:
    import warnings

    run = AlgorithmRun(system=system, case=case)
    folder = tempfile.TemporaryDirectory(prefix="rlconform-algo-") if case.vec_env == "SubprocVecEnv" else None
    sinks: list[LogSink] = (
        [FileSink(Path(folder.name) / f"env-{i}.log") for i in range(case.num_envs)]
        if folder is not None
        else [MemorySink() for _ in range(case.num_envs)]
    )
    before = child_processes()
    venv = None
    model = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                venv = build_vec_env(case, sinks)
                model = system.build(venv)  # type: ignore[arg-type]  # this family builds from a VecEnv
            except Exception as exc:
                run.build_error = f"{type(exc).__name__}: {exc}"
                return run
            run.algorithm = type(model).__name__
            run.on_policy = hasattr(model, "rollout_buffer")
            if run.on_policy:
                _collect_rollout(model, case, run)
            else:
                try:
                    model.learn(total_timesteps=case.steps * case.num_envs)
                except Exception as exc:
                    run.learn_error = f"{type(exc).__name__}: {exc}"
            buffer = getattr(model, "replay_buffer", None)
            if buffer is not None:
                run.buffer = BufferFacts(
                    class_name=type(buffer).__name__,
                    n_envs=int(buffer.n_envs),
                    rows=int(buffer.buffer_size),
                    pos=int(buffer.pos),
                    full=bool(buffer.full),
                    handle_timeout_termination=bool(getattr(buffer, "handle_timeout_termination", True)),
                    optimize_memory_usage=bool(getattr(buffer, "optimize_memory_usage", False)),
                    n_steps=int(getattr(buffer, "n_steps", 1) or 1),
                    gamma=float(getattr(buffer, "gamma", getattr(model, "gamma", 0.99))),
                )
                try:
                    sample_every_row(buffer, run)
                except Exception as exc:
                    run.sample_error = f"{type(exc).__name__}: {exc}"
    finally:
        if venv is not None:
            with contextlib.suppress(Exception):
                close_within_limit(venv.close)
        reap(before)
        run.truth = build_truth(case.script, [sink.read() for sink in sinks])
        if run.rollout is not None and model is not None:
            _rollout_reference(model, run)
        if run.buffer is not None and model is not None:
            _final_values(model, run)
        for sink in sinks:
            close = getattr(sink, "close", None)
            if callable(close):
                close()
        if folder is not None:
            folder.cleanup()
    return run


def _final_values(model: Any, run: AlgorithmRun) -> None:
    """What the model's target bootstraps from at every true time-out's final observation
    (normalised as the model sees it, with VecNormalize's statistics at the end of ``learn``)."""
    assert run.truth is not None
    keys: list[tuple[int, int]] = []
    inputs: list[Any] = []
    try:
        normalizer = model.get_vec_normalize_env()
        for true_env in run.truth.envs:
            for j, t in enumerate(true_env.transitions):
                if t.truncated and not t.terminated:
                    encoded = run.case.script.obs.encode(t.next_obs)
                    inputs.append(normalizer.normalize_obs(encoded) if normalizer is not None else encoded)
                    keys.append((true_env.env, j))
        values, run.final_values_read = bootstrap_values(model, inputs)
    except Exception as exc:
        run.final_values_read = f"reading the model's target networks raised {type(exc).__name__}: {exc}"
        return
    if values is not None:
        run.final_values = {key: float(v) for key, v in zip(keys, values, strict=True)}


def _collect_rollout(model: Any, case: AlgorithmCase, run: AlgorithmRun) -> None:
    """One rollout of an on-policy algorithm through its own ``learn``, read at ``on_rollout_end``."""
    sink: dict[str, Any] = {}
    total = int(model.n_steps) * case.num_envs
    try:
        model.learn(total_timesteps=total, callback=reading_callback(model, sink))
    except RolloutCollected:
        pass
    except Exception as exc:
        run.learn_error = f"{type(exc).__name__}: {exc}"
        return
    run.rollout = sink.get("facts")
    if run.rollout is None:
        run.learn_error = f"model.learn(total_timesteps={total}) returned without completing a rollout"


def value_needs_state(policy: Any) -> str | None:
    """Why rlconform cannot evaluate the policy's V on one true observation alone (None: it can):
    a recurrent policy (sb3-contrib's RecurrentPPO) values an observation with the LSTM state the
    episode so far built. With a buffer that stores those states (RecurrentRolloutBuffer) the
    reference reads them (algorithm_rollouts.recurrent_values); without one, this is the reason
    nothing that needs V is compared."""
    import inspect

    try:
        parameters = inspect.signature(policy.predict_values).parameters
    except (TypeError, ValueError, AttributeError):
        return None
    needed = [name for name in parameters if name in ("lstm_states", "episode_starts", "state", "states")]
    if not needed:
        return None
    return (
        f"{type(policy).__name__}.predict_values needs {', '.join(needed)}: a recurrent policy's V of an "
        "observation depends on the LSTM state its episode built, which its rollout buffer does not store "
        "(no hidden_states_vf), so the stored values, rewards, returns and advantages are not compared"
    )


def _rollout_reference(model: Any, run: AlgorithmRun) -> None:
    facts, truth = run.rollout, run.truth
    assert facts is not None and truth is not None
    transitions = []
    for e in range(facts.n_envs):
        made = truth.envs[e].transitions if e < len(truth.envs) else []
        if len(made) < facts.rows:
            run.rollout_error = f"sub-env {e} made {len(made)} steps; the buffer holds {facts.rows} rows"
            return
        transitions.append(made[: facts.rows])
    unvalued = value_needs_state(model.policy)
    if unvalued is not None and (facts.vf_states is None or facts.final_vf_state is None):
        run.reference_unavailable = unvalued
        return
    try:
        run.reference = reference_gae(
            facts, transitions, run.case.script.obs.encode, model.policy, model.get_vec_normalize_env()
        )
    except Exception as exc:
        run.rollout_error = (
            f"evaluating the model's value function on the true observations raised {type(exc).__name__}: {exc}"
        )


# -------------------------------------------------------------------------------------- cases


def _vec_envs(system: System) -> tuple[str, ...]:
    allowed = system.option(VEC_ENVS_OPTION)
    return tuple(allowed) if allowed else VEC_ENVS


def _action_spec(system: System) -> Any:
    kinds = system.capabilities.action_kinds
    return DISCRETE_ACTION if "discrete" in kinds else BOX_ACTION


def _obs_specs(system: System) -> list[Any]:
    kinds = system.capabilities.obs_kinds
    return [spec for kind, spec in (("box", BOX_OBS), ("dict", DICT_OBS)) if kind in kinds]


def algorithm_cases(system: System) -> SearchStrategy[AlgorithmCase]:
    from hypothesis import strategies as st

    plans = st.builds(
        EpisodePlan,
        length=st.integers(1, 6),
        end=st.sampled_from(("terminated", "truncated", "both", "never")),
    )

    @st.composite
    def build(draw: Any) -> AlgorithmCase:
        episodes = tuple(draw(st.lists(plans, min_size=1, max_size=4)))
        limit = draw(st.none() | st.integers(2, 6))
        if limit is None and all(p.end == "never" for p in episodes):
            limit = 4
        vec_env = draw(st.sampled_from(_vec_envs(system)))
        script = EnvScript(
            obs=draw(st.sampled_from(_obs_specs(system))),
            action=_action_spec(system),
            episodes=episodes,
            env_stride=draw(st.integers(0, 3)),
            max_episode_steps=limit,
        )
        return AlgorithmCase(
            script=script,
            num_envs=draw(st.integers(max(1, system.capabilities.min_envs), min(3, system.capabilities.max_envs))),
            steps=draw(st.integers(1, 24)),
            vec_env=vec_env,
        )

    return build()


def algorithm_boundary_cases(system: System) -> list[AlgorithmCase]:
    """Explicit cases tried first under every profile: terminations and time-outs at different
    steps in different sub-envs, a buffer that wraps, on every VecEnv the system is checked with."""
    action = _action_spec(system)
    mixed = (EpisodePlan(2, "terminated"), EpisodePlan(5, "never"), EpisodePlan(3, "terminated"), EpisodePlan(1))
    found = []
    for obs in _obs_specs(system):
        script = EnvScript(obs=obs, action=action, episodes=mixed, env_stride=1, max_episode_steps=4)
        for vec_env in _vec_envs(system):
            n = min(3, system.capabilities.max_envs)
            found.append(AlgorithmCase(script, n, 12, vec_env))
        # few sub-envs, many steps: the buffer wraps (bundled buffers hold 24 rows)
        found.append(AlgorithmCase(script, max(1, system.capabilities.min_envs), 30, _vec_envs(system)[0]))
    # every step ends an episode from the first on: terminal observations while VecNormalize's
    # running statistics are fresh
    ones = EnvScript(obs=_obs_specs(system)[0], action=action, episodes=(EpisodePlan(1),))
    found.extend(AlgorithmCase(ones, max(1, system.capabilities.min_envs), 3, v) for v in _vec_envs(system))
    return found


# ------------------------------------------------------------------------------------- family


def algorithm_reproducer(system: System, spec: Spec, case: AlgorithmCase) -> str:
    about = (
        f"{system.title}: model.learn(total_timesteps={case.steps * case.num_envs}) over {case.num_envs} reference envs\n"
        f"following the case's script, vectorized by {case.vec_env}; then its buffer is read back."
    )
    return write(ReproducerParts(system, spec, case_lines(case), AlgorithmFamily.api, about))


class AlgorithmFamily(WholeRunFamily):
    """Family ``sb3.Algorithm`` (``--api sb3.Algorithm``)."""

    name = SB3_ALGORITHM
    api = "sb3.Algorithm"
    factory_signature = "(env: stable_baselines3 VecEnv) -> stable_baselines3 BaseAlgorithm"
    factory_argument = "env"
    libraries = ("gymnasium", "stable-baselines3", "torch")
    claimed_classes = ("stable_baselines3.common.base_class.BaseAlgorithm",)
    factory_shape = FactoryShape(
        returns=claimed_classes,
        # SB3's and sb3-contrib's algorithms, for a return annotation written as a string
        return_names=(
            *("OnPolicyAlgorithm", "OffPolicyAlgorithm", "PPO", "A2C", "DQN", "SAC", "TD3", "DDPG"),
            *("RecurrentPPO", "MaskablePPO", "QRDQN", "TQC", "TRPO", "ARS", "CrossQ"),
        ),
        takes=("stable_baselines3.common.vec_env.base_vec_env.VecEnv",),
    )

    def run_case(self, system: System, case: Any, *, with_model: bool) -> AlgorithmRun:
        return run_algorithm_case(system, case)

    def cases(self, system: System, scenario: str) -> SearchStrategy[Any]:
        return algorithm_cases(system)

    def boundary_cases(self, system: System, scenario: str) -> list[AlgorithmCase]:
        return algorithm_boundary_cases(system) if scenario == "standard" else []

    def reproducer(self, system: System, spec: Spec, case: Any, run: Any) -> str:
        return algorithm_reproducer(system, spec, case)

    def print_run(self, run: Any, case: Any, stream: TextIO) -> None:
        print(f"system: {run.system.source}, algorithm {run.algorithm or '?'}, {case}", file=stream)
        for name in ("build_error", "learn_error", "sample_error", "rollout_error"):
            if getattr(run, name):
                print(f"{name.replace('_', ' ')}: {getattr(run, name)}", file=stream)
        if run.buffer is not None:
            print(f"buffer: {run.buffer}", file=stream)
        if run.rollout is not None:
            facts = run.rollout
            print(
                f"rollout buffer: {facts.class_name}, {facts.rows} rows x {facts.n_envs} sub-envs, "
                f"gamma={facts.buffer_gamma:g}, gae_lambda={facts.gae_lambda:g}"
                + (", through VecNormalize" if facts.normalized else ""),
                file=stream,
            )

    def check_factory(self, signature: inspect.Signature) -> None:
        signature.bind(object())

    def user_system(self, fn: Callable[..., Any], reference: str, **options: Any) -> System:
        return System(
            id=f"user:{reference}",
            family=SB3_ALGORITHM,
            title=f"{reference}(env) (your algorithm)",
            build=fn,
            source=reference,
            kind="user",
            out_of_process=True,
            capabilities=Capabilities(max_envs=3, partial_reset=False),
            description="an SB3 algorithm: what it stores in its replay buffer, against the env logs",
        )

    def probe_factory(self, system: System) -> Probed:
        """Build the factory over a one-env DummyVecEnv of each observation and action kind: the
        kinds it accepts are the ones its cases draw (DQN takes Discrete actions only, an
        ``MlpPolicy`` Box observations only). None accepted is bad input, with the first error.
        (The probe runs in an isolated worker, whose inherited torch runs on one thread:
        rlconform.core.isolation.)"""
        spawned = False
        obs_kinds: set[str] = set()
        action_kinds: set[str] = set()
        first_error: BadInput | None = None
        for obs_kind, obs in (("box", BOX_OBS), ("dict", DICT_OBS)):
            for action_kind, action in (("discrete", DISCRETE_ACTION), ("box", BOX_ACTION)):
                case = AlgorithmCase(EnvScript(obs=obs, action=action), 1, 1)
                try:
                    spawned |= spawns_workers(
                        system,
                        functools.partial(_probe_build, system, case),
                        ("learn", "policy"),
                        returned_type(self.factory_signature),
                    )
                except BadInput as exc:
                    first_error = first_error or exc
                    continue
                obs_kinds.add(obs_kind)
                action_kinds.add(action_kind)
        if not obs_kinds:
            assert first_error is not None
            raise first_error
        caps = Capabilities(
            obs_kinds=frozenset(obs_kinds), action_kinds=frozenset(action_kinds), max_envs=3, partial_reset=False
        )
        return Probed(spawned, caps)


def _probe_build(system: System, case: AlgorithmCase) -> Any:
    """Build the model, then have its policy act once on the env's first observation: a policy
    built for another observation kind may construct and fail only when it acts (sb3-contrib's
    MlpLstmPolicy over a Dict observation), which is the stack refusing the kind, not a failure."""
    venv = build_vec_env(case, [MemorySink()])
    model = system.build(venv)  # type: ignore[arg-type]  # built from a VecEnv
    model.predict(venv.reset(), deterministic=True)
    return model


FAMILY = AlgorithmFamily()

# ------------------------------------------------------------------------------------ systems

#: the bundled buffers hold this many transitions (SB3 divides them among the sub-envs): a case
#: of more steps wraps them
BUFFER_SIZE = 24
#: no gradient step while collecting: the buffer is read as the collection left it
NO_TRAINING = 10**6


def make_algorithm(algorithm: str, venv: Any, **kwargs: Any) -> Any:
    """``stable_baselines3.<algorithm>`` over ``venv``, collecting without training."""
    import stable_baselines3

    policy = "MultiInputPolicy" if type(venv.observation_space).__name__ == "Dict" else "MlpPolicy"
    options: dict[str, Any] = {
        "buffer_size": BUFFER_SIZE,
        "learning_starts": NO_TRAINING,
        "train_freq": 1,
        "seed": 0,
        "device": "cpu",
        "policy_kwargs": {"net_arch": [8]},
    }
    options.update(kwargs)
    return getattr(stable_baselines3, algorithm)(policy, venv, **options)


#: the bundled on-policy algorithms' rollout length (rows of their RolloutBuffer)
ROLLOUT_STEPS = 12


def make_on_policy(algorithm: str, venv: Any, **kwargs: Any) -> Any:
    """``stable_baselines3.<algorithm>`` (PPO, A2C) over ``venv``, rollouts of ``ROLLOUT_STEPS``."""
    import stable_baselines3

    policy = "MultiInputPolicy" if type(venv.observation_space).__name__ == "Dict" else "MlpPolicy"
    options: dict[str, Any] = {
        "n_steps": ROLLOUT_STEPS,
        "seed": 0,
        "device": "cpu",
        "policy_kwargs": {"net_arch": [8]},
    }
    if algorithm == "PPO":
        options["batch_size"] = ROLLOUT_STEPS
    options.update(kwargs)
    return getattr(stable_baselines3, algorithm)(policy, venv, **options)


#: FINDINGS.md S8 (S3 reaching the replay buffer)
VECNORMALIZE_TERMINAL = (
    "FINDINGS S8: VecNormalize normalises infos[i]['terminal_observation'] with clipping (clip_obs, 10 by default); "
    "_store_transition stores unnormalize_obs of it, which cannot undo the clipping (S3)"
)


def _algorithm_system(
    system_id: str,
    algorithm: str,
    source: str,
    *,
    action: str,
    obs: frozenset[str] = frozenset({"box", "dict"}),
    vec_envs: tuple[str, ...] = VEC_ENVS,
    title: str | None = None,
    on_policy: bool = False,
    **kwargs: Any,
) -> System:
    return System(
        id=system_id,
        family=SB3_ALGORITHM,
        title=title or f"{source} over {' / '.join(vec_envs)}",
        build=functools.partial(make_on_policy if on_policy else make_algorithm, algorithm, **kwargs),
        source=source,
        requires=("stable-baselines3",),
        out_of_process="SubprocVecEnv" in vec_envs,
        costly=True,
        capabilities=Capabilities(obs_kinds=obs, action_kinds=frozenset({action}), max_envs=3, partial_reset=False),
        options=((VEC_ENVS_OPTION, vec_envs),),
        # VecNormalize clips the terminal observation it normalises; unnormalize_obs cannot undo it
        known_violations=(
            (("algorithm.buffer_next_obs", VECNORMALIZE_TERMINAL),)
            if {VECNORMALIZE, VECNORMALIZE_SMALL_CLIP} & set(vec_envs) and not on_policy
            else ()
        ),
    )


_BOX = frozenset({"box"})
for _id, _algorithm, _action, _obs, _vecs, _kwargs in (
    ("sb3.DQN.DummyVecEnv", "DQN", "discrete", frozenset({"box", "dict"}), ("DummyVecEnv",), {}),
    ("sb3.DQN.SubprocVecEnv", "DQN", "discrete", _BOX, ("SubprocVecEnv",), {}),
    ("sb3.DQN.VecNormalize", "DQN", "discrete", _BOX, (VECNORMALIZE,), {}),
    ("sb3.DQN.VecNormalize.unclipped", "DQN", "discrete", _BOX, (VECNORMALIZE_UNCLIPPED,), {}),
    ("sb3.DQN.VecNormalize.clip_obs_1", "DQN", "discrete", _BOX, (VECNORMALIZE_SMALL_CLIP,), {}),
    (
        "sb3.DQN.no_timeout_handling",
        "DQN",
        "discrete",
        _BOX,
        ("DummyVecEnv",),
        {"replay_buffer_kwargs": {"handle_timeout_termination": False}},
    ),
    (
        "sb3.DQN.optimize_memory_usage",
        "DQN",
        "discrete",
        _BOX,
        ("DummyVecEnv",),
        {"optimize_memory_usage": True, "replay_buffer_kwargs": {"handle_timeout_termination": False}},
    ),
    ("sb3.DQN.n_steps", "DQN", "discrete", _BOX, ("DummyVecEnv",), {"n_steps": 3}),
    ("sb3.SAC.DummyVecEnv", "SAC", "box", frozenset({"box", "dict"}), ("DummyVecEnv",), {}),
    ("sb3.SAC.SubprocVecEnv", "SAC", "box", _BOX, ("SubprocVecEnv",), {}),
    ("sb3.SAC.n_steps", "SAC", "box", _BOX, ("DummyVecEnv",), {"n_steps": 3}),
    ("sb3.TD3.n_steps.VecNormalize", "TD3", "box", _BOX, (VECNORMALIZE,), {"n_steps": 2}),
    ("sb3.DDPG.DummyVecEnv", "DDPG", "box", frozenset({"box", "dict"}), ("DummyVecEnv",), {}),
    ("sb3.DDPG.n_steps", "DDPG", "box", _BOX, ("DummyVecEnv",), {"n_steps": 3}),
):
    _args = ", ".join(f"{k}={v!r}" for k, v in _kwargs.items())
    SYSTEMS.add(
        _algorithm_system(
            _id,
            _algorithm,
            f"stable_baselines3.{_algorithm}(policy, env{', ' + _args if _args else ''})",
            action=_action,
            obs=_obs,
            vec_envs=_vecs,
            **_kwargs,
        )
    )

# on-policy: one rollout of ROLLOUT_STEPS rows per sub-env, read before any gradient step
for _id, _algorithm, _action, _obs, _vecs in (
    ("sb3.PPO.DummyVecEnv", "PPO", "discrete", frozenset({"box", "dict"}), ("DummyVecEnv",)),
    ("sb3.PPO.SubprocVecEnv", "PPO", "box", _BOX, ("SubprocVecEnv",)),
    ("sb3.PPO.VecNormalize", "PPO", "box", _BOX, (VECNORMALIZE,)),
    ("sb3.A2C.DummyVecEnv", "A2C", "box", frozenset({"box", "dict"}), ("DummyVecEnv",)),
    ("sb3.A2C.VecNormalize.unclipped", "A2C", "discrete", _BOX, (VECNORMALIZE_UNCLIPPED,)),
):
    SYSTEMS.add(
        _algorithm_system(
            _id,
            _algorithm,
            f"stable_baselines3.{_algorithm}(policy, env, n_steps={ROLLOUT_STEPS})",
            action=_action,
            obs=_obs,
            vec_envs=_vecs,
            on_policy=True,
        )
    )
