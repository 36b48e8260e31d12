"""A user's own running normalizer, recognised by the statistics it exposes, not by its class.

``statistics.normalizer`` counts the samples a running normalizer took in: one per real transition
for return statistics, one per returned observation for observation statistics. SB3's
``VecNormalize`` and Gymnasium's ``NormalizeObservation``/``NormalizeReward`` are read by class.
A user's own wrapper declares itself a normalizer the way those do: it exposes its running
statistics as an object with ``mean``, ``var`` and ``count`` under one of the attribute names the
libraries use (``obs_rms`` for observations; ``ret_rms`` or ``return_rms`` for returns), most often
SB3's or Gymnasium's ``RunningMeanStd`` itself. Such a layer is then checked as the library's
is; the count it started from is read when the stack is built (a user's ``RunningMeanStd`` need not
start at the libraries' ``epsilon``). A wrapper that keeps its statistics in attributes of other
names cannot be read, and the spec says the stack has no normalizer it can read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlconform.specs.statistics import NORMALIZER_BASE_COUNTS, NORMALIZER_LAYER, user_layer

#: (statistics key, attribute names a layer may expose them under), in the libraries' spellings
STATISTICS_ATTRIBUTES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("obs_rms", ("obs_rms",)),
    ("return_rms", ("ret_rms", "return_rms")),
)
#: where a reward normalizer may keep each sub-env's discounted return (SB3: ``returns``;
#: Gymnasium's vector NormalizeReward: ``accumulated_reward``)
RETURNS_ATTRIBUTES = ("returns", "accumulated_reward", "discounted_reward")


@dataclass(frozen=True)
class OwnNormalizer:
    """A user's layer that exposes running statistics (:data:`STATISTICS_ATTRIBUTES`)."""

    layer: Any
    #: statistics key -> the attribute it is read from
    attributes: Mapping[str, str]

    @property
    def entry(self) -> str:
        """Its ``normalizers`` entry in the stack semantics."""
        names = ", ".join(self.attributes.values())
        return f"{type(self.layer).__name__} (your normalizer: {names})"

    def statistics(self) -> dict[str, tuple[Any, Any, float]]:
        """(mean, var, count) of each statistic, copied now."""
        found: dict[str, tuple[Any, Any, float]] = {}
        for key, attribute in self.attributes.items():
            rms = _running_statistics(getattr(self.layer, attribute, None))
            if rms is not None:
                mean = np.array(rms.mean, copy=True)
                var = np.array(rms.var, copy=True)
                if key == "return_rms" and mean.size == 1:
                    found[key] = (float(mean.reshape(-1)[0]), float(var.reshape(-1)[0]), float(rms.count))
                else:
                    found[key] = (mean, var, float(rms.count))
        return found

    def base_counts(self) -> dict[str, float]:
        """The count of each statistic when the stack was built."""
        return {key: stats[2] for key, stats in self.statistics().items()}

    def observe(self, extra: dict[str, Any], num_envs: int) -> None:
        """Put the statistics, and a reward normalizer's per-sub-env discounted returns, into a
        call record's ``extra`` (the keys ``statistics.normalizer`` reads)."""
        extra.update(self.statistics())
        if "return_rms" not in self.attributes:
            return
        for attribute in RETURNS_ATTRIBUTES:
            returns = getattr(self.layer, attribute, None)
            if isinstance(returns, np.ndarray) and returns.shape == (num_envs,):
                extra["accumulated_reward"] = np.array(returns, copy=True)
                return


def _running_statistics(value: Any) -> Any | None:
    """``value`` if it has the shape of running statistics (``mean``, ``var``, a numeric ``count``);
    for a dict of them (one per observation key), the first key's."""
    if isinstance(value, Mapping):
        value = value[sorted(value)[0]] if value else None
    if value is None or not all(hasattr(value, name) for name in ("mean", "var", "count")):
        return None
    try:
        float(value.count)
    except (TypeError, ValueError):
        return None
    return value


def find_own_normalizer(chain: Sequence[Any]) -> OwnNormalizer | None:
    """The outermost of the user's own layers (``statistics.user_layer``) in ``chain`` (a stack's
    layers from the outside in) that exposes running statistics; None when there is none."""
    for layer in chain:
        if not user_layer(layer):
            continue
        attributes = {}
        for key, names in STATISTICS_ATTRIBUTES:
            name = next((n for n in names if _running_statistics(getattr(layer, n, None)) is not None), None)
            if name is not None:
                attributes[key] = name
        if attributes:
            return OwnNormalizer(layer, attributes)
    return None


def own_normalizer_semantics(own: OwnNormalizer | None, gamma_attribute: str = "gamma") -> dict[str, Any]:
    """What a family's ``describe_semantics`` adds for a user's own normalizer: its entry, its
    discount (when it exposes ``gamma``) and the counts its statistics started from."""
    if own is None:
        return {}
    gamma = getattr(own.layer, gamma_attribute, None)
    return {
        "normalizers": [own.entry],
        "normalizer_gamma": float(gamma) if isinstance(gamma, (int, float)) else None,
        NORMALIZER_BASE_COUNTS: own.base_counts(),
        NORMALIZER_LAYER: f"your {type(own.layer).__name__}",
    }
