"""A user's ``torchrl.EnvBase`` factory (``rlconform check --api torchrl.EnvBase``): the ``env_fn`` it
receives (:class:`SubEnvFactory`), building its env with the workers started, and the system
built around it.
"""

from __future__ import annotations

import functools
import mmap
import os
from collections.abc import Callable, Sequence
from typing import Any

from rlconform.core.forkserver import spawn_from_fork_server
from rlconform.core.isolation import run_isolated
from rlconform.core.system import Capabilities, EnvFn, System
from rlconform.core.user import BadInput, factory_error
from rlconform.core.watchdog import stderr_to
from rlconform.envs.script import EnvScript
from rlconform.libraries.torchrl.env_objects import NAME, _base, _is_batched_env, batch_shape, close_env
from rlconform.libraries.torchrl.env_systems import FORKSERVER_PRELOAD, _capabilities


class SubEnvFactory:
    """The ``env_fn`` a user's ``torchrl.EnvBase`` factory receives (``rlconform check --api
    torchrl.EnvBase``): each call builds a sub-env not in use, so that
    ``SerialEnv(n, lambda: GymWrapper(env_fn()))`` gets n distinct, separately logged envs.

    The factory chooses the number of sub-envs; rlconform reads it from the returned env's batch
    size (``[]`` is one env). A batched env first builds one env to read its specs and closes it:
    a sub-env closed hands its index back, so the next call builds that sub-env again. Asking for
    more sub-envs at once than rlconform made raises, naming the count.

    Worker processes: pickling the factory binds the copy to the next free sub-env
    (:class:`SubEnvFn`). A ``ParallelEnv`` (or an ``AsyncVectorEnv``) started with spawn or
    forkserver pickles its ``create_env_fn`` once per worker, in worker order, as it starts
    them, so worker k builds sub-env k, as in the bundled ``torchrl.ParallelEnv.GymWrapper``
    system. A worker started with fork gets a copy of this object, unpickled, as it was when the
    worker forked, and could not tell which sub-env is its own: such a copy refuses to build
    (:class:`ForkedEnvFn`) instead of building a sub-env another worker builds too.

    Envs built while the factory runs and closed before it returns were never handed to
    rlconform: ``ParallelEnv`` wraps a lambda in an ``EnvCreator``, which builds a "shadow" env in
    this process, resets it, takes a random step and closes it to read the specs. Their log
    records are held back until :meth:`built` and dropped when the env closes first, so that
    the ground truth holds the envs the system runs, not its throwaway copy. A system that
    returned data from such a copy still fails: its transitions are in no env's log."""

    def __init__(self, env_fns: Sequence[EnvFn]) -> None:
        self._env_fns = list(env_fns)
        self._free = list(range(len(self._env_fns)))
        self._owner = os.getpid()
        #: one byte shared with forked copies: set when one refused to build (see :meth:`refused_fork`)
        self._fork_refusals = mmap.mmap(-1, 1)
        #: logs held back while the factory builds (None once it has returned)
        self._held: list[_HeldLog] | None = []

    def built(self) -> None:
        """The factory returned its env: the logs of envs still open are written out, and every
        record from now on is written as it comes."""
        for held in self._held or []:
            held.write_out()
        self._held = None

    def _take(self) -> int:
        if not self._free:
            raise IndexError(
                f"the factory asked env_fn for more than {len(self._env_fns)} sub-envs at once (the batch size of "
                "the env the factory returned when rlconform probed it)"
            )
        return self._free.pop(0)

    def release(self, index: int) -> None:
        if index not in self._free:
            self._free.append(index)
            self._free.sort()

    def refused_fork(self) -> bool:
        """Whether a copy of this object in a forked worker was asked for a sub-env: the worker's
        error reaches this process as whatever the library makes of a dead worker (EOFError)."""
        return self._fork_refusals[0] != 0

    def __call__(self) -> Any:
        if os.getpid() != self._owner:
            self._fork_refusals[0] = 1
            raise ForkedEnvFn(FORKED_ENV_FN)
        index = self._take()
        env = self._env_fns[index]()
        held = _HeldLog.hold(env) if self._held is not None else None
        if held is not None:
            self._held.append(held)  # type: ignore[union-attr]
        return _closing_with(env, functools.partial(self._closed, index, held))

    def _closed(self, index: int, held: _HeldLog | None) -> None:
        if held is not None and self._held is not None:
            held.drop()  # closed before the factory returned: a throwaway copy (see the class)
            self._held.remove(held)
        self.release(index)

    def __deepcopy__(self, memo: dict[int, Any]) -> SubEnvFactory:
        """The same factory: a copy handing out the same sub-envs again would build each twice.
        Gymnasium deep-copies an env's spec, whose ``entry_point`` is this factory when the user
        registers it (``gymnasium.register(id, entry_point=env_fn)`` then ``GymEnv(id)``); refusing
        the copy made ``gymnasium.make`` fail its bare ``assert env.spec is not None``."""
        return self

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Sent to a worker process: a copy bound to the next free sub-env (see the class)."""
        if os.getpid() != self._owner:
            raise ForkedEnvFn(FORKED_ENV_FN)
        index = self._take()
        return SubEnvFn, (self._env_fns[index], index)


#: why a forked copy of :class:`SubEnvFactory` refuses to build (one line: it is the bad-input reason)
FORKED_ENV_FN = (
    "a worker process started with fork called rlconform's env_fn: forked workers get copies of it that cannot "
    "tell which sub-env is theirs; start the workers with spawn or forkserver (TorchRL's default, "
    "ParallelEnv(mp_start_method='spawn'))"
)


class ForkedEnvFn(RuntimeError):
    """A copy of :class:`SubEnvFactory` made by fork was asked for a sub-env."""

    #: rlconform's own refusal, whose message says all there is: bad input in one line, with no
    #: traceback of the factory under it (rlconform.core.user.factory_error)
    explains_itself = True


class SubEnvFn:
    """The ``env_fn`` a worker process unpickles: it builds sub-env ``index``, one at a time (a
    worker closing its env and building it again gets the same sub-env)."""

    def __init__(self, env_fn: EnvFn, index: int) -> None:
        self.env_fn = env_fn
        self.index = index
        self._open = False

    def __call__(self) -> Any:
        if self._open:
            raise IndexError(
                f"the worker building sub-env {self.index} asked env_fn for a second env while the first is open"
            )
        self._open = True
        return _closing_with(self.env_fn(), self._closed)

    def _closed(self) -> None:
        self._open = False


class _HeldLog:
    """A reference env's log sink that keeps its records in memory until :meth:`write_out`."""

    def __init__(self, sink: Any) -> None:
        self.sink = sink
        self.records: list[Any] | None = []

    @classmethod
    def hold(cls, env: Any) -> _HeldLog | None:
        """Hold back the log of ``env`` if it is a reference env (rlconform's ``env_fns``)."""
        from rlconform.envs.reference_env import ReferenceEnv

        reference = getattr(env, "unwrapped", None)
        if not isinstance(reference, ReferenceEnv):
            return None
        held = cls(reference.sink)
        reference.sink = held
        return held

    def write(self, record: Any) -> None:
        if self.records is None:
            self.sink.write(record)
        else:
            self.records.append(record)

    def read(self) -> list[Any]:
        return [*self.sink.read(), *(self.records or [])]

    def write_out(self) -> None:
        for record in self.records or []:
            self.sink.write(record)
        self.records = None

    def drop(self) -> None:
        self.records = []

    def close(self) -> None:
        close = getattr(self.sink, "close", None)
        if callable(close):
            close()


def _closing_with(env: Any, on_close: Callable[[], None]) -> Any:
    """``env`` in a wrapper that calls ``on_close`` after closing it (hands a sub-env back)."""
    import gymnasium

    class Released(gymnasium.Wrapper):  # type: ignore[type-arg]
        def close(self) -> None:
            super().close()
            on_close()

    return Released(env)


def build_user_env(factory: Callable[[SubEnvFactory], Any], env_fns: Sequence[EnvFn]) -> Any:
    """``factory(env_fn)`` for a user's ``torchrl.EnvBase`` system, its workers started.

    A batched env is started here, as the bundled systems start theirs, so that its workers are
    built while the runner sends their stderr to a file and a worker that cannot start is a build
    error, not a failed first reset.

    Workers the env starts with TorchRL's default start method (spawn: a ``ParallelEnv`` without
    ``mp_start_method``, where the global start method is spawn or unset) are started from
    rlconform's fork server instead, TorchRL preloaded
    (:data:`USER_WORKER_START`): the same fresh process that unpickles its ``create_env_fn``, without
    importing torch and TorchRL again per worker per build (472 s of checking a two-worker
    ``ParallelEnv`` was mostly that). A start method the factory names, or a global one other than
    spawn, is left as it is."""
    env_fn = SubEnvFactory(env_fns)
    with spawn_from_fork_server(FORKSERVER_PRELOAD, replace=("spawn", None)):
        try:
            env = factory(env_fn)
        except Exception:
            if env_fn.refused_fork():
                raise ForkedEnvFn(FORKED_ENV_FN) from None
            raise
        base = _base(env)
        if _is_batched_env(base) and base.is_closed:
            try:
                base.start()
            except BaseException as exc:
                close_env(env)
                if env_fn.refused_fork() and isinstance(exc, Exception):
                    raise ForkedEnvFn(FORKED_ENV_FN) from None
                raise
    env_fn.built()
    return env


#: what a user's TorchRL system is told about its workers' start (its capabilities' notes)
USER_WORKER_START = (
    "worker processes the env starts with TorchRL's default start method (spawn) are started from a fork server "
    "with TorchRL preloaded (the same fresh process, its env factory pickled to it); a start method the factory "
    "names is kept"
)


def user_num_envs(factory: Any, max_envs: int = 8) -> int:
    """Build ``factory(SubEnvFactory(...))`` once around unlogged reference envs and return its
    number of sub-envs (run it isolated: the env may start worker processes)."""
    from rlconform.envs.reference_env import make_reference_env

    script = EnvScript()
    # the worker processes' tracebacks would bury the one-line reason a failed build gets
    with stderr_to(os.devnull):
        env = build_user_env(factory, [functools.partial(make_reference_env, script, i) for i in range(max_envs)])
        try:
            shape = batch_shape(env)
        finally:
            close_env(env)
    if len(shape) > 1:
        raise ValueError(f"the env's batch size is {list(shape)}; rlconform drives one batch dimension")
    return shape[0] if shape else 1


def user_capabilities(num_envs: int) -> Capabilities:
    """What a user's TorchRL env is driven with: the observation kinds GymWrapper maps (see the
    notes) and exactly the number of sub-envs the factory builds."""
    caps = _capabilities(max_envs=num_envs)
    return Capabilities(
        obs_kinds=caps.obs_kinds,
        composite_box_leaves_only=caps.composite_box_leaves_only,
        partial_reset=False,
        max_envs=num_envs,
        min_envs=num_envs,
        notes=(*caps.notes, USER_WORKER_START),
    )


def _torchrl_system(fn: Callable[..., Any], reference: str) -> System:
    """A ``torchrl.EnvBase`` factory: it gets one ``env_fn`` whose k-th call builds sub-env k and
    picks the number of sub-envs itself; one isolated build reads that number off the returned
    env's batch size, and every case is drawn with exactly that many sub-envs."""
    outcome = run_isolated(_user_num_envs, fn, reference, timeout=120.0)
    if outcome.failure is not None:
        raise BadInput(f"building {reference} as {NAME}: {outcome.failure}")
    kind, value = outcome.value
    if kind == "bad":
        raise BadInput(value)
    num_envs = int(value)

    def build(env_fns: Sequence[EnvFn]) -> Any:
        return build_user_env(fn, env_fns)

    return System(
        id=f"user:{reference}",
        family=NAME,
        title=f"{reference}(env_fn)",
        build=build,
        source=reference,
        kind="user",
        out_of_process=True,
        capabilities=user_capabilities(num_envs),
        description=f"a user's TorchRL env factory ({num_envs} sub-env(s), read from its batch size)",
    )


def _user_num_envs(fn: Callable[..., Any], reference: str) -> tuple[str, Any]:
    """``user_num_envs`` in the isolated child: a factory that raises is bad input
    with its own traceback (the child's generic failure line would keep the first line only)."""

    try:
        return "ok", user_num_envs(fn)
    except Exception as exc:
        return "bad", factory_error(f"building {reference} as {NAME}", exc)
