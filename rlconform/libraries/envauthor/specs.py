"""The env-author specs (``env.*``): what holds for any env, bare and through every installed stack."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from rlconform.core.compare import first_difference
from rlconform.core.spec import Checker, Outcome, spec
from rlconform.envs.driver import Run, reference_family
from rlconform.envs.plan import Reset, Step
from rlconform.envs.trace import CallRecord
from rlconform.libraries.envauthor.harness import EnvRun, episode_ends
from rlconform.libraries.envauthor.layers import layer_problems
from rlconform.libraries.envauthor.probes import STREAM_PREFIX, STREAM_SEEDS, distinct
from rlconform.libraries.envauthor.stack_pool import STACK_EXAMPLES
from rlconform.libraries.envauthor.stacks import StackResult, stack_difference, stacks_not_run
from rlconform.libraries.envauthor.torch_envs import (
    is_scalar_tensor,
    is_tensor,
    leaves,
    tensor_signature,
    to_numpy,
)
from rlconform.specs.dtypes import _type_of, conformance_problem
from rlconform.specs.families import GYMNASIUM_ENV, USER_ENV

if TYPE_CHECKING:
    pass

FAMILIES = frozenset({USER_ENV})


def _outputs(call: CallRecord) -> tuple[Any, ...]:
    result = call.result_snapshot
    if isinstance(result, tuple) and len(result) == 5:
        return (result[0], result[1], result[2], result[3])
    if isinstance(result, tuple) and len(result) == 2:
        return (result[0],)
    return (result,)


def _note_ends(ck: Checker, run: EnvRun) -> None:
    """Say whether the bare env's run crossed episode ends: the episode-end example drives the env
    one step past the first episode end (within the time budget), so a defect of the last step is
    seen; where it could not, say why (these specs check every step, so they still pass)."""
    assert run.first is not None
    ck.count("episode ends the bare env crossed", episode_ends(run.first))
    if episode_ends(run.first):
        ck.note("the bare env's runs crossed episode ends (driven one step past the first end, and on)")
    elif run.case.to_end and run.ends_missed is not None:
        ck.note(f"no episode end in the bare env's runs, so no step around one was checked: {run.ends_missed}")


def _segments(run: Run) -> list[list[CallRecord]]:
    segments: list[list[CallRecord]] = []
    for call in run.calls:
        if isinstance(call.op, Reset) and not call.implied:
            segments.append([])
        if segments:
            segments[-1].append(call)
    return segments


@spec(
    "env.api_shape",
    impact="api-contract",
    statement="reset returns (obs, info dict) and step returns (obs, reward, terminated, truncated, info dict) with a real-number reward and bool flags (one-element tensors for a torch-native env, which keeps each tensor's dtype and device from call to call).",
    rationale="Every library reads the Gymnasium 5-tuple positionally; a 4-tuple, a list or an array flag breaks them in different, silent ways; a torch-native env whose tensors change dtype or device mid-run breaks the buffers allocated from its first outputs.",
    families=FAMILIES,
    needs=("usable",),
)
def env_api_shape(run: EnvRun) -> Outcome:
    ck = Checker()
    assert run.first is not None
    family = reference_family(GYMNASIUM_ENV)
    native = run.torch_device is not None
    #: a torch-native env's tensors: output role -> (signature, call source) of its first call
    first_seen: dict[str, tuple[str, str]] = {}
    for call in run.first.calls:
        if call.failed:
            ck.fail(f"{call.source} raised {call.error_type}: {call.error_message}", call=call.position)
            continue
        problems = family.api_problems(call, 1)
        if not problems and isinstance(call.op, Step):
            _, reward, terminated, truncated, _ = call.result_live
            if not _is_reward(reward, native):
                problems.append(f"the reward is {_type_of(reward)}")
            for name, flag in (("terminated", terminated), ("truncated", truncated)):
                if not _is_flag(flag, native):
                    problems.append(f"{name} is {_type_of(flag)}, not a bool")
        if not problems and native:
            problems += _tensor_drift(call, run.torch_device, first_seen)
        ck.expect(not problems, f"{call.source}: " + "; ".join(problems), call=call.position)
    _note_ends(ck, run)
    return ck.done()


def _is_reward(reward: Any, native: bool) -> bool:
    if native and is_scalar_tensor(reward, boolean=False):
        return True
    return isinstance(reward, (int, float, np.integer, np.floating)) and not isinstance(reward, (bool, np.bool_))


def _is_flag(flag: Any, native: bool) -> bool:
    return isinstance(flag, (bool, np.bool_)) or (native and is_scalar_tensor(flag, boolean=True))


def _tensor_drift(call: CallRecord, device: str | None, first_seen: dict[str, tuple[str, str]]) -> list[str]:
    """Where a torch-native env's call returns a tensor on another device than its first
    observation's, or of another dtype or device than the same output of its first call."""
    result = call.result_live
    roles = {"obs": result[0]}
    if isinstance(call.op, Step):
        roles |= {"reward": result[1], "terminated": result[2], "truncated": result[3]}
    problems = []
    for role, value in roles.items():
        for path, leaf in leaves(value, role):
            signature = tensor_signature(leaf)
            if is_tensor(leaf) and str(leaf.device) != device:
                problems.append(f"{path} is on {leaf.device}; the env's first observation was on {device}")
            seen = first_seen.setdefault(path, (signature, call.source))
            if seen[0] != signature:
                problems.append(f"{path} is {signature}; {seen[1]} returned {seen[0]}")
    return problems


@spec(
    "env.observations_in_space",
    impact="api-contract",
    statement="Every observation the env returns is an element of its observation_space, with the space's dtype and shape (a torch-native env's tensors are compared as NumPy arrays).",
    rationale="Vectorizers allocate buffers from the declared space and cast into them: an observation of another dtype or shape is silently converted, clipped or rejected by one stack and not another.",
    families=FAMILIES,
    needs=("usable",),
)
def env_observations_in_space(run: EnvRun) -> Outcome:
    ck = Checker()
    assert run.first is not None
    for call in run.first.calls:
        if call.failed or call.view is None:
            continue
        obs = call.view.obs[0]
        if run.torch_device is not None:
            obs = to_numpy(obs)
        problem = conformance_problem(run.observation_space, obs)
        as_numpy = " (as NumPy)" if run.torch_device is not None else ""
        ck.expect(
            problem is None, f"the observation returned by {call.source}{as_numpy} is {problem}", call=call.position
        )
    _note_ends(ck, run)
    return ck.done()


@spec(
    "env.determinism",
    impact="reproducibility",
    statement="Two fresh instances reset with the same seed and given the same actions return the same observations, rewards and flags.",
    rationale="Seeded reproducibility is what makes experiments, bug reports and vectorized copies comparable; hidden global randomness breaks all three.",
    families=FAMILIES,
)
def env_determinism(run: EnvRun) -> Outcome:
    ck = Checker()
    if not run.usable or run.second is None:
        return ck.done()
    assert run.first is not None
    _expect_same_outputs(
        ck,
        _segments(run.first)[0],
        _segments(run.second)[0],
        lambda call, diff: f"{call.source}: a second instance with the same seed returned something else ({diff})",
    )
    _note_ends(ck, run)
    return ck.done()


def _expect_same_outputs(
    ck: Checker, first: list[CallRecord], second: list[CallRecord], message: Callable[[CallRecord, str], str]
) -> None:
    """Compare two call sequences made with the same seed and actions, up to the first difference
    (what follows a difference is its consequence, not new information)."""
    for a, b in zip(first, second, strict=False):
        if a.failed or b.failed or a.implied != b.implied:
            break
        diff = first_difference(_outputs(a), _outputs(b))
        ck.expect(diff is None, message(b, diff) if diff is not None else "", call=b.position)
        if diff is not None:
            break


@spec(
    "env.reset_reproducible",
    impact="reproducibility",
    statement="reset(seed=s) on a used instance restarts exactly the trajectory reset(seed=s) started the first time.",
    rationale="Evaluation loops reseed the same instance; state that survives a seeded reset (a step counter, an RNG created once) makes the evaluation depend on what ran before.",
    families=FAMILIES,
    needs=("usable",),
)
def env_reset_reproducible(run: EnvRun) -> Outcome:
    ck = Checker()
    assert run.first is not None
    segments = _segments(run.first)
    if len(segments) < 2:
        return ck.done()
    _expect_same_outputs(
        ck,
        segments[0],
        segments[1],
        lambda call, diff: (
            f"{call.source} after the second reset(seed={run.case.seed}) differs from the first time ({diff})"
        ),
    )
    _note_ends(ck, run)
    return ck.done()


@spec(
    "env.no_aliasing",
    impact="training-data",
    statement="The env neither modifies an observation after returning it nor modifies the action it is given.",
    rationale="Buffers keep returned observations and callers reuse action arrays; an env that writes into either corrupts stored data without an error.",
    families=FAMILIES,
    needs=("usable",),
)
def env_no_aliasing(run: EnvRun) -> Outcome:
    ck = Checker()
    assert run.first is not None
    for call in run.first.calls:
        if call.failed:
            continue
        diff = first_difference(call.result_live, call.result_snapshot)
        ck.expect(
            diff is None,
            f"the result of {call.source} was modified after it was returned ({diff}; now vs then)",
            call=call.position,
        )
        diff = first_difference(call.args_live, call.args_snapshot)
        ck.expect(
            diff is None,
            f"{call.source} modified the action it was given ({diff}; after vs before)",
            call=call.position,
        )
    return ck.done()


@spec(
    "env.step_after_end",
    impact="reproducibility",
    statement="Stepping an episode past its end (which Gymnasium leaves undefined) leaves nothing behind: reset(seed=s) afterwards returns what a fresh env's reset(seed=s) returns.",
    rationale="Vectorizers and buggy loops do step ended episodes; an env whose state leaks through the next seeded reset turns one stray step into an irreproducible run.",
    families=FAMILIES,
    needs=("usable",),
)
def env_step_after_end(run: EnvRun) -> Outcome:
    ck = Checker()
    info = run.after_end
    if "error" in info:
        ck.fail(f"probing a step past the end failed: {info['error']}")
        return ck.done()
    if not info.get("ended"):
        ck.requires("an episode end", False, info.get("no_end", "no episode ended"))
        return ck.done()
    ck.requires("an episode end", True)
    ck.expect(
        info.get("difference") is None,
        f"after a step past the end ({info.get('step_after_end')}), reset(seed={run.case.seed}) returned something else "
        f"than a fresh env's reset(seed={run.case.seed}) ({info.get('difference')})",
    )
    return ck.done()


@spec(
    "env.stack_equivalence",
    impact="training-data",
    statement="Through every installed stack (Gymnasium Sync/Async vector envs in each autoreset mode, SB3 Dummy/Subproc VecEnvs, TorchRL GymWrapper/SerialEnv/ParallelEnv), the transitions extracted with that stack's documented recipe equal the bare env's, from the seeds the stack gave each copy and the actions the stack delivered; a stack that cannot take the env (it rejects it when built or at its first reset, or needs NumPy and the env is torch-native) is named as not run, and the spec passes when every stack that took the env agrees.",
    rationale="An env that works bare can break inside a vectorizer: shared class state between copies, observations the stack converts, info keys that collide with the stack's own, flags the stack re-encodes.",
    families=FAMILIES,
    expensive=True,
    needs=("usable",),
    # its cases drive the bare env once, as far as the stacks drive it (EnvCase.stacks_only)
    scenario="stacks",
    # its examples drive the stacks and replay the bare env themselves (stack_pool): half of a
    # long-episode env's check, run beside the other specs where a second worker is free
    own_worker=True,
    # the stacks are driven on the search's first STACK_EXAMPLES examples only, the episode-end
    # edge case and STACK_EXAMPLES - 1 drawn ones (and on every later one once a stack disagreed,
    # which the shrink of the failure draws): a drawn example after them would check nothing here
    max_examples=STACK_EXAMPLES - 1,
)
def env_stack_equivalence(run: EnvRun) -> Outcome:
    ck = Checker()
    agreed: list[str] = []
    disagreed: list[str] = []
    #: stacks that agreed, with a copy through which no episode ended in this example
    no_end: list[str] = []
    not_run = stacks_not_run(run.system)
    results = run.stacks()
    if run.stacks_left_out:
        # the search drove the stacks on its first examples (stack_pool.take_stack_example)
        ck.note(
            f"the stacks were driven on the search's first {STACK_EXAMPLES} examples (the episode-end case "
            "first), the others were checked bare by the other specs"
        )
        return ck.done()
    ck.count("examples driven through the stacks", 1)
    for result in results:
        if result.incompatible is not None:
            not_run.append(f"{result.stack} not run: {result.incompatible}")
        elif result.unreadable is not None:
            not_run.append(f"{result.stack} not run (rlconform cannot read its output: {result.unreadable})")
        elif result.cannot_wrap is not None:
            not_run.append(f"{result.stack} not run: it cannot wrap this env ({result.cannot_wrap})")
        elif result.hung is not None:
            not_run.append(f"{result.stack} not compared: {result.hung} (the env answered every call bare)")
        elif result.error is not None:
            ck.outcome.checked += 1
            disagreed.append(f"{result.stack}: {result.error}")
        else:
            if result.close_hung is not None:
                ck.note(f"{result.stack}: {result.close_hung}, after every call had answered")
            problem = _stack_difference(ck, result)
            (agreed if problem is None else disagreed).append(problem or result.stack)
            ck.count(f"episode ends crossed through {result.stack}", sum(_ends(slots) for slots, _ in result.pairs))
            if problem is None and not all(_ends(slots) for slots, _ in result.pairs):
                no_end.append(result.stack)
    for line in not_run:
        ck.note(line)
    if run.case.to_end and agreed:
        # the example driven to the ends: the ends are what this spec is for. It saw them where a
        # stack's copies crossed one; a stack that seeds its copies otherwise than the bare env
        # (TorchRL's chained seeds) may end them later than the steps driven, and is named
        why = f" ({run.ends_missed})" if run.ends_missed else ""
        if run.stack_steps < run.horizon:
            driven = f"the episode-end example, whose episodes could not end{why}, so the stacks drove it {run.stack_steps} steps"
        else:
            driven = f"the example driven {run.horizon} steps to the ends{why}"
        missed = f"no episode end crossed a copy of {', '.join(no_end)} in {driven}"
        if no_end and len(no_end) < len(agreed):
            ck.note(missed)
        ck.requires("an episode end crossed through a stack", len(no_end) < len(agreed), missed)
    if agreed and not no_end:
        ck.note("each copy crossed an episode end through every stack that agreed")
    if disagreed:
        exercised = len(agreed) + len(disagreed)
        others = [f"agree: {', '.join(agreed)}" if agreed else "", *not_run]
        ck.fail(
            f"{len(disagreed)} of {exercised} stacks that ran the env differ from the bare env: "
            + "; ".join(disagreed)
            + "".join(f" | {line}" for line in others if line)
        )
    elif agreed:
        ck.note(f"the same transitions as the bare env through {', '.join(agreed)}")
    return ck.done()


def _ends(slots: list[Any]) -> int:
    return sum(1 for slot in slots if slot.terminated or slot.truncated)


def _stack_difference(ck: Checker, result: StackResult) -> str | None:
    """The first transition where the stack's differs from the bare env's, as one line naming
    the stack; every compared transition counts as a checked fact."""
    problem, checked = stack_difference(result)
    ck.outcome.checked += checked
    return problem


@spec(
    "env.wrapper_layers",
    impact="training-data",
    statement="Each wrapper layer of the env (each object reached through .env) answers every reset and step consistently with the layer it wraps, during that call: it keeps the info keys that layer returned, never hides an episode end, sets terminated only where that layer did (except layers documented to, such as EpisodicLifeEnv), truncates at one step count (its limit, when it keeps one in max_episode_steps or a similar attribute) and returns each step's own reward, not the previous step's.",
    rationale="A hand-written time limit that sets terminated makes a learner bootstrap nothing from states that are not terminal; a wrapper that drops the reset info or delays the reward corrupts what the agent learns from, and a check of the whole env alone compares it with nothing.",
    families=FAMILIES,
    needs=("usable",),
)
def env_wrapper_layers(run: EnvRun) -> Outcome:
    ck = Checker()
    layers = run.layers()
    if layers is None:
        return ck.not_applicable("the env has no wrapper layers (nothing with .env around it)")
    problems, compared = layer_problems(layers)
    ck.outcome.checked += compared
    for problem in problems:
        ck.fail(problem)
    if not problems:
        ck.note(f"layers {' over '.join(layers.names)} compared over {compared} calls")
    return ck.done()


@spec(
    "env.edge_actions",
    impact="api-contract",
    statement="The env accepts every action at the edges of its own action space: a Box's low and high bounds (each alone and alternating, a large finite value standing for an infinite bound) and the midpoint, every Discrete value (from its start; the first and last 32 of a larger space), each MultiDiscrete component's least and greatest value, MultiBinary's all zeros and all ones, and Dict and Tuple spaces combined leaf by leaf: each step with one returns instead of raising.",
    rationale="Policies squash and clip to the bounds (a tanh policy saturates at high, a clipped Gaussian lands on it) and a categorical policy picks the last value; sampled actions almost never hit a Box bound, so an env that rejects its space's own edges (an open interval, an off-by-one range check) passes a random test and crashes in training.",
    families=FAMILIES,
    needs=("usable",),
)
def env_edge_actions(run: EnvRun) -> Outcome:
    ck = Checker()
    probe = run.edges()
    if not probe["edges"]:
        return ck.not_applicable(
            f"rlconform knows no edges of the action space {run.action_space!r} "
            "(Box, Discrete, MultiDiscrete, MultiBinary and Dict/Tuple of them)"
        )
    if "error" in probe:
        ck.note(f"edge actions not tried in an example: building or resetting the env failed ({probe['error']})")
        return ck.done()
    rejected = {label: (action, error) for label, action, error in probe["rejected"]}
    for label, _ in probe["edges"][: probe["tried"]]:
        if label in rejected:
            action, error = rejected[label]
            ck.fail(f"env.step({_short(action)}), {label} of {run.action_space}, {error}")
        else:
            ck.expect(True, "")
    return ck.done()


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


@spec(
    "env.seed_stream",
    impact="reproducibility",
    statement=f"After reset(seed=s), a reset without a seed continues the random stream s started instead of reseeding: on a fresh env, the episode after reset(seed=s) run to its end and a reset without a seed is the same for the same s and, when the first episodes of {STREAM_SEEDS} seeds all differ (in their reset observation and first {STREAM_PREFIX} steps under the same actions), not the same episode for all of them. An env whose seed changes nothing observable cannot be told from one that reseeds with a constant, and passes.",
    rationale="Training seeds an env once and resets it without a seed ever after; an env that reseeds itself with a constant on those resets (super().reset(seed=0) when seed is None) replays one episode forever, whatever seed the run was given, and a seed sweep trains every seed on the same data.",
    families=FAMILIES,
    expensive=True,
    needs=("usable",),
)
def env_seed_stream(run: EnvRun) -> Outcome:
    ck = Checker()
    probe = run.stream()
    if "error" in probe:
        ck.note(f"seed stream not probed in an example: driving the env failed ({probe['error']})")
        return ck.done()
    if "no_end" in probe:
        ck.requires("an episode end", False, probe["no_end"])
        return ck.done()
    ck.requires("an episode end", True)
    firsts, seconds = probe["firsts"], probe["seconds"]
    seeds = probe["seeds"]
    again_first, again_second = probe["again"]
    if first_difference(again_first, firsts[0]) is None:
        diff = first_difference(again_second, seconds[0])
        ck.expect(
            diff is None,
            lambda: (
                f"after reset(seed={seeds[0]}), its first episode and a reset without a seed, a second fresh env "
                f"began another second episode than the first env ({diff}): the stream seed {seeds[0]} started "
                "was not continued"
            ),
        )
    if distinct(firsts) < len(firsts):
        ck.expect(True, "")
        ck.note(
            f"in an example, the first episodes after {len(seeds)} seeds were not all different: too little "
            "randomness there to tell a reset that continues the stream from one that reseeds with a constant"
        )
        return ck.done()
    ck.expect(
        distinct(seconds) > 1,
        lambda: (
            f"after reset(seed=s) for s in {seeds}, whose first episodes all differ, each first episode run to its "
            f"end and a reset without a seed, every second episode was the same (reset observation "
            f"{_short(seconds[0][0])}, and its first {len(seconds[0]) - 1} steps under the same actions): the env "
            "reseeds itself with a constant on a reset without a seed, instead of continuing the stream "
            "reset(seed=s) started"
        ),
    )
    return ck.done()
