"""Ground truth: the transitions the reference environments really made, read from their logs.

A TimeLimit in the env stack truncates episodes the reference env itself does not end; the
ground truth applies it, so that "truncated" means what the environment stack returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rlconform.envs.calllog import ActionReceipt, LogRecord, RejectedRecord, ResetRecord, StepRecord
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.stamp import Stamp


@dataclass(frozen=True)
class TrueTransition:
    env: int
    episode: int
    obs: Stamp
    action: ActionReceipt
    reward: float
    next_obs: Stamp
    terminated: bool
    truncated: bool
    seq: int

    def describe(self) -> str:
        flags = []
        if self.terminated:
            flags.append("terminated")
        if self.truncated:
            flags.append("truncated")
        end = f", {' and '.join(flags)}" if flags else ""
        return f"{self.obs.short()} -> {self.next_obs.short()} (reward {self.reward!r}{end})"


@dataclass
class TrueEpisode:
    env: int
    episode: int
    seed: int | None
    salt: int
    plan: EpisodePlan
    reset_stamp: Stamp
    reset_seq: int
    transitions: list[TrueTransition] = field(default_factory=list)
    #: "terminated", "truncated", "both" or None while still running / when superseded by a reset
    ended: str | None = None

    @property
    def terminal(self) -> Stamp | None:
        return self.transitions[-1].next_obs if self.ended and self.transitions else None


@dataclass
class EnvTruth:
    env: int
    resets: list[ResetRecord] = field(default_factory=list)
    episodes: list[TrueEpisode] = field(default_factory=list)
    transitions: list[TrueTransition] = field(default_factory=list)
    #: steps received after the episode had ended (by the env itself or by its TimeLimit)
    steps_after_end: list[StepRecord] = field(default_factory=list)
    rejected: list[RejectedRecord] = field(default_factory=list)
    #: reset records that discarded a running episode (reset while it had not ended)
    discarding_resets: list[tuple[ResetRecord, TrueEpisode]] = field(default_factory=list)
    records: list[LogRecord] = field(default_factory=list)

    def episode(self, number: int) -> TrueEpisode | None:
        for ep in self.episodes:
            if ep.episode == number:
                return ep
        return None


@dataclass
class GroundTruth:
    envs: list[EnvTruth]

    def episode_of(self, stamp: Stamp) -> TrueEpisode | None:
        if not 0 <= stamp.env < len(self.envs):
            return None
        return self.envs[stamp.env].episode(stamp.episode)


def build_truth(script: EnvScript, logs: list[list[LogRecord]]) -> GroundTruth:
    """Fold each env's log into episodes and real transitions."""
    envs: list[EnvTruth] = []
    limit = script.max_episode_steps
    for index, records in enumerate(logs):
        truth = EnvTruth(env=index, records=list(records))
        current: TrueEpisode | None = None
        last_stamp: Stamp | None = None
        for record in records:
            if isinstance(record, RejectedRecord):
                truth.rejected.append(record)
            elif isinstance(record, ResetRecord):
                truth.resets.append(record)
                if current is not None and current.ended is None:
                    truth.discarding_resets.append((record, current))
                current = TrueEpisode(
                    env=index,
                    episode=record.episode,
                    seed=record.seed,
                    salt=record.salt,
                    plan=record.plan,
                    reset_stamp=record.stamp,
                    reset_seq=record.seq,
                )
                truth.episodes.append(current)
                last_stamp = record.stamp
            else:
                if current is None or last_stamp is None:
                    truth.steps_after_end.append(record)
                    continue
                if current.ended is not None or record.after_end:
                    truth.steps_after_end.append(record)
                    last_stamp = record.stamp
                    continue
                truncated = record.truncated or (limit is not None and record.step_after >= limit)
                transition = TrueTransition(
                    env=index,
                    episode=record.episode,
                    obs=last_stamp,
                    action=record.action,
                    reward=record.reward,
                    next_obs=record.stamp,
                    terminated=record.terminated,
                    truncated=truncated,
                    seq=record.seq,
                )
                current.transitions.append(transition)
                truth.transitions.append(transition)
                if record.terminated or truncated:
                    current.ended = (
                        "both"
                        if record.terminated and truncated
                        else ("terminated" if record.terminated else "truncated")
                    )
                last_stamp = record.stamp
        envs.append(truth)
    return GroundTruth(envs)
