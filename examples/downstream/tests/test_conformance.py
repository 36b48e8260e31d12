"""The project's conformance tests: one pytest test per (system, spec).

Run them like any test: ``pytest``, ``pytest -k transitions.exact``, ``pytest -n 2``,
``pytest --junitxml=report.xml --rlconform-json=results.json``. Settings (profile, the
expected-failures file) are in pytest.ini.
"""

from mypkg.envs import make_buggy_vec, make_env, make_vec

from rlconform.testing import parametrize_with_checks

#: a few specs keep this example fast; leave ``specs`` out to run every spec of the family
VECTOR_SPECS = ["transitions.exact", "terminal.final_obs", "flags.*"]


@parametrize_with_checks([make_env], api="gymnasium.Env", specs=["env.api_shape", "env.determinism"])
def test_our_env(rlconform_check):
    rlconform_check()


@parametrize_with_checks([make_vec, make_buggy_vec], api="gymnasium.vector", specs=VECTOR_SPECS)
def test_our_vector_envs(rlconform_check):
    rlconform_check()
