"""Shared fixtures: the checkout's root, bin/nanmap, and running it."""

import os
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.environ.get("NANMAP") or os.path.join(ROOT, "bin", "nanmap")


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def cli():
    if not os.access(CLI, os.X_OK):
        pytest.skip("%s not built (run make)" % CLI)

    def run(*args, stdin=None):
        r = subprocess.run([CLI] + [str(a) for a in args], capture_output=True, text=True,
                           input=stdin, cwd=ROOT)
        assert r.returncode == 0, "nanmap %s: exit %d: %s" % (" ".join(map(str, args)),
                                                              r.returncode, r.stderr)
        return r.stdout
    return run
