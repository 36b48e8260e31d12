"""What a default-profile check of what the agent trains on costs (issue 27: under 60 s on a
2-core machine).

Run ``python benchmarks/training_data.py [--repeats N] [--targets NAME ...]``. Each target is a
``rlconform check MODULE:FACTORY --api API --json FILE`` in a fresh process, timed from outside, as
a user runs it (the default profile: no ``--profile``, no ``RLCONFORM_PROFILE``). Reported: the
median wall seconds, the number of specs and the statuses of the last run.

Targets (the factories of examples/training_data, which README.md shows, and SB3's own DQN):
``sb3-dqn`` (``stable_baselines3.DQN`` over every VecEnv rlconform hands a user's factory),
``sb3-buffer`` (a DQN whose buffer drops the time-out flag), ``gae`` (TorchRL's
``GAE(shifted=True)``) and ``multistep`` (a ``MultiStepTransform`` replay buffer).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "training_data"
#: name -> (factory, --api)
TARGETS = {
    "sb3-dqn": ("bench_factories:dqn", "sb3.Algorithm"),
    "sb3-buffer": ("mypkg.agents:make", "sb3.Algorithm"),
    "gae": ("mypkg.returns:make", "torchrl.ValueEstimator"),
    "multistep": ("mypkg.buffers:make", "torchrl.ReplayBuffer"),
    # issue 38: RSL-RL's runner and skrl's agents, where they are installed (the Isaac Lab
    # environment: .venv-isaaclab/bin/python benchmarks/training_data.py --targets rsl-rl-ppo ...)
    "rsl-rl-ppo": ("rlconform.libraries.rsl_rl.runner_planted:ppo", "rsl_rl.Runner"),
    "rsl-rl-planted": ("rlconform.libraries.rsl_rl.runner_planted:ppo_time_outs_for_terminations", "rsl_rl.Runner"),
    "skrl-ppo": ("rlconform.libraries.skrl.agent_planted:ppo", "skrl.Agent"),
    "skrl-fork": ("rlconform.libraries.skrl.agent_planted:forked_ppo", "skrl.Agent"),
}
#: the targets every run takes unless told (the RSL-RL ones need the Isaac Lab environment)
DEFAULT = ("sb3-dqn", "sb3-buffer", "gae", "multistep")
#: SB3's own DQN as a user's factory would build it
DQN_FACTORY = """from stable_baselines3 import DQN


def dqn(env):
    return DQN("MlpPolicy", env)
"""


def check(folder: Path, reference: str, api: str, out: Path) -> tuple[float, dict[str, str]]:
    """Wall seconds of one ``rlconform check`` from ``folder``, and its statuses by spec."""
    env = {k: v for k, v in os.environ.items() if k != "RLCONFORM_PROFILE"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(folder)])
    command = [sys.executable, "-m", "rlconform.cli", "check", reference, "--api", api, "--json", str(out)]
    start = time.perf_counter()
    subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=1800, check=False)
    seconds = time.perf_counter() - start
    try:
        results = json.loads(out.read_text())
    except (OSError, ValueError):
        return seconds, {}
    return seconds, {v["spec"]: v["status"] for v in results.get("results", []) if isinstance(v, dict)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--targets", nargs="+", default=list(DEFAULT), choices=list(TARGETS))
    args = parser.parse_args()
    print(f"{'target':14} {'api':24} {'wall s':>7} {'specs':>5}  statuses")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "work"
        folder.mkdir()
        (folder / "bench_factories.py").write_text(DQN_FACTORY)
        (folder / "mypkg").symlink_to(EXAMPLES / "mypkg")
        for name in args.targets:
            reference, api = TARGETS[name]
            times: list[float] = []
            statuses: dict[str, str] = {}
            for k in range(args.repeats):
                seconds, statuses = check(folder, reference, api, Path(tmp) / f"{name}-{k}.json")
                times.append(seconds)
            counted = ", ".join(f"{n} {s}" for s, n in sorted(Counter(statuses.values()).items()))
            print(f"{name:14} {api:24} {statistics.median(times):7.1f} {len(statuses):5}  {counted}", flush=True)


if __name__ == "__main__":
    main()
