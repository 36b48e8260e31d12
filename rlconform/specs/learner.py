"""The specs of what an on-policy learner stores and computes from rlconform's torch env
(``--api rsl_rl.Runner``, ``--api skrl.Agent``): its storage, its returns and advantages, and how
its time-out bootstrap departs from the exact one.

The truth is the env's log (:class:`rlconform.envs.torch_stamp.StepLog`): the observation each
step started from, the action sent, the reward, whether it terminated or timed out, and the row it
reached. The references are rlconform's own float64 code over that log and the learner's own
values (V(s_t) as its critic computed them while collecting), with the time-out bootstrap the
learner declares (:attr:`rlconform.envs.learner_run.StorageFacts.bootstrap`):

* :func:`recipe_rewards`: the env's rewards with the time-out bootstrap the learner declares:
  from V(s_t) (RSL-RL, ``algorithms/ppo.py:155-160``), from V(terminal observation), or none
  (skrl's ``time_limit_bootstrap=False``): what ``learner.storage`` holds the stored rewards to;
* :func:`stored_returns`: GAE with the learner's gamma and lambda over the rewards and values it
  stored, nothing carried across an episode end or between sub-envs: ``learner.returns`` (a wrong
  reward is the storage's failure, not the GAE's);
* :func:`recipe_returns` and :func:`exact_returns`: GAE over the recipe's rewards, and over the
  exact bootstrap ``r + gamma * V(terminal observation)``: ``learner.exact_targets`` names a
  documented departure of the recipe from the exact targets as the approximation it is ("known",
  with its bias measured on the run), and fails anything else. torch is imported by the functions that need it:
this module is loaded with every catalog.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rlconform.core.spec import Checker, Outcome, spec
from rlconform.specs.families import RSL_RL_RUNNER, SKRL_AGENT

if TYPE_CHECKING:
    from rlconform.envs.learner_run import LearnerRun, StorageFacts

STORAGE = "learner.storage"
RETURNS = "learner.returns"
EXACT = "learner.exact_targets"
#: failures shown per spec and example (the count of all of them is noted)
SHOW = 3


# --------------------------------------------------------------------------------- the truth
class Truth:
    """The env log's last ``steps`` steps as ``[steps, num_envs]`` tensors (rewards in float64)."""

    def __init__(self, run: LearnerRun, facts: StorageFacts) -> None:
        import torch

        steps = facts.returns.shape[0]
        log = run.log
        self.steps = steps
        self.obs_before = log.stacked("obs_before")[-steps:].to("cpu")
        self.actions = log.stacked("actions")[-steps:].to("cpu")
        self.rewards = log.stacked("rewards")[-steps:].to("cpu", torch.float64)
        if facts.shaped_rewards is not None:  # the learner's declared reward shaper (skrl's rewards_shaper)
            self.rewards = facts.shaped_rewards.to("cpu", torch.float64)
        self.terminated = log.stacked("terminated")[-steps:].to("cpu")
        self.truncated = log.stacked("truncated")[-steps:].to("cpu")
        self.done = self.terminated | self.truncated

    def where(self, t: int, e: int) -> str:
        _env, episode, step = (int(v) for v in self.obs_before[t, e, :3].tolist())
        return f"row {t} of sub-env {e} (episode {episode}, step {step} -> {step + 1})"

    def end(self, t: int, e: int) -> str:
        return "terminated" if self.terminated[t, e] else "timed out" if self.truncated[t, e] else "went on"


def gae(rewards: Any, values: Any, next_values_at_end: Any, done: Any, gamma: float, lam: float) -> Any:
    """Returns ``A + V`` of GAE over ``[steps, num_envs]`` (float64): nothing crosses an episode end
    (``done``) or a sub-env."""
    import torch

    steps = rewards.shape[0]
    returns = torch.zeros_like(rewards)
    advantage = torch.zeros_like(rewards[0])
    for t in reversed(range(steps)):
        next_values = next_values_at_end if t == steps - 1 else values[t + 1]
        going = (~done[t]).to(torch.float64)
        delta = rewards[t] + going * gamma * next_values - values[t]
        advantage = delta + going * gamma * lam * advantage
        returns[t] = advantage + values[t]
    return returns


def bootstrap_values(facts: StorageFacts, kind: str) -> Any:
    """The value a time-out is bootstrapped from, per row, as ``kind`` says."""
    if kind == "value_of_step":
        return facts.values
    if kind == "terminal":
        return facts.v_reached
    return facts.values * 0.0


def recipe_rewards(truth: Truth, facts: StorageFacts) -> Any:
    """The rewards the learner should store: the env's, plus ``gamma * V`` at a time-out where it
    bootstraps (its declared V)."""
    import torch

    bootstrap = bootstrap_values(facts, facts.bootstrap)
    return truth.rewards + facts.gamma * bootstrap * truth.truncated.to(torch.float64)


def recipe_returns(truth: Truth, facts: StorageFacts) -> Any:
    return gae(recipe_rewards(truth, facts), facts.values, facts.v_last, truth.done, facts.gamma, facts.lam)


def stored_returns(truth: Truth, facts: StorageFacts) -> Any:
    """GAE over the rewards and values the learner stored, ending its recursion where the episodes
    really ended: what its returns must be whatever its rewards hold (``learner.storage`` judges
    those)."""
    return gae(facts.rewards, facts.values, facts.v_last, truth.done, facts.gamma, facts.lam)


def exact_returns(truth: Truth, facts: StorageFacts) -> Any:
    import torch

    bootstrap = facts.gamma * facts.v_reached * truth.truncated.to(torch.float64)
    return gae(truth.rewards + bootstrap, facts.values, facts.v_last, truth.done, facts.gamma, facts.lam)


def close(actual: Any, expected: Any, scale: float = 1.0) -> Any:
    """Equal within float32 arithmetic over a rollout (the learners compute in float32)."""
    return (actual - expected).abs() <= 1e-4 * scale * (1.0 + expected.abs())


def standardized(advantages: Any) -> Any:
    """Standardization over the rollout as RSL-RL and skrl do it: unbiased std, plus 1e-8."""
    return (advantages - advantages.mean()) / (advantages.std() + 1e-8)


# --------------------------------------------------------------------------------- helpers
def _start(run: LearnerRun, spec_id: str) -> tuple[Checker, StorageFacts | None]:
    ck = Checker(spec_id)
    for name in ("learn_error", "read_error"):
        said = getattr(run, name)
        if said:
            ck.fail(f"{'learning' if name == 'learn_error' else 'reading the storage'} raised {said}")
    return ck, run.storage


def _each_bad(ck: Checker, good: Any, message: Callable[[int, int], str]) -> None:
    """One fact per (row, sub-env); the first :data:`SHOW` that do not hold are failures."""
    ck.outcome.checked += int(good.numel())
    bad = (~good).nonzero().tolist()
    for t, e in bad[:SHOW]:
        ck.fail(message(t, e), env=e)
    if len(bad) > SHOW:
        ck.note(f"{len(bad) - SHOW} more rows broke it (the first {SHOW} are shown)")


def _decoded(row: Any) -> str:
    _i, episode, step, echo, _salt = row.tolist()
    return f"(env {int(_i)}, episode {int(episode)}, step {int(step)}, echo {echo:.4g})"


# --------------------------------------------------------------------------------- the specs
@spec(
    STORAGE,
    statement=(
        "Row t of sub-env e of the learner's storage is that sub-env's t-th step of the rollout: the observation "
        "the step started from, the action the env was sent, the end exactly where the episode ended (terminated "
        "or timed out, each as such where the learner keeps them apart), and the env's reward (plus the learner's "
        "declared time-out bootstrap, only at a time-out)."
    ),
    rationale=(
        "Every update reads these rows: a storage that keeps the observation after the step, a done one step "
        "late, or a bootstrap added at a termination or from the next episode trains on transitions that never "
        "happened, with no error."
    ),
    impact="training-data",
    families=frozenset({RSL_RL_RUNNER, SKRL_AGENT}),
    needs=("usable",),
)
def check_storage(run: LearnerRun) -> Outcome:
    ck, facts = _start(run, STORAGE)
    if facts is None:
        return ck.done()
    truth = Truth(run, facts)
    if tuple(facts.observations.shape[:2]) != tuple(truth.obs_before.shape[:2]):
        ck.fail(
            f"the storage holds {tuple(facts.observations.shape[:2])} (steps, sub-envs) of observations; the "
            f"rollout was {tuple(truth.obs_before.shape[:2])}"
        )
        return ck.done()
    _each_bad(
        ck,
        (facts.observations == truth.obs_before).all(dim=-1),
        lambda t, e: (
            f"{truth.where(t, e)}: the stored observation decodes to {_decoded(facts.observations[t, e])}, "
            f"but the step started from {_decoded(truth.obs_before[t, e])}"
        ),
    )
    if facts.actions.shape == truth.actions.shape:
        _each_bad(
            ck,
            (facts.actions == truth.actions).all(dim=-1),
            lambda t, e: (
                f"{truth.where(t, e)}: the stored action is {facts.actions[t, e].tolist()}, the env was sent "
                f"{truth.actions[t, e].tolist()}"
            ),
        )
    else:
        ck.fail(f"the stored actions have shape {tuple(facts.actions.shape)}; sent: {tuple(truth.actions.shape)}")
    _each_bad(
        ck,
        facts.dones == truth.done,
        lambda t, e: (
            f"{truth.where(t, e)}: stored as {'an end' if facts.dones[t, e] else 'no end'}, but the "
            f"episode {truth.end(t, e)} on that step"
        ),
    )
    if facts.terminated is not None and facts.truncated is not None:
        # a step both terminated and truncated (Isaac Lab sets both where a termination falls on the
        # time limit) is a termination: truncated counts only where terminated is not set
        _each_bad(
            ck,
            (facts.terminated == truth.terminated) & ((facts.truncated & ~facts.terminated) == truth.truncated),
            lambda t, e: (
                f"{truth.where(t, e)}: stored terminated={bool(facts.terminated[t, e])}, "
                f"truncated={bool(facts.truncated[t, e])}, but the episode {truth.end(t, e)} on that step"
            ),
        )
    expected = recipe_rewards(truth, facts)

    def reward_message(t: int, e: int) -> str:
        kind = truth.end(t, e)
        stored = facts.rewards[t, e]
        why = ""
        candidates = {
            "gamma * V(s_t), the step's own observation": facts.values[t, e],
            "gamma * V(the next episode's first observation)": facts.values[t + 1, e] if t + 1 < truth.steps else None,
            "gamma * V(terminal observation)": facts.v_reached[t, e],
        }
        for what, value in candidates.items():
            if value is not None and bool(close(stored, truth.rewards[t, e] + facts.gamma * value)):
                why = f": it holds the time-out bootstrap {what}"
                break
        if kind == "terminated" and why:
            why += " where the episode terminated (a termination bootstrapped as a time-out)"
        elif kind == "timed out" and bool(close(stored, truth.rewards[t, e])) and facts.bootstrap != "none":
            why = ": the time-out was not bootstrapped"
        return (
            f"{truth.where(t, e)} ({kind}): the stored reward is {float(stored):.6g}, expected "
            f"{float(expected[t, e]):.6g} (the env's {float(truth.rewards[t, e]):.6g}"
            + (
                f" + gamma * {_BOOTSTRAP_NAMES[facts.bootstrap]}, the declared time-out bootstrap"
                if truth.truncated[t, e] and facts.bootstrap != "none"
                else ""
            )
            + f"){why}"
        )

    _each_bad(ck, close(facts.rewards, expected), reward_message)
    return ck.done()


def _end_to_end(rewards: Any, facts: StorageFacts, done: Any) -> Any:
    """GAE over the columns laid end to end: sub-env e's last row bootstraps from sub-env e+1's
    first value, and the recursion runs on across them."""
    steps, n = rewards.shape
    flat_r, flat_v, flat_d = rewards.T.reshape(-1), facts.values.T.reshape(-1), done.T.reshape(-1)
    # gae() reads values[t + 1] as row t's next value: laid end to end, that is the next sub-env's first
    returns = gae(flat_r[:, None], flat_v[:, None], facts.v_last[-1:], flat_d[:, None], facts.gamma, facts.lam)
    return returns.reshape(n, steps).T


_BOOTSTRAP_NAMES = {"value_of_step": "V(s_t)", "terminal": "V(terminal observation)", "none": ""}


def _returns_diagnosis(truth: Truth, facts: StorageFacts) -> str:
    """Which wrong computation the stored returns are, where one fits them all."""
    import torch

    rewards = facts.rewards
    never = torch.zeros_like(truth.done)
    candidates = {
        "GAE carried across episode ends (dones ignored in the recursion)": gae(
            rewards, facts.values, facts.v_last, never, facts.gamma, facts.lam
        ),
        "GAE carried across time-outs into the next episode (only terminations end the recursion)": gae(
            rewards, facts.values, facts.v_last, truth.terminated, facts.gamma, facts.lam
        ),
        "GAE with gamma and lambda swapped": gae(
            rewards, facts.values, facts.v_last, truth.done, facts.lam, facts.gamma
        ),
        "GAE with the dones one step late": gae(
            rewards, facts.values, facts.v_last, torch.cat([never[:1], truth.done[:-1]]), facts.gamma, facts.lam
        ),
        "one GAE recursion over the sub-envs' rows laid end to end (a sub-env's last row bootstrapped from the "
        "next sub-env's first)": _end_to_end(rewards, facts, truth.done),
    }
    fits = [name for name, candidate in candidates.items() if bool(close(facts.returns, candidate, scale=10.0).all())]
    if not fits:
        return ""
    # a rollout with no termination cannot tell "dones ignored" from "time-outs ignored": both named
    told = f"; they are {fits[0]}"
    for name in fits[1:]:
        told += f", or equally {name} (this rollout cannot tell them apart)"
    return told


@spec(
    RETURNS,
    statement=(
        "The learner's returns are GAE with its own gamma and lambda over each sub-env's episodes, from the rewards "
        "and values it stored (learner.storage judges those), with nothing carried across an episode end (a "
        "time-out included) or between sub-envs; its advantages are those returns minus the values (standardized "
        "over the rollout or not)."
    ),
    rationale=(
        "The returns are the critic's targets and the advantages the policy gradient's weights: a return that "
        "accumulates the next episode's rewards, or another sub-env's, corrupts every update silently."
    ),
    impact="training-data",
    families=frozenset({RSL_RL_RUNNER, SKRL_AGENT}),
    needs=("usable",),
)
def check_returns(run: LearnerRun) -> Outcome:
    ck, facts = _start(run, RETURNS)
    if facts is None:
        return ck.done()
    truth = Truth(run, facts)
    if facts.returns.shape != truth.rewards.shape:
        ck.fail(
            f"the storage holds returns of shape {tuple(facts.returns.shape)}; the rollout was "
            f"{tuple(truth.rewards.shape)}"
        )
        return ck.done()
    expected = stored_returns(truth, facts)
    good = close(facts.returns, expected, scale=10.0)
    diagnosis = "" if bool(good.all()) else _returns_diagnosis(truth, facts)
    _each_bad(
        ck,
        good,
        lambda t, e: (
            f"{truth.where(t, e)}: the stored return is {float(facts.returns[t, e]):.6g}, GAE (gamma="
            f"{facts.gamma:g}, lambda={facts.lam:g}) over the episode gives {float(expected[t, e]):.6g}{diagnosis}"
        ),
    )
    raw = expected - facts.values
    forms = {"minus the values": raw, "minus the values, standardized over the rollout": standardized(raw)}
    ck.outcome.checked += int(raw.numel())
    if not any(bool(close(facts.advantages, form, scale=10.0).all()) for form in forms.values()):
        t, e = (~close(facts.advantages, raw, scale=10.0)).nonzero()[0].tolist()
        ck.fail(
            f"{truth.where(t, e)}: the stored advantage is {float(facts.advantages[t, e]):.6g}; the return minus the "
            f"value is {float(raw[t, e]):.6g} ({float(standardized(raw)[t, e]):.6g} standardized over the rollout)",
            env=e,
        )
    return ck.done()


@spec(
    EXACT,
    statement=(
        "The learner's returns are the exact GAE targets, a time-out bootstrapped from the value of the observation "
        "the episode ended on; a departure the learner's library documents is 'known', with its bias measured."
    ),
    rationale=(
        "RSL-RL has no terminal observation and bootstraps a time-out from V(s_t), the step's own observation; skrl "
        "bootstraps none unless told: documented approximations whose bias is measured on the run, never a silent "
        "pass; any other departure is a defect."
    ),
    impact="training-data",
    families=frozenset({RSL_RL_RUNNER, SKRL_AGENT}),
    needs=("usable",),
)
def check_exact_targets(run: LearnerRun) -> Outcome:
    ck, facts = _start(run, EXACT)
    if facts is None:
        return ck.done()
    truth = Truth(run, facts)
    if facts.returns.shape != truth.rewards.shape:
        return ck.done()  # learner.returns says it
    time_outs = int(truth.truncated.sum())
    ck.requires(
        "an episode that timed out within the rollout",
        time_outs > 0,
        f"no episode timed out within the rollout's {truth.steps} steps (time limit {run.case.max_episode_length})",
    )
    exact = exact_returns(truth, facts)
    recipe = recipe_returns(truth, facts)
    exact_ok = close(facts.returns, exact, scale=10.0)
    recipe_ok = close(facts.returns, recipe, scale=10.0)
    ck.outcome.checked += int(exact.numel())
    if bool(exact_ok.all()):
        return ck.done()
    if bool(recipe_ok.all()) and facts.documented is not None:
        off = ~exact_ok
        bias = (facts.returns - exact)[off]
        how = {"value_of_step": "bootstrapped from V(s_t)", "none": "not bootstrapped"}.get(facts.bootstrap, "")
        ck.approximation(
            facts.documented,
            f"{int(off.sum())} of {off.numel()} returns depart from the exact targets, downstream of {time_outs} "
            f"time-out(s) {how} instead of from V(terminal observation): bias mean {float(bias.mean()):+.4g}, max "
            f"|bias| {float(bias.abs().max()):.4g} (return units)",
        )
        return ck.done()
    bad = ~exact_ok if bool(recipe_ok.all()) else ~(exact_ok | recipe_ok)
    t, e = bad.nonzero()[0].tolist()
    ck.fail(
        f"{truth.where(t, e)}: the stored return {float(facts.returns[t, e]):.6g} is not the exact target "
        f"{float(exact[t, e]):.6g}"
        + ("" if facts.documented is None else f" nor the learner's documented recipe {float(recipe[t, e]):.6g}"),
        env=e,
    )
    return ck.done()
