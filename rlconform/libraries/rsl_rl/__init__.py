"""RSL-RL: what its on-policy runner stores and computes from an env (family ``rsl_rl.Runner``).

Isaac Lab's workflows train on RSL-RL; its PPO bootstraps a time-out with
``values * extras["time_outs"]`` and computes GAE over its rollout storage. The family hands a
user's runner factory rlconform's decodable torch env in RSL-RL's VecEnv protocol and checks what
the runner's own collection stored against the env's log.
"""

from rlconform.core.catalog import Library

LIBRARY = Library(
    name="rsl_rl",
    title="RSL-RL's on-policy runner: what it stores and the returns it computes",
    modules=("rlconform.libraries.rsl_rl.runner_family",),
    # its systems need RSL-RL (and the torch it brings): without it the family is listed
    # and the catalog names the modules it did not load
    # (the learner specs are rlconform.specs.learner, shared with skrl's agents)
    modules_when_importable={"rsl_rl": ("rlconform.libraries.rsl_rl.runner_systems",)},
)
