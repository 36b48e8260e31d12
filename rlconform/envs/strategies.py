"""Hypothesis strategies for scripts, spaces, action plans and call sequences.

Strategies are bound to the system under test: its capabilities decide which spaces, how many
sub-envs and which calls (partial resets, wrong-size batches) may be drawn. Every choice lists its
simplest option first so that shrinking converges on small, readable cases.
"""

from __future__ import annotations

import functools

from hypothesis import strategies as st

from rlconform.core.system import Capabilities, System
from rlconform.envs.plan import BadStep, Case, Op, Reset, Step
from rlconform.envs.script import EndKind, EnvScript, EpisodePlan
from rlconform.envs.spaces import (
    IMAGE_KINDS,
    ActionValue,
    ActSpec,
    BoxAction,
    BoxObs,
    DictObs,
    DiscreteAction,
    DiscreteObs,
    LeafObs,
    MultiBinaryObs,
    MultiDiscreteAction,
    MultiDiscreteObs,
    ObsSpec,
    SmallDiscreteObs,
    TupleObs,
    image_obs,
)

_BOX_SHAPES = ((5,), (7,), (2, 4), (3, 3))
_END_KINDS: tuple[EndKind, ...] = ("terminated", "truncated", "both", "never")
SEEDS = st.integers(min_value=0, max_value=2**16)


@functools.cache
def box_obs(caps: Capabilities) -> st.SearchStrategy[BoxObs]:
    dtypes = [d for d in ("float32", "float64", "uint8", "int64") if d in caps.box_dtypes]

    @st.composite
    def build(draw: st.DrawFn) -> BoxObs:
        dtype = draw(st.sampled_from(dtypes))
        width = 7 if dtype == "uint8" else 5
        shape = draw(st.sampled_from([s for s in _BOX_SHAPES if s[0] * (s[1] if len(s) > 1 else 1) >= width]))
        return BoxObs(dtype=dtype, shape=shape)  # type: ignore[arg-type]

    return build()


def image_kinds(caps: Capabilities) -> list[str]:
    """The image kinds (:data:`IMAGE_KINDS`) cases of ``caps`` draw: only for a system that takes
    images but no flat Box (the factory probe tries images only where Box was refused), so that
    every system accepting Box draws exactly what it drew before image kinds existed."""
    if "box" in caps.obs_kinds:
        return []
    return [kind for kind in IMAGE_KINDS.values() if kind in caps.obs_kinds]


def small_discrete(caps: Capabilities) -> bool:
    """Whether cases of ``caps`` draw the small Discrete observation (:class:`SmallDiscreteObs`):
    only for a system that takes it but not the stamp-packing Discrete (the factory probe tries
    it only where that was refused: a one-hot wrapper), so that every system accepting Discrete
    draws exactly what it drew before the small kind existed."""
    return SmallDiscreteObs.kind in caps.obs_kinds and DiscreteObs.kind not in caps.obs_kinds


@functools.cache
def leaf_obs(caps: Capabilities, *, in_composite: bool = False) -> st.SearchStrategy[LeafObs]:
    options: list[st.SearchStrategy[LeafObs]] = []
    if not in_composite:
        # a separate branch, never taken by a system accepting Box: their draws stay as they were
        options.extend(st.just(image_obs(kind)) for kind in image_kinds(caps))
    if "box" in caps.obs_kinds or in_composite:
        options.append(box_obs(caps))
    if not (in_composite and caps.composite_box_leaves_only):
        if "discrete" in caps.obs_kinds or in_composite:
            options.append(st.just(DiscreteObs()))
        if "multidiscrete" in caps.obs_kinds or in_composite:
            options.append(st.just(MultiDiscreteObs()))
        if "multibinary" in caps.obs_kinds or in_composite:
            options.append(st.just(MultiBinaryObs()))
    return st.one_of(*options)


@functools.cache
def obs_specs(caps: Capabilities) -> st.SearchStrategy[ObsSpec]:
    options: list[st.SearchStrategy[ObsSpec]] = [leaf_obs(caps)]  # type: ignore[list-item]
    if small_discrete(caps):
        # a separate branch, never taken by a system accepting Discrete: their draws stay as they
        # were; a top-level observation only, never a Dict or Tuple leaf
        options.append(st.just(SmallDiscreteObs()))
    keys = ("state", "tag", "extra")
    if "dict" in caps.obs_kinds:
        options.append(
            st.lists(leaf_obs(caps, in_composite=True), min_size=1, max_size=3).map(
                lambda leaves: DictObs(tuple(zip(keys, leaves, strict=False)))
            )
        )
    if "tuple" in caps.obs_kinds:
        options.append(
            st.lists(leaf_obs(caps, in_composite=True), min_size=1, max_size=3).map(
                lambda leaves: TupleObs(tuple(leaves))
            )
        )
    return st.one_of(*options)


@functools.cache
def action_specs(caps: Capabilities) -> st.SearchStrategy[ActSpec]:
    options: list[st.SearchStrategy[ActSpec]] = []
    if "discrete" in caps.action_kinds:
        options.append(st.integers(2, 5).map(lambda n: DiscreteAction(n)))
    if "box" in caps.action_kinds:
        options.append(st.builds(BoxAction, dims=st.integers(1, 3), dtype=st.sampled_from(["float32", "float64"])))
    if "multidiscrete" in caps.action_kinds:
        options.append(
            st.lists(st.integers(2, 4), min_size=1, max_size=3).map(lambda nv: MultiDiscreteAction(tuple(nv)))
        )
    return st.one_of(*options)


@functools.cache
def action_values(spec: ActSpec) -> st.SearchStrategy[ActionValue]:
    if isinstance(spec, DiscreteAction):
        return st.integers(0, spec.n - 1)
    if isinstance(spec, BoxAction):
        element = st.floats(
            -1.0, 1.0, width=32 if spec.dtype == "float32" else 64, allow_nan=False, allow_subnormal=False
        )
        return st.tuples(*[element] * spec.dims)
    return st.tuples(*[st.integers(0, k - 1) for k in spec.nvec])


def episode_plans(max_length: int = 6) -> st.SearchStrategy[EpisodePlan]:
    return st.builds(EpisodePlan, length=st.integers(1, max_length), end=st.sampled_from(_END_KINDS))


@functools.cache
def scripts(caps: Capabilities) -> st.SearchStrategy[EnvScript]:
    limits = st.integers(1, 6)
    time_limits = {"allowed": st.none() | limits, "required": limits, "forbidden": st.none()}[caps.time_limit]
    return st.builds(
        EnvScript,
        obs=obs_specs(caps),
        action=action_specs(caps),
        episodes=st.lists(episode_plans(), min_size=1, max_size=3).map(tuple),
        env_stride=st.integers(0, 2),
        max_episode_steps=time_limits,
    ).filter(caps.accepts)


@functools.cache
def _step(spec: ActSpec, num_envs: int) -> st.SearchStrategy[Step]:
    return st.lists(action_values(spec), min_size=num_envs, max_size=num_envs).map(lambda a: Step(tuple(a)))


@functools.cache
def _bad_step(spec: ActSpec, num_envs: int) -> st.SearchStrategy[BadStep]:
    sizes = [k for k in (num_envs + 1, num_envs - 1) if k >= 0]
    return st.sampled_from(sizes).flatmap(
        lambda k: st.lists(action_values(spec), min_size=k, max_size=k).map(lambda a: BadStep(tuple(a)))
    )


@functools.cache
def _partial_reset(num_envs: int) -> st.SearchStrategy[Reset]:
    masks = st.lists(st.booleans(), min_size=num_envs, max_size=num_envs).filter(any).map(tuple)
    return st.builds(Reset, seed=st.none() | SEEDS, mask=masks)


def operations(
    system: System, script: EnvScript, num_envs: int, *, robustness: bool, vectorized: bool
) -> st.SearchStrategy[list[Op]]:
    """A call sequence after the first reset. Steps come in bursts so that examples reach episode
    ends often, while shrinking can still cut a burst down to a single step."""
    return _operations(system.capabilities, vectorized, script.action, num_envs, robustness)


@functools.cache
def _operations(
    caps: Capabilities, vectorized: bool, action: ActSpec, num_envs: int, robustness: bool
) -> st.SearchStrategy[list[Op]]:
    step = _step(action, num_envs)
    # a uniformly drawn burst length (not Hypothesis' small-biased list sizes) reaches episode
    # ends in most examples; shrinking still takes it down to 1
    burst = st.integers(1, 10).flatmap(lambda k: st.lists(step, min_size=k, max_size=k))
    reset = st.builds(Reset, seed=st.none() | SEEDS)
    choices: list[st.SearchStrategy[list[Op]]] = [burst] * 5  # type: ignore[list-item]
    choices.append(reset.map(lambda op: [op]))
    # steps then a manual reset: most often right after some episode ended, where libraries
    # must forget a pending autoreset
    choices.append(st.tuples(burst, reset).map(lambda parts: [*parts[0], parts[1]]))
    if caps.partial_reset and vectorized:
        # partial resets interleave with running episodes of the other sub-envs: the states in
        # which wrappers mis-track per-sub-env statistics
        choices.extend([_partial_reset(num_envs).map(lambda op: [op])] * 2)
    if robustness:
        # a wrong-size batch and the call after it: a failure must leave the next step, reset or
        # close working as if it had not happened
        follow_up = st.one_of(step, reset)
        choices.extend([st.tuples(_bad_step(action, num_envs), follow_up).map(list)] * 2)
    chunks = st.lists(st.one_of(*choices), min_size=1, max_size=10)
    return chunks.map(lambda parts: [op for part in parts for op in part])


def num_envs_for(system: System, vectorized: bool) -> st.SearchStrategy[int]:
    """How many sub-envs a case of ``system`` has: one unless its family is ``vectorized`` (the
    family's contract says so; the caller passes it, so that drawing cases needs no family lookup)."""
    if not vectorized:
        return st.just(1)
    caps = system.capabilities
    return st.integers(max(caps.min_envs, 1), caps.max_envs)


@st.composite
def cases(draw: st.DrawFn, system: System, scenario: str = "standard", *, vectorized: bool) -> Case:
    """A case for ``system``: a script it accepts, a number of sub-envs, and a call sequence
    (``vectorized``: whether the system's family takes more than one sub-env)."""
    script = draw(scripts(system.capabilities))
    num_envs = draw(num_envs_for(system, vectorized))
    first_seed = draw(st.none() | SEEDS)
    if scenario == "reseed":
        seed = first_seed if first_seed is not None else draw(SEEDS)
        prefix = draw(
            operations(system, script, num_envs, robustness=False, vectorized=vectorized).map(lambda ops: ops[:6])
        )
        segment = draw(st.lists(_step(script.action, num_envs), min_size=1, max_size=12))
        ops: list[Op] = [Reset(seed=draw(SEEDS)), *prefix, Reset(seed=seed), *segment, Reset(seed=seed), *segment]
        return Case(script, num_envs, tuple(ops))
    robustness = scenario == "robustness" and vectorized
    body = draw(operations(system, script, num_envs, robustness=robustness, vectorized=vectorized))
    if robustness and not any(isinstance(op, BadStep) for op in body):
        body.append(draw(_bad_step(script.action, num_envs)))
        body.append(draw(_step(script.action, num_envs)))
    return Case(script, num_envs, (Reset(seed=first_seed), *body))
