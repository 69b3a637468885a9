/* hopper.h - the sm_90a facts tkc relies on, as pure functions: swizzle modes and their
 * encodings, the byte layout of a swizzled tile, wgmma shared-memory matrix descriptors,
 * shared-memory bank conflicts, and the setmaxnreg register split.
 * Invariant: nothing here allocates or reports; everything is unit-tested in
 * tests/unit/test_hopper.c against the PTX ISA's definitions (see ../shared/docs).
 *
 * wgmma matrix descriptor (64 bits):
 *
 *   63 62 61    52 51 49 48 46 45          32 31 30 29          16 15 14 13           0
 *  +-----+--------+-----+-----+--------------+-----+--------------+-----+--------------+
 *  | swz |   0    | base|  0  |  SBO >> 4    |  0  |  LBO >> 4    |  0  | start >> 4   |
 *  +-----+--------+-----+-----+--------------+-----+--------------+-----+--------------+
 *  swz: 0 none, 1 = 128B, 2 = 64B, 3 = 32B; start = shared address & 0x3FFFF; base = 0 when
 *  the tile sits on its swizzle period (tkc always aligns it so). */
#ifndef TKC_HOPPER_H
#define TKC_HOPPER_H

#include <stdbool.h>
#include <stdint.h>

/*  enum      bytes  name    TMA enum  descriptor mode  alignment (swizzle period) */
#define TK_SWIZZLES(X)                                                                          \
    X(SWZ_NONE, 0, "none", 0, 0, 16)                                                             \
    X(SWZ_32, 32, "32B", 1, 3, 256)                                                              \
    X(SWZ_64, 64, "64B", 2, 2, 512)                                                              \
    X(SWZ_128, 128, "128B", 3, 1, 1024)

typedef enum {
#define X(e, b, n, t, d, a) e,
    TK_SWIZZLES(X)
#undef X
} Swizzle;

int swizzle_bytes(Swizzle s);           /* span of one swizzled row: 32, 64, 128 (0 for none) */
const char *swizzle_name(Swizzle s);
int swizzle_tma_enum(Swizzle s);        /* CUtensorMapSwizzle value */
int swizzle_desc_mode(Swizzle s);       /* wgmma descriptor bits 62-63 */
int swizzle_align(Swizzle s);           /* the period a swizzled tile must start on */

/* The widest swizzle (128, 64 or 32 B) whose span divides a row of row_bytes bytes, as the
 * ThunderKittens paper chooses; SWZ_NONE if no span divides it. */
Swizzle swizzle_choose(int row_bytes);

/* The physical shared-memory address of logical byte address a under swizzle s (the TMA
 * pattern: 16-byte chunks XORed with the 128-byte line index, period 2, 4 or 8 lines). */
uint32_t swizzle_apply(Swizzle s, uint32_t a);

/* A tile of rows x cols elements of elem bytes stored as cols/atom atom-columns, each
 * rows x span bytes, side by side (what one TMA box per atom column produces). */
typedef struct TileLayout {
    int rows, cols, elem;
    Swizzle swz;
} TileLayout;

int tile_atom_cols(const TileLayout *t);                /* elements per atom row */
int tile_bytes(const TileLayout *t);
/* logical (pre-swizzle) byte offset of element (r, c) from the tile base */
uint32_t tile_logical_offset(const TileLayout *t, int r, int c);
/* physical byte offset: tile_logical_offset swizzled (base assumed on the swizzle period) */
uint32_t tile_offset(const TileLayout *t, int r, int c);

/* wgmma operand layout of a stored tile: byte offsets the descriptor needs */
typedef struct MmaOperandLayout {
    uint32_t lbo, sbo;      /* leading / stride byte offsets (raw bytes) */
    int mode;               /* descriptor swizzle mode */
} MmaOperandLayout;

/* mn_major: the operand's contiguous dimension is M (for A) or N (for B), i.e. the stored tile
 * is [K rows][MN cols]; otherwise the stored tile is [MN rows][K cols] (K-major). */
MmaOperandLayout mma_operand_layout(const TileLayout *t, bool mn_major);
/* byte offset, from the tile base, of the operand's sub-block starting at (mn0, k0), where mn0
 * and k0 count elements of the operand's MN and K dimensions */
uint32_t mma_operand_offset(const TileLayout *t, bool mn_major, int mn0, int k0);
uint64_t wgmma_desc_encode(uint32_t smem_addr, uint32_t lbo, uint32_t sbo, int mode);
void wgmma_desc_decode(uint64_t d, uint32_t *addr, uint32_t *lbo, uint32_t *sbo, int *mode, int *base);

/* Bank conflicts: the number of shared-memory wavefronts ("ways") one warp-wide access needs.
 * 4-byte accesses: 32 addresses, 32 banks. 16-byte accesses (ldmatrix/stmatrix rows, v4
 * loads): processed 8 addresses at a time; n is 8 or 32. 1 means conflict-free. */
int bank_ways_4B(const uint32_t addr[32]);
int bank_ways_16B(const uint32_t *addr, int n);

/* stmatrix/ldmatrix .x4 row addresses of warp w over the 16x16 block at (r0, c0) of a tile:
 * lane l gives row r0 + (l % 8) + 8 * ((l / 8) & 1), column c0 + 8 * (l / 16). */
void ldmatrix_x4_addrs(const TileLayout *t, int r0, int c0, uint32_t addr[32]);

/* The wgmma accumulator fragment (PTX ISA, wgmma .m64nNk16 D matrix): value i (0 .. cols/2 - 1
 * within a 64-row block) of lane `lane` of warp `warp` of the warpgroup sits at row
 * 16 warp + lane / 4 + 8 ((i / 2) % 2), column 8 (i / 4) + 2 (lane % 4) + i % 2; a warpgroup holding
 * several 64-row blocks continues with value cols/2 in the next block. */
void acc_fragment_pos(int warp, int lane, int i, int cols, int *row, int *col);

/* The row layout of rowwise register tiles (a memory-bound kernel's layout): the kernel's `warps`
 * consumer warps share out the rows; `split` warps (a power of two dividing warps) hold one row
 * between them, `lanes` lanes of a warp a row's share (min(32, cols / (8 split))), so one warp
 * instruction covers rows_per_inst = 32 / lanes rows; each lane holds chunks of 8 consecutive
 * columns (16 bytes of bf16: one vector load or store). Value i of a thread (lane of warp):
 *   chunk k = i / 8, row iteration q = k / chunks, chunk c = k % chunks (chunks = cols / (8 lanes split))
 *   row = (q (warps / split) + warp / split) rows_per_inst + lane / lanes
 *   col = 8 ((c split + warp % split) lanes + lane % lanes) + i % 8
 * A per_row vector's slot q holds the row of iteration q; a per_col vector's slot k the column of
 * value k of the first iteration. templates/tkc_layout.cuh (rowwise_map) is the same arithmetic. */
typedef struct RowLayout {
    int cols, warps, split;
    int lanes, rows_per_inst, chunks;
} RowLayout;
/* the layout of tiles of `cols` columns over `warps` warps, `split` warps per row; false when
 * cols is not a multiple of 8 split or cols / (8 split) is neither a power of two below 32 nor a
 * multiple of 32 */
bool row_layout(int cols, int warps, int split, RowLayout *out);
/* rows one pass of all the warps covers (a rowwise tile's rows are a multiple of it) */
static inline int row_layout_rows(const RowLayout *r) { return r->warps / r->split * r->rows_per_inst; }
void row_layout_pos(const RowLayout *r, int warp, int lane, int i, int *row, int *col);

/* setmaxnreg split: the register counts (multiples of 8) for the producer warpgroup and each
 * consumer warpgroup such that 128 * (producer + consumers * consumer) fits the block's pool. */
void reg_split_default(int consumers, int *producer, int *consumer);
bool reg_split_fits(int consumers, int producer, int consumer, int pool);
/* The registers ptxas gives each thread of a kernel of `threads` threads of which an SM holds
 * `blocks` (__launch_bounds__): the register file over them, in steps of 8, at most 255; and the
 * block's pool, threads x that. setmaxnreg moves registers between a block's warpgroups within
 * its pool: an .inc the pool cannot satisfy waits forever (measured: 384 threads at 2 blocks get
 * 80 registers a thread, 30,720 a block, not 65,536 / 2). */
int block_reg_cap(int threads, int blocks);
static inline int block_reg_pool(int threads, int blocks) { return threads * block_reg_cap(threads, blocks); }

enum {
    SMEM_LIMIT = 232448,    /* opt-in dynamic shared memory per block (227 KB) */
    SMEM_SLACK = 1024,      /* round the dynamic base up to 1024 B at run time */
    SMEM_SM = 233472,       /* shared memory of one SM (228 KB), for all its resident blocks */
    SMEM_RESERVED = 1024,   /* what the hardware keeps of it per resident block */
    REG_FILE = 65536,
    TMA_BOX_MAX = 256,
    REG_HEAVY_ESTIMATE = 200, /* above this consumer estimate, two consumers take the 240/24 split */
};

#endif
