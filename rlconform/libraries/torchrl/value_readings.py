"""Reading a ``torchrl.ValueEstimator`` run back (:func:`readings`): the estimator's declared
parameters, each batch's targets, and the true episode rows of a batch from the envs' own logs
(:func:`true_rows`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rlconform.envs.stamp import Stamp
from rlconform.envs.trace import CallRecord
from rlconform.libraries.torchrl.value_case import ROLE
from rlconform.libraries.torchrl.value_reference import (
    BatchReading,
    Declared,
    RefStep,
    true_value,
)

if TYPE_CHECKING:
    from rlconform.envs.driver import Run


@dataclass
class Readings:
    declared: Declared | None = None
    refused: CallRecord | None = None
    batches: list[BatchReading] = field(default_factory=list)
    #: a batch the estimator could not compute
    failed: CallRecord | None = None


def readings(run: Run) -> Readings:
    found = Readings()
    for record in run.calls:
        role = record.extra.get(ROLE)
        if role == "construct":
            if record.failed:
                found.refused = record
            else:
                found.declared = record.result_live
        elif role == "batch":
            if record.failed:
                found.failed = record
            elif record.result_live is not None:
                found.batches.append(record.result_live)
    return found


def true_rows(run: Run, reading: BatchReading) -> list[list[RefStep]] | str:
    """The batch's rows, each frame matched to the transition its env logged (a reason where a
    frame is none: collector.transitions is the spec about that)."""
    assert run.truth is not None
    codec = run.case.script.obs
    index = {t.obs: t for env in run.truth.envs for t in env.transitions}
    n, steps = reading.shape
    rows = []
    for i in range(n):
        row = []
        for t in range(steps):
            frame = reading.frames[i * steps + t]
            truth = index.get(frame.obs) if isinstance(frame.obs, Stamp) else None
            if truth is None:
                return f"sub-env {i} step {t} of the collector's batch is no transition its env made (see collector.transitions)"
            row.append(
                RefStep(
                    truth.obs,
                    truth.next_obs,
                    truth.reward,
                    truth.terminated,
                    truth.truncated,
                    true_value(codec, truth.obs),
                    true_value(codec, truth.next_obs),
                )
            )
        rows.append(row)
    return rows
