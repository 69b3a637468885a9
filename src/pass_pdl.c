/* pass_pdl.c - programmatic dependent launch between the kernels of an entry. An entry queues
 * its kernels on one stream, so each starts only after the one before has ended and its blocks
 * have left the SMs; the launch of the next grid, its blocks' start and their prologue (barrier
 * set-up) sit in that gap. Launched with the programmatic-stream-serialization attribute, the next
 * kernel may start while the one before still runs, once every block of that one has signalled
 * (griddepcontrol.launch_dependents, which its blocks do as they start), and its threads wait for
 * the earlier grid to end and its writes to be visible (griddepcontrol.wait) before they touch
 * global memory. Plan-to-plan: it sets PEStep.pdl and the callees' pdl_wait / pdl_trigger.
 *
 * Preconditions, for a call step: the operation queued just before its launch is the kernel of
 * the call before it, which holds when
 *   - the two calls follow each other in one list of steps (lets between them are host
 *     arithmetic); not across a scratch allocation, the scratch frees at the end of a block, or
 *     into or out of a branch decided at run time;
 *   - the callee's launcher queues nothing before its kernel: no `zeroed` output (cleared on the
 *     stream first). A padded TMA copy, decided at run time, may still come between: then the
 *     attribute refers to that copy, and the wait keeps the launch correct.
 * A call where one fails is launched as before, and the entry's notes say why.
 *
 * A kernel with `zeroed` outputs is launched programmatically by its own launcher, always: the
 * clearing kernel before it (templates/tkc_ptx.cuh, zero) lets it launch as it starts, so its
 * launch and its blocks' start overlap the clearing, and it waits for the cleared outputs. */
#include "plan.h"
#include "util.h"

typedef struct PP {
    Arena *a;
    Plan *p;
    PlanEntry *pe;
} PP;

static PlanKernel *mutable_kernel(Plan *p, const PlanKernel *k) {
    for (int i = 0; i < p->kernels.n; i++)
        if (p->kernels.v[i] == k) return p->kernels.v[i];
    return NULL;
}

/* what the call passes for the callee's tensor argument g ("T.T") */
static const char *bound_tensor(Arena *a, const PEStep *s, const Arg *g) {
    const Kernel *k = s->callee->sk->k;
    for (int i = 0, t = 0; i < k->nargs; i++) {
        if (!k->args[i].ts.ndims) continue;
        if (&k->args[i] == g && t < s->tensors.n)
            return s->tensors.v[t].trans ? arena_printf(a, "%s.T", s->tensors.v[t].name) : s->tensors.v[t].name;
        t++;
    }
    return "?";
}

static bool has_scratch(const PESteps *l) {
    for (int i = 0; i < l->n; i++)
        if (l->v[i]->kind == PE_SCRATCH) return true;
    return false;
}

/* the steps of l after prev (the call whose kernel was queued last, or NULL); returns the call
 * queued last at the end of l, or NULL when something else was */
static PEStep *walk(PP *x, PESteps *l, PEStep *prev) {
    for (int i = 0; i < l->n; i++) {
        PEStep *s = l->v[i];
        switch (s->kind) {
        case PE_LET: break;
        case PE_SCRATCH: prev = NULL; break;
        case PE_CALL:
            if (prev && s->callee->zeroed.n) {
                vec_push(x->a, &x->pe->notes,
                         arena_printf(x->a, "%s is launched after %s ends, not programmatically: its launcher clears %s (%s) on "
                                      "the stream first (zeroed)", s->name, prev->name, s->callee->zeroed.v[0]->name,
                                      bound_tensor(x->a, s, s->callee->zeroed.v[0])));
            } else if (prev) {
                PlanKernel *k = mutable_kernel(x->p, s->callee), *pk = mutable_kernel(x->p, prev->callee);
                if (k && pk) {
                    s->pdl = true;
                    k->pdl_wait = k->pdl_entry = true;
                    pk->pdl_trigger = true;
                    vec_push(x->a, &x->pe->notes,
                             arena_printf(x->a, "%s is launched programmatically after %s (programmatic stream serialization): "
                                          "its blocks may start while %s's last blocks run, and wait for its results before "
                                          "they touch global memory", s->name, prev->name, prev->name));
                }
            }
            prev = s;
            break;
        case PE_IF:
            if (s->decided) {
                prev = walk(x, &s->then_s, prev);
                if (has_scratch(&s->then_s)) prev = NULL;  /* freed on the stream as the block ends */
            } else {
                walk(x, &s->then_s, NULL);
                walk(x, &s->else_s, NULL);
                prev = NULL;
            }
            break;
        }
    }
    return prev;
}

/* what the wait of a kernel launched programmatically does, for its notes */
#define WAIT_NOTE "every thread waits for that grid (griddepcontrol.wait) after the barriers are set up, before it touches global memory"

void plan_pdl(Arena *a, Plan *p) {
    for (int i = 0; i < p->entries.n; i++) {
        PP x = {.a = a, .p = p, .pe = p->entries.v[i]};
        walk(&x, &x.pe->body, NULL);
    }
    for (int i = 0; i < p->kernels.n; i++) {
        PlanKernel *k = p->kernels.v[i];
        if (k->zeroed.n) {
            k->pdl_wait = k->pdl_after_clear = true;
            vec_push(a, &k->notes, arena_printf(a, "programmatic dependent launch: the launcher clears %s%s with a kernel that "
                                                "lets this one launch as it starts, then launches this one programmatically; "
                                                WAIT_NOTE,
                                                k->zeroed.v[0]->name, k->zeroed.n > 1 ? " (and the other zeroed outputs)" : ""));
        }
        if (k->pdl_trigger)
            vec_push(a, &k->notes, "programmatic dependent launch: an entry launches a kernel right after this one that may "
                                   "start early, so every thread lets it launch (griddepcontrol.launch_dependents) as its "
                                   "block starts");
        if (k->pdl_entry)
            vec_push(a, &k->notes, "programmatic dependent launch: an entry may start this kernel while the kernel before it "
                                   "still runs, so " WAIT_NOTE);
    }
}
