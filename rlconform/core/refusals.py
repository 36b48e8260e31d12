"""Whether an exception raised inside a library's own training loop is the library refusing the
input rlconform handed it (a named refusal: :func:`rlconform.core.family.refused`), or a failure.

Why in core: SB3's algorithms (``model.learn``), RSL-RL's runners (``runner.learn``) and skrl's
trainers (``trainer.train``) are all driven through their own loop, and in each a library may say
no to rlconform's envs ("You must use only one env when doing episodic training", a NaN check).
A refusal must never become a FAIL of the user's code; a crash of the user's code must never be
excused as one. The families share the reading of the traceback:

1. **Where**: only the library's code was running. Every frame below the entry point (the
   function of rlconform's that called the loop) is in the library's packages.
2. **What**: the library refused on purpose. The innermost frame's statement is a ``raise`` or an
   ``assert`` of the library's source raising one of :data:`REFUSING_EXCEPTIONS` (an error NumPy
   or torch raised from a line of the library is the data going wrong, not the library saying no).

Each family adds its own **when** (nothing the user wrote had used the input yet), and may ask
that every frame's ``self`` be of a library class too (:func:`library_frames`): a user's subclass
that inherits the method that raised shows no frame of its own.
"""

from __future__ import annotations

import ast
import functools
import linecache
from collections.abc import Sequence
from pathlib import Path
from types import CodeType, TracebackType

#: the exceptions a library raises, with a ``raise`` or ``assert`` statement of its own, to say that
#: its input or configuration is not one it takes (RuntimeError: SB3's HerReplayBuffer's "Unable to
#: sample before the end of the first episode"; ValueError: RSL-RL's NaN check)
REFUSING_EXCEPTIONS = (AssertionError, ValueError, TypeError, RuntimeError, NotImplementedError)


def frames_below(tb: TracebackType | None, entry: CodeType) -> list[TracebackType]:
    """The traceback's frames below the frame running ``entry`` (the function of rlconform's that
    called the library's loop; it and the frames above it are rlconform's)."""
    frames: list[TracebackType] = []
    below = False
    while tb is not None:
        if below:
            frames.append(tb)
        below = below or tb.tb_frame.f_code is entry
        tb = tb.tb_next
    return frames


def module_of(frame: TracebackType) -> str:
    return str(frame.tb_frame.f_globals.get("__name__", ""))


def in_packages(module: str, packages: Sequence[str]) -> bool:
    return module.split(".")[0] in packages


def library_frames(frames: Sequence[TracebackType], packages: Sequence[str], *, own_objects: bool) -> bool:
    """Whether every frame runs code of ``packages`` and, with ``own_objects``, on an object
    (``self``) of a class of ``packages`` where it has one."""
    for frame in frames:
        if not in_packages(module_of(frame), packages):
            return False
        if own_objects:
            owner = frame.tb_frame.f_locals.get("self")
            if owner is not None and not in_packages(type(owner).__module__, packages):
                return False
    return True


def library_path(filename: str, packages: Sequence[str]) -> str:
    """``filename`` from its library package's folder on (``stable_baselines3/dqn/dqn.py``): the
    same on every machine."""
    parts = Path(filename).parts
    tops = [k for k, part in enumerate(parts) if part in packages]
    return "/".join(parts[tops[-1] :]) if tops else Path(filename).name


def raises_on_purpose(frame: TracebackType) -> bool:
    """Whether the innermost statement at ``frame``'s line is a ``raise`` or an ``assert``."""
    return statement_at(frame.tb_frame.f_code.co_filename, frame.tb_lineno) in ("Raise", "Assert")


@functools.lru_cache(maxsize=64)
def statement_at(filename: str, line: int) -> str:
    """The kind of the innermost statement of ``filename`` spanning ``line`` ("" if unknown)."""
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError):
        return ""
    found, start = "", -1
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        spans = node.lineno <= line <= (node.end_lineno or node.lineno)
        if spans and node.lineno >= start:  # the innermost: the one that starts last
            found, start = type(node).__name__, node.lineno
    return found


def what_it_said(exc: BaseException, frame: TracebackType, packages: Sequence[str]) -> str:
    """One line: the exception, its message's first line and where the library raised it."""
    code = frame.tb_frame.f_code
    where = f"{library_path(code.co_filename, packages)}:{frame.tb_lineno} in {code.co_name}"
    message = str(exc).splitlines()[0] if str(exc) else "(no message)"
    return f"raised {type(exc).__name__}: {message} (at {where})"


def library_refusal(
    exc: BaseException, entry: CodeType, packages: Sequence[str], *, own_objects: bool = True
) -> str | None:
    """What the library said in refusing (:func:`what_it_said`) where rules 1 and 2 of the module
    hold for ``exc`` raised below ``entry``; None: not a refusal (the caller adds its own "when")."""
    frames = frames_below(exc.__traceback__, entry)
    if not frames or not library_frames(frames, packages, own_objects=own_objects):
        return None
    innermost = frames[-1]
    if not (isinstance(exc, REFUSING_EXCEPTIONS) and raises_on_purpose(innermost)):
        return None
    return what_it_said(exc, innermost, packages)
