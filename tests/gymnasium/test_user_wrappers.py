"""``--api gymnasium.Wrapper``: a user's own wrapper, driven around one decodable reference env.

Before, a hand-written time limit that sets ``terminated`` instead of ``truncated``, a wrapper
that drops the reset info and one that delays the reward by a step all passed: env-author mode
has nothing to compare their flags, infos and rewards with. Built around a reference env, every
exact single-env spec compares what the wrapper returns with what the env it wraps returned.
A reward moved to another step fails whatever is declared: ``--intended reward`` accepts a
changed reward, not a misaligned one.
"""

from __future__ import annotations

import pytest

from rlconform.core.profiles import get_profile
from rlconform.core.runner import RunCache
from rlconform.core.search import Verdict, check_spec
from rlconform.core.spec import all_specs
from rlconform.core.user import probe, user_system, with_intents
from rlconform.specs.families import GYMNASIUM_ENV

SPECS = [s for s in all_specs() if GYMNASIUM_ENV in s.families]


def _verdicts(name: str, intended: str | None = None) -> dict[str, Verdict]:
    system = probe(user_system(f"rlconform.libraries.gymnasium.sample_wrappers:{name}", "gymnasium.Wrapper"))
    system = with_intents(system, intended)
    cache = RunCache()
    return {spec.id: check_spec(system, spec, get_profile("ci"), cache=cache) for spec in SPECS}


def _failed(verdicts: dict[str, Verdict]) -> dict[str, str]:
    return {k: v.message for k, v in verdicts.items() if v.status not in ("pass", "not_applicable")}


@pytest.mark.parametrize(
    ("name", "intended"),
    [("step_counter", None), ("step_limit", "time_limit"), ("gymnasium_time_limit", "time_limit")],
)
def test_a_correct_wrapper_gets_no_failure(name: str, intended: str | None) -> None:
    verdicts = _verdicts(name, intended)
    assert not _failed(verdicts), _failed(verdicts)
    assert verdicts["transitions.exact"].status == "pass"


def test_gymnasium_time_limit_with_its_own_limit_is_compared_with_its_model() -> None:
    assert _verdicts("gymnasium_time_limit", "time_limit")["model.outputs_match"].status == "pass"


@pytest.mark.parametrize(
    ("name", "intended", "spec_id", "words"),
    [
        ("terminating_limit", None, "flags.terminated", "terminated is True"),
        ("terminating_limit", "time_limit", "flags.terminated", "terminated is True"),
        ("reset_info_dropper", None, "infos.aligned", "the reset info is missing"),
        ("delayed_reward", None, "transitions.exact", "reward is 0.0 but the env returned"),
        # declared, the minimal case needs two shifted rewards in one episode to be caught
        ("delayed_reward", "reward", "transitions.exact", "misaligned with their steps"),
    ],
)
def test_a_buggy_wrapper_fails_naming_what_it_did(name: str, intended: str | None, spec_id: str, words: str) -> None:
    verdict = _verdicts(name, intended)[spec_id]
    assert verdict.status == "fail", verdict.message
    assert words in verdict.message, verdict.message
    if intended == "reward":
        assert "declare --intended" not in verdict.message, verdict.message


def test_an_env_factory_given_as_a_wrapper_is_told_the_api_it_fits() -> None:
    from rlconform.core.user import BadInput

    with pytest.raises(BadInput, match=r"did you mean --api gymnasium.Env\?"):
        user_system("rlconform.libraries.envauthor.sample_envs:counter", "gymnasium.Wrapper")


def test_a_wrappers_reproducer_replays_under_the_api_it_was_checked_with(tmp_path: pytest.TempPathFactory) -> None:
    """The reproducer of a user's wrapper names ``api='gymnasium.Wrapper'``, the ``--api`` it was
    checked under: before, it wrote the family's name (``gymnasium.Env``), which ``replay`` reads as
    an ``--api`` and which then built the wrapper as an env factory."""
    import subprocess
    import sys
    from pathlib import Path

    system = probe(user_system("rlconform.libraries.gymnasium.sample_wrappers:terminating_limit", "gymnasium.Wrapper"))
    verdict = check_spec(system, next(s for s in SPECS if s.id == "flags.terminated"), get_profile("ci"))
    assert verdict.status == "fail" and verdict.reproducer
    assert "api='gymnasium.Wrapper'" in verdict.reproducer
    script = Path(str(tmp_path)) / "repro.py"
    script.write_text(verdict.reproducer)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
