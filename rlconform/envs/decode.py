"""Reading an observation back into the stamp the reference env wrote into it, or why it cannot be.

Every reference env stamps its observations (env, episode, step, salt); decoding one is what lets
the specs and the standalone reproducers name the step an observation came from, whatever stack
reshaped it on the way (frame stacking, flattening). It lives with the reference envs, below the
specs, because the stateful search and the reproducers print decoded observations too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rlconform.envs.calllog import ResetRecord, StepRecord
from rlconform.envs.layouts import decode_flattened, decode_one_hot, decode_transposed
from rlconform.envs.spaces import BoxObs, Decoded, DictObs, Garbage, SmallDiscreteObs, TupleObs
from rlconform.envs.stamp import Stamp

if TYPE_CHECKING:
    from rlconform.envs.driver import Run


def decode(run: Run, value: Any) -> Decoded:
    """The stamp of an observation in env units, or why it is none.

    Under frame stacking the stamp is that of the newest frame, and the older frames must be
    the preceding steps of the same episode or zero padding before its first step."""
    if value is None:
        return Garbage("no observation (None)")
    # each observation is read by many specs: decode it once per run (the memo keeps the value
    # alive, so its id cannot be reused by another object meanwhile)
    key = ("decode", id(value))
    hit = run.memo.get(key)
    if hit is not None and hit[0] is value:
        return hit[1]  # type: ignore[no-any-return]
    decoded = _decode(run, value)
    if run.truth is not None or not isinstance(run.case.script.obs, SmallDiscreteObs):
        # a small Discrete code read before the run's logs were (a run driven op by op) is
        # decoded again once they are
        run.memo[key] = (value, decoded)
    return decoded


def _decode(run: Run, value: Any) -> Decoded:
    try:
        n_stack = run.semantics.get("frame_stack")
        if n_stack:
            padding = run.semantics.get("frame_stack_padding") or "zeros"
            padding_value = float(run.semantics.get("frame_stack_padding_value") or 0.0)
            return decode_stacked(run.case.script.obs, value, int(n_stack), padding, padding_value)
        if isinstance(run.case.script.obs, SmallDiscreteObs):
            return _decode_small(run, run.case.script.obs, value)
        decoded = run.case.script.obs.decode(value)
        if isinstance(decoded, Garbage):
            # a stack that flattened the observation kept its stamp: identify it, and let the
            # spec that owns observations report the changed layout (flattened_shape)
            flat = decode_flattened(run.case.script.obs, value)
            if isinstance(flat, Stamp):
                run.memo[("flattened", id(value))] = tuple(np.shape(value))
                return flat
            # an image moved channel-first (SB3's VecTransposeImage) kept its stamp too
            moved = decode_transposed(run.case.script.obs, value)
            if isinstance(moved, Stamp):
                run.memo[("transposed", id(value))] = tuple(np.shape(value))
                return moved
            # a user's layer around a sub-env that returned it, named (before the layout below,
            # which would read a frame stack there without naming the layer)
            through = _through_sub_env_layers(run, value, decoded)
            if through is not decoded:
                return through
            # frames stacked along a new leading axis (Gymnasium's FrameStackObservation, a
            # user's frame stack): the newest frame's stamp, the older ones checked
            stacked = read_leading_stack(run.case.script.obs, value)
            if stacked is not None:
                newest, depth, problem = stacked
                run.memo[("stacked", id(value))] = depth
                run.memo[("stack_problem", id(value))] = problem
                return newest
            return decoded
        return decoded
    except Exception as exc:  # malformed structures decode to a reason, never to a crash
        return Garbage(f"undecodable {type(value).__name__}: {exc}")


def _decode_small(run: Run, spec: SmallDiscreteObs, value: Any) -> Decoded:
    """The stamp of a small Discrete observation: its code (the integer, or its one-hot vector,
    read like a flattened layout) looked up among the codes of the observations the run's envs
    logged (:class:`rlconform.envs.spaces.SmallDiscreteObs`)."""
    code = spec.read_code(value)
    one_hot = False
    if isinstance(code, Garbage):
        read = decode_one_hot(spec, value)
        if read is None:
            return _through_sub_env_layers(run, value, code)
        if isinstance(read, Garbage):
            return read
        code, one_hot = read, True
    decoded = logged_stamp(run, spec, code)
    if one_hot and not isinstance(decoded, Garbage):
        # a changed layout, reported by the spec that owns observations like a flattened one
        run.memo[("flattened", id(value))] = tuple(np.shape(value))
    return decoded


def logged_stamp(run: Run, spec: SmallDiscreteObs, code: int) -> Decoded:
    """The stamp of the logged observation whose code is ``code``: Garbage when none has it, and
    ambiguous (never a guess) when several have it."""
    if run.truth is None:
        return Garbage(
            f"Discrete code {code}: the run's env logs are not read yet, and a small Discrete code names its "
            "step only through them",
            ambiguous=True,
        )
    table = run.memo.get(("small_discrete_codes",))
    if table is None:
        table = {}
        for env in run.truth.envs:
            for record in env.records:
                if isinstance(record, (ResetRecord, StepRecord)):
                    table.setdefault(spec.code(record.stamp.env, record.seq), []).append(record.stamp)
        run.memo[("small_discrete_codes",)] = table
    stamps = sorted(set(table.get(code, ())))
    if not stamps:
        return Garbage(f"Discrete code {code}: no env of this run returned an observation with this code")
    if len(stamps) > 1:
        shared = ", ".join(stamp.describe() for stamp in stamps[:3])
        return Garbage(
            f"Discrete code {code} is shared by {len(stamps)} logged observations ({shared}): which one cannot be told",
            ambiguous=True,
        )
    return stamps[0]


def _through_sub_env_layers(run: Run, value: Any, undecoded: Garbage) -> Decoded:
    """The stamp of an observation that a user's layer around a sub-env returned
    (:mod:`rlconform.envs.tap`); ``undecoded`` when no tapped layer returned it."""
    if run.tap is None:
        return undecoded
    found = run.tap.lookup(value)
    if found is None:
        return undecoded
    stamp, layers = found
    names = " < ".join(layers)
    if stamp is None:
        return Garbage(
            f"{undecoded.reason}; each sub-env's {names} returned this value for more than one step, so it "
            "cannot be told which",
            value_changed=undecoded.value_changed,
            ambiguous=True,
        )
    run.memo[("sub_env_layers", id(value))] = layers
    return stamp


def read_through_layers(run: Run, value: Any) -> tuple[str, ...] | None:
    """The user's layers around each sub-env when ``value``'s stamp was read through them, else None."""
    if value is None:
        return None
    decode(run, value)
    layers = run.memo.get(("sub_env_layers", id(value)))
    return layers if isinstance(layers, tuple) else None


def flattened_shape(run: Run, value: Any) -> tuple[int, ...] | None:
    """The shape of ``value`` when its stamp was read through a flattened layout, else None."""
    if value is None:
        return None
    decode(run, value)
    shape = run.memo.get(("flattened", id(value)))
    return shape if isinstance(shape, tuple) else None


def stacked_frames(run: Run, value: Any) -> int | None:
    """How many frames ``value`` stacks along a new leading axis when its stamp was read as the
    newest of them (even where an older frame is wrong: that is the decoded reason), else None."""
    if value is None:
        return None
    decode(run, value)
    depth = run.memo.get(("stacked", id(value)))
    return depth if isinstance(depth, int) else None


def read_leading_stack(spec: Any, value: Any) -> tuple[Stamp, int, str | None] | None:
    """``value`` read as k > 1 frames of ``spec`` stacked along a new leading axis (Gymnasium's
    ``FrameStackObservation``, a user's frame stack): the newest frame's stamp, k, and what is
    wrong with the older frames (None when each is the step before it in the same episode, and
    before the episode's first step either zeros or copies of that first frame: Gymnasium's
    ``padding_type`` "zero" and "reset"). None when ``value`` has no such shape or its newest
    frame is no observation (then it is no frame stack at all)."""
    if isinstance(spec, (DictObs, TupleObs)):
        if isinstance(spec, DictObs) and isinstance(value, dict):
            parts = [(repr(key), read_leading_stack(leaf, value.get(key))) for key, leaf in spec.entries]
        elif isinstance(spec, TupleObs) and isinstance(value, tuple) and len(value) == len(spec.elements):
            parts = [
                (f"[{i}]", read_leading_stack(leaf, v))
                for i, (leaf, v) in enumerate(zip(spec.elements, value, strict=True))
            ]
        else:
            return None
        if any(part is None for _, part in parts):
            return None
        found = [(key, part) for key, part in parts if part is not None]
        newest, depth, _ = found[0][1]
        for key, (stamp, _, problem) in found:
            if stamp != newest:
                return newest, depth, f"element {key} and element {found[0][0]} come from different steps"
            if problem is not None:
                return newest, depth, f"element {key}: {problem}"
        return newest, depth, None
    try:
        own_shape = tuple(spec.build().shape)
    except Exception:
        return None
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if not isinstance(value, np.ndarray) or value.ndim != len(own_shape) + 1 or value.shape[1:] != own_shape:
        return None
    if value.shape[0] < 2:
        return None
    frames = [value[i] for i in range(value.shape[0])]
    newest = spec.decode(frames[-1])
    if not isinstance(newest, Stamp):
        return None
    zeros = _leading_padded(spec, frames, newest, same=False)
    if zeros is None:
        return newest, len(frames), None
    same = _leading_padded(spec, frames, newest, same=True)
    if same is None:
        return newest, len(frames), None
    # the reason of the padding the stack looks like it uses: zeros where its oldest frame is zero
    return newest, len(frames), zeros if not np.any(frames[0]) else same


def _leading_padded(spec: Any, frames: list[Any], newest: Stamp, *, same: bool) -> str | None:
    """What is wrong with the older frames under one padding (None: nothing)."""
    for back, frame in enumerate(reversed(frames[:-1]), start=1):
        step = newest.step - back
        if step < 0 and not same:
            if np.any(frame):
                return f"frame -{back} holds data where zero padding precedes {newest.short()}'s episode"
            continue
        wanted = Stamp(newest.env, newest.episode, max(step, 0), newest.salt)
        older = spec.decode(frame)
        if older != wanted:
            got = older.reason if isinstance(older, Garbage) else older.short()
            return f"frame -{back} is {got} in a stack ending at {newest.short()}; expected {wanted.short()}"
    return None


def stack_problem(run: Run, value: Any) -> str | None:
    """What is wrong with the older frames of a frame-stacked ``value`` (another episode's frame
    leaked into it), None when nothing is or it is no frame stack."""
    if value is None:
        return None
    decode(run, value)
    problem = run.memo.get(("stack_problem", id(value)))
    return problem if isinstance(problem, str) else None


def transposed_shape(run: Run, value: Any) -> tuple[int, ...] | None:
    """The shape of ``value`` when its stamp was read with its channels moved back last (an image
    a stack moved channel-first), else None."""
    if value is None:
        return None
    decode(run, value)
    shape = run.memo.get(("transposed", id(value)))
    return shape if isinstance(shape, tuple) else None


#: how a frame stack fills the frames before an episode's first step: ``"zeros"`` (SB3's
#: VecFrameStack), ``"constant"`` (every component the padding value, TorchRL's
#: ``CatFrames(padding="constant")``), ``"same"`` (copies of the episode's first frame, TorchRL's
#: ``CatFrames`` default)
PADDINGS = ("zeros", "constant", "same")


def decode_stacked(spec: Any, value: Any, n_stack: int, padding: str = "zeros", padding_value: float = 0.0) -> Decoded:
    """The stamp of the newest of ``n_stack`` frames stacked along the last dimension, when the
    older frames are the preceding steps of its episode, and before the episode's first step
    the ``padding`` (:data:`PADDINGS`)."""
    if padding not in PADDINGS:
        return Garbage(f"frame stacking with an unknown padding {padding!r}")
    if isinstance(spec, DictObs):
        if not isinstance(value, dict):
            return Garbage(f"a {type(value).__name__}, expected a dict")
        parts = [
            (key, decode_stacked(leaf, value.get(key), n_stack, padding, padding_value)) for key, leaf in spec.entries
        ]
        for key, part in parts:
            if isinstance(part, Garbage):
                return Garbage(f"key {key!r}: {part.reason}")
        first = parts[0][1]
        for key, part in parts[1:]:
            if part != first:
                return Garbage(f"key {key!r} and key {parts[0][0]!r} come from different steps")
        return first
    if not isinstance(spec, BoxObs):
        return Garbage("frame stacking of a non-Box observation")
    array = np.asarray(value)
    width = spec.shape[-1]
    if array.shape[:-1] != spec.shape[:-1] or array.shape[-1] != width * n_stack:
        return Garbage(f"shape {array.shape}, expected {n_stack} stacked frames of shape {spec.shape}")
    frames = [array[..., i * width : (i + 1) * width] for i in range(n_stack)]
    newest = spec.decode(frames[-1])
    if isinstance(newest, Garbage):
        return Garbage(f"newest frame: {newest.reason}")
    if padding == "same":
        return _same_padded(spec, frames, newest)
    padding_name = "zero padding" if padding == "zeros" else f"padding ({padding_value:g})"
    in_padding = False
    for back, frame in enumerate(reversed(frames[:-1]), start=1):
        wanted_step = newest.step - back
        if _is_padding(frame, padding, padding_value):
            if wanted_step >= 0:
                return Garbage(
                    f"frame -{back} is {padding_name} although {newest.short()} has a step {wanted_step} before it"
                )
            in_padding = True
            continue
        if in_padding:
            return Garbage(f"frame -{back} holds data behind {padding_name}")
        older = spec.decode(frame)
        expected = f"episode {newest.episode} step {wanted_step}" if wanted_step >= 0 else padding_name
        if isinstance(older, Garbage) or (older.env, older.episode, older.step, older.salt) != (
            newest.env,
            newest.episode,
            wanted_step,
            newest.salt,
        ):
            got = older.reason if isinstance(older, Garbage) else older.short()
            return Garbage(f"frame -{back} is {got} in a stack ending at {newest.short()}; expected {expected}")
    return newest


def _is_padding(frame: Any, padding: str, padding_value: float) -> bool:
    if padding == "zeros":
        return not np.any(frame)
    # a constant read back through an inverse (a normalisation) is as exact as a stamp's components
    return bool(np.all(np.abs(np.asarray(frame, dtype=np.float64) - padding_value) <= 1e-3))


def _same_padded(spec: BoxObs, frames: list[Any], newest: Stamp) -> Decoded:
    """Padding by repetition: each frame before the episode's first step is that first step."""
    for back, frame in enumerate(reversed(frames[:-1]), start=1):
        wanted = Stamp(newest.env, newest.episode, max(newest.step - back, 0), newest.salt)
        older = spec.decode(frame)
        if older != wanted:
            got = older.reason if isinstance(older, Garbage) else older.short()
            padded = " (copies of the episode's first frame pad the stack before it)" if wanted.step == 0 else ""
            return Garbage(
                f"frame -{back} is {got} in a stack ending at {newest.short()}; expected {wanted.short()}{padded}"
            )
    return newest


def describe_decoded(decoded: Decoded, run: Run | None = None) -> str:
    if isinstance(decoded, Garbage):
        return decoded.describe()
    text = decoded.short()
    if decoded.step == 0:
        return text + " (a reset observation)"
    if run is not None and run.truth is not None:
        episode = run.truth.episode_of(decoded)
        if episode is not None and episode.terminal == decoded:
            return text + " (the terminal observation)"
    return text
