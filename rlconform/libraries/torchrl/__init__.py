"""TorchRL: envs driven with TensorDicts (family ``torchrl.EnvBase``), torch-native envs behind
GymWrapper, collectors (``torchrl.collector``), replay buffers (``torchrl.ReplayBuffer``) and return estimators
(``torchrl.ValueEstimator``)."""

from rlconform.core.catalog import Library

LIBRARY = Library(
    name="torchrl",
    title="TorchRL envs, transforms, collectors, replay buffers and return estimators",
    modules=(
        "rlconform.libraries.torchrl.collectors",
        "rlconform.libraries.torchrl.replay_family",
        "rlconform.libraries.torchrl.replay_specs",
        "rlconform.libraries.torchrl.value_family",
        "rlconform.libraries.torchrl.value_specs",
        "rlconform.libraries.torchrl.env_family",
        "rlconform.libraries.torchrl.env_systems",
        "rlconform.libraries.torchrl.native",
        "rlconform.libraries.torchrl.native_specs",
        "rlconform.libraries.torchrl.device_specs",
        "rlconform.libraries.torchrl.planted_aliasing",
        "rlconform.libraries.torchrl.transform_values",
        "rlconform.libraries.torchrl.planted_transform_values",
    ),
)
