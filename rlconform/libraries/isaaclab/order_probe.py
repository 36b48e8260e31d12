"""The order of a step, judged without the task hooks: replay the example with another random
state for the reset, and see what moves.

Why: :mod:`~rlconform.libraries.isaaclab.order` reads the order from DirectRLEnv's task hooks
(``_reset_idx``, ``_get_rewards``, ``_get_observations``). A user's env that follows DirectRLEnv's
step/reset contract need not have them: an Isaac Gym style env (``reset_idx``,
``compute_observations`` filling ``obs_buf``), a step written inline, or one that resets the ended
sub-envs only at the start of the next step (Isaac Gym's ``pre_physics_step`` did) returns the
ended episode's last observation as the next one's first, or rewards the ending step from the
reset state, and no hook shows it.

What the replay shows. The example is run twice from the same ``reset(seed)`` with the same
actions, up to the first step in which a sub-env ends; the second run has every random source
the env can draw from (torch's, NumPy's and Python's global generators, and the generators the env
holds) set to another state right after the reset. Where the steps draw nothing from them, both
runs agree on every step before the end and on the sub-envs that do not end; on the ending step
only what depends on the reset's own draw can differ:

* the reward returned for an ending sub-env must not differ: it scores the step the episode took,
  and a reward that moved with the reset's draw was computed from the next episode's first state;
* the observation returned for it must differ where the env's reset draw shows in a first
  observation (three full resets tell: two from the same random state agree, one from another
  state does not): a row that did not move is the ended episode's last, read before the reset;
* ``extras["final_obs"]`` for it must not differ: it is the ended episode's last observation.

Where the replay cannot tell, nothing is judged and the verdict says why: the steps draw from the
random state (noise in the dynamics) or are not reproducible, the reset draws nothing that a first
observation shows, or no sub-env ended. The user's random states are put back afterwards.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

#: the seed the second run's random sources are set from (any that differs from the first run's)
OTHER_SEED = 0x0DD5EED
#: how deep into the env's attributes generators are looked for (env.cfg.rng, env.sim.generator)
_DEPTH = 2


@dataclass
class RandomSource:
    """One generator the env may draw from: how to read, restore and reseed it."""

    name: str
    get: Callable[[], Any]
    #: set a state read by ``get`` (what it returns is ignored)
    set: Callable[[Any], object]
    #: seed it (what it returns is ignored)
    reseed: Callable[[int], object]


def _global_sources() -> list[RandomSource]:
    sources = [
        RandomSource("torch", torch.get_rng_state, torch.set_rng_state, lambda s: torch.manual_seed(s)),
        RandomSource("numpy", np.random.get_state, np.random.set_state, lambda s: np.random.seed(s % 2**32)),
        RandomSource("random", random.getstate, random.setstate, random.seed),
    ]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        sources.append(
            RandomSource(
                "torch.cuda", torch.cuda.get_rng_state_all, torch.cuda.set_rng_state_all, torch.cuda.manual_seed_all
            )
        )
    return sources


def _owned_source(name: str, value: Any) -> RandomSource | None:
    if isinstance(value, torch.Generator):
        g = value
        return RandomSource(name, g.get_state, g.set_state, lambda s: g.manual_seed(s))
    if isinstance(value, np.random.Generator):
        bits = value.bit_generator

        def reseed(s: int, bits: Any = bits) -> None:
            bits.state = type(bits)(s).state

        return RandomSource(name, lambda: bits.state, lambda st: setattr(bits, "state", st), reseed)
    if isinstance(value, np.random.RandomState):
        rs = value
        return RandomSource(name, rs.get_state, rs.set_state, lambda s: rs.seed(s % 2**32))
    if isinstance(value, random.Random):
        rr = value
        return RandomSource(name, rr.getstate, rr.setstate, rr.seed)
    return None


def _attributes(obj: Any, prefix: str, depth: int, seen: set[int]) -> Iterator[tuple[str, Any]]:
    if id(obj) in seen or depth < 0:
        return
    seen.add(id(obj))
    try:
        items = list(vars(obj).items())
    except TypeError:
        return
    for key, value in items:
        if isinstance(value, torch.Tensor | np.ndarray | str | bytes | int | float | bool) or value is None:
            continue
        name = f"{prefix}.{key}"
        yield name, value
        if isinstance(value, dict):
            for k, v in list(value.items())[:64]:
                yield f"{name}[{k!r}]", v
        elif not isinstance(value, torch.Generator | np.random.Generator | np.random.RandomState | random.Random):
            yield from _attributes(value, name, depth - 1, seen)


def random_sources(env: Any) -> list[RandomSource]:
    """The global generators and the ones the env (and its attributes, two levels down) holds."""
    sources = _global_sources()
    found: set[int] = set()
    for root in (env, getattr(env, "unwrapped", env)):
        for name, value in _attributes(root, "env", _DEPTH, set()):
            source = _owned_source(name, value)
            if source is not None and id(value) not in found:
                found.add(id(value))
                sources.append(source)
    return sources


def _states_equal(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_states_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_states_equal(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    return bool(a == b)


@dataclass
class _Step:
    obs: torch.Tensor
    reward: torch.Tensor
    done: torch.Tensor
    final: torch.Tensor | None


@dataclass
class OrderVerdict:
    """What a replay judged: per spec the findings (sub-env masks) and how many ending sub-envs it
    judged, and why it judged nothing where it could not."""

    #: (spec, message, bad sub-envs, the ending step's number)
    findings: list[tuple[str, str, torch.Tensor, int]] = field(default_factory=list)
    judged: dict[str, int] = field(default_factory=dict)
    not_judged: str | None = None


def _policy(obs: Any) -> torch.Tensor:
    rows = obs["policy"] if isinstance(obs, dict) else obs
    return rows.detach().reshape(rows.shape[0], -1).clone()


def _final(extras: Any) -> torch.Tensor | None:
    entry = extras.get("final_obs") if isinstance(extras, dict) else None
    rows = entry.get("policy") if isinstance(entry, dict) else None
    return _policy(rows) if isinstance(rows, torch.Tensor) else None


def _rows_equal(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per row: every value equal (NaN equal to NaN)."""
    same = (a == b) | (torch.isnan(a) & torch.isnan(b)) if a.is_floating_point() else a == b
    return same.reshape(a.shape[0], -1).all(dim=1)


class _States:
    """The states of some random sources, to put back."""

    def __init__(self, sources: list[RandomSource]) -> None:
        self.sources = sources
        self.states = [source.get() for source in sources]

    def restore(self) -> None:
        for source, state in zip(self.sources, self.states, strict=True):
            source.set(state)


def _perturb(sources: list[RandomSource], unlike: list[Any] | None = None) -> bool:
    """Set every source to another state than ``unlike`` (default: the one it is in; a second seed
    where the first gives that state); whether every one differs."""
    changed = True
    for k, source in enumerate(sources):
        before = source.get() if unlike is None else unlike[k]
        for seed in (OTHER_SEED + k, OTHER_SEED + 7919 + k):
            source.reseed(seed)
            if not _states_equal(before, source.get()):
                break
        else:
            changed = False
    return changed


class _Replay:
    """The env's random sources are looked for again after each ``reset(seed)``: an env may
    replace a generator there (``self.rng = np.random.default_rng(seed)``)."""

    def __init__(self, env: Any) -> None:
        self.env = env
        #: the process's and the env's random states before the replay, put back after it
        self.before = _States(random_sources(env))

    def first_observations(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Per sub-env: a full reset's first observation is reproducible from the same random
        state, and differs from another state's."""
        states = _States(random_sources(self.env))
        one = _policy(self.env.reset()[0])
        states.restore()
        two = _policy(self.env.reset()[0])
        if not _perturb(states.sources, unlike=states.states):
            raise _Undecided("a random source could not be set to another state")
        other = _policy(self.env.reset()[0])
        reproducible = _rows_equal(one, two)
        return reproducible, reproducible & ~_rows_equal(one, other)

    def run(self, case: Any, steps: int, perturbed: bool, action_fn: Callable[..., torch.Tensor]) -> list[_Step]:
        self.before.restore()
        self.env.reset(seed=case.seed)
        if perturbed and not _perturb(random_sources(self.env)):
            raise _Undecided("a random source could not be set to another state")
        generator = torch.Generator().manual_seed(case.action_seed)
        out: list[_Step] = []
        for _ in range(steps):
            obs, reward, terminated, time_outs, extras = self.env.step(action_fn(self.env, case, generator))
            done = (terminated.bool() | time_outs.bool()).clone()
            out.append(_Step(_policy(obs), reward.detach().clone(), done, _final(extras)))
            if not perturbed and bool(done.any()):
                break
        return out


class _Undecided(Exception):
    """The replay cannot judge this example; the message says why."""


def judge(env: Any, case: Any, specs: dict[str, str], action_fn: Callable[..., torch.Tensor]) -> OrderVerdict:
    """Replay ``case`` on ``env`` (bare, not under the monitor) and judge the order of its first
    ending step. ``specs`` maps "reward", "obs" and "final" to the spec ids the findings go to."""
    replay = _Replay(env)
    verdict = OrderVerdict()
    try:
        _judge(replay, case, specs, action_fn, verdict)
    except _Undecided as why:
        verdict.not_judged = str(why)
    except Exception as exc:  # the env's own error: the monitored run reports what the env does wrong
        verdict.not_judged = f"the replay raised {type(exc).__name__}: {exc}"
    finally:
        replay.before.restore()
    return verdict


def _judge(
    replay: _Replay,
    case: Any,
    specs: dict[str, str],
    action_fn: Callable[..., torch.Tensor],
    verdict: OrderVerdict,
) -> None:
    first = replay.run(case, case.steps, perturbed=False, action_fn=action_fn)
    if not first or not bool(first[-1].done.any()):
        raise _Undecided("no sub-env ended in the example")
    end = len(first) - 1
    other = replay.run(case, len(first), perturbed=True, action_fn=action_fn)
    for t in range(end):
        a, b = first[t], other[t]
        if not (bool(_rows_equal(a.obs, b.obs).all()) and torch.equal(a.reward, b.reward)):
            raise _Undecided(
                f"its step {t + 1} returned other values once the random sources were set to another state "
                "(its steps draw from them, or are not reproducible)"
            )
    a, b = first[end], other[end]
    if not torch.equal(a.done, b.done):
        raise _Undecided("which sub-envs ended changed with the random state")
    ended = a.done
    if not bool((_rows_equal(a.obs, b.obs) | ended).all()) or not bool(((a.reward == b.reward) | ended).all()):
        raise _Undecided(
            "the sub-envs that did not end returned other values once the random sources were set to another "
            "state (its steps draw from them)"
        )
    step = end + 1
    moved_reward = ended & (a.reward != b.reward) & ~(torch.isnan(a.reward) & torch.isnan(b.reward))
    verdict.judged[specs["reward"]] = int(ended.sum())
    verdict.findings.append(
        (
            specs["reward"],
            f"ended at step {step}, and the reward returned for that step changed when the example was replayed "
            "with another random state for its reset (everything before, and the sub-envs that did not end, were "
            "the same): the reward was computed after the reset, from the next episode's first state; "
            "DirectRLEnv computes rewards before the reset",
            moved_reward,
            step,
        )
    )
    if a.final is not None and b.final is not None and a.final.shape == b.final.shape:
        verdict.judged[specs["final"]] = int(ended.sum())
        verdict.findings.append(
            (
                specs["final"],
                f"ended at step {step}, and its terminal observation in extras['final_obs'] changed when the "
                "example was replayed with another random state for its reset: it was computed after the reset "
                "(the next episode's first observation), not from the state its last step reached",
                ended & ~_rows_equal(a.final, b.final),
                step,
            )
        )
    reproducible, shows = replay.first_observations()
    judged_obs = ended & shows
    verdict.judged[specs["obs"]] = int(judged_obs.sum())
    if not bool(judged_obs.any()):
        why = (
            "a full reset's first observations are not reproducible from the same random state"
            if not bool(reproducible.any())
            else "a full reset's first observations do not change with the random state (its reset draws nothing "
            "they show)"
        )
        verdict.not_judged = f"the returned observations were not judged: {why}"
        return
    verdict.findings.append(
        (
            specs["obs"],
            f"ended at step {step} and should have been reset, but the observation returned for it did not change "
            "when the example was replayed with another random state for its reset (a full reset's first "
            "observation does): it is the ended episode's last observation, read before the reset, returned as "
            "the next episode's first",
            judged_obs & _rows_equal(a.obs, b.obs),
            step,
        )
    )
