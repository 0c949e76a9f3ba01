"""``make serve``: the reward server on this machine, with Ray's own listeners kept off the network.

``serve run`` alone starts Ray on the machine's address: Ray's metrics agent, the autoscaler monitor's
metrics and the dashboard's metrics servers then listen on 0.0.0.0 without auth, serving the project's
counters (issue 35), and Ray writes its cluster token file world-readable. This launcher, run as
``python -m howeval.reward_server.serve_local CONFIG``:

1. makes Ray's token file private (:func:`private_ray_token`) before Ray starts;
2. starts a local one-node Ray whose node address is 127.0.0.1 (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``: without
   it Ray swaps 127.0.0.1 for the machine's address, ``ray._private.services.resolve_ip_for_localhost``); Ray's
   metrics agent, the autoscaler monitor's and the dashboard's metrics servers then bind 127.0.0.1, as they
   do for a node on loopback (``is_localhost(node_ip)`` in their code), and there is no dashboard UI;
3. hands over to ``serve run CONFIG`` (the same CLI, which finds Ray started and uses it).

``--url-token-env NAME`` (``make serve`` passes it when ``HOWEVAL_REWARD_URL_TOKEN`` is set) serves OpenRLHF's
stock client too: the reward application's ``auth.url_token_env`` is set to ``NAME`` in a copy of CONFIG
(:func:`with_url_token`), which opens ``POST /openrlhf/<$NAME>/get_reward`` (docs/reward_server.md, "OpenRLHF").

What still listens on all interfaces is named in ``docs/reward_server.md`` (Ray's gRPC servers).
"""
from __future__ import annotations

import argparse
import os
import stat
import sys
from pathlib import Path


def private_ray_token() -> Path | None:
    """Ray's token file, made readable by its owner only (mode 0600); created so when missing.

    Ray 2.60 turns token auth on for a new local cluster and, when no token exists, writes one to
    ``~/.ray/auth_token`` with the process umask (world-readable). Here the token is written first, by
    ``os.open(..., 0o600)`` with Ray's own generator, so Ray finds and uses it; an existing file is
    chmod-ed to 0600. ``RAY_AUTH_TOKEN`` in the environment (no file) or ``RAY_AUTH_MODE=disabled``:
    nothing to do (None). ``RAY_AUTH_TOKEN_PATH`` names another file: that one is handled.

    Raises:
        OSError: the file cannot be created or chmod-ed (e.g. owned by another user).
    """
    if os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_MODE", "").lower() == "disabled":
        return None
    path = Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token")
    if path.exists():
        if stat.S_IMODE(path.stat().st_mode) & 0o077:
            path.chmod(0o600)
        return path
    from ray._private.authentication.authentication_token_generator import generate_new_authentication_token

    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(generate_new_authentication_token())
    return path


def with_url_token(config: dict, env_name: str) -> dict:
    """A copy of the Serve config ``config`` whose reward application (``import_path`` ending in ``:build_app``)
    has ``auth.url_token_env: env_name``.

    Raises:
        ValueError: no application of ``config`` is built by ``howeval.reward_server.app:build_app``.
    """
    import copy

    out = copy.deepcopy(config)
    apps = [a for a in out.get("applications") or [] if str(a.get("import_path", "")).endswith(":build_app")]
    if not apps:
        raise ValueError("--url-token-env: the config has no application with import_path "
                         "howeval.reward_server.app:build_app")
    for a in apps:
        args = a.setdefault("args", {}) or {}
        a["args"] = args
        args["auth"] = {**(args.get("auth") or {}), "url_token_env": env_name}
    return out


def honour_interrupts() -> bool:
    """Give SIGINT back Python's ``KeyboardInterrupt`` handler when the process started with it ignored.

    A shell that is not interactive starts a background job (``make serve &`` in a script) with SIGINT
    ignored (POSIX), and Python then installs no handler: ``kill -INT`` did nothing and the server could only be
    killed. With the handler back, ``serve run`` shuts Serve down on SIGINT as on Ctrl-C, and :func:`main`
    stops its Ray. (SIGTERM already stops it cleanly: ``ray.init`` turns it into ``sys.exit``.)
    Returns True when the handler was restored. Call it from the main thread.
    """
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        return True
    return False


def main(argv: list[str] | None = None) -> int:
    """Start Ray on 127.0.0.1 and run ``serve run CONFIG`` on it (blocks until Ctrl-C, SIGINT or SIGTERM)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", help="Serve config YAML (configs/serve/reward.yaml)")
    ap.add_argument("--num-cpus", type=int, default=None, help="CPUs Ray may use (default: all)")
    ap.add_argument("--url-token-env", default=None, metavar="NAME",
                    help="also serve OpenRLHF's stock client at /openrlhf/<$NAME>/get_reward (auth.url_token_env)")
    args = ap.parse_args(argv)
    config = args.config
    if args.url_token_env:
        import tempfile

        import yaml

        with open(args.config, encoding="utf-8") as f:
            derived = with_url_token(yaml.safe_load(f), args.url_token_env)
        tmp = tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="reward-url-token-", delete=False)  # noqa: SIM115
        with tmp:
            yaml.safe_dump(derived, tmp, sort_keys=False)
        config = tmp.name
        print(f"OpenRLHF's stock client: POST http://<host>:<port>/openrlhf/${args.url_token_env}/get_reward "
              f"(config {config})", file=sys.stderr)
    # Ray replaces 127.0.0.1 by the machine's address unless "Ray clusters" are off (ray_constants.ENABLE_RAY_CLUSTER,
    # read at import): off, the node's address is 127.0.0.1 and the metrics servers bind loopback (a one-node server)
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    if "ray" in sys.modules:
        raise RuntimeError("howeval.reward_server.serve_local.main must run before ray is imported (Ray reads its address mode at import)")
    private_ray_token()
    honour_interrupts()
    import ray
    from ray.serve.scripts import run

    ray.init(address="local", include_dashboard=False, namespace="serve",
             num_cpus=args.num_cpus)
    try:
        run.main([config], standalone_mode=False)
    finally:
        ray.shutdown()
        if config != args.config:
            os.unlink(config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
