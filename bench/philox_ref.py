#!/usr/bin/env python3
"""philox_ref.py - Philox 4x32-10 and tkc's dropout mapping in Python: the reference that GPU
checks compare tkc's kernels with (templates/tkc_philox.cuh is the C/CUDA side; both follow the
mapping written out at the top of that file).

  element i (flat index of the logical tensor: row * D + col for [M, D], whatever the strides
  and the launch) -> group g = i // 4, word i % 4 of one Philox 4x32-10 call with
  counter (lo32(g), hi32(g), 0, 0) and key (lo32(seed), hi32(seed));
  u = (word >> 8) * 2**-24 in [0, 1); dropout keeps element i iff (word >> 8) >= ceil(p * 2**24)
  with p rounded to fp32 first (the kernels take p as a float), i.e. iff u >= p.

  keep(seed, offset, p), the language's 16-bit dropout mask: element i -> group g = i // 8 of
  stream 1, counter (lo32(g), hi32(g), 0, 1), element 8g + k takes half k % 2 (0: low 16 bits) of
  word k // 2; kept iff half >= ceil(fp32(p) * 2**16) clamped to [0, 2**16].

Three implementations of the same words: plain Python ints (philox4x32_10, the readable one),
numpy (uint64 arithmetic: a 32 x 32-bit product fits exactly) and torch (int64, which has no
unsigned 64-bit multiply, so the multiply-high is done in 16-bit halves; works on CPU and CUDA).

  python3 bench/philox_ref.py --selftest     known answers (Random123 kat_vectors) on every
                                             backend found, the backends against each other,
                                             the float mapping and the mask's properties (CPU)
  python3 bench/philox_ref.py --c-vectors    the fixed values tests/unit/test_philox.c holds

From Python: keep_mask(seed, p, shape, device=...) -> bool tensor (torch, or numpy without
torch: rand() >= p), keep(seed, p, shape, ...) -> the same for keep(), uniform(seed, shape, ...),
dropout_ref(x, seed, p[, bits=16]) -> fp32 tensor.
"""
import argparse
import math
import struct
import sys

M0, M1 = 0xD2511F53, 0xCD9E8D57      # round multipliers
W0, W1 = 0x9E3779B9, 0xBB67AE85      # Weyl constants of the key schedule
MASK32 = 0xFFFFFFFF
TWO24 = 1 << 24
TWO16 = 1 << 16

# Random123 tests/kat_vectors, the three "philox4x32 10" lines: counter[4], key[2] -> output[4]
KAT = [
    ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x00000000, 0x00000000),
     (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF),
     (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


# ---- plain Python ints ---------------------------------------------------------------------------
def philox4x32_10(ctr, key, rounds=10):
    """The words of Philox 4x32-R for counter ctr (4 words) and key (2 words), as Python ints."""
    c0, c1, c2, c3 = (int(v) & MASK32 for v in ctr)
    k0, k1 = (int(v) & MASK32 for v in key)
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + W0) & MASK32, (k1 + W1) & MASK32
        p0, p1 = M0 * c0, M1 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & MASK32, (p0 >> 32) ^ c3 ^ k1, p0 & MASK32)
    return (c0, c1, c2, c3)


def group_words(seed, g, stream=0):
    """The four words of group g of a stream (0: rand(), elements 4g .. 4g + 3; 1: keep(), elements
    8g .. 8g + 7) under seed (both 64-bit)."""
    seed, g = int(seed) & (2**64 - 1), int(g) & (2**64 - 1)
    return philox4x32_10((g & MASK32, g >> 32, 0, stream), (seed & MASK32, seed >> 32))


def u01(w):
    """The float of a word: its 24 high bits times 2**-24 (exact in fp32)."""
    return (int(w) >> 8) * 2.0**-24


def f32(x):
    """x rounded to the nearest fp32, as a Python float."""
    return struct.unpack("f", struct.pack("f", float(x)))[0]


def threshold(p):
    """ceil(fp32(p) * 2**24) clamped to [0, 2**24]; NaN and p <= 0 give 0 (keep all)."""
    p = f32(p)
    if not p > 0.0:
        return 0
    if p >= 1.0:
        return TWO24
    return int(math.ceil(p * TWO24))


def threshold16(p):
    """keep()'s threshold: ceil(fp32(p) * 2**16) clamped to [0, 2**16]; NaN and p <= 0 give 0."""
    p = f32(p)
    if not p > 0.0:
        return 0
    if p >= 1.0:
        return TWO16
    return int(math.ceil(p * TWO16))


def uniform_scalar(seed, i):
    return u01(group_words(seed, int(i) >> 2)[int(i) & 3])


def keep_scalar(seed, i, p):
    """keep() of element i: its 16 bits (stream 1) against threshold16(p)."""
    i = int(i)
    w = group_words(seed, i >> 3, stream=1)[(i & 7) >> 1]
    return ((w >> 16) if i & 1 else (w & 0xFFFF)) >= threshold16(p)


# ---- numpy ---------------------------------------------------------------------------------------
def _np():
    import numpy
    return numpy


def philox_np(c, key, rounds=10):
    """c: uint64 array [..., 4] of 32-bit words (values < 2**32), key: 2 ints. Returns the same."""
    np = _np()
    c0, c1, c2, c3 = (c[..., j].astype(np.uint64) for j in range(4))
    k0, k1 = int(key[0]) & MASK32, int(key[1]) & MASK32
    m32 = np.uint64(MASK32)
    s32 = np.uint64(32)
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + W0) & MASK32, (k1 + W1) & MASK32
        p0 = c0 * np.uint64(M0)          # < 2**64: exact in uint64
        p1 = c2 * np.uint64(M1)
        c0, c1, c2, c3 = ((p1 >> s32) ^ c1 ^ np.uint64(k0), p1 & m32,
                          (p0 >> s32) ^ c3 ^ np.uint64(k1), p0 & m32)
    return np.stack([c0, c1, c2, c3], axis=-1)


def group_words_np(seed, groups, stream=0):
    """Words [n, 4] (uint64 holding uint32 values) of the groups (a uint64 array) under seed."""
    np = _np()
    g = np.asarray(groups, dtype=np.uint64)
    c = np.zeros(g.shape + (4,), dtype=np.uint64)
    c[..., 0] = g & np.uint64(MASK32)
    c[..., 1] = g >> np.uint64(32)
    c[..., 3] = np.uint64(stream)
    seed = int(seed) & (2**64 - 1)
    return philox_np(c, (seed & MASK32, seed >> 32))


# ---- torch ---------------------------------------------------------------------------------------
def _mulhilo_t(a, m):
    """hi and lo 32-bit halves of a * m for int64 tensors a < 2**32 and a constant m < 2**32,
    without overflowing int64: a * m = a*mh*2**16 + a*ml with mh, ml the 16-bit halves of m."""
    mh, ml = m >> 16, m & 0xFFFF
    p_l = a * ml                     # < 2**48
    p_h = a * mh                     # < 2**48
    t = p_l + ((p_h & 0xFFFF) << 16)  # < 2**49: the low 48 bits of the product, carry included
    return (p_h >> 16) + (t >> 32), t & MASK32


def philox_torch(c, key, rounds=10):
    """c: int64 tensor [..., 4] of 32-bit words (0 <= v < 2**32); key: 2 ints. Returns the same."""
    c0, c1, c2, c3 = c.unbind(-1)
    k0, k1 = int(key[0]) & MASK32, int(key[1]) & MASK32
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + W0) & MASK32, (k1 + W1) & MASK32
        h0, l0 = _mulhilo_t(c0, M0)
        h1, l1 = _mulhilo_t(c2, M1)
        c0, c1, c2, c3 = h1 ^ c1 ^ k0, l1, h0 ^ c3 ^ k1, l0
    import torch
    return torch.stack([c0, c1, c2, c3], dim=-1)


def group_words_torch(seed, groups, stream=0):
    """Words [n, 4] (int64 holding uint32 values) of groups (an int64 tensor, 0 <= g < 2**63)."""
    import torch
    g = groups.to(torch.int64)
    c = torch.stack([g & MASK32, g >> 32, torch.zeros_like(g), torch.full_like(g, stream)], dim=-1)
    seed = int(seed) & (2**64 - 1)
    return philox_torch(c, (seed & MASK32, seed >> 32))


def _have_torch():
    try:
        import torch  # noqa: F401
        return True
    except Exception:
        return False


# ---- elements ------------------------------------------------------------------------------------
CHUNK_GROUPS = 1 << 22   # groups per torch pass: bounds the int64 temporaries (~0.5 GB)


def _words_of_elements(seed, n, device=None, backend=None):
    """The word (>> 8, so 24 bits) of each element 0 .. n-1: torch int64 or numpy uint64 [n]."""
    backend = backend or ("torch" if _have_torch() else "numpy")
    ng = (n + 3) // 4
    if backend == "torch":
        import torch
        parts = []
        for g0 in range(0, ng, CHUNK_GROUPS):
            g = torch.arange(g0, min(ng, g0 + CHUNK_GROUPS), device=device, dtype=torch.int64)
            parts.append((group_words_torch(seed, g) >> 8).reshape(-1))
        w = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.int64, device=device)
        return w[:n]
    np = _np()
    w = group_words_np(seed, np.arange(ng, dtype=np.uint64)) >> np.uint64(8)
    return w.reshape(-1)[:n]


def _halves_of_elements(seed, n, device=None, backend=None):
    """keep()'s 16 bits of each element 0 .. n-1 (stream 1, eight elements a group): torch int64
    or numpy uint64 [n]."""
    backend = backend or ("torch" if _have_torch() else "numpy")
    ng = (n + 7) // 8
    if backend == "torch":
        import torch
        parts = []
        for g0 in range(0, ng, CHUNK_GROUPS):
            g = torch.arange(g0, min(ng, g0 + CHUNK_GROUPS), device=device, dtype=torch.int64)
            w = group_words_torch(seed, g, stream=1)                         # [n, 4]
            parts.append(torch.stack([w & 0xFFFF, w >> 16], dim=-1).reshape(-1))  # word-major, low half first
        h = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.int64, device=device)
        return h[:n]
    np = _np()
    w = group_words_np(seed, np.arange(ng, dtype=np.uint64), stream=1)
    h = np.stack([w & np.uint64(0xFFFF), w >> np.uint64(16)], axis=-1)
    return h.reshape(-1)[:n]


def keep(seed, p, shape, device=None, backend=None):
    """keep(seed, offset, p)'s mask (True: kept) over a tensor of this logical shape, offset 0."""
    n = math.prod(shape)
    return (_halves_of_elements(seed, n, device, backend) >= threshold16(p)).reshape(shape)


def uniform(seed, shape, device=None, backend=None):
    """u of every element of a tensor of this (logical) shape, keyed by flat row-major index."""
    n = math.prod(shape)
    w = _words_of_elements(seed, n, device, backend)
    if hasattr(w, "to") and not hasattr(w, "astype"):
        import torch
        return (w.to(torch.float32) * 2.0**-24).reshape(shape)
    np = _np()
    return (w.astype(np.float32) * np.float32(2.0**-24)).reshape(shape)


def keep_mask(seed, p, shape, device=None, backend=None):
    """Dropout's keep mask (True: kept) for (seed, p) over a tensor of this logical shape."""
    n = math.prod(shape)
    t = threshold(p)
    w = _words_of_elements(seed, n, device, backend)
    return (w >= t).reshape(shape)


def dropout_ref(x, seed, p, bits=24):
    """x (a torch tensor, any strides: the mask follows the logical index) after dropout, fp32:
    bits 24 the mask of rand() >= p, 16 that of keep()."""
    m = (keep if bits == 16 else keep_mask)(seed, p, tuple(x.shape), device=x.device)
    return x.float() * m * dropout_scale(p)


def dropout_scale(p):
    """The scale of kept elements, 1 / (1 - p) as the kernels compute it: 1.0f / (1.0f - p) in fp32
    (0 for p >= 1, where nothing is kept)."""
    p32 = f32(p)
    return 0.0 if p32 >= 1.0 else f32(1.0 / f32(1.0 - p32))


# ---- self-test -----------------------------------------------------------------------------------
def selftest():
    fails, passes = [], 0

    def check(name, ok):
        nonlocal passes
        if ok:
            passes += 1
        else:
            fails.append(name)
            print("FAIL", name)

    for ctr, key, want in KAT:
        check(f"kat python {ctr[0]:08x}", philox4x32_10(ctr, key) == want)
    # 7 rounds, Random123's other philox4x32 rows: the round count is a parameter, not baked in
    check("kat python 7 rounds", philox4x32_10((0, 0, 0, 0), (0, 0), 7) == (0x5F6FB709, 0x0D893F64, 0x4F121F81, 0x4F730A48))
    backends = []
    try:
        np = _np()
        backends.append("numpy")
        for ctr, key, want in KAT:
            got = philox_np(np.array([ctr], dtype=np.uint64), key)[0]
            check(f"kat numpy {ctr[0]:08x}", tuple(int(v) for v in got) == want)
    except ImportError:
        print("numpy not found: its backend is not checked")
    if _have_torch():
        import torch
        backends.append("torch")
        for ctr, key, want in KAT:
            got = philox_torch(torch.tensor([ctr], dtype=torch.int64), key)[0]
            check(f"kat torch {ctr[0]:08x}", tuple(int(v) for v in got) == want)
        # the 16-bit split of the multiply-high against exact products at the extremes
        a = torch.tensor([0, 1, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF, 0x9E3779B9],
                         dtype=torch.int64)
        for m in (M0, M1, 0xFFFFFFFF, 1):
            hi, lo = _mulhilo_t(a, m)
            want = [(int(v) * m >> 32, int(v) * m & MASK32) for v in a]
            check(f"mulhilo torch {m:08x}", [(int(h), int(l)) for h, l in zip(hi, lo)] == want)
    else:
        print("torch not found: its backend is not checked")
    # every backend gives the words of the scalar definition, on small and huge group indices
    seed = 0x0123456789ABCDEF
    groups = [0, 1, 2, 3, 1000, 2**32 - 1, 2**32, 2**40 + 5, 2**63 - 1]
    want = [group_words(seed, g) for g in groups]
    if "numpy" in backends:
        np = _np()
        got = group_words_np(seed, np.array(groups, dtype=np.uint64))
        check("numpy == python", [tuple(int(v) for v in r) for r in got] == want)
    if "torch" in backends:
        import torch
        got = group_words_torch(seed, torch.tensor(groups, dtype=torch.int64))
        check("torch == python", [tuple(int(v) for v in r) for r in got] == want)
    # the float mapping
    check("u01(0) == 0", u01(0) == 0.0)
    check("u01(max) == 1 - 2^-24", u01(MASK32) == 1.0 - 2.0**-24)
    check("u01(2^31) == 0.5", u01(1 << 31) == 0.5)
    check("threshold", [threshold(p) for p in (0.0, -1.0, float("nan"), 1.0, 2.0, 0.5, 0.25)]
          == [0, 0, 0, TWO24, TWO24, 1 << 23, 1 << 22])
    check("threshold 0.1", threshold(0.1) == math.ceil(f32(0.1) * TWO24))
    # keep iff u >= p, over a sweep of words and probabilities
    ok = True
    for p in (0.0, 0.1, 0.3, 0.5, 0.9, 1.0, 1e-7, 1 - 2**-24):
        t, p32 = threshold(p), f32(p)
        for w in list(range(0, 1 << 12, 7)) + [int(p32 * TWO24) << 8, (int(p32 * TWO24) << 8) - 1, MASK32]:
            w &= MASK32
            ok &= ((w >> 8) >= t) == (u01(w) >= p32)
    check("keep iff u >= p", ok)
    # elements: the scalar, numpy and torch mappings agree, masks keep about 1 - p, shapes work
    n = 4099
    ref = [uniform_scalar(seed, i) for i in range(0, n, 97)]
    for b in backends:
        u = uniform(seed, (n,), backend=b)
        check(f"uniform {b} == python", [float(u[i]) for i in range(0, n, 97)] == ref)
        m = keep_mask(seed, 0.3, (1000, 1024), backend=b)
        frac = float(m.sum()) / m.size if b == "numpy" else float(m.sum()) / m.numel()
        sigma = math.sqrt(0.3 * 0.7 / (1000 * 1024))
        check(f"kept fraction {b} {frac:.5f}", abs(frac - 0.7) < 4 * sigma)
        m0 = keep_mask(seed, 0.0, (33, 7), backend=b)
        m1 = keep_mask(seed, 1.0, (33, 7), backend=b)
        check(f"p=0 keeps all, p=1 none ({b})", bool(m0.all()) and not bool(m1.any()))
        m2 = keep_mask(seed + 1, 0.3, (1000, 1024), backend=b)
        check(f"another seed, another mask ({b})", bool((m != m2).any()))
    # keep(): the 16-bit threshold, the scalar definition against every backend, the kept
    # fraction, and stream 1 apart from rand()'s stream 0
    check("threshold16", [threshold16(p) for p in (0.0, -1.0, float("nan"), 1.0, 2.0, 0.5, 0.1, 1 - 2**-20)]
          == [0, 0, 0, TWO16, TWO16, 1 << 15, 6554, TWO16])
    refk = [keep_scalar(seed, i, 0.3) for i in range(0, n, 13)]
    check("keep_scalar halves", all(
        keep_scalar(seed, 8 * g + k, 0.5) == ((((group_words(seed, g, 1)[k >> 1] >> (16 * (k & 1))) & 0xFFFF)) >= 1 << 15)
        for g in (0, 5, 2**33) for k in range(8)))
    for b in backends:
        m = keep(seed, 0.3, (n,), backend=b)
        check(f"keep {b} == python", [bool(m[i]) for i in range(0, n, 13)] == refk)
        m = keep(seed, 0.1, (1000, 1024), backend=b)
        frac = float(m.sum()) / (1000 * 1024)
        want = 1 - threshold16(0.1) / TWO16
        check(f"keep fraction {b} {frac:.5f}", abs(frac - want) < 4 * math.sqrt(want * (1 - want) / (1000 * 1024)))
        m0, m1 = keep(seed, 0.0, (33, 7), backend=b), keep(seed, 1.0, (33, 7), backend=b)
        check(f"keep p=0 all, p=1 none ({b})", bool(m0.all()) and not bool(m1.any()))
    check("streams 0 and 1 differ", group_words(seed, 3, 0) != group_words(seed, 3, 1))
    if "torch" in backends:
        import torch
        x = torch.randn(37, 40).t()                    # strided: the mask follows the logical index
        d = dropout_ref(x, seed, 0.25)
        m = keep_mask(seed, 0.25, (40, 37))
        check("dropout_ref", torch.equal(d, torch.where(m, x.float() * dropout_scale(0.25), 0.0)))
        d16 = dropout_ref(x, seed, 0.25, bits=16)
        m16 = keep(seed, 0.25, (40, 37))
        check("dropout_ref 16", torch.equal(d16, torch.where(m16, x.float() * dropout_scale(0.25), 0.0)))
        check("dropout scale", dropout_scale(0.25) == f32(1 / 0.75) and dropout_scale(1.0) == 0.0)
    print(f"philox_ref selftest ({', '.join(['python'] + backends)}): {passes} passed, {len(fails)} failed")
    return 1 if fails else 0


def c_vectors():
    """The values tests/unit/test_philox.c hard-codes (computed here, checked there against the
    KAT-verified C function)."""
    seed = 0x0123456789ABCDEF
    print(f"seed 0x{seed:016x}")
    for g in (0, 1, 2**32 + 7, 2**40 + 5):
        print(f"group 0x{g:x}: " + ", ".join(f"0x{w:08X}u" for w in group_words(seed, g)))
    for i in (0, 1, 2, 3, 4, 4097, 2**33 + 3):
        print(f"element {i}: u = {uniform_scalar(seed, i)!r} (24-bit {int(uniform_scalar(seed, i) * TWO24)})")
    print("threshold(0.1) =", threshold(0.1), " threshold16(0.1) =", threshold16(0.1))
    for g in (0, 2**32 + 7):
        print(f"stream 1 group 0x{g:x}: " + ", ".join(f"0x{w:08X}u" for w in group_words(seed, g, 1)))
    for i in (0, 1, 7, 8, 4097, 2**33 + 3):
        print(f"keep element {i}, p = 0.5: {int(keep_scalar(seed, i, 0.5))}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--selftest", action="store_true")
    ap.add_argument("--c-vectors", action="store_true")
    a = ap.parse_args()
    if a.c_vectors:
        c_vectors()
        return 0
    if a.selftest:
        return selftest()
    ap.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
