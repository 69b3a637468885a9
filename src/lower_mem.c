/* lower_mem.c - lowering's memory side: load groups with their mbarrier rings and TMA maps, the
 * stores and their staging buffers, the shared-memory layout, column reductions, which tensors
 * the kernel takes strides for, and the named barriers. Part of lowering (lower_int.h). */
#include <inttypes.h>
#include <string.h>

#include "lower_int.h"

/* ---- load groups ---------------------------------------------------------------------------- */

static int add_barrier(Lower *L, const char *name, int copies, int count, int tx, const char *why) {
    PlanBarrier b = {.name = name, .copies = copies, .count = count, .tx_bytes = tx, .why = why};
    vec_push(L->a, &L->pk->bars, b);
    return L->pk->bars.n - 1;
}

static int add_map(Lower *L, Symbol *tensor, int box0, int box1, bool vec, Swizzle swz, bool store) {
    PlanKernel *pk = L->pk;
    Arg *arg = L->sk->args.v[tensor->index];
    int rank = tensor->ty.ndims;
    int box[5] = {box0, vec ? 1 : box1, 1, 1, 1};
    for (int i = 0; i < pk->maps.n; i++) {
        PlanMap *m = &pk->maps.v[i];
        if (m->tensor == tensor && m->swz == swz && !memcmp(m->box, box, sizeof box)) {
            m->store |= store;
            return i;
        }
    }
    PlanMap m = {.tensor = tensor, .arg = arg, .rank = rank, .swz = swz, .store = store};
    memcpy(m.box, box, sizeof box);
    m.name = arena_printf(L->a, "tm_%s_%dx%d%s", tensor->name, box1, box0, vec ? "v" : "");
    if (vec) m.name = arena_printf(L->a, "tm_%s_v%d", tensor->name, box0);
    vec_push(L->a, &pk->maps, m);
    return pk->maps.n - 1;
}

/* a shared vector loaded by TMA from a tensor of rank 2 or more: the tensor's rows must be 16-byte
 * multiples, as for tiles (sema checks the tiles' loads; a vector's box itself is always a
 * multiple of 16 bytes) */
static void check_vec_rows(Lower *L, const Stmt *st, const Symbol *t) {
    const Arg *arg = L->sk->args.v[t->index];
    const Expr *inner = arg->ts.dims[arg->ts.ndims - 1];
    int eb = dtype_bytes[t->ty.dt];
    if (arg->ts.ndims >= 2 && inner->is_const && (inner->cval * eb) % 16)
        diag_error(L->d, st->span,
                   "TMA needs 16-byte aligned rows: the last dimension of '%s' is %" PRId64 " x %d B = %" PRId64
                   " B, not a multiple of 16 (load the vector into registers instead: a register vector <- %s[...])",
                   t->name, inner->cval, eb, inner->cval * eb, t->name);
}

void collect_g2s(StmtList *l, Stmt ***v, int *n, int *cap, Arena *a) {
    for (int i = 0; i < l->n; i++) {
        if (l->v[i]->kind == ST_IF) {
            collect_g2s(&l->v[i]->u.if_.then_s, v, n, cap, a);
            collect_g2s(&l->v[i]->u.if_.else_s, v, n, cap, a);
        }
        if (l->v[i]->kind == ST_ASSIGN && l->v[i]->mv == MV_G2S) {
            if (*n == *cap) {
                int nc = *cap ? *cap * 2 : 8;
                Stmt **nv = ARENA_NEW_N(a, Stmt *, nc);
                if (*n) memcpy(nv, *v, sizeof(Stmt *) * (size_t)*n);
                *v = nv;
                *cap = nc;
            }
            (*v)[(*n)++] = l->v[i];
        }
    }
}

/* with a cluster, a load whose coordinates do not depend on the clustered axis is the same
 * for every block of the cluster: multicast it */
static void mark_multicast(Lower *L, PlanGroup *g) {
    PlanKernel *pk = L->pk;
    if (pk->cluster < 2 || !L->sk->axes.n) return;
    Symbol *ax = L->sk->axes.v[pk->cluster_axis]->sym;
    for (int i = 0; i < g->loads.n; i++) {
        PlanLoad *pl = &g->loads.v[i];
        if (pl->cond) continue; /* every block issues its conditional loads itself */
        if (!px_depends_on(L->a, pl->st->rhs, ax)) {
            pl->multicast = true;
            g->multicast = true;
            lower_note(L, "cluster of %d: '%s' does not depend on block.%s, so each block of a cluster issues %s of its "
                    "boxes and TMA multicasts them into every block",
                 pk->cluster, px_str(L->a, pl->st->rhs), L->sk->axes.v[pk->cluster_axis]->name,
                 pk->cluster == 2 ? "half" : "a share");
        }
    }
}

/* buffer b in group g already: 0 no; 1 yes, by loads in other branches of an if than st (one of
 * them runs a step, so the group's bytes count the tile once: the full barrier expects each
 * load's bytes under its condition); -1 yes, by a load that may run with st */
static int load_seen(const Lower *L, const PlanGroup *g, Stmt **in_g, int b, const Stmt *st) {
    int seen = 0;
    for (int k = 0; k < g->loads.n; k++) {
        if (g->loads.v[k].buf != b) continue;
        if (!loads_exclusive(L, in_g[k], st)) return -1;
        seen = 1;
    }
    return seen;
}

/* adds the TMA load st to group g (nm: the group's name so far; in_g: its loads so far, in order):
 * a tile first loaded here joins the group's buffers and bytes; one another branch of an if loaded
 * already is an alternative; one a load that may run with st loaded already is an error */
static void group_add_load(Lower *L, PlanGroup *g, StrBuf *nm, Stmt **in_g, Stmt *st, const char *where) {
    PlanKernel *pk = L->pk;
    Symbol *y = lhs_root(st->u.assign.lhs);
    int b = buf_of_sym(pk, y);
    if (b < 0) return;
    int seen = load_seen(L, g, in_g, b, st);
    if (seen < 0) {
        diag_error(L->d, st->span, "'%s' is loaded twice %s", y->name, where);
        return;
    }
    if (!seen) {
        vec_push(L->a, &g->bufs, b);
        pk->bufs.v[b].group = pk->groups.n;
        g->bytes += plan_buf_tx_bytes(&pk->bufs.v[b]);
        sb_printf(nm, "%s%s", nm->len ? "_" : "", y->name);
    }
    const PlanBuf *pb = &pk->bufs.v[b];
    Symbol *t = lhs_root(st->u.assign.rhs->u.index.base);
    PlanLoad pl = {.st = lower_ps(L, st), .buf = b, .cond = load_cond(L, st), .alternative = seen};
    pl.map = add_map(L, t, pb->atom_cols, pb->rows, pb->is_vec, pb->swz, false);
    if (pb->is_vec) check_vec_rows(L, st, t);
    in_g[g->loads.n] = st;
    vec_push(L->a, &g->loads, pl);
}

void lower_groups(Lower *L, POpList *compute_ops) {
    SemaKernel *sk = L->sk;
    PlanKernel *pk = L->pk;
    /* ring tiles: grouped by the first compute op that reads them */
    Stmt **loads = NULL;
    int nl = 0, cap = 0;
    if (sk->blocks[BK_LOAD]) collect_g2s(&sk->blocks[BK_LOAD]->u.block.body, &loads, &nl, &cap, L->a);
    /* key[i]: the first compute op that reads load i's tile */
    int *key = ARENA_NEW_N(L->a, int, nl);
    bool *done = ARENA_NEW_N(L->a, bool, nl);
    for (int i = 0; i < nl; i++) {
        Symbol *y = lhs_root(loads[i]->u.assign.lhs);
        key[i] = 1 << 20; /* unused in compute: its own group, last */
        for (int j = 0; j < compute_ops->n; j++) {
            Effects e;
            op_effects(L, compute_ops->v[j], &e);
            if (symset_has(&e.bufs, y)) {
                key[i] = j;
                break;
            }
        }
    }
    Stmt **in_g = ARENA_NEW_N(L->a, Stmt *, nl > 0 ? nl : 1); /* the loads of the group being built, in order */
    for (int i = 0; i < nl; i++) {
        if (done[i]) continue;
        PlanGroup g = {.first_use = key[i] < (1 << 20) ? key[i] : -1};
        StrBuf nm;
        sb_init(&nm);
        for (int j = i; j < nl; j++) {
            if (done[j] || key[j] != key[i]) continue;
            done[j] = true;
            group_add_load(L, &g, &nm, in_g, loads[j], "in one step");
        }
        g.name = arena_strdup(L->a, nm.s ? nm.s : "g");
        sb_free(&nm);
        mark_multicast(L, &g);
        g.full = add_barrier(L, arena_printf(L->a, "full_%s", g.name), pk->stages, 1, g.bytes,
                             "the producer's arrive.expect_tx; TMA delivers the bytes");
        g.empty = add_barrier(L, arena_printf(L->a, "empty_%s", g.name), pk->stages,
                              pk->consumers * (g.multicast ? pk->cluster : 1), 0,
                              g.multicast ? "one elected thread per consumer warpgroup of every block in the cluster "
                                            "releases the stage (multicast writes into all of them)"
                                          : "one elected thread per consumer warpgroup releases the stage");
        vec_push(L->a, &pk->groups, g);
    }
    if (pk->groups.n > 1)
        lower_note(L, "%d load groups with separate barriers: each group's tiles are first read by a different op, so "
                "consumers start on the first group while the next one is still landing",
             pk->groups.n);
    /* setup loads: one group, filled once per work tile */
    Stmt **sl = NULL;
    int ns = 0, scap = 0;
    if (sk->blocks[BK_SETUP]) collect_g2s(&sk->blocks[BK_SETUP]->u.block.body, &sl, &ns, &scap, L->a);
    if (ns) {
        PlanGroup g = {.once = true, .first_use = -1};
        in_g = ARENA_NEW_N(L->a, Stmt *, ns);
        StrBuf nm;
        sb_init(&nm);
        for (int j = 0; j < ns; j++) {
            group_add_load(L, &g, &nm, in_g, sl[j], "in setup");
        }
        g.name = arena_strdup(L->a, nm.s ? nm.s : "setup");
        sb_free(&nm);
        mark_multicast(L, &g);
        g.full = add_barrier(L, arena_printf(L->a, "full_%s", g.name), pk->setup_stages, 1, g.bytes,
                             pk->setup_stages > 1 ? "setup loads, once per work tile, one copy per tile parity"
                                                  : "setup loads, once per work tile");
        g.empty = add_barrier(L, arena_printf(L->a, "empty_%s", g.name), pk->setup_stages,
                              pk->consumers * (g.multicast ? pk->cluster : 1), 0,
                              "consumers are done with the setup tiles of this work tile");
        vec_push(L->a, &pk->groups, g);
    }
    for (int g = 0; g < pk->groups.n; g++) {
        if (!pk->groups.v[g].once && pk->groups.v[g].first_use < 0)
            diag_error(L->d, pk->groups.v[g].loads.v[0].st->span,
                       "'%s' is loaded every step but the compute block never reads it",
                       pk->bufs.v[pk->groups.v[g].bufs.v[0]].name);
        if (pk->groups.v[g].bytes >= (1 << 20))
            diag_error(L->d, L->sk->k->name_span, "load group '%s' moves %s bytes per step; an mbarrier counts at most 1,048,575",
                       pk->groups.v[g].name, fmt_bytes(pk->groups.v[g].bytes));
    }
}

/* ---- stores ----------------------------------------------------------------------------------- */

/* the plan store of one store op: its path, map and buffer (the statement it carries is the one
 * the emitter prints: a relayout may have rewritten it) */
static void collect_store(Lower *L, PStmt *st, BlockKind bk) {
    PlanKernel *pk = L->pk;
    PlanStore ps = {.st = st, .map = -1, .buf = -1, .block = bk};
    if (st->mv == MV_R2G && st->rhs->ty.kind == TY_TILE) {
        Type t = st->rhs->ty;
        if (!check_reg_shape(L, &t, st->rhs->span, "the stored value")) return;
        if (pk->rowwise) {
            ps.path = SP_ROWS;
            vec_push(L->a, &pk->stores, ps);
            return;
        }
        int eb = dtype_bytes[t.dt];
        if (eb == 4) {
            /* fp32: the staging chunks and their TMA maps are 16-bit */
            ps.path = SP_DIRECT;
            vec_push(L->a, &pk->stores, ps);
            lower_note(L, "'%s': an fp32 tile is stored from registers directly, two neighbouring columns per 8-byte store "
                    "where the tensor's strides allow",
                 plan_stmt_str(L->a, st));
            return;
        }
        if (!L->sk->staging) {
            ps.path = SP_DIRECT;
            vec_push(L->a, &pk->stores, ps);
            return;
        }
        int cc = t.cols % 64 == 0 ? 64 : t.cols % 32 == 0 ? 32 : 16;
        ps.path = SP_STAGED;
        ps.chunk_rows = 64;
        ps.chunk_cols = cc;
        Symbol *tensor = px_root(st->lhs->base);
        ps.map = add_map(L, tensor, cc, 64, false, swizzle_choose(cc * eb), true);
        vec_push(L->a, &pk->stores, ps);
    } else if (st->mv == MV_R2G && st->rhs->ty.kind == TY_VEC) {
        ps.path = SP_VECTOR;
        vec_push(L->a, &pk->stores, ps);
    } else if (st->mv == MV_S2G || st->mv == MV_ADD_S2G) {
        Symbol *y = px_root(st->rhs), *tensor = px_root(st->lhs->base);
        int b = buf_of_sym(pk, y);
        if (b < 0) return;
        const PlanBuf *pb = &pk->bufs.v[b];
        if (st->mv == MV_ADD_S2G && pb->dt != DT_FP32 && pb->dt != DT_BF16 && pb->dt != DT_FP16) {
            diag_error(L->d, st->span, "TMA reduce-adds take fp32, bf16 or fp16 tiles");
            return;
        }
        if (pb->rows > TMA_BOX_MAX) {
            diag_error(L->d, st->span, "'%s' has %d rows; a TMA store moves at most %d rows per box", y->name, pb->rows,
                       TMA_BOX_MAX);
            return;
        }
        ps.path = st->mv == MV_S2G ? SP_TMA : SP_TMA_ADD;
        ps.buf = b;
        ps.map = add_map(L, tensor, pb->atom_cols, pb->rows, pb->is_vec, pb->swz, true);
        pk->tma_stores = true;
        vec_push(L->a, &pk->stores, ps);
    } else if (st->mv == MV_ADD_R2G) {
        /* atomic adds from registers: red.global.add.f32 (v2 where two columns are adjacent), or the
         * bf16 / fp16 forms (x2 where two columns are adjacent) */
        Type t = st->rhs->ty;
        if (t.kind == TY_VEC && t.layout != VL_ROW) {
            diag_error(L->d, st->span, "atomic adds of per_col vectors are not supported by the sm_90a back end yet");
            return;
        }
        if (!check_reg_shape(L, &t, st->rhs->span, "the added value")) return;
        ps.path = SP_RED;
        ps.wg0_only = t.per_wg && !t.partial && pk->consumers > 1; /* a partial tile: every warpgroup adds its part */
        vec_push(L->a, &pk->stores, ps);
    }
}

/* the plan stores of the store ops of a list; each op names its store */
void collect_stores(Lower *L, POpList *ops, BlockKind bk) {
    for (int i = 0; i < ops->n; i++) {
        POp *o = ops->v[i];
        if (o->kind == POP_IF || o->kind == POP_FOR) {
            collect_stores(L, &o->then_ops, bk);
            collect_stores(L, &o->else_ops, bk);
        } else if (o->kind == POP_STORE) {
            int n = L->pk->stores.n;
            collect_store(L, o->st, bk);
            if (L->pk->stores.n > n) o->store = n;
        }
    }
}


void lower_staging(Lower *L) {
    PlanKernel *pk = L->pk;
    pk->staging_buf = -1;
    bool staged = false;
    for (int i = 0; i < pk->stores.n; i++) staged |= pk->stores.v[i].path == SP_STAGED;
    if (!staged) return; /* staging = 0, or no register tile is stored through shared memory */
    int cc = 16;
    for (int i = 0; i < pk->stores.n; i++)
        if (pk->stores.v[i].path == SP_STAGED && pk->stores.v[i].chunk_cols > cc) cc = pk->stores.v[i].chunk_cols;
    /* 16-bit chunks: labelled with the first staged store's element type (bf16 or fp16) */
    DType sdt = DT_BF16;
    for (int i = 0; i < pk->stores.n; i++)
        if (pk->stores.v[i].path == SP_STAGED && pk->stores.v[i].st && px_root(pk->stores.v[i].st->lhs)) {
            DType t = px_root(pk->stores.v[i].st->lhs)->ty.dt;
            if (t == DT_FP16) sdt = t;
            break;
        }
    PlanBuf b = {.name = "staging", .kind = BUF_STAGING, .dt = sdt, .rows = 64, .cols = cc, .group = -1};
    b.swz = swizzle_choose(cc * 2);
    b.atom_cols = cc;
    b.natoms = 1;
    b.bytes = 64 * cc * 2;
    b.align = swizzle_align(b.swz);
    /* two chunk buffers per consumer warpgroup (one fills while the other is stored); layout_smem
     * drops to one if two do not fit beside everything else */
    pk->staging_per_wg = 2;
    b.copies = 2 * pk->consumers;
    vec_push(L->a, &pk->bufs, b);
    pk->staging_buf = pk->bufs.n - 1;
}

/* the shared memory a block may use: all a block can, or with blocks_per_sm = n its share of the
 * SM (each block also costs the SMEM_RESERVED bytes the hardware keeps) */
static int block_smem_budget(const Lower *L) {
    const int n = L->sk->blocks_per_sm;
    return n > 1 && SMEM_SM / n - SMEM_RESERVED < SMEM_LIMIT ? SMEM_SM / n - SMEM_RESERVED : SMEM_LIMIT;
}

static void note_staging(Lower *L) {
    PlanKernel *pk = L->pk;
    bool tiles = false, reds = false, partial = false, first_wg = false;
    for (int i = 0; i < pk->stores.n; i++) {
        const PlanStore *ps = &pk->stores.v[i];
        tiles |= ps->path == SP_DIRECT && dtype_bytes[ps->st->rhs->ty.dt] == 2;
        reds |= ps->path == SP_RED;
        partial |= ps->path == SP_RED && ps->st->rhs->ty.partial;
        first_wg |= ps->path == SP_RED && ps->wg0_only;
    }
    if (reds)
        lower_note(L, "atomic adds from registers: each consumer thread adds the elements it holds with red.global.add "
                "(.f32, .bf16 or .f16; the v2 / x2 forms, two adjacent columns at once, where the tensor's strides and "
                "alignment allow), skipping rows and columns past the tensor's end%s%s",
                first_wg ? "; a per_wg value is added by the first warpgroup only" : "",
                partial ? "; a partial value by every warpgroup (each its part of the sum)" : "");
    if (tiles && !L->sk->staging)
        lower_note(L, "staging = 0: stores from registers write global memory directly, two 16-bit elements per store "
                "where the tensor's strides allow; no staging buffer, no barrier, nothing to wait for");
    if (pk->staging_buf < 0) return;
    const PlanBuf *b = &pk->bufs.v[pk->staging_buf];
    /* where the chunks had to fit: the block, or its share of the SM with blocks_per_sm = n */
    const char *where = L->sk->blocks_per_sm > 1
                            ? arena_printf(L->a, " in a block's share of the SM (blocks_per_sm = %d)", L->sk->blocks_per_sm)
                            : "";
    if (pk->staging_per_wg == 2)
        lower_note(L, "stores from registers go through 64 x %d chunks in shared memory (swizzle %s, conflict-free "
                "stmatrix), two per consumer warpgroup, each sent by a TMA store while the next one fills%s",
             b->cols, swizzle_name(b->swz),
             pk->staging_halved ? arena_printf(L->a, "; 32 columns wide, because two 64-wide chunks per warpgroup would not fit%s",
                                               where) : "");
    else
        lower_note(L, "stores from registers go through one 64 x %d chunk per consumer warpgroup in shared memory "
                "(swizzle %s); two would not fit beside the rest%s, so each chunk waits for the previous store",
             b->cols, swizzle_name(b->swz), where);
}

/* two staging chunks per warpgroup at half the width: 64 x 32 bf16 with the 64B swizzle instead of
 * 64 x 64 with 128B. Each store's map narrows with it, which needs maps of their own (no load
 * shares them). Returns false when the chunks are already narrower than 64 columns. */
static bool halve_staging(Lower *L) {
    PlanKernel *pk = L->pk;
    PlanBuf *b = &pk->bufs.v[pk->staging_buf];
    if (b->cols != 64) return false;
    for (int i = 0; i < pk->stores.n; i++) {
        const PlanStore *ps = &pk->stores.v[i];
        if (ps->path != SP_STAGED) continue;
        if (ps->chunk_cols != 64 || !pk->maps.v[ps->map].store) return false;
        for (int g = 0; g < pk->groups.n; g++)
            for (int k = 0; k < pk->groups.v[g].loads.n; k++)
                if (pk->groups.v[g].loads.v[k].map == ps->map) return false;
    }
    for (int i = 0; i < pk->stores.n; i++) {
        PlanStore *ps = &pk->stores.v[i];
        if (ps->path != SP_STAGED || ps->chunk_cols == 32) continue;
        PlanMap *m = &pk->maps.v[ps->map];
        if (m->box[0] == 64) {
            m->box[0] = 32;
            m->swz = SWZ_64;
            m->name = arena_printf(L->a, "tm_%s_%dx%d", m->tensor->name, m->box[1], m->box[0]);
        }
        for (int j = 0; j < pk->stores.n; j++)
            if (pk->stores.v[j].map == ps->map) pk->stores.v[j].chunk_cols = 32;
    }
    b->cols = b->atom_cols = 32;
    b->swz = SWZ_64;
    b->bytes = 64 * 32 * 2;
    b->align = swizzle_align(b->swz);
    pk->staging_halved = true;
    return true;
}

void layout_smem(Lower *L) {
    PlanKernel *pk = L->pk;
    int off = 0;
retry:
    off = 0;
    static const BufKind order[] = {BUF_RING, BUF_ONCE, BUF_SCRATCH, BUF_STAGING};
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < pk->bufs.n; i++) {
            PlanBuf *b = &pk->bufs.v[i];
            if (b->kind != order[k]) continue;
            off = (off + b->align - 1) / b->align * b->align;
            b->offset = off;
            off += b->bytes * b->copies;
        }
    off = (off + 7) / 8 * 8;
    for (int i = 0; i < pk->bars.n; i++) {
        pk->bars.v[i].offset = off;
        off += 8 * pk->bars.v[i].copies;
    }
    pk->smem_used = off;
    pk->smem_total = off + SMEM_SLACK;
    if (pk->smem_total > block_smem_budget(L) && pk->staging_buf >= 0 && pk->staging_per_wg == 2) {
        /* first halve the chunks' width, keeping two per warpgroup (the bytes of one 64-wide
         * chunk), so a chunk still fills while the one before it is stored; then one chunk */
        if (!pk->staging_halved && halve_staging(L)) goto retry;
        pk->staging_per_wg = 1;
        pk->bufs.v[pk->staging_buf].copies = pk->consumers;
        goto retry;
    }
    note_staging(L);
    if (pk->smem_total > SMEM_LIMIT) {
        StrBuf b;
        sb_init(&b);
        for (int i = 0; i < pk->bufs.n; i++) {
            const PlanBuf *pb = &pk->bufs.v[i];
            if (pb->copies > 1) sb_printf(&b, "%s %s %d x %s", i ? " +" : "", pb->name, pb->copies, fmt_bytes(pb->bytes));
            else sb_printf(&b, "%s %s %s", i ? " +" : "", pb->name, fmt_bytes(pb->bytes));
        }
        int nb = 0;
        for (int i = 0; i < pk->bars.n; i++) nb += 8 * pk->bars.v[i].copies;
        sb_printf(&b, " + barriers %d + alignment %s", nb, fmt_bytes(SMEM_SLACK + (pk->smem_used - nb)));
        Span sp = L->sk->stages_span.file >= 0 ? L->sk->stages_span : L->sk->k->name_span;
        /* the alignment term above also absorbs padding; print the exact padding separately */
        int payload = 0;
        for (int i = 0; i < pk->bufs.n; i++) payload += pk->bufs.v[i].bytes * pk->bufs.v[i].copies;
        sb_free(&b);
        sb_init(&b);
        for (int i = 0; i < pk->bufs.n; i++) {
            const PlanBuf *pb = &pk->bufs.v[i];
            if (pb->copies > 1) sb_printf(&b, "%s%s %d x %s", i ? " + " : "", pb->name, pb->copies, fmt_bytes(pb->bytes));
            else sb_printf(&b, "%s%s %s", i ? " + " : "", pb->name, fmt_bytes(pb->bytes));
        }
        int pad = pk->smem_used - payload - nb;
        if (pad) sb_printf(&b, " + padding %s", fmt_bytes(pad));
        sb_printf(&b, " + barriers %d + base alignment %s", nb, fmt_bytes(SMEM_SLACK));
        diag_error(L->d, sp, "shared memory: %s = %s B, over the %s B a block can use", b.s, fmt_bytes(pk->smem_total),
                   fmt_bytes(SMEM_LIMIT));
        if (pk->setup_stages > 1) {
            int once = 0;
            for (int i = 0; i < pk->bufs.n; i++)
                if (pk->bufs.v[i].kind == BUF_ONCE) once += pk->bufs.v[i].bytes;
            diag_note(L->d, sp, "setup_stages = 2 keeps two copies of the setup tiles; one copy needs %s B less",
                      fmt_bytes(once));
        }
        sb_free(&b);
    } else if (L->sk->blocks_per_sm > 1 && L->sk->blocks_per_sm * (pk->smem_total + SMEM_RESERVED) > SMEM_SM) {
        int n = L->sk->blocks_per_sm, fit = SMEM_SM / (pk->smem_total + SMEM_RESERVED);
        diag_error(L->d, L->sk->blocks_span, "blocks_per_sm = %d: %d blocks of %s B of shared memory (and %s B the hardware "
                   "keeps for each) are more than an SM's %s B; %d fit%s, or a block of at most %s B", n, n,
                   fmt_bytes(pk->smem_total), fmt_bytes(SMEM_RESERVED), fmt_bytes(SMEM_SM), fit, fit == 1 ? "s" : "",
                   fmt_bytes(block_smem_budget(L)));
    }
}

/* ---- which tensors the kernel takes strides for ------------------------------------------------ */

static bool is_at_index(const PExpr *x) { return x->kind == PX_CALL && x->fn == FN_AT; }

/* an integer expression that is never negative: non-negative constants, grid coordinates, the
 * pipeline step, run-time dimensions, and +, *, /, cdiv, min of such values, max with one of them,
 * lets that name one (depth-limited) */
static bool never_negative(Arena *a, const PExpr *x, int depth) {
    if (!x || depth > 32) return false;
    if (x->is_const) return x->cval >= 0;
    switch (x->kind) {
    case PX_NAME:
    case PX_MEMBER:
        if (!x->sym) return false;
        if (x->sym->kind == SYM_AXIS || x->sym->kind == SYM_LOOPVAR || x->sym->kind == SYM_DIM) return true;
        return x->sym->kind == SYM_LET && x->sym->init && never_negative(a, px_from_ast(a, x->sym->init), depth + 1);
    case PX_BINARY:
        if (x->bop != BIN_ADD && x->bop != BIN_MUL && x->bop != BIN_DIV) return false;
        return never_negative(a, x->l, depth + 1) && never_negative(a, x->r, depth + 1);
    case PX_CALL:
        if (x->fn == FN_MAX) return never_negative(a, x->args[0], depth + 1) || never_negative(a, x->args[1], depth + 1);
        if (x->fn == FN_MIN || x->fn == FN_CDIV)
            return never_negative(a, x->args[0], depth + 1) && never_negative(a, x->args[1], depth + 1);
        return false;
    default: return false;
    }
}

/* a tile store whose first row may be negative (at(r) with r not provably >= 0) */
static bool store_may_start_above(Arena *a, const PStmt *st) {
    const PExpr *ix = st->lhs, *r = ix->ix[ix->nix - 2].lo;
    return is_at_index(r) && !never_negative(a, r->args[0], 0);
}

static bool stmts_direct(const StmtList *l, const Symbol *t) {
    for (int i = 0; i < l->n; i++) {
        const Stmt *st = l->v[i];
        if (st->kind == ST_ASSIGN && st->mv == MV_R2G && st->u.assign.rhs->ty.kind == TY_VEC &&
            st->u.assign.lhs->u.index.base->sym == t)
            return true;
        if (st->kind == ST_ASSIGN && st->mv == MV_G2R && st->u.assign.rhs->u.index.base->sym == t) return true;
        if (st->kind == ST_LET && expr_mentions(st->u.let.e, t)) return true;
        if (st->kind == ST_IF && (stmts_direct(&st->u.if_.then_s, t) || stmts_direct(&st->u.if_.else_s, t))) return true;
        if (st->kind == ST_FOR && stmts_direct(&st->u.for_.body, t)) return true;
    }
    return false;
}

void plan_arg_strides(Lower *L) {
    SemaKernel *sk = L->sk;
    PlanKernel *pk = L->pk;
    for (int i = 0; i < pk->stores.n; i++)
        pk->stores.v[i].may_start_above = pk->stores.v[i].path == SP_STAGED && store_may_start_above(L->a, pk->stores.v[i].st);
    for (int i = 0; i < sk->args.n; i++) {
        const Symbol *t = sk->args.v[i]->sym;
        bool need = false;
        if (!sk->args.v[i]->ts.ndims) { /* a scalar */
            vec_push(L->a, &pk->arg_strides, need);
            continue;
        }
        for (int k = 0; k < sk->lets.n && !need; k++) need = expr_mentions(sk->lets.v[k]->u.let.e, t);
        for (int b = 0; b < BK_COUNT && !need; b++) need = sk->blocks[b] && stmts_direct(&sk->blocks[b]->u.block.body, t);
        for (int k = 0; k < pk->stores.n && !need; k++) {
            const PlanStore *ps = &pk->stores.v[k];
            need = ps->st->lhs->base->sym == t && (PLAN_STORE_DIRECT(ps) || ps->may_start_above);
        }
        vec_push(L->a, &pk->arg_strides, need);
    }
}

/* ---- named barriers -------------------------------------------------------------------------- */

/* lowering's barrier indices, after plan_named_bars put the fixed kinds first (the same POp can
 * sit in several lists: each is shifted once) */
static void shift_bars(POpList *ops, int by) {
    for (int i = 0; i < ops->n; i++) {
        POp *o = ops->v[i];
        if (o->kind == POP_BAR && o->bar >= 0 && !o->bar_shifted) {
            o->bar += by;
            o->bar_shifted = true;
        }
        shift_bars(&o->then_ops, by);
        shift_bars(&o->else_ops, by);
    }
}

static bool ops_have(const POpList *ops, POpKind k) {
    for (int i = 0; i < ops->n; i++)
        if (ops->v[i]->kind == k || ops_have(&ops->v[i]->then_ops, k) || ops_have(&ops->v[i]->else_ops, k)) return true;
    return false;
}

/* ids 1..15 (0 is __syncthreads), in a fixed order: the staging chunks (one id per consumer
 * warpgroup), the pingpong turns (one per warpgroup), sync(), then the scratch tiles' barrier
 * (added by the lowering of their writes) */
void plan_named_bars(Lower *L) {
    PlanKernel *pk = L->pk;
    Vec(PlanNamedBar) bars = {0};
    if (pk->staging_buf >= 0) {
        PlanNamedBar b = {"staging", 0, pk->consumers, 128, "a warpgroup's staging chunk is free, then filled"};
        vec_push(L->a, &bars, b);
        pk->nbar_staging = bars.n - 1;
    }
    if (pk->pingpong) {
        PlanNamedBar b = {"pingpong", 0, pk->consumers, 256, "warpgroup wg waits on id + wg for its turn; the one before arrives"};
        vec_push(L->a, &bars, b);
        pk->nbar_pingpong = bars.n - 1;
    }
    POpList *lists[] = {&pk->setup_ops, &pk->first_ops, &pk->compute_ops, &pk->after_ops, &pk->finish_ops};
    bool sync = false;
    for (int i = 0; i < 5; i++) sync |= ops_have(lists[i], POP_SYNC);
    if (sync) {
        PlanNamedBar b = {"sync", 0, 1, 128 * pk->consumers, "sync(): every consumer thread"};
        vec_push(L->a, &bars, b);
        pk->nbar_sync = bars.n - 1;
    }
    /* then the ones lowering asked for (scratch tiles, column reductions), in that order */
    int base = bars.n;
    for (int i = 0; i < pk->nbars.n; i++) vec_push(L->a, &bars, pk->nbars.v[i]);
    int *refs[] = {&pk->nbar_scratch, &pk->nbar_scratch_wg, &pk->colred_bar, &pk->colred_wg_bar, &pk->rowscan_bar,
                   &pk->rowscan_wg_bar};
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++)
        if (*refs[i] >= 0) *refs[i] += base;
    for (int i = 0; i < 5; i++) shift_bars(lists[i], base);
    int id = 1;
    for (int i = 0; i < bars.n; i++) {
        bars.v[i].id = id;
        id += bars.v[i].ids;
    }
    if (id > 16)
        diag_error(L->d, L->sk->k->name_span, "the kernel needs %d named barriers, more than the 15 a block has", id - 1);
    pk->nbars.v = bars.v;
    pk->nbars.n = bars.n;
    pk->nbars.cap = bars.cap;
}
