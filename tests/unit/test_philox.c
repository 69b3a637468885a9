/* test_philox.c - templates/tkc_philox.cuh on the host: Philox 4x32-10 against Random123's known
 * answers (tests/kat_vectors, the three "philox4x32 10" lines), the (seed, element) -> uniform
 * mapping and its range, the dropout threshold, and fixed values that bench/philox_ref.py (the
 * Python reference the GPU checks use) gives for the same inputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>

#include <cmocka.h>

#define TKC_DEVICE static inline
#include "../../templates/tkc_philox.cuh"

/* ---- the generator ---------------------------------------------------------------------------- */

static void test_known_answers(void **state) {
    (void)state;
    /* Random123 kat_vectors: counter[4], key[2] -> output[4] */
    static const uint32_t kat[3][10] = {
        {0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u,
         0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
        {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu,
         0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
        {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u,
         0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u},
    };
    for (int v = 0; v < 3; v++) {
        uint32_t c[4] = {kat[v][0], kat[v][1], kat[v][2], kat[v][3]};
        tkc_philox4x32_10(c, kat[v][4], kat[v][5]);
        for (int j = 0; j < 4; j++) assert_int_equal(c[j], kat[v][6 + j]);
    }
}

/* one round by hand: the zero counter stays zero but for the key words */
static void test_one_round(void **state) {
    (void)state;
    uint32_t c[4] = {0, 0, 0, 0};
    tkc_philox_round(c, 0x11111111u, 0x22222222u);
    assert_int_equal(c[0], 0x11111111u);
    assert_int_equal(c[1], 0);
    assert_int_equal(c[2], 0x22222222u);
    assert_int_equal(c[3], 0);
    /* c0 = 1, c2 = 1: the products are the multipliers themselves (hi 0, lo M) */
    uint32_t d[4] = {1, 5, 1, 7};
    tkc_philox_round(d, 0, 0);
    assert_int_equal(d[0], 5u);
    assert_int_equal(d[1], 0xCD9E8D57u);
    assert_int_equal(d[2], 7u);
    assert_int_equal(d[3], 0xD2511F53u);
    /* c0 = c2 = 2^32 - 1: hi = M - 1, lo = 2^32 - M */
    uint32_t e[4] = {0xFFFFFFFFu, 0, 0xFFFFFFFFu, 0};
    tkc_philox_round(e, 0, 0);
    assert_int_equal(e[0], 0xCD9E8D57u - 1u);
    assert_int_equal(e[1], (uint32_t)(0u - 0xCD9E8D57u));
    assert_int_equal(e[2], 0xD2511F53u - 1u);
    assert_int_equal(e[3], (uint32_t)(0u - 0xD2511F53u));
}

/* ---- the mapping ------------------------------------------------------------------------------ */

static void test_float_mapping(void **state) {
    (void)state;
    assert_true(tkc_philox_u01(0) == 0.0f);
    assert_true(tkc_philox_u01(0xFFu) == 0.0f);                     /* the low 8 bits are dropped */
    assert_true(tkc_philox_u01(0x100u) == 5.9604644775390625e-08f); /* 2^-24 */
    assert_true(tkc_philox_u01(0x80000000u) == 0.5f);
    assert_true(tkc_philox_u01(0xFFFFFFFFu) == 1.0f - 5.9604644775390625e-08f);
    assert_true(tkc_philox_u01(0xFFFFFFFFu) < 1.0f);
    /* exact and monotone: every 24-bit value is its own float */
    for (uint32_t h = 0; h < (1u << 24); h += 4093) {
        const float u = tkc_philox_u01(h << 8 | 0x5Au);
        assert_true(u >= 0.0f && u < 1.0f);
        assert_true((uint32_t)(u * 16777216.0f) == h);
    }
}

/* tkc_philox_uniform(seed, i) is word i % 4 of group i / 4, and uniform4 the four of a group */
static void test_element_groups(void **state) {
    (void)state;
    const uint64_t seed = 0x0123456789ABCDEFull;
    const uint64_t gs[] = {0, 1, 2, 1000, 0xFFFFFFFFull, 0x100000000ull, 0x10000000005ull};
    for (size_t k = 0; k < sizeof gs / sizeof *gs; k++) {
        uint32_t w[4];
        float u[4];
        tkc_philox_group(seed, gs[k], w);
        tkc_philox_uniform4(seed, gs[k], u);
        uint32_t c[4] = {(uint32_t)gs[k], (uint32_t)(gs[k] >> 32), 0, 0};
        tkc_philox4x32_10(c, 0x89ABCDEFu, 0x01234567u); /* key = (lo32(seed), hi32(seed)) */
        for (int j = 0; j < 4; j++) {
            assert_int_equal(w[j], c[j]);
            assert_true(u[j] == tkc_philox_u01(w[j]));
            assert_true(tkc_philox_uniform(seed, 4 * gs[k] + (uint64_t)j) == u[j]);
        }
    }
}

/* Values computed once with bench/philox_ref.py (python3 bench/philox_ref.py --c-vectors; its
 * plain-int, numpy and torch paths agree and pass the same known answers) and hard-coded here:
 * they match this KAT-verified C function, so the Python reference and the kernels' generator are
 * the same function. */
static void test_python_reference(void **state) {
    (void)state;
    const uint64_t seed = 0x0123456789ABCDEFull;
    static const struct {
        uint64_t g;
        uint32_t w[4];
    } groups[] = {
        {0x0ull, {0xB850222Eu, 0xC58CB04Bu, 0x14A7A020u, 0x7A84FFF9u}},
        {0x1ull, {0xADCA1466u, 0x523E0D85u, 0x65401425u, 0xB299DA3Fu}},
        {0x100000007ull, {0x1AC64C5Au, 0xF635A398u, 0xDB80F217u, 0x339C0261u}},
        {0x10000000005ull, {0xDE902808u, 0x97844DE3u, 0x384A856Du, 0x433992D2u}},
    };
    for (size_t k = 0; k < sizeof groups / sizeof *groups; k++) {
        uint32_t w[4];
        tkc_philox_group(seed, groups[k].g, w);
        for (int j = 0; j < 4; j++) assert_int_equal(w[j], groups[k].w[j]);
    }
    /* element i -> its uniform, as 24-bit integers (u * 2^24) */
    static const struct {
        uint64_t i;
        uint32_t h;
    } elems[] = {{0, 12079138u}, {1, 12946608u}, {2, 1353632u},  {3, 8029439u},
                 {4, 11389460u}, {4097, 2167950u}, {0x200000003ull, 11789675u}};
    for (size_t k = 0; k < sizeof elems / sizeof *elems; k++)
        assert_int_equal((uint32_t)(tkc_philox_uniform(seed, elems[k].i) * 16777216.0f), elems[k].h);
    assert_int_equal(tkc_philox_threshold(0.1f), 1677722u);
}

/* ---- dropout ---------------------------------------------------------------------------------- */

static void test_threshold(void **state) {
    (void)state;
    assert_int_equal(tkc_philox_threshold(0.0f), 0);
    assert_int_equal(tkc_philox_threshold(-0.5f), 0);
    assert_int_equal(tkc_philox_threshold(NAN), 0); /* NaN keeps all */
    assert_int_equal(tkc_philox_threshold(1.0f), 1u << 24);
    assert_int_equal(tkc_philox_threshold(3.0f), 1u << 24);
    assert_int_equal(tkc_philox_threshold(0.5f), 1u << 23);
    assert_int_equal(tkc_philox_threshold(0.25f), 1u << 22);
    assert_int_equal(tkc_philox_threshold(5.9604644775390625e-08f), 1u);      /* 2^-24 */
    assert_int_equal(tkc_philox_threshold(1e-9f), 1u);                        /* rounds up */
    assert_int_equal(tkc_philox_threshold(1.0f - 5.9604644775390625e-08f), (1u << 24) - 1u);
    /* keep iff (w >> 8) >= threshold(p) is keep iff u >= p */
    static const float ps[] = {0.0f, 1e-7f, 0.1f, 0.3f, 0.5f, 0.9f, 0.999f, 1.0f};
    for (size_t k = 0; k < sizeof ps / sizeof *ps; k++) {
        const uint32_t t = tkc_philox_threshold(ps[k]);
        const uint32_t edge = (uint32_t)(ps[k] * 16777216.0f);
        for (uint32_t d = 0; d < 3; d++) {
            const uint32_t hs[] = {edge - d, edge + d, d, (1u << 24) - 1u - d};
            for (int j = 0; j < 4; j++) {
                if (hs[j] >= (1u << 24)) continue;
                const uint32_t w = hs[j] << 8 | 0xC3u;
                assert_int_equal((w >> 8) >= t, tkc_philox_u01(w) >= ps[k]);
            }
        }
    }
}

/* the statistics a test of a dropout kernel relies on: the mean of u near 1/2, the kept fraction
 * near 1 - p, and another seed giving other numbers */
static void test_statistics(void **state) {
    (void)state;
    const int n = 1 << 18;
    const uint32_t t = tkc_philox_threshold(0.3f);
    double sum = 0;
    int kept = 0, same = 0;
    for (int g = 0; g < n / 4; g++) {
        uint32_t w[4], v[4];
        tkc_philox_group(42, (uint64_t)g, w);
        tkc_philox_group(43, (uint64_t)g, v);
        for (int j = 0; j < 4; j++) {
            sum += tkc_philox_u01(w[j]);
            kept += (w[j] >> 8) >= t;
            same += w[j] == v[j];
        }
    }
    const double mean = sum / n, frac = (double)kept / n;
    /* sigma of the mean of n uniforms: sqrt(1/12/n) ~ 5.6e-4; of the kept fraction ~ 9e-4 */
    assert_true(mean > 0.5 - 0.0025 && mean < 0.5 + 0.0025);
    assert_true(frac > 0.7 - 0.004 && frac < 0.7 + 0.004);
    assert_true(same < 4);
}

/* keep(): stream 1 against bench/philox_ref.py --c-vectors, the halves of a group, the 16-bit
 * threshold, and the kept fraction */
static void test_keep(void **state) {
    (void)state;
    const uint64_t seed = 0x0123456789ABCDEFull;
    static const uint32_t want[2][4] = {
        {0xD0E1FE69u, 0xFEE38B5Fu, 0xE81334EEu, 0x6AD4EDF0u},   /* stream 1, group 0 */
        {0xFDDD7CCBu, 0x8D27B319u, 0xAB087B03u, 0xE3CDE3EEu},   /* stream 1, group 2^32 + 7 */
    };
    const uint64_t groups[2] = {0, (1ull << 32) + 7};
    for (int v = 0; v < 2; v++) {
        uint32_t w[4];
        tkc_philox_group16(seed, groups[v], w);
        for (int j = 0; j < 4; j++) assert_int_equal(w[j], want[v][j]);
        for (int k = 0; k < 8; k++) {   /* element 8g + k: half k % 2 of word k / 2 */
            const uint32_t h = (want[v][k >> 1] >> (16 * (k & 1))) & 0xFFFFu;
            for (uint32_t t = 0; t <= 65536u; t += 4099u) {
                assert_int_equal(tkc_philox_keep_gk(seed, groups[v], k, t), h >= t);
                /* the mask form the rowwise element loops read: bit k is element 8g + k */
                assert_int_equal((tkc_philox_keep8(seed, groups[v], t) >> k) & 1u, h >= t);
            }
            assert_int_equal(tkc_philox_keep(seed, 8 * groups[v] + (uint64_t)k, 0x8000u), h >= 0x8000u);
        }
    }
    /* the python vectors' keep at p = 0.5: elements 0, 1, 7, 8, 4097, 2^33 + 3 */
    const uint64_t el[6] = {0, 1, 7, 8, 4097, (1ull << 33) + 3};
    const int kept[6] = {1, 1, 0, 0, 1, 0};
    for (int i = 0; i < 6; i++) assert_int_equal(tkc_philox_keep(seed, el[i], tkc_philox_threshold16(0.5f)), kept[i]);
    assert_int_equal(tkc_philox_threshold16(0.0f), 0);
    assert_int_equal(tkc_philox_threshold16(-1.0f), 0);
    assert_int_equal(tkc_philox_threshold16(NAN), 0);
    assert_int_equal(tkc_philox_threshold16(1.0f), 65536);
    assert_int_equal(tkc_philox_threshold16(0.5f), 32768);
    assert_int_equal(tkc_philox_threshold16(0.1f), 6554);
    assert_int_equal(tkc_philox_threshold16(1.0f - 1.0f / (1 << 20)), 65536);
    /* p = 0 keeps everything, p = 1 nothing; about 1 - 6554 / 65536 kept at p = 0.1 */
    const int n = 1 << 18;
    int k0 = 0, k1 = 0, k = 0;
    for (int i = 0; i < n; i++) {
        k0 += tkc_philox_keep(7, (uint64_t)i, tkc_philox_threshold16(0.0f));
        k1 += tkc_philox_keep(7, (uint64_t)i, tkc_philox_threshold16(1.0f));
        k += tkc_philox_keep(7, (uint64_t)i, tkc_philox_threshold16(0.1f));
    }
    assert_int_equal(k0, n);
    assert_int_equal(k1, 0);
    const double frac = (double)k / n, want_frac = 1.0 - 6554.0 / 65536.0;   /* sigma ~ 5.9e-4 */
    assert_true(frac > want_frac - 0.003 && frac < want_frac + 0.003);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answers),    cmocka_unit_test(test_one_round),
        cmocka_unit_test(test_float_mapping),    cmocka_unit_test(test_element_groups),
        cmocka_unit_test(test_python_reference), cmocka_unit_test(test_threshold),
        cmocka_unit_test(test_statistics),       cmocka_unit_test(test_keep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
