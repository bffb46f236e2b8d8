"""The ctypes structs against the C headers: a program compiled from the
installed headers prints each struct's size and each field's offset, and
every one must equal what nanmap/_lib.py declares. A header change not
mirrored in _lib.py fails here instead of reading the wrong bytes."""

import ctypes
import os
import shutil
import subprocess

import pytest

from nanmap import _lib as L

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# C type name -> ctypes class, the fields checked (all of them)
STRUCTS = {
    "emu_format": L.Format, "emu_env": L.Env, "emu_result": L.Result,
    "emu_a_flags": L.AFlags, "emu_qtensor": L.QTensor, "emu_qstats": L.QStats,
    "emu_vec": L.Vec, "emu_be_stats": L.BeStats, "emu_be": L.Be,
    "emu_kout_item": L.KoutItem, "emu_kout": L.Kout, "emu_item_metrics": L.ItemMetrics,
    "emu_run": L.Run, "emu_truth": L.Truth, "emu_kparam": L.KParam, "emu_kin": L.KIn,
    "emu_ktensor": L.KTensor, "emu_kernel": L.Kernel, "nm_golden_case": L.GCase,
    "nm_golden_output": L.GOutput, "nm_golden_input": L.GInput,
    "nm_golden_inputs": L.GInputs,
    "nm_golden_opts": L.GOpts, "nm_golden_mismatch": L.GMismatch,
    "nm_golden_report": L.GReport,
}


def _c_program():
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "emu/core/emu.h"',
             '#include "emu/recipes/recipe.h"', '#include "emu/engine/kernels.h"',
             '#include "emu/io/nm_golden.h"',
             "int main(void) {"]
    for cname, cls in STRUCTS.items():
        lines.append('printf("%s %%zu\\n", sizeof(%s));' % (cname, cname))
        for fname, _ in cls._fields_:
            lines.append('printf("%s.%s %%zu\\n", offsetof(%s, %s));' % (cname, fname, cname,
                                                                      fname))
    lines.append('printf("emu_recipe %zu\\n", sizeof(emu_recipe));')
    lines.append('printf("emu_recipe.elem %zu\\n", offsetof(emu_recipe, elem));')
    lines.append('printf("emu_recipe.scale_fmt %zu\\n", offsetof(emu_recipe, scale_fmt));')
    lines.append('printf("emu_policy %zu\\n", sizeof(emu_policy));')
    lines.append("return 0; }")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def c_layout(tmp_path_factory):
    cc = os.environ.get("CC", "cc")
    if not shutil.which(cc):
        pytest.skip("no C compiler (%s) to read the headers' layout" % cc)
    d = tmp_path_factory.mktemp("layout")
    src, exe = d / "layout.c", d / "layout"
    src.write_text(_c_program())
    inc = ["-I", ROOT]
    r = subprocess.run([cc, "-std=c11", "-D_POSIX_C_SOURCE=200809L"] + inc +
                       ["-o", str(exe), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return {k: int(v) for k, v in (line.split() for line in out.splitlines())}


@pytest.mark.parametrize("cname", sorted(STRUCTS))
def test_struct_matches_header(c_layout, cname):
    cls = STRUCTS[cname]
    assert ctypes.sizeof(cls) == c_layout[cname], "sizeof(%s)" % cname
    for fname, _ in cls._fields_:
        assert getattr(cls, fname).offset == c_layout["%s.%s" % (cname, fname)], \
            "offsetof(%s, %s)" % (cname, fname)


def test_opaque_buffers_hold_the_structs(c_layout):
    assert c_layout["emu_recipe"] <= L.OPAQUE_RECIPE
    assert c_layout["emu_policy"] <= L.OPAQUE_POLICY
    assert L.RecipeHead.elem.offset == c_layout["emu_recipe.elem"]
    assert L.RecipeHead.scale_fmt.offset == c_layout["emu_recipe.scale_fmt"]
