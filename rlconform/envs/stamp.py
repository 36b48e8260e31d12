"""The identity every reference observation carries: which sub-env, episode and step made it.

Reference environments write a :class:`Stamp` into every observation they return, so that any
observation a library hands back can be traced to the exact call that produced it. Violation
messages are phrased in stamps ("episode 3 step 0") rather than in raw arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

#: the info key under which a reference env also returns its stamp (read without Gymnasium by
#: the specs, so it is kept here rather than with the Gymnasium env)
STAMP_INFO_KEY = "rlconform_stamp"

#: Exclusive upper bounds of the stamp fields; the codecs are sized from these.
MAX_ENVS = 64
MAX_EPISODES = 4096
MAX_STEPS = 4096
MAX_SALT = 256
CHECKSUM_MOD = 97


@dataclass(frozen=True, order=True)
class Stamp:
    """Where an observation came from.

    ``episode`` counts from 1 over the lifetime of one env instance (0 is never produced, so a
    zero-filled buffer never decodes as a real observation); ``step`` is 0 for the observation
    returned by ``reset``; ``salt`` is derived from the seed and makes seeded content visible.
    """

    env: int
    episode: int
    step: int
    salt: int

    def __post_init__(self) -> None:
        if not 0 <= self.env < MAX_ENVS:
            raise ValueError(f"env index {self.env} outside [0, {MAX_ENVS})")
        if not 1 <= self.episode < MAX_EPISODES:
            raise ValueError(f"episode {self.episode} outside [1, {MAX_EPISODES})")
        if not 0 <= self.step < MAX_STEPS:
            raise ValueError(f"step {self.step} outside [0, {MAX_STEPS})")
        if not 0 <= self.salt < MAX_SALT:
            raise ValueError(f"salt {self.salt} outside [0, {MAX_SALT})")

    @property
    def checksum(self) -> int:
        """A small check value so that arbitrary numbers rarely decode as a stamp."""
        return (self.env * 3 + self.episode * 5 + self.step * 7 + self.salt * 11 + 1) % CHECKSUM_MOD

    def describe(self) -> str:
        """Human wording used in violation messages."""
        where = f"env {self.env} episode {self.episode} step {self.step}"
        return where + (" (a reset observation)" if self.step == 0 else "")

    def short(self) -> str:
        return f"episode {self.episode} step {self.step}"


def checksum_of(env: int, episode: int, step: int, salt: int) -> int:
    """Checksum for raw field values, without validating them first."""
    return (env * 3 + episode * 5 + step * 7 + salt * 11 + 1) % CHECKSUM_MOD
