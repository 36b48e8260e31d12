"""What a check of a learner over rlconform's torch env reads: the case, the learner's storage as it
stood before its first gradient step, and the run record (families ``rsl_rl.Runner`` and
``skrl.Agent``; the specs are :mod:`rlconform.specs.learner`).

Why shared: RSL-RL and skrl store a rollout differently (RSL-RL's ``RolloutStorage`` keeps dones
and folds its time-out bootstrap into the rewards, skrl's memory keeps terminated and truncated
apart), but what they must hold is the same: each row the sub-env's step, the returns GAE over
each sub-env's episodes. Each family reads its learner into :class:`StorageFacts`; the specs read
only that and the env's log.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import CodeType
from typing import Any, Literal

from rlconform.core.refusals import library_refusal
from rlconform.envs.whole_run import WholeRunRecord

#: how a learner bootstraps a time-out: from V(s_t) of the step's own observation (RSL-RL), from
#: V(terminal observation) (the exact target), or not at all
Bootstrap = Literal["value_of_step", "terminal", "none"]


class Collected(Exception):
    """Raised by a storage reader before the learner's first gradient step: the rollout is read,
    training stops."""


@dataclass(frozen=True)
class LearnerCase:
    """What one example draws: the env's size, time limit, termination pattern and seed (which
    also seeds the learner's networks and its action noise)."""

    num_envs: int
    max_episode_length: int
    term_a: int = 7
    term_b: int = 3
    seed: int = 0

    def script(self) -> Any:
        from rlconform.envs.torch_stamp import StampScript

        return StampScript(self.num_envs, self.max_episode_length, self.term_a, self.term_b, self.seed)


@dataclass
class StorageFacts:
    """A learner's storage before its update (``[steps, num_envs]`` float64 tensors unless said)."""

    class_name: str
    algorithm: str
    gamma: float
    lam: float
    #: how the learner documents its time-out bootstrap, and where (None: exactly, or not at all
    #: without saying so)
    bootstrap: Bootstrap
    documented: str | None
    observations: Any  # [steps, num_envs, obs_dim] float32
    actions: Any  # [steps, num_envs, num_actions] float32
    rewards: Any
    #: the ends the learner stored: terminated or truncated (bool)
    dones: Any
    values: Any
    returns: Any
    advantages: Any
    #: V(terminal observation) per logged step ``[steps, num_envs]``; V(observation after the
    #: rollout's last step) ``[num_envs]``
    v_reached: Any
    v_last: Any
    #: the flags stored apart, where the learner keeps them apart (skrl): bool ``[steps, num_envs]``
    terminated: Any = None
    truncated: Any = None
    #: the env's rewards as the learner's declared reward shaper makes them (skrl's
    #: ``rewards_shaper``), ``[steps, num_envs]`` float64; None: stored as the env gave them
    shaped_rewards: Any = None


@dataclass
class LearnerRun(WholeRunRecord):
    """The outcome of one :class:`LearnerCase`."""

    case: LearnerCase
    family: str
    build_error: str | None = None
    learn_error: str | None = None
    read_error: str | None = None
    storage: StorageFacts | None = None
    #: the env's log (rlconform.envs.torch_stamp.StepLog)
    log: Any = None
    #: the system the case ran on
    system: Any = field(default=None)
    #: the bundled system the learner is built like (its library's own algorithm class), which a
    #: user's failure may be inherited from (rlconform.core.inherited); whether it is made of the
    #: library's own classes only (no subclass, layer or fork of the user's)
    library_system: str | None = None
    library_only: bool = False

    @property
    def usable(self) -> bool:
        return self.build_error is None


@contextlib.contextmanager
def seeded_case(seed: int) -> Iterator[None]:
    """Inside, torch's, NumPy's and Python's global generators start from ``seed``; on leaving they
    are put back as they were.

    Why: a learner's initial weights and its action noise come from torch's generator, and an
    Isaac Lab env built inside seeds all three (``cfg.seed``): seeded from the case, a replay sees
    the same run, and the caller's random state is left as it was."""
    import numpy as np
    import torch

    saved = (torch.get_rng_state(), np.random.get_state(), random.getstate())
    torch.manual_seed(seed)
    np.random.seed(seed % 2**32)
    random.seed(seed)
    try:
        yield
    finally:
        torch.set_rng_state(saved[0])
        np.random.set_state(saved[1])
        random.setstate(saved[2])


def learner_refusal(
    exc: BaseException, entry: CodeType, packages: tuple[str, ...], run: LearnerRun, *, stored: bool
) -> str | None:
    """Why the learner's loop (called by ``entry``) raising ``exc`` is its library refusing
    rlconform's env (one line: the library's words and where it said them), or None: a failure of
    the system.

    The learner families' rule: :mod:`rlconform.core.refusals`' where and what (every frame below
    ``entry`` the library's code on the library's objects, the innermost statement a ``raise`` or
    an ``assert``), and their when: nothing the user wrote had used the env yet, the learner being
    made of the library's classes only (``run.library_only``) or having ``stored`` no step. No
    gradient step can have been taken: the families read the storage, and stop, before the first."""
    said = library_refusal(exc, entry, packages)
    return said if said is not None and (run.library_only or not stored) else None
