"""Probes of a user's env that a case's run does not make: actions at the edges of the action
space (``env.edge_actions``), and the random stream across resets without a seed
(``env.seed_stream``).

A case's actions are ``action_space.sample()``: a Box sample never lands on a bound, and a large
Discrete space's last value may never be drawn, so an env that rejects its own space's edges passes.
The edges are listed here from the space itself. And a case resets with one seed: an env that
reseeds itself with a constant on every reset without a seed gives the same later episodes
whatever that seed was, which only several seeds show.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from rlconform.core.compare import first_difference
from rlconform.core.config import EPISODE_SECONDS_VARIABLE
from rlconform.core.watchdog import CallTimeout, call_timeout, deadline
from rlconform.libraries.envauthor.torch_envs import to_env_action

#: the most values of one Discrete space tried (its first and last half of this many)
DISCRETE_VALUES = 64
#: stands for an infinite bound of a float Box: a large finite action within the bounds
LARGE = 1e6


def edge_actions(space: Any) -> list[tuple[str, Any]]:
    """The actions at the edges of ``space``, each with what it is: a Box's low and high bounds
    (and, with several elements, both alternations of them, and the midpoint; a large finite value
    for an infinite bound), every Discrete value (its first and last ``DISCRETE_VALUES // 2`` for a
    larger one), each MultiDiscrete component's least and greatest value, MultiBinary's all zeros
    and all ones, and Dict and Tuple spaces combined leaf by leaf. Empty for a space whose edges are
    not known (a Text, a custom space). Every action returned is in ``space``."""
    edges = _edges(space)
    if edges is None:
        return []
    return [(label, action) for label, action in edges if _contains(space, action)]


def _contains(space: Any, action: Any) -> bool:
    try:
        return bool(space.contains(action))
    except Exception:
        return False


def _edges(space: Any) -> list[tuple[str, Any]] | None:
    from gymnasium import spaces

    if isinstance(space, spaces.Discrete):
        start, n = int(space.start), int(space.n)
        values = list(range(start, start + n))
        if n > DISCRETE_VALUES:
            values = values[: DISCRETE_VALUES // 2] + values[-DISCRETE_VALUES // 2 :]
        return [(f"Discrete value {v}", np.int64(v).astype(space.dtype)) for v in values]
    if isinstance(space, spaces.Box):
        return _box_edges(space)
    if isinstance(space, spaces.MultiDiscrete):
        low = np.asarray(space.start, dtype=space.dtype)
        high = (low + np.asarray(space.nvec) - 1).astype(space.dtype)
        return _alternations(low, high, "each component's least value", "each component's greatest value")
    if isinstance(space, spaces.MultiBinary):
        zeros = np.zeros(space.shape, dtype=space.dtype)
        return _alternations(zeros, np.ones(space.shape, dtype=space.dtype), "all zeros", "all ones")
    if isinstance(space, spaces.Dict):
        return _combined({key: _edges(sub) for key, sub in space.spaces.items()}, space, dict)
    if isinstance(space, spaces.Tuple):
        parts = {i: _edges(sub) for i, sub in enumerate(space.spaces)}
        return _combined(parts, space, lambda items: tuple(value for _, value in items))
    return None


def _box_edges(space: Any) -> list[tuple[str, Any]]:
    low, high = np.asarray(space.low), np.asarray(space.high)
    if np.issubdtype(space.dtype, np.floating):
        low = np.where(np.isfinite(low), low, np.maximum(-LARGE, np.minimum(high, 0.0) - LARGE))
        high = np.where(np.isfinite(high), high, np.minimum(LARGE, np.maximum(low, 0.0) + LARGE))
    low, high = low.astype(space.dtype), high.astype(space.dtype)
    edges = _alternations(low, high, "the low bound", "the high bound")
    middle = (low.astype(np.float64) + (high.astype(np.float64) - low.astype(np.float64)) / 2).astype(space.dtype)
    edges.append(("the midpoint of the bounds", middle))
    return edges


def _alternations(low: np.ndarray, high: np.ndarray, low_name: str, high_name: str) -> list[tuple[str, Any]]:
    edges: list[tuple[str, Any]] = [(low_name, low.copy()), (high_name, high.copy())]
    if low.size > 1:
        even = (np.arange(low.size) % 2 == 0).reshape(low.shape)
        edges.append((f"{low_name} and {high_name} alternating", np.where(even, low, high).astype(low.dtype)))
        edges.append((f"{high_name} and {low_name} alternating", np.where(even, high, low).astype(low.dtype)))
    return edges


def _combined(
    parts: dict[Any, list[tuple[str, Any]] | None], space: Any, build: Callable[[list[tuple[Any, Any]]], Any]
) -> list[tuple[str, Any]] | None:
    """Edge k of a composite space: edge k (cycling) of each leaf; a leaf with unknown edges takes a
    seeded sample."""
    known = {key: edges for key, edges in parts.items() if edges}
    if not known:
        return None
    samples = {}
    for key, edges in parts.items():
        if not edges:
            sub = copy.deepcopy(space[key])
            sub.seed(0)
            samples[key] = sub.sample()
    count = max(len(edges) for edges in known.values())
    out = []
    for k in range(count):
        items = [(key, known[key][k % len(known[key])][1] if key in known else samples[key]) for key in parts]
        label = ", ".join(f"{key}: {known[key][k % len(known[key])][0]}" for key in known)
        out.append((label, build(items)))
    return out


def probe_edges(
    factory: Callable[[], Any], seed: int, edges: list[tuple[str, Any]], device: str | None
) -> dict[str, Any]:
    """Reset a fresh env with ``seed`` and step it once with each edge action (a reset after an
    episode end, and after a step that raised). ``rejected``: (edge, action, error) of each step that
    raised or did not answer; ``error``: the probe could not build or reset the env (reported by
    ``env.api_shape``, not here)."""
    out: dict[str, Any] = {"tried": 0, "rejected": []}
    limit = call_timeout(user_envs=True)
    try:
        env = factory()
        env.reset(seed=seed)
    except (Exception, CallTimeout) as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
        return out
    try:
        for label, action in edges:
            out["tried"] += 1
            try:
                with deadline(limit):
                    result = env.step(to_env_action(action, device))
            except CallTimeout:
                out["rejected"].append((label, action, f"did not answer within {limit:g} s"))
                break  # a hung env is not stepped again
            except Exception as exc:
                out["rejected"].append((label, action, f"raised {type(exc).__name__}: {exc}"))
                if not _reset(env, seed, limit):
                    break
                continue
            ended = isinstance(result, tuple) and len(result) == 5 and (bool(result[2]) or bool(result[3]))
            if ended and not _reset(env, None, limit):
                break
    finally:
        _close(env)
    return out


def _reset(env: Any, seed: int | None, limit: float) -> bool:
    try:
        with deadline(limit):
            env.reset(seed=seed)
    except (Exception, CallTimeout):
        return False
    return True


def _close(env: Any) -> None:
    try:
        with deadline(call_timeout(user_envs=True)):
            env.close()
    except (Exception, CallTimeout):
        pass


# --------------------------------------------------------------------------------- seeding stream

#: seeds the stream probe starts from: the episodes after them must all differ for a verdict
STREAM_SEEDS = 6
#: steps of each episode compared (after its reset observation)
STREAM_PREFIX = 12


def probe_stream(
    factory: Callable[[], Any],
    seed: int,
    actions: Callable[[], Iterator[Any]],
    budget: float,
) -> dict[str, Any]:
    """For ``STREAM_SEEDS`` seeds from ``seed``: a fresh env reset with the seed, its first episode
    run to its end, then a reset without a seed and the next episode's first ``STREAM_PREFIX``
    steps; every episode is given the same actions (``actions()`` starts them again). Then the
    first seed once more on a fresh env. ``firsts``/``seconds``: each seed's first and second
    episode (reset observation, then (obs, reward, terminated, truncated) per step);
    ``again``: the first seed's two episodes on the second env. ``no_end``: an episode did not end
    within ``budget`` seconds in all."""
    out: dict[str, Any] = {"seeds": [seed + 7919 * j for j in range(STREAM_SEEDS)], "firsts": [], "seconds": []}
    start = time.monotonic()
    try:
        with deadline(budget + call_timeout(user_envs=True) * 4):
            for j, s in enumerate([*out["seeds"], out["seeds"][0]]):
                env = factory()
                try:
                    first = _episode(env, s, actions(), start, budget, to_end=True)
                    if first is None:
                        out["no_end"] = (
                            f"the first episodes of {STREAM_SEEDS + 1} fresh envs did not all end within {budget:g} s "
                            f"of random actions (twice {EPISODE_SECONDS_VARIABLE})"
                        )
                        return out
                    second = _episode(env, None, actions(), start, budget, to_end=False)
                finally:
                    env.close()
                if j < STREAM_SEEDS:
                    out["firsts"].append(first)
                    out["seconds"].append(second)
                else:
                    out["again"] = (first, second)
    except (Exception, CallTimeout) as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


def _episode(
    env: Any, seed: int | None, actions: Iterator[Any], start: float, budget: float, *, to_end: bool
) -> list[Any] | None:
    """One episode's first ``STREAM_PREFIX`` steps after ``reset(seed=seed)``; with ``to_end``, the
    episode is stepped on to its end (None: it did not end within the budget)."""
    obs, _ = env.reset(seed=seed)
    trace: list[Any] = [copy.deepcopy(obs)]
    steps = 0
    while True:
        obs, reward, terminated, truncated, _ = env.step(next(actions))
        steps += 1
        if steps <= STREAM_PREFIX:
            trace.append((copy.deepcopy(obs), float(reward), bool(terminated), bool(truncated)))
        if terminated or truncated:
            return trace
        if not to_end and steps >= STREAM_PREFIX:
            return trace
        if time.monotonic() - start > budget:
            return None


def distinct(traces: list[Any]) -> int:
    """How many different traces ``traces`` holds."""
    kinds: list[Any] = []
    for trace in traces:
        if not any(first_difference(trace, kind) is None for kind in kinds):
            kinds.append(trace)
    return len(kinds)
