"""Family ``torchrl.ValueEstimator``: the family, and the bundled estimators as systems (TorchRL's
GAE, TD(0), TD(1), TD(lambda) and V-trace, its functional GAE, rlconform's reference estimator and
the planted bugs, with ``MUST_FAIL``).

TorchRL documents two approximations: ``GAE(auto_reset_env=True)`` bootstraps a time-out from
V(s_t), and ``shifted=True`` drops the samples an internal truncation displaces past its budget;
the systems that take them are "known" in ``estimator.exact_targets``, citing TorchRL's
documentation.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from rlconform.core.family import FactoryShape, is_instance_of
from rlconform.core.system import Capabilities, EnvFn, Probed, System, SystemTable
from rlconform.core.user import returned_type, spawns_workers
from rlconform.envs.plan import Op
from rlconform.envs.stamp import Stamp
from rlconform.libraries.torchrl.frames import (
    DrivenObjectFamily,
    note_environment_error,
)
from rlconform.libraries.torchrl.value_case import (
    FAMILY_NAME,
    ROLE,
    EstimatorCase,
    estimator_cases,
    estimator_edge_cases,
)
from rlconform.libraries.torchrl.value_readings import readings

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from rlconform.envs.driver import Driver


#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()


ESTIMATOR_CLASSES = ("torchrl.objectives.value.advantages.ValueEstimatorBase",)


def _harness(factory: Callable[[Any], Any]) -> Callable[[Sequence[EnvFn]], Any]:
    def build(env_fns: Sequence[EnvFn]) -> Any:
        import torchrl.collectors  # noqa: F401  (imported here, outside the calls' deadline)

        from rlconform.libraries.torchrl.value_torch import EstimatorHarness

        return EstimatorHarness(list(env_fns), factory)

    return build


class ValueEstimatorFamily(DrivenObjectFamily):
    """Family ``torchrl.ValueEstimator``."""

    name = FAMILY_NAME
    api = "torchrl.ValueEstimator"
    factory_signature = "(value_network: TensorDictModule) -> torchrl.objectives.value.ValueEstimatorBase"
    factory_argument = "value_network"
    quiet_loggers = ("torchrl",)
    claimed_classes = ESTIMATOR_CLASSES
    factory_shape = FactoryShape(
        returns=ESTIMATOR_CLASSES,
        return_names=("GAE", "TD0Estimator", "TD1Estimator", "TDLambdaEstimator", "VTrace"),
        takes=("tensordict.nn.common.TensorDictModuleBase", "tensordict.nn.common.TensorDictModule"),
    )

    def cases(self, system: System, scenario: str) -> SearchStrategy[Any]:
        return estimator_cases(system)

    def boundary_cases(self, system: System, scenario: str) -> list[Any]:
        return estimator_edge_cases(system) if scenario == "standard" else []

    def execute(self, driver: Driver, obj: Any, op: Op) -> None:
        """Build the estimator and the collector, then hand the estimator every batch."""
        case = driver.case
        if not isinstance(case, EstimatorCase):
            return
        record = driver.call(
            op, f"estimator = make(value_network); collector = {case.collector_source()}", obj.construct, (case,)
        )
        record.extra[ROLE] = "construct"
        if record.failed:
            note_environment_error(driver, record)
            return
        for _ in range(case.batches + 1):
            record = driver.call(op, "batch = next(iter(collector)); estimator(batch.clone())", obj.next_batch, (case,))
            if record.failed or record.result_live is None:
                record.extra[ROLE] = "end" if not record.failed else "batch"
                return
            record.extra[ROLE] = "batch"

    # ------------------------------------------------------------ the user API
    def check_factory(self, signature: inspect.Signature) -> None:
        signature.bind(object())

    def claims(self, obj: Any) -> bool:
        return is_instance_of(obj, ESTIMATOR_CLASSES)

    #: the FINDINGS rows of the bundled estimators' defects
    findings = {
        ("torchrl.*.shifted*", "estimator.advantage"): "V1",
        ("torchrl.*.shifted*", "estimator.value_target"): "V1",
        ("torchrl.GAE.auto_reset_env", "estimator.advantage"): "V2",
        ("torchrl.GAE.auto_reset_env", "estimator.value_target"): "V2",
        # the same defects, told as the documented approximations they are (known)
        ("torchrl.*.shifted*", "estimator.exact_targets"): "V1",
        ("torchrl.GAE.auto_reset_env", "estimator.exact_targets"): "V2",
    }

    def library_systems(self, run: Any) -> list[str]:
        """The bundled TorchRL estimator a user's estimator is (or derives from), with the
        switches it declares: most specific first (e.g. torchrl.GAE.shifted.not_vectorized, then
        torchrl.GAE.shifted)."""
        declared = readings(run).declared if isinstance(getattr(run, "case", None), EstimatorCase) else None
        if declared is None or declared.library_class is None:
            return []
        switches = [s for s, on in (("shifted", declared.shifted), ("auto_reset_env", declared.auto_reset_env)) if on]
        base = ".".join(["torchrl", declared.library_class, *switches])
        return [base + ".not_vectorized", base] if not declared.vectorized else [base]

    def built_from_library_classes(self, run: Any) -> bool:
        if not isinstance(getattr(run, "case", None), EstimatorCase):
            return False
        declared = readings(run).declared
        return declared is not None and declared.library_own

    def user_system(self, fn: Callable[..., Any], reference: str, **options: Any) -> System:
        return self.user_system_of(
            reference,
            title=f"{reference}(value_network) (your return estimator)",
            build=_harness(fn),
            capabilities=_CAPS,
            description="a return estimator, checked on collector output against returns computed from the env's log",
        )

    def probe_factory(self, system: System) -> Probed:
        """Build the estimator once around the value network: a factory that raises, or returns
        something that is no ValueEstimatorBase, is bad input."""

        def build() -> Any:
            from rlconform.libraries.torchrl.value_torch import make_value_network

            harness = system.build([])
            return harness.factory(make_value_network())

        spawned = spawns_workers(system, build, ("forward",), returned_type(self.factory_signature), close=_no_close)
        return Probed(spawned, system.capabilities)

    def about_case(self, system: System, case: Any) -> str | None:
        if not isinstance(case, EstimatorCase):
            return None
        return (
            f"Estimator: {system.title}, built around a linear value network of the observation\n"
            f"(make_value_network), fed the batches of\n{case.collector_source()}\n"
            "with env_fns[i] = functools.partial(make_reference_env, script, i)."
        )

    def print_run(self, run: Any, case: Any, stream: TextIO) -> None:
        print(f"system: {run.system.id} ({run.system.title})", file=stream)
        if run.build_error:
            print(f"build error: {run.build_error}", file=stream)
        found = readings(run)
        if found.declared is not None:
            print(f"declared: {found.declared}", file=stream)
        for number, reading in enumerate(found.batches):
            print(f"batch {number}: shape {reading.shape}", file=stream)
            n, steps = reading.shape
            for i in range(n):
                frames = reading.frames[i * steps : (i + 1) * steps]
                print(f"  sub-env {i}: " + " | ".join(_frame_text(f) for f in frames), file=stream)
                if reading.advantage is not None and reading.value_target is not None:
                    print(f"    advantage:    {_numbers(reading.advantage[i])}", file=stream)
                    print(f"    value_target: {_numbers(reading.value_target[i])}", file=stream)
        if found.failed is not None:
            print(f"{found.failed.source} raised {found.failed.error_type}: {found.failed.error_message}", file=stream)


def _no_close(obj: Any) -> None:
    """An estimator holds nothing to close."""


def _frame_text(frame: Any) -> str:
    obs = frame.obs.short() if isinstance(frame.obs, Stamp) else "?"
    flags = "T" if frame.terminated else ""
    flags += "t" if frame.truncated else ""
    return f"{obs}{' ' + flags if flags else ''}"


def _numbers(values: Sequence[float]) -> str:
    return " ".join(f"{v:8.4f}" for v in values)


FAMILY = ValueEstimatorFamily()


# --------------------------------------------------------------------------------- systems

_REQUIRES = ("torchrl", "tensordict", "gymnasium")
_CAPS = Capabilities(
    min_envs=1,
    max_envs=3,
    notes=(
        "Box float32 observations and a Discrete action; batches from a Collector over GymWrapper/SerialEnv; "
        "a linear value network of the observation",
    ),
)
GAMMA = 0.9
LMBDA = 0.8

_SHIFTED_KNOWN = (
    "estimator.exact_targets",
    "documented (TorchRL's value estimators, shifted=True): the samples an internal truncation displaces past "
    "T + shifted_budget are masked by shifted_valid, so the returns of the retained ones stop at the last retained sample",
)
_AUTO_RESET_KNOWN = (
    "estimator.exact_targets",
    "documented (torchrl.objectives.value.GAE, auto_reset_env=True): a truncated episode is bootstrapped from "
    "V(s_t) instead of V(final observation)",
)


def _torchrl(class_name: str, **kwargs: Any) -> Callable[[Any], Any]:
    def make(value_network: Any) -> Any:
        import torchrl.objectives.value as value

        return getattr(value, class_name)(value_network=value_network, **kwargs)

    return make


def _register(system_id: str, title: str, factory: Callable[[Any], Any], **kwargs: Any) -> None:
    SYSTEMS.add(
        System(
            id=system_id,
            family=FAMILY_NAME,
            title=title,
            build=_harness(factory),
            source=title,
            requires=_REQUIRES,
            capabilities=_CAPS,
            **kwargs,
        )
    )


for _name, _cls, _kwargs, _known in (
    ("GAE", "GAE", {"gamma": GAMMA, "lmbda": LMBDA}, ()),
    ("GAE.not_vectorized", "GAE", {"gamma": GAMMA, "lmbda": LMBDA, "vectorized": False}, ()),
    ("GAE.shifted", "GAE", {"gamma": GAMMA, "lmbda": LMBDA, "shifted": True}, (_SHIFTED_KNOWN,)),
    (
        "GAE.shifted.not_vectorized",
        "GAE",
        {"gamma": GAMMA, "lmbda": LMBDA, "shifted": True, "vectorized": False},
        (_SHIFTED_KNOWN,),
    ),
    ("GAE.auto_reset_env", "GAE", {"gamma": GAMMA, "lmbda": LMBDA, "auto_reset_env": True}, (_AUTO_RESET_KNOWN,)),
    ("TD0Estimator", "TD0Estimator", {"gamma": GAMMA}, ()),
    ("TD0Estimator.shifted", "TD0Estimator", {"gamma": GAMMA, "shifted": True}, (_SHIFTED_KNOWN,)),
    ("TD1Estimator", "TD1Estimator", {"gamma": GAMMA}, ()),
    ("TDLambdaEstimator", "TDLambdaEstimator", {"gamma": GAMMA, "lmbda": LMBDA}, ()),
    (
        "TDLambdaEstimator.not_vectorized",
        "TDLambdaEstimator",
        {"gamma": GAMMA, "lmbda": LMBDA, "vectorized": False},
        (),
    ),
    (
        "TDLambdaEstimator.shifted",
        "TDLambdaEstimator",
        {"gamma": GAMMA, "lmbda": LMBDA, "shifted": True},
        (_SHIFTED_KNOWN,),
    ),
):
    _args = ", ".join(f"{k}={v!r}" for k, v in _kwargs.items())
    _register(
        f"torchrl.{_name}",
        f"{_cls}(value_network=value_net, {_args})",
        _torchrl(_cls, **_kwargs),
        known_violations=_known,
    )


def _vtrace(value_network: Any) -> Any:
    from torchrl.objectives.value import VTrace

    from rlconform.libraries.torchrl.value_torch import make_actor

    return VTrace(gamma=GAMMA, value_network=value_network, actor_network=make_actor())


# VTrace needs the behaviour policy's log-probabilities: the harness writes its own actor's, so the
# batch is on-policy (every ratio 1) and V-trace's targets are the lambda = 1 returns
_register(
    "torchrl.VTrace",
    f"VTrace(gamma={GAMMA}, value_network=value_net, actor_network=actor), on-policy (behaviour = actor)",
    _vtrace,
)


def _functional(vectorized: bool, pass_terminated: bool = True) -> Callable[[Any], Any]:
    def make(value_network: Any) -> Any:
        from rlconform.libraries.torchrl.value_torch import FunctionalGAE

        return FunctionalGAE(
            gamma=GAMMA,
            lmbda=LMBDA,
            value_network=value_network,
            vectorized=vectorized,
            pass_terminated=pass_terminated,
        )

    return make


#: the functional API takes ``terminated`` to be ``done`` when it is left out (its docstring)
_TERMINATED_OMITTED_KNOWN = tuple(
    (
        spec_id,
        "documented (torchrl.objectives.value.functional, generalized_advantage_estimate: terminated "
        "'Defaults to done if not provided'): a time-out is then not bootstrapped",
    )
    for spec_id in ("estimator.advantage", "estimator.value_target")
)
_FUNCTIONAL_CALL = "(gamma, lmbda, V(obs), V(next obs), reward, done{terminated})"
for _fn, _vectorized in (("generalized_advantage_estimate", False), ("vec_generalized_advantage_estimate", True)):
    _register(
        f"torchrl.functional.{_fn}",
        f"torchrl.objectives.value.functional.{_fn}{_FUNCTIONAL_CALL.format(terminated=', terminated')}",
        _functional(_vectorized),
    )
_register(
    "torchrl.functional.vec_generalized_advantage_estimate.terminated_omitted",
    "torchrl.objectives.value.functional.vec_generalized_advantage_estimate"
    f"{_FUNCTIONAL_CALL.format(terminated='')}: terminated left out, so taken to be done",
    _functional(True, pass_terminated=False),
    known_violations=_TERMINATED_OMITTED_KNOWN,
)


def _own(defect: str = "", dtype: str = "float32", average_gae: bool = False) -> Callable[[Any], Any]:
    def make(value_network: Any) -> Any:
        import torch

        from rlconform.libraries.torchrl.value_torch import PlainGAE

        return PlainGAE(
            gamma=GAMMA,
            lmbda=LMBDA,
            value_network=value_network,
            defect=defect,
            dtype=getattr(torch, dtype),
            average_gae=average_gae,
        )

    return make


_register(
    "reference.torchrl.ValueEstimator",
    f"PlainGAE(gamma={GAMMA}, lmbda={LMBDA}): GAE as a loop over each sub-env's frames",
    _own(),
    kind="reference",
)
_register(
    "reference.torchrl.ValueEstimator.float64",
    f"PlainGAE(gamma={GAMMA}, lmbda={LMBDA}) computing in float64 (an innocent variant)",
    _own(dtype="float64"),
    kind="reference",
)

#: planted bug -> (what it does, the exact specs it fails)
PLANTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "bootstraps_terminations": ("adds gamma * V(terminal observation) at a termination", ()),
    "done_as_terminated": ("reads done as terminated: a time-out is not bootstrapped", ()),
    "ignores_done": ("runs the trace on across episode ends", ("estimator.no_cross_episode",)),
    "mixes_sub_envs": ("flattens the [envs, time] batch into one sequence", ("estimator.no_cross_env",)),
    "lambda_without_gamma": ("decays the trace by lambda where gamma*lambda is due", ()),
}
for _defect, (_what, _extra) in PLANTS.items():
    _register(
        f"planted.torchrl.ValueEstimator.{''.join(p.title() for p in _defect.split('_'))}",
        f"PlainGAE that {_what}",
        _own(_defect),
        kind="planted",
        plants=("estimator.advantage", "estimator.value_target", *_extra),
    )

# a user's own estimator that takes TorchRL's documented approximation (a time-out bootstrapped
# from V(s_t)) and declares it: its targets follow the approximation exactly, and
# estimator.exact_targets reports the bias
_register(
    "planted.torchrl.ValueEstimator.ValueAtTruncation",
    "PlainGAE that bootstraps a time-out from V(s_t) and declares auto_reset_env=True",
    _own("value_at_truncation"),
    kind="planted",
    plants=("estimator.exact_targets",),
)

# standardized advantages (declared average_gae=True, as GAE does) over a trace that runs on across
# episode ends: the advantage fails against the standardized exact one, and the leak shows in the
# value target, which the cross specs compare where the advantage is standardized
_STANDARDIZED_PLANT = (
    "estimator.advantage",
    "estimator.value_target",
    "estimator.no_cross_episode",
)
_register(
    "planted.torchrl.ValueEstimator.IgnoresDoneStandardized",
    "PlainGAE that runs the trace on across episode ends and standardizes its advantages (average_gae=True)",
    _own("ignores_done", average_gae=True),
    kind="planted",
    plants=_STANDARDIZED_PLANT,
)

#: the exact specs each planted bug fails (tests/specs/test_specificity.py)
MUST_FAIL: dict[str, frozenset[str]] = {
    f"planted.torchrl.ValueEstimator.{''.join(p.title() for p in _defect.split('_'))}": frozenset(
        ("estimator.advantage", "estimator.value_target", *_extra)
    )
    for _defect, (_what, _extra) in PLANTS.items()
} | {
    "planted.torchrl.ValueEstimator.ValueAtTruncation": frozenset(("estimator.exact_targets",)),
    "planted.torchrl.ValueEstimator.IgnoresDoneStandardized": frozenset(_STANDARDIZED_PLANT),
}
