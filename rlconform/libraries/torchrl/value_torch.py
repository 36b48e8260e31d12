"""The torch side of the ``torchrl.ValueEstimator`` family: the fixed value network, the harness
that feeds collector batches to an estimator and reads back what it computed, and the small
estimators of rlconform's own (a correct one, innocent variants and planted bugs).

Imported by :mod:`rlconform.libraries.torchrl.value_family` only when a system is built
(torch at module level, as :mod:`rlconform.libraries.torchrl.policies`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModule
from torchrl.objectives.value import ValueEstimatorBase

from rlconform.core.system import EnvFn
from rlconform.libraries.torchrl.frames import NUM_ACTIONS, read_frames, serial_or_single
from rlconform.libraries.torchrl.policies import make_policy
from rlconform.libraries.torchrl.value_reference import VALUE_WEIGHTS, BatchReading, Declared, Leak, close

#: added to the rewards, and to the observations, of the frames a perturbation changes: far
#: beyond the tolerance, exact in float32
REWARD_SHIFT = 100.0
OBS_SHIFT = 1000.0


class LinearValue(torch.nn.Module):
    """V(obs) = sum_k VALUE_WEIGHTS[k] * obs[..., k], as value_reference.true_value computes it."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("w", torch.tensor(VALUE_WEIGHTS, dtype=torch.float32))

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        w: torch.Tensor = self.get_buffer("w").to(observation.dtype)
        return (observation[..., : len(VALUE_WEIGHTS)] * w).sum(-1, keepdim=True)


def make_value_network() -> TensorDictModule:
    """The value network every estimator is built with: "observation" -> "state_value"."""
    return TensorDictModule(LinearValue(), in_keys=["observation"], out_keys=["state_value"])


def _scalar(value: Any) -> float | None:
    if value is None:
        return None
    try:
        return float(torch.as_tensor(value).reshape(-1)[0])
    except (TypeError, ValueError, RuntimeError, IndexError):
        return None


def declared(estimator: Any) -> Declared:
    """What the estimator declares of its computation: its discount and trace decay (TD(0) is
    lambda 0, TD(1) and VTrace on-policy lambda 1) and TorchRL's documented switches."""
    names = {cls.__name__ for cls in type(estimator).__mro__}
    lmbda = _scalar(getattr(estimator, "lmbda", None))
    if lmbda is None:
        lmbda = 0.0 if "TD0Estimator" in names else 1.0 if names & {"TD1Estimator", "VTrace"} else None
    budget = getattr(estimator, "shifted_budget", 1)
    return Declared(
        gamma=_scalar(getattr(estimator, "gamma", None)),
        lmbda=lmbda,
        shifted=bool(getattr(estimator, "shifted", False)),
        shifted_budget=int(budget) if isinstance(budget, int) else 1,
        auto_reset_env=bool(getattr(estimator, "auto_reset_env", False)),
        average_gae=bool(getattr(estimator, "average_gae", False)),
        average_rewards=bool(getattr(estimator, "average_rewards", False)),
        library_class=next(
            (cls.__name__ for cls in type(estimator).__mro__ if cls.__module__.startswith("torchrl.objectives.value")),
            None,
        ),
        library_own=type(estimator).__module__.startswith("torchrl."),
        vectorized=getattr(estimator, "vectorized", True) is not False,  # None: TorchRL decides (vectorized)
        undriven=_undriven(estimator),
    )


def _undriven(estimator: Any) -> str | None:
    """Why :func:`behaviour_log_prob` cannot give the estimator what it reads: an actor network
    without ``get_dist`` (TorchRL's ProbabilisticActor has it)."""
    actor = getattr(estimator, "actor_network", None)
    if actor is None or hasattr(actor, "get_dist"):
        return None
    return (
        f"its actor_network ({type(actor).__name__}) has no get_dist: rlconform cannot write the behaviour "
        "log-probabilities the estimator reads, so its targets are not compared"
    )


def behaviour_log_prob(estimator: Any, data: Any) -> None:
    """For an off-policy-corrected estimator (one with an ``actor_network``, e.g. VTrace): write the
    behaviour policy's log-probability of each logged action, as the estimator's own actor gives it
    (``get_dist(data).log_prob(action)``), under the estimator's ``sample_log_prob`` key. The batch
    is then on-policy: every importance ratio is 1 (so V-trace's clipped rho and c are 1) and the
    targets are the lambda = 1 returns. Nothing is written for an estimator without an actor."""
    actor = getattr(estimator, "actor_network", None)
    keys = getattr(estimator, "tensor_keys", None)
    key = getattr(keys, "sample_log_prob", None)
    if actor is None or key is None or not hasattr(actor, "get_dist"):
        return
    action = data.get("action")
    dist = actor.get_dist(data.clone())
    if action.ndim > data.ndim and action.shape[-1] > 1:
        action = action.float().argmax(-1)  # one-hot (GymWrapper's Discrete): the category
    data.set(key, dist.log_prob(action).reshape(data.shape).detach())


def make_actor() -> Any:
    """An actor for VTrace: a Categorical over the case's actions from a linear map of the
    observation (its weights do not matter: the batch's behaviour log-probabilities are its own)."""
    from torch.distributions import Categorical
    from torchrl.modules import ProbabilisticActor

    logits = TensorDictModule(torch.nn.LazyLinear(NUM_ACTIONS), in_keys=["observation"], out_keys=["logits"])
    return ProbabilisticActor(
        logits, in_keys=["logits"], out_keys=["action"], distribution_class=Categorical, return_log_prob=True
    )


#: (value network) -> estimator: what a system of this family builds
EstimatorFactory = Callable[[TensorDictModule], Any]


@dataclass
class EstimatorHarness:
    """Collector batches in, the estimator's targets out."""

    env_fns: Sequence[EnvFn]
    factory: EstimatorFactory
    estimator: Any = None
    collector: Any = None
    batches: Iterator[Any] | None = field(default=None, repr=False)

    def construct(self, case: Any) -> Declared:
        """Build the estimator around the value network, then the collector; what it declares."""
        from torchrl.collectors import Collector

        self.estimator = self.factory(make_value_network())
        policy, _ = make_policy("plain", NUM_ACTIONS)
        frames = case.steps * case.num_envs
        env = functools.partial(serial_or_single, list(self.env_fns))
        self.collector = Collector(env, policy, frames_per_batch=frames, total_frames=frames * case.batches)
        self.batches = iter(self.collector)
        return declared(self.estimator)

    def next_batch(self, case: Any) -> BatchReading | None:
        assert self.batches is not None
        batch = next(self.batches, None)
        if batch is None:
            return None
        n, steps = case.num_envs, batch.shape[-1]
        reading = BatchReading(shape=(n, steps), frames=read_frames(batch, case.script))
        with torch.no_grad():
            found = self._targets(batch, n, steps)
            if isinstance(found, str):
                reading.missing = found
                return reading
            reading.advantage, reading.value_target, reading.valid = found
            reading.cross_episode = self._cross_episode(batch, reading)
            reading.cross_env = self._cross_env(batch, reading)
        return reading

    def _targets(
        self, batch: Any, n: int, steps: int
    ) -> tuple[list[list[float]], list[list[float]], list[list[bool]] | None] | str:
        data = batch.clone()
        behaviour_log_prob(self.estimator, data)
        out = self.estimator(data)
        out = out if isinstance(out, TensorDictBase) else data
        rows: list[list[list[float]]] = []
        for key in ("advantage", "value_target"):
            value = out.get(key, None)
            if value is None:
                return f"the estimator wrote no {key!r} entry"
            if value.numel() != n * steps:
                return f"its {key!r} entry has shape {tuple(value.shape)} for a batch of shape {tuple(batch.shape)}"
            rows.append(value.detach().to(torch.float64).reshape(n, steps).tolist())
        valid = out.get("shifted_valid", None)
        mask = None if valid is None or valid.numel() != n * steps else valid.reshape(n, steps).bool().tolist()
        return rows[0], rows[1], mask

    def _perturbed(self, batch: Any, n: int, steps: int, mask: torch.Tensor) -> Any:
        """The batch with the rewards and observations of the frames in ``mask`` ([n, T]) moved."""
        data = batch.clone().reshape(n, steps)
        for key, shift in (
            (("next", "reward"), REWARD_SHIFT),
            ("observation", OBS_SHIFT),
            (("next", "observation"), OBS_SHIFT),
        ):
            value = data.get(key)
            where = mask.reshape(n, steps, *([1] * (value.ndim - 2))).expand_as(value)
            data.set(key, torch.where(where, value + shift, value))
        return data.reshape(batch.shape)

    def _changes(
        self, reading: BatchReading, batch: Any, mask: torch.Tensor, keep: Callable[[int, int], bool]
    ) -> list[Leak]:
        n, steps = reading.shape
        found = self._targets(self._perturbed(batch, n, steps, mask), n, steps)
        if isinstance(found, str):
            return []
        assert reading.advantage is not None and reading.value_target is not None
        leaks = []
        for key, before_rows, after_rows in (
            ("advantage", reading.advantage, found[0]),
            ("value_target", reading.value_target, found[1]),
        ):
            for i in range(n):
                for t in range(steps):
                    if reading.valid is not None and not reading.valid[i][t]:
                        continue
                    if keep(i, t) and not close(after_rows[i][t], before_rows[i][t]):
                        leaks.append(Leak(i, t, key, before_rows[i][t], after_rows[i][t]))
        return leaks

    def _cross_episode(self, batch: Any, reading: BatchReading) -> list[tuple[int, int, list[Leak]]]:
        """Per sub-env whose row has an episode end before its last frame: the frames up to that
        end whose targets changed when the frames after it changed."""
        n, steps = reading.shape
        found = []
        for i in range(n):
            ends = [
                t
                for t in range(steps - 1)
                if reading.frames[i * steps + t].terminated or reading.frames[i * steps + t].truncated
            ]
            if not ends:
                continue
            end = ends[0]
            mask = torch.zeros(n, steps, dtype=torch.bool)
            mask[i, end + 1 :] = True
            leaks = self._changes(reading, batch, mask, functools.partial(_up_to, i, end))
            found.append((i, end, leaks))
        return found

    def _cross_env(self, batch: Any, reading: BatchReading) -> list[tuple[int, int, list[Leak]]]:
        """Per sub-env j (where there are several): the other sub-envs' frames whose targets
        changed when sub-env j's rewards and observations changed."""
        n, steps = reading.shape
        found = []
        for j in range(n if n > 1 else 0):
            mask = torch.zeros(n, steps, dtype=torch.bool)
            mask[j] = True
            found.append((j, -1, self._changes(reading, batch, mask, functools.partial(_other_than, j))))
        return found

    def shutdown(self) -> None:
        if self.collector is not None:
            collector, self.collector = self.collector, None
            collector.shutdown()


def _up_to(i: int, end: int, row: int, t: int) -> bool:
    """Frame (row, t) is sub-env i's, at or before its episode end at ``end``."""
    return row == i and t <= end


def _other_than(j: int, row: int, t: int) -> bool:
    """Frame (row, t) is not sub-env j's."""
    return row != j


# ----------------------------------------------------------- rlconform's own estimators


class PlainGAE(ValueEstimatorBase):
    """GAE written out as a loop over each sub-env's frames (time is the last batch dimension).

    ``defect`` plants one bug: "bootstraps_terminations" (the terminal observation's value is
    added at a termination), "ignores_done" (the trace runs on across episode ends),
    "mixes_sub_envs" (the [envs, time] batch flattened into one sequence),
    "lambda_without_gamma" (the trace decays by lambda, not gamma*lambda), "done_as_terminated"
    (a time-out is not bootstrapped), "value_at_truncation" (a time-out bootstrapped from V(s_t),
    declared as GAE(auto_reset_env=True) declares it). ``dtype`` float64 is an innocent variant.
    ``average_gae`` standardizes the advantages over the whole batch and says so, as
    ``GAE(average_gae=True)`` does (mean and ``std().clamp_min(1e-4)``)."""

    def __init__(
        self,
        *,
        gamma: float,
        lmbda: float,
        value_network: TensorDictModule,
        defect: str = "",
        dtype: torch.dtype = torch.float32,
        average_gae: bool = False,
    ) -> None:
        super().__init__(value_network=value_network)
        self.register_buffer("gamma", torch.tensor(gamma))
        self.register_buffer("lmbda", torch.tensor(lmbda))
        self.defect, self.dtype, self.average_gae = defect, dtype, average_gae
        #: "value_at_truncation" uses TorchRL's documented approximation and says so, as
        #: GAE(auto_reset_env=True) does: its targets follow the approximation's formula exactly
        self.auto_reset_env = defect == "value_at_truncation"

    def forward(self, tensordict: TensorDictBase, **kwargs: Any) -> TensorDictBase:
        value_target, advantage = self._compute(tensordict)
        tensordict.set(self.tensor_keys.advantage, advantage)
        tensordict.set(self.tensor_keys.value_target, value_target)
        return tensordict

    def value_estimate(self, tensordict: TensorDictBase, **kwargs: Any) -> torch.Tensor:
        return self._compute(tensordict)[0]

    def _compute(self, td: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
        net = self.value_network
        shape = td.get(("next", "reward")).shape
        steps = td.shape[-1]
        value = net(td.select(*net.in_keys).clone()).get("state_value").to(self.dtype).reshape(-1, steps)
        after = net(td.get("next").select(*net.in_keys).clone()).get("state_value").to(self.dtype).reshape(-1, steps)
        reward = td.get(("next", "reward")).to(self.dtype).reshape(-1, steps)
        done = td.get(("next", "done")).reshape(-1, steps)
        terminated = td.get(("next", "terminated")).reshape(-1, steps)
        if self.defect == "mixes_sub_envs":
            value, after, reward, done, terminated = (
                x.reshape(1, -1) for x in (value, after, reward, done, terminated)
            )
        if self.defect == "bootstraps_terminations":
            terminated = torch.zeros_like(terminated)
        elif self.defect == "done_as_terminated":
            terminated = done
        gamma, lmbda = float(self.gamma), float(self.lmbda)
        decay = lmbda if self.defect == "lambda_without_gamma" else gamma * lmbda
        advantage = torch.zeros_like(value)
        following = torch.zeros_like(value[:, 0])
        for t in range(value.shape[1] - 1, -1, -1):
            cut = torch.zeros_like(done[:, t]) if self.defect == "ignores_done" else done[:, t]
            if t == value.shape[1] - 1:
                cut = torch.ones_like(cut)
            bootstrap = after[:, t]
            if self.defect == "value_at_truncation":
                # V(s_t) where a time-out ended the episode, not V(final observation)
                bootstrap = torch.where(done[:, t] & ~terminated[:, t], value[:, t], bootstrap)
            delta = reward[:, t] + gamma * (~terminated[:, t]).to(self.dtype) * bootstrap - value[:, t]
            following = delta + decay * (~cut).to(self.dtype) * following
            advantage[:, t] = following
        target = advantage + value
        if self.average_gae:
            advantage = (advantage - advantage.mean()) / advantage.std().clamp_min(1e-4)
        return target.reshape(shape), advantage.reshape(shape)


class FunctionalGAE(torch.nn.Module):
    """TorchRL's functional GAE (``torchrl.objectives.value.functional``) called the way its docs
    show: V of the batch's observations and next observations from the value network, the
    ``("next", ...)`` reward, done and terminated, time along the batch's last dimension.
    ``vectorized`` picks ``vec_generalized_advantage_estimate`` over
    ``generalized_advantage_estimate``; ``pass_terminated=False`` leaves ``terminated`` out, which
    the functional API then takes to be ``done`` (its documented default): a time-out is then not
    bootstrapped."""

    def __init__(
        self,
        *,
        gamma: float,
        lmbda: float,
        value_network: TensorDictModule,
        vectorized: bool = True,
        pass_terminated: bool = True,
    ) -> None:
        super().__init__()
        self.gamma, self.lmbda, self.vectorized, self.pass_terminated = gamma, lmbda, vectorized, pass_terminated
        self.value_network = value_network

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        from torchrl.objectives.value.functional import (
            generalized_advantage_estimate,
            vec_generalized_advantage_estimate,
        )

        with torch.no_grad():
            value = self.value_network(tensordict.select("observation").clone())["state_value"]
            next_value = self.value_network(tensordict.get("next").select("observation").clone())["state_value"]
        next_td = tensordict.get("next")
        terminated = next_td.get("terminated") if self.pass_terminated else None
        estimate = vec_generalized_advantage_estimate if self.vectorized else generalized_advantage_estimate
        advantage, value_target = estimate(
            self.gamma, self.lmbda, value, next_value, next_td.get("reward"), next_td.get("done"), terminated
        )
        tensordict.set("advantage", advantage)
        tensordict.set("value_target", value_target)
        return tensordict
