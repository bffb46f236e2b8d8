"""Why a setup.py beside pyproject.toml: the built package carries the
checkout's libnanmap.so next to its modules, so an installed nanmap finds
its library without NANMAP_LIB (nanmap/_lib.py looks beside the package
first). Without a built library (no make) the package installs alone and
looks in the checkout's lib/, then through find_library and pkg-config."""

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildPyWithLib(build_py):
    def run(self):
        super().run()
        src = os.path.join(HERE, "..", "lib", "libnanmap.so")
        if os.path.exists(src):
            dst = os.path.join(self.build_lib, "nanmap", "libnanmap.so")
            shutil.copyfile(os.path.realpath(src), dst)


setup(cmdclass={"build_py": BuildPyWithLib})
