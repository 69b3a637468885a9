/* test_sched.c - the work-tile walks in templates/tkc_sched.cuh, run on the host: every work
 * tile is taken exactly once, pairs stay together, and the busiest block takes no more tiles than
 * a plain stride walk would give it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define TKC_DEVICE static inline
#include "../../templates/tkc_sched.cuh"

/* walks every block's tiles; taken[t] counts how often tile t was handed out; returns the most
 * tiles one block took */
static int walk_all(int n, int g, int *taken) {
    int most = 0;
    memset(taken, 0, sizeof(int) * (size_t)n);
    for (int b = 0; b < g; b++) {
        int k = 0;
        for (int t; (t = tkc_pair_walk(k, b, g, n)) >= 0; k++) {
            assert_true(t < n);
            taken[t]++;
            /* the second tile of a pair follows its first */
            if (k & 1 && t & 1) assert_int_equal(tkc_pair_walk(k - 1, b, g, n), t - 1);
        }
        /* the walk stays finished */
        assert_int_equal(tkc_pair_walk(k + 1, b, g, n), -1);
        if (k > most) most = k;
    }
    return most;
}

static void every_tile_once(void **state) {
    (void)state;
    int *taken = malloc(sizeof(int) * 5000);
    for (int n = 1; n <= 600; n += (n < 80 ? 1 : 7))
        for (int g = 1; g <= 140; g += (g < 20 ? 1 : 11)) {
            if ((n + 1) / 2 < g) continue; /* the launcher starts at most ceil(n / 2) blocks */
            int most = walk_all(n, g, taken);
            for (int t = 0; t < n; t++) assert_int_equal(taken[t], 1);
            /* the busiest block takes ceil(n / g) tiles, as many as a plain stride walk gives it */
            assert_int_equal(most, (n + g - 1) / g);
        }
    free(taken);
}

static void pairs_in_full_rounds(void **state) {
    (void)state;
    /* 132 blocks, 2048 tiles (B16 H16, 8 folded query blocks): 7 full rounds of pairs, then 200
     * tiles over 132 blocks: 68 blocks take a pair, 64 take one */
    int k;
    for (k = 0; tkc_pair_walk(k, 0, 132, 2048) >= 0; k++)
        if (k < 14) assert_int_equal(tkc_pair_walk(k, 0, 132, 2048), 2 * (k / 2) * 132 + (k & 1));
    assert_int_equal(k, 16);
    for (k = 0; tkc_pair_walk(k, 131, 132, 2048) >= 0; k++) {
    }
    assert_int_equal(k, 15);
    assert_int_equal(tkc_pair_walk(14, 131, 132, 2048), 2047);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_tile_once),
        cmocka_unit_test(pairs_in_full_rounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
