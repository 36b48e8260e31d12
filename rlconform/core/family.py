"""The interface every API family's adapter implements.

An adapter is thin and literal: it turns plan operations into the library's own calls, reads the
outputs into a family-neutral :class:`~rlconform.core.trace.CallView`, and extracts transitions exactly
the way the library documents a training loop should. It never repairs what a library returns.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from rlconform.core.plan import Op
from rlconform.core.trace import CallRecord, Slot

if TYPE_CHECKING:
    from rlconform.core.runner import Session
    from rlconform.libraries.gymnasium.model_selection import ModelMatch


@dataclass(frozen=True)
class Contract:
    """What a family documents about its outputs, for the type and dtype specs."""

    #: dtype of the reward array (None: a Python or NumPy scalar for single envs)
    reward_dtype: str | None
    #: precision the family promises for reward values ("float64" or "float32")
    reward_precision: str
    #: returns per step call
    step_arity: int
    #: the family reports terminated and truncated separately
    separate_flags: bool
    #: the family batches outputs over sub-envs
    vectorized: bool
    #: positions of the reward and of the flag(s) in a step call's return tuple
    reward_position: int = 1
    flag_positions: tuple[int, ...] = (2, 3)
    #: the family can report an episode as truncated when the same step also terminated; SB3
    #: documents ``TimeLimit.truncated = truncated and not terminated`` (termination wins)
    truncation_survives_termination: bool = True

    def expected_truncated(self, terminated: bool, truncated: bool) -> bool:
        """The truncated flag the family documents for an env stack that returned these flags."""
        return truncated and (self.truncation_survives_termination or not terminated)


class Family(ABC):
    """One API family: how to drive it and how its documented recipe reads its outputs."""

    name: ClassVar[str]
    contract: ClassVar[Contract]

    def begin(self, session: Session, obj: Any) -> None:  # noqa: B027 - optional hook
        """Prepare per-run driver state before the first operation."""

    @abstractmethod
    def execute(self, session: Session, obj: Any, op: Op) -> None:
        """Perform one plan operation (and any call the recipe requires before it)."""

    @abstractmethod
    def recipe(self, calls: list[CallRecord], num_envs: int, semantics: dict[str, Any]) -> list[Slot]:
        """The (sub-env, agent step) cells a correct training loop reads from these calls.

        ``semantics`` is what :meth:`describe_semantics` read off the built object (for example
        the autoreset mode a Gymnasium vector env declares)."""

    def observe(self, obj: Any, record: CallRecord) -> None:  # noqa: B027 - optional hook
        """Record family-specific state right after a call (e.g. normalizer statistics)."""

    def close(self, obj: Any) -> None:
        close = getattr(obj, "close", None)
        if callable(close):
            close()

    def default_model(self, obj: Any) -> str | None:
        """Id of the reference system modelling ``obj`` when the system names none."""
        return self.model_match(obj).model_id

    def model_match(self, obj: Any) -> ModelMatch:
        """The reference system modelling the stack ``obj`` is, or why none does (a user's
        system names no model: the one of the stack it actually built is used, never the
        family's plain one)."""
        from rlconform.libraries.gymnasium.model_selection import ModelMatch

        return ModelMatch(None, f"rlconform has no reference model of the {self.name} family")

    def describe_semantics(self, obj: Any) -> dict[str, Any]:
        """What the built object declares about itself: spaces, modes, wrappers present.

        Read once after construction, while the object is alive; the specs use it later."""
        return {}

    def api_problems(self, call: CallRecord, num_envs: int) -> list[str]:
        """Where a call's return value departs from the family's documented structure."""
        return []

    def object_problems(self, semantics: dict[str, Any], num_envs: int) -> list[str]:
        """Where the built object departs from the family's documented attributes."""
        return []


def layer_chain(obj: Any, attribute: str) -> list[Any]:
    """A stack of wrappers from the outside in, following ``attribute`` (``env``, ``venv``)."""
    chain = [obj]
    while len(chain) < 32:
        inner = getattr(chain[-1], attribute, None)
        if inner is None or inner is chain[-1]:
            break
        chain.append(inner)
    return chain


def find_layer(obj: Any, class_name: str, attribute: str) -> Any | None:
    """The layer of the stack whose class (or a base class) is ``class_name`` or the reference
    model of it (``Model<class_name>``); subclasses of either count."""
    wanted = {class_name, f"Model{class_name}"}
    for layer in layer_chain(obj, attribute):
        if any(cls.__name__ in wanted for cls in type(layer).__mro__):
            return layer
    return None


_FAMILIES: dict[str, Family] = {}


def register_family(family: Family) -> Family:
    _FAMILIES[family.name] = family
    return family


def get_family(name: str) -> Family:
    from rlconform.core.system import all_systems

    all_systems()  # importing the adapters registers their families
    try:
        return _FAMILIES[name]
    except KeyError:
        raise KeyError(f"unknown API family {name!r}; known: {sorted(_FAMILIES)}") from None


def family_names() -> list[str]:
    from rlconform.core.system import all_systems

    all_systems()
    return sorted(_FAMILIES)
