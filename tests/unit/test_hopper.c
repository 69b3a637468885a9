/* test_hopper.c - unit tests of src/hopper.c against the facts in ../shared/docs/hopper-primer.md:
 * swizzle XOR formulas (section 3), tile layouts, wgmma descriptors, LBO/SBO, K steps, register splits, bank conflicts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "hopper.h"

#define TKC_DEVICE static inline
#include "../../templates/tkc_layout.cuh"

/* ---- swizzle ---------------------------------------------------------------------------------- */

/* The primer's formulas, written out once more from the table in section 3.1. */
static uint32_t primer_swizzle(Swizzle s, uint32_t a) {
    switch (s) {
    case SWZ_128: return a ^ (((a >> 7) & 7u) << 4);
    case SWZ_64: return a ^ (((a >> 7) & 3u) << 4);
    case SWZ_32: return a ^ (((a >> 7) & 1u) << 4);
    default: return a;
    }
}

static void test_swizzle_tables(void **state) {
    (void)state;
    /* span, name, TMA CUtensorMapSwizzle, descriptor bits 62-63, alignment (primer 3.2) */
    assert_int_equal(swizzle_bytes(SWZ_NONE), 0);
    assert_int_equal(swizzle_bytes(SWZ_32), 32);
    assert_int_equal(swizzle_bytes(SWZ_64), 64);
    assert_int_equal(swizzle_bytes(SWZ_128), 128);
    assert_string_equal(swizzle_name(SWZ_NONE), "none");
    assert_string_equal(swizzle_name(SWZ_32), "32B");
    assert_string_equal(swizzle_name(SWZ_64), "64B");
    assert_string_equal(swizzle_name(SWZ_128), "128B");
    assert_int_equal(swizzle_tma_enum(SWZ_NONE), 0);
    assert_int_equal(swizzle_tma_enum(SWZ_32), 1);
    assert_int_equal(swizzle_tma_enum(SWZ_64), 2);
    assert_int_equal(swizzle_tma_enum(SWZ_128), 3);
    assert_int_equal(swizzle_desc_mode(SWZ_NONE), 0);
    assert_int_equal(swizzle_desc_mode(SWZ_32), 3);
    assert_int_equal(swizzle_desc_mode(SWZ_64), 2);
    assert_int_equal(swizzle_desc_mode(SWZ_128), 1);
    assert_int_equal(swizzle_align(SWZ_32), 256);
    assert_int_equal(swizzle_align(SWZ_64), 512);
    assert_int_equal(swizzle_align(SWZ_128), 1024);
}

static void test_swizzle_apply_formulas(void **state) {
    (void)state;
    static const Swizzle modes[] = {SWZ_NONE, SWZ_32, SWZ_64, SWZ_128};
    for (int m = 0; m < 4; m++)
        for (uint32_t a = 0; a < 16384; a++) assert_int_equal(swizzle_apply(modes[m], a), primer_swizzle(modes[m], a));
}

static void test_swizzle_apply_values(void **state) {
    (void)state;
    /* 128B: line 1, chunk 0 -> chunk 1; line 7, chunk 7 -> chunk 0; the low 4 bits stay */
    assert_int_equal(swizzle_apply(SWZ_128, 128), 144);
    assert_int_equal(swizzle_apply(SWZ_128, 7 * 128 + 7 * 16 + 5), 7 * 128 + 0 * 16 + 5);
    assert_int_equal(swizzle_apply(SWZ_128, 3 * 128 + 1 * 16), 3 * 128 + 2 * 16);
    assert_int_equal(swizzle_apply(SWZ_128, 8 * 128 + 16), 8 * 128 + 16); /* period 8 lines */
    /* 64B: key = line & 3, so line 4 is unswizzled; only bits 4-5 change */
    assert_int_equal(swizzle_apply(SWZ_64, 128), 144);
    assert_int_equal(swizzle_apply(SWZ_64, 3 * 128), 3 * 128 + 48);
    assert_int_equal(swizzle_apply(SWZ_64, 4 * 128 + 32), 4 * 128 + 32);
    assert_int_equal(swizzle_apply(SWZ_64, 3 * 128 + 64), 3 * 128 + 64 + 48);
    /* 32B: key = line & 1 on bit 4 only */
    assert_int_equal(swizzle_apply(SWZ_32, 128), 144);
    assert_int_equal(swizzle_apply(SWZ_32, 128 + 16), 128);
    assert_int_equal(swizzle_apply(SWZ_32, 256 + 16), 256 + 16);
    assert_int_equal(swizzle_apply(SWZ_32, 128 + 96), 128 + 112);
    /* none: the identity */
    assert_int_equal(swizzle_apply(SWZ_NONE, 12345), 12345);
}

static void test_swizzle_apply_properties(void **state) {
    (void)state;
    static const Swizzle modes[] = {SWZ_32, SWZ_64, SWZ_128};
    for (int m = 0; m < 3; m++) {
        Swizzle s = modes[m];
        uint32_t period = (uint32_t)swizzle_align(s);
        unsigned char seen[1024] = {0};
        for (uint32_t a = 0; a < 4 * period; a++) {
            uint32_t p = swizzle_apply(s, a);
            /* an involution that keeps the 128-byte line and the byte inside its 16-byte chunk */
            assert_int_equal(swizzle_apply(s, p), a);
            assert_int_equal(p >> 7, a >> 7);
            assert_int_equal(p & 15u, a & 15u);
            /* periodic with the swizzle period (the required alignment) */
            assert_int_equal(swizzle_apply(s, a + period), p + period);
            if (a < period) {
                assert_true(p < period);
                assert_int_equal(seen[p], 0); /* a permutation of the period */
                seen[p] = 1;
            }
        }
        /* the mode moves chunks only across the bits it owns: 128B bits 4-6, 64B 4-5, 32B 4 */
        uint32_t owned = s == SWZ_128 ? 0x70u : s == SWZ_64 ? 0x30u : 0x10u;
        for (uint32_t a = 0; a < 2 * period; a++) assert_int_equal((swizzle_apply(s, a) ^ a) & ~owned, 0);
    }
}

static void test_swizzle_choose(void **state) {
    (void)state;
    assert_int_equal(swizzle_choose(128), SWZ_128);
    assert_int_equal(swizzle_choose(256), SWZ_128);
    assert_int_equal(swizzle_choose(512), SWZ_128);
    assert_int_equal(swizzle_choose(64), SWZ_64);
    assert_int_equal(swizzle_choose(192), SWZ_64);
    assert_int_equal(swizzle_choose(32), SWZ_32);
    assert_int_equal(swizzle_choose(96), SWZ_32);
    assert_int_equal(swizzle_choose(160), SWZ_32);
    assert_int_equal(swizzle_choose(16), SWZ_NONE);
    assert_int_equal(swizzle_choose(48), SWZ_NONE);
    assert_int_equal(swizzle_choose(0), SWZ_NONE);
    assert_int_equal(swizzle_choose(-128), SWZ_NONE);
}

/* ---- tile layouts ----------------------------------------------------------------------------- */

static void test_tile_atoms(void **state) {
    (void)state;
    TileLayout a128 = {128, 64, 2, SWZ_128}, b128 = {64, 256, 2, SWZ_128};
    TileLayout a64 = {128, 64, 2, SWZ_64}, a32 = {128, 64, 2, SWZ_32}, f32 = {64, 64, 4, SWZ_128};
    TileLayout none = {64, 40, 2, SWZ_NONE};
    assert_int_equal(tile_atom_cols(&a128), 64);
    assert_int_equal(tile_atom_cols(&b128), 64);
    assert_int_equal(tile_atom_cols(&a64), 32);
    assert_int_equal(tile_atom_cols(&a32), 16);
    assert_int_equal(tile_atom_cols(&f32), 32);
    assert_int_equal(tile_atom_cols(&none), 40);
    assert_int_equal(tile_bytes(&a128), 16384);
    assert_int_equal(tile_bytes(&b128), 32768);
    assert_int_equal(tile_bytes(&f32), 16384);
    assert_int_equal(tile_bytes(&none), 5120);
}

static void test_tile_logical_offset(void **state) {
    (void)state;
    /* one atom column: row-major with a 128-byte pitch */
    TileLayout a = {128, 64, 2, SWZ_128};
    assert_int_equal(tile_logical_offset(&a, 0, 0), 0);
    assert_int_equal(tile_logical_offset(&a, 0, 63), 126);
    assert_int_equal(tile_logical_offset(&a, 1, 0), 128);
    assert_int_equal(tile_logical_offset(&a, 127, 63), 16382);
    /* a [64][256] bf16 tile is four [64 x 128 B] atom columns side by side, 8 KiB apart */
    TileLayout b = {64, 256, 2, SWZ_128};
    assert_int_equal(tile_logical_offset(&b, 0, 64), 8192);
    assert_int_equal(tile_logical_offset(&b, 1, 65), 8192 + 128 + 2);
    assert_int_equal(tile_logical_offset(&b, 63, 255), 3 * 8192 + 63 * 128 + 63 * 2);
    /* 64B and 32B spans: atoms of 32 and 16 bf16 columns */
    TileLayout c = {128, 64, 2, SWZ_64}, d = {128, 64, 2, SWZ_32};
    assert_int_equal(tile_logical_offset(&c, 1, 31), 64 + 62);
    assert_int_equal(tile_logical_offset(&c, 0, 32), 128 * 64);
    assert_int_equal(tile_logical_offset(&d, 2, 17), 128 * 32 + 2 * 32 + 2);
    assert_int_equal(tile_logical_offset(&d, 0, 48), 3 * 128 * 32);
    /* no swizzle: plain row-major */
    TileLayout e = {64, 40, 2, SWZ_NONE};
    assert_int_equal(tile_logical_offset(&e, 3, 5), (3 * 40 + 5) * 2);
    /* every element of an atom-column layout has its own 2-byte slot */
    static unsigned char used[16384];
    for (int r = 0; r < 128; r++)
        for (int col = 0; col < 64; col++) {
            uint32_t o = tile_offset(&d, r, col);
            assert_true(o + 2 <= 16384);
            assert_int_equal(used[o], 0);
            used[o] = 1;
        }
}

static void test_tile_offset_primer_example(void **state) {
    (void)state;
    /* primer 3.1: in a 128B tile with 64-bf16 rows, (r, k) is at r*128 + (((k/8) ^ (r%8)) << 4) + (k%8)*2 */
    TileLayout t = {128, 64, 2, SWZ_128};
    for (int r = 0; r < 128; r++)
        for (int k = 0; k < 64; k++)
            assert_int_equal(tile_offset(&t, r, k), (uint32_t)(r * 128 + (((k / 8) ^ (r % 8)) << 4) + (k % 8) * 2));
    /* 64B / 32B: 2 or 4 rows share a 128-byte line, so the key is the line index (r*span) >> 7 */
    static const Swizzle modes[] = {SWZ_64, SWZ_32};
    for (int m = 0; m < 2; m++) {
        int span = swizzle_bytes(modes[m]), ac = span / 2, keymask = modes[m] == SWZ_64 ? 3 : 1;
        TileLayout u = {64, ac, 2, modes[m]};
        for (int r = 0; r < 64; r++)
            for (int k = 0; k < ac; k++) {
                int line = (r * span) >> 7;
                int chunk = ((r * span) & 127) / 16 + k / 8;
                uint32_t want = (uint32_t)(line * 128 + ((chunk ^ (line & keymask)) << 4) + (k % 8) * 2);
                assert_int_equal(tile_offset(&u, r, k), want);
            }
    }
    /* the physical offset is the logical one swizzled */
    TileLayout b = {64, 256, 2, SWZ_128};
    for (int r = 0; r < 64; r += 3)
        for (int c = 0; c < 256; c += 5)
            assert_int_equal(tile_offset(&b, r, c), swizzle_apply(SWZ_128, tile_logical_offset(&b, r, c)));
    TileLayout n = {16, 24, 2, SWZ_NONE};
    assert_int_equal(tile_offset(&n, 9, 7), tile_logical_offset(&n, 9, 7));
}

/* ---- wgmma descriptors ------------------------------------------------------------------------ */

static void test_desc_bits(void **state) {
    (void)state;
    /* start 0x400 -> 0x40 in bits 0-13; LBO 16 -> 1 in bits 16-29; SBO 1024 -> 64 in bits 32-45;
     * mode 1 (128B) in bits 62-63 */
    assert_int_equal(wgmma_desc_encode(0x400, 16, 1024, 1), 0x4000004000010040ull);
    assert_int_equal(wgmma_desc_encode(0, 0, 0, 0), 0);
    assert_int_equal(wgmma_desc_encode(0x10, 0, 0, 0), 1ull);
    assert_int_equal(wgmma_desc_encode(0, 0x10, 0, 0), 1ull << 16);
    assert_int_equal(wgmma_desc_encode(0, 0, 0x10, 0), 1ull << 32);
    assert_int_equal(wgmma_desc_encode(0, 0, 0, 3), 3ull << 62);
    assert_int_equal(wgmma_desc_encode(0, 0, 0, 2), 2ull << 62);
    /* the start address keeps bits 4-17 of the shared address (& 0x3FFFF) */
    assert_int_equal(wgmma_desc_encode(0x3FFF0, 0, 0, 0), 0x3FFFull);
    assert_int_equal(wgmma_desc_encode(0x40010, 0, 0, 0), 1ull);
    /* all-ones inputs leave the reserved bits (14-15, 30-31, 46-61) zero */
    uint64_t d = wgmma_desc_encode(0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 3);
    uint64_t fields = 0x3FFFull | (0x3FFFull << 16) | (0x3FFFull << 32) | (3ull << 62);
    assert_int_equal(d, fields);
    /* advancing one k16 step inside a 128-byte row adds 32 B, i.e. desc + 2 (primer 2.4) */
    assert_int_equal(wgmma_desc_encode(0x400 + 32, 16, 1024, 1), wgmma_desc_encode(0x400, 16, 1024, 1) + 2);
}

static void test_desc_round_trip(void **state) {
    (void)state;
    for (uint32_t addr = 0; addr < 0x40000; addr += 0x1230)
        for (uint32_t lbo = 0; lbo < 0x40000; lbo += 0x2350)
            for (int mode = 0; mode < 4; mode++) {
                uint32_t sbo = (0x3FFF0u - lbo) & ~15u;
                uint32_t a2, l2, s2;
                int m2, base;
                uint64_t d = wgmma_desc_encode(addr & ~15u, lbo & ~15u, sbo, mode);
                wgmma_desc_decode(d, &a2, &l2, &s2, &m2, &base);
                assert_int_equal(a2, addr & ~15u);
                assert_int_equal(l2, lbo & ~15u);
                assert_int_equal(s2, sbo);
                assert_int_equal(m2, mode);
                assert_int_equal(base, 0);
            }
    /* decode reads the base offset from bits 49-51 */
    uint32_t a, l, s;
    int m, base;
    wgmma_desc_decode((5ull << 49) | (1ull << 62) | 7, &a, &l, &s, &m, &base);
    assert_int_equal(base, 5);
    assert_int_equal(m, 1);
    assert_int_equal(a, 0x70);
    assert_int_equal(l, 0);
    assert_int_equal(s, 0);
}

/* ---- wgmma operand layouts -------------------------------------------------------------------- */

static void test_operand_layout_k_major(void **state) {
    (void)state;
    /* primer 2.3: K-major SBO 1024 / 512 / 256, LBO unused (encodes as 1), modes 1 / 2 / 3 */
    TileLayout t128 = {128, 64, 2, SWZ_128}, t64 = {128, 32, 2, SWZ_64}, t32 = {128, 16, 2, SWZ_32};
    MmaOperandLayout o = mma_operand_layout(&t128, false);
    assert_int_equal(o.sbo, 1024);
    assert_int_equal(o.mode, 1);
    assert_int_equal((wgmma_desc_encode(0, o.lbo, o.sbo, o.mode) >> 16) & 0x3FFF, 1);
    assert_int_equal((wgmma_desc_encode(0, o.lbo, o.sbo, o.mode) >> 32) & 0x3FFF, 64);
    o = mma_operand_layout(&t64, false);
    assert_int_equal(o.sbo, 512);
    assert_int_equal(o.mode, 2);
    assert_int_equal((wgmma_desc_encode(0, o.lbo, o.sbo, o.mode) >> 16) & 0x3FFF, 1);
    assert_int_equal((wgmma_desc_encode(0, o.lbo, o.sbo, o.mode) >> 32) & 0x3FFF, 32);
    o = mma_operand_layout(&t32, false);
    assert_int_equal(o.sbo, 256);
    assert_int_equal(o.mode, 3);
    assert_int_equal((wgmma_desc_encode(0, o.lbo, o.sbo, o.mode) >> 32) & 0x3FFF, 16);
    /* the SBO depends on the span only, not on how many rows or atom columns the tile has */
    TileLayout wide = {256, 128, 2, SWZ_64};
    assert_int_equal(mma_operand_layout(&wide, false).sbo, 512);
}

static void test_operand_layout_mn_major(void **state) {
    (void)state;
    /* primer 2.3: B stored [64 K rows][N] with 128B swizzle: atoms of 64 n x 64 k, 8 KiB apart */
    TileLayout b = {64, 256, 2, SWZ_128};
    MmaOperandLayout o = mma_operand_layout(&b, true);
    assert_int_equal(o.lbo, 8192);
    assert_int_equal(o.sbo, 1024);
    assert_int_equal(o.mode, 1);
    /* 64B: atoms are 64 rows x 64 B apart; the next 8 K rows are 512 B on */
    TileLayout c = {64, 128, 2, SWZ_64};
    o = mma_operand_layout(&c, true);
    assert_int_equal(o.lbo, 64 * 64);
    assert_int_equal(o.sbo, 512);
    assert_int_equal(o.mode, 2);
    TileLayout d = {128, 64, 2, SWZ_32};
    o = mma_operand_layout(&d, true);
    assert_int_equal(o.lbo, 128 * 32);
    assert_int_equal(o.sbo, 256);
    assert_int_equal(o.mode, 3);
}

static void test_operand_offset_k_steps(void **state) {
    (void)state;
    /* primer 2.4: step j of a BK = 64 bf16 tile starts at (32j/span)*rows*span + (32j % span) */
    static const Swizzle modes[] = {SWZ_128, SWZ_64, SWZ_32};
    for (int m = 0; m < 3; m++) {
        TileLayout t = {128, 64, 2, modes[m]};
        uint32_t span = (uint32_t)swizzle_bytes(modes[m]);
        for (int j = 0; j < 4; j++) {
            uint32_t want = (32u * j / span) * 128u * span + (32u * j % span);
            assert_int_equal(mma_operand_offset(&t, false, 0, 16 * j), want);
        }
    }
    /* the explicit values: 128B 0/32/64/96; 64B 0/32/8192/8224; 32B 0/4096/8192/12288 */
    TileLayout t64 = {128, 64, 2, SWZ_64}, t32 = {128, 64, 2, SWZ_32};
    assert_int_equal(mma_operand_offset(&t64, false, 0, 32), 8192);
    assert_int_equal(mma_operand_offset(&t64, false, 0, 48), 8224);
    assert_int_equal(mma_operand_offset(&t32, false, 0, 48), 12288);
    /* the second consumer warpgroup's A rows: 64 rows of 128 B further (descA(sA + 8192c)) */
    TileLayout a = {128, 64, 2, SWZ_128};
    assert_int_equal(mma_operand_offset(&a, false, 64, 0), 8192);
    assert_int_equal(mma_operand_offset(&a, false, 64, 16), 8192 + 32);
    /* MN-major B [64 K][256 N]: each k16 step adds 16 * 128 = 2048 B; the next atom along N is LBO on */
    TileLayout b = {64, 256, 2, SWZ_128};
    for (int j = 0; j < 4; j++) assert_int_equal(mma_operand_offset(&b, true, 0, 16 * j), 2048u * j);
    assert_int_equal(mma_operand_offset(&b, true, 64, 0), 8192);
    assert_int_equal(mma_operand_offset(&b, true, 128, 32), 2 * 8192 + 4096);
    /* start addresses are logical (the hardware swizzles): row 1 of a 128B tile is not XORed */
    assert_int_equal(mma_operand_offset(&a, false, 1, 16), 128 + 32);
}

/* ---- register split --------------------------------------------------------------------------- */

static void test_reg_split(void **state) {
    (void)state;
    int p, c;
    /* primer 6: 2 consumers 40/232, 3 consumers 32/160 */
    reg_split_default(2, &p, &c);
    assert_int_equal(p, 40);
    assert_int_equal(c, 232);
    reg_split_default(3, &p, &c);
    assert_int_equal(p, 32);
    assert_int_equal(c, 160);
    for (int n = 1; n <= 3; n++) {
        reg_split_default(n, &p, &c);
        assert_int_equal(p % 8, 0);
        assert_int_equal(c % 8, 0);
        assert_true(p >= 24 && c <= 256 && c >= p);
        assert_true(128 * (p + n * c) <= REG_FILE);
        assert_true(reg_split_fits(n, p, c, block_reg_pool(128 * (n + 1), 1)));
    }
    assert_true(reg_split_fits(2, 24, 240, REG_FILE));     /* 64,512 */
    assert_true(reg_split_fits(3, 32, 160, REG_FILE));     /* exactly 65,536 */
    assert_false(reg_split_fits(3, 40, 160, REG_FILE));    /* 66,560 */
    assert_false(reg_split_fits(2, 40, 240, REG_FILE));    /* 66,560 */
    assert_false(reg_split_fits(2, 40, 230, REG_FILE));    /* not a multiple of 8 */
    assert_false(reg_split_fits(2, 36, 224, REG_FILE));    /* not a multiple of 8 */
    assert_false(reg_split_fits(2, 16, 232, REG_FILE));    /* setmaxnreg takes 24..256 */
    assert_false(reg_split_fits(1, 24, 264, REG_FILE));
    assert_true(reg_split_fits(1, 56, 256, REG_FILE));
    /* the pool a block is given: threads x ptxas's cap under __launch_bounds__(threads, blocks) */
    assert_int_equal(block_reg_cap(256, 1), 255);
    assert_int_equal(block_reg_cap(384, 1), 168);
    assert_int_equal(block_reg_cap(512, 1), 128);
    assert_int_equal(block_reg_cap(256, 2), 128);
    assert_int_equal(block_reg_cap(384, 2), 80);   /* 85.3, in steps of 8 */
    assert_int_equal(block_reg_pool(384, 1), 64512);
    assert_int_equal(block_reg_pool(384, 2), 30720);
    /* 2 consumers at 2 blocks an SM: 24 + 2 x 112 fits half the register file but not the block's
     * 30,720 (the setmaxnreg.inc of such a split waits forever: rotary D = 64 hung on the H200) */
    assert_false(reg_split_fits(2, 24, 112, block_reg_pool(384, 2)));
    assert_true(reg_split_fits(2, 24, 104, block_reg_pool(384, 2)));
    assert_true(reg_split_fits(1, 24, 232, block_reg_pool(256, 2)));   /* based.tk's: exactly 32,768 */
}

/* ---- bank conflicts --------------------------------------------------------------------------- */

static void test_ldmatrix_addrs(void **state) {
    (void)state;
    TileLayout t = {64, 64, 2, SWZ_NONE};
    uint32_t addr[32];
    ldmatrix_x4_addrs(&t, 16, 8, addr);
    /* lane l: row r0 + l%8 + 8*((l/8)&1), column c0 + 8*(l/16) */
    assert_int_equal(addr[0], (16 * 64 + 8) * 2);
    assert_int_equal(addr[7], (23 * 64 + 8) * 2);
    assert_int_equal(addr[8], (24 * 64 + 8) * 2);
    assert_int_equal(addr[16], (16 * 64 + 16) * 2);
    assert_int_equal(addr[31], (31 * 64 + 16) * 2);
    TileLayout s = {64, 64, 2, SWZ_128};
    ldmatrix_x4_addrs(&s, 0, 0, addr);
    for (int l = 0; l < 32; l++)
        assert_int_equal(addr[l], tile_offset(&s, l % 8 + 8 * ((l / 8) & 1), 8 * (l / 16)));
}

/* the most ways of the stmatrix/ldmatrix .x4 row pattern over every 16x16 block of a tile */
static int worst_ways(const TileLayout *t) {
    int worst = 0;
    uint32_t addr[32];
    for (int r0 = 0; r0 < t->rows; r0 += 16)
        for (int c0 = 0; c0 < t->cols; c0 += 16) {
            ldmatrix_x4_addrs(t, r0, c0, addr);
            int w = bank_ways_16B(addr, 32);
            if (w > worst) worst = w;
        }
    return worst;
}

static void test_bank_conflicts_layouts(void **state) {
    (void)state;
    /* swizzled tiles (one or several atom columns): conflict-free */
    TileLayout s128 = {64, 64, 2, SWZ_128}, s64 = {64, 32, 2, SWZ_64}, s32 = {64, 16, 2, SWZ_32};
    TileLayout w128 = {128, 256, 2, SWZ_128}, w64 = {128, 64, 2, SWZ_64}, w32 = {128, 64, 2, SWZ_32};
    assert_int_equal(worst_ways(&s128), 1);
    assert_int_equal(worst_ways(&s64), 1);
    assert_int_equal(worst_ways(&s32), 1);
    assert_int_equal(worst_ways(&w128), 1);
    assert_int_equal(worst_ways(&w64), 1);
    assert_int_equal(worst_ways(&w32), 1);
    /* the same tile unswizzled: a 128-byte pitch puts 8 rows in one bank group */
    TileLayout n128 = {64, 64, 2, SWZ_NONE};
    assert_int_equal(worst_ways(&n128), 8);
    /* a 64-byte pitch: pairs of rows share a line, so 4 ways; 32-byte pitch: 2 ways */
    TileLayout n64 = {64, 32, 2, SWZ_NONE}, n32 = {64, 16, 2, SWZ_NONE};
    assert_int_equal(worst_ways(&n64), 4);
    assert_int_equal(worst_ways(&n32), 2);
    /* a padded pitch of 144 B (72 bf16) is the classic unswizzled fix */
    TileLayout pad = {64, 72, 2, SWZ_NONE};
    uint32_t addr[32];
    ldmatrix_x4_addrs(&pad, 0, 0, addr);
    assert_int_equal(bank_ways_16B(addr, 32), 1);
}

static void test_bank_ways_16B_patterns(void **state) {
    (void)state;
    uint32_t a[32];
    for (int l = 0; l < 32; l++) a[l] = 16u * (uint32_t)l; /* consecutive chunks */
    assert_int_equal(bank_ways_16B(a, 32), 1);
    for (int l = 0; l < 8; l++) a[l] = 128u * (uint32_t)l; /* one chunk column */
    assert_int_equal(bank_ways_16B(a, 8), 8);
    for (int l = 0; l < 8; l++) a[l] = 256u * (uint32_t)(l / 2) + 16u * (uint32_t)(l % 2);
    assert_int_equal(bank_ways_16B(a, 8), 4);
    for (int l = 0; l < 8; l++) a[l] = 64; /* one address: a broadcast */
    assert_int_equal(bank_ways_16B(a, 8), 1);
    /* phases are independent: a conflict in lanes 8-15 only */
    for (int l = 0; l < 32; l++) a[l] = 16u * (uint32_t)(l % 8) + 1024u * (uint32_t)(l / 8);
    a[9] = 2048 + 128;
    assert_int_equal(bank_ways_16B(a, 32), 2);
}

static void test_bank_ways_4B_patterns(void **state) {
    (void)state;
    uint32_t a[32];
    for (int l = 0; l < 32; l++) a[l] = 4u * (uint32_t)l; /* consecutive words */
    assert_int_equal(bank_ways_4B(a), 1);
    for (int l = 0; l < 32; l++) a[l] = 8u * (uint32_t)l; /* stride 2 words */
    assert_int_equal(bank_ways_4B(a), 2);
    for (int l = 0; l < 32; l++) a[l] = 128u * (uint32_t)l; /* stride 32 words: one bank */
    assert_int_equal(bank_ways_4B(a), 32);
    for (int l = 0; l < 32; l++) a[l] = 132u * (uint32_t)l; /* stride 33 words: padded */
    assert_int_equal(bank_ways_4B(a), 1);
    for (int l = 0; l < 32; l++) a[l] = 256; /* all lanes, one word: a broadcast */
    assert_int_equal(bank_ways_4B(a), 1);
    for (int l = 0; l < 32; l++) a[l] = 4u * (uint32_t)(l / 2); /* pairs read one word */
    assert_int_equal(bank_ways_4B(a), 1);
    for (int l = 0; l < 32; l++) a[l] = 4u * (uint32_t)l + 2; /* bytes inside a word count as the word */
    assert_int_equal(bank_ways_4B(a), 1);
    for (int l = 0; l < 32; l++) a[l] = 4u * (uint32_t)l;
    a[5] = 4 * 5 + 128 * 3; /* one lane hits bank 5 in another row */
    a[6] = 4 * 5;           /* and a third word of bank 5 */
    a[7] = 4 * 5 + 128;
    assert_int_equal(bank_ways_4B(a), 3);
}

/* the device-side layout helper (templates/tkc_layout.cuh) agrees with tile_offset on every
 * element of tiles of every swizzle, element size and atom count the back end uses */
static void test_device_tile_offset(void **state) {
    (void)state;
    const int elems[] = {2, 4};
    const Swizzle swz[] = {SWZ_NONE, SWZ_32, SWZ_64, SWZ_128};
    for (int ei = 0; ei < 2; ei++)
        for (int si = 0; si < 4; si++)
            for (int rows = 64; rows <= 128; rows += 64)
                for (int cols = 16; cols <= 256; cols *= 2) {
                    int e = elems[ei];
                    Swizzle s = swz[si];
                    if (s != SWZ_NONE && (cols * e) % swizzle_bytes(s)) continue;
                    TileLayout t = {rows, cols, e, s};
                    for (int r = 0; r < rows; r++)
                        for (int c = 0; c < cols; c++)
                            assert_int_equal(tkc_tile_offset(rows, cols, e, swizzle_bytes(s), r, c), tile_offset(&t, r, c));
                }
}

/* the accumulator fragment covers every element of a 128 x cols tile exactly once, and the
 * device helpers (tkc_layout.cuh frag_map) give the same places */
static void test_acc_fragment(void **state) {
    (void)state;
    for (int cols = 16; cols <= 256; cols *= 2) {
        int n = 128 * cols / 128; /* values per thread of a warpgroup holding 128 rows */
        unsigned char *seen = calloc((size_t)(128 * cols), 1);
        for (int w = 0; w < 4; w++)
            for (int l = 0; l < 32; l++)
                for (int i = 0; i < n; i++) {
                    int r, c;
                    acc_fragment_pos(w, l, i, cols, &r, &c);
                    assert_true(r >= 0 && r < 128 && c >= 0 && c < cols);
                    seen[r * cols + c]++;
                    int lrow = 16 * w + l / 4, lcol = 2 * (l % 4);
                    assert_int_equal(tkc_frag_row(lrow, i, cols), r);
                    assert_int_equal(tkc_frag_col(lcol, i, cols), c);
                    /* a per_row vector's slot of this row, and a per_col vector's slot of this column */
                    int slot = (i / (cols / 2)) * 2 + ((i >> 1) & 1), k = 2 * ((i % (cols / 2)) >> 2) + (i & 1);
                    assert_int_equal(tkc_rowvec_row(lrow, slot), r);
                    assert_int_equal(tkc_colvec_col(lcol, k), c);
                }
        for (int e = 0; e < 128 * cols; e++) assert_int_equal(seen[e], 1);
        free(seen);
    }
}


/* The row layout: every (row, col) of a tile of rows_per_pass x cols is held by exactly one value
 * of one thread, the device map of tkc_layout.cuh agrees with hopper.c, chunks of 8 columns are
 * consecutive (one 16-byte vector), and the lanes of a row hold a contiguous 8 * lanes column run
 * per chunk (coalesced). */
static void test_row_layout(void **state) {
    (void)state;
    static const int colss[] = {64, 128, 256, 512, 1024, 2048, 4096, 8192};
    static const int warpss[] = {4, 8, 12};
    for (size_t a = 0; a < sizeof colss / sizeof colss[0]; a++)
        for (size_t b = 0; b < sizeof warpss / sizeof warpss[0]; b++)
            for (int split = 1; split <= 8; split *= 2) {
                RowLayout r;
                int cols = colss[a], warps = warpss[b];
                if (!row_layout(cols, warps, split, &r)) {
                    assert_true(warps % split || cols % (8 * split) || cols < 8 * split);
                    continue;
                }
                int rows = 2 * row_layout_rows(&r); /* two passes */
                int per = rows * cols / (32 * warps);
                assert_int_equal(per, 2 * 8 * r.chunks);
                unsigned char *seen = calloc((size_t)rows * cols, 1);
                for (int w = 0; w < warps; w++)
                    for (int l = 0; l < 32; l++)
                        for (int i = 0; i < per; i++) {
                            int row, col;
                            row_layout_pos(&r, w, l, i, &row, &col);
                            assert_true(row >= 0 && row < rows && col >= 0 && col < cols);
                            assert_int_equal(row, tkc_rw_row(w, l, i, warps, split, r.lanes, r.chunks));
                            assert_int_equal(col, tkc_rw_col(w, l, i, split, r.lanes, r.chunks));
                            if (i % 8) {
                                int r0, c0;
                                row_layout_pos(&r, w, l, i - 1, &r0, &c0);
                                assert_int_equal(r0, row);
                                assert_int_equal(c0 + 1, col);
                            }
                            seen[row * cols + col]++;
                        }
                for (int k = 0; k < rows * cols; k++) assert_int_equal(seen[k], 1);
                free(seen);
            }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_swizzle_tables),
        cmocka_unit_test(test_swizzle_apply_formulas),
        cmocka_unit_test(test_swizzle_apply_values),
        cmocka_unit_test(test_swizzle_apply_properties),
        cmocka_unit_test(test_swizzle_choose),
        cmocka_unit_test(test_tile_atoms),
        cmocka_unit_test(test_tile_logical_offset),
        cmocka_unit_test(test_tile_offset_primer_example),
        cmocka_unit_test(test_desc_bits),
        cmocka_unit_test(test_desc_round_trip),
        cmocka_unit_test(test_operand_layout_k_major),
        cmocka_unit_test(test_operand_layout_mn_major),
        cmocka_unit_test(test_operand_offset_k_steps),
        cmocka_unit_test(test_reg_split),
        cmocka_unit_test(test_ldmatrix_addrs),
        cmocka_unit_test(test_bank_conflicts_layouts),
        cmocka_unit_test(test_bank_ways_16B_patterns),
        cmocka_unit_test(test_bank_ways_4B_patterns),
        cmocka_unit_test(test_device_tile_offset),
        cmocka_unit_test(test_acc_fragment),
        cmocka_unit_test(test_row_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
