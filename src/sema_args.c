/* sema_args.c - the arguments of a kernel or an entry: tensors (their dimensions, declaring the
 * run-time ones in order of first appearance), scalars, attributes. Part of the semantic checks
 * (sema_int.h). */
#include <inttypes.h>
#include <string.h>

#include "sema_int.h"

void check_args_of(Sema *s, Kernel *k) {
    SemaKernel *sk = s->sk;
    for (int i = 0; i < k->nargs; i++) {
        Arg *a = &k->args[i];
        vec_push(s->a, &sk->args, a);
        TypeSpec *ts = &a->ts;
        if (ts->ndims == 0) {
            Symbol *y = new_sym(s, SYM_SCALAR, a->name, a->span);
            a->sym = y;
            y->index = sk->scalars.n;
            if (a->mode != ARG_IN) diag_error(s->d, a->span, "scalar argument '%s' must be 'in'", a->name);
            if (ts->dt != DT_FP32 && ts->dt != DT_I32)
                diag_error(s->d, ts->span, "scalar arguments are fp32 or i32, not %s", dtype_name[ts->dt]);
            y->ty = ts->dt == DT_I32 ? ty_int() : ty_float();
            vec_push(s->a, &sk->scalars, y);
            declare(s, y);
            continue;
        }
        Symbol *y = new_sym(s, SYM_TENSOR, a->name, a->span);
        a->sym = y;
        y->index = i;
        y->ty = (Type){.kind = TY_TENSOR, .dt = ts->dt, .space = MS_GLOBAL, .ndims = ts->ndims};
        if (ts->ndims > 4) diag_error(s->d, ts->span, "tensors have at most 4 dimensions; '%s' has %d", a->name, ts->ndims);
        for (int j = 0; j < ts->nattrs; j++) {
            if (!strcmp(ts->attrs[j], "zeroed")) {
                if (a->mode == ARG_IN) diag_error(s->d, ts->attr_spans[j], "'zeroed' applies to out and inout tensors");
            } else {
                diag_error(s->d, ts->attr_spans[j], "unknown tensor attribute '%s' (expected 'zeroed')", ts->attrs[j]);
            }
        }
        for (int j = 0; j < ts->ndims; j++) {
            Expr *de = ts->dims[j];
            if (de->kind == EX_NAME) {
                Symbol *old = lookup(s, de->u.name);
                if (old && old->kind == SYM_PARAM) {
                    check_expr(s, de);
                    if (de->cval <= 0) diag_error(s->d, de->span, "dimension %s = %" PRId64 " must be positive", de->u.name, de->cval);
                    continue;
                }
                if (old && old->kind == SYM_DIM) {
                    de->sym = old;
                    de->ty = ty_int();
                    continue;
                }
                if (old) {
                    diag_error(s->d, de->span, "'%s' is a %s, not a dimension", de->u.name, symkind_desc(old->kind));
                    continue;
                }
                Symbol *dm = new_sym(s, SYM_DIM, de->u.name, de->span);
                dm->ty = ty_int();
                dm->index = sk->dims.n;
                de->sym = dm;
                de->ty = ty_int();
                vec_push(s->a, &sk->dims, dm);
                declare(s, dm);
            } else {
                int64_t v;
                if (require_const_int(s, de, "a tensor dimension", &v) && v <= 0)
                    diag_error(s->d, de->span, "dimension %" PRId64 " must be positive", v);
            }
        }
        vec_push(s->a, &sk->tensors, y);
        declare(s, y);
    }
}
