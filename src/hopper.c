/* hopper.c - swizzle, tile layout, wgmma descriptor, bank-conflict and register-split maths
 * (see hopper.h). Pure functions; every formula follows the PTX ISA as summarised in
 * ../shared/docs/hopper-primer.md sections 2-6. */
#include "hopper.h"

static const struct {
    int bytes, tma, desc, align;
    const char *name;
} swz_tab[] = {
#define X(e, b, n, t, d, a) {b, t, d, a, n},
    TK_SWIZZLES(X)
#undef X
};

int swizzle_bytes(Swizzle s) { return swz_tab[s].bytes; }
const char *swizzle_name(Swizzle s) { return swz_tab[s].name; }
int swizzle_tma_enum(Swizzle s) { return swz_tab[s].tma; }
int swizzle_desc_mode(Swizzle s) { return swz_tab[s].desc; }
int swizzle_align(Swizzle s) { return swz_tab[s].align; }

Swizzle swizzle_choose(int row_bytes) {
    if (row_bytes > 0 && row_bytes % 128 == 0) return SWZ_128;
    if (row_bytes > 0 && row_bytes % 64 == 0) return SWZ_64;
    if (row_bytes > 0 && row_bytes % 32 == 0) return SWZ_32;
    return SWZ_NONE;
}

uint32_t swizzle_apply(Swizzle s, uint32_t a) {
    switch (s) {
    case SWZ_128: return a ^ (((a >> 7) & 7u) << 4);
    case SWZ_64: return a ^ (((a >> 7) & 3u) << 4);
    case SWZ_32: return a ^ (((a >> 7) & 1u) << 4);
    default: return a;
    }
}

int tile_atom_cols(const TileLayout *t) {
    if (t->swz == SWZ_NONE) return t->cols;
    return swizzle_bytes(t->swz) / t->elem;
}

int tile_bytes(const TileLayout *t) { return t->rows * t->cols * t->elem; }

uint32_t tile_logical_offset(const TileLayout *t, int r, int c) {
    if (t->swz == SWZ_NONE) return (uint32_t)((r * t->cols + c) * t->elem);
    int span = swizzle_bytes(t->swz);
    int ac = tile_atom_cols(t);
    int atom = c / ac, cc = c % ac;
    return (uint32_t)(atom * t->rows * span + r * span + cc * t->elem);
}

uint32_t tile_offset(const TileLayout *t, int r, int c) {
    return swizzle_apply(t->swz, tile_logical_offset(t, r, c));
}

MmaOperandLayout mma_operand_layout(const TileLayout *t, bool mn_major) {
    MmaOperandLayout o = {0, 0, swizzle_desc_mode(t->swz)};
    int span = swizzle_bytes(t->swz);
    if (!mn_major) {
        o.lbo = 16;             /* unused for swizzled K-major layouts; encodes as 1 */
        o.sbo = (uint32_t)(8 * span);
    } else {
        o.lbo = (uint32_t)(t->rows * span);   /* next atom column along M/N */
        o.sbo = (uint32_t)(8 * span);         /* next 8 rows along K */
    }
    return o;
}

uint32_t mma_operand_offset(const TileLayout *t, bool mn_major, int mn0, int k0) {
    /* K-major: the stored tile is [mn][k], so (mn0, k0) is element (mn0, k0).
     * MN-major: the stored tile is [k][mn], so the block starts at element (k0, mn0). The
     * descriptor start is the logical (unswizzled) address: the hardware applies the swizzle. */
    if (!mn_major) return tile_logical_offset(t, mn0, k0);
    return tile_logical_offset(t, k0, mn0);
}

uint64_t wgmma_desc_encode(uint32_t smem_addr, uint32_t lbo, uint32_t sbo, int mode) {
    uint64_t d = 0;
    d |= (uint64_t)((smem_addr & 0x3FFFFu) >> 4);
    d |= (uint64_t)((lbo >> 4) & 0x3FFFu) << 16;
    d |= (uint64_t)((sbo >> 4) & 0x3FFFu) << 32;
    d |= (uint64_t)(mode & 3) << 62;
    return d;
}

void wgmma_desc_decode(uint64_t d, uint32_t *addr, uint32_t *lbo, uint32_t *sbo, int *mode, int *base) {
    *addr = (uint32_t)(d & 0x3FFFu) << 4;
    *lbo = (uint32_t)((d >> 16) & 0x3FFFu) << 4;
    *sbo = (uint32_t)((d >> 32) & 0x3FFFu) << 4;
    *base = (int)((d >> 49) & 7u);
    *mode = (int)((d >> 62) & 3u);
}

int bank_ways_4B(const uint32_t addr[32]) {
    /* distinct words per bank; the same word read by several lanes is a broadcast */
    int ways = 0;
    for (int b = 0; b < 32; b++) {
        uint32_t words[32];
        int n = 0;
        for (int l = 0; l < 32; l++) {
            if (((addr[l] >> 2) & 31u) != (uint32_t)b) continue;
            uint32_t w = addr[l] >> 2;
            int seen = 0;
            for (int i = 0; i < n; i++) seen |= words[i] == w;
            if (!seen) words[n++] = w;
        }
        if (n > ways) ways = n;
    }
    return ways ? ways : 1;
}

int bank_ways_16B(const uint32_t *addr, int n) {
    /* 16-byte accesses go 8 lanes (128 bytes) at a time; within a phase, the ways are the most
     * distinct 16-byte chunks that fall into one group of 4 banks */
    int total = 0;
    for (int p = 0; p < n; p += 8) {
        int ways = 0;
        for (int g = 0; g < 8; g++) {
            uint32_t chunks[8];
            int m = 0;
            for (int l = p; l < p + 8 && l < n; l++) {
                if (((addr[l] >> 4) & 7u) != (uint32_t)g) continue;
                uint32_t c = addr[l] >> 4;
                int seen = 0;
                for (int i = 0; i < m; i++) seen |= chunks[i] == c;
                if (!seen) chunks[m++] = c;
            }
            if (m > ways) ways = m;
        }
        if (ways > total) total = ways;
    }
    return total ? total : 1;
}

void ldmatrix_x4_addrs(const TileLayout *t, int r0, int c0, uint32_t addr[32]) {
    for (int l = 0; l < 32; l++) {
        int r = r0 + (l % 8) + 8 * ((l / 8) & 1);
        int c = c0 + 8 * (l / 16);
        addr[l] = tile_offset(t, r, c);
    }
}

void acc_fragment_pos(int warp, int lane, int i, int cols, int *row, int *col) {
    int half = cols / 2, blk = i / half, j = i % half;
    *row = 64 * blk + 16 * warp + lane / 4 + 8 * ((j / 2) % 2);
    *col = 8 * (j / 4) + 2 * (lane % 4) + j % 2;
}

void reg_split_default(int consumers, int *producer, int *consumer) {
    switch (consumers) {
    case 1: *producer = 56; *consumer = 256; break;
    case 2: *producer = 40; *consumer = 232; break;
    default: *producer = 32; *consumer = 160; break;
    }
}

bool reg_split_fits(int consumers, int producer, int consumer, int pool) {
    return producer % 8 == 0 && consumer % 8 == 0 && producer >= 24 && consumer <= 256 &&
           128 * (producer + consumers * consumer) <= pool;
}

int block_reg_cap(int threads, int blocks) {
    int cap = REG_FILE / (threads * (blocks > 0 ? blocks : 1)) / 8 * 8;
    return cap > 255 ? 255 : cap;
}

/* ---- the row layout of rowwise tiles (hopper.h) --------------------------------------------- */

bool row_layout(int cols, int warps, int split, RowLayout *out) {
    if (split < 1 || warps < split || warps % split || cols < 8 * split || cols % (8 * split)) return false;
    int per = cols / (8 * split); /* chunks of a row one warp holds */
    int lanes = per < 32 ? per : 32;
    if (per < 32 ? (32 % per != 0) : (per % 32 != 0)) return false;
    *out = (RowLayout){cols, warps, split, lanes, 32 / lanes, per / lanes};
    return true;
}

void row_layout_pos(const RowLayout *r, int warp, int lane, int i, int *row, int *col) {
    int k = i / 8, q = k / r->chunks, c = k % r->chunks;
    *row = (q * (r->warps / r->split) + warp / r->split) * r->rows_per_inst + lane / r->lanes;
    *col = 8 * ((c * r->split + warp % r->split) * r->lanes + lane % r->lanes) + i % 8;
}
