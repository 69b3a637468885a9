// tkc_layout.cuh - where an element of a shared tile lives, as TMA writes it and wgmma reads it.
// Plain C (no CUDA built-ins): tests/unit/test_hopper.c checks it on the host against
// src/hopper.c's tile_offset for every swizzle; tkc copies the fragments a kernel uses.

// @fragment frag_map
// Where a thread's values of a register tile sit (the wgmma accumulator layout, which register
// tiles of every dtype share; src/hopper.c acc_fragment_pos is the reference): in each 64-row block
// warp w holds rows 16w .. 16w + 15; lane l holds rows lrow = 16w + l / 4 and lrow + 8, and in each
// 8-column slab columns lcol = 2 (l % 4) and lcol + 1. Value i of a tile of cols columns:
TKC_DEVICE int tkc_frag_row(int lrow, int i, int cols) { return lrow + 8 * ((i >> 1) & 1) + 64 * (i / (cols / 2)); }
TKC_DEVICE int tkc_frag_col(int lcol, int i, int cols) { return lcol + 8 * ((i % (cols / 2)) >> 2) + (i & 1); }
// slot r of a per_row vector (the rows a thread holds) and slot k of a per_col one (its columns)
TKC_DEVICE int tkc_rowvec_row(int lrow, int r) { return lrow + 8 * (r & 1) + 64 * (r >> 1); }
TKC_DEVICE int tkc_colvec_col(int lcol, int k) { return lcol + 8 * (k >> 1) + (k & 1); }

// @fragment rowwise_map
// Where a thread's values of a rowwise register tile sit (src/hopper.c row_layout_pos is the
// reference): the warps consumer warps share out the rows, split warps hold one row, lanes lanes
// of a warp its share, each lane chunks of 8 consecutive columns; value i of warp w, lane l:
TKC_DEVICE int tkc_rw_row(int w, int l, int i, int warps, int split, int lanes, int chunks) {
    return ((i / (8 * chunks)) * (warps / split) + w / split) * (32 / lanes) + l / lanes;
}
TKC_DEVICE int tkc_rw_col(int w, int l, int i, int split, int lanes, int chunks) {
    return 8 * ((((i / 8) % chunks) * split + w % split) * lanes + l % lanes) + i % 8;
}

// @fragment tile_offset
// The byte offset of element (r, c) of a rows x cols tile of elem-byte elements whose rows are
// swizzled in spans of span bytes (0: no swizzle, plain row-major): the tile is stored as
// cols * elem / span atom columns side by side, each rows x span bytes, and inside an atom the
// 16-byte chunk index is XORed with the 128-byte line index (period 2, 4, 8 lines for spans of
// 32, 64, 128 B). Every argument but r and c is a constant where tkc calls it, so the compiler
// folds all but the lane-dependent part.
TKC_DEVICE uint32_t tkc_tile_offset(int rows, int cols, int elem, int span, int r, int c) {
    if (span == 0) return (uint32_t)((r * cols + c) * elem);
    const int ac = span / elem;
    const uint32_t a = (uint32_t)((c / ac) * rows * span + r * span + (c % ac) * elem);
    const uint32_t mask = span == 128 ? 7u : span == 64 ? 3u : 1u;
    return a ^ (((a >> 7) & mask) << 4);
}
