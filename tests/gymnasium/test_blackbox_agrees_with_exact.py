"""Black-box checking agrees with exact checking (issue 26, the meta-test).

Every vectorizer of family ``gymnasium.vector`` (Gymnasium's SyncVectorEnv and AsyncVectorEnv in
each autoreset mode and configuration, the vector wrappers, the reference models) and every
planted bug of that family is built over the decodable reference envs with the family's own
builder (``System.build(env_fns)``) and handed to family ``gymnasium.VectorEnv`` as a ready-made
vector env, ``make(num_envs)``, through the same public API a user's factory takes
(``rlconform.core.user.factory_system`` and ``probe``, what ``parametrize_with_checks`` and the CLI
use). Its black-box verdicts are compared with the exact ones: the matrix baseline of the
installed Gymnasium release for the bundled systems, ``MUST_FAIL`` for the planted bugs (both
pinned elsewhere), all passes for the reference models.

Each defect exact checking finds (a FINDINGS.md row, read off the family's own ``findings``
table, or a planted bug) is either visible to black-box checking, with the ``vector.*`` specs
that must show it (:data:`VISIBLE`, :data:`PLANTED_VISIBLE`), or not, with the reason
(:data:`INVISIBLE`, :data:`PLANTED_INVISIBLE`, listed in docs/families.md). For every system,
black-box FAILs exactly the specs its defects map to: a correct
vectorizer gets no black-box FAIL, and a visible defect is never missed.

Every sub-env is the reference env with index 0, so that sub-env i is the single env
(:func:`single_env`) reset with ``seed + i`` and ``--single-env`` applies; the script's episodes
end in every way (terminated, truncated, both, by the TimeLimit) and the built env declares that
time limit in ``env.spec``, as ``gymnasium.make_vec`` does.
"""

from __future__ import annotations

import fnmatch
import functools
import gzip
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

gymnasium = pytest.importorskip("gymnasium")

from rlconform.core.catalog import current  # noqa: E402
from rlconform.core.family import layer_chain  # noqa: E402
from rlconform.core.runner import RunCache  # noqa: E402
from rlconform.core.search import check_spec  # noqa: E402
from rlconform.core.spec import all_specs, get_spec  # noqa: E402
from rlconform.core.system import get_system  # noqa: E402
from rlconform.core.user import factory_system, probe  # noqa: E402
from rlconform.envs.reference_env import REGISTERED_ID, make_reference_env  # noqa: E402
from rlconform.envs.script import EnvScript, EpisodePlan  # noqa: E402
from rlconform.libraries.gymnasium.vector_family import FAMILY as EXACT_FAMILY  # noqa: E402
from rlconform.specs.families import GYMNASIUM_VECTOR, NATIVE_VECTOR  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
API = "gymnasium.VectorEnv"
SPECS = [s for s in all_specs() if NATIVE_VECTOR in s.families]
#: every way an episode ends; the last one only by the TimeLimit
SCRIPT = EnvScript(
    episodes=(
        EpisodePlan(3),
        EpisodePlan(2, "truncated"),
        EpisodePlan(1, "both"),
        EpisodePlan(4),
        EpisodePlan(6, "never"),
    ),
    max_episode_steps=5,
)
#: the black-box profile: derandomized, 20 examples for a user's (out-of-process) factory
PROFILE = "ci"

# ------------------------------------------------------------------------------ the defects

#: FINDINGS rows black-box checking sees, and the vector.* specs that must show them
VISIBLE: dict[str, frozenset[str]] = {
    # copy=False: the returned observation batch is overwritten by the next call
    "G7": frozenset({"vector.no_aliasing"}),
    # shm Text leaf stale: seen with --single-env (the single env returns the real strings);
    # the reference envs have no Text space, so it is checked over envauthor's mission env
    "G9": frozenset({"vector.single_env_match"}),
}
#: FINDINGS rows black-box checking cannot see, and why (docs/families.md lists them)
INVISIBLE: dict[str, str] = {
    "G1": "it never reads the options dict again after a masked reset: that reset leaves the caller's options alone is not checked",
    "G2": "it sends only well-formed batches, never one of the wrong size",
    "G3": "it follows a wrong-size batch, which black-box checking never sends",
    "G4": "it resets each env once, right after building it (and in DISABLED mode only the sub-envs that ended): no manual reset() follows an episode end in NEXT_STEP mode",
    "G5": "no vector.* spec reads infos['episode']: episode statistics are not checked",
    "G6": "the rewards before normalization are unknown to it: the normalizer's statistics cannot be recomputed",
    "G8": "the rewards before normalization are unknown to it: the normalizer's statistics cannot be recomputed",
}
#: planted bugs of family gymnasium.vector black-box checking sees, and the specs that show them
PLANTED_VISIBLE: dict[str, frozenset[str]] = {
    "double_step": frozenset({"vector.single_env_match"}),
    # final_obs where no flag says an episode ended; a truncated episode runs on past the limit
    "drops_truncation": frozenset({"vector.autoreset_mode", "vector.time_limit", "vector.single_env_match"}),
    "float64_observations": frozenset({"vector.observations_in_space"}),
    "leaks_worker": frozenset({"vector.api_shape"}),
    # NEXT_STEP behaviour declared SAME_STEP: no final_obs, and the reset steps count as steps; read
    # as SAME_STEP, a sub-env's next episode does not start where the single env's does
    "mislabelled_mode": frozenset({"vector.autoreset_mode", "vector.time_limit", "vector.single_env_match"}),
    "no_info_masks": frozenset({"vector.autoreset_mode"}),
    "raises_on_valid_action": frozenset({"vector.api_shape"}),
    # the other sub-envs' episodes are cut without an end flag: they run on past the limit
    "reset_all_on_end": frozenset({"vector.time_limit", "vector.single_env_match"}),
    "reuses_buffer": frozenset({"vector.no_aliasing"}),
    "reversed_infos": frozenset({"vector.autoreset_mode", "vector.single_env_match"}),
    "rewarding_reset_step": frozenset({"vector.autoreset_mode"}),
    # sub-envs seeded alike: seen without the single env (which then has no seed to replay)
    "same_seed_everywhere": frozenset({"vector.seeding"}),
    # its second seeded reset is unseeded: reset again with two seeds after the same history, the
    # batch is the same
    "seeds_only_once": frozenset({"vector.seeding"}),
    # a later episode's first observation is stale: the single env continues across episodes
    "stale_first_obs": frozenset({"vector.single_env_match"}),
    "shifted_reward": frozenset({"vector.single_env_match"}),
    "truncation_hides_termination": frozenset({"vector.single_env_match"}),
    "wrong_final_obs": frozenset({"vector.single_env_match"}),
}
#: planted bugs black-box checking cannot see, and why (docs/families.md lists them)
PLANTED_INVISIBLE: dict[str, str] = {
    "pops_options": INVISIBLE["G1"],
    "steps_before_validating": INVISIBLE["G2"],
    "truncates_batch": INVISIBLE["G2"],
    "forgets_truncated_reset": "a sub-env stepped past its end keeps reporting the end, which reads as a run of one-step episodes; only the env's call log shows the step after the end",
    "list_actions": "it sees the env's outputs only, not what each sub-env receives",
    "float32_rewards": "vector.api_shape accepts any float reward dtype (natively vectorized envs return float32); float64 is Gymnasium's vectorizers' own promise",
    "extra_info_key": "an extra info key is allowed by the API; only a reference model of the exact outputs notices it",
    "counts_reset_steps": INVISIBLE["G5"],
    "normalizes_reset_steps": INVISIBLE["G6"],
}
#: the layers that change values by design: checked without --single-env
VALUE_CHANGERS = ("NormalizeReward", "NormalizeObservation", "normalizes_reset_steps")

# ----------------------------------------------------------------------------- the factories


def single_env() -> Any:
    """The single env sub-env i equals when reset with ``seed + i`` (``--single-env``)."""
    return make_reference_env(SCRIPT, 0)


SINGLE_ENV = f"{__name__}:single_env"


def factory(system_id: str) -> Callable[[int], Any]:
    """``make(num_envs)``: the exact family's system ``system_id`` built over ``num_envs`` reference
    envs, declaring the script's time limit as ``gymnasium.make_vec`` would."""
    system = get_system(system_id)

    def make(num_envs: int) -> Any:
        env = system.build([functools.partial(make_reference_env, SCRIPT, 0) for _ in range(num_envs)])
        layer_chain(env, "env")[-1].spec = gymnasium.envs.registration.EnvSpec(
            REGISTERED_ID, max_episode_steps=SCRIPT.max_episode_steps
        )
        return env

    return make


def blackbox(make: Callable[[int], Any], name: str, **options: str) -> dict[str, str]:
    """The black-box verdicts of every vector.* spec on the factory ``make``."""
    system = probe(factory_system(make, API, f"{__name__}:{name}", **options))
    cache = RunCache()
    return {spec.id: check_spec(system, spec, PROFILE, cache=cache).status for spec in SPECS}


def blackbox_of(system_id: str) -> dict[str, str]:
    changes_values = any(name in system_id for name in VALUE_CHANGERS)
    return blackbox(factory(system_id), system_id, **({} if changes_values else {"single_env": SINGLE_ENV}))


# -------------------------------------------------------------------------- the exact verdicts


@functools.cache
def baseline() -> dict[str, dict[str, str]]:
    """system -> spec -> status: the matrix baseline of the installed Gymnasium release."""
    path = ROOT / "matrix" / "baseline" / f"gymnasium-{gymnasium.__version__}.json.gz"
    if not path.exists():
        pytest.skip(f"no matrix baseline for Gymnasium {gymnasium.__version__} ({path.name})")
    results: dict[str, dict[str, str]] = {}
    with gzip.open(path, "rt") as stream:
        for row in json.load(stream)["results"]:
            results.setdefault(row["system"], {})[row["spec"]] = row["status"]
    return results


def bundled() -> list[str]:
    """The exact family's vectorizers: the library systems and the reference models."""
    return sorted(
        s.id for s in current().systems() if s.family == GYMNASIUM_VECTOR and s.kind in ("library", "reference")
    )


def planted() -> list[str]:
    return sorted(s.id for s in current().systems() if s.family == GYMNASIUM_VECTOR and s.kind == "planted")


def findings_row(system_id: str, spec_id: str) -> str | None:
    """The FINDINGS row of an exact FAIL, from the exact family's own table."""
    for (pattern, spec), row in EXACT_FAMILY.findings.items():
        if spec == spec_id and fnmatch.fnmatchcase(system_id, pattern):
            return row
    return None


def exact_defects(system_id: str) -> set[str]:
    """The defects exact checking finds on ``system_id``: FINDINGS rows, or the planted bug."""
    if system_id.startswith("planted."):
        assert current().must_fail()[system_id], f"{system_id}: exact checking finds nothing"
        return {system_id.removeprefix("planted.")}
    if system_id.startswith("reference."):
        return set()  # the controls: every spec passes on them (tests/specs/test_specs.py)
    fails = [spec for spec, status in baseline()[system_id].items() if status == "fail"]
    rows = {spec: findings_row(system_id, spec) for spec in fails}
    unknown = [spec for spec, row in rows.items() if row is None]
    assert not unknown, f"{system_id}: exact FAILs with no FINDINGS row: {unknown}"
    return {row for row in rows.values() if row is not None}


def expected_failures(system_id: str) -> dict[str, str]:
    """vector spec -> why black-box must FAIL it on ``system_id``."""
    expected: dict[str, str] = {}
    for defect in exact_defects(system_id):
        for spec in VISIBLE.get(defect, PLANTED_VISIBLE.get(defect, frozenset())):
            expected[spec] = defect
    return expected


def assert_agreement(system_id: str, verdicts: dict[str, str]) -> None:
    expected = expected_failures(system_id)
    wrong = {}
    for spec, status in verdicts.items():
        if spec in expected and status != "fail":
            wrong[spec] = f"{status}, expected fail ({expected[spec]})"
        elif spec not in expected and status not in ("pass", "not_applicable"):
            wrong[spec] = f"{status}, expected pass or not applicable"
    assert not wrong, f"{system_id}: black-box disagrees with exact checking: {wrong}"


# ------------------------------------------------------------------------------------ the tests


def test_every_defect_exact_checking_finds_is_classified() -> None:
    """Every exact FAIL of a bundled vectorizer is a FINDINGS row, and every row and planted bug is
    either visible (with the specs that show it) or invisible (with the reason), never both."""
    for system_id in bundled():
        for defect in exact_defects(system_id):
            assert (defect in VISIBLE) != (defect in INVISIBLE), defect
    assert not set(VISIBLE) & set(INVISIBLE)
    names = {s.removeprefix("planted.") for s in planted()}
    assert set(PLANTED_VISIBLE) | set(PLANTED_INVISIBLE) == names
    assert not set(PLANTED_VISIBLE) & set(PLANTED_INVISIBLE)
    spec_ids = {s.id for s in SPECS}
    for specs in [*VISIBLE.values(), *PLANTED_VISIBLE.values()]:
        assert specs <= spec_ids
    # the rows the exact matrix run finds are classified here, the rest come from FINDINGS.md
    assert {"G1", "G2", "G4", "G5", "G6", "G7"} <= {d for s in bundled() for d in exact_defects(s)}


def test_the_docs_list_what_blackbox_cannot_see() -> None:
    """docs/families.md names every FINDINGS row and planted bug black-box checking cannot see."""
    text = (ROOT / "docs" / "families.md").read_text()
    section = text.split("## Ready-made vector envs", 1)[1].split("\n## ", 1)[0]
    for name in [*INVISIBLE, *PLANTED_INVISIBLE]:
        assert re.search(rf"^- .*\b{name}\b", section, re.MULTILINE), f"{name} is not listed"
    assert "test_blackbox_agrees_with_exact.py" in section


#: a few in-process systems for the inner loop: correct (SameStep, whose final observation the
#: single env's terminal one must match), G7, and planted bugs seen by four different specs
FAST = (
    "gymnasium.SyncVectorEnv.SameStep",
    "gymnasium.SyncVectorEnv.NextStep.nocopy",
    "planted.wrong_final_obs",
    "planted.mislabelled_mode",
    "planted.float64_observations",
    "gymnasium.NormalizeReward.SyncVectorEnv.NextStep",
)


@pytest.mark.parametrize("system_id", FAST)
def test_blackbox_agrees_on_some_in_process_vectorizers(system_id: str) -> None:
    assert_agreement(system_id, blackbox_of(system_id))


@pytest.mark.slow
@pytest.mark.exhaustive  # every vectorizer and planted bug: CI runs FAST's (tests/README.md)
@pytest.mark.parametrize("system_id", [s for s in bundled() + planted() if s not in FAST])
def test_blackbox_agrees_with_exact_checking(system_id: str) -> None:
    system = get_system(system_id)
    if system.skip_reason():
        pytest.skip(system.skip_reason() or "")
    assert_agreement(system_id, blackbox_of(system_id))


def _mission_vectorizer(system_id: str) -> Callable[[int], Any]:
    from rlconform.libraries.envauthor import sample_envs

    system = get_system(system_id)
    return lambda num_envs: system.build([sample_envs.mission] * num_envs)


@pytest.mark.parametrize(
    ("system_id", "stale"),
    [
        ("gymnasium.SyncVectorEnv.NextStep", False),
        pytest.param("gymnasium.AsyncVectorEnv.NextStep", True, marks=pytest.mark.slow),
        # the innocent control SyncVectorEnv already is, in worker processes: the exhaustive tier
        pytest.param(
            "gymnasium.AsyncVectorEnv.SameStep.noshm", False, marks=[pytest.mark.slow, pytest.mark.exhaustive]
        ),
    ],
)
def test_g9_the_stale_text_leaf_is_seen_with_the_single_env(system_id: str, stale: bool) -> None:
    """G9 over a Dict observation with a Text leaf (envauthor's mission env): AsyncVectorEnv with
    shared memory returns the zero-filled strings read once in __init__, which only the single env
    shows; SyncVectorEnv and shared_memory=False return the env's strings and pass."""
    verdicts = blackbox(
        _mission_vectorizer(system_id),
        f"mission.{system_id}",
        single_env="rlconform.libraries.envauthor.sample_envs:mission",
    )
    failed = {spec for spec, status in verdicts.items() if status == "fail"}
    assert failed == (VISIBLE["G9"] if stale else set()), verdicts
    assert set(verdicts.values()) <= {"pass", "fail", "not_applicable"}, verdicts


def test_a_shared_reward_normalizer_is_no_dependence_between_sub_envs() -> None:
    """Gymnasium's vector NormalizeReward rescales every sub-env's reward by one running scale, so
    sub-env 0's rewards change with what the others earned; its transitions do not. The meta-test
    found ``vector.subenv_independence`` failing it (and the reference models of it): the spec now
    compares rewards up to a positive factor and says so, and a planted coupling of observations
    (``shared_noise``) still fails."""
    system = probe(factory_system(factory("gymnasium.NormalizeReward.SyncVectorEnv.NextStep"), API, f"{__name__}:nr"))
    verdict = check_spec(system, get_spec("vector.subenv_independence"), PROFILE)
    assert verdict.status == "pass", verdict.message
    assert "compared up to that factor" in verdict.message, verdict.message
