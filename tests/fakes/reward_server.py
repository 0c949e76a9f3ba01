"""Start the real reward server (both Serve applications) on 127.0.0.1 for a test module, and stop it."""
from __future__ import annotations

import contextlib
import os
import socket


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_reward_server(token_env: str, token: str, reward_args: dict, log_to_driver: bool = False,
                          patternrm: dict | None = None):
    """Yield the base URL of a fresh Ray + Serve with the ``patternrm`` and ``reward`` applications.

    ``patternrm``: the PatternRM config (default ``{"kind": "rules"}``: deterministic, no model load).
    The HTTP port is ``$HOWEVAL_TEST_SERVE_PORT`` when set, else a free one.

    The token is put in the environment before ``ray.init`` (replicas inherit the raylet's environment);
    a cluster started by an earlier test lacks it, so that one is shut down first. Everything is stopped
    on exit.
    """
    os.environ[token_env] = token
    import ray
    from ray import serve

    from howeval.reward_server.app import build_app, build_patternrm_app

    if ray.is_initialized():
        ray.shutdown()
    from howeval.reward_server.serve_local import private_ray_token

    private_ray_token()  # Ray would write its token file world-readable (issue 35)
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=log_to_driver)
    port = int(os.environ.get("HOWEVAL_TEST_SERVE_PORT") or free_port())
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        serve.run(build_patternrm_app({"patternrm": patternrm or {"kind": "rules"}}), name="patternrm", route_prefix=None)
        serve.run(build_app({"auth": {"token_env": token_env}, **reward_args}), name="reward", route_prefix="/")
        yield f"http://127.0.0.1:{port}"
    finally:
        serve.shutdown()
        ray.shutdown()
