// tkc_sched.cuh - work-tile walks of persistent grids that need more than a stride. Plain C
// (no CUDA built-ins), so tests/unit/test_sched.c checks it on the host with TKC_DEVICE defined
// as a host function; tkc copies the fragments a kernel uses into the generated .cu.

// @fragment pair_walk
// The k-th work tile (k = 0, 1, ...) of block b among g blocks when the tiles go in pairs
// (2p, 2p + 1), a long tile and its short partner on a folded axis; -1 when block b has no
// k-th tile. Rounds in which every block takes a whole pair come first. The n - 2g*rounds tiles
// left over are spread so that as many blocks as possible get one: blocks [0, n - 2g*rounds - g)
// take a pair, the rest one tile each.
TKC_DEVICE int tkc_pair_walk(int k, int b, int g, int n) {
    const int rounds = n / (2 * g);
    if (k / 2 < rounds) return 2 * ((k / 2) * g + b) + (k & 1);
    const int base = 2 * g * rounds, rest = n - base, pairs = rest > g ? rest - g : 0;
    const int kk = k - 2 * rounds;
    if (b < pairs) return kk < 2 ? base + 2 * b + kk : -1;
    const int t = base + pairs + b;
    return kk == 0 && t < n ? t : -1;
}
