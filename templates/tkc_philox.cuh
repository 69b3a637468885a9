// tkc_philox.cuh - Philox 4x32-10, the counter-based generator of Salmon, Moraes, Dror and Shaw,
// "Parallel random numbers: as easy as 1, 2, 3" (SC 2011), and the mapping from (seed, element
// index) to a uniform float that dropout uses. A pure function of its inputs: the same seed gives
// the same numbers on any launch configuration, so a mask reproduces from the seed alone.
// Plain C (no CUDA built-ins; stdint from the includer): tests/unit/test_philox.c checks it on the
// host with TKC_DEVICE defined as a host function, against Random123's known answers, and
// bench/philox_ref.py is the same generator in Python (torch and numpy) for GPU-side references.
// tkc copies the fragments a kernel uses; tests/compile/templates.cu compiles them for sm_90a.
//
// The mapping, exactly (every tkc kernel and bench/philox_ref.py follow it):
//   element i (a 64-bit flat index of the logical tensor, row * D + col for [M, D], independent
//   of strides and of how the launch splits the work) belongs to group g = i / 4 and takes word
//   i % 4 of one Philox call, so four consecutive elements share one call;
//   counter = (lo32(g), hi32(g), 0, 0); key = (lo32(seed), hi32(seed)); 10 rounds;
//   u = (word >> 8) * 2^-24: the 24 high bits, exactly representable, u in [0, 1 - 2^-24].
//   dropout with probability p (an fp32 value) keeps element i iff u >= p, i.e. iff
//   (word >> 8) >= tkc_philox_threshold(p) = ceil(p * 2^24): p = 0 keeps all, p = 1 drops all.
// The counter's upper two words are zero here; they are free for a later offset (a layer or a
// step) that must not change the seed.
// keep(seed, offset, p), the dropout mask at 16 bits an element, eight elements a call:
//   element i belongs to group g = i / 8 of stream 1: counter = (lo32(g), hi32(g), 0, 1), the same
//   key and rounds; element 8g + k takes half k % 2 (0: the low 16 bits) of word k / 2;
//   keep iff half >= tkc_philox_threshold16(p) = ceil(p * 2^16) clamped to [0, 2^16] (NaN: 0), so
//   p acts rounded up to a multiple of 2^-16 (0.1 keeps with probability 1 - 6554 / 65536).
//   Stream 1 keeps these words apart from rand()'s (stream 0) under the same seed.

// @fragment philox
// One round. With M0 = 0xD2511F53 and M1 = 0xCD9E8D57 and the 64-bit products M0 * c0 and
// M1 * c2 split into hi and lo halves:
//   (c0, c1, c2, c3) <- (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0)).
// On the GPU the halves are mul.hi.u32 and mul.lo.u32 (__umulhi: a 64-bit product written in C
// comes out of nvcc as 64-bit multiplies, shifts and XORs); on the host, the 64-bit product.
TKC_DEVICE uint32_t tkc_philox_mulhi(uint32_t a, uint32_t m) {
#ifdef __CUDA_ARCH__
    return __umulhi(a, m);
#else
    return (uint32_t)(((uint64_t)a * m) >> 32);
#endif
}
TKC_DEVICE void tkc_philox_round(uint32_t c[4], uint32_t k0, uint32_t k1) {
    const uint32_t n0 = tkc_philox_mulhi(c[2], 0xCD9E8D57u) ^ c[1] ^ k0;
    const uint32_t n2 = tkc_philox_mulhi(c[0], 0xD2511F53u) ^ c[3] ^ k1;
    c[1] = c[2] * 0xCD9E8D57u;
    c[3] = c[0] * 0xD2511F53u;
    c[0] = n0;
    c[2] = n2;
}
// Ten rounds, in place: the first with the key as given, each later one after adding the Weyl
// constants 0x9E3779B9 and 0xBB67AE85 to the two key words (mod 2^32).
TKC_DEVICE void tkc_philox4x32_10(uint32_t c[4], uint32_t k0, uint32_t k1) {
#ifdef __CUDACC__
#pragma unroll
#endif
    for (int r = 0; r < 10; r++) {
        if (r) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        tkc_philox_round(c, k0, k1);
    }
}
// The 24 high bits of a word as a float in [0, 1): (w >> 8) * 2^-24, exact.
TKC_DEVICE float tkc_philox_u01(uint32_t w) { return (float)(w >> 8) * 5.9604644775390625e-08f; }
// The four words of group g (elements 4g .. 4g + 3) under seed.
TKC_DEVICE void tkc_philox_group(uint64_t seed, uint64_t g, uint32_t w[4]) {
    w[0] = (uint32_t)g;
    w[1] = (uint32_t)(g >> 32);
    w[2] = 0;
    w[3] = 0;
    tkc_philox4x32_10(w, (uint32_t)seed, (uint32_t)(seed >> 32));
}
// The uniforms of elements 4g .. 4g + 3 (one Philox call for four elements).
TKC_DEVICE void tkc_philox_uniform4(uint64_t seed, uint64_t g, float u[4]) {
    uint32_t w[4];
    tkc_philox_group(seed, g, w);
    for (int j = 0; j < 4; j++) u[j] = tkc_philox_u01(w[j]);
}
// Word k of four, by selects rather than an indexed array (an index known only at run time would put
// the array in local memory).
TKC_DEVICE uint32_t tkc_philox_pick(const uint32_t w[4], unsigned k) {
    return k == 0 ? w[0] : k == 1 ? w[1] : k == 2 ? w[2] : w[3];
}
// The uniform of element i alone (a whole call for one value: for edges and tests).
TKC_DEVICE float tkc_philox_uniform(uint64_t seed, uint64_t i) {
    uint32_t w[4];
    tkc_philox_group(seed, i >> 2, w);
    return tkc_philox_u01(tkc_philox_pick(w, (unsigned)(i & 3)));
}
// The uniform of word w of group g: elements whose group the caller knows (rand() over 8-column
// chunks whose first element index is a multiple of 4: four elements share g, one call).
TKC_DEVICE float tkc_philox_uniform_gw(uint64_t seed, uint64_t g, int w) {
    uint32_t v[4];
    tkc_philox_group(seed, g, v);
    return tkc_philox_u01(tkc_philox_pick(v, (unsigned)(w & 3)));
}
// The dropout threshold of probability p: ceil(p * 2^24) clamped to [0, 2^24] (NaN: 0). Element
// i is kept iff (word >> 8) >= threshold, which is u >= p without a conversion per element.
TKC_DEVICE uint32_t tkc_philox_threshold(float p) {
    if (!(p > 0.0f)) return 0;
    if (p >= 1.0f) return 16777216u;
    const float x = p * 16777216.0f;   // exact: a power-of-two scaling of p < 1
    uint32_t t = (uint32_t)x;
    if ((float)t < x) t++;
    return t;
}
// @fragment philox16
// keep(): needs the philox fragment before it.
// The four words of group g of stream 1 (keep(): elements 8g .. 8g + 7) under seed.
TKC_DEVICE void tkc_philox_group16(uint64_t seed, uint64_t g, uint32_t w[4]) {
    w[0] = (uint32_t)g;
    w[1] = (uint32_t)(g >> 32);
    w[2] = 0;
    w[3] = 1;
    tkc_philox4x32_10(w, (uint32_t)seed, (uint32_t)(seed >> 32));
}
// keep()'s threshold of probability p: ceil(p * 2^16) clamped to [0, 2^16] (NaN: 0).
// Selects, not branches: called once an element, it must fold into one value for the tile.
TKC_DEVICE uint32_t tkc_philox_threshold16(float p) {
    const float x = p > 0.0f ? (p < 1.0f ? p * 65536.0f : 65536.0f) : 0.0f;  // exact: a power-of-two scaling
    const uint32_t t = (uint32_t)x;
    return t + ((float)t < x ? 1u : 0u);
}
// keep() of element 8g + k (the caller knows the group: rowwise chunks of 8 columns whose first
// index is a multiple of 8 share one call): 1 iff its 16 bits are at least the threshold t.
TKC_DEVICE int tkc_philox_keep_gk(uint64_t seed, uint64_t g, int k, uint32_t t) {
    uint32_t v[4];
    tkc_philox_group16(seed, g, v);
    const uint32_t w = tkc_philox_pick(v, (unsigned)(k >> 1) & 3u);
    return ((k & 1) ? (w >> 16) : (w & 0xFFFFu)) >= t;
}
// keep() of the eight elements 8g .. 8g + 7 as bits 0..7 of a mask, from one Philox call (element
// 8g + k is bit k: the same bits tkc_philox_keep_gk gives one at a time).
TKC_DEVICE uint32_t tkc_philox_keep8(uint64_t seed, uint64_t g, uint32_t t) {
    uint32_t v[4];
    tkc_philox_group16(seed, g, v);
    uint32_t m = 0;
#ifdef __CUDACC__
#pragma unroll
#endif
    for (int j = 0; j < 4; j++)
        m |= (uint32_t)((v[j] & 0xFFFFu) >= t) << (2 * j) | (uint32_t)((v[j] >> 16) >= t) << (2 * j + 1);
    return m;
}
// keep() of element i alone (a whole call for one element: for edges, other layouts and tests).
TKC_DEVICE int tkc_philox_keep(uint64_t seed, uint64_t i, uint32_t t) {
    return tkc_philox_keep_gk(seed, i >> 3, (int)(i & 7), t);
}
