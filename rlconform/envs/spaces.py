"""Observation and action space descriptions, and the codecs that write stamps into them.

A space is described by a small frozen dataclass (hashable, printable as valid Python, so that a
reproducer can rebuild it) and built into a real ``gymnasium.spaces`` object on demand. Every
observation space kind has a codec: ``encode(stamp)`` gives an element of the space and
``decode(obs)`` gives the stamp back, or a :class:`Garbage` that says why the value is not an
observation any reference env could have produced (a zeroed buffer, a corrupted element, a value
from two different steps mixed in one Dict observation...).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from rlconform.envs.stamp import (
    CHECKSUM_MOD,
    MAX_ENVS,
    MAX_EPISODES,
    MAX_SALT,
    MAX_STEPS,
    Stamp,
    checksum_of,
)

if TYPE_CHECKING:
    import gymnasium

BoxDtype = Literal["float32", "float64", "uint8", "int64"]


@dataclass(frozen=True)
class Garbage:
    """A value that decodes to no stamp, with the reason in words."""

    reason: str
    #: the value has the observation's shape, but its values were changed arithmetically (scaled,
    #: shifted, normalised: non-integer or negative components the env never writes): a real
    #: observation the stack transformed, which the spec owning value changes reports
    #: (rlconform.specs.value_changes); no other spec calls it lost, zero-filled or misaligned
    value_changed: bool = False
    #: a value that a user's layer around a sub-env returned for several steps (a normalizer's
    #: first output, the same for every sub-env; rlconform.envs.tap): a real observation, but
    #: which step's cannot be told, so the specs identify its transition by the other end
    ambiguous: bool = False

    def describe(self) -> str:
        return f"not an observation any env produced ({self.reason})"


Decoded = Stamp | Garbage

#: why an observation whose values a stack changed decodes to no stamp
VALUES_CHANGED = "its values were changed (looks like normalization/scaling)"


def ambiguous(decoded: Decoded | None) -> bool:
    """Whether ``decoded`` is a real observation whose step cannot be told (see :class:`Garbage`)."""
    return isinstance(decoded, Garbage) and decoded.ambiguous


def values_changed(decoded: Decoded | None) -> bool:
    """Whether ``decoded`` is an observation whose values the stack changed (see :class:`Garbage`)."""
    return isinstance(decoded, Garbage) and decoded.value_changed


def _integers(array: np.ndarray) -> np.ndarray | Garbage:
    """The integers an integer-valued observation (Discrete, MultiDiscrete, MultiBinary) holds, read
    as a Box's components are: a float within 1e-3 of an integer is that integer (an observation
    read back through a normaliser's published inverse, or cast to float by the stack), and
    non-integer or negative components are values the stack changed arithmetically (normalised,
    scaled), told as such (:attr:`Garbage.value_changed`), never as a corrupted stamp."""
    if array.dtype.kind in "iub":
        return array.astype(np.int64)
    try:
        values = array.astype(np.float64)
    except (TypeError, ValueError):
        return Garbage(f"dtype {array.dtype}, expected numbers")
    if not np.all(np.isfinite(values)):
        return Garbage("non-finite values")
    rounded = np.rint(values)
    if np.any(np.abs(rounded - values) > 1e-3):
        return Garbage(f"{VALUES_CHANGED} (non-integer components)", value_changed=True)
    if np.any(rounded < 0):
        return Garbage(f"{VALUES_CHANGED} (negative components)", value_changed=True)
    return rounded.astype(np.int64)


_FIELD_BOUNDS = (MAX_ENVS, MAX_EPISODES, MAX_STEPS, MAX_SALT, CHECKSUM_MOD)


def _fields(stamp: Stamp) -> list[int]:
    return [stamp.env, stamp.episode, stamp.step, stamp.salt, stamp.checksum]


def _stamp_from_fields(values: Sequence[int]) -> Decoded:
    env, episode, step, salt, check = (int(v) for v in values)
    for value, bound, name in zip(
        (env, episode, step, salt, check),
        _FIELD_BOUNDS,
        ("env", "episode", "step", "salt", "checksum"),
        strict=True,
    ):
        if not 0 <= value < bound:
            return Garbage(f"{name} field {value} out of range")
    if episode == 0:
        return Garbage("episode field 0: no stamp an env writes (episodes count from 1)")
    if checksum_of(env, episode, step, salt) != check:
        return Garbage(f"checksum mismatch in fields {[env, episode, step, salt, check]}")
    return Stamp(env, episode, step, salt)


def _pad_value(stamp: Stamp, position: int) -> int:
    """Deterministic filler for components beyond the stamp fields, so that they are checked too."""
    return (stamp.episode * 7 + stamp.step * 3 + position * 5 + stamp.env) % 100 + 1


#: the image kinds, by channel count: a uint8 Box of shape (height, width, channels), channels last,
#: with the 0..255 bounds :meth:`BoxObs.build` gives it, is what SB3's ``is_image_space`` and
#: Gymnasium's image wrappers (GrayscaleObservation, ResizeObservation) take
IMAGE_KINDS = {3: "image", 1: "gray_image"}
#: the one shape of each image kind that the factory probe tries and the strategies draw: height
#: differs from width (a stack that swaps them is seen), channels the smallest dimension (SB3
#: reads the smallest dimension as the channels)
IMAGE_SHAPES = {"image": (6, 8, 3), "gray_image": (5, 7, 1)}


@dataclass(frozen=True)
class BoxObs:
    """A Box observation; its first components hold the stamp fields, the rest a checked filler."""

    dtype: BoxDtype = "float32"
    shape: tuple[int, ...] = (5,)

    @property
    def kind(self) -> str:
        """``"box"``, or an image kind (:data:`IMAGE_KINDS`) for a uint8 Box shaped like an image:
        stacks that take images only are drawn such Boxes, and only they (the kind is what a
        system's ``Capabilities.obs_kinds`` accepts)."""
        if self.dtype == "uint8" and len(self.shape) == 3:
            return IMAGE_KINDS.get(self.shape[-1], "box")
        return "box"

    def __post_init__(self) -> None:
        if int(np.prod(self.shape)) < self.width:
            raise ValueError(f"Box shape {self.shape} has fewer than {self.width} elements")

    @property
    def width(self) -> int:
        # uint8 cannot hold episode/step numbers up to 4095 in one component: two bytes each.
        return 7 if self.dtype == "uint8" else 5

    def build(self) -> gymnasium.spaces.Box:
        from gymnasium import spaces

        high = 255 if self.dtype == "uint8" else MAX_STEPS - 1
        return spaces.Box(low=0, high=high, shape=self.shape, dtype=np.dtype(self.dtype))

    def _flat_fields(self, stamp: Stamp) -> list[int]:
        if self.dtype == "uint8":
            env, episode, step, salt, check = _fields(stamp)
            return [env, episode >> 8, episode & 255, step >> 8, step & 255, salt, check]
        return _fields(stamp)

    def encode(self, stamp: Stamp) -> np.ndarray:
        size = int(np.prod(self.shape))
        flat = self._flat_fields(stamp) + [_pad_value(stamp, i) for i in range(self.width, size)]
        return np.asarray(flat, dtype=np.dtype(self.dtype)).reshape(self.shape)

    def decode(self, obs: Any) -> Decoded:
        array = np.asarray(obs)
        if array.shape != self.shape:
            return Garbage(f"shape {array.shape}, expected {self.shape}")
        flat = array.reshape(-1)
        if not np.all(np.isfinite(flat.astype(np.float64))):
            return Garbage("non-finite values")
        if not np.any(flat):
            return Garbage("all zeros: a zero-filled or uninitialised buffer")
        rounded = np.rint(flat.astype(np.float64))
        if np.any(np.abs(rounded - flat.astype(np.float64)) > 1e-3):
            return Garbage(f"{VALUES_CHANGED} (non-integer components)", value_changed=True)
        if np.any(rounded < 0):
            return Garbage(f"{VALUES_CHANGED} (negative components)", value_changed=True)
        ints = [int(v) for v in rounded]
        if self.dtype == "uint8":
            env, e_hi, e_lo, s_hi, s_lo, salt, check = ints[:7]
            decoded = _stamp_from_fields([env, (e_hi << 8) | e_lo, (s_hi << 8) | s_lo, salt, check])
        else:
            decoded = _stamp_from_fields(ints[:5])
        if isinstance(decoded, Garbage):
            return decoded
        for i in range(self.width, len(ints)):
            if ints[i] != _pad_value(decoded, i):
                return Garbage(f"component {i} is {ints[i]}, not the value {decoded.describe()} carries")
        return decoded


def image_obs(kind: str) -> BoxObs:
    """The Box of image kind ``kind`` (:data:`IMAGE_SHAPES`)."""
    return BoxObs(dtype="uint8", shape=IMAGE_SHAPES[kind])


@dataclass(frozen=True)
class DiscreteObs:
    """A Discrete observation whose integer packs the stamp (no room for a checksum)."""

    kind = "discrete"

    @property
    def n(self) -> int:
        return MAX_ENVS * MAX_EPISODES * MAX_STEPS * MAX_SALT

    def build(self) -> gymnasium.spaces.Discrete:
        from gymnasium import spaces

        return spaces.Discrete(self.n)

    def encode(self, stamp: Stamp) -> np.int64:
        code = ((stamp.env * MAX_EPISODES + stamp.episode) * MAX_STEPS + stamp.step) * MAX_SALT + stamp.salt
        return np.int64(code)

    def decode(self, obs: Any) -> Decoded:
        array = np.asarray(obs)
        if array.shape != ():
            return Garbage(f"shape {array.shape}, expected a scalar")
        if array.dtype.kind == "f":
            # a code packs the whole stamp (up to 2**44): a float made of it by a transform's
            # arithmetic (a normaliser and its float32 inverse) is off by more than a step, and
            # may read as another stamp by chance, so it is a value change, never a stamp
            return Garbage(f"{VALUES_CHANGED} (a float where the env returns an integer code)", value_changed=True)
        ints = _integers(array)
        if isinstance(ints, Garbage):
            return ints
        code = int(ints)
        if not 0 <= code < self.n:
            return Garbage(f"value {code} outside Discrete({self.n})")
        code, salt = divmod(code, MAX_SALT)
        code, step = divmod(code, MAX_STEPS)
        env, episode = divmod(code, MAX_EPISODES)
        if episode == 0:
            if int(array) == 0:
                return Garbage("all zeros: a zero-filled or uninitialised buffer")
            return Garbage("episode field 0: no stamp an env writes (episodes count from 1)")
        return Stamp(env, episode, step, salt)


#: the sub-env slots and call serials a :class:`SmallDiscreteObs` code holds: sub-envs 0..3 (the
#: strategies draw at most 4) and 256 calls per sub-env (a drawn case makes at most 223: 111
#: operations, two env calls each where a step autoresets on the same call)
SMALL_ENV_SLOTS = 4
SMALL_SERIALS = 256


@dataclass(frozen=True)
class SmallDiscreteObs:
    """A Discrete observation small enough for one-hot wrappers (Gymnasium's ``FlattenObservation``
    turns ``Discrete(n)`` into ``n`` entries): ``Discrete(1025)``, too small for a whole stamp.

    Its code names the observation by the sub-env that made it and the serial of the env call
    that returned it (``seq`` of the call's log record): ``1 + (env % 4) * 256 + seq % 256``, never
    0, so that a zero-filled buffer is no observation. Within the strategies' bounds (at most 4
    sub-envs, fewer than 256 calls per sub-env) every observation of one run has its own code, and
    :func:`rlconform.envs.decode.decode` reads it back into the full stamp from the run's env logs;
    a code two logged observations share decodes as ambiguous, never as either. Drawn only for a
    system that refused the stamp-packing :class:`DiscreteObs` (``strategies.small_discrete``), as
    a top-level observation, never a Dict or Tuple leaf."""

    kind = "small_discrete"

    @property
    def n(self) -> int:
        return 1 + SMALL_ENV_SLOTS * SMALL_SERIALS

    def build(self) -> gymnasium.spaces.Discrete:
        from gymnasium import spaces

        return spaces.Discrete(self.n)

    def code(self, env: int, serial: int) -> int:
        """The code of the observation sub-env ``env`` returned from its call of serial ``serial``."""
        return 1 + (env % SMALL_ENV_SLOTS) * SMALL_SERIALS + serial % SMALL_SERIALS

    def encode(self, stamp: Stamp, serial: int | None = None) -> np.int64:
        """The observation of ``stamp`` made by the env call of serial ``serial``: the code is no
        function of the stamp alone (see the class docstring), so the serial is required."""
        if serial is None:
            raise TypeError("a SmallDiscreteObs code is made from the env call's serial: encode(stamp, serial)")
        return np.int64(self.code(stamp.env, serial))

    def read_code(self, obs: Any) -> int | Garbage:
        """The code ``obs`` holds, or why it holds none (not an integer scalar of the space)."""
        array = np.asarray(obs)
        if array.shape != ():
            return Garbage(f"shape {array.shape}, expected a scalar")
        ints = _integers(array)
        if isinstance(ints, Garbage):
            return ints
        code = int(ints)
        if code == 0:
            return Garbage("all zeros: a zero-filled or uninitialised buffer (code 0 is never written)")
        if not 0 < code < self.n:
            return Garbage(f"value {code} outside Discrete({self.n})")
        return code

    def decode(self, obs: Any) -> Decoded:
        """Without the run's env logs a code names no stamp: a valid one decodes as ambiguous
        (a real observation whose step cannot be told here), never as a guess. The decoding
        every spec and reproducer uses reads the logs (:func:`rlconform.envs.decode.decode`)."""
        code = self.read_code(obs)
        if isinstance(code, Garbage):
            return code
        return Garbage(
            f"Discrete code {code}: a small Discrete observation names its step only through the run's env logs",
            ambiguous=True,
        )


def observation(spec: ObsSpec, stamp: Stamp, serial: int) -> Any:
    """What a reference env returns for ``stamp`` from its call of serial ``serial``: the codec's
    encoding of the stamp (a :class:`SmallDiscreteObs` code is made from the serial)."""
    if isinstance(spec, SmallDiscreteObs):
        return spec.encode(stamp, serial)
    return spec.encode(stamp)


@dataclass(frozen=True)
class MultiDiscreteObs:
    """One MultiDiscrete component per stamp field, plus a checksum."""

    kind = "multidiscrete"

    def build(self) -> gymnasium.spaces.MultiDiscrete:
        from gymnasium import spaces

        return spaces.MultiDiscrete(list(_FIELD_BOUNDS))

    def encode(self, stamp: Stamp) -> np.ndarray:
        return np.asarray(_fields(stamp), dtype=np.int64)

    def decode(self, obs: Any) -> Decoded:
        array = np.asarray(obs)
        if array.shape != (5,):
            return Garbage(f"shape {array.shape}, expected (5,)")
        ints = _integers(array)
        if isinstance(ints, Garbage):
            return ints
        return _stamp_from_fields([int(v) for v in ints])


_BITS = (6, 12, 12, 8, 7)


@dataclass(frozen=True)
class MultiBinaryObs:
    """The stamp fields and checksum written as big-endian bits."""

    kind = "multibinary"

    @property
    def n(self) -> int:
        return sum(_BITS)

    def build(self) -> gymnasium.spaces.MultiBinary:
        from gymnasium import spaces

        return spaces.MultiBinary(self.n)

    def encode(self, stamp: Stamp) -> np.ndarray:
        bits: list[int] = []
        for value, width in zip(_fields(stamp), _BITS, strict=True):
            bits.extend((value >> (width - 1 - i)) & 1 for i in range(width))
        return np.asarray(bits, dtype=np.int8)

    def decode(self, obs: Any) -> Decoded:
        array = np.asarray(obs)
        if array.shape != (self.n,):
            return Garbage(f"shape {array.shape}, expected ({self.n},)")
        ints = _integers(array)
        if isinstance(ints, Garbage):
            return ints
        array = ints
        if np.any((array != 0) & (array != 1)):
            return Garbage("a MultiBinary element is neither 0 nor 1")
        values, pos = [], 0
        for width in _BITS:
            chunk = [int(b) for b in array[pos : pos + width]]
            values.append(int("".join(map(str, chunk)), 2))
            pos += width
        return _stamp_from_fields(values)


LeafObs = BoxObs | DiscreteObs | MultiDiscreteObs | MultiBinaryObs


@dataclass(frozen=True)
class DictObs:
    """A Dict observation; every key carries the full stamp, so every key is checked."""

    entries: tuple[tuple[str, LeafObs], ...] = (("state", BoxObs()), ("tag", DiscreteObs()))

    kind = "dict"

    def build(self) -> gymnasium.spaces.Dict:
        from gymnasium import spaces

        return spaces.Dict({key: leaf.build() for key, leaf in self.entries})

    def encode(self, stamp: Stamp) -> dict[str, Any]:
        return {key: leaf.encode(stamp) for key, leaf in self.entries}

    def decode(self, obs: Any) -> Decoded:
        if not isinstance(obs, Mapping):
            return Garbage(f"a {type(obs).__name__}, expected a dict")
        if sorted(obs.keys()) != sorted(key for key, _ in self.entries):
            return Garbage(f"keys {sorted(obs.keys())}, expected {sorted(k for k, _ in self.entries)}")
        return _consistent([(repr(key), leaf.decode(obs[key])) for key, leaf in self.entries])


@dataclass(frozen=True)
class TupleObs:
    """A Tuple observation; every element carries the full stamp."""

    elements: tuple[LeafObs, ...] = (BoxObs(), MultiDiscreteObs())

    kind = "tuple"

    def build(self) -> gymnasium.spaces.Tuple:
        from gymnasium import spaces

        return spaces.Tuple(tuple(leaf.build() for leaf in self.elements))

    def encode(self, stamp: Stamp) -> tuple[Any, ...]:
        return tuple(leaf.encode(stamp) for leaf in self.elements)

    def decode(self, obs: Any) -> Decoded:
        if not isinstance(obs, (tuple, list)):
            return Garbage(f"a {type(obs).__name__}, expected a tuple")
        if len(obs) != len(self.elements):
            return Garbage(f"{len(obs)} elements, expected {len(self.elements)}")
        return _consistent([(f"[{i}]", leaf.decode(obs[i])) for i, leaf in enumerate(self.elements)])


def _consistent(parts: list[tuple[str, Decoded]]) -> Decoded:
    """All parts of a composite observation must come from the same call."""
    first_name, first = parts[0]
    for name, part in parts:
        if isinstance(part, Garbage):
            return Garbage(f"element {name}: {part.reason}", part.value_changed)
    for name, part in parts[1:]:
        if part != first:
            assert isinstance(part, Stamp) and isinstance(first, Stamp)
            return Garbage(
                f"element {name} is {part.short()} while element {first_name} is {first.short()}: parts of two different steps"
            )
    return first


ObsSpec = BoxObs | DiscreteObs | SmallDiscreteObs | MultiDiscreteObs | MultiBinaryObs | DictObs | TupleObs


# --------------------------------------------------------------------------------------- actions

ActionValue = int | tuple[float, ...] | tuple[int, ...]
ACTION_CODES = 16


@dataclass(frozen=True)
class BoxAction:
    dims: int = 2
    dtype: Literal["float32", "float64"] = "float32"

    kind = "box"

    def build(self) -> gymnasium.spaces.Box:
        from gymnasium import spaces

        return spaces.Box(low=-1.0, high=1.0, shape=(self.dims,), dtype=np.dtype(self.dtype))

    def to_array(self, value: ActionValue) -> np.ndarray:
        return np.asarray(value, dtype=np.dtype(self.dtype)).reshape(self.dims)

    def code(self, action: Any) -> int:
        first = float(np.asarray(action, dtype=np.float64).reshape(-1)[0])
        return int(np.clip(np.floor((first + 1.0) / 2.0 * ACTION_CODES), 0, ACTION_CODES - 1))

    def canonical(self, action: Any) -> ActionValue:
        array = np.asarray(action, dtype=np.dtype(self.dtype)).reshape(-1)
        return tuple(float(v) for v in array)


@dataclass(frozen=True)
class DiscreteAction:
    n: int = 3

    kind = "discrete"

    def build(self) -> gymnasium.spaces.Discrete:
        from gymnasium import spaces

        return spaces.Discrete(self.n)

    def to_array(self, value: ActionValue) -> np.ndarray:
        return np.asarray(value, dtype=np.int64)

    def code(self, action: Any) -> int:
        return int(np.asarray(action).reshape(-1)[0]) % ACTION_CODES

    def canonical(self, action: Any) -> ActionValue:
        return int(np.asarray(action).reshape(-1)[0])


@dataclass(frozen=True)
class MultiDiscreteAction:
    nvec: tuple[int, ...] = (3, 2)

    kind = "multidiscrete"

    def build(self) -> gymnasium.spaces.MultiDiscrete:
        from gymnasium import spaces

        return spaces.MultiDiscrete(list(self.nvec))

    def to_array(self, value: ActionValue) -> np.ndarray:
        return np.asarray(value, dtype=np.int64).reshape(len(self.nvec))

    def code(self, action: Any) -> int:
        total = 0
        for value, base in zip(np.asarray(action).reshape(-1), self.nvec, strict=True):
            total = total * base + int(value)
        return total % ACTION_CODES

    def canonical(self, action: Any) -> ActionValue:
        return tuple(int(v) for v in np.asarray(action).reshape(-1))


ActSpec = BoxAction | DiscreteAction | MultiDiscreteAction


def batch_actions(spec: ActSpec, values: Sequence[ActionValue]) -> np.ndarray:
    """The batch a correct caller passes to a vector env: one row per sub-env, the space's dtype."""
    rows = [spec.to_array(v) for v in values]
    if not rows:
        shape = (0, spec.dims) if isinstance(spec, BoxAction) else (0,)
        dtype = np.dtype(spec.dtype) if isinstance(spec, BoxAction) else np.int64
        return np.zeros(shape, dtype=dtype)
    return np.stack(rows)


def array_literal(array: np.ndarray) -> str:
    """Python source that rebuilds ``array`` exactly (for reproducers)."""
    return f"np.array({array.tolist()!r}, dtype=np.{array.dtype})"


def single_action(spec: ActSpec, value: ActionValue) -> Any:
    """The action object a correct caller passes to ``env.step``."""
    if isinstance(spec, DiscreteAction):
        return np.int64(value)  # type: ignore[arg-type]
    return spec.to_array(value)
