"""Specs that apply only to some stacks are decided from what the probe read off the built stack.

A spec with ``applies_to_stack`` (a reset step, episode statistics, a running normalizer) asks it
of each run's semantics; when the probe read the same stack semantics off every build of a user's
factory, the answer is known before any example, so the plugin collects no item and the CLI runs
no search for a spec that cannot apply. These tests pin the rule's parts: the reading, the
agreement across the probe's builds, and that the predicates read nothing but the stack keys.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from rlconform.core.spec import all_specs, get_spec
from rlconform.core.system import STACK_KEYS, System, stack_reading
from rlconform.core.user import factory_system, probe
from rlconform.envs.factory_probe import Acceptance, Trial
from rlconform.envs.script import EnvScript

gymnasium = pytest.importorskip("gymnasium")

STACK_SPECS = [spec for spec in all_specs() if spec.applies_to_stack is not None]


class OnlyStackKeys(dict[str, Any]):
    """Semantics that fail any read of a key outside STACK_KEYS."""

    def get(self, key: str, default: Any = None) -> Any:
        assert key in STACK_KEYS, f"a stack predicate read {key!r}, which is not in STACK_KEYS"
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        assert key in STACK_KEYS, f"a stack predicate read {key!r}, which is not in STACK_KEYS"
        return super().__getitem__(key)


def test_stack_specs_are_those_of_reset_steps_statistics_and_normalizers() -> None:
    assert sorted(spec.id for spec in STACK_SPECS) == [
        "reset_step.neutral",
        "statistics.episode",
        "statistics.normalizer",
    ]


@pytest.mark.parametrize("spec", STACK_SPECS, ids=lambda s: s.id)
@pytest.mark.parametrize(
    "reading",
    [
        {"autoreset_mode": "NextStep", "episode_statistics": "episode", "normalizers": ("NormalizeReward",)},
        {"autoreset_mode": "SameStep", "episode_statistics": None, "normalizers": ()},
        {},
    ],
)
def test_stack_predicates_read_only_the_stack_keys(spec: Any, reading: dict[str, Any]) -> None:
    assert spec.applies_to_stack is not None
    spec.applies_to_stack(OnlyStackKeys(reading))


def test_each_stack_spec_applies_to_some_stack_and_not_to_another() -> None:
    applies = {"autoreset_mode": "NextStep", "episode_statistics": "episode", "normalizers": ("VecNormalize",)}
    cannot = {"autoreset_mode": "SameStep", "episode_statistics": None, "normalizers": ()}
    for spec in STACK_SPECS:
        assert spec.applies_to_stack is not None
        assert spec.applies_to_stack(applies) is None, spec.id
        assert spec.applies_to_stack(cannot), spec.id


def test_reading_keeps_plain_values_and_refuses_anything_else() -> None:
    semantics = {
        "autoreset_mode": "SameStep",
        "episode_statistics": None,
        "normalizers": ["VecNormalize"],
        "num_envs": 3,
    }
    assert stack_reading(semantics) == (
        ("autoreset_mode", "SameStep"),
        ("episode_statistics", None),
        ("normalizers", ("VecNormalize",)),
        ("sub_env_workers", None),
    )
    assert stack_reading({**semantics, "autoreset_mode": object()}) is None
    assert stack_reading({**semantics, "normalizers": [object()]}) is None


def _trial(obs: str, stack: Any, outcome: Any = "ok") -> Trial:
    from rlconform.envs.spaces import BoxObs, DiscreteObs

    script = EnvScript(obs=BoxObs() if obs == "box" else DiscreteObs())
    return Trial(script, outcome, stack=stack)


def _acceptance(*trials: Trial) -> Acceptance:
    return Acceptance(trials, frozenset({"box"}), frozenset({"discrete"}), False)


SAME = (("autoreset_mode", "SameStep"), ("episode_statistics", None), ("normalizers", ()))
WITH_STATISTICS = (("autoreset_mode", "SameStep"), ("episode_statistics", "episode"), ("normalizers", ()))


def test_builds_that_agree_give_the_reading_and_a_refused_build_does_not_count() -> None:
    assert _acceptance(_trial("box", SAME), _trial("discrete", SAME)).stack_semantics == SAME
    refused = _trial("discrete", None, outcome="refused")
    assert _acceptance(_trial("box", SAME), refused).stack_semantics == SAME


def test_builds_that_disagree_or_read_nothing_decide_nothing() -> None:
    assert _acceptance(_trial("box", SAME), _trial("discrete", WITH_STATISTICS)).stack_semantics is None
    assert _acceptance(_trial("box", SAME), _trial("discrete", None)).stack_semantics is None
    assert _acceptance().stack_semantics is None


def test_not_applicable_reason_reads_the_probed_stack_only_when_there_is_one() -> None:
    system = System("user:x", "gymnasium.vector", "x", lambda fns: None, "x", kind="user")
    spec = get_spec("statistics.episode")
    assert spec.not_applicable_reason(system) is None
    probed = dataclasses.replace(system, stack_semantics=SAME)
    assert spec.not_applicable_reason(probed) == "the system keeps no episode statistics"
    assert (
        get_spec("statistics.episode").not_applicable_reason(
            dataclasses.replace(system, stack_semantics=WITH_STATISTICS)
        )
        is None
    )


def same_step(env_fns: Sequence[Callable[[], Any]]) -> Any:
    return gymnasium.vector.SyncVectorEnv(list(env_fns), autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP)


def normalized_next_step(env_fns: Sequence[Callable[[], Any]]) -> Any:
    envs = gymnasium.vector.SyncVectorEnv(list(env_fns))
    return gymnasium.wrappers.vector.RecordEpisodeStatistics(gymnasium.wrappers.vector.NormalizeReward(envs))


def test_probe_reads_the_stack_of_a_real_factory() -> None:
    assert dict(probe(factory_system(same_step, "gymnasium.vector")).stack_semantics or ()) == {
        "autoreset_mode": "SameStep",
        "episode_statistics": None,
        "normalizers": (),
        "sub_env_workers": None,
    }
    assert dict(probe(factory_system(normalized_next_step, "gymnasium.vector")).stack_semantics or ()) == {
        "autoreset_mode": "NextStep",
        "episode_statistics": "episode",
        "normalizers": ("NormalizeReward",),
        "sub_env_workers": None,
    }


def test_a_spec_decided_before_the_examples_gets_the_verdict_the_examples_give() -> None:
    """The same verdict, reason included, whether decided from the probe or by running examples."""
    from rlconform.core.search import check_spec

    probed = probe(factory_system(same_step, "gymnasium.vector"))
    unprobed = dataclasses.replace(probed, stack_semantics=None)
    for spec in STACK_SPECS:
        before = check_spec(probed, spec, "fast")
        after = check_spec(unprobed, spec, "fast")
        assert (
            (before.status, before.message)
            == (after.status, after.message)
            == (
                "not_applicable",
                spec.not_applicable_reason(probed),
            )
        )
