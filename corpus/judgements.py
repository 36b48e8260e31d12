"""Every FAIL the corpus gives, judged by reading the library's source.

A judgement is one of three kinds, never "false positive" (a FAIL that is rlconform's fault is
fixed in rlconform, not recorded here):

* ``true positive``: the library does something its own documentation or contract says it must
  not, and training data or code relying on the contract is affected;
* ``documented behaviour``: the library documents doing exactly this (the spec states the stricter
  contract rlconform checks, and the finding cites the library's words);
* ``stack limitation``: the stack cannot take what it was given and says so in its own way.

``finding`` names the row of FINDINGS.md that gives the evidence (file and line of the library).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["true positive", "documented behaviour", "stack limitation"]


@dataclass(frozen=True)
class Judgement:
    kind: Kind
    finding: str
    reason: str


JUDGEMENTS: dict[tuple[str, str], Judgement] = {
    ("envpool_acrobot", "vector.observations_in_space"): Judgement(
        "documented behaviour",
        "P1",
        "envpool keeps observation_space and action_space as the single env's spaces for backward compatibility (GymnasiumEnvPoolMixin); every sub-env's observation is in single_observation_space; inherited from the bundled envpool pools",
    ),
    ("gym_async_no_shared_memory", "api.failed_call_no_side_effect"): Judgement(
        "true positive",
        "G2",
        "a wrong-size batch raises from zip(strict=True) only after the first sub-envs were stepped",
    ),
    ("gym_async_no_shared_memory", "lifecycle.responsive"): Judgement(
        "true positive",
        "G3",
        "a batch one action short reaches some workers and not others (step_async's zip); the next step returns the queued replies, a partial reset then fails and close() waits on a pipe with no timeout (the robustness edge case every search now tries first); inherited since issue 36: the hung case is replayed on the bundled AsyncVectorEnv, and its hang, told as a deadlock or as a missed deadline, is the same",
    ),
    ("gym_async_no_shared_memory", "seeding.reset_determinism"): Judgement(
        "true positive",
        "G4",
        "the worker clears its autoreset flag on reset only in the shared-memory branch (async_vector_env.py)",
    ),
    ("gym_async_no_shared_memory", "transitions.exact"): Judgement(
        "true positive",
        "G4",
        "the worker clears its autoreset flag on reset only in the shared-memory branch (async_vector_env.py): after a manual reset right after an episode ended, the next step resets again and discards the episode (the edge case every search now tries first)",
    ),
    ("gym_async_no_shared_memory", "counts.env_steps"): Judgement(
        "true positive",
        "G4",
        "the worker clears its autoreset flag on reset only in the shared-memory branch (async_vector_env.py): after a manual reset right after an episode ended, the next step resets again and discards the episode (the edge case every search now tries first)",
    ),
    ("gym_async_no_shared_memory", "continuity.no_discarded_episode"): Judgement(
        "true positive",
        "G4",
        "the worker clears its autoreset flag on reset only in the shared-memory branch (async_vector_env.py): after a manual reset right after an episode ended, the next step resets again and discards the episode (the edge case every search now tries first)",
    ),
    ("gym_async_no_shared_memory", "model.outputs_match"): Judgement(
        "true positive",
        "G4",
        "the worker clears its autoreset flag on reset only in the shared-memory branch (async_vector_env.py): after a manual reset right after an episode ended, the next step resets again and discards the episode (the edge case every search now tries first)",
    ),
    ("gym_clip_action", "aliasing.caller_arguments"): Judgement(
        "true positive",
        "G1",
        "SyncVectorEnv.reset pops reset_mask from the caller's options (gymnasium/vector/sync_vector_env.py:221)",
    ),
    ("gym_clip_reward", "aliasing.caller_arguments"): Judgement(
        "true positive",
        "G1",
        "SyncVectorEnv.reset pops reset_mask from the caller's options (gymnasium/vector/sync_vector_env.py:221)",
    ),
    ("gym_clip_reward", "api.failed_call_no_side_effect"): Judgement(
        "true positive",
        "G2",
        "a wrong-size batch raises from zip(strict=True) only after the first sub-envs were stepped",
    ),
    ("gym_clip_reward_per_env", "aliasing.caller_arguments"): Judgement(
        "true positive",
        "G1",
        "SyncVectorEnv.reset pops reset_mask from the caller's options (gymnasium/vector/sync_vector_env.py:221)",
    ),
    ("gym_clip_reward_per_env", "api.failed_call_no_side_effect"): Judgement(
        "true positive",
        "G2",
        "a wrong-size batch raises from zip(strict=True) only after the first sub-envs were stepped",
    ),
    ("gym_dict_info_to_list", "aliasing.caller_arguments"): Judgement(
        "true positive",
        "G1",
        "SyncVectorEnv.reset pops reset_mask from the caller's options (gymnasium/vector/sync_vector_env.py:221)",
    ),
    ("gym_dict_info_to_list", "api.failed_call_no_side_effect"): Judgement(
        "true positive",
        "G2",
        "a wrong-size batch raises from zip(strict=True) only after the first sub-envs were stepped",
    ),
    ("gym_dict_info_to_list", "api.shape"): Judgement(
        "documented behaviour",
        "C1",
        "DictInfoToList exists to turn the documented dict of batched infos into a list of dicts",
    ),
    ("gym_flatten_observation", "aliasing.caller_arguments"): Judgement(
        "true positive",
        "G1",
        "SyncVectorEnv.reset pops reset_mask from the caller's options (gymnasium/vector/sync_vector_env.py:221)",
    ),
    ("gym_flatten_observation", "api.failed_call_no_side_effect"): Judgement(
        "true positive",
        "G2",
        "a wrong-size batch raises from zip(strict=True) only after the first sub-envs were stepped",
    ),
    ("gym_flatten_observation_per_env", "aliasing.caller_arguments"): Judgement(
        "true positive",
        "G1",
        "SyncVectorEnv.reset pops reset_mask from the caller's options (gymnasium/vector/sync_vector_env.py:221)",
    ),
    ("gym_flatten_observation_per_env", "api.failed_call_no_side_effect"): Judgement(
        "true positive",
        "G2",
        "a wrong-size batch raises from zip(strict=True) only after the first sub-envs were stepped",
    ),
    ("gym_frame_stack_per_env", "aliasing.caller_arguments"): Judgement(
        "true positive",
        "G1",
        "SyncVectorEnv.reset pops reset_mask from the caller's options (gymnasium/vector/sync_vector_env.py:221)",
    ),
    ("gym_frame_stack_per_env", "api.failed_call_no_side_effect"): Judgement(
        "true positive",
        "G2",
        "a wrong-size batch raises from zip(strict=True) only after the first sub-envs were stepped",
    ),
    ("gym_normalize_observation", "api.failed_call_no_side_effect"): Judgement(
        "true positive",
        "G2",
        "a wrong-size batch raises from zip(strict=True) only after the first sub-envs were stepped",
    ),
    ("gym_normalize_observation_per_env", "aliasing.caller_arguments"): Judgement(
        "true positive",
        "G1",
        "SyncVectorEnv.reset pops reset_mask from the caller's options (gymnasium/vector/sync_vector_env.py:221)",
    ),
    ("gym_normalize_observation_per_env", "api.failed_call_no_side_effect"): Judgement(
        "true positive",
        "G2",
        "a wrong-size batch raises from zip(strict=True) only after the first sub-envs were stepped",
    ),
    ("gym_normalize_reward", "aliasing.caller_arguments"): Judgement(
        "true positive",
        "G1",
        "SyncVectorEnv.reset pops reset_mask from the caller's options (gymnasium/vector/sync_vector_env.py:221)",
    ),
    ("gym_normalize_reward", "api.failed_call_no_side_effect"): Judgement(
        "true positive",
        "G2",
        "a wrong-size batch raises from zip(strict=True) only after the first sub-envs were stepped",
    ),
    ("gym_normalize_reward", "model.outputs_match"): Judgement(
        "true positive",
        "G6",
        "the same carried return gives other running statistics, so every later normalised reward differs from the model's",
    ),
    ("gym_normalize_reward", "statistics.normalizer"): Judgement(
        "true positive",
        "G6",
        "the return of an episode that ended is carried into the next: at the terminal step the accumulator keeps the "
        "last reward, and the skipped reset step does not zero it (gymnasium/wrappers/vector/stateful_reward.py:161-172)",
    ),
    ("gym_record_episode_statistics", "aliasing.caller_arguments"): Judgement(
        "true positive",
        "G1",
        "SyncVectorEnv.reset pops reset_mask from the caller's options (gymnasium/vector/sync_vector_env.py:221)",
    ),
    ("gym_record_episode_statistics", "api.failed_call_no_side_effect"): Judgement(
        "true positive",
        "G2",
        "a wrong-size batch raises from zip(strict=True) only after the first sub-envs were stepped",
    ),
    ("gym_record_episode_statistics_per_env", "aliasing.caller_arguments"): Judgement(
        "true positive",
        "G1",
        "SyncVectorEnv.reset pops reset_mask from the caller's options (gymnasium/vector/sync_vector_env.py:221)",
    ),
    ("gym_record_episode_statistics_per_env", "api.failed_call_no_side_effect"): Judgement(
        "true positive",
        "G2",
        "a wrong-size batch raises from zip(strict=True) only after the first sub-envs were stepped",
    ),
    ("gym_rescale_action", "aliasing.caller_arguments"): Judgement(
        "true positive",
        "G1",
        "SyncVectorEnv.reset pops reset_mask from the caller's options (gymnasium/vector/sync_vector_env.py:221)",
    ),
    ("gym_sync_no_copy", "aliasing.caller_arguments"): Judgement(
        "true positive",
        "G1",
        "SyncVectorEnv.reset pops reset_mask from the caller's options (gymnasium/vector/sync_vector_env.py:221)",
    ),
    ("gym_sync_no_copy", "aliasing.returned_objects"): Judgement(
        "documented behaviour", "G7", "copy=False documents returning the internal buffer, overwritten by the next call"
    ),
    ("gym_sync_no_copy", "api.failed_call_no_side_effect"): Judgement(
        "true positive",
        "G2",
        "a wrong-size batch raises from zip(strict=True) only after the first sub-envs were stepped",
    ),
    ("gym_time_aware_observation_per_env", "aliasing.caller_arguments"): Judgement(
        "true positive",
        "G1",
        "SyncVectorEnv.reset pops reset_mask from the caller's options (gymnasium/vector/sync_vector_env.py:221)",
    ),
    ("gym_time_aware_observation_per_env", "api.failed_call_no_side_effect"): Judgement(
        "true positive",
        "G2",
        "a wrong-size batch raises from zip(strict=True) only after the first sub-envs were stepped",
    ),
    ("gym_time_limit_per_env", "aliasing.caller_arguments"): Judgement(
        "true positive",
        "G1",
        "SyncVectorEnv.reset pops reset_mask from the caller's options (gymnasium/vector/sync_vector_env.py:221)",
    ),
    ("gym_time_limit_per_env", "api.failed_call_no_side_effect"): Judgement(
        "true positive",
        "G2",
        "a wrong-size batch raises from zip(strict=True) only after the first sub-envs were stepped",
    ),
    ("gym_transform_reward", "aliasing.caller_arguments"): Judgement(
        "true positive",
        "G1",
        "SyncVectorEnv.reset pops reset_mask from the caller's options (gymnasium/vector/sync_vector_env.py:221)",
    ),
    ("gym_transform_reward", "api.failed_call_no_side_effect"): Judgement(
        "true positive",
        "G2",
        "a wrong-size batch raises from zip(strict=True) only after the first sub-envs were stepped",
    ),
    ("sb3_make_vec_env_time_limit", "api.failed_call_no_side_effect"): Judgement(
        "true positive", "S1", "DummyVecEnv raises IndexError after stepping (and autoresetting) the first sub-envs"
    ),
    ("sb3_make_vec_env_time_limit", "api.wrong_size_batch_rejected"): Judgement(
        "true positive",
        "S1",
        "DummyVecEnv.step_wait indexes actions by env and ignores extra ones (stable_baselines3/common/vec_env/dummy_vec_env.py)",
    ),
    ("sb3_monitor_per_env", "api.failed_call_no_side_effect"): Judgement(
        "true positive", "S1", "DummyVecEnv raises IndexError after stepping (and autoresetting) the first sub-envs"
    ),
    ("sb3_monitor_per_env", "api.wrong_size_batch_rejected"): Judgement(
        "true positive",
        "S1",
        "DummyVecEnv.step_wait indexes actions by env and ignores extra ones (stable_baselines3/common/vec_env/dummy_vec_env.py)",
    ),
    ("sb3_vec_check_nan", "api.failed_call_no_side_effect"): Judgement(
        "true positive", "S1", "DummyVecEnv raises IndexError after stepping (and autoresetting) the first sub-envs"
    ),
    ("sb3_vec_check_nan", "api.wrong_size_batch_rejected"): Judgement(
        "true positive",
        "S1",
        "DummyVecEnv.step_wait indexes actions by env and ignores extra ones (stable_baselines3/common/vec_env/dummy_vec_env.py)",
    ),
    ("sb3_vec_check_nan", "infos.aligned"): Judgement(
        "true positive", "S5", "every VecEnvWrapper keeps its own empty reset_infos (base_vec_env.py:69), never updated"
    ),
    ("sb3_vec_extract_dict_obs", "api.failed_call_no_side_effect"): Judgement(
        "true positive", "S1", "DummyVecEnv raises IndexError after stepping (and autoresetting) the first sub-envs"
    ),
    ("sb3_vec_extract_dict_obs", "api.wrong_size_batch_rejected"): Judgement(
        "true positive",
        "S1",
        "DummyVecEnv.step_wait indexes actions by env and ignores extra ones (stable_baselines3/common/vec_env/dummy_vec_env.py)",
    ),
    ("sb3_vec_extract_dict_obs", "infos.aligned"): Judgement(
        "true positive", "S5", "every VecEnvWrapper keeps its own empty reset_infos (base_vec_env.py:69), never updated"
    ),
    ("sb3_vec_frame_stack", "aliasing.returned_objects"): Judgement(
        "true positive", "S6", "VecFrameStack.reset returns its stacking buffer and overwrites it on the next reset"
    ),
    ("sb3_vec_frame_stack", "api.failed_call_no_side_effect"): Judgement(
        "true positive", "S1", "DummyVecEnv raises IndexError after stepping (and autoresetting) the first sub-envs"
    ),
    ("sb3_vec_frame_stack", "api.wrong_size_batch_rejected"): Judgement(
        "true positive",
        "S1",
        "DummyVecEnv.step_wait indexes actions by env and ignores extra ones (stable_baselines3/common/vec_env/dummy_vec_env.py)",
    ),
    ("sb3_vec_frame_stack", "infos.aligned"): Judgement(
        "true positive", "S5", "every VecEnvWrapper keeps its own empty reset_infos (base_vec_env.py:69), never updated"
    ),
    ("sb3_vec_frame_stack_4", "aliasing.returned_objects"): Judgement(
        "true positive",
        "S6",
        "the array the last step returned is the stacking buffer that the next reset zeroes and refills in place "
        "(stable_baselines3/common/vec_env/stacked_observations.py:112-117)",
    ),
    ("sb3_vec_frame_stack_4", "api.failed_call_no_side_effect"): Judgement(
        "true positive", "S1", "DummyVecEnv raises IndexError after stepping (and autoresetting) the first sub-envs"
    ),
    ("sb3_vec_frame_stack_4", "api.wrong_size_batch_rejected"): Judgement(
        "true positive",
        "S1",
        "DummyVecEnv.step_wait indexes actions by env and ignores extra ones (stable_baselines3/common/vec_env/dummy_vec_env.py)",
    ),
    ("sb3_vec_frame_stack_4", "infos.aligned"): Judgement(
        "true positive", "S5", "every VecEnvWrapper keeps its own empty reset_infos (base_vec_env.py:69), never updated"
    ),
    ("sb3_vec_monitor", "api.failed_call_no_side_effect"): Judgement(
        "true positive", "S1", "DummyVecEnv raises IndexError after stepping (and autoresetting) the first sub-envs"
    ),
    ("sb3_vec_monitor", "api.wrong_size_batch_rejected"): Judgement(
        "true positive",
        "S1",
        "DummyVecEnv.step_wait indexes actions by env and ignores extra ones (stable_baselines3/common/vec_env/dummy_vec_env.py)",
    ),
    ("sb3_vec_monitor", "infos.aligned"): Judgement(
        "true positive", "S5", "every VecEnvWrapper keeps its own empty reset_infos (base_vec_env.py:69), never updated"
    ),
    ("sb3_vec_normalize", "api.failed_call_no_side_effect"): Judgement(
        "true positive", "S1", "DummyVecEnv raises IndexError after stepping (and autoresetting) the first sub-envs"
    ),
    ("sb3_vec_normalize", "api.wrong_size_batch_rejected"): Judgement(
        "true positive",
        "S1",
        "DummyVecEnv.step_wait indexes actions by env and ignores extra ones (stable_baselines3/common/vec_env/dummy_vec_env.py)",
    ),
    ("sb3_vec_normalize", "dtype.observations"): Judgement(
        "documented behaviour",
        "S4",
        "VecNormalize keeps the wrapped env's observation_space for Box observations (vec_normalize.py:80-87, GH #1214)",
    ),
    ("sb3_vec_normalize", "infos.aligned"): Judgement(
        "true positive", "S5", "every VecEnvWrapper keeps its own empty reset_infos (base_vec_env.py:69), never updated"
    ),
    ("sb3_vec_normalize_custom", "api.failed_call_no_side_effect"): Judgement(
        "true positive", "S1", "DummyVecEnv raises IndexError after stepping (and autoresetting) the first sub-envs"
    ),
    ("sb3_vec_normalize_custom", "api.wrong_size_batch_rejected"): Judgement(
        "true positive",
        "S1",
        "DummyVecEnv.step_wait indexes actions by env and ignores extra ones (stable_baselines3/common/vec_env/dummy_vec_env.py)",
    ),
    ("sb3_vec_normalize_custom", "dtype.observations"): Judgement(
        "documented behaviour",
        "S4",
        "VecNormalize keeps the wrapped env's observation_space for Box observations (vec_normalize.py:80-87, GH #1214)",
    ),
    ("sb3_vec_normalize_custom", "infos.aligned"): Judgement(
        "true positive", "S5", "every VecEnvWrapper keeps its own empty reset_infos (base_vec_env.py:69), never updated"
    ),
    ("sb3_vec_normalize_eval", "api.failed_call_no_side_effect"): Judgement(
        "true positive", "S1", "DummyVecEnv raises IndexError after stepping (and autoresetting) the first sub-envs"
    ),
    ("sb3_vec_normalize_eval", "api.wrong_size_batch_rejected"): Judgement(
        "true positive",
        "S1",
        "DummyVecEnv.step_wait indexes actions by env and ignores extra ones (stable_baselines3/common/vec_env/dummy_vec_env.py)",
    ),
    ("sb3_vec_normalize_eval", "dtype.observations"): Judgement(
        "documented behaviour",
        "S4",
        "VecNormalize keeps the wrapped env's observation_space for Box observations (vec_normalize.py:80-87, GH #1214)",
    ),
    ("sb3_vec_normalize_eval", "infos.aligned"): Judgement(
        "true positive", "S5", "every VecEnvWrapper keeps its own empty reset_infos (base_vec_env.py:69), never updated"
    ),
    ("sb3_vec_normalize_eval", "terminal.final_obs"): Judgement(
        "true positive",
        "S3",
        "terminal_observation is normalised with clipping (vec_normalize.py:204, 221); with training=False the fresh "
        "statistics (mean 0, var 1) clip every field above clip_obs=10, which unnormalize_obs cannot restore "
        "(off_policy_algorithm.py:502)",
    ),
    ("sb3_vec_normalize_eval", "transitions.exact"): Judgement(
        "true positive",
        "S3",
        "the terminal transition's next_obs is unnormalize_obs(terminal_observation), clipped at clip_obs=10 (vec_normalize.py:221)",
    ),
    ("sb3_vec_normalize_reward_only", "api.failed_call_no_side_effect"): Judgement(
        "true positive", "S1", "DummyVecEnv raises IndexError after stepping (and autoresetting) the first sub-envs"
    ),
    ("sb3_vec_normalize_reward_only", "api.wrong_size_batch_rejected"): Judgement(
        "true positive",
        "S1",
        "DummyVecEnv.step_wait indexes actions by env and ignores extra ones (stable_baselines3/common/vec_env/dummy_vec_env.py)",
    ),
    ("sb3_vec_normalize_reward_only", "infos.aligned"): Judgement(
        "true positive", "S5", "every VecEnvWrapper keeps its own empty reset_infos (base_vec_env.py:69), never updated"
    ),
    ("sb3_vec_transpose_image", "api.failed_call_no_side_effect"): Judgement(
        "true positive", "S1", "DummyVecEnv raises IndexError after stepping (and autoresetting) the first sub-envs"
    ),
    ("sb3_vec_transpose_image", "api.wrong_size_batch_rejected"): Judgement(
        "true positive",
        "S1",
        "DummyVecEnv.step_wait indexes actions by env and ignores extra ones (stable_baselines3/common/vec_env/dummy_vec_env.py)",
    ),
    ("sb3_vec_transpose_image", "infos.aligned"): Judgement(
        "true positive", "S5", "every VecEnvWrapper keeps its own empty reset_infos (base_vec_env.py:69), never updated"
    ),
    ("torchrl_cat_frames", "api.wrong_size_batch_rejected"): Judgement(
        "true positive", "E1", "GymWrapper.step does not check the action against action_spec"
    ),
    ("torchrl_double_to_float", "api.valid_calls_succeed"): Judgement(
        "true positive",
        "E2",
        "GymWrapper.read_action calls int() on a one-component MultiDiscrete action, which NumPy 2 refuses",
    ),
    ("torchrl_double_to_float", "api.wrong_size_batch_rejected"): Judgement(
        "true positive", "E1", "GymWrapper.step does not check the action against action_spec"
    ),
    ("torchrl_init_tracker", "api.valid_calls_succeed"): Judgement(
        "true positive",
        "E2",
        "GymWrapper.read_action calls int() on a one-component MultiDiscrete action, which NumPy 2 refuses",
    ),
    ("torchrl_init_tracker", "api.wrong_size_batch_rejected"): Judgement(
        "true positive", "E1", "GymWrapper.step does not check the action against action_spec"
    ),
    ("torchrl_observation_norm", "api.valid_calls_succeed"): Judgement(
        "true positive",
        "E2",
        "GymWrapper.read_action calls int() on a one-component MultiDiscrete action, which NumPy 2 refuses",
    ),
    ("torchrl_observation_norm", "api.wrong_size_batch_rejected"): Judgement(
        "true positive", "E1", "GymWrapper.step does not check the action against action_spec"
    ),
    ("torchrl_observation_norm", "dtype.observations"): Judgement(
        "true positive",
        "C3",
        "ObservationNorm.transform_observation_spec rescales the bounds but keeps the spec's integer dtype, while "
        "_apply_transform returns float32 (torchrl/envs/transforms/_normalization.py:286-299, 317-322)",
    ),
    ("torchrl_reward_clipping", "api.valid_calls_succeed"): Judgement(
        "true positive",
        "E2",
        "GymWrapper.read_action calls int() on a one-component MultiDiscrete action, which NumPy 2 refuses",
    ),
    ("torchrl_reward_clipping", "api.wrong_size_batch_rejected"): Judgement(
        "true positive", "E1", "GymWrapper.step does not check the action against action_spec"
    ),
    ("torchrl_reward_sum", "api.valid_calls_succeed"): Judgement(
        "true positive",
        "E2",
        "GymWrapper.read_action calls int() on a one-component MultiDiscrete action, which NumPy 2 refuses",
    ),
    ("torchrl_reward_sum", "api.wrong_size_batch_rejected"): Judgement(
        "true positive", "E1", "GymWrapper.step does not check the action against action_spec"
    ),
    ("torchrl_step_counter", "api.valid_calls_succeed"): Judgement(
        "true positive",
        "E2",
        "GymWrapper.read_action calls int() on a one-component MultiDiscrete action, which NumPy 2 refuses",
    ),
    ("torchrl_step_counter", "api.wrong_size_batch_rejected"): Judgement(
        "true positive", "E1", "GymWrapper.step does not check the action against action_spec"
    ),
    ("torchrl_step_counter_limit", "api.valid_calls_succeed"): Judgement(
        "true positive",
        "E2",
        "GymWrapper.read_action calls int() on a one-component MultiDiscrete action, which NumPy 2 refuses",
    ),
    ("torchrl_step_counter_limit", "api.wrong_size_batch_rejected"): Judgement(
        "true positive", "E1", "GymWrapper.step does not check the action against action_spec"
    ),
    ("torchrl_step_counter_reward_sum", "api.valid_calls_succeed"): Judgement(
        "true positive",
        "E2",
        "GymWrapper.read_action calls int() on a one-component MultiDiscrete action, which NumPy 2 refuses",
    ),
    ("torchrl_step_counter_reward_sum", "api.wrong_size_batch_rejected"): Judgement(
        "true positive", "E1", "GymWrapper.step does not check the action against action_spec"
    ),
    ("gym_record_episode_statistics", "statistics.episode"): Judgement(
        "true positive",
        "G5",
        "RecordEpisodeStatistics.reset calls the inner reset, which pops reset_mask (G1), then takes its full-reset branch and zeroes every sub-env's return and length (gymnasium/wrappers/vector/common.py)",
    ),
    ("gym_record_episode_statistics", "model.outputs_match"): Judgement(
        "true positive",
        "G5",
        "RecordEpisodeStatistics.reset calls the inner reset, which pops reset_mask (G1), then takes its full-reset branch and zeroes every sub-env's return and length (gymnasium/wrappers/vector/common.py)",
    ),
    ("gym_async_no_shared_memory", "aliasing.caller_arguments"): Judgement(
        "true positive",
        "G1",
        "AsyncVectorEnv.reset pops reset_mask from the caller's options (gymnasium/vector/async_vector_env.py:381)",
    ),
    ("sb3_make_vec_env_time_limit", "statistics.episode"): Judgement(
        "documented behaviour",
        "S7",
        "make_vec_env wraps Monitor first and wrapper_class outside it (env_util.py:113,116): Monitor never sees the outer TimeLimit's truncation; by design per DLR-RM/stable-baselines3#894",
    ),
    ("torchrl_cat_frames", "api.valid_calls_succeed"): Judgement(
        "true positive",
        "E2",
        "GymWrapper.read_action calls int() on a one-component MultiDiscrete action, which NumPy 2 refuses",
    ),
    ("torchrl_serial_env", "api.valid_calls_succeed"): Judgement(
        "true positive",
        "E2",
        "GymWrapper.read_action calls int() on a one-component MultiDiscrete action, which NumPy 2 refuses",
    ),
    ("torchrl_parallel_env", "lifecycle.responsive"): Judgement(
        "true positive",
        "E2",
        "GymWrapper.read_action raises on a one-component MultiDiscrete action in the worker, which dies; the next call waits for it or close() reports it (FINDINGS E2, ParallelEnv)",
    ),
    ("torchrl_parallel_env", "api.valid_calls_succeed"): Judgement(
        "true positive",
        "E2",
        "GymWrapper.read_action raises on a one-component MultiDiscrete action in the worker, which dies; the next call waits for it or close() reports it (FINDINGS E2, ParallelEnv). Pinned fail|pass: whether the parent sees the dead worker as an exception (this spec fails) or waits past the call deadline (the example is set aside as hung and lifecycle.responsive reports it; torchrl.transform_values is then not run) depends on the machine's timing, not on rlconform",
    ),
    ("gym_normalize_reward_per_env", "aliasing.caller_arguments"): Judgement(
        "true positive",
        "G1",
        "SyncVectorEnv.reset pops reset_mask from the caller's options (gymnasium/vector/sync_vector_env.py:221)",
    ),
    ("gym_normalize_reward_per_env", "api.failed_call_no_side_effect"): Judgement(
        "true positive",
        "G2",
        "a wrong-size batch raises from zip(strict=True) only after the first sub-envs were stepped",
    ),
    ("gym_normalize_reward_per_env", "statistics.normalizer"): Judgement(
        "true positive",
        "G8",
        "the single-env NormalizeReward never zeroes discounted_reward on reset and keeps it through a truncation (gymnasium/wrappers/stateful_reward.py:134-136)",
    ),
    ("gym_cleanrl_continuous_per_env", "aliasing.caller_arguments"): Judgement(
        "true positive",
        "G1",
        "SyncVectorEnv.reset pops reset_mask from the caller's options (gymnasium/vector/sync_vector_env.py:221)",
    ),
    ("gym_cleanrl_continuous_per_env", "api.failed_call_no_side_effect"): Judgement(
        "true positive",
        "G2",
        "a wrong-size batch raises from zip(strict=True) only after the first sub-envs were stepped",
    ),
    ("gym_cleanrl_continuous_per_env", "statistics.normalizer"): Judgement(
        "true positive",
        "G8",
        "the single-env NormalizeReward never zeroes discounted_reward on reset and keeps it through a truncation (gymnasium/wrappers/stateful_reward.py:134-136)",
    ),
    ("gym_record_episode_statistics_time_limit", "aliasing.caller_arguments"): Judgement(
        "true positive",
        "G1",
        "SyncVectorEnv.reset pops reset_mask from the caller's options (gymnasium/vector/sync_vector_env.py:221)",
    ),
    ("gym_record_episode_statistics_time_limit", "api.failed_call_no_side_effect"): Judgement(
        "true positive",
        "G2",
        "a wrong-size batch raises from zip(strict=True) only after the first sub-envs were stepped",
    ),
    ("gym_record_episode_statistics_time_limit", "model.outputs_match"): Judgement(
        "true positive",
        "G5",
        "RecordEpisodeStatistics.reset calls the inner reset, which pops reset_mask (G1), then takes its full-reset branch and zeroes every sub-env's return and length (gymnasium/wrappers/vector/common.py)",
    ),
    ("gym_record_episode_statistics_time_limit", "statistics.episode"): Judgement(
        "true positive",
        "G5",
        "RecordEpisodeStatistics.reset calls the inner reset, which pops reset_mask (G1), then takes its full-reset branch and zeroes every sub-env's return and length (gymnasium/wrappers/vector/common.py)",
    ),
    ("sb3_vec_normalize", "terminal.final_obs"): Judgement(
        "true positive",
        "S3",
        "terminal_observation is normalised with clipping (vec_normalize.py:204, 221); in an episode of one step from the first reset the terminal observation lies more than clip_obs running deviations from the fresh mean, and unnormalize_obs cannot restore it",
    ),
    ("sb3_vec_normalize", "transitions.exact"): Judgement(
        "true positive",
        "S3",
        "the terminal transition's next_obs is unnormalize_obs(terminal_observation), clipped at clip_obs (vec_normalize.py:221)",
    ),
    ("sb3_vec_normalize_custom", "terminal.final_obs"): Judgement(
        "true positive",
        "S3",
        "terminal_observation is normalised with clipping (vec_normalize.py:204, 221); in an episode of one step from the first reset the terminal observation lies more than clip_obs running deviations from the fresh mean, and unnormalize_obs cannot restore it",
    ),
    ("sb3_vec_normalize_custom", "transitions.exact"): Judgement(
        "true positive",
        "S3",
        "the terminal transition's next_obs is unnormalize_obs(terminal_observation), clipped at clip_obs (vec_normalize.py:221)",
    ),
    ("gym_wrapper_max_and_skip", "terminal.final_obs"): Judgement(
        "true positive",
        "G11",
        "step breaks on terminated or truncated before the last sub-step and returns the max of the terminal frame and a frame an earlier call left in _obs_buffer (gymnasium/wrappers/stateful_observation.py:639-648): the terminal observation is a blend with another frame",
    ),
    ("gym_wrapper_max_and_skip", "transitions.exact"): Judgement(
        "true positive",
        "G11",
        "the terminal transition's next_obs is np.max over _obs_buffer, which holds a frame of an earlier call when the episode ends before the last sub-step (gymnasium/wrappers/stateful_observation.py:639-648)",
    ),
    ("gym_wrapper_max_and_skip", "seeding.reset_determinism"): Judgement(
        "true positive",
        "G11",
        "reset does not clear _obs_buffer, so a frame of an earlier episode enters the max after the same reset(seed=s) and the same calls (gymnasium/wrappers/stateful_observation.py:619-648)",
    ),
}
