"""Family ``sb3.Algorithm``: what an SB3 algorithm stores for training (``--api sb3.Algorithm``).

A user's factory ``make(env: VecEnv) -> BaseAlgorithm`` is handed a VecEnv of rlconform's
decodable reference envs (``DummyVecEnv``, ``SubprocVecEnv`` or ``VecNormalize(DummyVecEnv)``,
whose sub-envs end by termination and by time-out at different steps); the algorithm's own
collection code runs through ``model.learn(total_timesteps=...)``, never a re-implementation of it.
What it stored is then read the way its loss reads it: every valid row of ``model.replay_buffer``
is sampled through the buffer's own ``_get_samples`` (``env=None``: in env units, as stored) for
every sub-env, and compared with the env logs, the ground truth (:mod:`rlconform.envs.truth`).

Off-policy buffers (``ReplayBuffer``, ``DictReplayBuffer``, ``NStepReplayBuffer``, with the user's
subclasses) are read row by row (:mod:`.algorithm_harness` says how). An on-policy algorithm (PPO, A2C, a user's
``RolloutBuffer`` subclass) collects one rollout, ``model.learn(total_timesteps=model.n_steps *
num_envs)``, read at ``on_rollout_end`` before any gradient step and compared with a reference GAE
(:mod:`rlconform.libraries.sb3.algorithm_rollouts`); its row t of sub-env e is that sub-env's t-th
step.

The case and its strategy are :mod:`.algorithm_case`, running it and reading back what the algorithm
stored :mod:`.algorithm_harness`; this module holds the family and its systems.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from rlconform.core.family import REFUSED, FactoryShape
from rlconform.core.reproducer import ReproducerParts, case_lines, write
from rlconform.core.system import Capabilities, Probed, System, SystemTable
from rlconform.core.user import BadInput, returned_type, spawns_workers
from rlconform.envs.calllog import MemorySink
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.whole_run import WholeRunFamily
from rlconform.libraries.sb3.algorithm_case import (
    BOX_ACTION,
    BOX_OBS,
    DICT_OBS,
    DISCRETE_ACTION,
    VEC_ENVS,
    VEC_ENVS_OPTION,
    VECNORMALIZE,
    VECNORMALIZE_SMALL_CLIP,
    VECNORMALIZE_UNCLIPPED,
    AlgorithmCase,
    algorithm_boundary_cases,
    algorithm_cases,
    sub_envs_note,
)
from rlconform.libraries.sb3.algorithm_harness import (
    AlgorithmRun,
    SampledRow,
    build_vec_env,
    learn,
    learn_refusal,
    run_algorithm_case,
)
from rlconform.specs.families import SB3_ALGORITHM

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from rlconform.core.spec import Spec

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()


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

    #: the FINDINGS rows of the bundled algorithms' documented behaviours (known violations,
    #: named in every report: rlconform.core.findings)
    findings = {
        ("sb3.*.VecNormalize", "algorithm.buffer_next_obs"): "S8",
        ("sb3.*.VecNormalize.clip_obs_*", "algorithm.buffer_next_obs"): "S8",
        ("sb3.DQN.optimize_memory_usage", "algorithm.exact_targets"): "S9",
    }

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
            said = getattr(run, name)
            if said and said.startswith(REFUSED):
                print(said, file=stream)  # "refused by the library: model.learn(...) raised ..."
            elif said:
                print(f"{name.replace('_', ' ')}: {said}", file=stream)
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
        return self.user_system_of(
            reference,
            title=f"{reference}(env) (your algorithm)",
            build=fn,
            out_of_process=True,
            capabilities=Capabilities(max_envs=3, partial_reset=False),
            description="an SB3 algorithm: what it stores in its replay buffer, against the env logs",
        )

    def probe_factory(self, system: System) -> Probed:
        """Build the factory over a one-env DummyVecEnv of each observation and action kind, have
        its policy act and ``learn`` a few steps: the kinds it accepts are the ones its cases draw
        (DQN takes Discrete actions only, an ``MlpPolicy`` Box observations only). Then, with an
        accepted kind, ``learn`` over 3 sub-envs (then 2): a factory the library refuses for that
        many (SB3's episodic ``train_freq`` takes one env only) is checked with fewer, and every
        verdict says so. None accepted is bad input, with the library's refusal in ``learn`` (the
        furthest any kind got) or else the first build error.

        A ``learn`` that raised in the probe narrows nothing unless the library refused
        (:func:`rlconform.libraries.sb3.algorithm_harness.learn_refusal` states the rule): a crash of
        the user's code is left to the search, which fails it. (The probe runs in an isolated
        worker, whose inherited torch runs on one thread: rlconform.core.isolation.)"""
        spawned = False
        obs_kinds: set[str] = set()
        action_kinds: set[str] = set()
        first_error: BadInput | None = None
        first_refusal: str | None = None
        accepted: AlgorithmCase | None = None
        facts: dict[str, Any] = {}
        for obs_kind, obs in (("box", BOX_OBS), ("dict", DICT_OBS)):
            for action_kind, action in (("discrete", DISCRETE_ACTION), ("box", BOX_ACTION)):
                case = AlgorithmCase(EnvScript(obs=obs, action=action, episodes=PROBE_EPISODES), 1, PROBE_LEARN_STEPS)
                try:
                    built_workers, refusal = self._probe_case(system, case, facts)
                except BadInput as exc:
                    first_error = first_error or exc
                    continue
                spawned |= built_workers
                if refusal is not None:
                    first_refusal = first_refusal or refusal
                    continue
                obs_kinds.add(obs_kind)
                action_kinds.add(action_kind)
                accepted = accepted or case
        if accepted is None:
            if first_refusal is not None:
                raise BadInput(
                    f"{system.source}: the library refuses every env rlconform can give it, so nothing can be "
                    f"checked: {first_refusal}"
                )
            assert first_error is not None
            raise first_error
        max_envs = 3
        notes: tuple[str, ...] = ()
        refusals: list[str] = []
        for num_envs in (3, 2):
            try:
                built_workers, refusal = self._probe_case(system, dataclasses.replace(accepted, num_envs=num_envs), {})
            except BadInput as exc:
                built_workers, refusal = False, str(exc).splitlines()[0]
            spawned |= built_workers
            if refusal is None:
                break
            refusals.append(refusal)
            max_envs = num_envs - 1
        if refusals:
            notes = (sub_envs_note(max_envs, refusals[-1]),)
        if facts.get("episodic"):
            notes += (EPISODIC_NOTE,)
        caps = Capabilities(
            time_limit="required" if facts.get("episodic") else "allowed",
            obs_kinds=frozenset(obs_kinds),
            action_kinds=frozenset(action_kinds),
            max_envs=max_envs,
            partial_reset=False,
            notes=notes,
        )
        return Probed(spawned, caps)

    def _probe_case(self, system: System, case: AlgorithmCase, facts: dict[str, Any]) -> tuple[bool, str | None]:
        """Build the factory over ``case``'s VecEnv, act and learn (:func:`_probe_build`): whether
        that started worker processes, and the library's refusal in ``learn`` (None: none); what
        the built model declares goes in ``facts``."""
        spawned = spawns_workers(
            system,
            functools.partial(_probe_build, system, case, facts),
            ("learn", "policy"),
            returned_type(self.factory_signature),
        )
        return spawned, facts.pop("refusal", None)


#: the steps per sub-env the probe's ``learn`` runs: enough for an off-policy algorithm's first
#: gradient steps where its factory starts learning at once (DQN trains every 4 steps), where a
#: library reads what it stored (HerReplayBuffer's first sample)
PROBE_LEARN_STEPS = 8
#: the note of a factory that trains by episodes: its cases put a time limit on every env
EPISODIC_NOTE = (
    "every episode ends within a time limit: train_freq counts episodes, so model.learn waits for an episode end"
)
#: the probe's episodes end early and both ways: a library that needs an episode end before it
#: samples (HerReplayBuffer) sees one
PROBE_EPISODES = (EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated"))


def _probe_build(system: System, case: AlgorithmCase, facts: dict[str, Any]) -> Any:
    """Build the model, then have its policy act once on the env's first observation (a policy
    built for another observation kind may construct and fail only when it acts: sb3-contrib's
    MlpLstmPolicy over a Dict observation, which is the stack refusing the kind, not a failure),
    then ``learn`` a few steps: a refusal there is ``facts["refusal"]``; any other exception is
    left to the search, which reports it on the case that shows it. ``facts["episodic"]``: the
    model trains by episodes (SB3's ``train_freq=(n, "episode")``)."""
    venv = build_vec_env(case, [MemorySink() for _ in range(case.num_envs)])
    model = system.build(venv)  # type: ignore[arg-type]  # built from a VecEnv
    unit = getattr(getattr(getattr(model, "train_freq", None), "unit", None), "value", None)
    facts["episodic"] = facts.get("episodic", False) or unit == "episode"
    model.predict(venv.reset(), deterministic=True)
    try:
        learn(model, case.steps * case.num_envs, callback=_stop_after(case.steps))
    except Exception as exc:
        refusal = learn_refusal(exc, model)
        if refusal is not None:
            facts["refusal"] = f"model.learn {refusal}"
    return model


def _stop_after(steps: int) -> Any:
    """An SB3 callback that stops ``learn`` after ``steps`` steps of the VecEnv (an on-policy
    algorithm's rollout would otherwise run ``n_steps``)."""
    from stable_baselines3.common.callbacks import BaseCallback

    class StopAfter(BaseCallback):
        def _on_step(self) -> bool:
            return self.n_calls < steps

    return StopAfter()


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


# kept for one release: the names code imported from this module before the family was split by
# role (rlconform.libraries.sb3.algorithm_case, algorithm_harness)
__all__ = [
    "FAMILY",
    "SYSTEMS",
    "VEC_ENVS",
    "VEC_ENVS_OPTION",
    "AlgorithmCase",
    "AlgorithmFamily",
    "AlgorithmRun",
    "SampledRow",
    "algorithm_boundary_cases",
    "algorithm_cases",
    "build_vec_env",
    "make_algorithm",
    "make_on_policy",
    "run_algorithm_case",
]
