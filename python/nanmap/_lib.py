"""Loading libnanmap.so and the C structs the Python side reads.

Why ctypes: numpy is the package's only dependency, and ctypes needs no
compiler at install time. The structs below mirror the installed headers
field for field (emu/core/emu.h, emu/recipes/recipe.h, emu/engine/kern.h,
emu/engine/kernels.h, emu/io/nm_golden.h); python/tests/test_layout.py compiles the
headers and checks every size and offset, so a header change that is not
made here too fails the tests instead of reading the wrong bytes. Structs
that Python only passes back to the library (a parsed recipe or policy) are
opaque buffers larger than the C struct.
"""

import ctypes
import ctypes.util
import os
import shutil
import subprocess

c_u8p = ctypes.POINTER(ctypes.c_uint8)
c_u32p = ctypes.POINTER(ctypes.c_uint32)
c_u64p = ctypes.POINTER(ctypes.c_uint64)
c_dp = ctypes.POINTER(ctypes.c_double)

EMU_NOPS = 16
EMU_NFLAGS = 5
EMU_KOUT_MAX = 10  # emu/engine/kernels.h
FLAG_NAMES = ("invalid", "divbyzero", "overflow", "underflow", "inexact")


class Format(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char * 64),
        ("p", ctypes.c_int), ("ebits", ctypes.c_int), ("bias", ctypes.c_int),
        ("has_sign", ctypes.c_bool), ("has_inf", ctypes.c_bool),
        ("has_subnormals", ctypes.c_bool), ("has_zero", ctypes.c_bool),
        ("nan", ctypes.c_int),
        ("bits", ctypes.c_int), ("emin", ctypes.c_int), ("emax", ctypes.c_int),
        ("man_mask", ctypes.c_uint32), ("exp_mask", ctypes.c_uint32),
        ("sign_mask", ctypes.c_uint32), ("max_bits", ctypes.c_uint32),
        ("nan_bits", ctypes.c_uint32), ("inf_bits", ctypes.c_uint32),
        ("max", ctypes.c_double), ("min_normal", ctypes.c_double),
        ("min_subnormal", ctypes.c_double), ("epsilon", ctypes.c_double),
    ]


class Env(ctypes.Structure):
    _fields_ = [
        ("mode", ctypes.c_int), ("sat", ctypes.c_bool), ("ftz", ctypes.c_bool),
        ("daz", ctypes.c_bool), ("seed", ctypes.c_uint64), ("index", ctypes.c_uint64),
    ]


class Result(ctypes.Structure):
    _fields_ = [("bits", ctypes.c_uint32), ("flags", ctypes.c_uint)]


class AFlags(ctypes.Structure):
    _fields_ = [
        ("count", ctypes.c_uint64 * 5), ("any", ctypes.c_uint),
        ("first_bad", ctypes.c_uint64), ("first_flags", ctypes.c_uint),
    ]


# Opaque: only the library reads these; the sizes leave room for growth and
# test_layout.py checks they do.
OPAQUE_RECIPE = 8192
OPAQUE_POLICY = 16384


class RecipeHead(ctypes.Structure):
    """The first fields of emu_recipe, then room for the rest."""
    _fields_ = [
        ("name", ctypes.c_char * 64), ("elem", Format), ("scale_fmt", Format),
        ("_rest", ctypes.c_uint8 * (OPAQUE_RECIPE - 64 - 2 * ctypes.sizeof(Format))),
    ]


class QTensor(ctypes.Structure):
    _fields_ = [
        ("rows", ctypes.c_size_t), ("cols", ctypes.c_size_t), ("colwise", ctypes.c_bool),
        ("brows", ctypes.c_size_t), ("bcols", ctypes.c_size_t),
        ("nbr", ctypes.c_size_t), ("nbc", ctypes.c_size_t),
        ("x", c_dp), ("code", c_u32p), ("q", c_dp), ("deq", c_dp), ("flags", c_u8p),
        ("amax", c_dp), ("d", c_dp), ("m", c_dp), ("dcode", c_u32p),
        ("dflags", ctypes.POINTER(ctypes.c_uint)), ("four", ctypes.POINTER(ctypes.c_bool)),
        ("tensor_amax", ctypes.c_double), ("s_enc", ctypes.c_double), ("t", ctypes.c_double),
        ("elem_p", ctypes.c_int), ("elem", Format),
    ]


class QStats(ctypes.Structure):
    _fields_ = [
        ("n", ctypes.c_uint64), ("nan_in", ctypes.c_uint64), ("inf_in", ctypes.c_uint64),
        ("saturated", ctypes.c_uint64), ("flushed", ctypes.c_uint64), ("lost", ctypes.c_uint64),
        ("within", ctypes.c_uint64), ("nonfinite_out", ctypes.c_uint64),
        ("amax", ctypes.c_double), ("sqnr_db", ctypes.c_double),
        ("max_rel", ctypes.c_double), ("mean_rel", ctypes.c_double),
        ("bias", ctypes.c_double), ("bias_se", ctypes.c_double),
        ("blocks", ctypes.c_uint64), ("zero_scale", ctypes.c_uint64),
        ("nan_scale", ctypes.c_uint64), ("inf_scale", ctypes.c_uint64),
        ("exp_hist", ctypes.c_uint64 * 300),
        ("sum_x2", ctypes.c_double), ("sum_e2", ctypes.c_double),
        ("sum_e", ctypes.c_double), ("sum_rel", ctypes.c_double),
        ("n_err", ctypes.c_uint64), ("n_rel", ctypes.c_uint64),
    ]


# ---- the kernel engine (emu/engine/kern.h, emu/engine/kernels.h) ----

class Vec(ctypes.Structure):
    _fields_ = [("n", ctypes.c_size_t), ("d", c_dp), ("m", ctypes.c_void_p)]


class BeStats(ctypes.Structure):
    _fields_ = [
        ("ops", ctypes.c_uint64 * EMU_NOPS),
        ("flags", (ctypes.c_uint64 * EMU_NFLAGS) * EMU_NOPS),
        ("all_flags", ctypes.c_uint), ("first_set", ctypes.c_bool),
        ("first_op", ctypes.c_int), ("first_flags", ctypes.c_uint),
        ("first_step", ctypes.c_char_p), ("first_index", ctypes.c_uint64),
        ("in_n", ctypes.c_uint64), ("in_changed", ctypes.c_uint64),
        ("in_overflow", ctypes.c_uint64), ("in_flushed", ctypes.c_uint64),
        ("step_ops", c_u64p), ("step_flags", ctypes.c_void_p), ("nsteps", ctypes.c_size_t),
    ]


class Be(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_int), ("env", Env), ("st", BeStats),
        ("range", ctypes.c_bool), ("exact_inputs", ctypes.c_bool), ("loading", ctypes.c_bool),
        ("range_peak", ctypes.c_double), ("tables", ctypes.c_void_p),
        ("step_names", ctypes.c_void_p), ("nstep_names", ctypes.c_uint),
        ("vecs", ctypes.c_void_p), ("nvecs", ctypes.c_size_t), ("capvecs", ctypes.c_size_t),
        ("scratch", ctypes.POINTER(Vec)), ("td", ctypes.c_void_p),
    ]


class KoutItem(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p), ("vec", ctypes.POINTER(Vec)), ("n", ctypes.c_size_t),
        ("fmt", ctypes.POINTER(Format)),
    ]


class Kout(ctypes.Structure):
    _fields_ = [("item", KoutItem * EMU_KOUT_MAX), ("n", ctypes.c_int)]


class ItemMetrics(ctypes.Structure):
    _fields_ = [
        ("max_ulp", ctypes.c_double), ("rel_err", ctypes.c_double), ("lost", ctypes.c_size_t),
        ("arith_max_ulp", ctypes.c_double), ("arith_rel_err", ctypes.c_double),
    ]


class Run(ctypes.Structure):
    _fields_ = [
        ("be", Be), ("out", Kout), ("status", ctypes.c_int),
        ("m", ItemMetrics * EMU_KOUT_MAX), ("have_metrics", ctypes.c_bool),
    ]


class Truth(ctypes.Structure):
    _fields_ = [("stored", Run), ("e2e", Run), ("same", ctypes.c_bool)]


class KParam(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_double)]


class KTensor(ctypes.Structure):
    _fields_ = [
        ("role", ctypes.c_char_p), ("rows", ctypes.c_size_t), ("cols", ctypes.c_size_t),
        ("v", c_dp),
    ]


class KIn(ctypes.Structure):
    _fields_ = [
        ("x", c_dp), ("rows", ctypes.c_size_t), ("cols", ctypes.c_size_t),
        ("params", ctypes.POINTER(KParam)), ("nparams", ctypes.c_size_t),
        ("seed", ctypes.c_uint64),
        ("tensors", ctypes.POINTER(KTensor)), ("ntensors", ctypes.c_size_t),
    ]


class Kernel(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p), ("variants", ctypes.POINTER(ctypes.c_char_p)),
        ("params_doc", ctypes.c_char_p), ("run", ctypes.c_void_p),
        ("inputs", ctypes.c_void_p), ("steps", ctypes.POINTER(ctypes.c_char_p)),
        ("nsteps", ctypes.c_uint),
    ]


# ---- golden files (emu/io/nm_golden.h) ----

class GCase(ctypes.Structure):
    _fields_ = [
        ("id", ctypes.c_char_p), ("kernel", ctypes.c_char_p), ("variant", ctypes.c_char_p),
        ("policy", ctypes.c_char_p), ("rows", ctypes.c_size_t), ("cols", ctypes.c_size_t),
        ("gen", ctypes.c_char_p), ("scale", ctypes.c_double), ("seed", ctypes.c_uint64),
        ("status", ctypes.c_char_p),
    ]


class GOutput(ctypes.Structure):
    _fields_ = [
        ("target", ctypes.c_char_p), ("name", ctypes.c_char_p),
        ("case_index", ctypes.c_size_t), ("format", ctypes.c_char_p), ("bits", ctypes.c_int),
        ("n", ctypes.c_size_t), ("expected", c_u32p),
    ]


class GInput(ctypes.Structure):
    _fields_ = [
        ("role", ctypes.c_char_p), ("format", ctypes.c_char * 64), ("bits", ctypes.c_int),
        ("ndim", ctypes.c_int), ("rows", ctypes.c_size_t), ("cols", ctypes.c_size_t),
        ("of_x", ctypes.c_bool), ("values", c_dp), ("encodings", c_u32p),
    ]


class GInputs(ctypes.Structure):
    _fields_ = [("item", ctypes.POINTER(GInput)), ("n", ctypes.c_size_t)]


class GOpts(ctypes.Structure):
    _fields_ = [("ulp", ctypes.c_uint64), ("nan_sign", ctypes.c_int)]


class GMismatch(ctypes.Structure):
    _fields_ = [
        ("index", ctypes.c_size_t), ("expected", ctypes.c_uint32),
        ("actual", ctypes.c_uint32), ("ulp", ctypes.c_uint64),
    ]


class GReport(ctypes.Structure):
    _fields_ = [
        ("checked", ctypes.c_size_t), ("mismatched", ctypes.c_size_t),
        ("max_ulp", ctypes.c_uint64), ("mismatches", ctypes.POINTER(GMismatch)),
    ]


# ---- finding the library ----

_HERE = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    env = os.environ.get("NANMAP_LIB")
    if env:
        # set explicitly: that file or nothing, so a wrong path is not
        # silently replaced by another copy of the library
        return [env]
    out = []
    # beside the package (an installed copy), then the checkout's lib/
    out.append(os.path.join(_HERE, "libnanmap.so"))
    out.append(os.path.join(_HERE, "..", "..", "lib", "libnanmap.so"))
    found = ctypes.util.find_library("nanmap")
    if found:
        out.append(found)
    if shutil.which("pkg-config"):
        try:
            r = subprocess.run(["pkg-config", "--variable=libdir", "nanmap"],
                               capture_output=True, text=True, timeout=10)
            if r.returncode == 0 and r.stdout.strip():
                out.append(os.path.join(r.stdout.strip(), "libnanmap.so"))
        except (OSError, subprocess.SubprocessError):
            pass
    return out


def _load():
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            return ctypes.CDLL(path), os.path.abspath(path) if os.path.sep in path else path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("nanmap: cannot load libnanmap.so (run make, or set NANMAP_LIB): tried "
                      + "; ".join(tried))


lib, lib_path = _load()


def _fn(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


FP = ctypes.POINTER(Format)
EP = ctypes.POINTER(Env)
sz = ctypes.c_size_t

emu_format_count = _fn("emu_format_count", sz)
emu_format_at = _fn("emu_format_at", FP, sz)
emu_format_parse = _fn("emu_format_parse", ctypes.c_int, ctypes.c_char_p, FP,
                       ctypes.c_char_p, sz)
emu_decode = _fn("emu_decode", ctypes.c_double, FP, ctypes.c_uint32)
emu_encode = _fn("emu_encode", ctypes.c_uint32, FP, ctypes.c_double)
emu_classify = _fn("emu_classify", ctypes.c_int, FP, ctypes.c_uint32)
emu_class_name = _fn("emu_class_name", ctypes.c_char_p, ctypes.c_int)
emu_mode_by_name = _fn("emu_mode_by_name", ctypes.c_int, ctypes.c_char_p)
emu_op_by_name = _fn("emu_op_by_name", ctypes.c_int, ctypes.c_char_p)
emu_op_name = _fn("emu_op_name", ctypes.c_char_p, ctypes.c_int)
emu_op_arity = _fn("emu_op_arity", ctypes.c_int, ctypes.c_int)
emu_round_array = _fn("emu_round_array", ctypes.c_uint, FP, c_dp, c_u32p, sz, EP)
emu_a_op = _fn("emu_a_op", AFlags, ctypes.c_int, FP, c_dp, ctypes.POINTER(c_dp),
               ctypes.POINTER(sz), sz, EP, c_u8p)
emu_a_cvt = _fn("emu_a_cvt", AFlags, FP, c_dp, c_dp, sz, sz, EP, c_u8p)
emu_mp_from_double = _fn("emu_mp_from_double", Result, FP, ctypes.c_double, EP)
emu_is_snan = _fn("emu_is_snan", ctypes.c_bool, FP, ctypes.c_uint32)
emu_apply = _fn("emu_apply", Result, ctypes.c_int, FP, FP, c_u32p, EP)
emu_mp_apply = _fn("emu_mp_apply", Result, ctypes.c_int, FP, FP, c_u32p, EP)
emu_from_double = _fn("emu_from_double", Result, FP, ctypes.c_double, EP)

RP = ctypes.POINTER(RecipeHead)
emu_recipe_parse = _fn("emu_recipe_parse", ctypes.c_int, ctypes.c_char_p, RP,
                       ctypes.c_char_p, sz)
emu_role_by_name = _fn("emu_role_by_name", ctypes.c_int, ctypes.c_char_p)
emu_quantize = _fn("emu_quantize", ctypes.c_int, RP, ctypes.c_int, ctypes.c_bool, c_dp, sz, sz,
                   ctypes.c_uint64, ctypes.POINTER(QTensor))
emu_recipe_rht_applies = _fn("emu_recipe_rht_applies", ctypes.c_bool, RP, ctypes.c_int,
                             ctypes.c_bool)
emu_qtensor_free = _fn("emu_qtensor_free", None, ctypes.POINTER(QTensor))
emu_qstats_init = _fn("emu_qstats_init", None, ctypes.POINTER(QStats))
emu_qstats_add = _fn("emu_qstats_add", None, ctypes.POINTER(QStats), ctypes.POINTER(QTensor),
                     c_dp)
emu_qstats_finish = _fn("emu_qstats_finish", None, ctypes.POINTER(QStats))

KP = ctypes.POINTER(Kernel)
RunP = ctypes.POINTER(Run)
emu_kernel_by_name = _fn("emu_kernel_by_name", KP, ctypes.c_char_p)
emu_kernel_count = _fn("emu_kernel_count", sz)
emu_kernel_at = _fn("emu_kernel_at", KP, sz)
emu_kernel_reads_param = _fn("emu_kernel_reads_param", ctypes.c_bool, KP, ctypes.c_char_p)
emu_be_by_name = _fn("emu_be_by_name", ctypes.c_int, ctypes.c_char_p)
emu_policy_parse = _fn("emu_policy_parse", ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p,
                       ctypes.c_char_p, sz)
emu_run_kernel = _fn("emu_run_kernel", ctypes.c_int, KP, ctypes.c_void_p, ctypes.c_char_p,
                     ctypes.POINTER(KIn), ctypes.c_int, RunP, ctypes.c_char_p, sz)
emu_run_truth = _fn("emu_run_truth", ctypes.c_int, KP, ctypes.c_void_p, ctypes.c_char_p,
                    ctypes.POINTER(KIn), ctypes.POINTER(Truth), ctypes.c_char_p, sz)
emu_run_compare = _fn("emu_run_compare", None, RunP, ctypes.POINTER(Truth))
emu_truth_free = _fn("emu_truth_free", None, ctypes.POINTER(Truth))
emu_run_free = _fn("emu_run_free", None, RunP)
emu_run_status_name = _fn("emu_run_status_name", ctypes.c_char_p, ctypes.c_int)
emu_kout_d = _fn("emu_kout_d", ctypes.c_double, ctypes.POINTER(Be), ctypes.POINTER(KoutItem), sz)

GP = ctypes.c_void_p
nm_golden_open = _fn("nm_golden_open", ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(GP),
                     ctypes.c_char_p, sz)
nm_golden_close = _fn("nm_golden_close", None, GP)
nm_golden_case_count = _fn("nm_golden_case_count", sz, GP)
nm_golden_case_at = _fn("nm_golden_case_at", ctypes.POINTER(GCase), GP, sz)
nm_golden_output_count = _fn("nm_golden_output_count", sz, GP)
nm_golden_output_at = _fn("nm_golden_output_at", ctypes.POINTER(GOutput), GP, sz)
nm_golden_compare = _fn("nm_golden_compare", ctypes.c_int, GP, ctypes.c_char_p, c_u32p, sz,
                        ctypes.POINTER(GOpts), ctypes.POINTER(GReport), ctypes.c_char_p, sz)
nm_golden_report_free = _fn("nm_golden_report_free", None, ctypes.POINTER(GReport))
nm_golden_class = _fn("nm_golden_class", ctypes.c_char_p, ctypes.POINTER(GOutput),
                      ctypes.c_uint32)
nm_golden_case_inputs = _fn("nm_golden_case_inputs", ctypes.c_int, GP, ctypes.c_char_p,
                            ctypes.POINTER(GInputs), ctypes.c_char_p, sz)
nm_golden_inputs_free = _fn("nm_golden_inputs_free", None, ctypes.POINTER(GInputs))


def find_cli(near=None):
    """bin/nanmap, for a program that drives the command line:
    $NANMAP, the checkout of the library, the checkout of `near` (a golden
    file's folder), then PATH."""
    env = os.environ.get("NANMAP")
    if env:
        return env
    roots = []
    if os.path.sep in lib_path:
        roots.append(os.path.dirname(os.path.dirname(lib_path)))
    roots.append(os.path.join(_HERE, "..", ".."))
    if near:
        roots.append(os.path.dirname(os.path.abspath(near)))
    for r in roots:
        cand = os.path.join(r, "bin", "nanmap")
        if os.access(cand, os.X_OK):
            return cand
    return shutil.which("nanmap")
