/* emit_store.c - the CUDA emitter's stores and moves: vector and tile stores to global memory
 * (direct, chunked, reductions), moves between registers and shared memory, relayouts through
 * shared memory, and TMA stores from shared memory. Part of the CUDA emitter (emit_int.h). */
#include "emit_int.h"

static const char *global_offset(Em *e, const Symbol *t, const PExpr *ix, const char *last) {
    /* element offset of X[i0, ..., i_{n-2}, last] from the tensor's strides */
    int n = ix->nix;
    StrBuf b;
    sb_init(&b);
    for (int i = 0; i < n; i++) {
        if (i) sb_puts(&b, " + ");
        if (i == n - 1) sb_printf(&b, "%s * %s_st%d", last, t->name, i);
        else sb_printf(&b, "(long long)%s * %s_st%d", scalar_str(e, ix->ix[i].lo, false), t->name, i);
    }
    char *r = arena_strdup(e->a, b.s);
    sb_free(&b);
    return r;
}

/* a global move's tile (or vector) index as an element coordinate: at(r) is element r itself,
 * any other index counts in units of the moved tile's size */
static bool is_at(const PExpr *x) { return x->kind == PX_CALL && x->fn == FN_AT; }

const char *move_coord(Em *e, const PExpr *x, int size) {
    if (is_at(x)) return arena_printf(e->a, "(%s)", scalar_str(e, x->args[0], false));
    if (x->is_const) return arena_printf(e->a, "%lld", (long long)x->cval * size);
    return arena_printf(e->a, "%s * %d", scalar_str(e, x, false), size);
}

/* move_coord plus add elements (an atom column's offset), constants folded */
const char *move_coord_plus(Em *e, const PExpr *x, int size, int add) {
    if (!is_at(x) && x->is_const) return arena_printf(e->a, "%lld", (long long)x->cval * size + add);
    const char *c = move_coord(e, x, size);
    return add ? arena_printf(e->a, "%s + %d", c, add) : c;
}

/* the element offset of a tile move's leading indices (all but the last two), each followed by
 * " + ", or "" for a 2-d tensor */
static const char *lead_offset(Em *e, const Symbol *t, const PExpr *ix) {
    StrBuf b;
    sb_init(&b);
    for (int d = 0; d < ix->nix - 2; d++)
        sb_printf(&b, "(long long)%s * %s_st%d + ", scalar_str(e, ix->ix[d].lo, false), t->name, d);
    const char *r = arena_strdup(e->a, b.s ? b.s : "");
    sb_free(&b);
    return r;
}

/* the conversion of an fp32 value to a 16-bit element */
static const char *cvt16(DType dt) { return dt == DT_BF16 ? "__float2bfloat16_rn" : "__float2half_rn"; }

static const PlanStore *store_of(const PlanKernel *pk, const PStmt *st) {
    for (int i = 0; i < pk->stores.n; i++)
        if (pk->stores.v[i].st == st) return &pk->stores.v[i];
    return NULL;
}

static void emit_vec_store(Em *e, const PStmt *st) {
    const PExpr *ix = st->lhs, *rhs = st->rhs;
    const Symbol *t = ix->base->sym;
    PExpr *const *dims = e->pk->arg_dims.v[t->index];
    int n = ix->nix;
    e->hoisted.n = 0;
    hoist_row_values(e, rhs);
    Ctx c = tile_ctx(e->pk, &rhs->ty, "tkc_r");
    if (rhs->ty.layout == VL_COL) {
        const PlanStore *ps = store_of(e->pk, st);
        if (ps && ps->wg0_only) L("if (wg == 0 && tkc_warp == 0 && tkc_lane < 4) {  // lanes 0..3 of a warp hold every column once");
        else L("if (tkc_warp == 0 && tkc_lane < 4) {  // lanes 0..3 of a warp hold every column once");
        IN();
        L("#pragma unroll");
        L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) {", frag_count(e->pk, &rhs->ty));
        IN();
        L("const long long tkc_gi = (long long)%s + %s;", move_coord(e, ix->ix[n - 1].lo, rhs->ty.rows), col_expr(e, &c, 0));
        L("if (%stkc_gi < %s) %s[%s] = %s;", is_at(ix->ix[n - 1].lo) ? "tkc_gi >= 0 && " : "",
          scalar_str(e, dims[n - 1], false), t->name, global_offset(e, t, ix, "tkc_gi"), elem_str(e, rhs, &c));
        OUT();
        L("}");
        OUT();
        L("}");
        return;
    }
    L("if ((tkc_lane & 3) == 0) {  // one lane of each quad holds the row's value");
    IN();
    L("#pragma unroll");
    L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) {", frag_count(e->pk, &rhs->ty));
    IN();
    L("const long long tkc_gi = (long long)%s + %s;", move_coord(e, ix->ix[n - 1].lo, rhs->ty.rows), row_expr(e, &c));
    L("if (%stkc_gi < %s) %s[%s] = %s;", is_at(ix->ix[n - 1].lo) ? "tkc_gi >= 0 && " : "",
      scalar_str(e, dims[n - 1], false), t->name, global_offset(e, t, ix, "tkc_gi"), elem_str(e, rhs, &c));
    OUT();
    L("}");
    OUT();
    L("}");
}

/* `v <- X[...]`: each thread loads the entries of the register vector it holds (per_row: its rows,
 * per_col: its columns) straight from global memory; entries past the tensor's end (or before its
 * start, with at()) read 0 */
/* a per_col vector of a rowwise kernel: each lane's chunks of 8 consecutive columns, two 16-byte
 * loads of fp32 (one of 16-bit) where the vector lies inside the tensor with unit stride and
 * 16-byte alignment, else element by element */
static void emit_rows_vec_load(Em *e, const PStmt *st) {
    const PExpr *ix = st->rhs;
    const Symbol *t = ix->base->sym, *v = st->lhs->sym;
    PExpr *const *dims = e->pk->arg_dims.v[t->index];
    int n = ix->nix, ck = e->pk->rw.chunks, eb = dtype_bytes[t->ty.dt];
    const char *len = scalar_str(e, dims[n - 1], false);
    L("{");
    IN();
    L("const long long tkc_c0 = %s;  // the vector's first column in the tensor", move_coord(e, ix->ix[n - 1].lo, v->ty.rows));
    L("const bool tkc_fast = %s_st%d == 1 && ((uintptr_t)%s & 15) == 0 && tkc_c0 %% %d == 0 && tkc_c0 >= 0 && tkc_c0 + %d <= %s;",
      t->name, n - 1, t->name, 16 / eb, v->ty.rows, len);
    L("#pragma unroll");
    L("for (int tkc_c = 0; tkc_c < %d; ++tkc_c) {  // this lane's chunks of 8 columns", ck);
    IN();
    Ctx c = tile_ctx(e->pk, &v->ty, "(8 * tkc_c)");
    L("const long long tkc_gc = tkc_c0 + %s;", col_expr(e, &c, 0));
    const char *lead = n > 1 ? global_offset(e, t, ix, "0") : "0";
    L("const long long tkc_o = %s + tkc_gc;", lead);
    L("if (tkc_fast) {");
    IN();
    if (eb == 4) {
        L("const float4 tkc_a = __ldg(reinterpret_cast<const float4 *>(%s + tkc_o)), tkc_b = __ldg(reinterpret_cast<const float4 *>(%s + tkc_o + 4));",
          t->name, t->name);
        L("%s[8 * tkc_c] = tkc_a.x; %s[8 * tkc_c + 1] = tkc_a.y; %s[8 * tkc_c + 2] = tkc_a.z; %s[8 * tkc_c + 3] = tkc_a.w;", v->name,
          v->name, v->name, v->name);
        L("%s[8 * tkc_c + 4] = tkc_b.x; %s[8 * tkc_c + 5] = tkc_b.y; %s[8 * tkc_c + 6] = tkc_b.z; %s[8 * tkc_c + 7] = tkc_b.w;",
          v->name, v->name, v->name, v->name);
    } else {
        const char *k = t->ty.dt == DT_BF16 ? "bf16" : "fp16";
        need(e, "tkc_ptx.cuh", "math");
        L("const uint4 tkc_u = __ldg(reinterpret_cast<const uint4 *>(%s + tkc_o));", t->name);
        L("const uint32_t tkc_w[4] = {tkc_u.x, tkc_u.y, tkc_u.z, tkc_u.w};");
        L("#pragma unroll");
        L("for (int tkc_j = 0; tkc_j < 4; ++tkc_j) { %s[8 * tkc_c + 2 * tkc_j] = tkc_%s_lo(tkc_w[tkc_j]); %s[8 * tkc_c + 2 * tkc_j + 1] = tkc_%s_hi(tkc_w[tkc_j]); }",
          v->name, k, v->name, k);
    }
    OUT();
    L("} else {");
    IN();
    L("#pragma unroll");
    L("for (int tkc_j = 0; tkc_j < 8; ++tkc_j)");
    L("    %s[8 * tkc_c + tkc_j] = tkc_gc + tkc_j >= 0 && tkc_gc + tkc_j < %s ? (float)tkc_load_f32(%s, %s + (tkc_gc + tkc_j) * %s_st%d) : 0.f;",
      v->name, len, t->name, n > 1 ? global_offset(e, t, ix, "0") : "0", t->name, n - 1);
    OUT();
    L("}");
    OUT();
    L("}");
    OUT();
    L("}");
}

void emit_vec_load(Em *e, const PStmt *st) {
    const PExpr *ix = st->rhs, *lhs = st->lhs;
    const Symbol *t = ix->base->sym, *v = lhs->sym;
    PExpr *const *dims = e->pk->arg_dims.v[t->index];
    int n = ix->nix;
    if (e->pk->rowwise && v->ty.layout == VL_COL) {
        emit_rows_vec_load(e, st);
        return;
    }
    Ctx c = tile_ctx(e->pk, &v->ty, "tkc_r");
    const char *idx = v->ty.layout == VL_COL ? col_expr(e, &c, 0) : row_expr(e, &c);
    L("#pragma unroll");
    L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) {  // each thread its own %s; past the end: 0", frag_count(e->pk, &v->ty),
      v->ty.layout == VL_COL ? "columns" : "rows");
    IN();
    L("const long long tkc_gi = (long long)%s + %s;", move_coord(e, ix->ix[n - 1].lo, v->ty.rows), idx);
    L("%s[tkc_r] = %stkc_gi < %s ? (float)tkc_load_f32(%s, %s) : 0.f;", v->name, is_at(ix->ix[n - 1].lo) ? "tkc_gi >= 0 && " : "",
      scalar_str(e, dims[n - 1], false), t->name, global_offset(e, t, ix, "tkc_gi"));
    OUT();
    L("}");
}

/* ---- rowwise tiles: each lane's chunks of 8 consecutive columns, one 16-byte access each ---------- */

/* The loops of a rowwise tile move: per row this thread holds (one per pass of the warps) the
 * row's address and whether it lies inside the tensor; the 16-byte path when the tensor takes
 * vectors (unit last stride, row stride and base aligned to 16 bytes, the tile's columns a whole
 * number of vectors inside the tensor: tkc_fast, the same for the whole tile), else element by
 * element with bounds checks. Opens the per-row loop; the caller writes the chunk loops. */
static void rows_head(Em *e, const Symbol *t, const PExpr *ix, const Type *tt, const char *cols) {
    int n = ix->nix, eb = dtype_bytes[t->ty.dt], per = 16 / eb;
    L("const long long tkc_r0 = %s, tkc_c0 = %s;  // the tile's origin in the tensor", move_coord(e, ix->ix[n - 2].lo, tt->rows),
      move_coord(e, ix->ix[n - 1].lo, tt->cols));
    L("const bool tkc_fast = %s_st%d == 1 && %s_st%d %% %d == 0 && ((uintptr_t)%s & 15) == 0 && tkc_c0 %% %d == 0 && tkc_c0 >= 0 && "
      "tkc_c0 + %d <= %s;",
      t->name, n - 1, t->name, n - 2, per, t->name, per, tt->cols, cols);
    L("#pragma unroll");
    L("for (int tkc_q = 0; tkc_q < %d; ++tkc_q) {  // the rows this thread holds", frag_count(e->pk, tt) / (8 * e->pk->rw.chunks));
    IN();
    Ctx c = tile_ctx(e->pk, tt, arena_printf(e->a, "(tkc_q * %d)", 8 * e->pk->rw.chunks));
    L("const long long tkc_gr = tkc_r0 + %s;", row_expr(e, &c));
    L("const long long tkc_ro = %stkc_gr * %s_st%d;", lead_offset(e, t, ix), t->name, n - 2);
}

/* the chunk index k of row pass q, and its column in the tensor */
static void rows_chunk(Em *e, const Type *tt) {
    int ck = e->pk->rw.chunks;
    L("const int tkc_k = tkc_q * %d + tkc_c;", ck);
    Ctx c = tile_ctx(e->pk, tt, "(8 * tkc_k)");
    L("const long long tkc_gc = tkc_c0 + %s;", col_expr(e, &c, 0));
}

/* `x <- X[...]` into a rowwise tile; elements outside the tensor read 0 */
void emit_rows_load(Em *e, const PStmt *st) {
    const PExpr *ix = st->rhs;
    const Symbol *t = ix->base->sym, *x = st->lhs->sym;
    const Type *tt = &x->ty;
    PExpr *const *dims = e->pk->arg_dims.v[t->index];
    int n = ix->nix, ck = e->pk->rw.chunks;
    bool h16 = is16(tt->dt);
    const char *rows = scalar_str(e, dims[n - 2], false), *cols = scalar_str(e, dims[n - 1], false);
    L("{");
    IN();
    rows_head(e, t, ix, tt, cols);
    L("if (tkc_fast && tkc_gr >= 0 && tkc_gr < %s) {  // 16-byte loads", rows);
    IN();
    L("#pragma unroll");
    L("for (int tkc_c = 0; tkc_c < %d; ++tkc_c) {", ck);
    IN();
    rows_chunk(e, tt);
    if (h16) {
        L("const uint4 tkc_u = __ldg(reinterpret_cast<const uint4 *>(%s + tkc_ro + tkc_gc));", t->name);
        L("%s[4 * tkc_k] = tkc_u.x; %s[4 * tkc_k + 1] = tkc_u.y; %s[4 * tkc_k + 2] = tkc_u.z; %s[4 * tkc_k + 3] = tkc_u.w;",
          x->name, x->name, x->name, x->name);
    } else {
        L("const float4 tkc_a = __ldg(reinterpret_cast<const float4 *>(%s + tkc_ro + tkc_gc));", t->name);
        L("const float4 tkc_b = __ldg(reinterpret_cast<const float4 *>(%s + tkc_ro + tkc_gc + 4));", t->name);
        L("%s[8 * tkc_k] = tkc_a.x; %s[8 * tkc_k + 1] = tkc_a.y; %s[8 * tkc_k + 2] = tkc_a.z; %s[8 * tkc_k + 3] = tkc_a.w;",
          x->name, x->name, x->name, x->name);
        L("%s[8 * tkc_k + 4] = tkc_b.x; %s[8 * tkc_k + 5] = tkc_b.y; %s[8 * tkc_k + 6] = tkc_b.z; %s[8 * tkc_k + 7] = tkc_b.w;",
          x->name, x->name, x->name, x->name);
    }
    OUT();
    L("}");
    OUT();
    L("} else {  // a row outside the tensor, columns at its edge, or strides without 16-byte vectors: out of line");
    IN();
    need(e, "tkc_ptx.cuh", "rows_edge");
    L("const bool tkc_in = tkc_gr >= 0 && tkc_gr < %s;", rows);
    L("#pragma unroll");
    L("for (int tkc_c = 0; tkc_c < %d; ++tkc_c) {", ck);
    IN();
    rows_chunk(e, tt);
    if (h16) {
        L("const uint4 tkc_u = tkc_rows_load8_16(%s, tkc_ro, tkc_gc, %s_st%d, %s, tkc_in);", t->name, t->name, n - 1, cols);
        L("%s[4 * tkc_k] = tkc_u.x; %s[4 * tkc_k + 1] = tkc_u.y; %s[4 * tkc_k + 2] = tkc_u.z; %s[4 * tkc_k + 3] = tkc_u.w;",
          x->name, x->name, x->name, x->name);
    } else {
        L("const float4 tkc_a = tkc_rows_load4_32(%s, tkc_ro, tkc_gc, %s_st%d, %s, tkc_in);", t->name, t->name, n - 1, cols);
        L("const float4 tkc_b = tkc_rows_load4_32(%s, tkc_ro, tkc_gc + 4, %s_st%d, %s, tkc_in);", t->name, t->name, n - 1, cols);
        L("%s[8 * tkc_k] = tkc_a.x; %s[8 * tkc_k + 1] = tkc_a.y; %s[8 * tkc_k + 2] = tkc_a.z; %s[8 * tkc_k + 3] = tkc_a.w;",
          x->name, x->name, x->name, x->name);
        L("%s[8 * tkc_k + 4] = tkc_b.x; %s[8 * tkc_k + 5] = tkc_b.y; %s[8 * tkc_k + 6] = tkc_b.z; %s[8 * tkc_k + 7] = tkc_b.w;",
          x->name, x->name, x->name, x->name);
    }
    OUT();
    L("}");
    OUT();
    L("}");
    OUT();
    L("}");
    OUT();
    L("}");
}

/* `X[...] <- expr` of a rowwise tile, converted to the tensor's dtype; elements outside the tensor
 * are not written */
static void emit_rows_store(Em *e, const PStmt *st) {
    const PExpr *ix = st->lhs, *rhs = st->rhs;
    const Symbol *t = ix->base->sym;
    const Type *tt = &rhs->ty;
    PExpr *const *dims = e->pk->arg_dims.v[t->index];
    int n = ix->nix, ck = e->pk->rw.chunks;
    bool h16 = is16(t->ty.dt);
    const char *rows = scalar_str(e, dims[n - 2], false), *cols = scalar_str(e, dims[n - 1], false);
    e->hoisted.n = 0;
    hoist_row_values(e, rhs);
    L("{");
    IN();
    rows_head(e, t, ix, tt, cols);
    L("#pragma unroll");
    L("for (int tkc_c = 0; tkc_c < %d; ++tkc_c) {", ck);
    IN();
    rows_chunk(e, tt);
    L("float tkc_v[8];");
    for (int j = 0; j < 8; j++) {
        Ctx cj = tile_ctx(e->pk, tt, arena_printf(e->a, "(8 * tkc_k + %d)", j));
        L("tkc_v[%d] = %s;", j, elem_str(e, rhs, &cj));
    }
    const char *k = t->ty.dt == DT_BF16 ? "bf16" : "fp16";
    if (h16) {
        need(e, "tkc_ptx.cuh", "math");
        L("const uint4 tkc_u = make_uint4(tkc_pack_%s(tkc_v[0], tkc_v[1]), tkc_pack_%s(tkc_v[2], tkc_v[3]), tkc_pack_%s(tkc_v[4], "
          "tkc_v[5]), tkc_pack_%s(tkc_v[6], tkc_v[7]));", k, k, k, k);
    }
    L("if (tkc_fast && tkc_gr >= 0 && tkc_gr < %s) {  // one 16-byte store", rows);
    IN();
    /* __stwb (st.global.wb, the default store) rather than a uint4 assignment: with tkc_u also passed
     * to the out-of-line edge path, nvcc split the assignment into four 4-byte stores (run 212) */
    if (h16) {
        L("__stwb(reinterpret_cast<uint4 *>(%s + tkc_ro + tkc_gc), tkc_u);", t->name);
    } else {
        L("__stwb(reinterpret_cast<float4 *>(%s + tkc_ro + tkc_gc), make_float4(tkc_v[0], tkc_v[1], tkc_v[2], tkc_v[3]));", t->name);
        L("__stwb(reinterpret_cast<float4 *>(%s + tkc_ro + tkc_gc + 4), make_float4(tkc_v[4], tkc_v[5], tkc_v[6], tkc_v[7]));", t->name);
    }
    OUT();
    L("} else {  // a row outside the tensor, columns at its edge, or strides without 16-byte vectors: out of line");
    IN();
    need(e, "tkc_ptx.cuh", "rows_edge");
    if (h16) {
        L("tkc_rows_store8_16(%s, tkc_ro, tkc_gc, %s_st%d, %s, tkc_gr >= 0 && tkc_gr < %s, tkc_u);", t->name, t->name, n - 1, cols, rows);
    } else {
        L("tkc_rows_store4_32(%s, tkc_ro, tkc_gc, %s_st%d, %s, tkc_gr >= 0 && tkc_gr < %s, make_float4(tkc_v[0], tkc_v[1], tkc_v[2], tkc_v[3]));",
          t->name, t->name, n - 1, cols, rows);
        L("tkc_rows_store4_32(%s, tkc_ro, tkc_gc + 4, %s_st%d, %s, tkc_gr >= 0 && tkc_gr < %s, make_float4(tkc_v[4], tkc_v[5], tkc_v[6], tkc_v[7]));",
          t->name, t->name, n - 1, cols, rows);
    }
    OUT();
    L("}");
    OUT();
    L("}");
    OUT();
    L("}");
    OUT();
    L("}");
}

/* `v <- sv`: each thread reads the entries of the register vector it holds from the shared vector
 * (per_row: its rows, per_col: its columns), widened to fp32 */
void emit_vec_from_shared(Em *e, const PStmt *st) {
    const Symbol *v = st->lhs->sym, *sv = st->rhs->sym;
    int buf = -1;
    for (int i = 0; i < e->pk->bufs.n; i++)
        if (e->pk->bufs.v[i].sym == sv) buf = i;
    const PlanBuf *b = &e->pk->bufs.v[buf];
    Ctx c = tile_ctx(e->pk, &v->ty, "tkc_r");
    const char *idx = v->ty.layout == VL_COL ? col_expr(e, &c, 0) : row_expr(e, &c);
    const char *ld = b->dt == DT_BF16 ? "tkc_ld_shared_bf16" : b->dt == DT_FP16 ? "tkc_ld_shared_fp16" : "tkc_ld_shared_f32";
    need(e, "tkc_ptx.cuh", "shared_f32");
    L("#pragma unroll");
    L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) %s[tkc_r] = %s(%s + (uint32_t)%s * %d);  // each thread its own %s",
      frag_count(e->pk, &v->ty), v->name, ld, buf_addr(e, buf, false), idx, dtype_bytes[b->dt],
      v->ty.layout == VL_COL ? "columns" : "rows");
}

/* a register tile straight to global memory (a direct store, or an atomic add with red): each
 * thread writes or adds the pairs of neighbouring columns it holds, one 4- or 8-byte access per
 * pair where the tensor allows (last stride 1, an even row stride, an aligned address), else element
 * by element; rows and columns outside the tensor (at() may start before it) are skipped */
static void emit_tile_pairs(Em *e, const PStmt *st, bool red, bool wg0_only) {
    const PlanKernel *pk = e->pk;
    const PExpr *ix = st->lhs, *rhs = st->rhs;
    const Symbol *tn = ix->base->sym;
    PExpr *const *dims = e->pk->arg_dims.v[tn->index];
    const Type *t = &rhs->ty;
    int n = ix->nix;
    bool h16 = is16(t->dt);
    const char *k = t->dt == DT_BF16 ? "bf16" : "fp16", *ct = !h16 ? "float" : t->dt == DT_BF16 ? "__nv_bfloat16" : "__half";
    if (h16 || !red) need(e, "tkc_ptx.cuh", "math");
    if (red) need(e, "tkc_ptx.cuh", "red");
    /* a 16-bit value is computed in fp32 and rounded by the pack or the add: the explicit
     * conversion of the whole value is implied */
    if (rhs->kind == PX_CALL && (rhs->fn == FN_BF16 || rhs->fn == FN_FP16)) rhs = rhs->args[0];
    e->hoisted.n = 0;
    hoist_row_values(e, rhs);
    const PExpr *ri = ix->ix[n - 2].lo, *ci = ix->ix[n - 1].lo;
    if (t->partial && red) L("// a partial value: every warpgroup adds its part of the sum");
    L("%s{", wg0_only ? "if (wg == 0) " : "");
    IN();
    L("const long long tkc_r0 = (long long)%s;  // the tile's first row and column", move_coord(e, ri, t->rows));
    L("const long long tkc_c0 = (long long)%s;", move_coord(e, ci, t->cols));
    L("%s *const tkc_base = %s + %stkc_r0 * %s_st%d + tkc_c0 * %s_st%d;", ct, tn->name, lead_offset(e, tn, ix), tn->name, n - 2,
      tn->name, n - 1);
    L("const bool tkc_pairs = %s_st%d == 1 && %s_st%d %% 2 == 0 && ((uintptr_t)tkc_base & %d) == 0;  // two elements per %s",
      tn->name, n - 1, tn->name, n - 2, h16 ? 3 : 7,
      red ? (h16 ? arena_printf(e->a, "red.%sx2", t->dt == DT_BF16 ? "bf16" : "f16") : "red.v2")
          : (h16 ? "4-byte store" : "8-byte store"));
    Ctx c0 = tile_ctx(pk, t, "(2 * tkc_p)"), c1 = tile_ctx(pk, t, "(2 * tkc_p + 1)");
    const char *rows = scalar_str(e, dims[n - 2], false), *cols = scalar_str(e, dims[n - 1], false);
    L("#pragma unroll");
    L("for (int tkc_p = 0; tkc_p < %d; ++tkc_p) {", frag_count(pk, t) / 2);
    IN();
    L("const int tkc_r = %s, tkc_c = %s;", row_expr(e, &c0), col_expr(e, &c0, 0));
    L("const float tkc_x0 = %s, tkc_x1 = %s;", elem_str(e, rhs, &c0), elem_str(e, rhs, &c1));
    L("if (%stkc_r0 + tkc_r >= %s) continue;", is_at(ri) ? "tkc_r0 + tkc_r < 0 || " : "", rows);
    L("%s *const tkc_q = tkc_base + tkc_r * %s_st%d + tkc_c * %s_st%d;", ct, tn->name, n - 2, tn->name, n - 1);
    const char *lo = is_at(ci) ? "tkc_c0 + tkc_c >= 0 && " : "", *lo1 = is_at(ci) ? "tkc_c0 + tkc_c + 1 >= 0 && " : "";
    L("if (tkc_pairs && %stkc_c0 + tkc_c + 1 < %s) {", lo, cols);
    IN();
    if (red && h16) L("tkc_red_add_%sx2(tkc_q, tkc_pack_%s(tkc_x0, tkc_x1));", k, k);
    else if (red) L("tkc_red_add_v2_f32(tkc_q, tkc_x0, tkc_x1);");
    else if (h16) L("*reinterpret_cast<uint32_t *>(tkc_q) = tkc_pack_%s(tkc_x0, tkc_x1);", k);
    else L("*reinterpret_cast<float2 *>(tkc_q) = make_float2(tkc_x0, tkc_x1);");
    OUT();
    L("} else {");
    IN();
    if (red) {
        const char *add1 = h16 ? arena_printf(e->a, "tkc_red_add_%s", k) : "tkc_red_add_f32";
        L("if (%stkc_c0 + tkc_c < %s) %s(tkc_q, tkc_x0);", lo, cols, add1);
        L("if (%stkc_c0 + tkc_c + 1 < %s) %s(tkc_q + %s_st%d, tkc_x1);", lo1, cols, add1, tn->name, n - 1);
    } else {
        const char *cvt = h16 ? cvt16(t->dt) : "";
        L("if (%stkc_c0 + tkc_c < %s) tkc_q[0] = %s(tkc_x0);", lo, cols, cvt);
        L("if (%stkc_c0 + tkc_c + 1 < %s) tkc_q[%s_st%d] = %s(tkc_x1);", lo1, cols, tn->name, n - 1, cvt);
    }
    OUT();
    L("}");
    OUT();
    L("}");
    OUT();
    L("}");
}

static void emit_direct_store(Em *e, const PStmt *st) { emit_tile_pairs(e, st, false, false); }

/* an atomic add from registers into global memory (`G[...] += x`): each thread adds the elements
 * it holds with red.global.add.f32 (.bf16, .f16), a tile's neighbouring column pairs as one
 * red.global.add.v2.f32 (.bf16x2, .f16x2) where the address is aligned and the columns adjacent; rows and
 * columns past the tensor's end (or before its start, for at()) are skipped. A per_wg value, which
 * every warpgroup holds whole, is added by the first warpgroup only. */
static void emit_red(Em *e, const PStmt *st) {
    const PlanKernel *pk = e->pk;
    const PlanStore *ps = store_of(pk, st);
    const PExpr *ix = st->lhs, *rhs = st->rhs;
    if (rhs->ty.kind == TY_TILE) {
        emit_tile_pairs(e, st, true, ps && ps->wg0_only);
        return;
    }
    /* a per_row vector */
    const Symbol *tn = ix->base->sym;
    PExpr *const *dims = e->pk->arg_dims.v[tn->index];
    const Type *t = &rhs->ty;
    int n = ix->nix;
    need(e, "tkc_ptx.cuh", "red");
    bool h16 = is16(t->dt);
    const char *k = t->dt == DT_BF16 ? "bf16" : "fp16";
    if (h16) need(e, "tkc_ptx.cuh", "math");
    if (h16 && rhs->kind == PX_CALL && (rhs->fn == FN_BF16 || rhs->fn == FN_FP16)) rhs = rhs->args[0];
    const char *add1 = h16 ? arena_printf(e->a, "tkc_red_add_%s", k) : "tkc_red_add_f32";
    e->hoisted.n = 0;
    hoist_row_values(e, rhs);
    Ctx c = tile_ctx(pk, t, "tkc_r");
    L("if (%s(tkc_lane & 3) == 0) {  // one lane of each quad holds the row's value", ps && ps->wg0_only ? "wg == 0 && " : "");
    IN();
    L("#pragma unroll");
    L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) {", frag_count(pk, t));
    IN();
    L("const long long tkc_gi = (long long)%s + %s;", move_coord(e, ix->ix[n - 1].lo, t->rows), row_expr(e, &c));
    L("if (%stkc_gi < %s) %s(%s + %s, %s);", is_at(ix->ix[n - 1].lo) ? "tkc_gi >= 0 && " : "",
      scalar_str(e, dims[n - 1], false), add1, tn->name, global_offset(e, tn, ix, "tkc_gi"), elem_str(e, rhs, &c));
    OUT();
    L("}");
    OUT();
    L("}");
}

/* a tile stored at(row) may start above the tensor (a negative row), and TMA stores need
 * non-negative coordinates: such a 64-row chunk is written by the threads, element by element,
 * skipping the rows that do not exist; the warpgroup then skips the chunk's TMA store. Emitted
 * only where the row is not provably >= 0 (never_negative): the path is slow to have in a
 * kernel even when it never runs (attention measured 8% slower with it, bench/RESULTS.md) */
static void emit_chunk_above(Em *e, const PStmt *st, const PExpr *rhs, int W) {
    const PlanKernel *pk = e->pk;
    const PExpr *ix = st->lhs;
    const Symbol *tn = ix->base->sym;
    PExpr *const *dims = e->pk->arg_dims.v[tn->index];
    const Type *t = &st->rhs->ty;
    int n = ix->nix, half = t->cols / 2;
    Ctx c = tile_ctx(pk, t, "tkc_f");
    L("if (tkc_r0 + tkc_rb * 64 < 0) {  // above the tensor: TMA stores need non-negative coordinates, so the threads write the rows that exist");
    IN();
    L("#pragma unroll");
    L("for (int tkc_j = 0; tkc_j < %d; ++tkc_j) {", W / 2);
    IN();
    L("const int tkc_f = tkc_rb * %d + tkc_ch * %d + tkc_j;", half, W / 2);
    L("const long long tkc_gr = (long long)%s + %s, tkc_gc = (long long)%s + %s;", move_coord(e, ix->ix[n - 2].lo, t->rows),
      row_expr(e, &c), move_coord(e, ix->ix[n - 1].lo, t->cols), col_expr(e, &c, 0));
    L("if (tkc_gr >= 0 && tkc_gr < %s && tkc_gc < %s)", scalar_str(e, dims[n - 2], false), scalar_str(e, dims[n - 1], false));
    L("    %s[%stkc_gr * %s_st%d + tkc_gc * %s_st%d] = %s(%s);", tn->name, lead_offset(e, tn, ix), tn->name, n - 2, tn->name,
      n - 1, cvt16(t->dt), elem_str(e, rhs, &c));
    OUT();
    L("}");
    L("continue;");
    OUT();
    L("}");
}

/* a register tile to global memory: 64-row chunks through the warpgroup's two staging
 * buffers (stmatrix into the swizzled layout, proxy fence, TMA store) */
static void emit_tile_store(Em *e, const PStmt *st) {
    const PlanKernel *pk = e->pk;
    const PlanStore *ps = store_of(pk, st);
    if (ps->path == SP_DIRECT) {
        emit_direct_store(e, st);
        return;
    }
    const PlanMap *m = &pk->maps.v[ps->map];
    const PlanBuf *sb = &pk->bufs.v[pk->staging_buf];
    const PExpr *ix = st->lhs, *rhs = st->rhs;
    const Type *t = &rhs->ty;
    int n = ix->nix, rwg = rows_wg(pk, t), W = ps->chunk_cols;
    int nch = t->cols / W, nrb = rwg / 64, half = t->cols / 2;
    need(e, "tkc_ptx.cuh", "tma_store");
    need(e, "tkc_ptx.cuh", "proxy_fence");
    need(e, "tkc_ptx.cuh", "stmatrix");
    need(e, "tkc_ptx.cuh", "named_barrier");
    need(e, "tkc_ptx.cuh", "math");
    /* the pack rounds to 16 bits, so an explicit conversion of the whole value is implied */
    if (rhs->kind == PX_CALL && (rhs->fn == FN_BF16 || rhs->fn == FN_FP16)) rhs = rhs->args[0];
    e->hoisted.n = 0;
    hoist_row_values(e, rhs);
    const char *k = t->dt == DT_BF16 ? "bf16" : "fp16";
    L("{");
    IN();
    L("const int tkc_r0 = %s%s;  // first row of this warpgroup's part", move_coord(e, ix->ix[n - 2].lo, t->rows),
      t->per_wg ? "" : arena_printf(e->a, " + wg * %d", rwg));
    L("const int tkc_c0 = %s;", move_coord(e, ix->ix[n - 1].lo, t->cols));
    L("// this lane's stmatrix row address inside a 64 x %d chunk (%s swizzle)", W, swizzle_name(m->swz));
    L("const int tkc_srow = 16 * tkc_warp + (tkc_lane & 7) + 8 * ((tkc_lane >> 3) & 1);");
    L("#pragma unroll");
    L("for (int tkc_rb = 0; tkc_rb < %d; ++tkc_rb) {", nrb);
    IN();
    L("#pragma unroll");
    L("for (int tkc_ch = 0; tkc_ch < %d; ++tkc_ch) {", nch);
    IN();
    if (ps->may_start_above) emit_chunk_above(e, st, rhs, W);
    if (pk->staging_per_wg == 2) {
        L("const uint32_t tkc_buf = %s_smem + (uint32_t)(wg * 2 + (tkc_st_cnt & 1)) * %d;", sb->name, sb->bytes);
        L("if (tkc_wg_thread == 0) tkc_bulk_wait_read<1>();  // the store that used this buffer has read it");
    } else {
        L("const uint32_t tkc_buf = %s_smem + (uint32_t)wg * %d;", sb->name, sb->bytes);
        L("if (tkc_wg_thread == 0) tkc_bulk_wait_read<0>();  // the previous store has read the buffer");
    }
    L("tkc_bar_sync(%d + wg, 128);", pk->nbars.v[pk->nbar_staging].id);
    L("#pragma unroll");
    L("for (int tkc_g = 0; tkc_g < %d; ++tkc_g) {", W / 16);
    IN();
    L("const int tkc_f = tkc_rb * %d + tkc_ch * %d + tkc_g * 8;  // first value of this 16-column group", half, W / 2);
    const char *vals[8];
    for (int j = 0; j < 8; j++) {
        Ctx c = tile_ctx(pk, t, arena_printf(e->a, "(tkc_f + %d)", j));
        vals[j] = elem_str(e, rhs, &c);
    }
    for (int j = 0; j < 4; j++) L("const uint32_t tkc_v%d = tkc_pack_%s(%s, %s);", j, k, vals[2 * j], vals[2 * j + 1]);
    /* the chunk is laid out as its TMA map reads it: W columns, the map's swizzle */
    need(e, "tkc_layout.cuh", "tile_offset");
    L("tkc_stmatrix_x4(tkc_buf + tkc_tile_offset(64, %d, 2, %d, tkc_srow, 16 * tkc_g + 8 * (tkc_lane >> 4)), tkc_v0, tkc_v1, "
      "tkc_v2, tkc_v3);",
      W, swizzle_bytes(m->swz));
    OUT();
    L("}");
    L("tkc_fence_proxy_async();  // make the chunk visible to the TMA engine");
    L("tkc_bar_sync(%d + wg, 128);", pk->nbars.v[pk->nbar_staging].id);
    L("if (tkc_wg_thread == 0) {");
    IN();
    StrBuf co;
    sb_init(&co);
    sb_printf(&co, "tkc_c0 + tkc_ch * %d, tkc_r0 + tkc_rb * 64", W);
    for (int i = n - 3; i >= 0; i--) sb_printf(&co, ", %s", scalar_str(e, ix->ix[i].lo, false));
    L("tkc_tma_store_%dd(&%s, %s, tkc_buf);", m->rank, m->name, co.s);
    sb_free(&co);
    L("tkc_bulk_commit();");
    OUT();
    L("}");
    L("++tkc_st_cnt;");
    OUT();
    L("}");
    OUT();
    L("}");
    OUT();
    L("}");
}

/* ---- moves between registers and shared memory ------------------------------------------------- */

/* the tkc_tile_offset arguments of a shared tile: rows, cols, element bytes, swizzle span */
static const char *tile_shape_args(Em *e, const PlanBuf *b) {
    need(e, "tkc_layout.cuh", "tile_offset");
    return arena_printf(e->a, "%d, %d, %d, %d", b->rows, b->cols, dtype_bytes[b->dt], swizzle_bytes(b->swz));
}

/* "n + " for a block of the shared tile that starts at row or column n (nothing for 0) */
static const char *origin_plus(Em *e, int n) {
    return n ? arena_printf(e->a, "%d + ", n) : "";
}

/* the register side's first row in the shared tile: the block's first row, plus this warpgroup's
 * part of a row-split tile */
static const char *move_row0_at(Em *e, const Type *t, int srow0) {
    if (t->per_wg) return arena_printf(e->a, "%d", srow0);
    return arena_printf(e->a, "%swg * %d", origin_plus(e, srow0), rows_wg(e->pk, t));
}

/* shared -> registers. 16-bit tiles: ldmatrix.x4 per 16 x 16 block, straight into the packed
 * pairs of the accumulator layout (or unpacked into an fp32 tile); fp32 tiles: one 8-byte
 * shared load per pair of neighbouring columns */
void emit_move_s2r(Em *e, const PlanMove *m) {
    const PlanKernel *pk = e->pk;
    const PlanBuf *b = &pk->bufs.v[m->buf];
    const Type *t = m->rt;
    const Symbol *dst = m->reg;
    int pcols = dst->ty.cols, n = frag_count(pk, t);
    const char *src = buf_addr(e, m->buf, false), *shape = tile_shape_args(e, b);
    L("{");
    IN();
    L("const uint32_t tkc_src = %s;  // %s: %s swizzle", src, b->name, swizzle_name(b->swz));
    if (m->path == MP_LDMATRIX) {
        need(e, "tkc_ptx.cuh", "ldmatrix");
        int half = t->cols / 2;
        L("// lane l addresses row l %% 8 of 8x8 matrix l / 8 of each 16 x 16 block");
        L("const int tkc_mr = %s + 16 * tkc_warp + (tkc_lane & 7) + 8 * ((tkc_lane >> 3) & 1), tkc_mc = %s8 * (tkc_lane >> 4);",
          move_row0_at(e, t, m->srow0), origin_plus(e, m->scol0));
        L("#pragma unroll");
        L("for (int tkc_rb = 0; tkc_rb < %d; ++tkc_rb) {", rows_wg(pk, t) / 64);
        IN();
        L("#pragma unroll");
        L("for (int tkc_g = 0; tkc_g < %d; ++tkc_g) {", t->cols / 16);
        IN();
        L("const int tkc_f = tkc_rb * %d + tkc_g * 8;  // the block's first value", half);
        L("const uint32_t tkc_a = tkc_src + tkc_tile_offset(%s, 64 * tkc_rb + tkc_mr, 16 * tkc_g + tkc_mc);", shape);
        Ctx c = tile_ctx(pk, t, "tkc_f");
        const char *pi = parent_index(e, &c, pcols, m->col0);
        /* a move does not convert (sema): the packed pairs land as they are */
        L("const int tkc_q = %s >> 1;", pi);
        L("tkc_ldmatrix_x4(tkc_a, %s[tkc_q], %s[tkc_q + 1], %s[tkc_q + 2], %s[tkc_q + 3]);", dst->name, dst->name, dst->name,
          dst->name);
        OUT();
        L("}");
        OUT();
        L("}");
    } else {
        need(e, "tkc_ptx.cuh", "shared_v2");
        Ctx c = tile_ctx(pk, t, "(2 * tkc_p)");
        L("#pragma unroll");
        L("for (int tkc_p = 0; tkc_p < %d; ++tkc_p) {", n / 2);
        IN();
        L("float tkc_x, tkc_y;");
        L("tkc_lds_v2(tkc_src + tkc_tile_offset(%s, %s%s, %s%s), tkc_x, tkc_y);", shape, origin_plus(e, m->srow0), row_expr(e, &c),
          origin_plus(e, m->scol0), col_expr(e, &c, 0));
        const char *pi = parent_index(e, &c, pcols, m->col0);
        L("%s[%s] = tkc_x;", dst->name, pi);
        L("%s[%s + 1] = tkc_y;", dst->name, pi);
        OUT();
        L("}");
    }
    OUT();
    L("}");
}

/* registers -> shared: the value is computed per element in the accumulator layout; 16-bit
 * tiles get stmatrix.x4 per 16 x 16 block, fp32 tiles one 8-byte store per pair of columns */
void emit_move_r2s(Em *e, const PlanMove *m) {
    const PlanKernel *pk = e->pk;
    const PlanBuf *b = &pk->bufs.v[m->buf];
    const Type *t = m->rt;
    const PExpr *rhs = m->st->rhs;
    if (rhs->kind == PX_CALL && (rhs->fn == FN_BF16 || rhs->fn == FN_FP16)) rhs = rhs->args[0]; /* the pack rounds */
    e->hoisted.n = 0;
    hoist_row_values(e, rhs);
    const char *dst = buf_addr(e, m->buf, false), *shape = tile_shape_args(e, b);
    L("%s{%s", m->wg0_only ? "if (wg == 0) " : "", m->wg0_only ? "  // a per_wg value: every warpgroup holds it, the first writes it" : "");
    IN();
    L("const uint32_t tkc_dst = %s;  // %s: %s swizzle", dst, b->name, swizzle_name(b->swz));
    if (m->path == MP_STMATRIX) {
        need(e, "tkc_ptx.cuh", "stmatrix");
        need(e, "tkc_ptx.cuh", "math");
        const char *k = b->dt == DT_BF16 ? "bf16" : "fp16";
        int half = t->cols / 2;
        L("const int tkc_mr = %s + 16 * tkc_warp + (tkc_lane & 7) + 8 * ((tkc_lane >> 3) & 1), tkc_mc = %s8 * (tkc_lane >> 4);",
          move_row0_at(e, t, m->srow0), origin_plus(e, m->scol0));
        L("#pragma unroll");
        L("for (int tkc_rb = 0; tkc_rb < %d; ++tkc_rb) {", rows_wg(pk, t) / 64);
        IN();
        L("#pragma unroll");
        L("for (int tkc_g = 0; tkc_g < %d; ++tkc_g) {", t->cols / 16);
        IN();
        L("const int tkc_f = tkc_rb * %d + tkc_g * 8;  // the block's first value", half);
        const char *vals[8];
        for (int j = 0; j < 8; j++) {
            Ctx c = tile_ctx(pk, t, arena_printf(e->a, "(tkc_f + %d)", j));
            vals[j] = elem_str(e, rhs, &c);
        }
        for (int j = 0; j < 4; j++) L("const uint32_t tkc_v%d = tkc_pack_%s(%s, %s);", j, k, vals[2 * j], vals[2 * j + 1]);
        L("tkc_stmatrix_x4(tkc_dst + tkc_tile_offset(%s, 64 * tkc_rb + tkc_mr, 16 * tkc_g + tkc_mc), tkc_v0, tkc_v1, tkc_v2, "
          "tkc_v3);",
          shape);
        OUT();
        L("}");
        OUT();
        L("}");
    } else {
        need(e, "tkc_ptx.cuh", "shared_v2");
        Ctx c0 = tile_ctx(pk, t, "(2 * tkc_p)"), c1 = tile_ctx(pk, t, "(2 * tkc_p + 1)");
        L("#pragma unroll");
        L("for (int tkc_p = 0; tkc_p < %d; ++tkc_p)", frag_count(pk, t) / 2);
        L("    tkc_sts_v2(tkc_dst + tkc_tile_offset(%s, %s%s, %s%s), %s, %s);", shape, origin_plus(e, m->srow0), row_expr(e, &c0),
          origin_plus(e, m->scol0), col_expr(e, &c0, 0), elem_str(e, rhs, &c0), elem_str(e, rhs, &c1));
    }
    OUT();
    L("}");
}

/* the relayout reads and the vector write (lower.c, relayouts) */
void emit_move_relayout(Em *e, const PlanMove *m) {
    const PlanKernel *pk = e->pk;
    const PlanBuf *b = &pk->bufs.v[m->buf];
    const char *base = buf_addr(e, m->buf, false);
    need(e, "tkc_ptx.cuh", "shared_f32");
    const char *ld = b->dt == DT_BF16 ? "tkc_ld_shared_bf16" : b->dt == DT_FP16 ? "tkc_ld_shared_fp16" : "tkc_ld_shared_f32";
    switch (m->path) {
    case MP_STS_VEC: {
        const Symbol *v = m->st->rhs->sym;
        Ctx c = tile_ctx(pk, &v->ty, "tkc_r");
        bool col = v->ty.layout == VL_COL;
        const char *who = col ? "wg == 0 && tkc_warp == 0 && tkc_lane < 4"
                              : v->ty.per_wg && pk->consumers > 1 ? "wg == 0 && (tkc_lane & 3) == 0" : "(tkc_lane & 3) == 0";
        L("if (%s) {  // one thread per %s", who, col ? "column" : "row");
        IN();
        L("#pragma unroll");
        L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) tkc_st_shared_f32(%s + (uint32_t)%s * 4, %s[tkc_r]);", frag_count(pk, &v->ty), base,
          col ? col_expr(e, &c, 0) : row_expr(e, &c), v->name);
        OUT();
        L("}");
        return;
    }
    case MP_LDS_VEC: emit_vec_from_shared(e, m->st); return;
    case MP_LDS_LINE: {
        const Symbol *v = m->reg;
        Ctx c = tile_ctx(pk, &v->ty, "tkc_r");
        const char *at = m->line_col ? arena_printf(e->a, "%s, %d", row_expr(e, &c), m->line)
                                     : arena_printf(e->a, "%d, %s", m->line, col_expr(e, &c, 0));
        L("#pragma unroll");
        L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) %s[tkc_r] = %s(%s + tkc_tile_offset(%s, %s));  // %s %d", frag_count(pk, &v->ty),
          v->name, ld, base, tile_shape_args(e, b), at, m->line_col ? "column" : "row", m->line);
        return;
    }
    case MP_LDS_T: {
        const Symbol *t = m->reg;
        int n = frag_count(pk, &t->ty);
        Ctx c0 = tile_ctx(pk, &t->ty, "(2 * tkc_p)");
        const char *shape = tile_shape_args(e, b);
        L("#pragma unroll");
        L("for (int tkc_p = 0; tkc_p < %d; ++tkc_p) {  // element (r, c) of the transpose is (c, r) of '%s'", n / 2, b->name);
        IN();
        L("const int tkc_r = %s, tkc_c = %s;", row_expr(e, &c0), col_expr(e, &c0, 0));
        L("const float tkc_x = %s(%s + tkc_tile_offset(%s, tkc_c, tkc_r));", ld, base, shape);
        L("const float tkc_y = %s(%s + tkc_tile_offset(%s, tkc_c + 1, tkc_r));", ld, base, shape);
        if (is16(t->ty.dt)) {
            need(e, "tkc_ptx.cuh", "math");
            L("%s[tkc_p] = tkc_pack_%s(tkc_x, tkc_y);", t->name, t->ty.dt == DT_BF16 ? "bf16" : "fp16");
        } else {
            L("%s[2 * tkc_p] = tkc_x;", t->name);
            L("%s[2 * tkc_p + 1] = tkc_y;", t->name);
        }
        OUT();
        L("}");
        return;
    }
    default: return;
    }
}

/* a shared tile to global memory by TMA (a store or a reduce-add), one box per swizzle atom,
 * issued by the first thread of the first consumer warpgroup */
static void emit_tma_store_shared(Em *e, const PlanStore *ps) {
    const PlanKernel *pk = e->pk;
    const PlanBuf *b = &pk->bufs.v[ps->buf];
    const PlanMap *m = &pk->maps.v[ps->map];
    const PExpr *ix = ps->st->lhs;
    int n = ix->nix;
    bool add = ps->path == SP_TMA_ADD;
    need(e, "tkc_ptx.cuh", "tma_store");
    if (add) need(e, "tkc_ptx.cuh", "tma_reduce");
    L("if (wg == 0 && tkc_wg_thread == 0) {  // %d %s of %d x %d", b->natoms, add ? (b->natoms == 1 ? "reduce-add" : "reduce-adds") : (b->natoms == 1 ? "box" : "boxes"),
      m->box[1], m->box[0]);
    IN();
    const char *src = buf_addr(e, ps->buf, false);
    int box_bytes = b->rows * b->atom_cols * dtype_bytes[b->dt];
    for (int a = 0; a < b->natoms; a++) {
        StrBuf co;
        sb_init(&co);
        if (b->is_vec) {
            sb_printf(&co, "%s", move_coord(e, ix->ix[n - 1].lo, b->cols));
            for (int i = n - 2; i >= 0; i--) sb_printf(&co, ", %s", scalar_str(e, ix->ix[i].lo, false));
        } else {
            sb_printf(&co, "%s, %s", move_coord_plus(e, ix->ix[n - 1].lo, b->cols, a * b->atom_cols),
                      move_coord(e, ix->ix[n - 2].lo, b->rows));
            for (int i = n - 3; i >= 0; i--) sb_printf(&co, ", %s", scalar_str(e, ix->ix[i].lo, false));
        }
        L("tkc_tma_%s_%dd(&%s, %s, %s%s);", add ? "add" : "store", m->rank, m->name, co.s, src,
          a ? arena_printf(e->a, " + %d", a * box_bytes) : "");
        sb_free(&co);
    }
    L("tkc_bulk_commit();");
    if (b->kind == BUF_RING || b->kind == BUF_ONCE)
        L("tkc_bulk_wait_read<0>();  // the TMA store has read '%s' before its stage is released", b->name);
    OUT();
    L("}");
}

void emit_store(Em *e, const POp *o) {
    const PlanStore *ps = &e->pk->stores.v[o->store];
    const PStmt *st = ps->st;
    L("// %s  [%s]", plan_stmt_str(e->a, st), storepath_name[ps->path]);
    switch (ps->path) {
    case SP_STAGED: case SP_DIRECT: emit_tile_store(e, st); return;
    case SP_VECTOR: emit_vec_store(e, st); return;
    case SP_TMA: case SP_TMA_ADD: emit_tma_store_shared(e, ps); return;
    case SP_RED: emit_red(e, st); return;
    case SP_ROWS: emit_rows_store(e, st); return;
    }
}
