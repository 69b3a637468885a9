NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
timeout 300 $NCU --clock-control none -k regex:"attn_bwd_fused|attn_bwd_kv" --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section MemoryWorkloadAnalysis python3 .carry/x/prof.py > $OUT/ncu.txt 2>&1
echo rc=$?
grep -v "^==PROF==\|^ *$\|----" $OUT/ncu.txt | grep -iv "OPT \|INF \|   Est\|  This\|  One or\|  Check\|  On average\|  the \|  is \|  of \|  and\|  which\|  (\|  higher\|  to \|  cycles\|  kernel" | head -150
