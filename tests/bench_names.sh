#!/bin/sh
# bench_names.sh - no script of bench/ is named like a standard-library module: the bench scripts
# run with bench/ first on sys.path, where a bench/profile.py was imported by torch (through
# cProfile) in place of the standard library's profile and ran itself (run 128's torch_check
# failures). usage: bench_names.sh ROOT
root=${1:-.}
python3 - "$root/bench" <<'PY'
import os, sys
names = getattr(sys, "stdlib_module_names", None)
if names is None:
    print("SKIP: this python has no sys.stdlib_module_names"); sys.exit(77)
bad = sorted(f for f in os.listdir(sys.argv[1]) if f.endswith(".py") and f[:-3] in names)
for f in bad:
    print("FAIL bench/%s shadows the standard library's %s module" % (f, f[:-3]))
print("bench_names: %d scripts, %d named like a standard-library module" % (
    sum(f.endswith(".py") for f in os.listdir(sys.argv[1])), len(bad)))
sys.exit(1 if bad else 0)
PY
