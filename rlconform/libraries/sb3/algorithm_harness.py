"""Running an SB3 algorithm on one :class:`~rlconform.libraries.sb3.algorithm_case.AlgorithmCase`:
the VecEnv of reference envs it is handed, ``model.learn``, and reading back what it stored
(:class:`AlgorithmRun`: every valid row of its replay buffer, sampled through the buffer's own
``_get_samples``, or the rollout an on-policy algorithm collected, with a reference GAE).

Which sub-env a sampled row comes from: SB3's buffers draw the sub-env of each index with
``np.random.randint(0, n_envs, size=len(batch_inds))`` first; rlconform seeds NumPy's global
generator, draws those indices itself, and chooses the batch indices so that every (row, sub-env)
pair is sampled (the generator's state is restored afterwards). A row whose observation decodes
to another sub-env is read as that sub-env's.
"""

from __future__ import annotations

import contextlib
import functools
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rlconform.core.family import refused
from rlconform.core.refusals import REFUSING_EXCEPTIONS, frames_below, library_frames, raises_on_purpose, what_it_said
from rlconform.core.system import System
from rlconform.core.user import close_within_limit
from rlconform.core.watchdog import child_processes, reap
from rlconform.envs.calllog import FileSink, LogSink, MemorySink
from rlconform.envs.truth import GroundTruth, build_truth
from rlconform.envs.whole_run import WholeRunRecord
from rlconform.libraries.sb3.algorithm_case import (
    SAMPLE_SEED,
    SMALL_CLIP,
    UNCLIPPED,
    VECNORMALIZE,
    VECNORMALIZE_SMALL_CLIP,
    VECNORMALIZE_UNCLIPPED,
    AlgorithmCase,
)
from rlconform.libraries.sb3.algorithm_rollouts import (
    RolloutCollected,
    RolloutFacts,
    RolloutReference,
    reading_callback,
    reference_gae,
)
from rlconform.libraries.sb3.algorithm_values import bootstrap_values
from rlconform.libraries.sb3.vecenv_family import preload_forkserver

if TYPE_CHECKING:
    pass

#: the packages whose code is "the library" when a ``learn`` that raised is judged (learn_refusal)
LIBRARY_PACKAGES = ("stable_baselines3", "sb3_contrib")


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
class AlgorithmRun(WholeRunRecord):
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
                    learn(model, case.steps * case.num_envs)
                except Exception as exc:
                    refusal = learn_refusal(exc, model)
                    if refusal is not None:
                        run.build_error = refused(
                            f"model.learn(total_timesteps={case.steps * case.num_envs}) {refusal}"
                        )
                        return run
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
        learn(model, total, callback=reading_callback(model, sink))
    except RolloutCollected:
        pass
    except Exception as exc:
        refusal = learn_refusal(exc, model)
        if refusal is not None:
            run.build_error = refused(f"model.learn (one rollout) {refusal}")
        else:
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


def learn(model: Any, total_timesteps: int, callback: Any = None) -> Any:
    """``model.learn``: the frame below which :func:`learn_refusal` reads whose code raised."""
    return model.learn(total_timesteps=total_timesteps, callback=callback)


def learn_refusal(exc: BaseException, model: Any) -> str | None:
    """Why the ``model.learn`` that raised ``exc`` is the library refusing rlconform's input (one
    line: the library's own words and where it said them), or None: the system crashed, a failure.

    A refusal is the library saying, in its own code, that the input it was handed is not one it
    takes: SB3's episodic ``train_freq`` over more than one env ("You must use only one env when
    doing episodic training", an ``assert`` in ``OffPolicyAlgorithm.collect_rollouts``),
    sb3-contrib's MaskablePPO over an env without action masks (a ``raise ValueError`` in
    ``MaskablePPO.collect_rollouts``), HerReplayBuffer over an env that is not a goal env (its first
    sample reads the observation's ``achieved_goal``). Such a case is left out and counted
    (rlconform.core.family.refused), never a FAIL of the user's code. It is one when all three hold:

    1. **Where**: only the library's code was running. Every frame of the traceback below
       ``learn`` is in the library's packages (:data:`LIBRARY_PACKAGES`): a frame of the user's
       code on the way (a subclass's override, their own buffer, policy or callback) or of
       rlconform's (the reference envs, the reading callback) makes it that code's failure.
    2. **What**: the library refused on purpose. The innermost frame's statement is a ``raise`` or
       an ``assert`` of the library's source raising one of :data:`REFUSING_EXCEPTIONS` (an error
       NumPy or torch raised from a line of the library is the data going wrong, not the library
       saying no), or the exception is a KeyError naming an entry that the observations handed to
       the model do not have (the library needs an entry rlconform's envs never give).
    3. **When**: at the library's first use of the input, before it had used any of it. No
       gradient step was completed (``model._n_updates == 0``), and where rows were already stored
       (the refusal came at the first sample) they were stored by the library's own algorithm and
       buffer classes, none of the user's, so nothing the user wrote made what the library refused.

    Anything else, an IndexError in a user's ``_store_transition``, a shape error NumPy raises in
    SB3's ``add``, a ValueError raised after training began, stays ``learn_error``: a FAIL."""
    frames = frames_below(exc.__traceback__, learn.__code__)
    if not frames or not library_frames(frames, LIBRARY_PACKAGES, own_objects=False):
        return None
    innermost = frames[-1]
    missing_entry = isinstance(exc, KeyError) and _missing_observation_entry(exc, model)
    deliberate = isinstance(exc, REFUSING_EXCEPTIONS) and raises_on_purpose(innermost)
    if not (missing_entry or deliberate):
        return None
    if int(getattr(model, "_n_updates", 0) or 0) != 0:
        return None
    if _stored_rows(model) and not _library_classes_only(model):
        return None
    said = what_it_said(exc, innermost, LIBRARY_PACKAGES)
    if missing_entry:
        said += f": the observations rlconform's envs give have no entry {exc.args[0]!r}"
    return said


def _missing_observation_entry(exc: KeyError, model: Any) -> bool:
    """Whether ``exc`` names an entry the model's (Dict) observations do not have."""
    key = exc.args[0] if exc.args else None
    spaces = getattr(getattr(model, "observation_space", None), "spaces", None)
    return isinstance(key, str) and isinstance(spaces, Mapping) and key not in spaces


def _stored_rows(model: Any) -> bool:
    """Whether the model's buffer holds anything (a rollout or replay buffer's position or fill)."""
    for name in ("replay_buffer", "rollout_buffer"):
        buffer = getattr(model, name, None)
        if buffer is not None and (int(getattr(buffer, "pos", 0) or 0) > 0 or bool(getattr(buffer, "full", False))):
            return True
    return False


def _library_classes_only(model: Any) -> bool:
    """Whether the algorithm, its policy and its buffers are the library's own classes."""
    parts = [model, getattr(model, "policy", None), getattr(model, "replay_buffer", None)]
    parts.append(getattr(model, "rollout_buffer", None))
    return all(type(part).__module__.split(".")[0] in LIBRARY_PACKAGES for part in parts if part is not None)
