"""What the installed Gymnasium release documents for its vector API.

The compatibility matrix runs the same specs against every Gymnasium release from 0.29.1 on; a
verdict must mean the same thing on each. The releases differ in what they offer and in how a
transition is read back, so the adapters, the reference models and the system registry ask this
module instead of assuming the newest release:

* 0.29: vector envs reset a sub-env in the step that ends it (same-step; no way to choose). The
  true last observation is ``infos["final_observation"][i]`` (mask ``_final_observation``) and its
  info ``infos["final_info"][i]``; info values that are dicts are batched into object arrays, not
  recursively. No ``reset_mask``, no ``gymnasium.wrappers.vector``; its single-env autoreset wrapper
  is the same-step ``AutoResetWrapper``.
* 1.0: next-step autoreset only (the step after an end is a reset step); nested info dicts are
  batched recursively; ``gymnasium.wrappers.vector`` and the next-step ``Autoreset`` wrapper exist.
* 1.1 and later: ``autoreset_mode`` (``AutoresetMode``: NextStep, SameStep, Disabled) chosen at
  construction and declared in ``metadata["autoreset_mode"]``; same-step puts ``final_obs`` and
  ``final_info`` in ``infos``; ``reset(options={"reset_mask": mask})`` resets some sub-envs.

The release is read from the installed distribution's metadata (without importing Gymnasium), so
that the registry can say which systems a release has before anything is built.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
from dataclasses import dataclass

from rlconform.libraries.gymnasium.options import MODES

ALL_MODES = MODES


def parse_version(text: str) -> tuple[int, ...]:
    """(major, minor, patch) of a release string; pre-release tags are ignored."""
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


@dataclass(frozen=True)
class GymRelease:
    """The vector semantics one Gymnasium release documents."""

    #: the installed version string; None when Gymnasium is not installed
    version: str | None

    @property
    def key(self) -> tuple[int, ...]:
        return parse_version(self.version) if self.version else (0,)

    @property
    def modes(self) -> tuple[str, ...]:
        """The autoreset modes a vector env of this release can be built with."""
        if self.key >= (1, 1):
            return ALL_MODES
        return ("NextStep",) if self.key >= (1, 0) else ("SameStep",)

    @property
    def has_autoreset_mode(self) -> bool:
        """``AutoresetMode``, the ``autoreset_mode`` argument and ``metadata["autoreset_mode"]``."""
        return self.key >= (1, 1)

    @property
    def reset_mask(self) -> bool:
        """``reset(options={"reset_mask": mask})`` resets only the masked sub-envs."""
        return self.key >= (1, 1)

    @property
    def final_obs_key(self) -> str:
        return "final_obs" if self.key >= (1, 0) else "final_observation"

    @property
    def nested_infos(self) -> bool:
        """Dict-valued info entries are batched key by key (1.0+), not into object arrays."""
        return self.key >= (1, 0)

    @property
    def vector_wrappers(self) -> bool:
        """``gymnasium.wrappers.vector`` (RecordEpisodeStatistics, NormalizeReward, ...)."""
        return self.key >= (1, 0)

    @property
    def next_step_autoreset_wrapper(self) -> bool:
        """``gymnasium.wrappers.Autoreset`` with next-step semantics (0.29's is same-step)."""
        return self.key >= (1, 0)

    def implied_mode(self) -> str | None:
        """The mode every vector env of a release without ``AutoresetMode`` has."""
        return None if self.has_autoreset_mode else self.modes[0]

    def mode_unavailable(self, mode: str) -> str | None:
        """Why a vector env in ``mode`` cannot be built on this release; None if it can."""
        if self.version is None or mode in self.modes:
            return None
        return f"gymnasium {self.version} has no {mode} autoreset mode (its vector envs are {self.modes[0]} only)"

    def label(self) -> str:
        return f"gymnasium {self.version}" if self.version else "gymnasium (not installed)"


@functools.cache
def installed() -> GymRelease:
    """The Gymnasium release this process imports (the first on sys.path, as ``import`` finds)."""
    try:
        return GymRelease(importlib.metadata.version("gymnasium"))
    except importlib.metadata.PackageNotFoundError:
        return GymRelease(None)


def unavailable_unless(condition: bool, what: str) -> str | None:
    """A reason naming the installed release when ``condition`` does not hold."""
    return None if condition else f"{installed().label()} has no {what}"
