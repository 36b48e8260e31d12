"""The Isaac Lab envs a learner system can be run over, each with the log of its steps (families
``rsl_rl.Runner`` and ``skrl.Agent``, systems with the ``env`` option).

Why here: an Isaac Lab user trains RSL-RL or skrl on a task through Isaac Lab's wrappers. A learner
check reads the learner's storage against the env's log; over an Isaac Lab env that log is
recorded from what the env returns (:class:`~rlconform.envs.torch_stamp.DirectEnvRecorder`), which
is the truth for:

* ``"isaaclab"``: the bundled reference ``DirectRLEnv``
  (:mod:`rlconform.libraries.isaaclab.batch_env`), held to its exact model by the torch tier; its
  terminations follow its own script (the case's ``term_a`` and ``term_b`` aside);
* ``"cartpole-direct"`` and ``"cartpole"``: the real ``Isaac-Cartpole-Direct`` and
  ``Isaac-Cartpole`` tasks on the CPU (:mod:`rlconform.libraries.isaaclab.cartpole`, Newton
  physics), their time limit the case's ``max_episode_length``, seeded with the case's seed; the
  pole and the cart end episodes as the physics has them. Their step/reset contract is the one
  the torch tier checks them against (``tests/isaaclab/test_isaaclab_cartpole.py``).

Nothing here imports torch or Isaac Lab at import time (the learner families' system tables
import it where Isaac Lab is not installed). Each env is built with ``compute_final_obs`` (the recorder reads the terminal rows there). A
Cartpole env holds Isaac Lab's one ``SimulationContext`` of the process: :class:`RecordedEnv`'s
``close`` must run before the next one is built.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlconform.core.system import Capabilities
from rlconform.core.watchdog import stderr_to
from rlconform.envs.learner_family import CAPS

if TYPE_CHECKING:
    from rlconform.envs.learner_run import LearnerCase
    from rlconform.envs.torch_stamp import DirectEnvRecorder

#: the ``env`` option values and what each builds
ENV_KINDS = {
    "isaaclab": "the bundled reference DirectRLEnv",
    "cartpole-direct": "the real Isaac-Cartpole-Direct task (Newton physics, CPU)",
    "cartpole": "the real Isaac-Cartpole task, manager-based (Newton physics, CPU)",
}


#: the real Cartpole tasks a learner system runs over: (system id suffix, ``env`` option, task id)
CARTPOLE_ROUTES = (
    (".Cartpole-Direct", "cartpole-direct", "Isaac-Cartpole-Direct"),
    (".Cartpole", "cartpole", "Isaac-Cartpole"),
)


def capabilities(kind: str) -> Capabilities:
    """What a learner system over the env ``kind`` is driven with: the learner families' sub-env
    counts and time limits, and a note on what the env is."""
    if kind == "isaaclab":
        note = "the bundled reference DirectRLEnv (5 float32 observation columns, 1 action) through Isaac Lab's wrapper"
    else:
        note = (
            f"{ENV_KINDS[kind]}: 4 observations, 1 action; its time limit the case's, its other episode ends the "
            "physics'; built and closed per example"
        )
    return Capabilities(min_envs=CAPS.min_envs, max_envs=CAPS.max_envs, notes=(note,))


@dataclass
class RecordedEnv:
    """An Isaac Lab env (what ``gym.make`` or the reference factory returns) and its step log."""

    env: Any
    recorder: DirectEnvRecorder

    def close(self) -> None:
        """Untap the env and close it (a Cartpole env frees the process's simulation context)."""
        self.recorder.detach()
        self.env.close()


_FROZEN: list[bool] = []


def _freeze_heap_once() -> None:
    """Before the first Cartpole of the process, move every object alive (the libraries imported,
    rlconform's catalog) out of the garbage collector's reach (``gc.freeze``).

    Why: Isaac Lab's ``env.close()`` runs a full ``gc.collect()`` (``SimulationContext.
    clear_instance``), and with torch, Isaac Lab and Warp loaded that took a second per example,
    40% of a Cartpole example. Frozen objects are never collected, not changed: the garbage of each
    example (made after the freeze) is collected as before, and what the env computes is the
    same. The cost is that garbage among the objects alive now is kept (a long-lived process
    keeps its imports anyway)."""
    if not _FROZEN:
        import gc

        gc.freeze()
        _FROZEN.append(True)


@contextlib.contextmanager
def quiet_build() -> Iterator[None]:
    """Isaac Lab prints about a hundred lines per task it builds (its configuration, the managers'
    tables) to stdout, and Newton's warnings to stderr: a check builds one per example, so the
    build's output is dropped. A build that fails still raises, with its own message."""
    import warnings

    with contextlib.redirect_stdout(io.StringIO()), stderr_to(os.devnull), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def recorded_env(kind: str, case: LearnerCase, device: str) -> RecordedEnv:
    """Build the env ``kind`` (:data:`ENV_KINDS`) for ``case``, its steps logged."""
    from rlconform.envs.torch_stamp import DirectEnvRecorder

    if kind == "isaaclab":
        from rlconform.libraries.isaaclab.batch_env import make_batch_stamp_env

        env: Any = make_batch_stamp_env(case.num_envs, device, episode_steps=case.max_episode_length)
    elif kind in ("cartpole-direct", "cartpole"):
        from rlconform.libraries.isaaclab.cartpole import DIRECT_TASK, MANAGER_TASK, make_cartpole

        task = DIRECT_TASK if kind == "cartpole-direct" else MANAGER_TASK
        _freeze_heap_once()
        with quiet_build():
            env = make_cartpole(task, case.num_envs, device, episode_steps=case.max_episode_length, seed=case.seed)
    else:
        raise ValueError(f"unknown learner env {kind!r}: expected one of {sorted(ENV_KINDS)}")
    return RecordedEnv(env, DirectEnvRecorder(env))
