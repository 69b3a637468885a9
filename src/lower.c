/* lower.c - lowers a checked kernel to its plan (plan.h): roles and register split, shared
 * buffers with swizzles and offsets, load groups with mbarrier rings, TMA maps, the staged
 * stores, and the consumers' program with explicit waits and releases.
 * Invariant: every decision is recorded in the plan (and explained in its notes) so the
 * emitter only prints; budget violations (shared memory, registers) are user diagnostics. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "plan.h"

const char *const bufkind_name[] = {
#define X(e, s, m) s,
    TK_BUFKINDS(X)
#undef X
};
const char *const pop_name[] = {
#define X(e, s, m) s,
    TK_POPS(X)
#undef X
};
const char *const movepath_name[] = {
#define X(e, s, m) s,
    TK_MOVEPATHS(X)
#undef X
};
const char *const storepath_name[] = {
#define X(e, s, m) s,
    TK_STOREPATHS(X)
#undef X
};

typedef struct LoadCond {
    const Stmt *st;     /* a TMA load under an if of the load or setup block */
    const Expr *cond;   /* the conjunction of the conditions around it */
} LoadCond;

typedef struct Lower {
    Arena *a;
    Diag *d;
    SemaKernel *sk;
    PlanKernel *pk;
    int errors0;
    Vec(LoadCond) load_conds;
} Lower;

static void note(Lower *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(Lower *L, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    StrBuf b;
    sb_init(&b);
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    vec_push(L->a, &L->pk->notes, arena_strdup(L->a, b.s));
    sb_free(&b);
}

static const char *plan_stmt_str(Lower *L, const Stmt *st) {
    StrBuf b;
    sb_init(&b);
    plan_stmt_text(&b, st);
    const char *r = arena_strdup(L->a, b.s ? b.s : "");
    sb_free(&b);
    return r;
}

static POp *pop_new(Lower *L, POpKind k) {
    POp *o = ARENA_NEW(L->a, POp);
    o->kind = k;
    o->group = -1;
    o->bar = o->buf = o->store = -1;
    return o;
}

static int buf_of_sym(PlanKernel *pk, const Symbol *y) {
    for (int i = 0; i < pk->bufs.n; i++)
        if (pk->bufs.v[i].sym == y) return i;
    return -1;
}

/* the shared tile an MMA operand expression names: t, t.T, t[slice], prev(t) */
static Expr *operand_root(Expr *e, bool *trans, bool *prev, int *r0, int *c0) {
    *trans = false;
    *prev = false;
    *r0 = *c0 = 0;
    for (;;) {
        if (e->kind == EX_TRANSPOSE) {
            *trans = !*trans;
            e = e->u.tr.base;
        } else if (e->kind == EX_CALL && e->fn == FN_PREV) {
            *prev = true;
            e = e->u.call.args[0];
        } else if (e->kind == EX_INDEX) {
            IndexArg *ra = &e->u.index.args[0], *ca = &e->u.index.args[1];
            int rl = ra->lo ? (int)ra->lo->cval : 0, cl = ca->lo ? (int)ca->lo->cval : 0;
            /* a slice of a transposed view slices the stored tile the other way round */
            if (*trans) {
                *r0 += cl;
                *c0 += rl;
            } else {
                *r0 += rl;
                *c0 += cl;
            }
            e = e->u.index.base;
        } else {
            return e;
        }
    }
}

/* ---- register symbols an expression or statement reads and writes -------------------------- */

typedef struct SymSet {
    Symbol **v;
    int n, cap;
} SymSet;

static void symset_add(Lower *L, SymSet *s, Symbol *y) {
    for (int i = 0; i < s->n; i++)
        if (s->v[i] == y) return;
    vec_push(L->a, s, y);
}

static bool symset_has(const SymSet *s, const Symbol *y) {
    for (int i = 0; i < s->n; i++)
        if (s->v[i] == y) return true;
    return false;
}


static bool is_regval(const Symbol *y) {
    return y && (y->kind == SYM_REG || (y->kind == SYM_LET && (y->ty.kind == TY_TILE || y->ty.kind == TY_VEC)));
}

static void expr_reads(Lower *L, Expr *e, SymSet *regs, SymSet *bufs) {
    if (!e) return;
    switch (e->kind) {
    case EX_NAME:
        if (is_regval(e->sym)) symset_add(L, regs, e->sym);
        if (e->sym && e->sym->kind == SYM_SHARED && bufs) symset_add(L, bufs, e->sym);
        return;
    case EX_MEMBER: return;
    case EX_TRANSPOSE: expr_reads(L, e->u.tr.base, regs, bufs); return;
    case EX_INDEX:
        expr_reads(L, e->u.index.base, regs, bufs);
        for (int i = 0; i < e->u.index.nargs; i++) {
            expr_reads(L, e->u.index.args[i].lo, regs, bufs);
            expr_reads(L, e->u.index.args[i].hi, regs, bufs);
        }
        return;
    case EX_CALL:
        for (int i = 0; i < e->u.call.nargs; i++) expr_reads(L, e->u.call.args[i], regs, bufs);
        return;
    case EX_BINARY:
        expr_reads(L, e->u.bin.l, regs, bufs);
        expr_reads(L, e->u.bin.r, regs, bufs);
        return;
    case EX_UNARY: expr_reads(L, e->u.un.e, regs, bufs); return;
    case EX_COND:
        expr_reads(L, e->u.cond.c, regs, bufs);
        expr_reads(L, e->u.cond.a, regs, bufs);
        expr_reads(L, e->u.cond.b, regs, bufs);
        return;
    default: return;
    }
}

static Symbol *lhs_root(Expr *e) {
    while (e && e->kind == EX_INDEX) e = e->u.index.base;
    return e && e->kind == EX_NAME ? e->sym : NULL;
}

/* reads and writes of registers and shared buffers by one consumer statement (recursively) */
static void stmt_effects(Lower *L, Stmt *st, SymSet *rd, SymSet *wr, SymSet *bufs) {
    switch (st->kind) {
    case ST_ASSIGN: {
        Expr *lhs = st->u.assign.lhs, *rhs = st->u.assign.rhs;
        expr_reads(L, rhs, rd, bufs);
        Symbol *root = lhs_root(lhs);
        if (st->mv == MV_R2S || st->mv == MV_S2G || st->mv == MV_ADD_S2G) {
            if (root && bufs) symset_add(L, bufs, root);
        } else if (st->mv == MV_R2G || st->mv == MV_ADD_R2G) {
            /* global destination: nothing in registers is written */
        } else if (root && is_regval(root)) {
            symset_add(L, wr, root);
            if (st->u.assign.op != AS_SET || lhs->kind != EX_NAME) symset_add(L, rd, root);
        }
        if (lhs->kind == EX_INDEX)
            for (int i = 0; i < lhs->u.index.nargs; i++) {
                expr_reads(L, lhs->u.index.args[i].lo, rd, NULL);
                expr_reads(L, lhs->u.index.args[i].hi, rd, NULL);
            }
        return;
    }
    case ST_LET:
        expr_reads(L, st->u.let.e, rd, bufs);
        if (is_regval(st->u.let.sym)) symset_add(L, wr, st->u.let.sym);
        return;
    case ST_IF:
        expr_reads(L, st->u.if_.cond, rd, NULL);
        for (int i = 0; i < st->u.if_.then_s.n; i++) stmt_effects(L, st->u.if_.then_s.v[i], rd, wr, bufs);
        for (int i = 0; i < st->u.if_.else_s.n; i++) stmt_effects(L, st->u.if_.else_s.v[i], rd, wr, bufs);
        return;
    case ST_FOR:
        for (int i = 0; i < st->u.for_.body.n; i++) stmt_effects(L, st->u.for_.body.v[i], rd, wr, bufs);
        return;
    case ST_EXPR: return;
    }
}

static bool stmt_is_mma(const Stmt *st) {
    return st->kind == ST_ASSIGN && st->u.assign.rhs->kind == EX_BINARY && st->u.assign.rhs->u.bin.op == BIN_MATMUL;
}

static bool stmts_have_mma(const StmtList *l) {
    for (int i = 0; i < l->n; i++) {
        Stmt *st = l->v[i];
        if (stmt_is_mma(st)) return true;
        if (st->kind == ST_IF && (stmts_have_mma(&st->u.if_.then_s) || stmts_have_mma(&st->u.if_.else_s))) return true;
        if (st->kind == ST_FOR && stmts_have_mma(&st->u.for_.body)) return true;
    }
    return false;
}

/* ---- roles and registers -------------------------------------------------------------------- */

static int rows_per_wg(PlanKernel *pk, const Type *t) { return t->per_wg ? t->rows : t->rows / pk->consumers; }

/* 32-bit registers per consumer thread for a register value */
static int value_regs(PlanKernel *pk, const Type *t) {
    int bytes = dtype_bytes[t->dt];
    int cplx = t->complex ? 2 : 1;
    if (t->kind == TY_TILE) return cplx * rows_per_wg(pk, t) * t->cols * bytes / (4 * 128);
    if (t->layout == VL_ROW) return cplx * (rows_per_wg(pk, t) / 64 > 0 ? rows_per_wg(pk, t) / 64 : 1) * 2;
    return cplx * (t->rows / 4 > 0 ? t->rows / 4 : 1);
}

static bool check_reg_shape(Lower *L, const Type *t, Span sp, const char *name) {
    PlanKernel *pk = L->pk;
    if (t->kind == TY_VEC && t->layout == VL_COL) return true;
    int r = t->rows;
    if (!t->per_wg && r % pk->consumers) {
        diag_error(L->d, sp, "'%s' has %d rows, which do not split evenly over %d consumer warpgroups", name, r,
                   pk->consumers);
        return false;
    }
    int rw = rows_per_wg(pk, t);
    if (rw % 64) {
        diag_error(L->d, sp,
                   "'%s' gives each consumer warpgroup %d rows; register tiles hold multiples of 64 rows per "
                   "warpgroup (the wgmma fragment layout)%s",
                   name, rw, t->per_wg ? "" : arena_printf(L->a, " (%d rows / %d consumers)", r, pk->consumers));
        return false;
    }
    return true;
}

static void collect_let_regs(Lower *L, StmtList *l) {
    for (int i = 0; i < l->n; i++) {
        Stmt *st = l->v[i];
        if (st->kind == ST_LET && is_regval(st->u.let.sym)) {
            if (check_reg_shape(L, &st->u.let.sym->ty, st->u.let.name_span, st->u.let.name)) {
                PlanReg r = {st->u.let.sym, value_regs(L->pk, &st->u.let.sym->ty)};
                vec_push(L->a, &L->pk->regs, r);
            }
        } else if (st->kind == ST_IF) {
            collect_let_regs(L, &st->u.if_.then_s);
            collect_let_regs(L, &st->u.if_.else_s);
        } else if (st->kind == ST_FOR) {
            collect_let_regs(L, &st->u.for_.body);
        }
    }
}

static void collect_g2s(StmtList *l, Stmt ***out, int *n, int *cap, Arena *a);

/* a setup load that does not depend on the clustered axis: the cluster multicasts it */
static bool setup_multicast(Lower *L) {
    SemaKernel *sk = L->sk;
    if (!sk->blocks[BK_SETUP] || !sk->axes.n) return false;
    Stmt **loads = NULL;
    int n = 0, cap = 0;
    collect_g2s(&sk->blocks[BK_SETUP]->u.block.body, &loads, &n, &cap, L->a);
    for (int i = 0; i < n; i++)
        if (!expr_depends_on(loads[i]->u.assign.rhs, sk->axes.v[L->pk->cluster_axis]->sym)) return true;
    return false;
}

static void lower_roles(Lower *L) {
    SemaKernel *sk = L->sk;
    PlanKernel *pk = L->pk;
    pk->consumers = sk->consumers;
    pk->threads = 128 * (pk->consumers + 1);
    pk->no_pipeline = !sk->pipe;
    pk->stages = sk->pipe ? sk->stages : 0;
    pk->persistent = sk->persistent;
    pk->cluster = sk->cluster;
    pk->cluster_axis = sk->cluster_axis;
    /* a persistent block takes the tiles of a folded axis two at a time (see emit_tile_loop); in
     * clusters, the blocks of a cluster take the pair together */
    for (int i = 0; i < sk->axes.n; i++) pk->paired |= pk->persistent && sk->axes.v[i]->folded && pk->cluster < 2;
    pk->order = sk->order;
    pk->order_group = sk->order_group;
    pk->overlap = sk->overlap;
    pk->pingpong = sk->pingpong;
    pk->setup_stages = 1;
    if (sk->setup_stages == 2) {
        if (!pk->persistent)
            note(L, "setup_stages = 2 asked for, one copy kept: without a persistent grid each block runs one work tile");
        else if (pk->cluster > 1 && setup_multicast(L))
            note(L, "setup_stages = 2 asked for, one copy kept: two copies are not implemented for setup loads that a "
                    "cluster multicasts (they would be released block to block)");
        else
            pk->setup_stages = 2;
    }
    int p, c;
    reg_split_default(pk->consumers, &p, &c);
    if (sk->producer_regs) p = sk->producer_regs;
    if (sk->consumer_regs) c = sk->consumer_regs;
    pk->producer_regs = p;
    pk->consumer_regs = c;
    pk->split_why = sk->producer_regs || sk->consumer_regs ? "program" : "default";
    if (!reg_split_fits(pk->consumers, p, c))
        diag_error(L->d, sk->regs_span.file >= 0 ? sk->regs_span : sk->k->name_span,
                   "register split does not fit the register file: 128 x %d (producer) + %d x 128 x %d (consumers) "
                   "= %s > 65,536",
                   p, pk->consumers, c, fmt_bytes(128 * (p + pk->consumers * c)));
}

static void note_roles(Lower *L) {
    PlanKernel *pk = L->pk;
    note(L, "roles: warpgroup 0 is the producer (one thread issues TMA, setmaxnreg.dec %d); warpgroups 1..%d are "
            "consumers (setmaxnreg.inc %d); %d threads",
         pk->producer_regs, pk->consumers, pk->consumer_regs, pk->threads);
}

static void lower_regs(Lower *L) {
    SemaKernel *sk = L->sk;
    PlanKernel *pk = L->pk;
    for (int i = 0; i < sk->regs.n; i++) {
        Symbol *y = sk->regs.v[i];
        if (y->ty.kind == TY_ERROR) continue;
        if (!check_reg_shape(L, &y->ty, y->span, y->name)) continue;
        PlanReg r = {y, value_regs(pk, &y->ty)};
        vec_push(L->a, &pk->regs, r);
    }
    for (int b = 0; b < BK_COUNT; b++)
        if (sk->blocks[b] && b != BK_LOAD) collect_let_regs(L, &sk->blocks[b]->u.block.body);
    StrBuf cols;
    sb_init(&cols);
    int ncols = 0;
    for (int i = 0; i < pk->regs.n; i++) {
        const Symbol *y = pk->regs.v[i].sym;
        if (y->ty.kind != TY_VEC || y->ty.layout != VL_COL) continue;
        sb_printf(&cols, "%s'%s'", ncols++ ? ", " : "", y->name);
    }
    if (ncols)
        note(L, "per_col vector%s %s: each thread holds the length / 4 columns it owns in the tiles' wgmma fragment layout, "
                "slot k = column 8 (k / 2) + 2 (lane %% 4) + k %% 2, the same in every warp and warpgroup, so "
                "broadcasting into a tile reads a register (no shuffles)",
             ncols > 1 ? "s" : "", cols.s);
    sb_free(&cols);
}

/* the estimate: declared values + temporaries + a fixed overhead for addresses, loop
 * counters, descriptors and the reductions' scratch */
/* ---- shared memory -------------------------------------------------------------------------- */

/* loads of y: found; nested: under a for (an if is fine: see load_conditions) */
static void find_loads(StmtList *l, Symbol *y, bool *found, bool *nested, int depth) {
    for (int i = 0; i < l->n; i++) {
        Stmt *st = l->v[i];
        if (st->kind == ST_ASSIGN && st->mv == MV_G2S && lhs_root(st->u.assign.lhs) == y) {
            *found = true;
            if (depth) *nested = true;
        }
        if (st->kind == ST_IF) {
            find_loads(&st->u.if_.then_s, y, found, nested, depth);
            find_loads(&st->u.if_.else_s, y, found, nested, depth);
        }
        if (st->kind == ST_FOR) find_loads(&st->u.for_.body, y, found, nested, depth + 1);
    }
}

/* c1 && c2 (either may be NULL: true), typed for the emitter */
static const Expr *cond_and(Lower *L, const Expr *a, const Expr *b) {
    if (!a) return b;
    if (!b) return a;
    Expr *e = ast_expr(L->a, EX_BINARY, b->span);
    e->u.bin.op = BIN_AND;
    e->u.bin.l = (Expr *)a;
    e->u.bin.r = (Expr *)b;
    e->ty = b->ty;
    return e;
}

static const Expr *cond_not(Lower *L, const Expr *c) {
    Expr *e = ast_expr(L->a, EX_UNARY, c->span);
    e->u.un.op = UN_NOT;
    e->u.un.e = (Expr *)c;
    e->ty = c->ty;
    return e;
}

/* the condition each load under an if runs under (the producer evaluates it: conditions of the
 * load and setup blocks are over scalars, the grid and the pipeline variable) */
static void load_conditions(Lower *L, StmtList *l, const Expr *cond) {
    for (int i = 0; i < l->n; i++) {
        Stmt *st = l->v[i];
        if (st->kind == ST_ASSIGN && st->mv == MV_G2S && cond) {
            LoadCond lc = {st, cond};
            vec_push(L->a, &L->load_conds, lc);
        }
        if (st->kind == ST_IF) {
            load_conditions(L, &st->u.if_.then_s, cond_and(L, cond, st->u.if_.cond));
            load_conditions(L, &st->u.if_.else_s, cond_and(L, cond, cond_not(L, st->u.if_.cond)));
        }
    }
}

static const Expr *load_cond(Lower *L, const Stmt *st) {
    for (int i = 0; i < L->load_conds.n; i++)
        if (L->load_conds.v[i].st == st) return L->load_conds.v[i].cond;
    return NULL;
}

static bool stmts_touch_shared(const StmtList *l, const Symbol *y, bool write) {
    for (int i = 0; i < l->n; i++) {
        const Stmt *st = l->v[i];
        switch (st->kind) {
        case ST_ASSIGN:
            if (write && st->mv == MV_R2S && lhs_root(st->u.assign.lhs) == y) return true;
            if (!write && (expr_mentions(st->u.assign.rhs, y) ||
                           (st->mv != MV_R2S && st->mv != MV_G2S && expr_mentions(st->u.assign.lhs, y))))
                return true;
            break;
        case ST_LET:
            if (!write && expr_mentions(st->u.let.e, y)) return true;
            break;
        case ST_IF:
            if (stmts_touch_shared(&st->u.if_.then_s, y, write) || stmts_touch_shared(&st->u.if_.else_s, y, write)) return true;
            break;
        case ST_FOR:
            if (stmts_touch_shared(&st->u.for_.body, y, write)) return true;
            break;
        case ST_EXPR: break;
        }
    }
    return false;
}

/* does a consumer block (any but load) write (or read) the shared tile y? */
static bool consumers_touch(const SemaKernel *sk, const Symbol *y, bool write) {
    for (int b = 0; b < BK_COUNT; b++)
        if (sk->blocks[b] && b != BK_LOAD && stmts_touch_shared(&sk->blocks[b]->u.block.body, y, write)) return true;
    return false;
}

static void lower_buffers(Lower *L) {
    SemaKernel *sk = L->sk;
    PlanKernel *pk = L->pk;
    for (int i = 0; i < sk->shared.n; i++) {
        Symbol *y = sk->shared.v[i];
        if (y->ty.kind == TY_ERROR) continue;
        PlanBuf b = {.name = y->name, .sym = y, .dt = y->ty.dt, .group = -1, .copies = 1};
        bool in_load = false, in_setup = false, nested = false;
        if (sk->blocks[BK_LOAD]) find_loads(&sk->blocks[BK_LOAD]->u.block.body, y, &in_load, &nested, 0);
        if (sk->blocks[BK_SETUP]) find_loads(&sk->blocks[BK_SETUP]->u.block.body, y, &in_setup, &nested, 0);
        if (nested)
            diag_error(L->d, y->span,
                       "'%s' is loaded under a for; the sm_90a back end needs every TMA load of a step at the top "
                       "level of its block or under an if (a for would load the same tile several times)",
                       y->name);
        b.kind = in_load ? BUF_RING : in_setup ? BUF_ONCE : BUF_SCRATCH;
        if (b.kind == BUF_SCRATCH && !consumers_touch(sk, y, true) && consumers_touch(sk, y, false))
            diag_error(L->d, y->span,
                       "shared tile '%s' is read but nothing writes it: load it in setup or load (%s <- X[...]), "
                       "or move registers into it (%s <- value)",
                       y->name, y->name, y->name);
        if (b.kind == BUF_RING) {
            b.copies = pk->stages;
            BlockKind outside[] = {BK_SETUP, BK_FINISH};
            for (int k = 0; k < 2; k++)
                if (sk->blocks[outside[k]] && stmts_touch_shared(&sk->blocks[outside[k]]->u.block.body, y, false))
                    diag_error(L->d, y->span,
                               "'%s' is loaded every step (a ring of %d stages) but %s reads it; a ring tile exists only "
                               "during a step (compute and store): move it to registers or a shared tile there",
                               y->name, pk->stages, block_name[outside[k]]);
        }
        if (b.kind == BUF_ONCE) b.copies = pk->setup_stages;
        int eb = dtype_bytes[y->ty.dt];
        if (y->ty.complex) {
            diag_error(L->d, y->span, "complex shared tiles are not supported by the sm_90a back end yet");
            continue;
        }
        if (y->ty.kind == TY_VEC) {
            b.is_vec = true;
            b.rows = 1;
            b.cols = y->ty.rows;
            b.swz = SWZ_NONE;
            /* TMA loads it in 1-d boxes of at most 256 elements, each a multiple of 16 bytes (any
             * multiple of 16 elements is) starting 128-byte aligned in shared memory: one box when
             * the vector fits, else the widest that divides it in 128-byte multiples */
            b.atom_cols = b.cols;
            if (b.cols > TMA_BOX_MAX) {
                b.atom_cols = TMA_BOX_MAX;
                while (b.atom_cols > 0 && (b.cols % b.atom_cols || b.atom_cols * eb % 128)) b.atom_cols -= 16;
                if (b.atom_cols <= 0) {
                    diag_error(L->d, y->span,
                               "shared vector '%s' of %d elements takes more than one TMA box (at most %d elements), and "
                               "it does not split into boxes of a 128-byte multiple; use a length that is a multiple of %d",
                               y->name, b.cols, TMA_BOX_MAX, 128 / eb);
                    continue;
                }
            }
            b.natoms = b.cols / b.atom_cols;
            b.bytes = (b.cols * eb + 127) / 128 * 128;  /* copies (ring stages) start 128-byte aligned */
            b.align = 128;
        } else {
            b.rows = y->ty.rows;
            b.cols = y->ty.cols;
            b.swz = swizzle_choose(b.cols * eb);
            TileLayout tl = {b.rows, b.cols, eb, b.swz};
            b.atom_cols = tile_atom_cols(&tl);
            b.natoms = b.cols / b.atom_cols;
            b.bytes = tile_bytes(&tl);
            b.align = swizzle_align(b.swz);
            note(L, "swizzle %s for '%s': a row is %d x %d B = %d B, so the widest span that divides it is %d B",
                 swizzle_name(b.swz), y->name, b.cols, eb, b.cols * eb, swizzle_bytes(b.swz));
        }
        vec_push(L->a, &pk->bufs, b);
    }
}

/* ---- consumers' program: statements to ops ---------------------------------------------------- */

static PlanMma *lower_mma(Lower *L, Stmt *st) {
    PlanKernel *pk = L->pk;
    Expr *rhs = st->u.assign.rhs;
    Expr *A = rhs->u.bin.l, *B = rhs->u.bin.r;
    PlanMma *m = ARENA_NEW(L->a, PlanMma);
    m->dst = lhs_root(st->u.assign.lhs);
    if (!m->dst->ty.per_wg && m->dst->ty.rows % pk->consumers) return NULL; /* reported with the declaration */
    m->accumulate = st->u.assign.op != AS_SET;
    m->negate = st->u.assign.op == AS_SUB;
    m->in_dt = A->ty.dt;
    const Type *dt = &m->dst->ty;
    m->wg_m = rows_per_wg(pk, dt);
    m->m = m->wg_m;
    m->n = dt->cols;
    m->k = A->ty.cols;
    if (dt->complex) {
        diag_error(L->d, st->span, "complex products are not supported by the sm_90a back end yet");
        return NULL;
    }
    if (m->k % 16) {
        diag_error(L->d, A->span, "the inner dimension of '@' is %d; wgmma needs a multiple of 16", m->k);
        return NULL;
    }
    bool tr, prev;
    int r0, c0;
    /* B: always shared */
    Expr *br = operand_root(B, &tr, &prev, &r0, &c0);
    m->b.buf = buf_of_sym(pk, br->sym);
    m->b.trans = tr;
    m->b.prev = prev;
    m->b.row0 = r0;
    m->b.col0 = c0;
    /* B = stored tile (not transposed) is [K][N] with N contiguous: MN-major */
    m->b.mn_major = !tr;
    if (prev) {
        diag_error(L->d, B->span, "prev() operands are not supported by the sm_90a back end yet");
        return NULL;
    }
    if (A->ty.space == MS_SHARED) {
        Expr *ar = operand_root(A, &tr, &prev, &r0, &c0);
        m->a.buf = buf_of_sym(pk, ar->sym);
        m->a.trans = tr;
        m->a.prev = prev;
        m->a.row0 = r0;
        m->a.col0 = c0;
        m->a.mn_major = tr; /* A stored [M][K] is K-major; A.T is stored [K][M]: M-major */
        if (prev) {
            diag_error(L->d, A->span, "prev() operands are not supported by the sm_90a back end yet");
            return NULL;
        }
        if (!A->ty.per_wg && dt->per_wg == false) {
            /* the rows of A split over the consumers like the destination's */
            if (A->ty.rows != dt->rows) {
                diag_error(L->d, A->span, "'@' gives %d rows but '%s' has %d", A->ty.rows, m->dst->name, dt->rows);
                return NULL;
            }
        }
    } else {
        m->a_reg = true;
        m->a_expr = A;
        m->a.buf = -1;
        /* anything but a 16-bit register tile is converted into packed pairs first; the pairs
         * stay in registers until the product is done with them */
        if (!(A->kind == EX_NAME && (A->ty.dt == DT_BF16 || A->ty.dt == DT_FP16))) {
            Symbol *tmp = ARENA_NEW(L->a, Symbol);
            tmp->kind = SYM_REG;
            tmp->name = arena_printf(L->a, "%s_operand", m->dst->name);
            tmp->ty = A->ty;
            tmp->span = A->span;
            for (int i = 0; i < pk->regs.n; i++)
                if (!strcmp(pk->regs.v[i].sym->name, tmp->name))
                    tmp->name = arena_printf(L->a, "%s_operand%d", m->dst->name, pk->regs.n);
            m->a_tmp = tmp;
            PlanReg r = {tmp, value_regs(pk, &tmp->ty)};
            vec_push(L->a, &pk->regs, r);
        }
    }
    if (m->wg_m % 64) return NULL; /* reported with the declaration of the destination */
    const PlanBuf *bb = &pk->bufs.v[m->b.buf];
    if (bb->swz == SWZ_NONE) {
        diag_error(L->d, B->span, "'%s' has no swizzled layout (rows of %d B); wgmma operands need rows of 32, 64 or "
                   "128 B multiples", bb->name, bb->cols * dtype_bytes[bb->dt]);
        return NULL;
    }
    if (m->b.mn_major && (m->n % bb->atom_cols || m->b.col0 % bb->atom_cols)) {
        diag_error(L->d, B->span,
                   "the N extent of '@' (%d) must be a multiple of %d, the swizzle atom of '%s', when B is read "
                   "N-major",
                   m->n, bb->atom_cols, bb->name);
        return NULL;
    }
    if (!m->a_reg) {
        const PlanBuf *ab = &pk->bufs.v[m->a.buf];
        if (m->a.mn_major && (m->wg_m % ab->atom_cols || m->a.col0 % ab->atom_cols)) {
            diag_error(L->d, A->span, "a transposed A operand needs %d-row multiples per warpgroup", ab->atom_cols);
            return NULL;
        }
    }
    return m;
}

static void lower_stmts(Lower *L, StmtList *l, POpList *out, BlockKind bk);

/* ---- moves between registers and shared memory ---------------------------------------------- */

/* does a statement list read shared tile y asynchronously: as a product operand (wgmma) or as
 * the source of a TMA store? Then threads that write y must fence before those readers run. */
static bool stmts_read_async(const StmtList *l, const Symbol *y, bool *tma) {
    bool any = false;
    for (int i = 0; i < l->n; i++) {
        const Stmt *st = l->v[i];
        if (st->kind == ST_IF) {
            any |= stmts_read_async(&st->u.if_.then_s, y, tma) | stmts_read_async(&st->u.if_.else_s, y, tma);
        } else if (st->kind == ST_FOR) {
            any |= stmts_read_async(&st->u.for_.body, y, tma);
        } else if (st->kind == ST_ASSIGN && stmt_is_mma(st)) {
            any |= expr_mentions(st->u.assign.rhs, y);
        } else if (st->kind == ST_ASSIGN && (st->mv == MV_S2G || st->mv == MV_ADD_S2G) &&
                   lhs_root(st->u.assign.rhs) == y) {
            any = true;
            if (tma) *tma = true;
        }
    }
    return any;
}

static bool kernel_reads_async(Lower *L, const Symbol *y, bool *tma) {
    bool any = false;
    for (int b = 0; b < BK_COUNT; b++)
        if (L->sk->blocks[b] && b != BK_LOAD) any |= stmts_read_async(&L->sk->blocks[b]->u.block.body, y, tma);
    return any;
}

/* the named barrier that orders consumer threads' writes of scratch tiles with their readers */
static int scratch_bar(Lower *L) {
    PlanKernel *pk = L->pk;
    if (pk->nbar_scratch < 0) {
        PlanNamedBar nb = {.name = "scratch", .ids = 1, .threads = 128 * pk->consumers,
                           .why = "consumer writes of shared tiles: before (earlier readers are done) and after "
                                  "(the tile is complete for its readers)"};
        vec_push(L->a, &pk->nbars, nb);
        pk->nbar_scratch = pk->nbars.n - 1;
    }
    return pk->nbar_scratch;
}

static PlanMove *lower_move(Lower *L, Stmt *st) {
    PlanKernel *pk = L->pk;
    PlanMove *m = ARENA_NEW(L->a, PlanMove);
    m->st = st;
    m->to_shared = st->mv == MV_R2S;
    Expr *sh = m->to_shared ? st->u.assign.lhs : st->u.assign.rhs;
    Expr *rg = m->to_shared ? st->u.assign.rhs : st->u.assign.lhs;
    m->buf = buf_of_sym(pk, lhs_root(sh));
    m->rt = &rg->ty;
    bool wide = dtype_bytes[sh->ty.dt] == 4;
    m->path = m->to_shared ? (wide ? MP_STS : MP_STMATRIX) : (wide ? MP_LDS : MP_LDMATRIX);
    if (!m->to_shared) {
        m->reg = lhs_root(rg);
        if (rg->kind == EX_INDEX && rg->u.index.args[1].lo) m->col0 = (int)rg->u.index.args[1].lo->cval;
    }
    m->wg0_only = m->to_shared && rg->ty.per_wg && pk->consumers > 1;
    return m;
}

/* `shared <- value`: wait until the tile's earlier readers are done (the scheduler waits for
 * products that read it, the barrier for every warpgroup), write it, make the writes visible to
 * the async proxy when wgmma or TMA read the tile, and wait until every warpgroup wrote its part */
static void lower_r2s(Lower *L, Stmt *st, POpList *out) {
    PlanKernel *pk = L->pk;
    POp *o = pop_new(L, POP_MOVE);
    o->st = st;
    o->mv = lower_move(L, st);
    Symbol *y = lhs_root(st->u.assign.lhs);
    bool tma = false, async = kernel_reads_async(L, y, &tma);
    POp *before = pop_new(L, POP_BAR);
    before->bar = scratch_bar(L);
    before->buf = o->mv->buf;
    before->bulk_read = tma;
    before->note = arena_printf(L->a, "every earlier reader of '%s' is done%s", y->name,
                                tma ? " (and its TMA stores have read it)" : "");
    vec_push(L->a, out, before);
    vec_push(L->a, out, o);
    if (async) {
        POp *f = pop_new(L, POP_FENCE);
        f->note = arena_printf(L->a, "'%s' is read by %s", y->name, tma ? "TMA stores or products" : "products");
        vec_push(L->a, out, f);
    }
    POp *after = pop_new(L, POP_BAR);
    after->bar = scratch_bar(L);
    after->note = arena_printf(L->a, "'%s' is complete", y->name);
    vec_push(L->a, out, after);
    (void)pk;
}

/* ---- relayouts: a register value in another layout, through shared memory ---------------------
 * A register tile is held in the wgmma accumulator layout, a per_row vector by the lanes that hold
 * its rows, a per_col vector by those that hold its columns. A value needed in another layout (a
 * transpose `x.T`, one row `x[i, :]` or column `x[:, i]` of a tile, a per_row vector assigned to a
 * per_col one or back) is written to a scratch buffer of its own and read back in the new layout
 * into a temporary, between the scratch barriers of any consumer-written shared tile; the
 * statement then reads the temporary. All of it is in the plan: the buffer, the two moves and
 * the barriers. */

typedef struct Relayout {
    Lower *L;
    POpList *out;
    bool failed;
} Relayout;

static Symbol *relayout_symbol(Lower *L, SymKind k, const char *name, Type ty, Span sp) {
    Symbol *y = ARENA_NEW(L->a, Symbol);
    y->kind = k;
    y->name = name;
    y->ty = ty;
    y->span = sp;
    y->used = true;
    return y;
}

static Expr *name_expr(Lower *L, Symbol *y, Span sp) {
    Expr *e = ast_expr(L->a, EX_NAME, sp);
    e->u.name = y->name;
    e->sym = y;
    e->ty = y->ty;
    return e;
}

/* the scratch buffer a relayout of register value x goes through (one per value) */
static int relayout_buf(Lower *L, const Symbol *x) {
    PlanKernel *pk = L->pk;
    const char *name = arena_printf(L->a, "%s_relayout", x->name);
    for (int i = 0; i < pk->bufs.n; i++)
        if (!strcmp(pk->bufs.v[i].name, name)) return i;
    Type st = x->ty;
    st.space = MS_SHARED;
    st.per_wg = false;
    Symbol *y = relayout_symbol(L, SYM_SHARED, name, st, x->span);
    int eb = dtype_bytes[x->ty.dt];
    PlanBuf b = {.name = name, .sym = y, .kind = BUF_SCRATCH, .dt = x->ty.dt, .group = -1, .copies = 1};
    if (x->ty.kind == TY_VEC) {
        /* register vectors hold fp32 values whatever their dtype */
        b.dt = DT_FP32;
        eb = 4;
        b.is_vec = true;
        b.rows = 1;
        b.cols = x->ty.rows;
        b.swz = SWZ_NONE;
        b.atom_cols = b.cols;
        b.natoms = 1;
        b.bytes = b.cols * eb;
        b.align = 128;
    } else {
        b.rows = x->ty.rows;
        b.cols = x->ty.cols;
        b.swz = swizzle_choose(b.cols * eb);
        TileLayout tl = {b.rows, b.cols, eb, b.swz};
        b.atom_cols = tile_atom_cols(&tl);
        b.natoms = b.cols / b.atom_cols;
        b.bytes = tile_bytes(&tl);
        b.align = swizzle_align(b.swz);
    }
    vec_push(L->a, &pk->bufs, b);
    note(L, "'%s': a scratch buffer for '%s' in another register layout (written in its layout, read back in the new one)",
         name, x->name);
    return pk->bufs.n - 1;
}

/* writes register value src (a name) to its scratch buffer and reads it back as tmp: the read is
 * transposed (trans), one line of the tile (line >= 0), or a vector in tmp's layout */
static Symbol *relayout_value(Relayout *R, Symbol *src, Type to, bool trans, int line, bool line_col, Span sp) {
    Lower *L = R->L;
    PlanKernel *pk = L->pk;
    int b = relayout_buf(L, src);
    Symbol *scr = pk->bufs.v[b].sym;
    /* write */
    Stmt *w = ast_stmt(L->a, ST_ASSIGN, sp);
    w->u.assign.op = AS_MOVE;
    w->u.assign.lhs = name_expr(L, scr, sp);
    w->u.assign.rhs = name_expr(L, src, sp);
    w->mv = MV_R2S;
    POp *before = pop_new(L, POP_BAR);
    before->bar = scratch_bar(L);
    before->buf = b;
    before->note = arena_printf(L->a, "every earlier reader of '%s' is done", scr->name);
    vec_push(L->a, R->out, before);
    POp *wo = pop_new(L, POP_MOVE);
    wo->st = w;
    wo->mv = lower_move(L, w);
    if (src->ty.kind == TY_VEC) wo->mv->path = MP_STS_VEC;
    vec_push(L->a, R->out, wo);
    POp *after = pop_new(L, POP_BAR);
    after->bar = scratch_bar(L);
    after->note = arena_printf(L->a, "'%s' is complete", scr->name);
    vec_push(L->a, R->out, after);
    /* read */
    Symbol *tmp = relayout_symbol(L, SYM_REG, arena_printf(L->a, "%s_%s%d", src->name, trans ? "t" : line >= 0 ? "line" : "v", R->out->n),
                                  to, sp);
    if (!check_reg_shape(L, &tmp->ty, sp, tmp->name)) {
        R->failed = true;
        return tmp;
    }
    PlanReg pr = {tmp, value_regs(pk, &tmp->ty)};
    vec_push(L->a, &pk->regs, pr);
    Stmt *r = ast_stmt(L->a, ST_ASSIGN, sp);
    r->u.assign.op = AS_MOVE;
    r->u.assign.lhs = name_expr(L, tmp, sp);
    r->u.assign.rhs = name_expr(L, scr, sp);
    r->mv = MV_S2R;
    POp *ro = pop_new(L, POP_MOVE);
    ro->st = r;
    ro->mv = lower_move(L, r);
    ro->mv->path = trans ? MP_LDS_T : line >= 0 ? MP_LDS_LINE : MP_LDS_VEC;
    ro->mv->line = line;
    ro->mv->line_col = line_col;
    vec_push(L->a, R->out, ro);
    return tmp;
}

static bool is_reg_name(const Expr *x) {
    return x && x->kind == EX_NAME && x->sym && is_regval(x->sym);
}

/* a copy of x with every transpose of a register tile and every row or column of one replaced by
 * a relayout temporary (x itself when nothing changes) */
static Expr *relayout_expr(Relayout *R, Expr *x) {
    if (!x) return x;
    Lower *L = R->L;
    if (x->kind == EX_TRANSPOSE && x->ty.space == MS_REG && x->ty.kind == TY_TILE) {
        if (!is_reg_name(x->u.tr.base)) {
            diag_error(L->d, x->span, "transposing a register value outside '@' needs a named tile: let t = ...; then t.T");
            R->failed = true;
            return x;
        }
        Symbol *t = relayout_value(R, x->u.tr.base->sym, x->ty, true, -1, false, x->span);
        return name_expr(L, t, x->span);
    }
    if (x->kind == EX_INDEX && x->ty.kind == TY_VEC && x->u.index.base->ty.kind == TY_TILE &&
        x->u.index.base->ty.space == MS_REG) {
        bool col = !x->u.index.args[1].slice; /* x[:, i]: column i, a per_row vector */
        Expr *ix = col ? x->u.index.args[1].lo : x->u.index.args[0].lo;
        if (!is_reg_name(x->u.index.base) || !ix || !ix->is_const) {
            diag_error(L->d, x->span, "one row or column of a register tile takes a named tile and a constant index");
            R->failed = true;
            return x;
        }
        Symbol *t = relayout_value(R, x->u.index.base->sym, x->ty, false, (int)ix->cval, col, x->span);
        return name_expr(L, t, x->span);
    }
    Expr *c = NULL;
#define CHILD(field)                                                                                  \
    do {                                                                                              \
        Expr *n_ = relayout_expr(R, x->field);                                                        \
        if (n_ != x->field) {                                                                         \
            if (!c) {                                                                                 \
                c = ast_expr(L->a, x->kind, x->span);                                                 \
                *c = *x;                                                                              \
            }                                                                                         \
            c->field = n_;                                                                            \
        }                                                                                             \
    } while (0)
    switch (x->kind) {
    case EX_BINARY: CHILD(u.bin.l); CHILD(u.bin.r); break;
    case EX_UNARY: CHILD(u.un.e); break;
    case EX_COND: CHILD(u.cond.a); CHILD(u.cond.b); break;
    case EX_CALL: {
        Expr **args = NULL;
        for (int i = 0; i < x->u.call.nargs; i++) {
            Expr *n = relayout_expr(R, x->u.call.args[i]);
            if (n != x->u.call.args[i] && !args) {
                args = ARENA_NEW_N(L->a, Expr *, x->u.call.nargs);
                memcpy(args, x->u.call.args, sizeof(Expr *) * (size_t)x->u.call.nargs);
            }
            if (args) args[i] = n;
        }
        if (args) {
            c = ast_expr(L->a, x->kind, x->span);
            *c = *x;
            c->u.call.args = args;
        }
        break;
    }
    default: break;
    }
#undef CHILD
    return c ? c : x;
}

/* a statement that needs relayouts: their ops go to out first, then the rewritten statement is
 * returned (st itself when it needs none) */
static Stmt *relayout_stmt(Lower *L, Stmt *st, POpList *out) {
    Relayout R = {.L = L, .out = out};
    if (st->kind == ST_LET) {
        Expr *e = relayout_expr(&R, st->u.let.e);
        if (e == st->u.let.e) return st;
        Stmt *c = ast_stmt(L->a, ST_LET, st->span);
        *c = *st;
        c->u.let.e = e;
        return c;
    }
    if (st->kind != ST_ASSIGN || st->mv == MV_G2S || stmt_is_mma(st)) return st;
    Expr *rhs = relayout_expr(&R, st->u.assign.rhs);
    Expr *lhs = st->u.assign.lhs;
    /* a vector assigned to one of the other layout: the value first, then through shared memory */
    if (st->mv == MV_NONE && lhs->ty.kind == TY_VEC && rhs->ty.kind == TY_VEC && lhs->ty.layout != rhs->ty.layout &&
        !R.failed) {
        Symbol *src = is_reg_name(rhs) ? rhs->sym : NULL;
        if (!src) {
            Type vt = rhs->ty;
            vt.space = MS_REG;
            src = relayout_symbol(L, SYM_REG, arena_printf(L->a, "%s_value%d", lhs_root(lhs)->name, out->n), vt, rhs->span);
            PlanReg pr = {src, value_regs(L->pk, &vt)};
            vec_push(L->a, &L->pk->regs, pr);
            Stmt *v = ast_stmt(L->a, ST_ASSIGN, st->span);
            v->u.assign.op = AS_SET;
            v->u.assign.lhs = name_expr(L, src, rhs->span);
            v->u.assign.rhs = rhs;
            POp *vo = pop_new(L, POP_STMT);
            vo->st = v;
            vec_push(L->a, out, vo);
        }
        Type to = rhs->ty;
        to.layout = lhs->ty.layout;
        to.per_wg = lhs->ty.per_wg;
        Symbol *t = relayout_value(&R, src, to, false, -1, false, rhs->span);
        rhs = name_expr(L, t, rhs->span);
        note(L, "'%s': the %s value becomes %s through '%s'", plan_stmt_str(L, st), veclayout_name[src->ty.layout],
             veclayout_name[to.layout], arena_printf(L->a, "%s_relayout", src->name));
    }
    if (rhs == st->u.assign.rhs) return st;
    Stmt *c = ast_stmt(L->a, ST_ASSIGN, st->span);
    *c = *st;
    c->u.assign.rhs = rhs;
    return c;
}

static POp *lower_stmt(Lower *L, Stmt *st, BlockKind bk) {
    if (st->kind == ST_ASSIGN && (st->mv == MV_G2S)) return NULL; /* the producer's */
    if (st->kind == ST_ASSIGN && st->mv == MV_S2R && st->u.assign.lhs->ty.kind == TY_TILE) {
        POp *o = pop_new(L, POP_MOVE);
        o->st = st;
        o->mv = lower_move(L, st);
        return o;
    }
    if (stmt_is_mma(st)) {
        POp *o = pop_new(L, POP_MMA);
        o->st = st;
        o->mma = lower_mma(L, st);
        return o->mma ? o : NULL;
    }
    if (st->kind == ST_EXPR) return pop_new(L, POP_SYNC);
    if (st->kind == ST_ASSIGN && (st->mv == MV_R2G || st->mv == MV_S2G || st->mv == MV_ADD_S2G || st->mv == MV_ADD_R2G)) {
        POp *o = pop_new(L, POP_STORE);
        o->st = st;
        return o;
    }
    if (st->kind == ST_IF) {
        POp *o = pop_new(L, POP_IF);
        o->st = st;
        lower_stmts(L, &st->u.if_.then_s, &o->then_ops, bk);
        lower_stmts(L, &st->u.if_.else_s, &o->else_ops, bk);
        return o;
    }
    if (st->kind == ST_FOR) {
        POp *o = pop_new(L, POP_FOR);
        o->st = st;
        lower_stmts(L, &st->u.for_.body, &o->then_ops, bk);
        return o;
    }
    POp *o = pop_new(L, POP_STMT);
    o->st = st;
    return o;
}

static void lower_stmts(Lower *L, StmtList *l, POpList *out, BlockKind bk) {
    for (int i = 0; i < l->n; i++) {
        Stmt *st = l->v[i];
        if (bk != BK_LOAD) st = relayout_stmt(L, st, out);
        if (st->kind == ST_ASSIGN && st->mv == MV_R2S && st->u.assign.rhs->ty.kind == TY_TILE) {
            lower_r2s(L, st, out);
            continue;
        }
        POp *o = lower_stmt(L, st, bk);
        if (o) vec_push(L->a, out, o);
    }
}

/* shared buffers and registers an op touches */
typedef struct Effects {
    SymSet rd, wr, bufs;
    SymSet wbufs;       /* shared tiles the op writes (consumer writes of scratch tiles) */
} Effects;

static void op_effects(Lower *L, POp *o, Effects *e);

/* the shared tiles the ops nested in an if or for write */
static void wbufs_of(Lower *L, POp *o, Effects *e) {
    POpList *ls[2] = {&o->then_ops, &o->else_ops};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < ls[k]->n; i++) {
            Effects ne;
            op_effects(L, ls[k]->v[i], &ne);
            for (int j = 0; j < ne.wbufs.n; j++) symset_add(L, &e->wbufs, ne.wbufs.v[j]);
        }
}

static void op_effects(Lower *L, POp *o, Effects *e) {
    memset(e, 0, sizeof *e);
    switch (o->kind) {
    case POP_MMA: {
        PlanMma *m = o->mma;
        symset_add(L, &e->wr, m->dst);
        if (m->accumulate) symset_add(L, &e->rd, m->dst);
        if (m->a_tmp) symset_add(L, &e->rd, m->a_tmp);
        else if (m->a_reg) expr_reads(L, m->a_expr, &e->rd, NULL);
        if (!m->a_reg) symset_add(L, &e->bufs, L->pk->bufs.v[m->a.buf].sym);
        symset_add(L, &e->bufs, L->pk->bufs.v[m->b.buf].sym);
        return;
    }
    case POP_MATERIALIZE:
        expr_reads(L, o->mma->a_expr, &e->rd, NULL);
        symset_add(L, &e->wr, o->mma->a_tmp);
        return;
    case POP_MOVE:
        stmt_effects(L, o->st, &e->rd, &e->wr, &e->bufs);
        if (o->mv->to_shared) symset_add(L, &e->wbufs, L->pk->bufs.v[o->mv->buf].sym);
        return;
    case POP_BAR:
        if (o->buf >= 0) symset_add(L, &e->wbufs, L->pk->bufs.v[o->buf].sym);
        return;
    case POP_STMT:
    case POP_IF:
    case POP_FOR:
        if (o->st) stmt_effects(L, o->st, &e->rd, &e->wr, &e->bufs);
        if (o->kind != POP_STMT) wbufs_of(L, o, e);
        return;
    case POP_STORE:
        if (o->st) stmt_effects(L, o->st, &e->rd, &e->wr, &e->bufs);
        return;
    default:
        return;
    }
}

static int let_peak(Lower *L, POpList *ops);
static int stmt_colred_regs(const Stmt *st);
static int o_nested_peak(Lower *L, POp *o) {
    if (o->kind != POP_IF && o->kind != POP_FOR) return 0;
    int a = let_peak(L, &o->then_ops), b = let_peak(L, &o->else_ops);
    return a > b ? a : b;
}

/* register values declared with `let` in a block live from their statement to their last use;
 * returns the most registers such temporaries hold at once in the list, counting the per_col
 * arrays of a statement's column reductions (length / 4 registers each) while it runs */
static int let_peak(Lower *L, POpList *ops) {
    PlanKernel *pk = L->pk;
    int peak = 0;
    for (int i = 0; i < ops->n; i++) {
        int live = 0;
        for (int d = 0; d <= i; d++) {
            POp *o = ops->v[d];
            if (o->kind != POP_STMT || o->st->kind != ST_LET || !is_regval(o->st->u.let.sym)) continue;
            Symbol *y = o->st->u.let.sym;
            int last = d;
            for (int u = d + 1; u < ops->n; u++) {
                Effects e;
                op_effects(L, ops->v[u], &e);
                if (symset_has(&e.rd, y)) last = u;
            }
            if (last >= i) live += value_regs(pk, &y->ty);
        }
        if (ops->v[i]->kind == POP_STMT || ops->v[i]->kind == POP_STORE || ops->v[i]->kind == POP_MOVE)
            live += stmt_colred_regs(ops->v[i]->st);
        if (o_nested_peak(L, ops->v[i]) + live > peak) peak = o_nested_peak(L, ops->v[i]) + live;
    }
    return peak;
}

/* the consumers' register estimate: register tiles + the most live temporaries + overhead */
static void estimate_regs(Lower *L) {
    PlanKernel *pk = L->pk;
    int total = 0;
    for (int i = 0; i < pk->regs.n; i++)
        if (pk->regs.v[i].sym->kind != SYM_LET) total += pk->regs.v[i].regs;
    int lets = let_peak(L, &pk->setup_ops);
    int lc = let_peak(L, &pk->compute_ops), lf = let_peak(L, &pk->finish_ops);
    if (lc > lets) lets = lc;
    if (lf > lets) lets = lf;
    total += lets;
    pk->reg_lets = lets;
    pk->reg_overhead = 24;
    pk->reg_estimate = total + pk->reg_overhead;
}

/* the estimate against the split (estimate_regs first) */
static void check_reg_budget(Lower *L) {
    PlanKernel *pk = L->pk;
    if (pk->reg_estimate > pk->consumer_regs) {
        StrBuf b;
        sb_init(&b);
        for (int i = 0; i < pk->regs.n; i++)
            if (pk->regs.v[i].sym->kind != SYM_LET)
                sb_printf(&b, "%s%s %d", b.len ? " + " : "", pk->regs.v[i].sym->name, pk->regs.v[i].regs);
        if (pk->reg_lets) sb_printf(&b, " + temporaries %d", pk->reg_lets);
        diag_error(L->d, L->sk->consumers_span.file >= 0 ? L->sk->consumers_span : L->sk->k->name_span,
                   "register budget: each consumer thread needs about %d registers (%s + overhead %d) but "
                   "setmaxnreg gives it %d; use smaller tiles or more consumer warpgroups",
                   pk->reg_estimate, b.s ? b.s : "", pk->reg_overhead, pk->consumer_regs);
        sb_free(&b);
    }
}

/* ---- the scheduler: waits and releases -------------------------------------------------------- *
 * Products are asynchronous (wgmma commit groups); everything else is synchronous. Walking the
 * op list, the scheduler keeps the groups in flight and inserts
 *   - a wait on a load group's full barrier before the first op that reads its tiles;
 *   - wgmma.wait_group n before an op that touches registers an in-flight product writes (or
 *     writes registers it reads), n = the number of groups issued after the newest such one;
 *     products accumulating into the same registers chain without waiting;
 *   - wgmma.wait_group 1 after a product when two are in flight (one stays in flight);
 *   - a release of a load group's stage once every op of the step that reads it is done.
 * The loop body is walked twice: the second walk starts from the state the first one ends in
 * (the steady state), and what the body leaves in flight is finished after the loop. */

typedef struct Flight {
    POp *op;            /* the product */
    bool prev;          /* issued in the previous step */
} Flight;

typedef struct Sched {
    Lower *L;
    POpList *out;
    Vec(Flight) flight;
    int ngroups;            /* the arrays below have one entry per load group (sched_new) */
    bool (*waited)[2];      /* full barrier of group g waited in this step (cur/prev) */
    int *last_reader;       /* index of the last op reading group g in the step; -1 none */
    int *deferred_reader;   /* the deferred product reads group g's previous stage */
    bool (*released)[2];
    bool *pending_prev;     /* a previous-step stage still to release */
    int *first, *last;      /* group_readers' scratch */
    int pos;                /* index of the op being scheduled */
    bool in_loop;           /* scheduling the compute step (vs setup/finish) */
} Sched;

static int group_of_buf(PlanKernel *pk, int buf) { return buf >= 0 ? pk->bufs.v[buf].group : -1; }

static Sched sched_new(Lower *L) {
    int n = L->pk->groups.n;
    Sched s = {.L = L, .ngroups = n};
    s.waited = (bool (*)[2])arena_alloc(L->a, sizeof(bool[2]) * (size_t)n);
    s.released = (bool (*)[2])arena_alloc(L->a, sizeof(bool[2]) * (size_t)n);
    s.last_reader = ARENA_NEW_N(L->a, int, n);
    s.deferred_reader = ARENA_NEW_N(L->a, int, n);
    s.pending_prev = ARENA_NEW_N(L->a, bool, n);
    s.first = ARENA_NEW_N(L->a, int, n);
    s.last = ARENA_NEW_N(L->a, int, n);
    return s;
}

/* an if or for whose body issues products */
static bool op_nests_mma(const POp *o) {
    if (o->kind != POP_IF && o->kind != POP_FOR) return false;
    if (o->st->kind == ST_IF) return stmts_have_mma(&o->st->u.if_.then_s) || stmts_have_mma(&o->st->u.if_.else_s);
    return stmts_have_mma(&o->st->u.for_.body);
}

static void emit_op(Sched *s, POp *o) { vec_push(s->L->a, s->out, o); }

static void emit_wait_mma(Sched *s, int n, const char *why) {
    POp *w = pop_new(s->L, POP_WAIT_MMA);
    w->n = n;
    w->note = why;
    emit_op(s, w);
    int keep = s->flight.n - n;
    if (keep <= 0) return;
    for (int i = 0; i < keep; i++) vec_push(s->L->a, &w->done, s->flight.v[i].op);
    /* the oldest flight.n - n groups are complete */
    for (int i = keep; i < s->flight.n; i++) s->flight.v[i - keep] = s->flight.v[i];
    s->flight.n -= keep;
}

static bool flight_reads_group(Sched *s, int g, bool prev) {
    PlanKernel *pk = s->L->pk;
    for (int i = 0; i < s->flight.n; i++) {
        PlanMma *m = s->flight.v[i].op->mma;
        bool fp = s->flight.v[i].prev || m->deferred;
        if (fp != prev) continue;
        if (group_of_buf(pk, m->b.buf) == g) return true;
        if (!m->a_reg && group_of_buf(pk, m->a.buf) == g) return true;
    }
    return false;
}

static void try_releases(Sched *s) {
    PlanKernel *pk = s->L->pk;
    for (int g = 0; g < pk->groups.n; g++) {
        if (pk->groups.v[g].once) continue;
        /* the previous step's stage */
        if (s->pending_prev[g] && !flight_reads_group(s, g, true) && (s->deferred_reader[g] < 0 || s->pos > s->deferred_reader[g])) {
            POp *r = pop_new(s->L, POP_RELEASE);
            r->group = g;
            r->prev = true;
            r->skip_first = true;
            emit_op(s, r);
            s->pending_prev[g] = false;
            s->released[g][1] = true;
        }
        /* this step's stage: after its last reader is issued and complete */
        if (!s->released[g][0] && s->last_reader[g] >= 0 && s->pos > s->last_reader[g] && !flight_reads_group(s, g, false)) {
            POp *r = pop_new(s->L, POP_RELEASE);
            r->group = g;
            emit_op(s, r);
            s->released[g][0] = true;
        }
    }
}

static void wait_for_conflicts(Sched *s, Effects *e, bool is_mma, Symbol *mma_dst) {
    int newest = -1;
    for (int i = 0; i < s->flight.n; i++) {
        PlanMma *m = s->flight.v[i].op->mma;
        Effects fe;
        op_effects(s->L, s->flight.v[i].op, &fe);
        bool conflict = false;
        /* the op touches registers the product writes */
        if (symset_has(&e->rd, m->dst) || symset_has(&e->wr, m->dst)) {
            conflict = !(is_mma && mma_dst == m->dst);
        }
        /* the op writes registers the product reads (its A operand) */
        for (int j = 0; j < e->wr.n && !conflict; j++)
            if (e->wr.v[j] != m->dst && symset_has(&fe.rd, e->wr.v[j])) conflict = true;
        /* the op (or the barrier before it) writes a shared tile the product reads */
        for (int j = 0; j < e->wbufs.n && !conflict; j++)
            if (symset_has(&fe.bufs, e->wbufs.v[j])) conflict = true;
        if (conflict) newest = i;
    }
    if (newest >= 0) emit_wait_mma(s, s->flight.n - 1 - newest, "registers of a product in flight");
}

static void sched_op(Sched *s, POp *o);

/* a branch or loop body: scheduled like a block of its own that starts and ends with no product
 * in flight (the barrier waits for its tiles come before the branch) */
static void sched_nested(Sched *s, POpList *in, POpList *out) {
    Sched sub = *s;
    sub.out = out;
    memset(&sub.flight, 0, sizeof sub.flight);
    for (int i = 0; i < in->n; i++) sched_op(&sub, in->v[i]);
    if (sub.flight.n) emit_wait_mma(&sub, 0, "products inside a branch or loop finish inside it");
}

static void sched_op(Sched *s, POp *o) {
    PlanKernel *pk = s->L->pk;
    Effects e;
    op_effects(s->L, o, &e);
    /* full barriers of the load groups this op reads */
    for (int i = 0; i < e.bufs.n; i++) {
        int b = buf_of_sym(pk, e.bufs.v[i]);
        int g = group_of_buf(pk, b);
        if (g < 0) continue;
        bool prev = o->kind == POP_MMA && o->mma->deferred;
        if (pk->groups.v[g].once) {
            if (!s->waited[g][0] && !s->in_loop) {
                POp *w = pop_new(s->L, POP_WAIT_FULL);
                w->group = g;
                emit_op(s, w);
                s->waited[g][0] = true;
            }
            continue;
        }
        if (!s->waited[g][prev]) {
            POp *w = pop_new(s->L, POP_WAIT_FULL);
            w->group = g;
            w->prev = prev;
            w->skip_first = prev;
            emit_op(s, w);
            s->waited[g][prev] = true;
        }
    }
    if (o->kind == POP_MMA) {
        wait_for_conflicts(s, &e, true, o->mma->dst);
        emit_op(s, o);
        vec_push(s->L->a, &s->flight, ((Flight){o, false}));
        return;
    }
    if (o->kind == POP_IF || o->kind == POP_FOR) {
        if (op_nests_mma(o)) {
            if (s->flight.n) emit_wait_mma(s, 0, "products inside a branch or loop start with none in flight");
            /* the branch's (or loop body's) own schedule, into a copy of the op: the same op is
             * walked for the first step and for the steady state */
            POp *c = pop_new(s->L, o->kind);
            *c = *o;
            c->then_ops = (POpList){0};
            c->else_ops = (POpList){0};
            sched_nested(s, &o->then_ops, &c->then_ops);
            if (o->else_ops.n) sched_nested(s, &o->else_ops, &c->else_ops);
            emit_op(s, c);
            return;
        } else {
            wait_for_conflicts(s, &e, false, NULL);
        }
        emit_op(s, o);
        return;
    }
    wait_for_conflicts(s, &e, false, NULL);
    emit_op(s, o);
}

/* first reader and last reader of each load group within a list of top-level ops */
static void group_readers(Lower *L, POpList *ops, int *first, int *last) {
    PlanKernel *pk = L->pk;
    for (int g = 0; g < pk->groups.n; g++) first[g] = last[g] = -1;
    for (int i = 0; i < ops->n; i++) {
        Effects e;
        op_effects(L, ops->v[i], &e);
        for (int j = 0; j < e.bufs.n; j++) {
            int g = group_of_buf(pk, buf_of_sym(pk, e.bufs.v[j]));
            if (g < 0) continue;
            if (ops->v[i]->kind == POP_MMA && ops->v[i]->mma->deferred) continue;
            if (first[g] < 0) first[g] = i;
            last[g] = i;
        }
    }
}

static void sched_body(Sched *s, POpList *body) {
    PlanKernel *pk = s->L->pk;
    group_readers(s->L, body, s->first, s->last);
    for (int g = 0; g < pk->groups.n; g++) {
        s->last_reader[g] = s->last[g];
        s->deferred_reader[g] = -1;
        s->waited[g][0] = s->waited[g][1] = false;
        s->released[g][0] = s->released[g][1] = false;
    }
    for (int i = 0; i < body->n; i++)
        if (body->v[i]->kind == POP_MMA && body->v[i]->mma->deferred) {
            int g = group_of_buf(pk, body->v[i]->mma->b.buf);
            s->deferred_reader[g] = i;
            s->pending_prev[g] = true;
        }
    for (int i = 0; i < body->n; i++) {
        s->pos = i;
        try_releases(s);
        POp *o = body->v[i];
        sched_op(s, o);
        s->pos = i + 1;
        try_releases(s);
    }
    /* at most one product group stays in flight into the next step; none with a one-stage
     * ring, where the next step's data can land only after this step's stage is released */
    int carry = s->L->pk->stages > 1 ? 1 : 0;
    if (s->flight.n > carry) {
        emit_wait_mma(s, carry, carry ? "keep one product group in flight" : "a one-stage ring: release the stage now");
        try_releases(s);
    }
}

/* the state one step hands to the next: products still in flight and stages still to release */
typedef struct Carry {
    int flights;
    bool *pending;      /* one per load group */
} Carry;

static Carry sched_carry(Sched *s) {
    Carry c = {.flights = s->flight.n, .pending = ARENA_NEW_N(s->L->a, bool, s->ngroups)};
    PlanKernel *pk = s->L->pk;
    for (int g = 0; g < pk->groups.n; g++)
        c.pending[g] = !pk->groups.v[g].once && !s->released[g][0] && s->last_reader[g] >= 0;
    return c;
}

static void sched_enter(Sched *s, const Carry *c) {
    for (int i = 0; i < s->flight.n; i++) s->flight.v[i].prev = true;
    for (int g = 0; g < s->ngroups; g++) s->pending_prev[g] = c->pending[g];
}

/* The compute step. The first step is scheduled on its own (it has no previous step: its
 * deferred ops drop out, so every wgmma group count is exact); every later step starts from
 * the state the first one leaves, and must leave the same state (the steady state). */
static void schedule_compute(Lower *L, POpList *body, POpList *first, POpList *out, POpList *after) {
    PlanKernel *pk = L->pk;
    POpList fbody = {0};
    for (int i = 0; i < body->n; i++)
        if (!body->v[i]->skip_first) vec_push(L->a, &fbody, body->v[i]);
    Sched s = sched_new(L);
    s.in_loop = true;
    s.out = first;
    sched_body(&s, &fbody);
    Carry c1 = sched_carry(&s);
    sched_enter(&s, &c1);
    s.out = out;
    sched_body(&s, body);
    Carry c2 = sched_carry(&s);
    bool steady = c1.flights == c2.flights;
    for (int g = 0; g < pk->groups.n; g++) steady &= c1.pending[g] == c2.pending[g];
    if (!steady) {
        diag_error(L->d, L->sk->pipe ? L->sk->pipe->span : L->sk->k->name_span,
                   "internal error: the compute step has no steady schedule (%d products in flight after the first "
                   "step, %d after the second)",
                   c1.flights, c2.flights);
        return;
    }
    /* after the loop: finish the products in flight and release the last step's stages */
    if (s.flight.n) {
        POp *w = pop_new(L, POP_WAIT_MMA);
        w->n = 0;
        w->note = "the last step's products";
        for (int i = 0; i < s.flight.n; i++) vec_push(L->a, &w->done, s.flight.v[i].op);
        vec_push(L->a, after, w);
    }
    for (int g = 0; g < pk->groups.n; g++) {
        if (!c2.pending[g]) continue;
        POp *r = pop_new(L, POP_RELEASE);
        r->group = g;
        r->prev = true;
        r->skip_first = true;
        r->note = "the last step's stage";
        vec_push(L->a, after, r);
    }
}

/* setup or finish (once per work tile): products and their waits, and the setup tiles' barrier
 * before the first op that reads them (in finish they were waited for in setup) */
static void schedule_block(Lower *L, POpList *ops, bool setup_waited, const char *why) {
    Sched s = sched_new(L);
    POpList out = {0};
    s.out = &out;
    s.in_loop = false;
    for (int g = 0; g < L->pk->groups.n; g++) s.waited[g][0] = setup_waited;
    for (int i = 0; i < ops->n; i++) sched_op(&s, ops->v[i]);
    if (s.flight.n) emit_wait_mma(&s, 0, why);
    *ops = out;
}

/* ---- the early release of setup tiles ---------------------------------------------------------- */

static bool op_reads_group(Lower *L, POp *o, int g) {
    Effects e;
    op_effects(L, o, &e);
    for (int j = 0; j < e.bufs.n; j++)
        if (group_of_buf(L->pk, buf_of_sym(L->pk, e.bufs.v[j])) == g) return true;
    return false;
}

static bool ops_read_group(Lower *L, POpList *ops, int g) {
    for (int i = 0; i < ops->n; i++)
        if (op_reads_group(L, ops->v[i], g)) return true;
    return false;
}

/* the index of the op after which every reader of group g in a scheduled step is complete
 * (synchronous readers issued, products waited for); -1 when none reads it or a product
 * reading it is still in flight at the end of the step */
static int release_point(Lower *L, POpList *ops, int g) {
    int point = -1;
    POpList inflight = {0};
    for (int i = 0; i < ops->n; i++) {
        POp *o = ops->v[i];
        if (o->kind == POP_WAIT_MMA) {
            for (int k = 0; k < o->done.n; k++)
                for (int p = 0; p < inflight.n; p++)
                    if (inflight.v[p] == o->done.v[k]) {
                        inflight.v[p] = inflight.v[--inflight.n];
                        point = i;
                        break;
                    }
            continue;
        }
        if (!op_reads_group(L, o, g)) continue;
        if (o->kind == POP_MMA) {
            if (o->mma->deferred) return -1;
            vec_push(L->a, &inflight, o);
        }
        point = i;
    }
    return inflight.n ? -1 : point;
}

static void insert_release(Lower *L, POpList *ops, int at, int g) {
    POp *r = pop_new(L, POP_RELEASE);
    r->group = g;
    r->last_step = true;
    r->note = "the last step: nothing after it reads the setup tiles";
    vec_push(L->a, ops, NULL);
    for (int i = ops->n - 1; i > at; i--) ops->v[i] = ops->v[i - 1];
    ops->v[at] = r;
}

/* ---- lookahead: the next work tile's first product under this tile's finish -------------------- */

/* does any op of the list (nested ones included) touch register r? With mma, also whether one
 * is a product or a wait on products */
static bool ops_touch(Lower *L, POpList *ops, Symbol *r, bool *mma) {
    for (int i = 0; i < ops->n; i++) {
        POp *o = ops->v[i];
        if (mma && (o->kind == POP_MMA || o->kind == POP_WAIT_MMA || op_nests_mma(o))) *mma = true;
        Effects e;
        op_effects(L, o, &e);
        if (symset_has(&e.rd, r) || symset_has(&e.wr, r)) return true;
    }
    return false;
}

/* In a persistent grid, the first step's products (e.g. S = Q K^T of the next work tile) can be
 * issued right behind this tile's last product, before its finish, so the tensor cores work while
 * the consumers run the epilogue. That holds when the first step starts with products
 * that read only shared memory, followed by a wait for all of them, into registers that neither
 * finish, the ops after the loop nor setup touch, and finish issues no products of its own.
 * Sets pk->lookahead, or pk->no_lookahead. */
static void plan_lookahead(Lower *L) {
    PlanKernel *pk = L->pk;
    if (!L->sk->lookahead || !pk->persistent) return;
    int h = 0, nmma = 0;
    for (; h < pk->first_ops.n && pk->first_ops.v[h]->kind != POP_WAIT_MMA; h++) {
        POp *o = pk->first_ops.v[h];
        bool ok = o->kind == POP_PP_WAIT || o->kind == POP_PP_PASS ||
                  (o->kind == POP_WAIT_FULL && !o->prev && !pk->groups.v[o->group].once) ||
                  (o->kind == POP_MMA && !o->mma->deferred && !o->prev && !o->mma->a_reg);
        if (!ok) {
            pk->no_lookahead = "the first step does something other than products before its first wait";
            return;
        }
        nmma += o->kind == POP_MMA;
    }
    if (!nmma) {
        pk->no_lookahead = "the first step does not start with products";
        return;
    }
    if (h == pk->first_ops.n) {
        pk->no_lookahead = "the first step's products stay in flight into the next step, as in a GEMM main loop";
        return;
    }
    if (pk->first_ops.v[h]->n != 0) {
        pk->no_lookahead = "the first step keeps products in flight past its first wait";
        return;
    }
    /* the next tile's setup tiles must be loadable before this tile's finish: released after the
     * loop, not in finish (else the lookahead's wait for them would never return) */
    for (int g = 0; g < pk->groups.n; g++)
        if (pk->groups.v[g].once && ops_read_group(L, &pk->finish_ops, g)) {
            pk->no_lookahead = "finish reads the setup tiles, so the next tile's cannot load before it";
            return;
        }
    for (int i = 0; i < h; i++) {
        POp *o = pk->first_ops.v[i];
        if (o->kind != POP_MMA) continue;
        bool setup_mma = false, finish_mma = false;
        bool touched = ops_touch(L, &pk->setup_ops, o->mma->dst, &setup_mma) |
                       ops_touch(L, &pk->finish_ops, o->mma->dst, &finish_mma) |
                       ops_touch(L, &pk->after_ops, o->mma->dst, NULL);
        if (touched) {
            pk->no_lookahead = arena_printf(L->a, "'%s' is used after the loop, in finish or in setup", o->mma->dst->name);
            return;
        }
        if (setup_mma || finish_mma) {
            pk->no_lookahead = "setup or finish issues products";
            return;
        }
    }
    pk->lookahead = true;
    pk->ahead_head = h;
    /* right after this tile's last product: the tensor cores take the next tile's first ones
     * behind it, and its wait comes after them */
    pk->ahead_split = 0;
    for (int i = 0; i < pk->after_ops.n; i++)
        if (pk->after_ops.v[i]->kind == POP_MMA) pk->ahead_split = i + 1;
    /* every product wait after the split leaves the next tile's first products in flight too */
    for (int i = pk->ahead_split; i < pk->after_ops.n; i++) {
        POp *o = pk->after_ops.v[i];
        if (o->kind != POP_WAIT_MMA) continue;
        o->n += 1;
        o->note = arena_printf(L->a, "%s%sthe next tile's first products stay in flight", o->note ? o->note : "",
                               o->note ? "; " : "");
    }
}

/* ---- the narrow last step ------------------------------------------------------------------- */

/* What the masked columns of the score tile hold at a point of the step (tail analysis). */
typedef enum { DEAD_ANY, DEAD_NEG_INF, DEAD_ZERO, DEAD_FINITE } DeadVal;

typedef struct TailScan {
    Lower *L;
    PlanTail *t;
    int W;
    Vec(Symbol *) compute_lets;
    const char *why;    /* the first reason against, or NULL */
} TailScan;

static bool is_name_of(const Expr *x, const Symbol *y) { return x && x->kind == EX_NAME && x->sym == y; }

static bool is_neg_inf(const Expr *x) {
    if (x && x->is_const && x->ty.kind == TY_FLOAT && isinf(x->fval) && x->fval < 0) return true;
    return x && x->kind == EX_UNARY && x->u.un.op == UN_NEG && x->u.un.e->kind == EX_NAME && x->u.un.e->sym &&
           x->u.un.e->sym->kind == SYM_BUILTIN && x->u.un.e->sym->builtin == BI_INF;
}

/* a uniform scalar the consumers can evaluate before the loop: no row, col, tiles, vectors or
 * lets of the compute block */
static bool tail_uniform(TailScan *ts, const Expr *x) {
    if (!x || (x->ty.kind != TY_INT && x->ty.kind != TY_FLOAT && x->ty.kind != TY_BOOL) || x->ty.varying) return false;
    for (int i = 0; i < ts->compute_lets.n; i++)
        if (expr_mentions(x, ts->compute_lets.v[i])) return false;
    return true;
}

/* is x `j * W` (either order) */
static bool is_step_offset(TailScan *ts, const Expr *x) {
    if (!x || x->kind != EX_BINARY || x->u.bin.op != BIN_MUL) return false;
    const Expr *a = x->u.bin.l, *b = x->u.bin.r;
    if (is_name_of(b, ts->L->sk->loopvar)) { const Expr *t = a; a = b; b = t; }
    return is_name_of(a, ts->L->sk->loopvar) && b->is_const && b->cval == ts->W;
}

static bool is_col(const Expr *x) {
    return x && x->kind == EX_NAME && x->sym && x->sym->kind == SYM_BUILTIN && x->sym->builtin == BI_COL;
}

/* finds a conjunct `j * W + col < bound` (or `col + j * W < bound`) of c */
static bool find_col_bound(TailScan *ts, Expr *c) {
    if (c->kind == EX_BINARY && c->u.bin.op == BIN_AND) return find_col_bound(ts, c->u.bin.l) || find_col_bound(ts, c->u.bin.r);
    if (c->kind != EX_BINARY || c->u.bin.op != BIN_LT) return false;
    Expr *a = c->u.bin.l, *x = c->u.bin.r;
    if (a->kind != EX_BINARY || a->u.bin.op != BIN_ADD || !tail_uniform(ts, x)) return false;
    Expr *p = a->u.bin.l, *q = a->u.bin.r;
    if (is_col(p)) { Expr *t = p; p = q; q = t; }
    if (!is_col(q) || !is_step_offset(ts, p)) return false;
    ts->t->bound = x;
    ts->t->jw = p;
    return true;
}

/* the value of x at a masked column, given what s holds there; scalars that multiply -inf are
 * recorded (they must be positive) */
static DeadVal dead_value(TailScan *ts, const Expr *x, DeadVal s_val) {
    const Symbol *s = ts->t->s;
    if (!expr_mentions(x, s)) return DEAD_FINITE;
    if (is_name_of(x, s)) return s_val;
    if (x->kind == EX_BINARY) {
        DeadVal a = dead_value(ts, x->u.bin.l, s_val), b = dead_value(ts, x->u.bin.r, s_val);
        const Expr *other = x->u.bin.r;
        if (b != DEAD_FINITE) {
            DeadVal t = a; a = b; b = t;
            other = x->u.bin.l;
        }
        if (b != DEAD_FINITE) return DEAD_ANY;
        switch (x->u.bin.op) {
        case BIN_MUL:
            if (a == DEAD_ZERO) return DEAD_ZERO;
            if (a == DEAD_NEG_INF && tail_uniform(ts, other)) {
                vec_push(ts->L->a, &ts->t->scales, (Expr *)other);
                return DEAD_NEG_INF;
            }
            if (a == DEAD_NEG_INF && !ts->why)
                ts->why = "-inf scores are multiplied by a value the step cannot check for a positive sign before the loop "
                          "(a scalar of the kernel, not of the compute block)";
            return DEAD_ANY;
        case BIN_ADD: return a == DEAD_NEG_INF ? DEAD_NEG_INF : DEAD_ANY;
        case BIN_SUB: return a == DEAD_NEG_INF && other == x->u.bin.r ? DEAD_NEG_INF : DEAD_ANY;
        default: return DEAD_ANY;
        }
    }
    if (x->kind == EX_CALL && (x->fn == FN_EXP2 || x->fn == FN_EXP))
        return dead_value(ts, x->u.call.args[0], s_val) == DEAD_NEG_INF ? DEAD_ZERO : DEAD_ANY;
    return DEAD_ANY;
}

/* every mention of s in x is rowmax(s) (the masked columns must hold -inf) or rowsum(s) (0) */
static bool reductions_only(TailScan *ts, const Expr *x, DeadVal s_val) {
    const Symbol *s = ts->t->s;
    if (!x || !expr_mentions(x, s)) return true;
    switch (x->kind) {
    case EX_CALL:
        if ((x->fn == FN_ROWMAX && s_val == DEAD_NEG_INF) || (x->fn == FN_ROWSUM && s_val == DEAD_ZERO))
            return is_name_of(x->u.call.args[0], s);
        for (int i = 0; i < x->u.call.nargs; i++)
            if (!reductions_only(ts, x->u.call.args[i], s_val)) return false;
        return x->ty.kind != TY_TILE;
    case EX_BINARY:
        return x->ty.kind != TY_TILE && reductions_only(ts, x->u.bin.l, s_val) && reductions_only(ts, x->u.bin.r, s_val);
    case EX_UNARY: return x->ty.kind != TY_TILE && reductions_only(ts, x->u.un.e, s_val);
    case EX_COND:
        return x->ty.kind != TY_TILE && reductions_only(ts, x->u.cond.a, s_val) && reductions_only(ts, x->u.cond.b, s_val);
    default: return false;
    }
}

/* a register tile other than s, or a shared tile, in x (a statement that would need it narrowed too) */
static bool mentions_other_tile(TailScan *ts, Expr *x) {
    SymSet regs = {0}, bufs = {0};
    expr_reads(ts->L, x, &regs, &bufs);
    for (int i = 0; i < regs.n; i++)
        if (regs.v[i] != ts->t->s && regs.v[i]->ty.kind == TY_TILE) return true;
    for (int i = 0; i < bufs.n; i++)
        if (bufs.v[i]->ty.kind == TY_TILE) return true;
    return false;
}

/* does st (recursively) read or write the register value y */
static bool stmt_mentions(Lower *L, Stmt *st, const Symbol *y) {
    SymSet rd = {0}, wr = {0};
    stmt_effects(L, st, &rd, &wr, NULL);
    return symset_has(&rd, y) || symset_has(&wr, y);
}

static bool stmts_mention(Lower *L, const StmtList *l, const Symbol *y) {
    for (int i = 0; i < l->n; i++)
        if (stmt_mentions(L, l->v[i], y)) return true;
    return false;
}

/* one statement between the step's first product and the deferred one; returns the new value
 * of the masked columns, or DEAD_ANY with ts->why set */
static DeadVal tail_stmt(TailScan *ts, Stmt *st, DeadVal v, bool in_if) {
    const Symbol *s = ts->t->s;
    if (st->kind == ST_LET && st->u.let.sym) vec_push(ts->L->a, &ts->compute_lets, st->u.let.sym);
    if (!stmt_mentions(ts->L, st, s)) return v;
    if (st->kind == ST_FOR) {
        ts->why = "the score tile is used inside a for loop";
        return DEAD_ANY;
    }
    if (st->kind == ST_IF) {
        if (in_if || st->u.if_.else_s.n || !tail_uniform(ts, st->u.if_.cond) || ts->t->guard) {
            ts->why = "the score tile is used under a nested or two-way if, or one that depends on the step's values";
            return DEAD_ANY;
        }
        DeadVal w = v;
        for (int i = 0; i < st->u.if_.then_s.n && !ts->why; i++) w = tail_stmt(ts, st->u.if_.then_s.v[i], w, true);
        ts->t->guard = st->u.if_.cond;
        return w;
    }
    if (st->kind == ST_LET || (st->kind == ST_ASSIGN && !is_name_of(st->u.assign.lhs, s))) {
        Expr *x = st->kind == ST_LET ? st->u.let.e : st->u.assign.rhs;
        if (st->kind == ST_ASSIGN && expr_mentions(st->u.assign.lhs, s)) {
            ts->why = "part of the score tile is assigned";
            return DEAD_ANY;
        }
        if (!reductions_only(ts, x, v)) {
            ts->why = "the score tile is read other than by rowmax after the mask or rowsum after exp2";
            return DEAD_ANY;
        }
        return v;
    }
    if (st->kind != ST_ASSIGN || st->u.assign.op != AS_SET || mentions_other_tile(ts, st->u.assign.rhs)) {
        ts->why = "the score tile is updated in place or together with another tile";
        return DEAD_ANY;
    }
    Expr *r = st->u.assign.rhs;
    if (r->kind == EX_CALL && r->fn == FN_WHERE && is_name_of(r->u.call.args[1], s) && is_neg_inf(r->u.call.args[2])) {
        if (!ts->t->bound && find_col_bound(ts, r->u.call.args[0])) return DEAD_NEG_INF;
        ts->why = "the mask has no conjunct 'j * W + col < bound' (W the score tile's columns)";
        return DEAD_ANY;
    }
    DeadVal w = dead_value(ts, r, v);
    if (w == DEAD_ANY && !ts->why) ts->why = "an update of the score tile does not keep masked columns at -inf or 0";
    return w;
}

/* Plans the narrow last step (PlanTail); sets pk->tail, or pk->no_tail when the step has a
 * masked score tile feeding a deferred product but something else stands in the way. */
static void plan_tail(Lower *L) {
    PlanKernel *pk = L->pk;
    const SemaKernel *sk = L->sk;
    if (!sk->narrow_tail || !pk->overlap || !sk->blocks[BK_COMPUTE]) return;
    StmtList *body = &sk->blocks[BK_COMPUTE]->u.block.body;
    int first = -1, last = -1;
    for (int i = 0; i < body->n; i++)
        if (stmt_is_mma(body->v[i])) {
            if (first < 0) first = i;
            last = i;
        }
    if (first < 0 || last == first) return;
    PlanMma *fm = NULL, *dm = NULL;
    for (int i = 0; i < pk->compute_ops.n; i++) {
        POp *o = pk->compute_ops.v[i];
        if (o->kind != POP_MMA) continue;
        if (o->st == body->v[first]) fm = o->mma;
        if (o->st == body->v[last]) dm = o->mma;
    }
    if (!fm || !dm || !dm->deferred || !dm->a_tmp || fm->accumulate || fm->a_reg) return;
    const Expr *ax = dm->a_expr;
    if (ax->kind == EX_CALL && (ax->fn == FN_BF16 || ax->fn == FN_FP16)) ax = ax->u.call.args[0];
    if (!is_name_of(ax, fm->dst)) return;
    /* from here on the kernel has the shape: s = a @ b, ..., o += f(s) @ c deferred */
    PlanTail *t = ARENA_NEW(L->a, PlanTail);
    TailScan ts = {.L = L, .t = t, .W = fm->n};
    t->s = fm->dst;
    t->op = dm->a_tmp;
    t->first = fm;
    t->deferred = dm;
    t->cols = 64;
    /* a copy of half the score tile or more saves too little for the registers it takes (with
     * 128-column tiles ptxas spilled and serialized the products at D = 64) */
    if (fm->n <= 2 * t->cols) return;
    if (fm->n % 16 || dm->k != fm->n || fm->b.col0 || fm->b.row0 || dm->b.row0 || dm->b.col0 || fm->b.mn_major ||
        !dm->b.mn_major || fm->dst->ty.dt != DT_FP32)
        ts.why = "the products do not run over whole score-tile columns from column 0";
    DeadVal v = DEAD_ANY;
    for (int i = first + 1; i < last && !ts.why; i++) v = tail_stmt(&ts, body->v[i], v, false);
    if (!ts.why && !t->bound) ts.why = "no mask sets the score tile's columns past a bound to -inf";
    if (!ts.why && v != DEAD_ZERO)
        ts.why = "the deferred product's operand is not exactly 0 in masked columns (exp2 of -inf scores)";
    for (int i = last + 1; i < body->n && !ts.why; i++)
        if (stmt_mentions(L, body->v[i], t->s)) ts.why = "the score tile is used after the deferred product";
    for (int b = 0; b < BK_COUNT && !ts.why; b++)
        if (b != BK_COMPUTE && sk->blocks[b] && stmts_mention(L, &sk->blocks[b]->u.block.body, t->s))
            ts.why = "the score tile is used outside the compute block";
    if (ts.why) {
        pk->no_tail = ts.why;
        note(L, "no narrow last step (a last step with few unmasked columns of '%s' on narrow copies): %s", t->s->name,
             ts.why);
        return;
    }
    /* the narrow copies */
    t->s_narrow = ARENA_NEW(L->a, Symbol);
    *t->s_narrow = *t->s;
    t->s_narrow->name = arena_printf(L->a, "%s_tail", t->s->name);
    t->s_narrow->ty.cols = t->cols;
    t->op_narrow = ARENA_NEW(L->a, Symbol);
    *t->op_narrow = *t->op;
    t->op_narrow->name = arena_printf(L->a, "%s_tail", t->op->name);
    t->op_narrow->ty.cols = t->cols;
    t->first_narrow = *fm;
    t->first_narrow.dst = t->s_narrow;
    t->first_narrow.n = t->cols;
    t->deferred_narrow = *dm;
    t->deferred_narrow.a_tmp = t->op_narrow;
    t->deferred_narrow.k = t->cols;
    pk->tail = t;
    StrBuf sc;
    sb_init(&sc);
    for (int i = 0; i < t->scales.n; i++) sb_printf(&sc, "%s%s > 0", i ? ", " : "", ast_expr_str(L->a, t->scales.v[i]));
    note(L, "narrow last step: when the last step leaves at most %d of the %d columns of '%s' unmasked (%s - %s <= %d%s%s), "
            "it runs on %d-column copies ('%s', '%s'): its products, row reductions and elementwise ops skip the masked "
            "columns, whose probabilities are exactly 0",
         t->cols, fm->n, t->s->name, ast_expr_str(L->a, t->bound), ast_expr_str(L->a, t->jw), t->cols,
         t->scales.n ? " and " : "", t->scales.n ? sc.s : "", t->cols, t->s_narrow->name, t->op_narrow->name);
    sb_free(&sc);
}

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

static void collect_g2s(StmtList *l, Stmt ***v, int *n, int *cap, Arena *a) {
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
        if (!expr_depends_on(pl->st->u.assign.rhs, ax)) {
            pl->multicast = true;
            g->multicast = true;
            note(L, "cluster of %d: '%s' does not depend on block.%s, so each block of a cluster issues %s of its "
                    "boxes and TMA multicasts them into every block",
                 pk->cluster, ast_expr_str(L->a, pl->st->u.assign.rhs), L->sk->axes.v[pk->cluster_axis]->name,
                 pk->cluster == 2 ? "half" : "a share");
        }
    }
}

static void lower_groups(Lower *L, POpList *compute_ops) {
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
    for (int i = 0; i < nl; i++) {
        if (done[i]) continue;
        PlanGroup g = {.first_use = key[i] < (1 << 20) ? key[i] : -1};
        StrBuf nm;
        sb_init(&nm);
        for (int j = i; j < nl; j++) {
            if (done[j] || key[j] != key[i]) continue;
            done[j] = true;
            Symbol *y = lhs_root(loads[j]->u.assign.lhs);
            int b = buf_of_sym(pk, y);
            if (b < 0) continue;
            bool seen = false;
            for (int k = 0; k < g.bufs.n; k++) seen |= g.bufs.v[k] == b;
            if (seen) {
                diag_error(L->d, loads[j]->span, "'%s' is loaded twice in one step", y->name);
                continue;
            }
            vec_push(L->a, &g.bufs, b);
            pk->bufs.v[b].group = pk->groups.n;
            g.bytes += plan_buf_tx_bytes(&pk->bufs.v[b]);
            sb_printf(&nm, "%s%s", nm.len ? "_" : "", y->name);
            PlanLoad pl = {.st = loads[j], .buf = b, .cond = load_cond(L, loads[j])};
            const PlanBuf *pb = &pk->bufs.v[b];
            Symbol *t = lhs_root(loads[j]->u.assign.rhs->u.index.base);
            pl.map = add_map(L, t, pb->atom_cols, pb->rows, pb->is_vec, pb->swz, false);
            if (pb->is_vec) check_vec_rows(L, loads[j], t);
            vec_push(L->a, &g.loads, pl);
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
        note(L, "%d load groups with separate barriers: each group's tiles are first read by a different op, so "
                "consumers start on the first group while the next one is still landing",
             pk->groups.n);
    /* setup loads: one group, filled once per work tile */
    Stmt **sl = NULL;
    int ns = 0, scap = 0;
    if (sk->blocks[BK_SETUP]) collect_g2s(&sk->blocks[BK_SETUP]->u.block.body, &sl, &ns, &scap, L->a);
    if (ns) {
        PlanGroup g = {.once = true, .first_use = -1};
        StrBuf nm;
        sb_init(&nm);
        for (int j = 0; j < ns; j++) {
            Symbol *y = lhs_root(sl[j]->u.assign.lhs);
            int b = buf_of_sym(pk, y);
            if (b < 0) continue;
            bool seen = false;
            for (int k = 0; k < g.bufs.n; k++) seen |= g.bufs.v[k] == b;
            if (seen) {
                diag_error(L->d, sl[j]->span, "'%s' is loaded twice in setup", y->name);
                continue;
            }
            vec_push(L->a, &g.bufs, b);
            pk->bufs.v[b].group = pk->groups.n;
            g.bytes += plan_buf_tx_bytes(&pk->bufs.v[b]);
            sb_printf(&nm, "%s%s", nm.len ? "_" : "", y->name);
            const PlanBuf *pb = &pk->bufs.v[b];
            Symbol *t = lhs_root(sl[j]->u.assign.rhs->u.index.base);
            PlanLoad pl = {.st = sl[j], .buf = b, .map = add_map(L, t, pb->atom_cols, pb->rows, pb->is_vec, pb->swz, false),
                           .cond = load_cond(L, sl[j])};
            if (pb->is_vec) check_vec_rows(L, sl[j], t);
            vec_push(L->a, &g.loads, pl);
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

static void collect_stores(Lower *L, StmtList *l, BlockKind bk) {
    PlanKernel *pk = L->pk;
    for (int i = 0; i < l->n; i++) {
        Stmt *st = l->v[i];
        if (st->kind == ST_IF) {
            collect_stores(L, &st->u.if_.then_s, bk);
            collect_stores(L, &st->u.if_.else_s, bk);
            continue;
        }
        if (st->kind == ST_FOR) {
            collect_stores(L, &st->u.for_.body, bk);
            continue;
        }
        if (st->kind != ST_ASSIGN) continue;
        PlanStore ps = {.st = st, .map = -1, .buf = -1, .block = bk};
        if (st->mv == MV_R2G && st->u.assign.rhs->ty.kind == TY_TILE) {
            Type t = st->u.assign.rhs->ty;
            if (!check_reg_shape(L, &t, st->u.assign.rhs->span, "the stored value")) continue;
            int eb = dtype_bytes[t.dt];
            if (eb == 4) {
                /* fp32: the staging chunks and their TMA maps are 16-bit */
                ps.path = SP_DIRECT;
                ps.direct = true;
                vec_push(L->a, &pk->stores, ps);
                note(L, "'%s': an fp32 tile is stored from registers directly, two neighbouring columns per 8-byte store "
                        "where the tensor's strides allow",
                     plan_stmt_str(L, st));
                continue;
            }
            if (!L->sk->staging) {
                ps.path = SP_DIRECT;
                ps.direct = true;
                vec_push(L->a, &pk->stores, ps);
                continue;
            }
            int cc = t.cols % 64 == 0 ? 64 : t.cols % 32 == 0 ? 32 : 16;
            ps.path = SP_STAGED;
            ps.chunk_rows = 64;
            ps.chunk_cols = cc;
            Symbol *tensor = lhs_root(st->u.assign.lhs->u.index.base);
            ps.map = add_map(L, tensor, cc, 64, false, swizzle_choose(cc * eb), true);
            vec_push(L->a, &pk->stores, ps);
        } else if (st->mv == MV_R2G && st->u.assign.rhs->ty.kind == TY_VEC) {
            ps.path = SP_VECTOR;
            vec_push(L->a, &pk->stores, ps);
        } else if (st->mv == MV_S2G || st->mv == MV_ADD_S2G) {
            Symbol *y = lhs_root(st->u.assign.rhs), *tensor = lhs_root(st->u.assign.lhs->u.index.base);
            int b = buf_of_sym(pk, y);
            if (b < 0) continue;
            const PlanBuf *pb = &pk->bufs.v[b];
            if (st->mv == MV_ADD_S2G && pb->dt != DT_FP32 && pb->dt != DT_BF16 && pb->dt != DT_FP16) {
                diag_error(L->d, st->span, "TMA reduce-adds take fp32, bf16 or fp16 tiles");
                continue;
            }
            if (pb->rows > TMA_BOX_MAX) {
                diag_error(L->d, st->span, "'%s' has %d rows; a TMA store moves at most %d rows per box", y->name, pb->rows,
                           TMA_BOX_MAX);
                continue;
            }
            ps.path = st->mv == MV_S2G ? SP_TMA : SP_TMA_ADD;
            ps.buf = b;
            ps.map = add_map(L, tensor, pb->atom_cols, pb->rows, pb->is_vec, pb->swz, true);
            pk->tma_stores = true;
            vec_push(L->a, &pk->stores, ps);
        } else if (st->mv == MV_ADD_R2G) {
            /* atomic adds from registers: red.global.add.f32 (v2 where two columns are adjacent), or the
             * bf16 / fp16 forms (x2 where two columns are adjacent) */
            Type t = st->u.assign.rhs->ty;
            if (t.kind == TY_VEC && t.layout != VL_ROW) {
                diag_error(L->d, st->span, "atomic adds of per_col vectors are not supported by the sm_90a back end yet");
                continue;
            }
            if (!check_reg_shape(L, &t, st->u.assign.rhs->span, "the added value")) continue;
            ps.path = SP_RED;
            ps.direct = true;
            ps.wg0_only = t.per_wg && pk->consumers > 1;
            vec_push(L->a, &pk->stores, ps);
        }
    }
}

/* each store op names its plan store */
static void link_stores(Lower *L, POpList *ops) {
    PlanKernel *pk = L->pk;
    for (int i = 0; i < ops->n; i++) {
        POp *o = ops->v[i];
        if (o->kind == POP_IF || o->kind == POP_FOR) {
            link_stores(L, &o->then_ops);
            link_stores(L, &o->else_ops);
        }
        if (o->kind != POP_STORE) continue;
        /* a statement a relayout rewrote is a copy of the one collect_stores saw (same span): the
         * store takes the copy, which reads the relayout's temporaries */
        for (int k = 0; k < pk->stores.n; k++)
            if (pk->stores.v[k].st == o->st ||
                (pk->stores.v[k].st->span.file == o->st->span.file && pk->stores.v[k].st->span.begin == o->st->span.begin &&
                 pk->stores.v[k].st->span.end == o->st->span.end)) {
                o->store = k;
                pk->stores.v[k].st = o->st;
            }
    }
}

static void lower_staging(Lower *L) {
    PlanKernel *pk = L->pk;
    pk->staging_buf = -1;
    bool staged = false;
    for (int i = 0; i < pk->stores.n; i++) staged |= pk->stores.v[i].path == SP_STAGED;
    if (!staged) return; /* staging = 0, or no register tile is stored through shared memory */
    int cc = 16;
    for (int i = 0; i < pk->stores.n; i++)
        if (pk->stores.v[i].path == SP_STAGED && pk->stores.v[i].chunk_cols > cc) cc = pk->stores.v[i].chunk_cols;
    PlanBuf b = {.name = "staging", .kind = BUF_STAGING, .dt = DT_BF16, .rows = 64, .cols = cc, .group = -1};
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

static void note_staging(Lower *L) {
    PlanKernel *pk = L->pk;
    bool tiles = false, reds = false;
    for (int i = 0; i < pk->stores.n; i++) {
        tiles |= pk->stores.v[i].path == SP_DIRECT && dtype_bytes[pk->stores.v[i].st->u.assign.rhs->ty.dt] == 2;
        reds |= pk->stores.v[i].path == SP_RED;
    }
    if (reds)
        note(L, "atomic adds from registers: each consumer thread adds the elements it holds with red.global.add "
                "(.f32, .bf16 or .f16; the v2 / x2 forms, two adjacent columns at once, where the tensor's strides and "
                "alignment allow), skipping rows and columns past the tensor's end; a per_wg value is added by the "
                "first warpgroup only");
    if (tiles && !L->sk->staging)
        note(L, "staging = 0: stores from registers write global memory directly, two 16-bit elements per store "
                "where the tensor's strides allow; no staging buffer, no barrier, nothing to wait for");
    if (pk->staging_buf < 0) return;
    const PlanBuf *b = &pk->bufs.v[pk->staging_buf];
    if (pk->staging_per_wg == 2)
        note(L, "stores from registers go through 64 x %d chunks in shared memory (swizzle %s, conflict-free "
                "stmatrix), two per consumer warpgroup, each sent by a TMA store while the next one fills%s",
             b->cols, swizzle_name(b->swz),
             pk->staging_halved ? "; 32 columns wide, because two 64-wide chunks per warpgroup would not fit" : "");
    else
        note(L, "stores from registers go through one 64 x %d chunk per consumer warpgroup in shared memory "
                "(swizzle %s); two would not fit beside the rest, so each chunk waits for the previous store",
             b->cols, swizzle_name(b->swz));
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

static void layout_smem(Lower *L) {
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
    if (pk->smem_total > SMEM_LIMIT && pk->staging_buf >= 0 && pk->staging_per_wg == 2) {
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
    }
}

/* ---- column reductions ------------------------------------------------------------------------ */

typedef struct ColReds {
    Lower *L;           /* NULL: only count */
    int regs;           /* the per_col arrays' registers (length / 4 each) */
    int cols;           /* the widest reduced tile */
    bool split, per_wg; /* of a row-split tile, of a per_wg tile */
    int n;
    int wg_depth;       /* inside an if or for whose condition or bounds read wg */
    bool compute;       /* walking the compute block */
} ColReds;

static bool mentions_wg(const Expr *e) {
    if (!e) return false;
    switch (e->kind) {
    case EX_NAME: return e->sym && e->sym->kind == SYM_BUILTIN && e->sym->builtin == BI_WG;
    case EX_CALL:
        for (int i = 0; i < e->u.call.nargs; i++)
            if (mentions_wg(e->u.call.args[i])) return true;
        return false;
    case EX_BINARY: return mentions_wg(e->u.bin.l) || mentions_wg(e->u.bin.r);
    case EX_UNARY: return mentions_wg(e->u.un.e);
    case EX_COND: return mentions_wg(e->u.cond.c) || mentions_wg(e->u.cond.a) || mentions_wg(e->u.cond.b);
    default: return false;
    }
}

static void find_colreds_expr(const Expr *e, ColReds *cr) {
    if (!e) return;
    switch (e->kind) {
    case EX_CALL:
        if (e->fn == FN_COLSUM || e->fn == FN_COLMAX || e->fn == FN_COLMIN) {
            const Type *t = &e->u.call.args[0]->ty;
            if (t->cols > cr->cols) cr->cols = t->cols;
            if (t->per_wg) cr->per_wg = true;
            else cr->split = true;
            cr->n++;
            cr->regs += t->cols / 4;
            if (!cr->L) {
            } else if (!t->per_wg && cr->L->pk->consumers > 1 && cr->wg_depth)
                diag_error(cr->L->d, e->span,
                           "%s() of a row-split tile under a condition on wg: it combines the rows of every consumer "
                           "warpgroup, so every one must reach it, or they deadlock",
                           e->u.call.fn);
            else if (!t->per_wg && cr->L->pk->consumers > 1 && cr->compute && cr->L->pk->pingpong)
                diag_error(cr->L->d, e->span,
                           "column reductions of row-split tiles in a pingpong compute block are not supported by the "
                           "sm_90a back end yet");
        }
        for (int i = 0; i < e->u.call.nargs; i++) find_colreds_expr(e->u.call.args[i], cr);
        return;
    case EX_BINARY: find_colreds_expr(e->u.bin.l, cr); find_colreds_expr(e->u.bin.r, cr); return;
    case EX_UNARY: find_colreds_expr(e->u.un.e, cr); return;
    case EX_COND: find_colreds_expr(e->u.cond.a, cr); find_colreds_expr(e->u.cond.b, cr); return;
    case EX_INDEX: find_colreds_expr(e->u.index.base, cr); return;
    default: return;
    }
}

static void find_colreds(const StmtList *l, ColReds *cr) {
    for (int i = 0; i < l->n; i++) {
        const Stmt *st = l->v[i];
        switch (st->kind) {
        case ST_ASSIGN: find_colreds_expr(st->u.assign.rhs, cr); break;
        case ST_LET: find_colreds_expr(st->u.let.e, cr); break;
        case ST_IF: {
            int w = mentions_wg(st->u.if_.cond);
            cr->wg_depth += w;
            find_colreds(&st->u.if_.then_s, cr);
            find_colreds(&st->u.if_.else_s, cr);
            cr->wg_depth -= w;
            break;
        }
        case ST_FOR: {
            int w = mentions_wg(st->u.for_.lo) || mentions_wg(st->u.for_.hi);
            cr->wg_depth += w;
            find_colreds(&st->u.for_.body, cr);
            cr->wg_depth -= w;
            break;
        }
        case ST_EXPR: break;
        }
    }
}

/* registers the column reductions of one statement (an assignment or a let) hold while it runs */
static int stmt_colred_regs(const Stmt *st) {
    ColReds cr = {0};
    if (st->kind == ST_ASSIGN) find_colreds_expr(st->u.assign.rhs, &cr);
    else if (st->kind == ST_LET) find_colreds_expr(st->u.let.e, &cr);
    return cr.regs;
}

/* stores of row-split per_col vectors: one thread per column writes it, in warpgroup 0, unless a
 * condition on wg decides which warpgroups reach the store */
static void plan_col_stores(Lower *L, const StmtList *l, int wg_depth) {
    for (int i = 0; i < l->n; i++) {
        const Stmt *st = l->v[i];
        if (st->kind == ST_IF) {
            int w = mentions_wg(st->u.if_.cond);
            plan_col_stores(L, &st->u.if_.then_s, wg_depth + w);
            plan_col_stores(L, &st->u.if_.else_s, wg_depth + w);
        } else if (st->kind == ST_FOR) {
            plan_col_stores(L, &st->u.for_.body, wg_depth + (mentions_wg(st->u.for_.lo) || mentions_wg(st->u.for_.hi)));
        } else if (st->kind == ST_ASSIGN && st->mv == MV_R2G && st->u.assign.rhs->ty.kind == TY_VEC &&
                   st->u.assign.rhs->ty.layout == VL_COL && !st->u.assign.rhs->ty.per_wg) {
            if (!wg_depth) vec_push(L->a, &L->pk->col_stores_wg0, st);
            note(L, "'%s <- ...' (a per_col vector): %s", ast_expr_str(L->a, st->u.assign.lhs),
                 wg_depth ? "under a condition on wg, so lanes 0..3 of the first warp of each warpgroup that gets "
                            "there write it (every warpgroup holds the same columns)"
                          : "lanes 0..3 of the first warp of consumer warpgroup 0 write it, one thread per column");
        }
    }
}

/* a named barrier of count consecutive ids (one per consumer warpgroup, or 1); plan_named_bars
 * gives every barrier its id once lowering has asked for all of them */
static int add_named_barrier(Lower *L, const char *name, int count, int threads, const char *why) {
    PlanKernel *pk = L->pk;
    PlanNamedBar nb = {.name = name, .ids = count, .threads = threads, .why = why};
    vec_push(L->a, &pk->nbars, nb);
    return pk->nbars.n - 1;
}

/* Column reductions reduce a thread's rows, then the 8 lanes of a warp that hold the same columns
 * (shuffles), then the 4 warps of a warpgroup and, for a row-split tile, the consumer warpgroups:
 * lanes 0..3 of each warp write their partial results into a scratch row of the widest reduced
 * tile's columns, and after a named barrier every thread reads its columns' partial results in
 * the same order, so every thread holding a column gets the same value. */
static void plan_colred(Lower *L) {
    SemaKernel *sk = L->sk;
    PlanKernel *pk = L->pk;
    pk->colred_buf = pk->colred_bar = pk->colred_wg_bar = -1;
    ColReds cr = {.L = L};
    for (int b = 0; b < BK_COUNT; b++)
        if (sk->blocks[b] && b != BK_LOAD) {
            cr.compute = b == BK_COMPUTE;
            find_colreds(&sk->blocks[b]->u.block.body, &cr);
        }
    if (!cr.n) return;
    PlanBuf b = {.name = "colred", .kind = BUF_SCRATCH, .dt = DT_FP32, .rows = 4 * pk->consumers, .cols = cr.cols,
                 .swz = SWZ_NONE, .atom_cols = cr.cols, .natoms = 1, .copies = 1, .align = 16, .group = -1};
    b.bytes = b.rows * b.cols * 4;
    vec_push(L->a, &pk->bufs, b);
    pk->colred_buf = pk->bufs.n - 1;
    if (cr.split)
        pk->colred_bar = add_named_barrier(L, "colred", 1, 128 * pk->consumers,
                                           "column reductions of row-split tiles: every consumer warpgroup's warps");
    if (cr.per_wg)
        pk->colred_wg_bar = add_named_barrier(L, "colred_wg", pk->consumers, 128,
                                              "column reductions of per_wg tiles: the 4 warps of one warpgroup");
    note(L, "column reduction%s: each thread reduces its rows, 3 shuffles reduce the 8 lanes of a warp that hold "
            "a column, and the partial results of the %s meet in 'colred' (one row of %d fp32 per warp) between two "
            "named barriers",
         cr.n > 1 ? "s" : "", cr.split && pk->consumers > 1 ? "warps of every consumer warpgroup" : "4 warps of a warpgroup",
         cr.cols);
}

/* ---- zero folding and overlap --------------------------------------------------------------- */

/* `acc = 0;` in setup followed by `acc += a @ b` as acc's first use in compute: the first
 * product of each work tile overwrites instead (wgmma scale-d = 0), so no zero fill is needed */
static void fold_zero_fills(Lower *L) {
    PlanKernel *pk = L->pk;
    POpList *setup = &pk->setup_ops;
    for (int i = 0; i < setup->n; i++) {
        POp *o = setup->v[i];
        if (o->kind != POP_STMT || o->st->kind != ST_ASSIGN || o->st->u.assign.op != AS_SET) continue;
        Expr *l = o->st->u.assign.lhs, *r = o->st->u.assign.rhs;
        if (l->kind != EX_NAME || !l->sym || l->sym->kind != SYM_REG || l->sym->ty.kind != TY_TILE) continue;
        if (!r->is_const || (r->ty.kind == TY_FLOAT ? r->fval != 0.0 : r->cval != 0)) continue;
        Symbol *acc = l->sym;
        /* acc's first use in the compute step must be a top-level accumulating product */
        POp *first = NULL;
        for (int j = 0; j < pk->compute_ops.n && !first; j++) {
            Effects e;
            op_effects(L, pk->compute_ops.v[j], &e);
            if (symset_has(&e.rd, acc) || symset_has(&e.wr, acc)) first = pk->compute_ops.v[j];
        }
        if (!first || first->kind != POP_MMA || first->mma->dst != acc || !first->mma->accumulate) continue;
        /* and nothing later in setup may read it */
        bool later = false;
        for (int j = i + 1; j < setup->n; j++) {
            Effects e;
            op_effects(L, setup->v[j], &e);
            later |= symset_has(&e.rd, acc);
        }
        if (later) continue;
        first->mma->zero_first = true;
        for (int j = i + 1; j < setup->n; j++) setup->v[j - 1] = setup->v[j];
        setup->n--;
        i--;
        note(L, "'%s = 0' in setup is folded into the first product of each work tile (wgmma scale-d = 0 on the "
                "first step); a work tile with no steps still gets zeros",
             acc->name);
    }
}

/* overlap = 1: the last product of the step (O += P @ V) is issued one step late, right after
 * the next step's first product, so the softmax between them runs while both products use
 * the tensor cores (FlashAttention-3's intra-warpgroup pipelining) */
static void apply_overlap(Lower *L) {
    PlanKernel *pk = L->pk;
    POpList *ops = &pk->compute_ops;
    Span sp = L->sk->pipe ? L->sk->pipe->span : L->sk->k->name_span;
    int first = -1;
    for (int i = 0; i < ops->n; i++)
        if (ops->v[i]->kind == POP_MMA) {
            first = i;
            break;
        }
    int li = -1;
    for (int i = ops->n - 1; i >= 0; i--)
        if (ops->v[i]->kind == POP_MMA) {
            li = i;
            break;
        }
    POp *last = li >= 0 ? ops->v[li] : NULL;
    if (first < 0 || li == first) {
        diag_error(L->d, sp,
                   "overlap = 1 needs a compute block with two products at its top level: the first starts a step "
                   "and the last is deferred to the next one (as in S = Q @ K.T ... O += P @ V)");
        return;
    }
    PlanMma *m = last->mma;
    /* statements after the deferred product keep their place, so they must not touch its result */
    for (int i = li + 1; i < ops->n; i++) {
        Effects e;
        op_effects(L, ops->v[i], &e);
        if (symset_has(&e.rd, m->dst) || symset_has(&e.wr, m->dst) || ops->v[i]->kind == POP_MMA) {
            diag_error(L->d, ops->v[i]->st ? ops->v[i]->st->span : sp,
                       "with overlap = 1 the last product ('%s') is deferred to the next step, so nothing after it in "
                       "the compute block may use '%s'; move this statement before the product",
                       m->dst->name, m->dst->name);
            return;
        }
    }
    if (!m->accumulate || !m->a_reg) {
        diag_error(L->d, last->st->span,
                   "overlap = 1 defers the last product, which must accumulate (+=) and take its A operand from "
                   "registers");
        return;
    }
    /* the deferred product reads its A operand from a materialized copy */
    if (!m->a_tmp) {
        Symbol *tmp = ARENA_NEW(L->a, Symbol);
        tmp->kind = SYM_REG;
        tmp->name = arena_printf(L->a, "%s_operand", m->dst->name);
        tmp->ty = m->a_expr->ty;
        tmp->span = m->a_expr->span;
        m->a_tmp = tmp;
        PlanReg r = {tmp, value_regs(pk, &tmp->ty)};
        vec_push(L->a, &pk->regs, r);
    }
    Symbol *tmp = m->a_tmp;
    m->deferred = true;
    POp *mat = pop_new(L, POP_MATERIALIZE);
    mat->mma = m;
    mat->st = last->st;
    ops->v[li] = mat;
    /* insert the product after the first one */
    last->prev = true;
    last->skip_first = true;
    vec_push(L->a, ops, NULL);
    for (int i = ops->n - 1; i > first + 1; i--) ops->v[i] = ops->v[i - 1];
    ops->v[first + 1] = last;
    note(L, "overlap: '%s' is issued one step late, right after the next step's first product, so the work "
            "between them overlaps both products; its A operand is kept in '%s'",
         ast_expr_str(L->a, last->st->u.assign.rhs), tmp->name);
    if (pk->pingpong) {
        if (pk->consumers < 2) {
            diag_error(L->d, sp, "pingpong needs at least 2 consumer warpgroups");
            return;
        }
        POp *w = pop_new(L, POP_PP_WAIT), *p = pop_new(L, POP_PP_PASS);
        vec_push(L->a, ops, NULL);
        vec_push(L->a, ops, NULL);
        for (int i = ops->n - 1; i > first + 3; i--) ops->v[i] = ops->v[i - 2];
        ops->v[first + 3] = p;
        ops->v[first + 2] = ops->v[first + 1];
        ops->v[first + 1] = ops->v[first];
        ops->v[first] = w;
        note(L, "pingpong: the consumer warpgroups take turns issuing their products (named barriers), so one "
                "warpgroup's softmax runs under the other's products");
    }
}

/* ---- the first step: peeled or not ---------------------------------------------------------- */

static bool op_lists_equal(const POpList *a, const POpList *b);

static bool ops_equal(const POp *x, const POp *y) {
    if (x == y) return true;
    if (x->kind != y->kind || x->st != y->st || x->mma != y->mma || x->group != y->group || x->prev != y->prev ||
        x->skip_first != y->skip_first || x->last_step != y->last_step || x->no_steps != y->no_steps || x->n != y->n ||
        x->mv != y->mv || x->bar != y->bar || x->buf != y->buf || x->bulk_read != y->bulk_read || x->store != y->store)
        return false;
    return op_lists_equal(&x->then_ops, &y->then_ops) && op_lists_equal(&x->else_ops, &y->else_ops);
}

static bool op_lists_equal(const POpList *a, const POpList *b) {
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++)
        if (!ops_equal(a->v[i], b->v[i])) return false;
    return true;
}

static bool ops_zero_first(const POpList *ops) {
    for (int i = 0; i < ops->n; i++)
        if ((ops->v[i]->kind == POP_MMA && ops->v[i]->mma->zero_first) || ops_zero_first(&ops->v[i]->then_ops) ||
            ops_zero_first(&ops->v[i]->else_ops))
            return true;
    return false;
}

static void plan_peel(Lower *L) {
    PlanKernel *pk = L->pk;
    if (pk->no_pipeline) return;
    pk->peel_first = pk->lookahead || ops_zero_first(&pk->first_ops) || !op_lists_equal(&pk->first_ops, &pk->compute_ops);
    if (!pk->peel_first)
        note(L, "the first step's schedule is every later step's (nothing is carried from one step to the next), so "
                "the loop starts at step 0 and the step is emitted once");
}

/* ---- which tensors the kernel takes strides for ------------------------------------------------ */

static bool is_at_index(const Expr *x) { return x->kind == EX_CALL && x->fn == FN_AT; }

/* an integer expression that is never negative: non-negative constants, grid coordinates, the
 * pipeline step, run-time dimensions, and +, *, /, cdiv, min of such values, max with one of them,
 * lets that name one (depth-limited) */
static bool never_negative(const Expr *x, int depth) {
    if (!x || depth > 32) return false;
    if (x->is_const) return x->cval >= 0;
    switch (x->kind) {
    case EX_NAME:
    case EX_MEMBER:
        if (!x->sym) return false;
        if (x->sym->kind == SYM_AXIS || x->sym->kind == SYM_LOOPVAR || x->sym->kind == SYM_DIM) return true;
        return x->sym->kind == SYM_LET && never_negative(x->sym->init, depth + 1);
    case EX_BINARY:
        if (x->u.bin.op != BIN_ADD && x->u.bin.op != BIN_MUL && x->u.bin.op != BIN_DIV) return false;
        return never_negative(x->u.bin.l, depth + 1) && never_negative(x->u.bin.r, depth + 1);
    case EX_CALL:
        if (x->fn == FN_MAX) return never_negative(x->u.call.args[0], depth + 1) || never_negative(x->u.call.args[1], depth + 1);
        if (x->fn == FN_MIN || x->fn == FN_CDIV)
            return never_negative(x->u.call.args[0], depth + 1) && never_negative(x->u.call.args[1], depth + 1);
        return false;
    default: return false;
    }
}

/* a tile store whose first row may be negative (at(r) with r not provably >= 0) */
static bool store_may_start_above(const Stmt *st) {
    const Expr *ix = st->u.assign.lhs, *r = ix->u.index.args[ix->u.index.nargs - 2].lo;
    return is_at_index(r) && !never_negative(r->u.call.args[0], 0);
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

static void plan_arg_strides(Lower *L) {
    SemaKernel *sk = L->sk;
    PlanKernel *pk = L->pk;
    for (int i = 0; i < pk->stores.n; i++)
        pk->stores.v[i].may_start_above = pk->stores.v[i].path == SP_STAGED && store_may_start_above(pk->stores.v[i].st);
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
            need = ps->st->u.assign.lhs->u.index.base->sym == t && (ps->direct || ps->may_start_above);
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
static void plan_named_bars(Lower *L) {
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
    int *refs[] = {&pk->nbar_scratch, &pk->colred_bar, &pk->colred_wg_bar};
    for (int i = 0; i < 3; i++)
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

/* ---- what the sm_90a back end emits today ---------------------------------------------------- */

/* what names the construct; "are" for plural names ("per_col vectors") */
static void unsupported_(Lower *L, Span sp, const char *what, bool plural) {
    diag_error(L->d, sp, "%s %s not supported by the sm_90a back end yet", what, plural ? "are" : "is");
}
#define unsupported(L, sp, what) unsupported_((L), (sp), (what), false)
#define unsupported_plural(L, sp, what) unsupported_((L), (sp), (what), true)

/* rows of a register tile (or entries of a per_row vector) are held in blocks of 64 by each
 * warpgroup: a row slice must take whole blocks of a value one warpgroup holds whole */
static void check_row_slice(Lower *L, const Expr *e) {
    const Type *bt = &e->u.index.base->ty;
    const IndexArg *a = &e->u.index.args[0];
    int lo = a->lo ? (int)a->lo->cval : 0, hi = a->hi ? (int)a->hi->cval : bt->rows;
    if (!bt->per_wg && L->pk->consumers > 1)
        diag_error(L->d, e->span,
                   "'%s' is split over %d consumer warpgroups by rows, so its rows cannot be sliced; declare it per_wg "
                   "(every warpgroup holds all of it) or use one consumer warpgroup",
                   e->u.index.base->sym->name, L->pk->consumers);
    else if (lo % 64 || hi % 64)
        diag_error(L->d, a->span,
                   "a row slice of a register %s takes whole blocks of 64 rows (the wgmma fragment layout); got %d:%d",
                   bt->kind == TY_TILE ? "tile" : "vector", lo, hi);
}

static void support_expr(Lower *L, Expr *e) {
    if (!e) return;
    switch (e->kind) {
    case EX_TRANSPOSE:
        support_expr(L, e->u.tr.base);
        return;
    case EX_INDEX:
        if (e->ty.kind == TY_VEC && e->u.index.base->ty.kind == TY_TILE)
            ; /* one row or column: a relayout */
        else if (e->u.index.base->ty.space == MS_REG &&
                 ((e->u.index.base->ty.kind == TY_TILE && (e->u.index.args[0].lo || e->u.index.args[0].hi)) ||
                  (e->u.index.base->ty.kind == TY_VEC && e->u.index.base->ty.layout == VL_ROW)))
            check_row_slice(L, e);
        /* per_col vectors: every thread holds its columns of the whole vector, so any slice works */
        support_expr(L, e->u.index.base);
        return;
    case EX_CALL:
        switch (e->fn) {
        case FN_CUMSUM: unsupported(L, e->span, "cumsum()"); break;
        case FN_RAND: unsupported(L, e->span, "rand()"); break;
        case FN_REAL: case FN_IMAG: case FN_COMPLEX: unsupported_plural(L, e->span, "complex tiles"); break;
        default: break;
        }
        for (int i = 0; i < e->u.call.nargs; i++) support_expr(L, e->u.call.args[i]);
        return;
    case EX_BINARY:
        support_expr(L, e->u.bin.l);
        support_expr(L, e->u.bin.r);
        return;
    case EX_UNARY: support_expr(L, e->u.un.e); return;
    case EX_COND: support_expr(L, e->u.cond.c); support_expr(L, e->u.cond.a); support_expr(L, e->u.cond.b); return;
    default: return;
    }
}

static void support_stmts(Lower *L, StmtList *l, BlockKind bk) {
    for (int i = 0; i < l->n; i++) {
        Stmt *st = l->v[i];
        switch (st->kind) {
        case ST_ASSIGN:
            if (st->mv == MV_G2S) break;
            if (st->mv == MV_R2S && st->u.assign.lhs->ty.kind == TY_VEC)
                unsupported(L, st->span, "moving vectors from registers to shared memory");
            if (stmt_is_mma(st)) {
                support_expr(L, st->u.assign.rhs->u.bin.l);
                break;
            }
            if (st->u.assign.lhs->kind == EX_INDEX && st->mv == MV_NONE) support_expr(L, st->u.assign.lhs);
            support_expr(L, st->u.assign.rhs);
            break;
        case ST_LET: support_expr(L, st->u.let.e); break;
        case ST_IF:
            support_stmts(L, &st->u.if_.then_s, bk);
            support_stmts(L, &st->u.if_.else_s, bk);
            break;
        case ST_FOR: support_stmts(L, &st->u.for_.body, bk); break;
        case ST_EXPR: break;
        }
    }
}

static void check_support(Lower *L) {
    SemaKernel *sk = L->sk;
    for (int b = 0; b < BK_COUNT; b++)
        if (sk->blocks[b] && b != BK_LOAD) support_stmts(L, &sk->blocks[b]->u.block.body, (BlockKind)b);
    for (int i = 0; i < sk->regs.n; i++) {
        Symbol *y = sk->regs.v[i];
        if (y->ty.complex) unsupported_plural(L, y->span, "complex tiles");
    }
}

/* `zeroed` outputs, cleared by the launcher on the stream before the kernel runs */
static void lower_zeroed(Lower *L) {
    SemaKernel *sk = L->sk;
    PlanKernel *pk = L->pk;
    for (int i = 0; i < sk->args.n; i++) {
        const Arg *a = sk->args.v[i];
        bool z = false;
        for (int j = 0; j < a->ts.nattrs; j++) z |= !strcmp(a->ts.attrs[j], "zeroed");
        if (!z || !a->ts.ndims) continue;
        vec_push(L->a, &pk->zeroed, a);
        note(L, "'%s' is zeroed: the launcher clears it on the stream before the kernel runs (one cudaMemsetAsync when "
                "its strides are contiguous, else a small kernel that writes zeros through its strides, touching "
                "nothing outside the view)",
             a->name);
    }
}

/* ---- lazy row sums ------------------------------------------------------------------------- */

typedef Vec(const Expr *) ConstExprs;

/* rowsum(x) of a register tile that does not read y */
static bool is_tile_rowsum(const Expr *e, const Symbol *y) {
    return e->kind == EX_CALL && e->fn == FN_ROWSUM && e->u.call.args[0]->ty.kind == TY_TILE &&
           !expr_depends_on(e->u.call.args[0], y);
}

/* the same value in the four lanes of a quad: a per_row vector or a scalar that does not vary by column */
static bool row_uniform(const Expr *e) {
    if (e->ty.kind == TY_VEC) return e->ty.space == MS_REG && e->ty.layout == VL_ROW && !e->ty.per_wg;
    return (e->ty.kind == TY_FLOAT || e->ty.kind == TY_INT) && !(e->ty.varying & VARY_COL);
}

/* y, or y scaled by a row-uniform value that does not read y */
static bool is_scaled_self(const Expr *e, const Symbol *y) {
    if (e->kind == EX_NAME) return e->sym == y;
    if (e->kind != EX_BINARY || e->u.bin.op != BIN_MUL) return false;
    const Expr *a = e->u.bin.l, *b = e->u.bin.r;
    if (a->kind == EX_NAME && a->sym == y) return row_uniform(b) && !expr_depends_on(b, y);
    if (b->kind == EX_NAME && b->sym == y) return row_uniform(a) && !expr_depends_on(a, y);
    return false;
}

/* every statement of l touches y only as `y = y * a + rowsum(x)` (either order, a optional) or
 * `y += rowsum(x)`; the rowsums are collected in rs */
static bool only_sum_updates(Lower *L, StmtList *l, Symbol *y, ConstExprs *rs) {
    for (int i = 0; i < l->n; i++) {
        Stmt *st = l->v[i];
        if (st->kind == ST_ASSIGN && st->mv == MV_NONE && st->u.assign.lhs->kind == EX_NAME &&
            st->u.assign.lhs->sym == y) {
            Expr *r = st->u.assign.rhs;
            if (st->u.assign.op == AS_ADD && is_tile_rowsum(r, y)) {
                vec_push(L->a, rs, r);
                continue;
            }
            if (st->u.assign.op == AS_SET && r->kind == EX_BINARY && r->u.bin.op == BIN_ADD) {
                if (is_tile_rowsum(r->u.bin.r, y) && is_scaled_self(r->u.bin.l, y)) {
                    vec_push(L->a, rs, r->u.bin.r);
                    continue;
                }
                if (is_tile_rowsum(r->u.bin.l, y) && is_scaled_self(r->u.bin.r, y)) {
                    vec_push(L->a, rs, r->u.bin.l);
                    continue;
                }
            }
            return false;
        }
        if (st->kind == ST_IF) {
            if (expr_depends_on(st->u.if_.cond, y) || !only_sum_updates(L, &st->u.if_.then_s, y, rs) ||
                !only_sum_updates(L, &st->u.if_.else_s, y, rs))
                return false;
            continue;
        }
        if (st->kind == ST_FOR) {
            if (!only_sum_updates(L, &st->u.for_.body, y, rs)) return false;
            continue;
        }
        SymSet rd = {0}, wr = {0};
        stmt_effects(L, st, &rd, &wr, NULL);
        if (symset_has(&rd, y) || symset_has(&wr, y)) return false;
    }
    return true;
}

/* A per_row register vector that starts at 0 in setup, only accumulates row sums in the compute
 * block (`l = l * alpha + rowsum(p)`, alpha the same in the four lanes of a row's quad) and is read
 * only in finish: each lane keeps its partial sums through the loop and finish adds the quad's four
 * once, instead of two shuffles per row in every step. */
static void plan_lazy_sums(Lower *L) {
    SemaKernel *sk = L->sk;
    PlanKernel *pk = L->pk;
    if (!sk->blocks[BK_COMPUTE] || !sk->blocks[BK_SETUP] || !sk->blocks[BK_FINISH]) return;
    for (int i = 0; i < sk->regs.n; i++) {
        Symbol *y = sk->regs.v[i];
        if (y->ty.kind != TY_VEC || y->ty.layout != VL_ROW || y->ty.per_wg || y->ty.dt != DT_FP32) continue;
        /* setup: only y = 0 */
        StmtList *su = &sk->blocks[BK_SETUP]->u.block.body;
        bool ok = true, zeroed = false;
        for (int k = 0; k < su->n && ok; k++) {
            Stmt *st = su->v[k];
            SymSet rd = {0}, wr = {0};
            stmt_effects(L, st, &rd, &wr, NULL);
            if (symset_has(&rd, y)) ok = false;
            else if (symset_has(&wr, y))
                ok = st->kind == ST_ASSIGN && st->u.assign.op == AS_SET && st->u.assign.lhs->kind == EX_NAME &&
                     st->u.assign.rhs->is_const && st->u.assign.rhs->cval == 0 && (zeroed = true);
        }
        if (!ok || !zeroed) continue;
        /* neither load nor store reads it */
        for (int b = 0; b < BK_COUNT && ok; b++) {
            if (b != BK_LOAD && b != BK_STORE) continue;
            if (!sk->blocks[b]) continue;
            StmtList *bl = &sk->blocks[b]->u.block.body;
            for (int k = 0; k < bl->n && ok; k++) {
                SymSet rd = {0}, wr = {0};
                stmt_effects(L, bl->v[k], &rd, &wr, NULL);
                ok = !symset_has(&rd, y) && !symset_has(&wr, y);
            }
        }
        ConstExprs rs = {0};
        if (!ok || !only_sum_updates(L, &sk->blocks[BK_COMPUTE]->u.block.body, y, &rs) || !rs.n) continue;
        vec_push(L->a, &pk->lazy_sums, y);
        for (int k = 0; k < rs.n; k++) vec_push(L->a, &pk->lazy_rowsums, rs.v[k]);
        note(L, "'%s' only adds row sums in the loop: each lane keeps its partial sums and finish adds the four of a "
                "row's quad once, so the rowsum%s that feed%s it skip%s the per-step shuffles",
             y->name, rs.n > 1 ? "s" : "", rs.n > 1 ? "" : "s", rs.n > 1 ? "" : "s");
    }
}

/* ---- entry ------------------------------------------------------------------------------------ */

static PlanKernel *lower_kernel(Lower *L, SemaKernel *sk) {
    PlanKernel *pk = ARENA_NEW(L->a, PlanKernel);
    L->sk = sk;
    L->pk = pk;
    pk->sk = sk;
    pk->name = sk->k->name;
    pk->nbar_staging = pk->nbar_pingpong = pk->nbar_sync = pk->nbar_scratch = -1;
    pk->colred_buf = pk->colred_bar = pk->colred_wg_bar = -1;
    check_support(L);
    if (L->d->nerrors > L->errors0) return pk;
    L->load_conds.n = 0;
    if (sk->blocks[BK_LOAD]) load_conditions(L, &sk->blocks[BK_LOAD]->u.block.body, NULL);
    if (sk->blocks[BK_SETUP]) load_conditions(L, &sk->blocks[BK_SETUP]->u.block.body, NULL);
    lower_roles(L);
    lower_zeroed(L);
    lower_regs(L);
    lower_buffers(L);
    if (sk->blocks[BK_SETUP]) lower_stmts(L, &sk->blocks[BK_SETUP]->u.block.body, &pk->setup_ops, BK_SETUP);
    POpList body = {0};
    if (sk->blocks[BK_COMPUTE]) lower_stmts(L, &sk->blocks[BK_COMPUTE]->u.block.body, &body, BK_COMPUTE);
    if (sk->blocks[BK_STORE]) {
        /* the store block runs after compute in every step: its ops join the step's schedule */
        POpList st = {0};
        lower_stmts(L, &sk->blocks[BK_STORE]->u.block.body, &st, BK_STORE);
        for (int i = 0; i < st.n; i++) vec_push(L->a, &body, st.v[i]);
        if (st.n) note(L, "the store block runs at the end of every step, after compute, in the same schedule");
    }
    if (sk->blocks[BK_FINISH]) lower_stmts(L, &sk->blocks[BK_FINISH]->u.block.body, &pk->finish_ops, BK_FINISH);
    if (L->d->nerrors > L->errors0) return pk;
    pk->compute_ops = body;
    lower_groups(L, &pk->compute_ops);
    fold_zero_fills(L);
    if (pk->pingpong && !pk->overlap) diag_error(L->d, sk->pipe->span, "pingpong = 1 needs overlap = 1");
    if (pk->overlap) apply_overlap(L);
    estimate_regs(L);
    /* two consumer warpgroups with large register tiles: the 240/24 split instead of 232/40 */
    if (pk->consumers == 2 && !L->sk->producer_regs && !L->sk->consumer_regs && pk->reg_estimate > REG_HEAVY_ESTIMATE) {
        pk->producer_regs = 24;
        pk->consumer_regs = 240;
        pk->split_why = "heavy_consumers";
    }
    note_roles(L);
    if (!strcmp(pk->split_why, "heavy_consumers"))
        note(L, "register split 240/24 rather than 232/40: the consumers' estimate (%d) is over %d", pk->reg_estimate,
             REG_HEAVY_ESTIMATE);
    check_reg_budget(L);
    if (sk->blocks[BK_STORE]) collect_stores(L, &sk->blocks[BK_STORE]->u.block.body, BK_STORE);
    if (sk->blocks[BK_FINISH]) collect_stores(L, &sk->blocks[BK_FINISH]->u.block.body, BK_FINISH);
    plan_colred(L);
    if (sk->blocks[BK_STORE]) plan_col_stores(L, &sk->blocks[BK_STORE]->u.block.body, 0);
    if (sk->blocks[BK_FINISH]) plan_col_stores(L, &sk->blocks[BK_FINISH]->u.block.body, 0);
    lower_staging(L);
    layout_smem(L);
    if (L->d->nerrors > L->errors0) return pk;
    /* setup and finish: products there are waited for before their results are used, and
     * before the block ends */
    schedule_block(L, &pk->setup_ops, false, "the setup block's products");
    schedule_block(L, &pk->finish_ops, true, "the finish block's products");
    /* consumers: setup (then wait for the setup tiles), the scheduled step, finish */
    POpList sched = {0}, first = {0}, after = {0};
    if (!pk->no_pipeline) schedule_compute(L, &pk->compute_ops, &first, &sched, &after);
    pk->first_ops = first;
    if (pk->overlap) {
        /* after the loop, the last deferred product */
        for (int i = 0; i < pk->compute_ops.n; i++) {
            POp *o = pk->compute_ops.v[i];
            if (o->kind != POP_MMA || !o->mma->deferred) continue;
            POp *w = pop_new(L, POP_WAIT_FULL);
            w->group = group_of_buf(pk, o->mma->b.buf);
            w->prev = true;
            w->skip_first = true;
            POp *tail = pop_new(L, POP_MMA);
            *tail = *o;
            tail->prev = true;
            tail->skip_first = true;
            tail->note = "the deferred product of the last step";
            POpList nafter = {0};
            vec_push(L->a, &nafter, w);
            vec_push(L->a, &nafter, tail);
            POp *w0 = pop_new(L, POP_WAIT_MMA);
            w0->n = 0;
            w0->note = "the last step's products";
            vec_push(L->a, &w0->done, tail);
            vec_push(L->a, &nafter, w0);
            POp *rel = pop_new(L, POP_RELEASE);
            rel->group = w->group;
            rel->prev = true;
            rel->skip_first = true;
            rel->note = "the last step's stage";
            vec_push(L->a, &nafter, rel);
            for (int j = 0; j < after.n; j++) {
                if (after.v[j]->kind != POP_WAIT_MMA) vec_push(L->a, &nafter, after.v[j]);
                else
                    for (int k = 0; k < after.v[j]->done.n; k++) vec_push(L->a, &w0->done, after.v[j]->done.v[k]);
            }
            after = nafter;
        }
    }
    pk->compute_ops = sched;
    pk->after_ops = after;
    /* setup tiles: wait before the loop (after setup's own statements), release after finish */
    for (int g = 0; g < pk->groups.n; g++) {
        if (!pk->groups.v[g].once) continue;
        bool waited = false; /* by schedule_block, before the setup op that first reads them */
        for (int i = 0; i < pk->setup_ops.n; i++)
            waited |= pk->setup_ops.v[i]->kind == POP_WAIT_FULL && pk->setup_ops.v[i]->group == g;
        POp *w = pop_new(L, POP_WAIT_FULL);
        w->group = g;
        /* before the first setup statement that reads the setup tiles, else at the end of setup */
        int at = pk->setup_ops.n;
        for (int i = 0; i < pk->setup_ops.n && at == pk->setup_ops.n; i++) {
            Effects e;
            op_effects(L, pk->setup_ops.v[i], &e);
            for (int j = 0; j < pk->groups.v[g].bufs.n; j++)
                if (symset_has(&e.bufs, pk->bufs.v[pk->groups.v[g].bufs.v[j]].sym)) at = i;
        }
        if (!waited) {
            vec_push(L->a, &pk->setup_ops, NULL);
            for (int i = pk->setup_ops.n - 1; i > at; i--) pk->setup_ops.v[i] = pk->setup_ops.v[i - 1];
            pk->setup_ops.v[at] = w;
        }
        POp *r = pop_new(L, POP_RELEASE);
        r->group = g;
        r->note = "the setup tiles are no longer read";
        bool finish_reads = false;
        for (int i = 0; i < pk->finish_ops.n; i++) {
            Effects e;
            op_effects(L, pk->finish_ops.v[i], &e);
            for (int j = 0; j < pk->groups.v[g].bufs.n; j++)
                finish_reads |= symset_has(&e.bufs, pk->bufs.v[pk->groups.v[g].bufs.v[j]].sym);
        }
        if (finish_reads) {
            vec_push(L->a, &pk->finish_ops, r);
            continue;
        }
        /* read only by the compute step: the last step releases the setup tiles as soon as its
         * readers are complete, so the producer loads the next work tile's setup tiles (and
         * then its first stages) under this tile's last step and epilogue */
        int at_first = release_point(L, &pk->first_ops, g), at_loop = release_point(L, &pk->compute_ops, g);
        if (at_first >= 0 && at_loop >= 0 && !ops_read_group(L, &pk->after_ops, g)) {
            insert_release(L, &pk->first_ops, at_first + 1, g);
            insert_release(L, &pk->compute_ops, at_loop + 1, g);
            r->no_steps = true;
            r->note = "no step ran, so no step released the setup tiles";
            pk->early_setup_release = true;
        }
        vec_push(L->a, &pk->after_ops, r);
    }
    if (pk->no_pipeline)
        note(L, "no pipeline statement: each work tile runs setup, then finish, once; no ring, no steps, no ring "
                "barriers; %s",
             pk->groups.n ? "the producer loads the setup tiles once per work tile"
                          : "nothing is loaded, so the producer warpgroup only gives up its registers and exits");
    else
        note(L, "pipeline: %d stage%s; the producer refills a stage as soon as every consumer warpgroup releases it",
             pk->stages, pk->stages == 1 ? "" : "s");
    if (pk->persistent)
        note(L, "persistent grid: one block per SM walks the work tiles; stage and phase counters carry across tiles "
                "so the producer prefetches the next tile during the epilogue");
    if (pk->setup_stages > 1)
        note(L, "setup tiles in two copies (setup_stages = 2): work tile k reads copy k %% 2, so the producer loads the "
                "next tile's setup tiles as soon as the tile before this one released them, not after this one's last step");
    if (!pk->no_pipeline) plan_lookahead(L);
    if (pk->lookahead)
        note(L, "lookahead: the first step's products for the next work tile are issued right after this tile's last "
                "products, before its finish, so the tensor cores work during the epilogue");
    else if (pk->no_lookahead)
        note(L, "no lookahead (the next work tile's first products under this tile's finish): %s", pk->no_lookahead);
    if (pk->early_setup_release)
        note(L, "the setup tiles are released by the last step, once its products that read them are complete: the "
                "producer loads the next work tile's setup tiles during the last step and the finish block");
    plan_tail(L);
    plan_lazy_sums(L);
    POpList *lists[] = {&pk->setup_ops, &pk->first_ops, &pk->compute_ops, &pk->after_ops, &pk->finish_ops};
    for (int i = 0; i < 5; i++) link_stores(L, lists[i]);
    plan_named_bars(L);
    plan_peel(L);
    plan_arg_strides(L);
    return pk;
}

bool lower_program(Arena *a, Diag *d, Program *p, SemaResult *sr, Plan *out) {
    (void)p;
    Lower L = {.a = a, .d = d, .errors0 = d->nerrors};
    for (int i = 0; i < sr->kernels.n; i++) {
        PlanKernel *pk = lower_kernel(&L, sr->kernels.v[i]);
        vec_push(a, &out->kernels, pk);
    }
    return d->nerrors == L.errors0;
}
