#!/usr/bin/env python3
"""EXPERIMENT (run 212): a hand edit of tkc's CUDA for attn_bwd_split (D = 128) that measures what the
language cannot yet say: dQ's product left in flight across the step's end, its shared-memory write
(dqs) and TMA reduce-add moved into the next step under S^T's and dP^T's products (FlashAttention-3's
order), the last one after the loop. Input: `tkc -D D=128 -D CAUSAL=C kernels.tk/attn_bwd.tk` output;
writes the edited file.
    python3 bench/experiments/attn_bwd/defer_edit.py IN.cu OUT.cu
"""
import re
import sys

src = open(sys.argv[1]).read()
k0 = src.index("tkc_attn_bwd_split_kernel(const")
k1 = src.index("// kernel attn_bwd_dq", k0)
body = src[k0:k1]

WRITE = '''                tkc_wgmma_wait<2>();  // experiment: the previous step's dQ product
                #pragma unroll
                for (int tkc_i = 0; tkc_i < 32; ++tkc_i) tkc_pin(dq[tkc_i]);
                if (wg == 0 && tkc_wg_thread == 0) tkc_bulk_wait_read<0>();  // TMA stores have read 'dqs'
                tkc_bar_sync(1, 256);  // experiment: every earlier reader of 'dqs' is done
                {
                    const uint32_t tkc_dst = dqs_smem;  // dqs: 128B swizzle
                    #pragma unroll
                    for (int tkc_p = 0; tkc_p < 16; ++tkc_p)
                        tkc_sts_v2(tkc_dst + tkc_tile_offset(64, 128, 4, 128, (tkc_frag_row(tkc_lrow, (2 * tkc_p), 64)), 64 * wg + (tkc_frag_col(tkc_lcol, (2 * tkc_p), 64))), (dq[(2 * tkc_p)] * scale), (dq[(2 * tkc_p + 1)] * scale));
                }
                tkc_fence_proxy_async();  // 'dqs' is read by TMA stores
                tkc_bar_sync(1, 256);  // experiment: 'dqs' complete
                if (wg == 0 && tkc_wg_thread == 0) {  // 4 reduce-adds of 64 x 32
                    tkc_tma_add_4d(&tm_dQ_64x32, 0, (ROW) * 64, block_h, block_b, dqs_smem);
                    tkc_tma_add_4d(&tm_dQ_64x32, 32, (ROW) * 64, block_h, block_b, dqs_smem + 8192);
                    tkc_tma_add_4d(&tm_dQ_64x32, 64, (ROW) * 64, block_h, block_b, dqs_smem + 16384);
                    tkc_tma_add_4d(&tm_dQ_64x32, 96, (ROW) * 64, block_h, block_b, dqs_smem + 24576);
                    tkc_bulk_commit();
                }
'''

row = re.search(r"tkc_tma_add_4d\(&tm_dQ_64x32, 0, \((i \+ [^)]*)\) \* 64", body).group(1)  # "i + 0" or "i + first"


def edit_step(step, deferred_write):
    # the merged barrier keeps only 'dst' complete
    step = re.sub(r"\n *if \(wg == 0 && tkc_wg_thread == 0\) tkc_bulk_wait_read<0>\(\);[^\n]*\n( *)tkc_bar_sync\(1, 256\);  // scratch: 'dst' is complete;[^\n]*",
                  r"\n\1tkc_bar_sync(1, 256);  // scratch: 'dst' is complete", step, count=1)
    # in each branch: no wait for dQ, no dqs write
    step, n = re.subn(r"\n *tkc_wgmma_wait<0>\(\);  // registers of a product in flight\n *#pragma unroll\n *for \(int tkc_i = 0; tkc_i < 32; \+\+tkc_i\) tkc_pin\(dq\[tkc_i\]\);\n *// dqs\[[^\n]*\n *\{\n(?: *[^\n]*\n){4} *\}\n *tkc_fence_proxy_async\(\);  // 'dqs'[^\n]*", "", step)
    assert n == 2, n
    # no dqs barrier and TMA at the step's end
    step, n = re.subn(r"\n *tkc_bar_sync\(1, 256\);  // scratch: 'dqs' complete[^\n]*\n *// dQ\[[^\n]*\n *if \(wg == 0 && tkc_wg_thread == 0\) \{[^\n]*\n(?: *tkc_tma_add_4d[^\n]*\n){4} *tkc_bulk_commit\(\);\n *\}", "", step)
    assert n == 1, n
    # one dQ product for both warpgroups (k's column half by wg in the descriptor): a product left in
    # flight out of a divergent branch makes ptxas serialise every wgmma (C7518)
    m = re.search(r"\n( *)if \(\(wg == 0\)\) \{\n(.*?)\n\1\} else \{\n.*?\n\1\}", step, re.S)
    then = m.group(2).replace("tkc_desc(k_smem + 0, 16384", "tkc_desc(k_smem + (uint32_t)wg * 16384, 16384")
    assert "wg * 16384" in then
    step = step[:m.start()] + "\n" + then + step[m.end():]
    if deferred_write:
        m = re.search(r"tkc_mbar_wait\(full_ls", step)
        step = step[:m.start()] + WRITE.replace("ROW", row.replace("i", "i - 1", 1)).lstrip() + "                " + step[m.start():]
    return step


a = body.index("if (tkc_steps > 0) {  // the first step")
b = body.index("for (int i = 1; i < tkc_steps; ++i) {  // the steady state")
c = body.index("// after the steps", b)
first, loop = body[a:b], body[b:c]
first = edit_step(first, False)
loop = edit_step(loop, True)
after = ("if (tkc_steps > 0) {  // experiment: the last step's dQ\n"
         + WRITE.replace("tkc_wgmma_wait<2>();  // experiment: the previous step's dQ product",
                         "tkc_wgmma_wait<0>();  // experiment: the last step's dQ product").replace("ROW", row.replace("i", "tkc_steps - 1", 1))
         + "            }\n            ")
body = body[:a] + first + loop + after + body[c:]
open(sys.argv[2], "w").write(src[:k0] + body + src[k1:])
print("edited: dQ deferred a step, row", row)
