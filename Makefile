# Makefile - a thin wrapper over CMake for the commands in README.md. The build itself lives in
# CMakeLists.txt; this file checks dependencies, configures build/ (Ninja if installed, else
# Unix Makefiles), and calls cmake, ctest and nvcc.
#   make [build]   check deps, configure, build everything (tkc, tkc-asan, tests)
#   make demo      build tkc, compile kernels.tk/gemm.tk to CUDA and with nvcc to sm_90a
#   make test      build, then run the whole suite; the last line is ctest's summary
#   make install   build, then install tkc, its CMake package and the man page into PREFIX
#   make clean     remove build/
# Variables: BUILD (default build), JOBS (default: the number of CPUs), NVCC (default nvcc),
# CMAKE_ARGS (extra configure options; given, they re-run the configure step), PREFIX (default
# /usr/local).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
# goals run one after another; the parallelism is inside cmake --build and ctest
.NOTPARALLEL:
.DEFAULT_GOAL := build

BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
NVCC ?= nvcc
CMAKE_ARGS ?=
TEST_TIMEOUT ?= 600
PREFIX ?= /usr/local
DEMO := $(BUILD)/demo

ifneq ($(wildcard /usr/local/cuda/bin/.),)
ifeq ($(filter /usr/local/cuda/bin,$(subst :, ,$(PATH))),)
export PATH := $(PATH):/usr/local/cuda/bin
endif
endif

# cmake/ctest must not see this make's jobserver flags (a nested make would warn and go serial)
CMAKE := env -u MAKEFLAGS -u MFLAGS cmake
CTEST := env -u MAKEFLAGS -u MFLAGS ctest
GENERATOR := $(if $(shell command -v ninja 2>/dev/null),Ninja,Unix Makefiles)

.PHONY: all build deps configure demo nvcc-check test install clean

all build: configure
	$(CMAKE) --build $(BUILD) --parallel $(JOBS)

deps:
	@bash .ci/ensure-deps.sh

# an existing build/ keeps the generator it was configured with
configure: deps
	@if [ ! -f $(BUILD)/CMakeCache.txt ] || [ -n "$(CMAKE_ARGS)" ]; then \
	    echo '$(CMAKE) -S . -B $(BUILD) $(if $(wildcard $(BUILD)/CMakeCache.txt),,-G "$(GENERATOR)") $(CMAKE_ARGS)'; \
	    $(CMAKE) -S . -B $(BUILD) $(if $(wildcard $(BUILD)/CMakeCache.txt),,-G "$(GENERATOR)") $(CMAKE_ARGS); \
	fi

nvcc-check:
	@command -v $(NVCC) >/dev/null || { \
	    echo "make demo: $(NVCC) not found (looked in PATH and /usr/local/cuda/bin)." >&2; \
	    echo "Install NVIDIA's CUDA toolkit (12.0 or newer, for sm_90a) or run make demo NVCC=/path/to/nvcc." >&2; \
	    exit 1; }

demo: nvcc-check configure
	$(CMAKE) --build $(BUILD) --parallel $(JOBS) --target tkc
	@mkdir -p $(DEMO)
	$(BUILD)/tkc kernels.tk/gemm.tk -o $(DEMO)/gemm.cu
	$(BUILD)/tkc kernels.tk/gemm.tk --emit=plan -o $(DEMO)/gemm.plan
	$(NVCC) -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -c $(DEMO)/gemm.cu -o $(DEMO)/gemm.o \
	    >$(DEMO)/nvcc.log 2>&1 || { cat $(DEMO)/nvcc.log >&2; exit 1; }
	@echo
	@echo "== kernels.tk/gemm.tk -> $(DEMO)/gemm.cu ($$(wc -l <$(DEMO)/gemm.cu) lines), $(DEMO)/gemm.plan, $(DEMO)/gemm.o"
	@echo "-- plan (first lines; all of it in $(DEMO)/gemm.plan):"
	@sed -n '1,6p' $(DEMO)/gemm.plan; grep -m1 '^ *total ' $(DEMO)/gemm.plan | sed 's/^ *total/  shared memory: total/' || true
	@echo "-- $$($(NVCC) --version | grep -o 'release [0-9.]*' | sed 's/release/nvcc/'), sm_90a (ptxas -v; full log in $(DEMO)/nvcc.log):"
	@awk '/Compiling entry function/ { split($$0, q, "'\''"); fn = q[2] } \
	    /bytes stack frame/ { sub(/^ +/, ""); frame = $$0 } \
	    /Used [0-9]+ registers/ { sub(/.*Used /, "Used "); print "  " fn; print "    " $$0 "; " frame } \
	    /[Ww]arning/ { print "  " $$0 }' $(DEMO)/nvcc.log | \
	    { command -v c++filt >/dev/null && c++filt || cat; } | sed -E '/ptxas|Used /!s/\([^()]*\)$$//'

# ctest prints its summary before the test time and the list of failures; move it to the end
CTEST_RUN = $(CTEST) --test-dir $(BUILD) --output-on-failure --no-tests=error --timeout $(TEST_TIMEOUT) -j $(JOBS)
test: build
	@echo '$(CTEST_RUN)'
	@$(CTEST_RUN) 2>&1 | awk '/^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+/ { s = $$0; next } \
	    { print; fflush() } END { if (s != "") print s }'

install: build
	$(CMAKE) --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
