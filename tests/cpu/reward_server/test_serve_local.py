"""howeval.reward_server.serve_local, the ``make serve`` launcher: its helpers, without starting Ray."""
import os
import signal
import stat
import subprocess
import sys

import pytest

from howeval.reward_server.serve_local import honour_interrupts, private_ray_token, with_url_token


def test_honour_interrupts_restores_sigint_that_a_background_job_started_with_ignored():
    code = ("import os, signal, sys\n"
            "from howeval.reward_server.serve_local import honour_interrupts\n"
            "assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN\n"
            "print(honour_interrupts(), honour_interrupts(), flush=True)\n"
            "try:\n"
            "    os.kill(os.getpid(), signal.SIGINT)\n"
            "    signal.pause()\n"
            "except KeyboardInterrupt:\n"
            "    print('interrupted', flush=True)\n")
    # what `cmd &` in a script does to the child: SIGINT ignored from the start
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["True", "False", "interrupted"]


def test_honour_interrupts_leaves_a_handler_already_installed():
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
    before = signal.getsignal(signal.SIGINT)
    assert honour_interrupts() is False
    assert signal.getsignal(signal.SIGINT) is before


def test_with_url_token_sets_the_reward_app_auth_and_keeps_the_rest():
    cfg = {"applications": [{"name": "patternrm", "import_path": "howeval.reward_server.app:build_patternrm_app"},
                            {"name": "reward", "import_path": "howeval.reward_server.app:build_app",
                             "args": {"auth": {"token_env": "HOWEVAL_REWARD_TOKEN"}, "mixture": {"acc": 1.0}}}]}
    out = with_url_token(cfg, "MY_URL_TOKEN")
    assert out["applications"][1]["args"] == {"auth": {"token_env": "HOWEVAL_REWARD_TOKEN", "url_token_env": "MY_URL_TOKEN"},
                                              "mixture": {"acc": 1.0}}
    assert "args" not in out["applications"][0]
    assert "url_token_env" not in cfg["applications"][1]["args"]["auth"]  # a copy: the caller's config is unchanged


def test_with_url_token_refuses_a_config_without_the_reward_app():
    with pytest.raises(ValueError, match="build_app"):
        with_url_token({"applications": [{"import_path": "other:app"}]}, "X")


def test_private_ray_token_creates_the_file_owner_only_and_tightens_an_existing_one(tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    new = tmp_path / "a" / "token"
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(new))
    assert private_ray_token() == new
    assert stat.S_IMODE(new.stat().st_mode) == 0o600 and len(new.read_text().strip()) >= 32
    old = tmp_path / "old"
    old.write_text("t")
    os.chmod(old, 0o644)
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(old))
    assert private_ray_token() == old
    assert stat.S_IMODE(old.stat().st_mode) == 0o600 and old.read_text() == "t"
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    assert private_ray_token() is None
