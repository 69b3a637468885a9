/* sema.c - semantic checks of a parsed .tk program (see sema.h and docs/language.md): the entry
 * (sema_run) and the kernels (declarations, arguments, options, grid and pipeline, kernel lets).
 * Expressions are checked in sema_expr.c, statements in sema_stmt.c, names and types live in
 * sema_scope.c; sema_int.h is their shared state.
 * It resolves names, computes the type and shape of every expression, folds compile-time
 * integers, and enforces the memory-space and block rules of the LCSF template. It reports as
 * many independent errors as it can and marks failed subtrees TY_ERROR to avoid cascades. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_cache.h"
#include "sema_int.h"

const char *const move_name[] = {
#define X(e, s, m) s,
    TK_MOVES(X)
#undef X
};

/* ---- kernels -------------------------------------------------------------------------------- */

/* rowwise: a register value of a rowwise kernel, whose shape the row layout checks (any positive
 * size up to 16384: the plan asks for whole passes of the warps and 8-column chunks) */
static bool check_typespec_dims(Sema *s, TypeSpec *ts, int *dims, int maxd, const char *what, bool rowwise) {
    if (ts->ndims < 1 || ts->ndims > maxd) {
        diag_error(s->d, ts->span, "a %s has 1 or %d dimensions, not %d", what, maxd, ts->ndims);
        return false;
    }
    bool ok = true;
    for (int i = 0; i < ts->ndims; i++) {
        int64_t v;
        if (!require_const_int(s, ts->dims[i], "a tile dimension", &v)) {
            ok = false;
            continue;
        }
        if (v <= 0 || (v % 16 && !rowwise)) {
            diag_error(s->d, ts->dims[i]->span, "tile dimensions must be positive multiples of 16; got %" PRId64, v);
            ok = false;
            continue;
        }
        if (v > (rowwise ? 16384 : 4096)) {
            diag_error(s->d, ts->dims[i]->span, "tile dimension %" PRId64 " is larger than any block can hold", v);
            ok = false;
            continue;
        }
        dims[i] = (int)v;
    }
    return ok;
}

static void check_decl(Sema *s, Decl *d) {
    SemaKernel *sk = s->sk;
    Symbol *y = new_sym(s, d->space == MS_SHARED ? SYM_SHARED : SYM_REG, d->name, d->span);
    d->sym = y;
    y->ty = ty_err();
    declare(s, y);
    int dims[2] = {0, 0};
    if (!check_typespec_dims(s, &d->ts, dims, 2, d->space == MS_SHARED ? "shared tile" : "register tile",
                             d->space == MS_REG && sk->rowwise))
        return;
    if (d->ts.dt == DT_I32) {
        diag_error(s->d, d->ts.span, "tiles hold bf16, fp16 or fp32 values, not i32");
        return;
    }
    VecLayout layout = VL_NONE;
    bool per_wg = false, cplx = false, rowwise = false, partial = false;
    Span partial_span = d->ts.span;
    Span rowwise_span = d->ts.span;
    for (int i = 0; i < d->ts.nattrs; i++) {
        const char *at = d->ts.attrs[i];
        if ((!strcmp(at, "per_row") && layout == VL_COL) || (!strcmp(at, "per_col") && layout == VL_ROW)) {
            diag_error(s->d, d->ts.attr_spans[i], "a vector is either per_row or per_col, not both");
            return;
        }
        if (!strcmp(at, "per_row")) layout = VL_ROW;
        else if (!strcmp(at, "per_col")) layout = VL_COL;
        else if (!strcmp(at, "per_wg")) per_wg = true;
        else if (!strcmp(at, "partial")) {
            partial = per_wg = true;  /* held whole by every warpgroup, as per_wg */
            partial_span = d->ts.attr_spans[i];
        } else if (!strcmp(at, "complex")) cplx = true;
        else if (!strcmp(at, "rowwise")) {
            rowwise = true;
            rowwise_span = d->ts.attr_spans[i];
        } else {
            diag_error(s->d, d->ts.attr_spans[i],
                       "unknown attribute '%s' (expected per_row, per_col, per_wg, partial, rowwise or complex)", at);
            return;
        }
    }
    if (d->space == MS_SHARED && (per_wg || layout != VL_NONE || rowwise)) {
        diag_error(s->d, d->ts.span, "per_row, per_col, per_wg, partial and rowwise describe register values; shared tiles "
                   "are whole");
        return;
    }
    if (partial && (d->ts.ndims != 2 || d->ts.dt != DT_FP32 || cplx || rowwise)) {
        diag_error(s->d, partial_span, "partial describes an fp32 register tile whose warpgroup copies are parts of one sum "
                   "(not a vector, a 16-bit, complex or rowwise tile)");
        return;
    }
    if (rowwise && (d->ts.ndims != 2 || per_wg || cplx)) {
        diag_error(s->d, rowwise_span,
                   "rowwise describes a register tile whose rows the consumer warps share out (not a vector, per_wg "
                   "or complex tile)");
        return;
    }

    if (d->ts.ndims == 1) {
        if (d->space == MS_REG && layout == VL_NONE) {
            diag_error(s->d, d->ts.span,
                       "a register vector needs a layout: 'per_row' (one value per tile row) or 'per_col'");
            return;
        }
        y->ty = ty_vec(d->space, d->ts.dt, dims[0], layout);
    } else {
        if (layout != VL_NONE) {
            diag_error(s->d, d->ts.span, "per_row and per_col apply to vectors (one dimension)");
            return;
        }
        y->ty = ty_tile(d->space, d->ts.dt, dims[0], dims[1]);
    }
    y->ty.per_wg = per_wg;
    y->ty.partial = partial;
    y->ty.complex = cplx;
    y->ty.rowwise = rowwise;
    if (d->space == MS_SHARED) {
        y->index = sk->shared.n;
        vec_push(s->a, &sk->shared, y);
    } else {
        y->index = sk->regs.n;
        vec_push(s->a, &sk->regs, y);
    }
}

static bool opt_int(Sema *s, Option *o, int64_t lo, int64_t hi, int64_t *out, const char *what) {
    if (!o->value) {
        /* a bare name turns an on/off option on; every other option needs its value */
        *out = 1;
        if (lo != 0 || hi != 1) {
            diag_error(s->d, o->span, "option '%s' needs a value (%s = ...)", o->key, o->key);
            return false;
        }
        return true;
    }
    int64_t v;
    if (!require_const_int(s, o->value, what, &v)) return false;
    if (v < lo || v > hi) {
        diag_error(s->d, o->value->span, "%s = %" PRId64 " is out of range [%" PRId64 ", %" PRId64 "]", o->key, v, lo, hi);
        return false;
    }
    *out = v;
    return true;
}

static void unknown_option(Sema *s, Option *o, const char *const *known, int n, const char *where) {
    const char *best = NULL;
    int bestd = 3;
    for (int i = 0; i < n; i++) {
        int dd = edit_distance(o->key, known[i]);
        if (dd < bestd) bestd = dd, best = known[i];
    }
    if (best) diag_error(s->d, o->key_span, "unknown %s option '%s'; did you mean '%s'?", where, o->key, best);
    else diag_error(s->d, o->key_span, "unknown %s option '%s'", where, o->key);
}

static void check_grid(Sema *s, KItem *it) {
    SemaKernel *sk = s->sk;
    if (sk->grid) {
        diag_error(s->d, it->span, "a kernel has one grid statement");
        diag_note(s->d, sk->grid->span, "the first one is here");
        return;
    }
    sk->grid = it;
    if (it->u.grid.naxes > 3) diag_error(s->d, it->span, "a grid has at most 3 axes, this one has %d", it->u.grid.naxes);
    for (int i = 0; i < it->u.grid.naxes; i++) {
        Axis *ax = &it->u.grid.axes[i];
        for (int j = 0; j < i; j++)
            if (!strcmp(it->u.grid.axes[j].name, ax->name)) diag_error(s->d, ax->span, "grid axis '%s' appears twice", ax->name);
        if (!strcmp(ax->name, "T"))
            diag_error(s->d, ax->span, "a grid axis cannot be named 'T': block.T would read as a transpose");
        Type t = check_expr(s, ax->extent);
        if (t.kind != TY_ERROR && (t.kind != TY_INT || t.varying))
            diag_error(s->d, ax->extent->span, "a grid extent must be an integer, not %s", type_str(s, t));
        if (ax->extent->is_const && ax->extent->cval <= 0)
            diag_error(s->d, ax->extent->span, "a grid extent must be positive, not %" PRId64, ax->extent->cval);
    }
    static const char *const known[] = {"persistent", "order", "cluster", "blocks_per_sm", "row_values"};
    for (int i = 0; i < it->u.grid.opts.n; i++) {
        Option *o = &it->u.grid.opts.v[i];
        if (!strcmp(o->key, "persistent")) {
            int64_t v;
            if (opt_int(s, o, 0, 1, &v, "persistent")) sk->persistent = v;
        } else if (!strcmp(o->key, "blocks_per_sm")) {
            int64_t v;
            if (opt_int(s, o, 0, 16, &v, "blocks_per_sm")) sk->blocks_per_sm = (int)v; /* 0: the plan decides */
            sk->blocks_span = o->span;
        } else if (!strcmp(o->key, "row_values")) {
            int64_t v;
            sk->row_values_span = o->span;
            if (opt_int(s, o, 0, 128, &v, "row_values")) { /* 0: the plan's default */
                if (v & (v - 1) || (v && v < 8))
                    diag_error(s->d, o->value->span, "row_values = %" PRId64 " is not 8, 16, 32, 64 or 128 (or 0: the default)",
                               v);
                else
                    sk->row_values = (int)v;
            }
        } else if (!strcmp(o->key, "cluster")) {
            int64_t v;
            if (opt_int(s, o, 1, 2, &v, "the cluster size")) sk->cluster = (int)v;
            sk->cluster_span = o->span;
        } else if (!strcmp(o->key, "order")) {
            Expr *v = o->value;
            if (!v) {
                diag_error(s->d, o->span, "order needs a value: row_major, super_m(G) or super_n(G)");
                continue;
            }
            if (v->kind == EX_NAME && !strcmp(v->u.name, "row_major")) {
                sk->order = ORDER_ROW_MAJOR;
            } else if (v->kind == EX_CALL && (!strcmp(v->u.call.fn, "super_m") || !strcmp(v->u.call.fn, "super_n")) &&
                       v->u.call.nargs == 1) {
                int64_t g;
                if (require_const_int(s, v->u.call.args[0], "the group size of super_m/super_n", &g)) {
                    if (g < 1 || g > 64) diag_error(s->d, v->u.call.args[0]->span, "group size %" PRId64 " is out of range [1, 64]", g);
                    sk->order = v->u.call.fn[6] == 'm' ? ORDER_SUPER_M : ORDER_SUPER_N;
                    sk->order_group = (int)g;
                }
            } else {
                diag_error(s->d, v->span, "unknown block order; expected row_major, super_m(G) or super_n(G)");
            }
        } else {
            unknown_option(s, o, known, (int)(sizeof known / sizeof known[0]), "grid");
        }
    }
    if (sk->order != ORDER_ROW_MAJOR && it->u.grid.naxes < 2)
        diag_error(s->d, it->span, "super_m/super_n orders need a grid of at least two axes");
    /* a folded axis pairs neighbouring work tiles: it must vary fastest, in row-major order */
    for (int i = 0; i < it->u.grid.naxes; i++) {
        Axis *ax = &it->u.grid.axes[i];
        if (!ax->folded) continue;
        if (i != it->u.grid.naxes - 1)
            diag_error(s->d, ax->mod_span, "only the last grid axis (the one that varies fastest) can be folded, not '%s'",
                       ax->name);
        else if (sk->order != ORDER_ROW_MAJOR)
            diag_error(s->d, ax->mod_span, "a folded axis needs the row_major order: super_m/super_n walk '%s' in strips",
                       ax->name);
        else if (sk->cluster > 1)
            sk->cluster_axis = i;  /* a cluster takes the pair of tiles the fold puts together */
    }
}

static void check_pipeline(Sema *s, KItem *it) {
    SemaKernel *sk = s->sk;
    if (sk->pipe) {
        diag_error(s->d, it->span, "a kernel has one pipeline statement");
        diag_note(s->d, sk->pipe->span, "the first one is here");
        return;
    }
    sk->pipe = it;
    Type t = check_expr(s, it->u.pipe.trips);
    if (t.kind != TY_ERROR && (t.kind != TY_INT || t.varying))
        diag_error(s->d, it->u.pipe.trips->span, "the pipeline's trip count must be an integer, not %s", type_str(s, t));
    Symbol *y = new_sym(s, SYM_LOOPVAR, it->u.pipe.var, it->u.pipe.var_span);
    y->ty = ty_int();
    it->u.pipe.sym = y;
    sk->loopvar = y;
    declare(s, y);
    static const char *const known[] = {"stages",        "consumers",     "overlap", "pingpong", "lookahead",
                                        "producer_regs", "consumer_regs", "staging",  "setup_stages", "narrow_tail"};
    for (int i = 0; i < it->u.pipe.opts.n; i++) {
        Option *o = &it->u.pipe.opts.v[i];
        int64_t v;
        if (!strcmp(o->key, "stages")) {
            sk->stages_span = o->span;
            if (opt_int(s, o, 1, 8, &v, "the number of pipeline stages")) sk->stages = (int)v;
        } else if (!strcmp(o->key, "consumers")) {
            sk->consumers_span = o->span;
            if (opt_int(s, o, 1, 3, &v, "the number of consumer warpgroups")) sk->consumers = (int)v;
        } else if (!strcmp(o->key, "overlap")) {
            if (opt_int(s, o, 0, 1, &v, "overlap")) sk->overlap = v;
        } else if (!strcmp(o->key, "pingpong")) {
            if (opt_int(s, o, 0, 1, &v, "pingpong")) sk->pingpong = v;
        } else if (!strcmp(o->key, "lookahead")) {
            if (opt_int(s, o, 0, 1, &v, "lookahead")) sk->lookahead = v;
        } else if (!strcmp(o->key, "staging")) {
            if (opt_int(s, o, 0, 1, &v, "staging")) sk->staging = v;
        } else if (!strcmp(o->key, "narrow_tail")) {
            if (opt_int(s, o, 0, 1, &v, "narrow_tail")) sk->narrow_tail = v;
        } else if (!strcmp(o->key, "setup_stages")) {
            if (opt_int(s, o, 1, 2, &v, "setup_stages (copies of the setup tiles)")) sk->setup_stages = (int)v;
        } else if (!strcmp(o->key, "producer_regs") || !strcmp(o->key, "consumer_regs")) {
            sk->regs_span = o->span;
            if (opt_int(s, o, 24, 256, &v, "a register count")) {
                if (v % 8) diag_error(s->d, o->value->span, "setmaxnreg takes multiples of 8; %s = %" PRId64, o->key, v);
                else if (o->key[0] == 'p') sk->producer_regs = (int)v;
                else sk->consumer_regs = (int)v;
            }
        } else {
            unknown_option(s, o, known, (int)(sizeof known / sizeof known[0]), "pipeline");
        }
    }
}

static void check_kernel_let(Sema *s, KItem *it) {
    s->kernel_let = true;
    Type t = check_expr(s, it->u.let.e);
    s->kernel_let = false;
    Symbol *y = new_sym(s, SYM_LET, it->u.let.name, it->u.let.name_span);
    y->init = it->u.let.e;
    it->u.let.sym = y;
    if (t.kind != TY_ERROR && !is_scalar(t)) {
        diag_error(s->d, it->u.let.e->span, "a kernel-level let names a scalar, not %s", type_str(s, t));
        t = ty_err();
    } else if (t.varying) {
        diag_error(s->d, it->u.let.e->span, "'row' and 'col' exist only in tile expressions");
        t = ty_err();
    }
    y->ty = t;
    y->is_const = it->u.let.e->is_const;
    y->cval = it->u.let.e->cval;
    y->fval = it->u.let.e->fval;
    vec_push(s->a, &s->sk->lets, it);
    declare(s, y);
}

static void check_kernel(Sema *s, Kernel *k) {
    SemaKernel *sk = ARENA_NEW(s->a, SemaKernel);
    sk->k = k;
    sk->stages = 2;
    sk->consumers = 1;
    sk->cluster = 1;
    sk->order_group = 1;
    sk->lookahead = true;
    sk->staging = true;
    sk->setup_stages = 1;
    sk->narrow_tail = true;
    s->sk = sk;
    int errors0 = s->d->nerrors;
    Scope ks;
    push_scope(s, &ks);
    check_args_of(s, k);
    if (k->when) {
        int64_t v;
        if (require_const_int(s, k->when, "a kernel's condition (if after its arguments)", &v)) sk->left_out = !v;
        if (sk->left_out) {
            /* like a discarded `if constexpr` branch: its arguments are checked (entries' calls
             * bind against them), its body need not make sense for these params */
            pop_scope(s);
            return;
        }
    }

    /* a kernel is rowwise when it declares a rowwise register tile: its register values take the
     * row layout's shapes, whatever order they are declared in */
    for (int i = 0; i < k->nitems; i++) {
        const KItem *it = k->items[i];
        if (it->kind != KI_DECL || it->u.decl.d->space != MS_REG) continue;
        const TypeSpec *ts = &it->u.decl.d->ts;
        for (int a = 0; a < ts->nattrs; a++)
            if (!strcmp(ts->attrs[a], "rowwise") && !sk->rowwise) {
                sk->rowwise = true;
                sk->rowwise_span = ts->attr_spans[a];
            }
    }
    /* declarations and the grid first, so blocks may use names declared below them */
    for (int i = 0; i < k->nitems; i++) {
        KItem *it = k->items[i];
        if (it->kind == KI_DECL) check_decl(s, it->u.decl.d);
    }
    /* one register layout per kernel */
    for (int i = 0; i < sk->regs.n && sk->rowwise; i++) {
        const Symbol *y = sk->regs.v[i];
        if (y->ty.kind == TY_TILE && !y->ty.rowwise) {
            diag_error(s->d, y->span,
                       "register tile '%s' is in the wgmma accumulator layout, but the kernel declares rowwise tiles; "
                       "the register tiles of a kernel share one layout: declare it rowwise too",
                       y->name);
            diag_note(s->d, sk->rowwise_span, "rowwise is declared here");
            break;
        }
    }
    for (int i = 0; i < k->nitems; i++) {
        KItem *it = k->items[i];
        if (it->kind == KI_GRID) check_grid(s, it);
    }
    if (!sk->grid) diag_error(s->d, k->name_span, "kernel '%s' has no grid statement (grid (x: N, ...);)", k->name);
    else
        for (int i = 0; i < sk->grid->u.grid.naxes; i++) {
            Axis *ax = &sk->grid->u.grid.axes[i];
            Symbol *y = new_sym(s, SYM_AXIS, ax->name, ax->span);
            y->ty = ty_int();
            y->index = i;
            ax->sym = y;
            vec_push(s->a, &sk->axes, ax);
        }
    /* lets, the pipeline and requirements in source order */
    for (int i = 0; i < k->nitems; i++) {
        KItem *it = k->items[i];
        switch (it->kind) {
        case KI_LET: check_kernel_let(s, it); break;
        case KI_PIPELINE: check_pipeline(s, it); break;
        case KI_REQUIRE: {
            Type t = check_expr(s, it->u.require.cond);
            const Expr *bad = not_on_host(it->u.require.cond, false);
            if (t.kind != TY_ERROR && bad) {
                diag_error(s->d, bad->span,
                           "a requirement is checked by the launcher before the kernel runs, so it can use only "
                           "dimensions, scalar arguments, params and literals");
                t = ty_err();
            }
            if (t.kind != TY_ERROR && (!is_intlike(t) || t.varying))
                diag_error(s->d, it->u.require.cond->span, "a requirement must be a condition, not %s", type_str(s, t));
            else if (t.kind != TY_ERROR && it->u.require.cond->is_const && !it->u.require.cond->cval)
                diag_error(s->d, it->u.require.cond->span, "this requirement is false for every input");
            vec_push(s->a, &sk->requires, it->u.require.cond);
            break;
        }
        case KI_BLOCK: {
            BlockKind bk = it->u.block.kind;
            if (sk->blocks[bk]) {
                diag_error(s->d, it->span, "a kernel has at most one %s block", block_name[bk]);
                diag_note(s->d, sk->blocks[bk]->span, "the first one is here");
            } else {
                sk->blocks[bk] = it;
            }
            break;
        }
        default: break;
        }
    }
    /* the blocks of a cluster issue their shared (multicast) loads together, step by step */
    if (sk->cluster > 1 && sk->pipe && sk->axes.n) {
        const Axis *ca = sk->axes.v[sk->cluster_axis];
        if (expr_depends_on(sk->pipe->u.pipe.trips, ca->sym))
            diag_error(s->d, sk->cluster_span,
                       "cluster = %d: the blocks of a cluster share their loads step by step, so they must run the same "
                       "number of steps, but the pipeline's trip count depends on block.%s",
                       sk->cluster, ca->name);
    }
    for (int b = 0; b < BK_COUNT; b++) {
        KItem *it = sk->blocks[b];
        if (!it) continue;
        if ((b == BK_LOAD || b == BK_COMPUTE || b == BK_STORE) && !sk->pipe)
            diag_error(s->d, it->span, "a %s block runs once per pipeline step, but the kernel has no pipeline statement",
                       block_name[b]);
    }
    if (sk->pipe && !sk->blocks[BK_COMPUTE] && !sk->blocks[BK_STORE])
        diag_error(s->d, sk->pipe->span, "the pipeline has no compute or store block to run");
    /* blocks in execution order: setup, load, compute, store, finish */
    s->assigned.n = 0;
    s->g2s.n = 0;
    s->g2s_bk.n = 0;
    for (int b = 0; b < BK_COUNT; b++) {
        KItem *it = sk->blocks[b];
        if (!it) continue;
        s->in_block = true;
        s->bk = (BlockKind)b;
        /* slices that read wg: one copy of their statements per consumer warpgroup, whose diagnostics
         * are reported once */
        bool copies = b != BK_LOAD && !sk->rowwise && sema_specialise_wg(s, &it->u.block.body);
        if (copies) diag_dedup_begin(s->d);
        Scope bs;
        push_scope(s, &bs);
        check_stmts(s, &it->u.block.body);
        pop_scope(s);
        if (copies) diag_dedup_end(s->d);
        s->in_block = false;
    }
    if (s->d->nerrors == errors0) {
        /* the coverage and bounds checks only report: a kernel checked clean already (another
         * variant of a dispatched program) is not checked again (check_cache.c) */
        sk->check_key = kernel_key(s->a, s->d, s->prog, k);
        if (!check_cache_has(CHECK_COVER, sk->check_key)) {
            int e0 = s->d->nerrors, w0 = s->d->nwarnings;
            check_outputs(s);
            if (s->sk->grid) check_bounds(s);
            if (s->d->nerrors == e0 && s->d->nwarnings == w0) check_cache_add(CHECK_COVER, sk->check_key);
        }
    }
    pop_scope(s);
}

/* ---- program -------------------------------------------------------------------------------- */

bool sema_run(Arena *a, Diag *d, Program *p, Define *defines, int ndefines, SemaResult *out) {
    int errors0 = d->nerrors;
    Sema s = {.a = a, .d = d, .prog = p};
    s.scope = &s.global;
    for (int i = 0; i < BI_COUNT; i++) {
        Symbol *y = new_sym(&s, SYM_BUILTIN, builtin_name[i], SPAN_NONE);
        y->builtin = i;
        s.builtin[i] = y;
        vec_push(a, &s.global.syms, y);
    }
    for (int i = 0; i < p->params.n; i++) {
        Param *pa = p->params.v[i];
        Symbol *y = new_sym(&s, SYM_PARAM, pa->name, pa->span);
        pa->sym = y;
        int64_t v = 0;
        bool ok = require_const_int(&s, pa->value, "a param's value", &v);
        for (int j = 0; j < ndefines; j++)
            if (!strcmp(defines[j].name, pa->name) && !defines[j].is_dtype) {
                defines[j].used = true;
                pa->overridden = true;
                pa->override_value = v = defines[j].value;
                ok = true;
            }
        if (ok && (v > INT32_MAX || v < INT32_MIN)) {
            diag_error(d, pa->value->span, "param %s = %" PRId64 " does not fit in 32 bits", pa->name, v);
            ok = false;
        }
        y->ty = ok ? ty_int() : ty_err();
        y->is_const = ok;
        y->cval = v;
        declare(&s, y);
    }
    for (int j = 0; j < ndefines; j++)
        if (!defines[j].used && !defines[j].is_dtype) {
            const TypeAlias *t = NULL;
            for (int i = 0; i < p->types.n; i++)
                if (!strcmp(p->types.v[i]->name, defines[j].name)) t = p->types.v[i];
            if (t)
                diag_error(d, SPAN_NONE, "-D %s=%" PRId64 ": '%s' is a type: give it an element type (bf16, fp16, fp32, ...)",
                           defines[j].name, defines[j].value, defines[j].name);
            else
                diag_error(d, SPAN_NONE, "-D %s: the program has no param named '%s'", defines[j].name, defines[j].name);
        }
    check_defs(&s);
    for (int i = 0; i < p->kernels.n; i++) {
        Kernel *k = p->kernels.v[i];
        for (int j = 0; j < i; j++)
            if (!strcmp(p->kernels.v[j]->name, k->name)) {
                diag_error(d, k->name_span, "redefinition of kernel '%s'", k->name);
                diag_note(d, p->kernels.v[j]->name_span, "the first definition is here");
            }
        check_kernel(&s, k);
        vec_push(a, &out->kernels, s.sk);
    }
    if (p->kernels.n == 0 && d->nerrors == errors0) diag_error(d, SPAN_NONE, "the program defines no kernel");
    if (d->nerrors == errors0) check_entries(&s, out);
    if (d->nerrors == errors0) check_grads(&s, out);
    if (d->nerrors == errors0) sema_names(&s, out);
    return d->nerrors == errors0;
}

bool define_parse(Arena *a, const char *s, Define *out) {
    const char *eq = strchr(s, '=');
    if (!eq || eq == s) return false;
    for (const char *p = s; p < eq; p++)
        if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (p > s && *p >= '0' && *p <= '9')))
            return false;
    out->is_dtype = false;
    out->value = 0;
    if (!dtype_from_name(eq + 1, &out->dtype)) {  /* NAME=DTYPE for a `type`, else NAME=INTEGER */
        char *end;
        errno = 0;
        long long v = strtoll(eq + 1, &end, 0);
        if (errno || *end || end == eq + 1 || v < -2147483647LL || v > 2147483647LL) return false;
        out->value = v;
    } else {
        out->is_dtype = true;
    }
    if (a) {
        out->name = arena_strndup(a, s, (size_t)(eq - s));
    } else {
        char *n = xstrdup(s);
        n[eq - s] = 0;
        out->name = n;
    }
    out->used = false;
    return true;
}
