"""nanmap from Python: numpy arrays in, exact low-precision answers out.

Every number comes from libnanmap.so (the C library nanmap's command line
is built on): rounding through emu_a_cvt / emu_round_array, arithmetic
through emu_a_op, quantisation through emu_quantize and its statistics,
kernels through emu_run_kernel, golden checks through nm_golden_compare.
This package only moves arrays in and out and names things; docs/python.md
is its manual.
"""

import ctypes

import numpy as np

from . import _lib as L
from ._lib import FLAG_NAMES

__all__ = ["NanmapError", "formats", "format_info", "decode", "round", "add", "sub", "mul", "div",
           "fma", "sqrt", "exp", "log", "exp2", "rsqrt", "min", "max", "op", "quant", "run", "kernels",
           "golden", "train", "lib_path"]

lib_path = L.lib_path
_ERRLEN = 1024


class NanmapError(ValueError):
    """A C function refused its input; the message is the library's line."""


def _err_buf():
    return ctypes.create_string_buffer(_ERRLEN)


def _msg(buf, fallback):
    s = buf.value.decode("utf-8", "replace").strip()
    return s or fallback


# ---- formats ----

_fmt_cache = {}


def _format(spec):
    """An emu_format from a name or custom spec, parsed by the library."""
    if isinstance(spec, L.Format):
        return spec
    key = str(spec)
    f = _fmt_cache.get(key)
    if f is None:
        f = L.Format()
        err = _err_buf()
        if L.emu_format_parse(key.encode(), ctypes.byref(f), err, _ERRLEN) != 0:
            raise NanmapError(_msg(err, "unknown format '%s'" % key))
        _fmt_cache[key] = f
    return f


def _fmt_dict(f):
    return {
        "name": f.name.decode(), "bits": f.bits, "p": f.p, "ebits": f.ebits, "bias": f.bias,
        "emin": f.emin, "emax": f.emax, "has_sign": f.has_sign, "has_inf": f.has_inf,
        "has_subnormals": f.has_subnormals, "has_zero": f.has_zero,
        "nan": ("ieee", "fn", "fnuz", "none")[f.nan], "max": f.max,
        "min_normal": f.min_normal, "min_subnormal": f.min_subnormal, "epsilon": f.epsilon,
        "max_bits": f.max_bits, "nan_bits": f.nan_bits, "inf_bits": f.inf_bits,
    }


def formats():
    """The built-in formats: a list of dicts (name, bits, p, emin, emax, max, ...)."""
    return [_fmt_dict(L.emu_format_at(i).contents) for i in range(L.emu_format_count())]


def format_info(fmt):
    """One format's fields, by name or custom spec ("p=5,emax=15,nan=fn")."""
    return _fmt_dict(_format(fmt))


def _bits_dtype(f):
    return np.uint8 if f.bits <= 8 else np.uint16 if f.bits <= 16 else np.uint32


def _env(mode, sat, ftz, daz, seed):
    m = L.emu_mode_by_name(str(mode).encode())
    if m >= 6:  # EMU_NMODES
        raise NanmapError("unknown rounding mode '%s' (rne rtz up down rna sr)" % mode)
    if not 0 <= int(seed) < 2**64:
        raise NanmapError("seed %d is not in [0, 2^64)" % int(seed))
    return L.Env(m, bool(sat), bool(ftz), bool(daz), int(seed), 0)


def _dp(a):
    return a.ctypes.data_as(L.c_dp)


def _round_bits(f, x, env):
    """emu_round_array: x's encodings in f under env (SR index = i)."""
    out = np.empty(x.shape, dtype=np.uint32)
    L.emu_round_array(ctypes.byref(f), _dp(x), out.ctypes.data_as(L.c_u32p), x.size,
                      ctypes.byref(env))
    return out.astype(_bits_dtype(f))


def _encode(f, values):
    """Encodings of values that are exact in f (or NaN, ±inf). A number
    rounds to itself, so emu_round_array gives its encoding in one call.
    NaN (whose sign the rounding's produced NaN would drop) and, in a
    format without zero, ±0 take emu_encode's encoding: one call per
    distinct value, assigned by sign."""
    v = np.ascontiguousarray(values, dtype=np.float64)
    out = _round_bits(f, v, L.Env(0, False, False, False, 0, 0))
    special = np.isnan(v)
    if not f.has_zero:
        special |= v == 0
    if special.any():
        neg = np.signbit(v)
        for is_nan in (True, False):
            for sign in (False, True):
                m = special & (np.isnan(v) == is_nan) & (neg == sign)
                if m.any():
                    x = np.copysign(np.nan if is_nan else 0.0, -1.0 if sign else 1.0)
                    out[m] = L.emu_encode(ctypes.byref(f), float(x))
    return out


_decode_tables = {}


def _decode(f, bits):
    """Values of encodings, each emu_decode's (a table of every encoding for
    formats up to 16 bits, built once from the library)."""
    b = np.asarray(bits)
    if b.dtype.kind not in "ui":
        raise TypeError("encodings must be an integer array, not %s" % b.dtype)
    b = b.astype(np.int64)
    if b.size and (b.min() < 0 or b.max() >> f.bits):
        raise NanmapError("an encoding does not fit %s's %d bits" % (f.name.decode(), f.bits))
    if f.bits <= 16:
        key = bytes(f)
        t = _decode_tables.get(key)
        if t is None:
            t = np.array([L.emu_decode(ctypes.byref(f), i) for i in range(1 << f.bits)])
            _decode_tables[key] = t
        return t[b]
    flat = b.ravel()
    out = np.fromiter((L.emu_decode(ctypes.byref(f), int(x)) for x in flat), np.float64,
                      count=flat.size)
    return out.reshape(b.shape)


def decode(bits, fmt):
    """The values (float64) of encodings of fmt (any integer array): each
    emu_decode's, so every NaN encoding is NaN, and ±0, ±inf keep their
    sign."""
    return _decode(_format(fmt), bits)


class Flags:
    """Flag counts (.counts: name -> elements that raised it), their OR
    (.any, names), the first element that raised overflow, invalid or
    divbyzero (.first_bad, None when none did), and each element's flags
    (.elements: uint8, bit k for FLAG_NAMES[k])."""

    def __init__(self, af, elements):
        self.counts = {FLAG_NAMES[k]: int(af.count[k]) for k in range(5)}
        self.any = [FLAG_NAMES[k] for k in range(5) if af.any >> k & 1]
        self.first_bad = None if af.first_bad == 2**64 - 1 else int(af.first_bad)
        self.elements = elements

    def __getitem__(self, name):
        return self.counts[name]

    def __repr__(self):
        return "Flags(%s)" % ", ".join("%s=%d" % kv for kv in self.counts.items() if kv[1])


class Rounded:
    """What nanmap.round and the arithmetic return: .values (float64, exact
    values of the format), .bits (encodings, uint8/16/32 by the format's
    width), .flags (Flags), .format (its name)."""

    def __init__(self, f, values, flags):
        self._f = f
        self.format = f.name.decode()
        self.values = values
        self.flags = flags
        self._bits = None

    @property
    def bits(self):
        # from the values this result owns (never from the caller's input,
        # which may have changed since); computed when first read
        if self._bits is None:
            self._bits = _encode(self._f, self.values)
        return self._bits

    def __repr__(self):
        return "Rounded(%s, values=%r, %r)" % (self.format, self.values, self.flags)


def _float_input(x):
    a = np.asarray(x)
    if a.dtype.kind not in "fiu":
        raise TypeError("nanmap: want a float64, float32 or float16 array, not %s" % a.dtype)
    # float32 and float16 values are exact in float64: the library sees the
    # same numbers
    return np.ascontiguousarray(a, dtype=np.float64)


def round(x, fmt, mode="rne", sat=False, ftz=False, seed=0, daz=False):
    """Round x (float64/float32/float16, any shape) to fmt. Element i draws
    SR bits keyed by (seed, i) as `nanmap round --seed` does."""
    f = _format(fmt)
    env = _env(mode, sat, ftz, daz, seed)
    a = _float_input(x)
    dst = np.empty(a.shape, dtype=np.float64)
    fl = np.empty(a.shape, dtype=np.uint8)
    af = L.emu_a_cvt(ctypes.byref(f), _dp(dst), _dp(a), 1, a.size, ctypes.byref(env),
                     fl.ctypes.data_as(L.c_u8p))
    return Rounded(f, dst, Flags(af, fl))


def _check_values(f, a, name, k):
    """Refuse an operand that is not a value of f, as `nanmap op` does: the
    array ops take exact values (converting it is nanmap.round's job)."""
    if a.size == 0:
        return
    env = L.Env(0, False, False, False, 0, 0)
    tmp = np.empty(a.shape, dtype=np.float64)
    fl = np.empty(a.shape, dtype=np.uint8)
    L.emu_a_cvt(ctypes.byref(f), _dp(tmp), _dp(a), 1, a.size, ctypes.byref(env),
                fl.ctypes.data_as(L.c_u8p))
    bad = np.flatnonzero(fl & 0x14)  # inexact or overflow: not a value of f
    if bad.size:
        i = int(bad[0])
        raise NanmapError("%s: operand %d, element %d: %r is not a value of %s (round it "
                          "first, or pass encodings with bits=True)"
                          % (name, k + 1, i, float(a.flat[i]), f.name.decode()))


def op(name, *args, fmt="fp16", mode="rne", sat=False, ftz=False, daz=False, seed=0,
       bits=False):
    """One emu_a_op over arrays that broadcast (numpy's rules): operands are
    exact values of fmt, or its encodings with bits=True."""
    o = L.emu_op_by_name(str(name).encode())
    if o >= L.EMU_NOPS or o == 0:
        raise NanmapError("unknown operation '%s'" % name)
    arity = L.emu_op_arity(o)
    if len(args) != arity:
        raise TypeError("%s takes %d operand%s, got %d" % (name, arity, "s"[:arity > 1],
                                                            len(args)))
    f = _format(fmt)
    env = _env(mode, sat, ftz, daz, seed)
    if bits:
        enc = [np.asarray(a) for a in args]
        ops = [_decode(f, a) for a in enc]
    else:
        ops = [np.asarray(a) for a in args]
        for a in ops:
            if a.dtype.kind not in "fiu":
                raise TypeError("nanmap: operands must be numbers, not %s" % a.dtype)
    ops = [np.ascontiguousarray(a, dtype=np.float64) for a in np.broadcast_arrays(*ops)]
    if not bits:
        for k, a in enumerate(ops):
            _check_values(f, a, name, k)
    shape = ops[0].shape if ops else ()
    n = int(np.prod(shape, dtype=np.int64))
    # an operand broadcast whole (a scalar) goes as stride 0; numpy has
    # expanded everything else
    dst = np.empty(shape, dtype=np.float64)
    fl = np.empty(shape, dtype=np.uint8)
    argv = (L.c_dp * arity)(*[_dp(a) for a in ops])
    strides = (ctypes.c_size_t * arity)(*([1] * arity))
    af = L.emu_a_op(o, ctypes.byref(f), _dp(dst), argv, strides, n, ctypes.byref(env),
                    fl.ctypes.data_as(L.c_u8p))
    res = Rounded(f, dst, Flags(af, fl))
    if bits:
        _snan_elements(o, f, env, enc, shape, res)
    return res


def _snan_elements(o, f, env, enc, shape, res):
    """A signaling NaN encoding has no double of its own (the value domain
    reads it as a quiet NaN), so elements with one are the scalar operation
    on the encodings (emu_apply), which raises invalid as IEEE 754 says."""
    enc = [np.broadcast_to(a, shape).astype(np.int64) for a in enc]
    snan = np.zeros(shape, dtype=bool)
    for a in enc:
        snan |= _snan_table(f)[a] if f.bits <= 16 else np.vectorize(
            lambda b: L.emu_is_snan(ctypes.byref(f), int(b)), otypes=[bool])(a)
    idx = np.flatnonzero(snan)
    if not idx.size:
        return
    bits = res.bits.copy()
    fl = res.flags.elements
    e = L.Env(env.mode, env.sat, env.ftz, env.daz, env.seed, 0)
    for i in idx:
        e.index = int(i)
        argv = (ctypes.c_uint32 * 3)(*[int(a.flat[i]) for a in enc])
        r = L.emu_apply(o, ctypes.byref(f), ctypes.byref(f), argv, ctypes.byref(e))
        bits.flat[i] = r.bits
        res.values.flat[i] = L.emu_decode(ctypes.byref(f), r.bits)
        old, fl.flat[i] = int(fl.flat[i]), r.flags
        for k in range(5):
            res.flags.counts[FLAG_NAMES[k]] += (r.flags >> k & 1) - (old >> k & 1)
    res.flags.any = [FLAG_NAMES[k] for k in range(5)
                     if np.any(fl & (1 << k))]
    bad = np.flatnonzero(fl & 0x7)
    res.flags.first_bad = int(bad[0]) if bad.size else None
    res._bits = bits


_snan_tables = {}


def _snan_table(f):
    key = bytes(f)
    t = _snan_tables.get(key)
    if t is None:
        t = np.array([L.emu_is_snan(ctypes.byref(f), i) for i in range(1 << f.bits)], bool)
        _snan_tables[key] = t
    return t


def _mk(name, arity):
    if arity == 1:
        def fn(a, fmt="fp16", **kw):
            return op(name, a, fmt=fmt, **kw)
    elif arity == 2:
        def fn(a, b, fmt="fp16", **kw):
            return op(name, a, b, fmt=fmt, **kw)
    else:
        def fn(a, b, c, fmt="fp16", **kw):
            return op(name, a, b, c, fmt=fmt, **kw)
    fn.__name__ = name
    fn.__doc__ = ("nanmap.%s: emu_a_op(%s) elementwise in fmt; keywords as nanmap.op "
                  "(mode, sat, ftz, daz, seed, bits)." % (name, name.upper()))
    return fn


add = _mk("add", 2)
sub = _mk("sub", 2)
mul = _mk("mul", 2)
div = _mk("div", 2)
fma = _mk("fma", 3)
sqrt = _mk("sqrt", 1)
exp = _mk("exp", 1)
log = _mk("log", 1)
exp2 = _mk("exp2", 1)
rsqrt = _mk("rsqrt", 1)
min = _mk("min", 2)
max = _mk("max", 2)


# ---- the exact backend (MPFR in the format), for cross-checks ----

def round_exact(x, fmt, mode="rne", sat=False, ftz=False, seed=0, daz=False):
    """x rounded to fmt by the MPFR backend (emu_mp_from_double), element by
    element: (encodings, per-element flags). Slow; the tests use it."""
    f = _format(fmt)
    a = _float_input(x)
    bits = np.empty(a.shape, dtype=_bits_dtype(f))
    fl = np.empty(a.shape, dtype=np.uint8)
    env = _env(mode, sat, ftz, daz, seed)
    for i, v in enumerate(a.ravel()):
        env.index = i
        r = L.emu_mp_from_double(ctypes.byref(f), float(v), ctypes.byref(env))
        bits.flat[i] = r.bits
        fl.flat[i] = r.flags
    return bits, fl


# ---- scaling recipes ----

class Quantized:
    """nanmap.quant's result: .codes (element encodings), .q (their values),
    .values (dequantised, q · d · t exactly), .flags (per element),
    .scales (per block decode scale d, as stored), .scale_codes, .amax (per
    block), .multipliers, .block (block shape used), .tensor_amax, .s_enc,
    .t, .rht (the values are in the Hadamard-rotated basis), .stats (dict:
    emu_qstats, as nanmap quant reports them), .recipe (canonical name)."""

    def __repr__(self):
        return "Quantized(%s, shape=%s, sqnr_db=%s)" % (self.recipe, self.values.shape,
                                                         self.stats["sqnr_db"])


_STAT_INTS = ("n", "nan_in", "inf_in", "saturated", "flushed", "lost", "within",
              "nonfinite_out", "blocks", "zero_scale", "nan_scale", "inf_scale")
_STAT_REALS = ("amax", "sqnr_db", "max_rel", "mean_rel", "bias", "bias_se")


def _recipe(spec):
    r = L.RecipeHead()
    err = _err_buf()
    if L.emu_recipe_parse(str(spec).encode(), ctypes.byref(r), err, _ERRLEN) != 0:
        raise NanmapError(_msg(err, "bad recipe '%s'" % spec))
    return r


def quant(x, recipe, role="act", colwise=False, seed=0):
    """Quantise x (1-D: one row; 2-D: rows × cols) by a scaling recipe
    (emu_quantize), with the statistics nanmap quant reports (emu_qstats)."""
    r = _recipe(recipe)
    ro = L.emu_role_by_name(str(role).encode())
    if ro >= 3:
        raise NanmapError("unknown role '%s' (act weight grad)" % role)
    a = _float_input(x)
    if a.ndim > 2:
        raise ValueError("nanmap.quant: want a 1-D or 2-D array, not %d-D" % a.ndim)
    shape = a.shape
    rows, cols = (1, a.size) if a.ndim < 2 else shape
    qt = L.QTensor()
    if L.emu_quantize(ctypes.byref(r), ro, bool(colwise), _dp(a), rows, cols, int(seed),
                      ctypes.byref(qt)) != 0:
        raise MemoryError("nanmap.quant: out of memory")
    try:
        n = rows * cols
        nb = qt.nbr * qt.nbc

        def take(ptr, count, dtype):
            if count == 0:
                return np.empty(0, dtype=dtype)
            return np.ctypeslib.as_array(ptr, shape=(count,)).astype(dtype, copy=True)

        out = Quantized()
        out.recipe = r.name.decode()
        out.format = r.elem.name.decode()
        out.scale_format = r.scale_fmt.name.decode()
        out.codes = take(qt.code, n, _bits_dtype(r.elem)).reshape(shape)
        out.q = take(qt.q, n, np.float64).reshape(shape)
        out.values = take(qt.deq, n, np.float64).reshape(shape)
        out.flags = take(qt.flags, n, np.uint8).reshape(shape)
        bshape = (qt.nbr, qt.nbc)
        out.scales = take(qt.d, nb, np.float64).reshape(bshape)
        out.scale_codes = take(qt.dcode, nb, _bits_dtype(r.scale_fmt)).reshape(bshape)
        out.multipliers = take(qt.m, nb, np.float64).reshape(bshape)
        out.amax = take(qt.amax, nb, np.float64).reshape(bshape)
        out.block = (qt.brows, qt.bcols)
        out.tensor_amax, out.s_enc, out.t = qt.tensor_amax, qt.s_enc, qt.t
        st = L.QStats()
        L.emu_qstats_init(ctypes.byref(st))
        # under RHT the dequantised values live in the rotated basis and are
        # judged against the rotated input, as nanmap quant judges them
        rht = L.emu_recipe_rht_applies(ctypes.byref(r), ro, bool(colwise))
        L.emu_qstats_add(ctypes.byref(st), ctypes.byref(qt), qt.x if rht else _dp(a))
        out.rht = bool(rht)
        L.emu_qstats_finish(ctypes.byref(st))
        stats = {k: int(getattr(st, k)) for k in _STAT_INTS}
        stats.update({k: float(getattr(st, k)) for k in _STAT_REALS})
        stats["scale_exp_hist"] = {k - 150: int(st.exp_hist[k]) for k in range(300)
                                   if st.exp_hist[k]}
        out.stats = stats
        return out
    finally:
        L.emu_qtensor_free(ctypes.byref(qt))


from .run import kernels, run  # noqa: E402
from . import golden  # noqa: E402

from .training import TrainError, train  # noqa: E402
