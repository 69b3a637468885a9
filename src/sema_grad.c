/* sema_grad.c - `grad FWD = K1, K2, ...;`: the kernels that compute FWD's gradients, in order.
 * Their arguments bind by name: FWD's inputs (tensors and scalars), FWD's outputs, d<output> (the
 * gradient that arrives for an output, of the output's dtype and shape), and the outputs of earlier
 * kernels of the chain. An output d<input> of the chain is the gradient of FWD's input <input> (of
 * its shape; converted to its dtype). The torch module of --emit=torch registers the chain as
 * FWD's backward (templates/tkc_torch_runtime.py). Part of the semantic checks (sema_int.h). */
#include <string.h>

#include "sema_int.h"

typedef enum { B_INPUT, B_OUTPUT, B_GRAD, B_CHAIN } BindKind;

typedef struct Bound {
    const char *name;
    const Arg *arg;     /* the argument that defines it (for d<output>: the output) */
    BindKind kind;
    const char *kernel; /* where it comes from */
} Bound;
typedef Vec(Bound) Bounds;

static const Bound *bound(const Bounds *env, const char *name) {
    for (int i = 0; i < env->n; i++)
        if (!strcmp(env->v[i].name, name)) return &env->v[i];
    return NULL;
}

static const char *spec_str(Sema *s, const Arg *a) {
    if (!a->ts.ndims) return arena_printf(s->a, "a %s scalar", dtype_name[a->ts.dt]);
    return arena_printf(s->a, "%s with %d dimensions", dtype_name[a->ts.dt], a->ts.ndims);
}

static bool same_kind(const Arg *a, const Arg *b, bool any_dtype) {
    return (a->ts.ndims == 0) == (b->ts.ndims == 0) && a->ts.ndims == b->ts.ndims && (any_dtype || a->ts.dt == b->ts.dt);
}

static void check_grad(Sema *s, const GradDecl *g, SemaResult *out) {
    SemaGrad sg = {.decl = g, .fwd = sema_kernel_named(out, g->fwd)};
    if (!sg.fwd) {
        diag_error(s->d, g->fwd_span, "grad: no kernel named '%s'", g->fwd);
        return;
    }
    if (sg.fwd->left_out) {
        diag_error(s->d, g->fwd_span, "grad: %s", left_out_why(s, sg.fwd));
        return;
    }
    for (int i = 0; i < out->grads.n; i++)
        if (out->grads.v[i].fwd == sg.fwd) {
            diag_error(s->d, g->fwd_span, "kernel '%s' has two grad declarations", g->fwd);
            diag_note(s->d, out->grads.v[i].decl->fwd_span, "the first is here");
            return;
        }
    Bounds env = {0};
    const Kernel *fk = sg.fwd->k;
    for (int i = 0; i < fk->nargs; i++) {
        const Arg *a = &fk->args[i];
        if (a->mode == ARG_INOUT) {
            diag_error(s->d, a->span, "'%s' of '%s' is inout: a kernel with inout arguments cannot be differentiated (its "
                       "backward would need the value before the kernel wrote it)", a->name, fk->name);
            return;
        }
        vec_push(s->a, &env, ((Bound){a->name, a, a->mode == ARG_OUT ? B_OUTPUT : B_INPUT, fk->name}));
        if (a->mode == ARG_OUT)
            vec_push(s->a, &env, ((Bound){arena_printf(s->a, "d%s", a->name), a, B_GRAD, fk->name}));
    }
    for (int c = 0; c < g->nchain; c++) {
        const Expr *ce = g->chain[c];
        if (ce->kind != EX_NAME) {
            diag_error(s->d, ce->span, "grad %s = ...: name the kernels that compute the gradients, in order", g->fwd);
            return;
        }
        /* a step of the backward is a kernel or an entry (which runs kernels, chosen by params or
         * at run time: attn_bwd.tk's attn_bwd_main) */
        SemaKernel *ck = sema_kernel_named(out, ce->u.name);
        for (int e = 0; !ck && e < out->entries.n; e++)
            if (!strcmp(out->entries.v[e]->sk->k->name, ce->u.name)) ck = out->entries.v[e]->sk;
        if (!ck) {
            diag_error(s->d, ce->span, "grad %s: no kernel or entry named '%s'", g->fwd, ce->u.name);
            return;
        }
        if (ck->left_out) {
            diag_error(s->d, ce->span, "grad %s: %s", g->fwd, left_out_why(s, ck));
            return;
        }
        if (ck == sg.fwd) {
            diag_error(s->d, ce->span, "grad %s: the kernel cannot be part of its own backward", g->fwd);
            return;
        }
        for (int j = 0; j < sg.chain.n; j++)
            if (sg.chain.v[j] == ck) {
                diag_error(s->d, ce->span, "grad %s: '%s' appears twice in the backward", g->fwd, ce->u.name);
                return;
            }
        vec_push(s->a, &sg.chain, ck);
        const Kernel *k = ck->k;
        for (int i = 0; i < k->nargs; i++) {
            const Arg *a = &k->args[i];
            if (a->mode == ARG_OUT) continue;
            if (a->mode == ARG_INOUT) {
                diag_error(s->d, a->span, "'%s' of '%s' is inout; the kernels of a backward take inputs and write "
                           "outputs", a->name, k->name);
                return;
            }
            const Bound *b = bound(&env, a->name);
            if (!b) {
                diag_error(s->d, a->span,
                           "'%s' of '%s' has no value in the backward of '%s': an argument of a backward kernel is an "
                           "input or output of '%s', d<output> (the gradient of an output), or an output of an "
                           "earlier kernel of the backward",
                           a->name, k->name, g->fwd, g->fwd);
                return;
            }
            if (!same_kind(a, b->arg, false)) {
                diag_error(s->d, a->span, "'%s' of '%s' is %s, but %s", a->name, k->name, spec_str(s, a),
                           b->kind == B_GRAD ? arena_printf(s->a, "the gradient of '%s' is %s", b->arg->name, spec_str(s, b->arg))
                                             : arena_printf(s->a, "'%s' of '%s' is %s", a->name, b->kernel, spec_str(s, b->arg)));
                return;
            }
        }
        for (int i = 0; i < k->nargs; i++) {
            const Arg *a = &k->args[i];
            if (a->mode != ARG_OUT) continue;
            const Bound *b = bound(&env, a->name);
            if (b) {
                diag_error(s->d, a->span, "'%s' of '%s' is already %s in the backward of '%s'; the names along a "
                           "backward are unique", a->name, k->name,
                           b->kind == B_CHAIN ? arena_printf(s->a, "an output of '%s'", b->kernel)
                           : b->kind == B_GRAD ? "the gradient of an output" : "an argument of the forward kernel", g->fwd);
                return;
            }
            vec_push(s->a, &env, ((Bound){a->name, a, B_CHAIN, k->name}));
        }
    }
    /* the gradients: chain outputs d<input> */
    int grads = 0;
    for (int i = 0; i < fk->nargs; i++) {
        const Arg *a = &fk->args[i];
        if (a->mode != ARG_IN || !a->ts.ndims) continue;
        const Bound *b = bound(&env, arena_printf(s->a, "d%s", a->name));
        if (!b || b->kind != B_CHAIN) continue;
        if (!same_kind(b->arg, a, true)) {
            diag_error(s->d, b->arg->span, "'%s' of '%s' is %s, but it is the gradient of '%s', %s", b->arg->name, b->kernel,
                       spec_str(s, b->arg), a->name, spec_str(s, a));
            return;
        }
        grads++;
    }
    if (!grads) {
        diag_error(s->d, g->span, "the backward of '%s' computes no gradient: a kernel of it writes d<input> for an "
                   "input tensor of '%s' (dQ for Q)", g->fwd, g->fwd);
        return;
    }
    vec_push(s->a, &out->grads, sg);
}

void check_grads(Sema *s, SemaResult *out) {
    for (int i = 0; i < s->prog->grads.n; i++) check_grad(s, s->prog->grads.v[i], out);
}
