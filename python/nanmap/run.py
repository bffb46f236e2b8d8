"""nanmap.run: a training kernel on one backend (emu_run_kernel), measured
against the 256-bit MPFR truth (emu_run_truth, emu_run_compare) as
`nanmap run` measures it (docs/run.md)."""

import ctypes

import numpy as np

from . import _lib as L

_ERRLEN = 1024


def kernels():
    """The kernels: {name: {"variants": [...], "params": doc line}}."""
    out = {}
    for i in range(L.emu_kernel_count()):
        k = L.emu_kernel_at(i).contents
        vs = []
        j = 0
        while k.variants and k.variants[j]:
            vs.append(k.variants[j].decode())
            j += 1
        out[k.name.decode()] = {"variants": vs,
                                "params": (k.params_doc or b"").decode()}
    return out


class RunResult:
    """.status ("ok", "underflow", "overflow", "inf", "nan"), .outputs
    {name: float64 array}, .bits {name: encodings}, .formats {name: format},
    .errors {name: {max_ulp, rel_err, lost, arith_max_ulp, arith_rel_err}}
    (empty with truth=False), .flags {op: {"ops": n, flag: count}}, .first
    (the first op that raised overflow, invalid or divbyzero: {op, step,
    index, flags}, or None), .stored {n, changed, overflow, flushed}: the
    input elements as stored (how many storing changed, overflowed, flushed)."""

    def __repr__(self):
        return "RunResult(%s %s, status=%s, outputs=%s)" % (
            self.kernel, self.variant, self.status, list(self.outputs))


def _flag_names(fl):
    return [L.FLAG_NAMES[k] for k in range(5) if fl >> k & 1]


def _collect(r, res):
    from . import _encode  # the library's encoding of exact values
    be = r.be
    res.status = L.emu_run_status_name(r.status).decode()
    res.outputs, res.bits, res.formats = {}, {}, {}
    for i in range(r.out.n):
        it = r.out.item[i]
        name = it.name.decode()
        v = np.array([L.emu_kout_d(ctypes.byref(be), ctypes.byref(it), j) for j in range(it.n)]
                     if be.kind == 2 else
                     np.ctypeslib.as_array(it.vec.contents.d, shape=(it.n,)).copy()
                     if it.n else np.empty(0))
        res.outputs[name] = v
        f = it.fmt.contents
        res.formats[name] = f.name.decode()
        if be.kind != 2:
            res.bits[name] = _encode(f, v)
    st = be.st
    res.flags = {}
    for o in range(L.EMU_NOPS):
        if st.ops[o]:
            d = {"ops": int(st.ops[o])}
            for k in range(5):
                if st.flags[o][k]:
                    d[L.FLAG_NAMES[k]] = int(st.flags[o][k])
            res.flags[L.emu_op_name(o).decode()] = d
    res.first = None
    if st.first_set:
        res.first = {"op": L.emu_op_name(st.first_op).decode(),
                     "step": st.first_step.decode() if st.first_step else None,
                     "index": int(st.first_index), "flags": _flag_names(st.first_flags)}
    res.stored = {"n": int(st.in_n), "changed": int(st.in_changed),
                  "overflow": int(st.in_overflow), "flushed": int(st.in_flushed)}


def _array_values(t):
    """A tensor's values as an array (class indices and other integers as
    their values, not bits)."""
    a = np.asarray(t)
    return a.astype(np.float64) if a.dtype.kind in "uib" else a


def run(kernel, x, policy, variant=None, params=None, backend="fast", seed=0, truth=True,
        tensors=None):
    """Run a kernel on x (1-D: one row; 2-D: rows × cols) under a precision
    policy ("storage=fp16,compute=fp32", docs/run.md) on backend "fast" or
    "exact" (or "truth": the 256-bit run itself). params: {name: number}.
    truth=False skips the truth runs (no .errors), as --no-truth does.
    tensors: {role: array} given instead of what the kernel draws from the
    seed or builds from its parameters (dy, target, w, ...: a golden case's
    case.tensors() without x), as `nanmap run --tensor` gives them."""
    from . import NanmapError, _float_input
    k = L.emu_kernel_by_name(str(kernel).encode())
    if not k:
        raise NanmapError("unknown kernel '%s' (%s)" % (kernel, " ".join(kernels())))
    kind = L.emu_be_by_name(str(backend).encode())
    if kind >= 3:
        raise NanmapError("unknown backend '%s' (fast exact truth)" % backend)
    err = ctypes.create_string_buffer(_ERRLEN)
    pol = ctypes.create_string_buffer(L.OPAQUE_POLICY)
    if L.emu_policy_parse(str(policy).encode(), pol, err, _ERRLEN) != 0:
        raise NanmapError(err.value.decode() or "bad policy '%s'" % policy)
    a = _float_input(x)
    if a.ndim > 2:
        raise ValueError("nanmap.run: want a 1-D or 2-D input, not %d-D" % a.ndim)
    rows, cols = (1, a.size) if a.ndim < 2 else a.shape
    params = dict(params or {})
    for n in params:
        # the library runs a kernel with whatever it is given; a parameter
        # it does not read is refused here as the command line refuses it
        if not L.emu_kernel_reads_param(k, str(n).encode()):
            raise NanmapError("unknown parameter '%s' for %s (it reads: %s)"
                              % (n, kernel, (k.contents.params_doc or b"").decode()))
    names = [str(n).encode() for n in params]
    kp = (L.KParam * max(len(params), 1))()
    for i, (n, v) in enumerate(zip(names, params.values())):
        kp[i].name = n
        kp[i].value = float(v)
    given = []  # (role bytes, float64 array), kept alive through the run
    for role, t in (tensors or {}).items():
        v = np.ascontiguousarray(_array_values(t), dtype=np.float64)
        if v.ndim > 2:
            raise ValueError("nanmap.run: tensor %s is %d-D (1-D or 2-D)" % (role, v.ndim))
        given.append((str(role).encode(), v))
    kt = (L.KTensor * max(len(given), 1))()
    for i, (role, v) in enumerate(given):
        r_, c_ = (1, v.size) if v.ndim < 2 else v.shape
        kt[i] = L.KTensor(role, r_, c_, v.ctypes.data_as(L.c_dp))
    kin = L.KIn(a.ctypes.data_as(L.c_dp), rows, cols, kp, len(params), int(seed), kt,
                len(given))
    var = str(variant).encode() if variant is not None else None
    r = L.Run()
    t = L.Truth()
    have_truth = False
    try:
        if L.emu_run_kernel(k, pol, var, ctypes.byref(kin), kind, ctypes.byref(r), err,
                            _ERRLEN) != 0:
            raise NanmapError(err.value.decode() or "%s failed" % kernel)
        res = RunResult()
        res.kernel = kernel
        res.variant = variant if variant is not None else kernels()[kernel]["variants"][0]
        res.policy = policy
        res.backend = backend
        res.errors = {}
        if truth and kind != 2:
            have_truth = True
            if L.emu_run_truth(k, pol, var, ctypes.byref(kin), ctypes.byref(t), err,
                               _ERRLEN) != 0:
                raise NanmapError(err.value.decode() or "%s: truth failed" % kernel)
            L.emu_run_compare(ctypes.byref(r), ctypes.byref(t))
        _collect(r, res)
        if r.have_metrics:
            for i in range(r.out.n):
                m = r.m[i]
                res.errors[r.out.item[i].name.decode()] = {
                    "max_ulp": m.max_ulp, "rel_err": m.rel_err, "lost": int(m.lost),
                    "arith_max_ulp": m.arith_max_ulp, "arith_rel_err": m.arith_rel_err}
        return res
    finally:
        if have_truth:
            L.emu_truth_free(ctypes.byref(t))
        L.emu_run_free(ctypes.byref(r))


