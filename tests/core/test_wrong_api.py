"""A factory given the wrong ``--api``, or a mistyped name, is bad input with a "did you mean".

Before, an SB3 factory passed as ``--api gymnasium.vector`` (and the reverse) was checked anyway,
with 4-7 failures and 9-14 "not exercised" that said nothing of the real mistake, and a
ready-made vector env (``gymnasium.make_vec``) passed as ``--api gymnasium.Env`` was accepted as
one env. The product is now recognised by its library's base class (``Family.claims``).

Then (issue 34) a ``make(num_envs)`` given as ``--api gymnasium.vector`` ended in a traceback
inside the user's ``__init__``, and an SB3 algorithm factory given as ``--api sb3.VecEnv`` in
SB3's ``ValueError``. Every --api now refuses another's factory the same way, from its signature
and annotations before anything of it runs, from what it returns only where those do not say
(``rlconform.core.user.api_it_fits``): the matrix below gives one sample factory per --api to
every other.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gymnasium")

import gymnasium

from rlconform.core.runner import RunCache
from rlconform.core.search import check_spec
from rlconform.core.spec import get_spec
from rlconform.core.user import BadInput, factory_system, probe, user_apis, user_system


def _sb3_factory(env_fns: list[Any]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    return DummyVecEnv(env_fns)


def _gymnasium_factory(env_fns: list[Any]) -> Any:
    return gymnasium.vector.SyncVectorEnv(env_fns)


def _ready_made_vector_env() -> Any:
    return gymnasium.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync")


def _single_env() -> Any:
    return gymnasium.make("CartPole-v1")


def _refusal(factory: Any, api: str) -> str:
    with pytest.raises(BadInput) as caught:
        probe(factory_system(factory, api))
    return str(caught.value)


@pytest.mark.parametrize(
    ("factory", "api", "fits"),
    [
        (_sb3_factory, "gymnasium.vector", "sb3.VecEnv"),
        (_gymnasium_factory, "sb3.VecEnv", "gymnasium.vector"),
        (_ready_made_vector_env, "gymnasium.Env", "gymnasium.vector"),
    ],
)
def test_a_product_of_another_api_is_refused_naming_it(factory: Any, api: str, fits: str) -> None:
    pytest.importorskip("stable_baselines3")
    message = _refusal(factory, api)
    # a VectorEnv is what both vector APIs check: the one taking env factories and the ready-made one
    assert f"--api {fits}" in message.split(" checks, not ")[0], message
    assert f"not --api {api}" in message and "did you mean" in message, message
    assert "\n" not in message


@pytest.mark.parametrize(("factory", "api"), [(_sb3_factory, "sb3.VecEnv"), (_single_env, "gymnasium.Env")])
def test_the_right_api_is_not_refused(factory: Any, api: str) -> None:
    pytest.importorskip("stable_baselines3")
    probe(factory_system(factory, api))


def test_a_signature_that_fits_another_api_says_which() -> None:
    with pytest.raises(BadInput, match=r"did you mean --api gymnasium.Env\?"):
        factory_system(_single_env, "gymnasium.vector")


def _replay_buffer() -> ReplayBuffer:  # noqa: F821  (an annotation only, never evaluated)
    raise AssertionError("never built: only its signature is read")


def test_a_factory_of_no_arguments_is_told_the_family_its_annotation_names() -> None:
    """An env factory and a replay-buffer factory both take no arguments: the replay-buffer API is
    suggested only where the factory says it returns one (before, every env factory given to the
    wrong --api was also told "or --api torchrl.ReplayBuffer")."""
    with pytest.raises(BadInput, match=r"did you mean --api torchrl.ReplayBuffer\?"):
        factory_system(_replay_buffer, "gymnasium.vector")


def test_a_mistyped_api_module_or_callable_gets_the_closest_names() -> None:
    with pytest.raises(
        BadInput, match=r"unknown API family 'gymnasium.vectr' \(did you mean 'gymnasium.vector'\?\); known"
    ):
        user_system("rlconform.libraries.envauthor.sample_envs:counter", "gymnasium.vectr")
    with pytest.raises(BadInput, match=r"has no attribute 'countr' \(did you mean 'counter'\?\)$"):
        user_system("rlconform.libraries.envauthor.sample_envs:countr", "gymnasium.Env")
    with pytest.raises(
        BadInput,
        match=r"module 'rlconform.libraries.envauthor.sample_env' not found "
        r"\(did you mean 'rlconform.libraries.envauthor.sample_envs'\?\)$",
    ):
        user_system("rlconform.libraries.envauthor.sample_env:counter", "gymnasium.Env")


# ------------------------------------------------- one sample factory per --api, given to every other

#: a user module with one factory per --api, written as users write them: some annotated (strings
#: included, names imported only under TYPE_CHECKING), some not; each body first leaves a marker
#: file, so that a test can tell whether anything of the factory ran
SAMPLES_MODULE = """
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import gymnasium

if TYPE_CHECKING:
    from rsl_rl.env import VecEnv as RslRlVecEnv
    from rsl_rl.runners import OnPolicyRunner
    from skrl.agents.torch import Agent
    from skrl.envs.wrappers.torch import Wrapper as SkrlWrapper
    from stable_baselines3.common.vec_env import VecEnv


def _ran(name):
    (Path(__file__).parent / f"ran-{name}").touch()


def vectorizer(env_fns, **kwargs):
    _ran("vectorizer")
    return gymnasium.vector.SyncVectorEnv(env_fns, **kwargs)


def vec_env(env_fns) -> VecEnv:
    _ran("vec_env")
    from stable_baselines3.common.vec_env import DummyVecEnv

    return DummyVecEnv(env_fns)


def torchrl_env(env_fn):
    _ran("torchrl_env")
    from torchrl.envs import GymWrapper

    return GymWrapper(env_fn())


def make_env():
    _ran("make_env")
    from rlconform.libraries.envauthor.sample_envs import counter

    return counter()


def wrapper(env: gymnasium.Env) -> gymnasium.Env:
    _ran("wrapper")
    return gymnasium.Wrapper(env)


def ready_made(num_envs):
    _ran("ready_made")
    return gymnasium.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode="sync")


def algorithm(env: VecEnv) -> "BaseAlgorithm":
    _ran("algorithm")
    from stable_baselines3 import PPO

    return PPO("MlpPolicy", env, n_steps=8, batch_size=8, device="cpu")


def estimator(value_network):
    _ran("estimator")
    from torchrl.objectives.value import GAE

    return GAE(gamma=0.9, lmbda=0.9, value_network=value_network)


def replay_buffer() -> ReplayBuffer:
    _ran("replay_buffer")
    from torchrl.data import LazyTensorStorage, ReplayBuffer

    return ReplayBuffer(storage=LazyTensorStorage(64))


def torch_batched(num_envs, device):
    _ran("torch_batched")
    from rlconform.libraries.isaaclab.sample_user_envs import walker

    return walker(num_envs, device)


def runner(env: RslRlVecEnv) -> OnPolicyRunner:
    _ran("runner")
    from rlconform.libraries.rsl_rl.runner_planted import ppo

    return ppo(env)


def agent(env: SkrlWrapper) -> Agent:
    _ran("agent")
    from rlconform.libraries.skrl.agent_planted import forked_ppo

    return forked_ppo(env)
"""
SAMPLES = "wrong_api_samples"

#: --api -> (its sample factory, the modules that building the sample needs)
SAMPLE_OF: dict[str, tuple[str, tuple[str, ...]]] = {
    "gymnasium.vector": ("vectorizer", ()),
    "sb3.VecEnv": ("vec_env", ("stable_baselines3",)),
    "torchrl.EnvBase": ("torchrl_env", ("torchrl",)),
    "gymnasium.Env": ("make_env", ()),
    "gymnasium.Wrapper": ("wrapper", ()),
    "gymnasium.VectorEnv": ("ready_made", ()),
    "sb3.Algorithm": ("algorithm", ("stable_baselines3",)),
    "torchrl.ValueEstimator": ("estimator", ("torchrl",)),
    "torchrl.ReplayBuffer": ("replay_buffer", ("torchrl",)),
    # the torch tier checks a duck-typed torch env without Isaac Lab: the sample needs torch only
    # (a factory of Isaac Lab's own classes: test_an_isaac_lab_annotation_names_its_api)
    "isaaclab": ("torch_batched", ("torch",)),
    # RSL-RL's runner imports GitPython: both are in the Isaac Lab environment
    "rsl_rl.Runner": ("runner", ("rsl_rl", "git")),
    "skrl.Agent": ("agent", ("skrl",)),
}
#: (the sample's --api, the --api it is given) where neither its signature nor its annotations
#: tell the two apart, so that it is built, and what it returns decides: an unannotated
#: ``(env_fns, **kwargs)`` is both vectorizers' signature, ``make_env()`` a replay buffer's too
DECIDED_BY_PRODUCT = {("gymnasium.vector", "sb3.VecEnv"), ("gymnasium.Env", "torchrl.ReplayBuffer")}
#: --api -> the other --api its sample is also told, for want of an annotation that says which
ALSO_SUGGESTED = {"gymnasium.vector": {"sb3.VecEnv"}}


@pytest.fixture(scope="module")
def samples_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("wrong_api")
    (folder / f"{SAMPLES}.py").write_text(SAMPLES_MODULE)
    sys.path.insert(0, str(folder))
    try:
        yield folder
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop(SAMPLES, None)


@pytest.fixture
def samples(samples_dir: Path) -> Path:
    """The samples' folder, with no marker left by an earlier test."""
    for marker in samples_dir.glob("ran-*"):
        marker.unlink()
    return samples_dir


def test_every_api_has_a_sample() -> None:
    assert set(SAMPLE_OF) == set(user_apis())


def _suggested(message: str) -> set[str]:
    """The --apis a refusal's "did you mean" names."""
    assert "did you mean " in message, message
    named = message.split("did you mean ", 1)[1].split("?", 1)[0]
    return {part.removeprefix("--api ").strip() for part in named.split(" or ")}


@pytest.mark.parametrize(
    ("own", "asked"),
    [pytest.param(own, asked, id=f"{own}-as-{asked}") for own in SAMPLE_OF for asked in SAMPLE_OF if asked != own],
)
def test_a_factory_of_one_api_given_to_another_is_refused_naming_its_own(samples: Path, own: str, asked: str) -> None:
    name, needs = SAMPLE_OF[own]
    by_product = (own, asked) in DECIDED_BY_PRODUCT
    if by_product:
        # built as the asked family builds its factories: its library, and the sample's
        for module in (*needs, *user_apis()[asked].libraries):
            pytest.importorskip(module.replace("-", "_"))
    with pytest.raises(BadInput) as caught:
        system = user_system(f"{SAMPLES}:{name}", asked)
        assert by_product, f"{own}'s sample passed the signature check of --api {asked}"
        probe(system)
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message and "raised" not in message, message
    assert f"--api {asked}" in message or f"family {asked} expects" in message, message
    assert _suggested(message) - ALSO_SUGGESTED.get(own, set()) == {own}, message
    if not by_product:
        assert not (samples / f"ran-{name}").exists(), f"the factory ran before {own!r} was refused as --api {asked}"


@pytest.mark.parametrize("api", list(SAMPLE_OF))
def test_each_sample_is_accepted_by_its_own_api(samples: Path, api: str) -> None:
    """Past the refusal: the signature check and the probe's build, where the product is read."""
    name, needs = SAMPLE_OF[api]
    for module in needs:
        pytest.importorskip(module)
    system = probe(user_system(f"{SAMPLES}:{name}", api))
    assert system.costly is not None, system
    # built by the probe, except an Isaac Lab env: one simulation per process, never probed
    assert (samples / f"ran-{name}").exists() == (api != "isaaclab")


@pytest.mark.parametrize(
    ("api", "spec_id"),
    [
        ("gymnasium.vector", "transitions.exact"),
        ("gymnasium.VectorEnv", "vector.api_shape"),
        ("gymnasium.Env", "env.api_shape"),
    ],
)
def test_the_cheap_samples_pass_a_check_end_to_end(samples: Path, api: str, spec_id: str) -> None:
    name, _ = SAMPLE_OF[api]
    system = probe(user_system(f"{SAMPLES}:{name}", api))
    verdict = check_spec(system, get_spec(spec_id), "ci", cache=RunCache())
    assert verdict.status == "pass", verdict.message


def test_a_factory_whose_signature_is_everyones_is_accepted_and_judged_by_its_product(samples: Path) -> None:
    """``(*args, **kwargs)``, no annotations: any family can call it, and nothing in it says
    which it is for; it is not refused before it is built."""
    (samples / "anything_goes.py").write_text(
        "import gymnasium\n\ndef make(*args, **kwargs):\n    return gymnasium.vector.SyncVectorEnv(args[0])\n"
    )
    for api in ("gymnasium.vector", "gymnasium.Wrapper", "sb3.Algorithm"):
        user_system("anything_goes:make", api)
    probe(user_system("anything_goes:make", "gymnasium.vector"))


def test_an_isaac_lab_annotation_names_its_api(samples: Path) -> None:
    """A factory annotated with Isaac Lab's own env class fits --api isaaclab whatever its
    parameters are called (the class is read, never built)."""
    pytest.importorskip("isaaclab")
    (samples / "isaac_annotated.py").write_text(
        "from isaaclab.envs import DirectRLEnv\n\n"
        "def make(n, where) -> DirectRLEnv:\n    raise AssertionError('never built')\n"
    )
    with pytest.raises(BadInput) as caught:
        user_system("isaac_annotated:make", "gymnasium.VectorEnv")
    assert _suggested(str(caught.value)) == {"isaaclab"}, caught.value


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "asked", "fits"),
    [
        pytest.param("ready_made", "gymnasium.vector", "gymnasium.VectorEnv", id="num_envs-as-vectorizer"),
        pytest.param("algorithm", "sb3.VecEnv", "sb3.Algorithm", id="algorithm-as-vecenv"),
    ],
)
def test_the_command_line_refuses_a_wrong_api_in_one_line(
    samples: Path, rlconform_cli: Callable[..., subprocess.CompletedProcess[str]], name: str, asked: str, fits: str
) -> None:
    """The two mistakes of issue 34, as a user makes them: exit status 2 (bad input), one line on
    stderr naming the --api that fits, nothing of the factory run."""
    result = rlconform_cli("check", f"{SAMPLES}:{name}", "--api", asked, cwd=samples)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rlconform: error: "), result.stderr
    assert _suggested(lines[0]) == {fits}, lines[0]
    assert not (samples / f"ran-{name}").exists()
