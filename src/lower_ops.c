/* lower_ops.c - the consumers' program: statements to plan ops (products, moves between
 * registers and shared memory, relayouts of a register value through a scratch buffer), the
 * shared tiles and registers each op touches, and the consumers' register estimate against the
 * setmaxnreg split. Part of lowering (lower_int.h). */
#include <string.h>

#include "lower_int.h"

/* ---- consumers' program: statements to ops ---------------------------------------------------- */

static PlanMma *lower_mma(Lower *L, PStmt *st) {
    PlanKernel *pk = L->pk;
    PExpr *rhs = st->rhs;
    PExpr *A = rhs->l, *B = rhs->r;
    PlanMma *m = ARENA_NEW(L->a, PlanMma);
    m->dst = px_root(st->lhs);
    if (!m->dst->ty.per_wg && m->dst->ty.rows % pk->consumers) return NULL; /* reported with the declaration */
    m->accumulate = st->op != AS_SET;
    m->negate = st->op == AS_SUB;
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
    PExpr *br = operand_root(B, &tr, &prev, &r0, &c0);
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
        PExpr *ar = operand_root(A, &tr, &prev, &r0, &c0);
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
        if (!(A->kind == PX_NAME && (A->ty.dt == DT_BF16 || A->ty.dt == DT_FP16))) {
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
        } else if (st->kind == ST_ASSIGN && ast_stmt_is_mma(st)) {
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

static PlanMove *lower_move(Lower *L, PStmt *st) {
    PlanKernel *pk = L->pk;
    PlanMove *m = ARENA_NEW(L->a, PlanMove);
    m->st = st;
    m->to_shared = st->mv == MV_R2S;
    PExpr *sh = m->to_shared ? st->lhs : st->rhs;
    PExpr *rg = m->to_shared ? st->rhs : st->lhs;
    m->buf = buf_of_sym(pk, px_root(sh));
    m->rt = &rg->ty;
    bool wide = dtype_bytes[sh->ty.dt] == 4;
    m->path = m->to_shared ? (wide ? MP_STS : MP_STMATRIX) : (wide ? MP_LDS : MP_LDMATRIX);
    if (!m->to_shared) {
        m->reg = px_root(rg);
        if (rg->kind == PX_INDEX && rg->ix[1].lo) m->col0 = (int)rg->ix[1].lo->cval;
    }
    if (sh->kind == PX_INDEX) { /* a block of the shared tile: the addresses start at its origin */
        if (sh->ix[0].lo) m->srow0 = (int)sh->ix[0].lo->cval;
        if (sh->nix > 1 && sh->ix[1].lo) m->scol0 = (int)sh->ix[1].lo->cval;
    }
    m->wg0_only = m->to_shared && rg->ty.per_wg && pk->consumers > 1;
    return m;
}

/* `shared <- value`: wait until the tile's earlier readers are done (the scheduler waits for
 * products that read it, the barrier for every warpgroup), write it, make the writes visible to
 * the async proxy when wgmma or TMA read the tile, and wait until every warpgroup wrote its part */
static void lower_r2s(Lower *L, PStmt *st, POpList *out) {
    POp *o = pop_new(L, POP_MOVE);
    o->st = st;
    o->mv = lower_move(L, st);
    Symbol *y = px_root(st->lhs);
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

static PExpr *name_expr(Lower *L, Symbol *y, Span sp) { return px_name(L->a, y, sp); }

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
        buf_tile_layout(&b, x->ty.rows, x->ty.cols, eb);
    }
    vec_push(L->a, &pk->bufs, b);
    lower_note(L, "'%s': a scratch buffer for '%s' in another register layout (written in its layout, read back in the new one)",
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
    PStmt *w = ps_new(L, PS_ASSIGN, sp);
    w->op = AS_MOVE;
    w->lhs = name_expr(L, scr, sp);
    w->rhs = name_expr(L, src, sp);
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
    PStmt *r = ps_new(L, PS_ASSIGN, sp);
    r->op = AS_MOVE;
    r->lhs = name_expr(L, tmp, sp);
    r->rhs = name_expr(L, scr, sp);
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

static bool is_reg_name(const PExpr *x) {
    return x && x->kind == PX_NAME && x->sym && is_regval(x->sym);
}

/* a copy of x with every transpose of a register tile and every row or column of one replaced by
 * a relayout temporary (x itself when nothing changes) */
static PExpr *relayout_expr(Relayout *R, PExpr *x) {
    if (!x) return x;
    Lower *L = R->L;
    if (x->kind == PX_TRANSPOSE && x->ty.space == MS_REG && x->ty.kind == TY_TILE) {
        if (!is_reg_name(x->base)) {
            diag_error(L->d, x->span, "transposing a register value outside '@' needs a named tile: let t = ...; then t.T");
            R->failed = true;
            return x;
        }
        Symbol *t = relayout_value(R, x->base->sym, x->ty, true, -1, false, x->span);
        return name_expr(L, t, x->span);
    }
    if (x->kind == PX_INDEX && x->ty.kind == TY_VEC && x->base->ty.kind == TY_TILE &&
        x->base->ty.space == MS_REG) {
        bool col = !x->ix[1].slice; /* x[:, i]: column i, a per_row vector */
        PExpr *ix = col ? x->ix[1].lo : x->ix[0].lo;
        if (!is_reg_name(x->base) || !ix || !ix->is_const) {
            diag_error(L->d, x->span, "one row or column of a register tile takes a named tile and a constant index");
            R->failed = true;
            return x;
        }
        Symbol *t = relayout_value(R, x->base->sym, x->ty, false, (int)ix->cval, col, x->span);
        return name_expr(L, t, x->span);
    }
    PExpr *c = NULL;
#define CHILD(field)                                                                                  \
    do {                                                                                              \
        PExpr *n_ = relayout_expr(R, x->field);                                                        \
        if (n_ != x->field) {                                                                         \
            if (!c) {                                                                                 \
                c = ARENA_NEW(L->a, PExpr);                                                 \
                *c = *x;                                                                              \
            }                                                                                         \
            c->field = n_;                                                                            \
        }                                                                                             \
    } while (0)
    switch (x->kind) {
    case PX_BINARY: CHILD(l); CHILD(r); break;
    case PX_UNARY: CHILD(l); break;
    case PX_COND: CHILD(l); CHILD(r); break;
    case PX_CALL: {
        PExpr **args = NULL;
        for (int i = 0; i < x->nargs; i++) {
            PExpr *n = relayout_expr(R, x->args[i]);
            if (n != x->args[i] && !args) {
                args = ARENA_NEW_N(L->a, PExpr *, x->nargs);
                memcpy(args, x->args, sizeof(PExpr *) * (size_t)x->nargs);
            }
            if (args) args[i] = n;
        }
        if (args) {
            c = ARENA_NEW(L->a, PExpr);
            *c = *x;
            c->args = args;
        }
        break;
    }
    default: break;
    }
#undef CHILD
    return c ? c : x;
}

static PStmt *relayout_stmt_(Lower *L, PStmt *st, POpList *out);

/* a statement that needs relayouts: the ops and the rewritten statement it becomes remember it
 * (PStmt.origin), so that their comments in the CUDA (and --line-directives) name the .tk's */
static PStmt *relayout_stmt(Lower *L, PStmt *st, POpList *out) {
    int n0 = out->n;
    PStmt *r = relayout_stmt_(L, st, out);
    for (int i = n0; i < out->n; i++)
        if (out->v[i]->st && out->v[i]->st != st && !out->v[i]->st->origin) out->v[i]->st->origin = st;
    if (r && r != st && !r->origin) r->origin = st;
    return r;
}

/* its relayouts' ops go to out first, then the rewritten statement is returned (st itself when
 * it needs none) */
static PStmt *relayout_stmt_(Lower *L, PStmt *st, POpList *out) {
    Relayout R = {.L = L, .out = out};
    if (st->kind == PS_LET) {
        PExpr *e = relayout_expr(&R, st->rhs);
        if (e == st->rhs) return st;
        PStmt *c = ARENA_NEW(L->a, PStmt);
        *c = *st;
        c->rhs = e;
        return c;
    }
    if (st->kind != PS_ASSIGN || st->mv == MV_G2S || stmt_is_mma(st)) return st;
    PExpr *rhs = relayout_expr(&R, st->rhs);
    PExpr *lhs = st->lhs;
    /* a vector assigned to one of the other layout: the value first, then through shared memory */
    if (st->mv == MV_NONE && lhs->ty.kind == TY_VEC && rhs->ty.kind == TY_VEC && lhs->ty.layout != rhs->ty.layout &&
        !R.failed) {
        Symbol *src = is_reg_name(rhs) ? rhs->sym : NULL;
        if (!src) {
            Type vt = rhs->ty;
            vt.space = MS_REG;
            src = relayout_symbol(L, SYM_REG, arena_printf(L->a, "%s_value%d", px_root(lhs)->name, out->n), vt, rhs->span);
            PlanReg pr = {src, value_regs(L->pk, &vt)};
            vec_push(L->a, &L->pk->regs, pr);
            PStmt *v = ps_new(L, PS_ASSIGN, st->span);
            v->op = AS_SET;
            v->lhs = name_expr(L, src, rhs->span);
            v->rhs = rhs;
            POp *vo = pop_new(L, POP_STMT);
            vo->st = v;
            vec_push(L->a, out, vo);
        }
        Type to = rhs->ty;
        to.layout = lhs->ty.layout;
        to.per_wg = lhs->ty.per_wg;
        Symbol *t = relayout_value(&R, src, to, false, -1, false, rhs->span);
        rhs = name_expr(L, t, rhs->span);
        lower_note(L, "'%s': the %s value becomes %s through '%s'", plan_stmt_str(L->a, st), veclayout_name[src->ty.layout],
             veclayout_name[to.layout], arena_printf(L->a, "%s_relayout", src->name));
    }
    if (rhs == st->rhs) return st;
    PStmt *c = ARENA_NEW(L->a, PStmt);
    *c = *st;
    c->rhs = rhs;
    return c;
}

/* tile / per_row vector: one reciprocal per row, then a product per element (marks the nodes;
 * returns how many) */
static int mark_recips(PExpr *x) {
    if (!x) return 0;
    int n = 0;
    switch (x->kind) {
    case PX_CALL:
        for (int i = 0; i < x->nargs; i++) n += mark_recips(x->args[i]);
        return n;
    case PX_BINARY:
        n = mark_recips(x->l) + mark_recips(x->r);
        if (x->bop == BIN_DIV && x->ty.kind == TY_TILE && x->r->ty.kind == TY_VEC && x->r->ty.layout == VL_ROW) {
            x->recip = true;
            n++;
        }
        return n;
    case PX_UNARY: return mark_recips(x->l);
    case PX_COND: return mark_recips(x->l) + mark_recips(x->r);
    default: return 0;
    }
}

static void plan_recips(Lower *L, PStmt *st) {
    if (!mark_recips(st->rhs) || L->recip_noted) return;
    L->recip_noted = true;
    lower_note(L, "'%s': a tile divided by a per_row vector takes one reciprocal per row, then a product per element",
               plan_stmt_str(L->a, st));
}

/* an assignment or let (its operands already relayouted) to its op */
static POp *lower_stmt(Lower *L, PStmt *st) {
    if (st->kind == PS_ASSIGN && (st->mv == MV_G2S)) return NULL; /* the producer's */
    if (st->kind == PS_ASSIGN && st->mv == MV_S2R && st->lhs->ty.kind == TY_TILE) {
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
    if (st->kind == PS_ASSIGN && (st->mv == MV_R2G || st->mv == MV_S2G || st->mv == MV_ADD_S2G || st->mv == MV_ADD_R2G)) {
        POp *o = pop_new(L, POP_STORE);
        o->st = st;
        return o;
    }
    POp *o = pop_new(L, POP_STMT);
    o->st = st;
    return o;
}

/* the translation of a block's statements into ops: control flow into if and for ops over the
 * ops of their bodies, sync() into a sync op, assignments and lets into the trees of plan.h
 * (lower_ps), relayouted, then into their ops */
void lower_stmts(Lower *L, StmtList *l, POpList *out, BlockKind bk) {
    for (int i = 0; i < l->n; i++) {
        Stmt *ast = l->v[i];
        if (ast->kind == ST_EXPR) {
            vec_push(L->a, out, pop_new(L, POP_SYNC));
            continue;
        }
        if (ast->kind == ST_IF && ast->u.if_.cond->is_const) {
            /* a condition fixed at compile time (a param): the taken branch's ops, with no if
             * around them, so the scheduler overlaps their products like any others */
            bool taken = ast->u.if_.cond->cval != 0;
            lower_note(L, "'if (%s)' is %s at compile time: %s", px_str(L->a, px_from_ast(L->a, ast->u.if_.cond)), taken ? "true" : "false",
                       taken ? "its statements run unconditionally" : ast->u.if_.has_else ? "its else branch runs unconditionally"
                                                                                            : "it is left out");
            lower_stmts(L, taken ? &ast->u.if_.then_s : &ast->u.if_.else_s, out, bk);
            continue;
        }
        if (ast->kind == ST_IF) {
            POp *o = pop_new(L, POP_IF);
            o->cond = px_from_ast(L->a, ast->u.if_.cond);
            lower_stmts(L, &ast->u.if_.then_s, &o->then_ops, bk);
            lower_stmts(L, &ast->u.if_.else_s, &o->else_ops, bk);
            vec_push(L->a, out, o);
            continue;
        }
        if (ast->kind == ST_FOR) {
            POp *o = pop_new(L, POP_FOR);
            o->var = ast->u.for_.sym;
            o->lo = px_from_ast(L->a, ast->u.for_.lo);
            o->hi = px_from_ast(L->a, ast->u.for_.hi);
            lower_stmts(L, &ast->u.for_.body, &o->then_ops, bk);
            vec_push(L->a, out, o);
            continue;
        }
        PStmt *st = lower_ps(L, ast);
        if (bk != BK_LOAD) st = relayout_stmt(L, st, out);
        if (bk != BK_LOAD) plan_recips(L, st);
        if (bk != BK_LOAD) plan_colpicks(L, st);
        if (st->kind == PS_ASSIGN && st->mv == MV_R2S && st->rhs->ty.kind == TY_TILE) {
            lower_r2s(L, st, out);
            continue;
        }
        POp *o = lower_stmt(L, st);
        if (o) vec_push(L->a, out, o);
    }
}


static int let_peak(Lower *L, POpList *ops);
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
            if (o->kind != POP_STMT || o->st->kind != PS_LET || !is_regval(o->st->let)) continue;
            Symbol *y = o->st->let;
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

/* A kernel without a pipeline runs setup, then finish, once per work tile: a declared register value
 * is live from the first op that touches it to the last that reads it (a for or an if counts as
 * one op), so the declared values count at their peak together, not all at once. */
static int straight_line_peak(Lower *L) {
    PlanKernel *pk = L->pk;
    int n = pk->setup_ops.n + pk->finish_ops.n, peak = 0;
    if (!n) return 0;
    Effects *fx = ARENA_NEW_N(L->a, Effects, n);
    for (int i = 0; i < n; i++)
        op_effects(L, i < pk->setup_ops.n ? pk->setup_ops.v[i] : pk->finish_ops.v[i - pk->setup_ops.n], &fx[i]);
    int *live = ARENA_NEW_N(L->a, int, n);
    for (int r = 0; r < pk->regs.n; r++) {
        Symbol *y = pk->regs.v[r].sym;
        if (y->kind == SYM_LET) continue;
        int first = -1, last = -1;
        for (int i = 0; i < n; i++) {
            bool rd = symset_has(&fx[i].rd, y), wr = symset_has(&fx[i].wr, y);
            if ((rd || wr) && first < 0) first = rd ? 0 : i; /* read before any write: live from the start */
            if (rd || wr) last = i;
        }
        for (int i = first; i >= 0 && i <= last; i++) live[i] += pk->regs.v[r].regs;
    }
    for (int i = 0; i < n; i++)
        if (live[i] > peak) peak = live[i];
    return peak;
}

/* every symbol the ops read or write (op_effects follows ifs and fors) */
static void ops_used(Lower *L, const POpList *ops, SymSet *used) {
    for (int i = 0; i < ops->n; i++) {
        Effects e;
        op_effects(L, ops->v[i], &e);
        for (int j = 0; j < e.rd.n; j++) symset_add(L, used, e.rd.v[j]);
        for (int j = 0; j < e.wr.n; j++) symset_add(L, used, e.wr.v[j]);
    }
}

/* register tiles and vectors no op reads or writes (their statements were left out at compile
 * time, under an if whose condition is a param) take no registers: the plan drops them */
static void drop_unused_regs(Lower *L) {
    PlanKernel *pk = L->pk;
    SymSet used = {0};
    const POpList *lists[] = {&pk->setup_ops, &pk->compute_ops, &pk->first_ops, &pk->after_ops, &pk->finish_ops};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) ops_used(L, lists[i], &used);
    int n = 0;
    for (int i = 0; i < pk->regs.n; i++) {
        Symbol *y = pk->regs.v[i].sym;
        if (y->kind != SYM_LET && !symset_has(&used, y)) {
            lower_note(L, "register '%s' is not used by any statement the kernel keeps: it takes no registers", y->name);
            continue;
        }
        pk->regs.v[n++] = pk->regs.v[i];
    }
    pk->regs.n = n;
}

/* does a statement of ops draw random numbers (rand(), keep()) */
static bool ops_philox(const POpList *ops) {
    for (int i = 0; i < ops->n; i++) {
        const POp *o = ops->v[i];
        if (o->st && (px_calls(o->st->rhs, FN_RAND) || px_calls(o->st->rhs, FN_KEEP))) return true;
        if (ops_philox(&o->then_ops) || ops_philox(&o->else_ops)) return true;
    }
    return false;
}

/* registers the Philox calls of a kernel's statements keep live beyond their values where they are
 * made per element (rand(), keep() outside rowwise tiles): the four words and two key words of each
 * call ptxas interleaves (measured with ptxas 13.0: bench/features/keep_acc.tk, keep() and rand() in
 * the accumulator layout, spilled at 96 registers a thread and fitted in 126). Rowwise statements
 * make one call per chunk of 8 columns and need nothing extra (layernorm.tk: 96 registers at 5
 * blocks per SM, no spills). 0 for a kernel without them. */
int plan_philox_regs(const PlanKernel *pk) {
    if (pk->rowwise) return 0;
    const POpList *lists[] = {&pk->setup_ops, &pk->compute_ops, &pk->first_ops, &pk->after_ops, &pk->finish_ops};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        if (ops_philox(lists[i])) return 48;
    return 0;
}

/* the consumers' register estimate: register tiles + the most live temporaries + overhead */
void estimate_regs(Lower *L) {
    PlanKernel *pk = L->pk;
    drop_unused_regs(L);
    int total = pk->no_pipeline ? straight_line_peak(L) : 0;
    for (int i = 0; i < pk->regs.n && !pk->no_pipeline; i++)
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

/* The registers ptxas gives each thread when it compiles the kernel (block_reg_cap): setmaxnreg
 * moves registers between warpgroups at run time, but ptxas allocates every thread within this
 * (measured: a 512-thread kernel uses at most 128 registers, a 384-thread one 168). */
static int compile_reg_cap(const PlanKernel *pk) { return block_reg_cap(pk->threads, pk->min_blocks); }

/* registers one wgmma instruction needs at once beyond its accumulator and A fragments: its
 * descriptors and what the issuing code keeps live (measured with ptxas 13.0: m64n208k16 with
 * both operands in shared memory asks for a register target of 130 = 104 + 26) */
enum { WGMMA_FIXED_REGS = 26 };

/* a wgmma instruction that cannot be compiled in the registers ptxas has: its fp32 accumulator
 * (n / 2 per thread), its A fragments (4, from registers) and the fixed part must all be registers */
static void check_mma_regs(Lower *L, const POpList *ops, int cap, bool *reported) {
    for (int i = 0; i < ops->n && !*reported; i++) {
        const POp *o = ops->v[i];
        check_mma_regs(L, &o->then_ops, cap, reported);
        check_mma_regs(L, &o->else_ops, cap, reported);
        if (o->kind != POP_MMA || !o->mma || *reported) continue;
        int inst_n, count;
        plan_mma_shape(o->mma, &inst_n, &count);
        int need = inst_n / 2 + (o->mma->a_reg ? 4 : 0) + WGMMA_FIXED_REGS;
        if (need <= cap) continue;
        int widest = (cap - WGMMA_FIXED_REGS - (o->mma->a_reg ? 4 : 0)) * 2 / 16 * 16;
        diag_error(L->d, o->st ? o->st->span : L->sk->k->name_span,
                   "register budget: one wgmma instruction of this product (m64n%dk16) needs about %d registers per "
                   "thread at once (its accumulator %d%s + %d), but ptxas has %d per thread in a block of %d threads%s; "
                   "use fewer consumer warpgroups, or a product at most %d columns wide",
                   inst_n, need, inst_n / 2, o->mma->a_reg ? " + A fragments 4" : "", WGMMA_FIXED_REGS, cap, L->pk->threads,
                   L->pk->min_blocks > 1 ? arena_printf(L->a, " (%d blocks per SM)", L->pk->min_blocks) : "",
                   widest > 0 ? widest : 16);
        *reported = true;
    }
}

/* the ops after an if, where a branch that leaves y alone goes on (kill_before_read) */
typedef struct KillCont {
    const POpList *l;
    int from;
    const struct KillCont *next;
} KillCont;

static bool kill_before_read(Lower *L, const POpList *l, int from, const KillCont *k, Symbol *y, bool untouched);

/* does op o (e its effects) read y as the register A operand of a product? Its registers stay
 * pinned until the product completes, which the schedule decides later */
static bool op_mma_reads(const POp *o, const Effects *e, const Symbol *y) {
    if (o->kind != POP_MMA || !o->mma || !o->mma->a_reg) return false;
    if (o->mma->a_tmp) return o->mma->a_tmp == y;
    return symset_has(&e->rd, y) && o->mma->dst != y;
}

static bool op_touches(const POp *o, const Effects *e, const Symbol *y) {
    return symset_has(&e->rd, y) || symset_has(&e->wr, y) || op_mma_reads(o, e, y);
}

/* does op o write all of y without reading y's earlier value (a kill: that value is dead)? A
 * product without accumulation into y or one that makes y its register A operand, `y = e` /
 * `y <- s` into the whole of y, an if each of whose paths writes y before reading it */
static bool op_kills(Lower *L, POp *o, Symbol *y) {
    if (o->kind == POP_MMA) return o->mma && ((o->mma->dst == y && !o->mma->accumulate) || o->mma->a_tmp == y);
    if (o->kind == POP_IF)
        return kill_before_read(L, &o->then_ops, 0, NULL, y, false) && kill_before_read(L, &o->else_ops, 0, NULL, y, false);
    if ((o->kind != POP_STMT && o->kind != POP_MOVE) || !o->st || o->st->kind != PS_ASSIGN) return false;
    if (o->st->op != AS_SET && o->st->op != AS_MOVE) return false;
    return o->st->lhs && o->st->lhs->kind == PX_NAME && o->st->lhs->sym == y;
}

/* op o (e its effects) kills y before it reads it: the product that makes y its A operand, an if,
 * anything else that kills y without reading it */
static bool kills_first(Lower *L, POp *o, const Effects *e, Symbol *y) {
    if (!op_kills(L, o, y)) return false;
    if (o->kind == POP_IF || (o->kind == POP_MMA && o->mma->a_tmp == y)) return true;
    return !symset_has(&e->rd, y);
}

/* on every path from op `from` of l (then the continuations k), y is written whole before anything
 * reads it; a path that never touches y counts as `untouched` (true for the rest of a step: no read
 * sees an earlier step's value; false for an if's branch: the if does not write y there). An if is
 * followed into both branches, each going on after the if, so `if (j > 0) { f = ...; ... f ... }`
 * then `f = ...` keeps f local to the step; any other op that touches y decides by kills_first */
static bool kill_before_read(Lower *L, const POpList *l, int from, const KillCont *k, Symbol *y, bool untouched) {
    for (int i = from; i < l->n; i++) {
        POp *o = l->v[i];
        Effects e;
        op_effects(L, o, &e);
        if (!op_touches(o, &e, y)) continue;
        if (o->kind == POP_IF) {
            KillCont c = {l, i + 1, k};
            return kill_before_read(L, &o->then_ops, 0, &c, y, untouched) &&
                   kill_before_read(L, &o->else_ops, 0, &c, y, untouched);
        }
        return kills_first(L, o, &e, y);
    }
    return k ? kill_before_read(L, k->l, k->from, k->next, y, untouched) : untouched;
}

/* The most registers a pipeline step holds at once, in program order before scheduling: values
 * that live across steps (touched by setup or finish, or read in the step before a write of all of
 * them) count everywhere; the others (S, P, dS in attention's backward: written whole, then read,
 * within a step) count from each write that kills them to their last read, and a register A
 * operand of a product from that product to the end of the step. A value is local to the step when
 * every path through it writes the value whole before reading it (kill_before_read: a branch that
 * leaves it alone goes on after its if). For the live range an if or a for counts as one op, and a
 * write under it kills nothing. */
static int step_live_peak(Lower *L) {
    PlanKernel *pk = L->pk;
    const POpList *ops = &pk->compute_ops;
    int n = ops->n, carried = 0, peak = 0;
    if (!n) return 0;
    Effects *fx = ARENA_NEW_N(L->a, Effects, n);
    for (int i = 0; i < n; i++) op_effects(L, ops->v[i], &fx[i]);
    SymSet outside = {0};
    ops_used(L, &pk->setup_ops, &outside);
    ops_used(L, &pk->finish_ops, &outside);
    int *live = ARENA_NEW_N(L->a, int, n);
    bool *occ = ARENA_NEW_N(L->a, bool, n);
    for (int r = 0; r < pk->regs.n; r++) {
        Symbol *y = pk->regs.v[r].sym;
        if (y->kind == SYM_LET) continue;
        int first = 0;
        while (first < n && !op_touches(ops->v[first], &fx[first], y)) first++;
        if (first == n || symset_has(&outside, y) || !kill_before_read(L, ops, first, NULL, y, true)) {
            carried += pk->regs.v[r].regs;
            continue;
        }
        bool after = false; /* live after op i: a step-local value is dead at the end of the step */
        for (int i = n - 1; i >= 0; i--) {
            bool rd = symset_has(&fx[i].rd, y) || op_mma_reads(ops->v[i], &fx[i], y);
            occ[i] = rd || symset_has(&fx[i].wr, y) || after;
            after = (rd && !kills_first(L, ops->v[i], &fx[i], y)) || (after && !op_kills(L, ops->v[i], y));
        }
        for (int i = 0; i < n; i++)
            if (op_mma_reads(ops->v[i], &fx[i], y))
                for (int j = i; j < n; j++) occ[j] = true;
        for (int i = 0; i < n; i++)
            if (occ[i]) live[i] += pk->regs.v[r].regs;
    }
    for (int i = 0; i < n; i++)
        if (carried + live[i] > peak) peak = carried + live[i];
    return peak;
}

/* the estimate against the split (estimate_regs first) */
void check_reg_budget(Lower *L) {
    PlanKernel *pk = L->pk;
    bool reported = false;
    int cap = compile_reg_cap(pk);
    check_mma_regs(L, &pk->setup_ops, cap, &reported);
    check_mma_regs(L, &pk->compute_ops, cap, &reported);
    check_mma_regs(L, &pk->first_ops, cap, &reported);
    check_mma_regs(L, &pk->after_ops, cap, &reported);
    check_mma_regs(L, &pk->finish_ops, cap, &reported);
    if (reported) return;
    if (pk->reg_estimate <= pk->consumer_regs) return;
    if (!pk->no_pipeline) {
        /* the sum counts every value at once; the step may never hold them all */
        pk->reg_live_peak = step_live_peak(L) + pk->reg_lets + pk->reg_overhead;
        if (pk->reg_live_peak <= pk->consumer_regs) {
            lower_note(L, "the register values add up to about %d registers a consumer thread, over the %d it has, but "
                       "a step holds at most about %d at once (values written and read within a step count only "
                       "while live): left to ptxas, which spills if that is wrong",
                       pk->reg_estimate, pk->consumer_regs, pk->reg_live_peak);
            return;
        }
    }
    StrBuf b;
    sb_init(&b);
    for (int i = 0; i < pk->regs.n; i++)
        if (pk->regs.v[i].sym->kind != SYM_LET)
            sb_printf(&b, "%s%s %d", b.len ? " + " : "", pk->regs.v[i].sym->name, pk->regs.v[i].regs);
    if (pk->reg_lets) sb_printf(&b, " + temporaries %d", pk->reg_lets);
    diag_error(L->d, L->sk->consumers_span.file >= 0 ? L->sk->consumers_span : L->sk->k->name_span,
               "register budget: each consumer thread needs about %d registers (%s + overhead %d)%s but "
               "setmaxnreg gives it %d; use smaller tiles or more consumer warpgroups",
               pk->reg_estimate, b.s ? b.s : "", pk->reg_overhead,
               pk->reg_live_peak && pk->reg_live_peak < pk->reg_estimate
                   ? arena_printf(L->a, ", at most about %d of them live at once in a step,", pk->reg_live_peak)
                   : "",
               pk->consumer_regs);
    sb_free(&b);
}

/* A statement the plan surrounds with named barriers of every consumer warpgroup (a shared tile
 * written from registers, a relayout through scratch memory) cannot run under a condition on wg:
 * the warpgroups that skip it never reach its barriers, and the block deadlocks (sync() is
 * rejected the same way in sema). Reported at the statement. */
static void wg_barriers(Lower *L, const POpList *ops, int wg_depth, Span cond, const char *why, bool *reported) {
    PlanKernel *pk = L->pk;
    for (int i = 0; i < ops->n && !*reported; i++) {
        const POp *o = ops->v[i];
        if (o->kind == POP_IF || o->kind == POP_FOR) {
            bool w = o->kind == POP_IF ? px_mentions_wg(o->cond) : px_mentions_wg(o->lo) || px_mentions_wg(o->hi);
            Span sp = w ? (o->kind == POP_IF ? o->cond->span : o->lo->span) : cond;
            /* why pass_wg_bars.c left the if's barriers inside it */
            const char *wy = w && o->kind == POP_IF && o->note ? o->note : why;
            wg_barriers(L, &o->then_ops, wg_depth + w, sp, wy, reported);
            wg_barriers(L, &o->else_ops, wg_depth + w, sp, wy, reported);
            continue;
        }
        if (o->kind != POP_BAR || !wg_depth || o->bar < 0 || o->bar >= pk->nbars.n) continue;
        if (pk->nbars.v[o->bar].threads <= 128) continue;
        Span at = cond;
        for (int j = i + 1; j < ops->n; j++)
            if (ops->v[j]->st) {
                at = ops->v[j]->st->span;
                break;
            }
        diag_error(L->d, at,
                   "this statement meets every consumer warpgroup at a barrier (%s), but it runs under a condition on wg: "
                   "the warpgroups that skip it never reach the barrier and the block deadlocks; move it out of the if",
                   o->note ? o->note : pk->nbars.v[o->bar].why);
        if (why)
            diag_note(L->d, cond, "the condition on wg (the barriers cannot move out of the if, around the whole of it: %s)", why);
        else
            diag_note(L->d, cond, "the condition on wg");
        *reported = true;
    }
}

void check_wg_barriers(Lower *L) {
    PlanKernel *pk = L->pk;
    bool reported = false;
    wg_barriers(L, &pk->setup_ops, 0, L->sk->k->name_span, NULL, &reported);
    wg_barriers(L, &pk->step_ops, 0, L->sk->k->name_span, NULL, &reported);
    wg_barriers(L, &pk->finish_ops, 0, L->sk->k->name_span, NULL, &reported);
}
