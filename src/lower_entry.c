/* lower_entry.c - an entry's plan (plan.h, PlanEntry): its statements as steps - host lets,
 * scratch allocations, kernel calls with their arguments in the callee launcher's order, and ifs,
 * of which those on params alone are decided here (only the branch taken is kept). The emitter
 * (emit_entry.c) writes the steps out as they stand. */
#include <string.h>

#include "plan.h"
#include "sema.h"

static const PlanKernel *plan_kernel_of(const Plan *p, const SemaKernel *sk) {
    for (int i = 0; i < p->kernels.n; i++)
        if (p->kernels.v[i]->sk == sk) return p->kernels.v[i];
    return NULL;
}

typedef struct LE {
    Arena *a;
    const SemaEntry *se;
    const Plan *plan;
    PlanEntry *pe;
} LE;

static void lower_steps(LE *x, const StmtList *l, PESteps *out);

/* does e read the predefined sms */
static bool mentions_sms(const Expr *e) {
    if (!e) return false;
    switch (e->kind) {
    case EX_NAME: return e->sym && e->sym->kind == SYM_BUILTIN && e->sym->builtin == BI_SMS;
    case EX_CALL:
        for (int i = 0; i < e->u.call.nargs; i++)
            if (mentions_sms(e->u.call.args[i])) return true;
        return false;
    case EX_BINARY: return mentions_sms(e->u.bin.l) || mentions_sms(e->u.bin.r);
    case EX_UNARY: return mentions_sms(e->u.un.e);
    case EX_COND: return mentions_sms(e->u.cond.c) || mentions_sms(e->u.cond.a) || mentions_sms(e->u.cond.b);
    default: return false;
    }
}

/* the plan's tree of e, noting a read of sms */
static PExpr *host_px(LE *x, const Expr *e) {
    x->pe->uses_sms |= mentions_sms(e);
    return px_from_ast(x->a, e);
}

static PEStep *step(LE *x, PEStepKind k, const Stmt *st) {
    PEStep *s = ARENA_NEW(x->a, PEStep);
    s->kind = k;
    s->span = st->span;
    return s;
}

static PEStep *lower_call(LE *x, const Stmt *st) {
    const SemaCall *c = st->u.expr.call;
    const SemaKernel *ck = c->callee;
    PEStep *s = step(x, PE_CALL, st);
    s->name = ck->k->name;
    s->callee = plan_kernel_of(x->plan, ck);
    for (int i = 0; i < ck->k->nargs; i++) {
        const Arg *ka = &ck->k->args[i];
        const Expr *ce = c->args[i];
        if (!ka->ts.ndims) {
            vec_push(x->a, &s->scalar_values, host_px(x, ce));
            continue;
        }
        PETensor t = {.name = ce->sym->name, .trans = ce->kind == EX_TRANSPOSE, .scratch = ce->sym->index < 0};
        const TypeSpec *ts = entry_shape(x->se, ce->sym);
        t.rank = ts->ndims;
        for (int d = 0; d < ts->ndims && d < 4; d++) t.dims[d] = host_px(x, ts->dims[d]);
        vec_push(x->a, &s->tensors, t);
    }
    for (int i = 0; i < ck->dims.n; i++) vec_push(x->a, &s->dim_values, host_px(x, c->dims[i]));
    for (int i = 0; i < c->checks.n; i++)
        vec_push(x->a, &s->checks, ((PECheck){host_px(x, c->checks.v[i].a), host_px(x, c->checks.v[i].b),
                                              c->checks.v[i].why}));
    return s;
}

static void lower_steps(LE *x, const StmtList *l, PESteps *out) {
    for (int i = 0; i < l->n; i++) {
        const Stmt *st = l->v[i];
        PEStep *s = NULL;
        switch (st->kind) {
        case ST_LET:
            s = step(x, PE_LET, st);
            s->name = st->u.let.sym->name;
            s->value = host_px(x, st->u.let.e);
            break;
        case ST_SCRATCH: {
            const TypeSpec *ts = st->u.scratch.ts;
            s = step(x, PE_SCRATCH, st);
            s->name = st->u.scratch.sym->name;
            s->dt = ts->dt;
            s->rank = ts->ndims;
            for (int d = 0; d < ts->ndims && d < 4; d++) s->dims[d] = host_px(x, ts->dims[d]);
            x->pe->nscratch++;
            break;
        }
        case ST_EXPR: s = lower_call(x, st); break;
        case ST_IF: {
            const Expr *c = st->u.if_.cond;
            s = step(x, PE_IF, st);
            s->value = host_px(x, c);
            if (c->is_const) {
                s->decided = true;
                s->taken = c->cval != 0;
                lower_steps(x, s->taken ? &st->u.if_.then_s : &st->u.if_.else_s, &s->then_s);
                if (!s->then_s.n) s = NULL;  /* nothing to run: only the note below stays */
                vec_push(x->a, &x->pe->notes,
                         arena_printf(x->a, "if (%s) %s at compile time: %s", ast_expr_str(x->a, c), c->cval ? "holds" : "fails",
                                      !s ? "no step" : c->cval ? "only its then branch is kept" : "only its else branch is kept"));
            } else {
                lower_steps(x, &st->u.if_.then_s, &s->then_s);
                lower_steps(x, &st->u.if_.else_s, &s->else_s);
            }
            break;
        }
        case ST_ASSIGN: case ST_FOR: break;  /* not in entries (sema) */
        }
        if (s) vec_push(x->a, out, s);
    }
}

PlanEntry *lower_entry(Arena *a, const SemaEntry *se, const Plan *plan) {
    PlanEntry *pe = ARENA_NEW(a, PlanEntry);
    pe->name = se->sk->k->name;
    pe->sk = se->sk;
    for (int i = 0; i < se->sk->args.n; i++) {
        const Arg *g = se->sk->args.v[i];
        PExpr **dims = NULL;
        if (g->ts.ndims) {
            dims = ARENA_NEW_N(a, PExpr *, g->ts.ndims);
            for (int d = 0; d < g->ts.ndims; d++) dims[d] = px_from_ast(a, g->ts.dims[d]);
        }
        vec_push(a, &pe->arg_dims, dims);
    }
    LE x = {.a = a, .se = se, .plan = plan, .pe = pe};
    lower_steps(&x, &se->sk->k->body, &pe->body);
    if (pe->nscratch)
        vec_push(a, &pe->notes, arena_printf(a, "%d scratch tensor%s: allocated on the stream (cudaMallocAsync) where "
                                             "declared, freed on the stream when its block ends, after the kernels queued before (cudaFreeAsync)",
                                             pe->nscratch, pe->nscratch > 1 ? "s" : ""));
    return pe;
}
