"""Each wrapper layer of a user's env compared with the layer it wraps, call by call.

A user's env is often a stack: ``MyTimeLimit(MyRewardShaping(GridEnv()))``, each layer with
``.env``. Compared only with itself, such an env hides a layer's boundary mistakes: a time limit
that sets ``terminated`` instead of ``truncated`` passes every env-author spec. So every layer's
``reset`` and ``step`` are tapped (wrapped on the instance; nothing returned is changed) and the
env is driven once; each layer's answer is then read beside the answers the layer under it gave
during that call. What a layer may change follows from what the layer is: any layer may add info
keys, a reward or observation transform may change its field, a time limit may end an episode
with ``truncated`` exactly at its limit; no layer may drop what the layer under it returned,
end an episode with ``terminated`` that the env under it did not end (other than the layers that
document it, :data:`TERMINATING_LAYERS`), or hide an episode end.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, field
from typing import Any

#: layers that document ending an episode with ``terminated`` where the env did not (a lost life
#: as the end of an episode, for value estimation)
TERMINATING_LAYERS = frozenset({"EpisodicLifeEnv", "AtariPreprocessing"})
#: attributes a time-limit layer keeps its limit in (Gymnasium's TimeLimit, common hand-written ones)
LIMIT_ATTRIBUTES = ("_max_episode_steps", "max_episode_steps", "max_steps", "time_limit")


@dataclass
class LayerCall:
    """One call of one layer, with the calls the layer under it answered meanwhile."""

    layer: int
    kind: str  # "reset" or "step"
    result: Any = None
    failed: bool = False
    inner: list[LayerCall] = field(default_factory=list)
    #: the layer's step count in its episode (steps since its last reset), for a step
    episode_step: int = 0


@dataclass
class LayerRun:
    """The env's layers (outside in) and every call each answered."""

    names: list[str]
    calls: list[LayerCall]
    limits: dict[int, int]


def layer_chain(env: Any) -> list[Any]:
    chain = [env]
    while len(chain) < 32:
        inner = getattr(chain[-1], "env", None)
        if inner is None or inner is chain[-1] or not (hasattr(inner, "step") and hasattr(inner, "reset")):
            break
        chain.append(inner)
    return chain


class LayerTap:
    """Every layer of ``env`` tapped (wrapped on the instance; nothing returned is changed), its
    calls recorded as they are answered, whoever drives the env: :func:`drive_layers`, or
    env-author mode's fresh replay of the bare env (``EnvRun.second``), which is the same run
    (a fresh env, the case's seeded reset and copy 0's actions, a reset after each end), so that a
    check drives each example's env once less (issue 39)."""

    def __init__(self, env: Any) -> None:
        self.chain = layer_chain(env)
        #: the top-level calls, each with the calls the layers under it answered meanwhile
        self.top: list[LayerCall] = []
        self.limits: dict[int, int] = {}
        if len(self.chain) < 2:
            return
        stack: list[LayerCall] = []
        steps = [0] * len(self.chain)

        def tap(index: int, kind: str, method: Any) -> Any:
            @functools.wraps(method)
            def call(*args: Any, **kwargs: Any) -> Any:
                record = LayerCall(index, kind)
                (stack[-1].inner if stack else self.top).append(record)
                stack.append(record)
                try:
                    result = method(*args, **kwargs)
                except BaseException:
                    record.failed = True
                    raise
                finally:
                    stack.pop()
                steps[index] = 0 if kind == "reset" else steps[index] + 1
                record.episode_step = steps[index]
                record.result = result
                return result

            return call

        for index, layer in enumerate(self.chain):
            for kind in ("reset", "step"):
                # a layer that refuses instance attributes is read through the one above
                with contextlib.suppress(AttributeError, TypeError):
                    setattr(layer, kind, tap(index, kind, getattr(layer, kind)))
        for index, layer in enumerate(self.chain):
            for name in LIMIT_ATTRIBUTES:
                value = getattr(layer, name, None) if name in vars(layer) else None
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    self.limits[index] = value
                    break

    def layer_run(self) -> LayerRun | None:
        """What the layers answered (None: the env has one layer only), up to the first call that
        raised: a run that goes on after an error (the driver's) is read as far as one that stops
        there (:func:`drive_layers`)."""
        if len(self.chain) < 2:
            return None
        calls = []
        for call in self.top:
            calls.append(call)
            if call.failed:
                break
        return LayerRun([type(layer).__name__ for layer in self.chain], calls, dict(self.limits))


def drive_layers(factory: Any, seed: int, actions: list[Any]) -> LayerRun | None:
    """Build the env, tap every layer, run ``reset(seed)`` and the ``actions`` (resetting after each
    episode end); None when the env has one layer only."""
    env = factory()
    tapped = LayerTap(env)
    if len(tapped.chain) < 2:
        _close(env)
        return None
    try:
        env.reset(seed=seed)
        for action in actions:
            _, _, terminated, truncated, _ = env.step(action)
            if bool(terminated) or bool(truncated):
                env.reset()
    except Exception:
        pass  # the env's own errors are the other specs' to report; what ran is compared
    finally:
        _close(env)
    return tapped.layer_run()


def _close(env: Any) -> None:
    with contextlib.suppress(Exception):
        env.close()


def _walk(calls: list[LayerCall]) -> list[LayerCall]:
    found = []
    for call in calls:
        found.append(call)
        found.extend(_walk(call.inner))
    return found


def _info_keys(info: Any) -> set[str]:
    return set(info) if isinstance(info, dict) else set()


def layer_problems(run: LayerRun) -> tuple[list[str], int]:
    """(each departure of a layer from the layer it wraps, in words; how many calls were compared)."""
    problems: list[str] = []
    compared = 0
    truncations: dict[int, set[int]] = {}
    #: (layer, its episode) -> (reward under it, reward it returned) for each single-step call
    rewards: dict[tuple[int, int], list[tuple[float, float]]] = {}
    episodes = [0] * len(run.names)
    for call in _walk(run.calls):
        if call.kind == "reset":
            episodes[call.layer] += 1
        if call.failed or call.result is None or call.layer + 1 >= len(run.names):
            continue
        below = [c for c in call.inner if c.layer == call.layer + 1 and not c.failed and c.result is not None]
        name, under = run.names[call.layer], run.names[call.layer + 1]
        where = f"layer {name} (over {under})"
        if call.kind == "reset":
            resets = [c for c in below if c.kind == "reset"]
            if len(resets) != 1 or not isinstance(call.result, tuple) or len(call.result) != 2:
                continue
            compared += 1
            lost = sorted(_info_keys(resets[0].result[1]) - _info_keys(call.result[1]))
            if lost:
                problems.append(f"{where}: reset dropped the info keys {lost} that {under}'s reset returned")
            continue
        inner_steps = [c for c in below if c.kind == "step"]
        if not inner_steps or any(c.kind == "reset" for c in below):
            continue  # a layer that answered without stepping, or reset inside its step (autoreset)
        if not isinstance(call.result, tuple) or len(call.result) != 5:
            continue
        last = inner_steps[-1].result
        if not isinstance(last, tuple) or len(last) != 5:
            continue
        compared += 1
        step = f"{where}, its episode step {call.episode_step}"
        out_term, out_trunc = bool(call.result[2]), bool(call.result[3])
        in_term, in_trunc = bool(last[2]), bool(last[3])
        if out_term and not in_term and name not in TERMINATING_LAYERS:
            problems.append(
                f"{step}: terminated=True where {under} returned terminated=False"
                + (" (truncated=True from this layer too)" if out_trunc else "")
                + ": only the env's own terminal states may set terminated (a time limit sets truncated)"
            )
        if in_term and not out_term:
            problems.append(f"{step}: terminated=False where {under} returned terminated=True (an episode end hidden)")
        if in_trunc and not out_trunc and not out_term:
            problems.append(f"{step}: truncated=False where {under} returned truncated=True (an episode end hidden)")
        if out_trunc and not in_trunc and not in_term:
            truncations.setdefault(call.layer, set()).add(call.episode_step)
        lost = sorted(_info_keys(last[4]) - _info_keys(call.result[4]))
        if lost:
            problems.append(f"{step}: step dropped the info keys {lost} that {under}'s step returned")
        if len(inner_steps) == 1:
            try:
                pair = (float(last[1]), float(call.result[1]))
            except (TypeError, ValueError):
                continue
            rewards.setdefault((call.layer, episodes[call.layer]), []).append(pair)
    for (layer, _), pairs in rewards.items():
        delayed = [t for t in range(1, len(pairs)) if pairs[t][1] == pairs[t - 1][0] != pairs[t][0]]
        if len(delayed) >= 2:
            t = delayed[0]
            problems.append(
                f"layer {run.names[layer]} (over {run.names[layer + 1]}), its episode step {t + 1}: reward "
                f"{pairs[t][1]!r} is the reward {run.names[layer + 1]} returned one step earlier, not its "
                f"{pairs[t][0]!r} ({len(delayed)} steps of the episode delayed alike)"
            )
    for layer, at in sorted(truncations.items()):
        name = run.names[layer]
        limit = run.limits.get(layer)
        if limit is not None and at != {limit}:
            problems.append(f"layer {name} truncated episodes at their step(s) {sorted(at)}, not at its limit {limit}")
        elif limit is None and len(at) > 1:
            problems.append(f"layer {name} truncated episodes at different step counts {sorted(at)}")
    return problems, compared
