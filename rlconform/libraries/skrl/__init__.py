"""skrl: what its on-policy agents store and compute from an Isaac Lab env (family ``skrl.Agent``).

Isaac Lab's workflows train on skrl too; its PPO keeps terminated and truncated apart in its memory
and computes GAE with ``time_limit_bootstrap``. The family hands a user's agent factory rlconform's
decodable torch env through skrl's own Isaac Lab wrapper, trains it with skrl's
``SequentialTrainer`` for one rollout, and checks the memory against the env's log.
"""

from rlconform.core.catalog import Library

LIBRARY = Library(
    name="skrl",
    title="skrl's agents over Isaac Lab's env contract: what they store and the returns they compute",
    modules=("rlconform.libraries.skrl.agent_family",),
    # its systems need skrl (the learner specs are rlconform.specs.learner, shared with RSL-RL)
    modules_when_importable={"skrl": ("rlconform.libraries.skrl.agent_systems",)},
)
