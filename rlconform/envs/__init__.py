"""The reference environments: scripted envs whose every observation says where it came from,
their call logs, the ground truth read from them, and the driver that runs a system around them."""
