"""What a cross-family spec knows of a family comes from the family's contract, never its name.

A spec that branches on a family name must be edited for every new family; a fact of the contract
(:class:`rlconform.envs.driver.Contract`) is stated once, by the family, in its own library. These
tests keep it so: no module under ``rlconform/specs/`` (but the list of names, ``families.py``)
compares a family with a name or uses a single family's name outside a ``families=`` group, the
groups agree with the facts, and each fact is what the family's outputs are.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import Any

import pytest

from rlconform.core.family import family_names, get_family
from rlconform.core.runner import execute
from rlconform.core.spec import get_spec
from rlconform.core.system import get_system
from rlconform.envs.decode import decode
from rlconform.envs.driver import Contract, Run
from rlconform.envs.plan import Case, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.stamp import Stamp
from rlconform.specs import families

SPECS_DIR = Path(families.__file__).parent
#: each single family's constant in families.py, by name
FAMILY_CONSTANTS = {name: value for name, value in vars(families).items() if name.isupper() and isinstance(value, str)}
FAMILY_NAMES = frozenset(FAMILY_CONSTANTS.values())


# ------------------------------------------------------------------ no spec branches on a name
def family_branches(source: str, filename: str = "<planted>") -> list[str]:
    """Where ``source`` compares a family with a name, looks a value up by family, or uses a single
    family's name anywhere but in a spec's ``families=`` group (what it applies to)."""
    tree = ast.parse(source, filename)
    allowed: set[int] = set()  # nodes inside a families= keyword
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "families":
            allowed.update(id(sub) for sub in ast.walk(node.value))
    found = []
    for node in ast.walk(tree):
        where = f"{filename}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Compare) and any(
            isinstance(operand, ast.Attribute) and operand.attr == "family"
            for operand in (node.left, *node.comparators)
        ):
            found.append(f"{where}: compares a family ({ast.unparse(node)})")
        elif isinstance(node, ast.Subscript) and any(
            isinstance(sub, ast.Attribute) and sub.attr == "family" for sub in ast.walk(node.slice)
        ):
            found.append(f"{where}: looks a value up by family ({ast.unparse(node)})")
        elif isinstance(node, ast.Name) and node.id in FAMILY_CONSTANTS and id(node) not in allowed:
            found.append(f"{where}: uses the family name {node.id} outside a families= group")
        elif isinstance(node, ast.Constant) and node.value in FAMILY_NAMES and id(node) not in allowed:
            found.append(f"{where}: writes the family name {node.value!r} as a literal")
    return found


def _spec_modules() -> list[Path]:
    return sorted(p for p in SPECS_DIR.glob("*.py") if p.name != "families.py")


@pytest.mark.parametrize("path", _spec_modules(), ids=lambda p: p.name)
def test_no_spec_module_branches_on_a_family_name(path: Path) -> None:
    assert family_branches(path.read_text(), path.name) == []


def test_the_scan_sees_the_spec_modules() -> None:
    names = {p.name for p in _spec_modules()}
    assert {"dtypes.py", "transitions.py", "api.py", "aliasing.py"} <= names


@pytest.mark.parametrize(
    "planted",
    [
        'if system.family == "isaaclab.rsl_rl":\n    pass\n',
        "from rlconform.specs.families import TORCHRL_ENVBASE\nif run.system.family == TORCHRL_ENVBASE:\n    pass\n",
        "applies = lambda system: REASON if system.family in {ISAACLAB_RSL_RL} else None\n",
        "if ISAACLAB_DIRECT != run.system.family:\n    pass\n",
        "reason = {ISAACLAB_DIRECT: 'torch'}.get(system.family)\n",
        "reason = REASONS[run.system.family]\n",
        "x = frozenset({'sb3.VecEnv'})\n",
    ],
)
def test_the_scan_finds_a_planted_branch(planted: str) -> None:
    assert family_branches(planted)


def test_the_scan_lets_a_families_group_name_a_family() -> None:
    source = (
        "from rlconform.specs.families import TORCHRL_ENVBASE, VECTOR_FAMILIES\n"
        "@spec('x', families=VECTOR_FAMILIES | {TORCHRL_ENVBASE}, applies=lambda s: contract_of(s).no_terminal_obs)\n"
        "def x(run):\n    return run.system.family\n"
    )
    assert family_branches(source) == []


# ------------------------------------------------------------------ the groups agree with the facts
def _contract(name: str) -> Contract | None:
    contract = getattr(get_family(name), "contract", None)
    return contract if isinstance(contract, Contract) else None


def test_every_name_is_a_family_of_the_catalog_and_has_one_constant() -> None:
    assert set(family_names()) == FAMILY_NAMES
    assert len(FAMILY_CONSTANTS) == len(FAMILY_NAMES), "a family has two constant names"


def test_every_family_a_cross_family_spec_reads_has_a_contract() -> None:
    assert all(_contract(name) is not None for name in families.TRANSITION_FAMILIES)


def test_the_tuple_families_are_the_numpy_families() -> None:
    numpy = {n for n in family_names() if (c := _contract(n)) is not None and c.array_namespace == "numpy"}
    assert numpy == families.TUPLE_FAMILIES
    vector = {n for n in numpy if (c := _contract(n)) is not None and c.vectorized}
    assert vector == families.VECTOR_FAMILIES


@pytest.mark.parametrize(
    ("family", "namespace", "dtypes"),
    [
        (families.GYMNASIUM_ENV, "numpy", "documented"),
        (families.GYMNASIUM_VECTOR, "numpy", "documented"),
        (families.SB3_VECENV, "numpy", "documented"),
        (families.TORCHRL_ENVBASE, "torch", "declared"),
        (families.TORCHRL_COLLECTOR, "torch", "declared"),
        (families.TORCHRL_REPLAY, "torch", "declared"),
        (families.ISAACLAB_DIRECT, "torch", "documented"),
        (families.ISAACLAB_RSL_RL, "torch", "documented"),
    ],
)
def test_each_family_states_its_facts(family: str, namespace: str, dtypes: str) -> None:
    contract = _contract(family)
    assert contract is not None
    assert (contract.array_namespace, contract.dtypes) == (namespace, dtypes)
    # only RSL-RL's data lacks terminal observations; only Isaac Lab's torch outputs are checked
    # by the family's own check instead of dtype.rewards_flags
    assert contract.has_terminal_obs == (family != families.ISAACLAB_RSL_RL)
    assert (contract.dtypes_checked_by is not None) == (family in {families.ISAACLAB_DIRECT, families.ISAACLAB_RSL_RL})


# ------------------------------------------------------------------ the facts are what the outputs are
SCRIPT = EnvScript(
    episodes=(EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated"), EpisodePlan(4, "never")),
    env_stride=1,
    max_episode_steps=3,
)
#: one system of each family driven call by call, with the sub-envs it is run with
DRIVEN = [
    ("reference.gymnasium.Env", 1),
    ("reference.gymnasium.vector.SameStep", 2),
    ("reference.sb3.VecEnv", 2),
    ("torchrl.SerialEnv.GymWrapper", 2),
    ("isaaclab.DirectRLEnv", 2),
    ("isaaclab.RslRlVecEnvWrapper", 2),
]


def _run(system_id: str, num_envs: int) -> Run:
    if system_id.startswith("isaaclab.") and importlib.util.find_spec("isaaclab") is None:
        pytest.skip("isaaclab not installed")
    steps = tuple(Step(tuple((t + j) % 2 for j in range(num_envs))) for t in range(8))
    run = execute(get_system(system_id), Case(SCRIPT, num_envs, (Reset(seed=3), *steps)), with_model=False)
    assert isinstance(run, Run) and run.usable, run.build_error
    return run


def _namespace_of(value: Any) -> str:
    root = type(value).__module__.split(".")[0]
    return {"builtins": "numpy", "numpy": "numpy", "torch": "torch", "tensordict": "torch"}.get(root, root)


@pytest.mark.parametrize(("system_id", "num_envs"), DRIVEN, ids=[s for s, _ in DRIVEN])
def test_the_facts_are_what_the_outputs_are(system_id: str, num_envs: int) -> None:
    run = _run(system_id, num_envs)
    contract = _contract(run.system.family)
    assert contract is not None
    steps = [call for call in run.calls if not call.failed and call.view is not None and call.view.kind == "step"]
    assert steps
    for call in steps:
        assert _namespace_of(call.result_live[contract.reward_position]) == contract.array_namespace
    declared = {k for k, v in run.semantics.get("leaf_specs", {}).items() if v.get("kind") == "reward"}
    assert bool(declared) == (contract.dtypes == "declared")
    # the next observation of an episode's last transition is its terminal observation where the
    # family keeps one, and the next episode's first observation where it does not
    ended = [s for s in run.slots if s.kind == "transition" and (s.terminated or s.truncated)]
    assert ended
    for slot in ended:
        obs, next_obs = decode(run, slot.obs), decode(run, slot.next_obs)
        assert isinstance(obs, Stamp) and isinstance(next_obs, Stamp)
        assert (next_obs.episode == obs.episode) == contract.has_terminal_obs


def test_dtype_check_steps_aside_only_where_the_contract_says() -> None:
    spec = get_spec("dtype.rewards_flags")
    for system_id, _ in DRIVEN[:4]:
        system = get_system(system_id)
        assert spec.not_applicable_reason(system) is None, system_id
