"""nanmap.golden: golden files through the C golden API (emu/io/nm_golden.h).

    g = nanmap.golden.load("golden/softmax_ce.golden")
    case = g["softmax_ce.naive.fp16-fp16.safe"]
    x = case.inputs()                       # float64, rows × cols
    t = case.tensors()                      # every input: {"x": ..., "target": ...}
    nanmap.golden.check(case.output("grad"), my_grad_bits)

check raises AssertionError listing the mismatches as `nanmap check`
prints them. Actual outputs are numpy arrays or anything with __array__
or DLPack (a torch tensor viewed as its bits: t.view(torch.uint16)); torch
is never imported.
"""

import ctypes

import numpy as np

from . import _lib as L

_ERRLEN = 1024


class GoldenError(ValueError):
    """A golden file or a comparison the library refused; its one line."""


class Output:
    """One output of a case: .target ("CASE/OUTPUT"), .name, .format,
    .bits (width), .n, .expected (encodings)."""

    def __init__(self, golden, p):
        self._g = golden
        self._p = p
        o = p.contents
        self.target = o.target.decode()
        self.name = o.name.decode()
        self.format = o.format.decode()
        self.bits = o.bits
        self.n = o.n

    @property
    def expected(self):
        from . import _bits_dtype, _format
        o = self._p.contents
        a = np.ctypeslib.as_array(o.expected, shape=(o.n,)) if o.n else np.empty(0, np.uint32)
        return a.astype(_bits_dtype(_format(self.format)))

    def values(self):
        """The expected encodings decoded (emu_decode)."""
        from . import _decode, _format
        return _decode(_format(self.format), self.expected)

    def __repr__(self):
        return "Output(%s %s[%d])" % (self.target, self.format, self.n)


class Case:
    """One case: .id, .kernel, .variant, .policy, .rows, .cols, .gen,
    .scale, .seed, .status, .outputs {name: Output}."""

    def __init__(self, golden, c):
        self._g = golden
        for k in ("id", "kernel", "variant", "policy", "gen", "status"):
            setattr(self, k, getattr(c, k).decode())
        self.rows, self.cols, self.scale, self.seed = c.rows, c.cols, c.scale, c.seed
        self.outputs = {}

    def output(self, name=None):
        if name is None:
            if len(self.outputs) != 1:
                raise KeyError("case %s has %d outputs (%s): name one" % (
                    self.id, len(self.outputs), " ".join(self.outputs)))
            return next(iter(self.outputs.values()))
        try:
            return self.outputs[name]
        except KeyError:
            raise KeyError("case %s has no output '%s' (%s)" % (
                self.id, name, " ".join(self.outputs))) from None

    def expected(self, output=None):
        """The expected encodings of one output (the only one by default)."""
        return self.output(output).expected

    def inputs(self, encodings=False):
        """The case's input x (float64, rows × cols; encodings=True: the
        storage format's bits), as `nanmap golden export --inputs` writes it."""
        x = self.tensors(encodings=encodings)["x"]
        if encodings and x.dtype == np.float64:
            raise GoldenError("case %s: the kernel takes x as float64 (no format holds it "
                              "as stored): ask for its values" % self.id)
        return x

    def tensors(self, encodings=False):
        """Every tensor the case's kernel consumes, {role: numpy array}: x,
        and what the kernel draws from the seed or builds from its parameters
        (dy, target, w, grad, gamma, ...; matmul's a and b and attention's q,
        k, v, the operands it reads out of x). Each as the kernel is handed
        it, float64 values; encodings=True: for a tensor the kernel rounds
        into a format, that format's encodings (uint8/uint16/uint32) as it
        stores them. Class indices are uint32 either way. The library draws
        them with the kernel's own code (nm_golden_case_inputs), as `nanmap
        golden export --out` writes them; .formats(self) says each format."""
        return {r: a for r, (a, _) in self._tensors(encodings).items()}

    def formats(self):
        """{role: format} of tensors(): the format the kernel rounds a tensor
        into ("fp16"), "float64" (it takes the values as they are) or "index"."""
        return {r: f for r, (_, f) in self._tensors(False).items()}

    def _tensors(self, encodings):
        ins = L.GInputs()
        err = ctypes.create_string_buffer(_ERRLEN)
        if L.nm_golden_case_inputs(self._g._h, self.id.encode(), ctypes.byref(ins), err,
                                   _ERRLEN) != 0:
            raise GoldenError(err.value.decode() or "%s: no inputs" % self.id)
        try:
            out = {}
            for i in range(ins.n):
                t = ins.item[i]
                n = t.rows * t.cols
                shape = (t.cols,) if t.ndim == 1 else (t.rows, t.cols)
                fmt = t.format.decode()
                if fmt == "index":
                    a = np.ctypeslib.as_array(t.values, shape=(n,)).astype(np.uint32)
                elif encodings and t.encodings:
                    dt = np.uint8 if t.bits <= 8 else np.uint16 if t.bits <= 16 else np.uint32
                    a = np.ctypeslib.as_array(t.encodings, shape=(n,)).astype(dt)
                else:
                    a = np.ctypeslib.as_array(t.values, shape=(n,)).copy()
                out[t.role.decode()] = (a.reshape(shape), fmt)
            return out
        finally:
            L.nm_golden_inputs_free(ctypes.byref(ins))

    def __repr__(self):
        return "Case(%s, %s)" % (self.id, ", ".join(map(repr, self.outputs.values())))


class Golden:
    """A parsed golden file: .cases {id: Case}, g[id], g.output(target)."""

    def __init__(self, path):
        self.path = str(path)
        h = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_ERRLEN)
        if L.nm_golden_open(self.path.encode(), ctypes.byref(h), err, _ERRLEN) != 0:
            raise GoldenError(err.value.decode() or "cannot open %s" % self.path)
        self._h = h
        cases = [Case(self, L.nm_golden_case_at(h, i).contents)
                 for i in range(L.nm_golden_case_count(h))]
        self.cases = {c.id: c for c in cases}
        self.outputs = {}
        for i in range(L.nm_golden_output_count(h)):
            p = L.nm_golden_output_at(h, i)
            o = Output(self, p)
            cases[p.contents.case_index].outputs[o.name] = o
            self.outputs[o.target] = o

    def __getitem__(self, case_id):
        try:
            return self.cases[case_id]
        except KeyError:
            raise KeyError("%s: no case '%s'" % (self.path, case_id)) from None

    def __iter__(self):
        return iter(self.cases.values())

    def __len__(self):
        return len(self.cases)

    def output(self, target):
        return self.outputs[target]

    def close(self):
        if self._h:
            L.nm_golden_close(self._h)
            self._h = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def load(path):
    """Read and check a golden file (nm_golden_open)."""
    return Golden(path)


def _array(actual):
    """A numpy view of actual: DLPack first where the object speaks it (no
    copy), else __array__ / the buffer protocol."""
    if not isinstance(actual, np.ndarray) and hasattr(actual, "__dlpack__") and \
            hasattr(np, "from_dlpack"):
        try:
            return np.from_dlpack(actual)
        except (TypeError, ValueError, RuntimeError, BufferError):
            pass  # e.g. a dtype DLPack cannot hand numpy: try __array__
    return np.asarray(actual)


def _as_encodings(o, actual):
    """actual as uint32 encodings of o's format, by nm_golden_read_actual's
    rules: unsigned (or signed, reinterpreted) integers of up to the
    format's width; float16 for fp16 outputs and float32 for fp32 ones, as
    their bits; float64 values exactly representable in the format,
    encoded by the library."""
    from . import NanmapError, _format, round as _round
    a = _array(actual)
    f = _format(o.format)
    if a.dtype.kind == "b" or a.dtype.kind not in "uif":
        raise TypeError("%s: actual outputs of dtype %s (want the format's bits)" % (
            o.target, a.dtype))
    if a.dtype.kind == "i":
        a = a.view(a.dtype.str.replace("i", "u"))
    if a.dtype.kind == "u":
        if a.dtype.itemsize * 8 > max(8, 1 << (o.bits - 1).bit_length()):
            raise TypeError("%s: %s is wider than %s's %d bits" % (o.target, a.dtype,
                                                                   o.format, o.bits))
        return np.ascontiguousarray(a.ravel(), dtype=np.uint32)
    if a.dtype == np.float16 and o.format == "fp16":
        return a.ravel().view(np.uint16).astype(np.uint32)
    if a.dtype == np.float32 and o.format == "fp32":
        return a.ravel().view(np.uint32).astype(np.uint32)
    r = _round(a.ravel(), f)
    bad = np.flatnonzero((r.flags.elements & 0x10) != 0)
    if bad.size:
        raise NanmapError("%s: actual[%d] = %r is not a value of %s (pass its encodings)" % (
            o.target, bad[0], float(a.ravel()[bad[0]]), o.format))
    return r.bits.astype(np.uint32)


def _show(o, f, b):
    """A value as nanmap check shows it: nan, inf, ±0 by class, else %.9g."""
    c = L.emu_classify(ctypes.byref(f), int(b))
    if c in (0, 3, 4):  # zero, inf, NaN
        return L.nm_golden_class(o._p, int(b)).decode()
    return "%.9g" % L.emu_decode(ctypes.byref(f), int(b))


def _ulp(u):
    return "inf" if u == 2**64 - 1 else str(u)


class Report:
    """What compare returns: .checked, .mismatched, .max_ulp (None: inf),
    .mismatches [(index, expected, actual, ulp)], .lines (nanmap check's)."""


def compare(case_output, actual, ulp=0, nan_sign="ignore"):
    """Compare actual with a golden output (nm_golden_compare); a Report."""
    from . import _format
    o = case_output
    if isinstance(o, Case):
        o = o.output()
    enc = _as_encodings(o, actual)
    opts = L.GOpts(int(ulp), {"ignore": 0, "strict": 1}[nan_sign])
    rep = L.GReport()
    err = ctypes.create_string_buffer(_ERRLEN)
    if L.nm_golden_compare(o._g._h, o.target.encode(), enc.ctypes.data_as(L.c_u32p), enc.size,
                           ctypes.byref(opts), ctypes.byref(rep), err, _ERRLEN) != 0:
        raise GoldenError(err.value.decode() or "%s: comparison failed" % o.target)
    try:
        f = _format(o.format)
        w = (o.bits + 3) // 4
        r = Report()
        r.checked, r.mismatched = rep.checked, rep.mismatched
        r.max_ulp = None if rep.max_ulp == 2**64 - 1 else int(rep.max_ulp)
        r.mismatches, r.lines = [], []
        for i in range(rep.mismatched):
            m = rep.mismatches[i]
            r.mismatches.append((int(m.index), int(m.expected), int(m.actual),
                                 None if m.ulp == 2**64 - 1 else int(m.ulp)))
            r.lines.append("%s[%d]: expected 0x%0*x (%s), actual 0x%0*x (%s), ulp %s" % (
                o.name, m.index, w, m.expected, _show(o, f, m.expected), w, m.actual,
                _show(o, f, m.actual), _ulp(m.ulp)))
        r.lines.append("checked %d, mismatched %d, max ulp %s" % (
            rep.checked, rep.mismatched, _ulp(rep.max_ulp)))
        return r
    finally:
        L.nm_golden_report_free(ctypes.byref(rep))


def check(case_output, actual, ulp=0, nan_sign="ignore"):
    """Assert that actual matches a golden output; the AssertionError lists
    every mismatch and the summary line as `nanmap check` prints them."""
    r = compare(case_output, actual, ulp=ulp, nan_sign=nan_sign)
    if r.mismatched:
        raise AssertionError("\n".join(r.lines))
    return r
