/* pass_coalesce_bars.c - one pair of scratch barriers around a run of writes into one shared tile
 * (plan_coalesce_bars). Part of lowering (lower_int.h).
 *
 * Every consumer write of a shared tile is lowered on its own: a named barrier before it (every
 * earlier reader of the tile is done), the write, a fence for the async proxy, a barrier after it
 * (the tile is complete for its readers). A kernel that fills a tile block by block (Based's 32
 * feature blocks a step, Hedgehog's feature maps and copies of k and v) pays two barriers a block.
 * Precondition for dropping the barrier after one write and the one before the next write of the
 * same tile: the blocks the writes cover do not overlap (no two threads write one element, so the
 * writes need no order among themselves), and nothing between them reads or writes the tile, or
 * is a branch, loop, sync or pingpong turn. The first barrier before still orders the run after the
 * tile's earlier readers (each write keeps the scheduler's waits for products reading the tile), and
 * the last barrier after makes the whole run visible to the readers that follow it; the fence
 * after the run's last write orders every write of the run before it for the async proxy, so the
 * fences of the earlier writes go too. The notes say how many barriers and fences went. */
#include "lower_int.h"

/* the block of its shared tile a register-to-shared move writes */
PlanRegion plan_write_region(const PlanKernel *pk, const POp *o) {
    const PlanMove *m = o->mv;
    const PExpr *sh = o->st->lhs;
    const PlanBuf *b = &pk->bufs.v[m->buf];
    if (sh->kind != PX_INDEX) return (PlanRegion){0, 0, b->rows, b->cols};
    return (PlanRegion){m->srow0, m->scol0, m->srow0 + m->rt->rows, m->scol0 + m->rt->cols};
}

bool plan_regions_overlap(PlanRegion a, PlanRegion b) { return a.r0 < b.r1 && b.r0 < a.r1 && a.c0 < b.c1 && b.c0 < a.c1; }

static bool is_write_of(const POp *o, int buf) {
    return o->kind == POP_MOVE && o->mv && o->mv->to_shared && o->mv->buf == buf && o->mv->rt && o->mv->rt->kind == TY_TILE;
}

/* the ops the run may step over: touching neither the tile nor the threads' order */
static bool steps_over(Lower *L, POp *o, int buf) {
    switch (o->kind) {
    case POP_IF:
    case POP_FOR:
    case POP_SYNC:
    case POP_PP_WAIT:
    case POP_PP_PASS: return false;
    default: break;
    }
    return !op_touches_tile(L, o, L->pk->bufs.v[buf].sym);
}

/* ops[i .. ]: barrier before, the write, an optional fence, barrier after; the index of the
 * barrier after, or -1 */
static int write_at(const POpList *ops, int i) {
    if (i + 2 >= ops->n) return -1;
    POp *b = ops->v[i], *w = ops->v[i + 1];
    if (b->kind != POP_BAR || b->buf < 0 || !is_write_of(w, b->buf)) return -1;
    int a = i + 2;
    if (ops->v[a]->kind == POP_FENCE) a++;
    if (a >= ops->n || ops->v[a]->kind != POP_BAR || ops->v[a]->buf >= 0 || ops->v[a]->bar != b->bar) return -1;
    return a;
}

static int coalesce(Lower *L, POpList *ops, int *fence_count) {
    PlanKernel *pk = L->pk;
    int dropped = 0, fences = 0;
    for (int i = 0; i < ops->n; i++)
        if (ops->v[i]->kind == POP_IF || ops->v[i]->kind == POP_FOR) {
            dropped += coalesce(L, &ops->v[i]->then_ops, fence_count);
            dropped += coalesce(L, &ops->v[i]->else_ops, fence_count);
        }
    bool *gone = ARENA_NEW_N(L->a, bool, ops->n + 1);
    for (int i = 0; i < ops->n; i++) {
        int a = write_at(ops, i);
        if (a < 0) continue;
        int buf = ops->v[i]->buf;
        Vec(PlanRegion) run = {0};
        vec_push(L->a, &run, plan_write_region(pk, ops->v[i + 1]));
        int last_after = a;
        for (int j = a + 1; j < ops->n; j++) {
            int a2 = write_at(ops, j);
            if (a2 >= 0 && ops->v[j]->buf == buf && !ops->v[j]->bulk_read) {
                PlanRegion r = plan_write_region(pk, ops->v[j + 1]);
                bool clash = false;
                for (int k = 0; k < run.n; k++) clash |= plan_regions_overlap(run.v[k], r);
                if (clash) break;
                vec_push(L->a, &run, r);
                gone[last_after] = gone[j] = true;  /* the barrier after the run so far, the one before this write */
                dropped += 2;
                /* one fence after the run's last write orders all of this thread's writes before it */
                if (ops->v[last_after - 1]->kind == POP_FENCE && ops->v[a2 - 1]->kind == POP_FENCE) {
                    gone[last_after - 1] = true;
                    fences++;
                }
                last_after = a2;
                j = a2;
                continue;
            }
            if (!steps_over(L, ops->v[j], buf)) break;
        }
        i = last_after;
    }
    int n = 0;
    for (int i = 0; i < ops->n; i++)
        if (!gone[i]) ops->v[n++] = ops->v[i];
    ops->n = n;
    *fence_count += fences;
    return dropped;
}

void plan_coalesce_bars(Lower *L) {
    PlanKernel *pk = L->pk;
    if (pk->nbar_scratch < 0) return;
    POpList *lists[] = {&pk->setup_ops, &pk->first_ops, &pk->compute_ops, &pk->after_ops, &pk->finish_ops};
    int dropped = 0, fences = 0;
    for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++) dropped += coalesce(L, lists[k], &fences);
    if (dropped)
        lower_note(L, "scratch barriers: %d dropped between writes of one shared tile to blocks that do not overlap, "
                   "with nothing reading the tile between them (one barrier before such a run of writes and one after "
                   "it%s)", dropped, fences ? arena_printf(L->a, "; %d async-proxy fences too: one after a run's last write", fences) : "");
}
