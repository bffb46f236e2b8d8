# nanmap — plain Makefile. User CFLAGS/LDFLAGS are appended, never replaced.
PREFIX ?= /usr/local
DESTDIR ?=
VERSION := 0.1.0
# the shared library's ABI version: libnanmap.so.$(SOMAJOR) names libnanmap.so.$(VERSION)
SOMAJOR := $(firstword $(subst ., ,$(VERSION)))

CC ?= cc
# the library's layers and the rooms on them (below, and docs/architecture.md)
# lowest first: a file may include headers of its own layer and those before it
# (tests/layers.sh, run by make lint and make test)
LAYERS := core recipes engine kernels io train
LAYER_DIRS := $(LAYERS:%=emu/%)
# one include path, the root: a header is named with its layer, "emu/engine/kern.h"
INC := -I.
WARN := -Wall -Wextra
ifeq ($(WERROR),1)
WARN += -Werror
endif
BASE_CFLAGS := -std=c11 -O2 $(WARN) -ffp-contract=off -fopenmp -D_POSIX_C_SOURCE=200809L -DNM_VERSION='"$(VERSION)"' $(INC)
NM_CFLAGS := $(BASE_CFLAGS) $(shell pkg-config --cflags check 2>/dev/null) $(CFLAGS)
# MPFR and GMP are linked statically into the executables when their archives
# are installed (Debian's libmpfr-dev and libgmp-dev ship them): MPFR keeps its
# exponent range and flags in thread-local variables, which code in a shared
# library reaches through a call (__tls_get_addr) at every access, about a
# tenth of an exact or truth run; linked in, they are plain loads. The shared
# library links them shared. NM_STATIC_MP=0: shared everywhere. Evaluated at
# link time (=), after make deps may have installed them.
NM_STATIC_MP ?= 1
comma := ,
MP_FOUND = $(and $(filter 1,$(NM_STATIC_MP)),$(filter /%,$(shell $(CC) -print-file-name=libmpfr.a)),$(filter /%,$(shell $(CC) -print-file-name=libgmp.a)))
MP_STATIC_LIBS := -Wl$(comma)-Bstatic -lmpfr -lgmp -Wl$(comma)-Bdynamic
MP_LIBS = $(if $(MP_FOUND),$(MP_STATIC_LIBS),-lmpfr -lgmp)
NM_LDLIBS = -linih $(MP_LIBS) -lm -fopenmp $(LDLIBS)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lpthread)

# The layers (docs/architecture.md), each a folder of emu/: core (formats,
# rounding, operations), recipes (scaling recipes, the one quantiser), engine
# (the kernel interface, its backends, policies), kernels (kernels and
# models), io (golden files, .npy, .safetensors, files, strict parsing, the
# input generator, the string buffer), train (whole training runs of a small
# GPT-2 on the engine); then the rooms built on them:
# emu/sweep (the sweep pipeline) and emu/cli (the command).
# The library, libnanmap.a and libnanmap.so alike, is the six layers; the
# command line's code (case files through inih, sweeps, plots) is
# build/libnanmap-cli.a, linked into bin/nanmap, the tests, the bench and
# the GPU runner, and installed nowhere. Hardware oracles (tests/oracles/):
# an independent reference for the tests, linked into the test binary only.
LIB_SRC := $(sort $(foreach d,$(LAYER_DIRS),$(wildcard $(d)/*.c)))
ORACLE_SRC := $(sort $(wildcard tests/oracles/*.c))
ORACLE_OBJ := $(ORACLE_SRC:%.c=build/%.o)
LIB_OBJ := $(LIB_SRC:%.c=build/%.o)
CLI_SRC := $(filter-out emu/cli/main.c,$(sort $(wildcard emu/cli/*.c emu/sweep/*.c)))
CLI_OBJ := $(CLI_SRC:%.c=build/%.o)
CLI_LIB := build/libnanmap-cli.a
# the Check suites, by layer (tests/LAYER/check_*.c), and their runner
TEST_SRC := $(sort $(wildcard tests/*.c $(foreach d,core recipes engine kernels io train sweep cli gpu,tests/$(d)/*.c)))
TEST_OBJ := $(TEST_SRC:%.c=build/%.o)
# the native-float trainer (bench/train_native.c) is built on its own, with
# the flags that let its loops vectorise, and linked into the bench and the
# tests (tests/train/check_native.c holds it to the emulator's fp32 losses)
NATIVE_SRC := bench/train_native.c
NATIVE_OBJ := build/bench/train_native.o
BENCH_SRC := $(filter-out $(NATIVE_SRC),$(sort $(wildcard bench/*.c)))

# gpu/: host-side C (tested by make test, no nvcc needed) and the CUDA files.
GPU_HOST_SRC := $(sort $(wildcard gpu/host_*.c))
GPU_HOST_OBJ := $(GPU_HOST_SRC:%.c=build/%.o)
GPU_CU := $(sort $(wildcard gpu/*.cu))
# the runner: main in runner.c, its steps one family a file (gpu/run.h)
GPU_RUN_OBJ := $(patsubst %.c,build/%.o,gpu/runner.c $(sort $(wildcard gpu/run_*.c)))
# gpu/rows.h is not among them: only the two files that compile it depend on it (below)
GPU_BIN := bin/nanmap-gpu
# the runner against the emulator as a fake device: tests the runner without a GPU
GPU_FAKE := build/gpu/nanmap-gpu-fake
# the fake device built from a rows.h with three operations moved into another format
GPU_MUTANT := build/gpu/nanmap-gpu-mutant
NVCC ?= /usr/local/cuda/bin/nvcc
# sm_90a: the Hopper-only instructions; --fmad=false: no fused a*b+c in predicted kernels
GPU_ARCH ?= -gencode arch=compute_90a,code=sm_90a
NVCC_WARN := -Xcompiler -Wall,-Wextra
ifeq ($(WERROR),1)
NVCC_WARN += -Werror all-warnings -Xcompiler -Werror
endif
NVCC_FLAGS := -O2 -std=c++17 --fmad=false $(GPU_ARCH) $(NVCC_WARN) $(INC) $(NVCCFLAGS)
PUBLIC_H := emu/core/emu.h emu/recipes/recipe.h emu/kernels/tcscaled.h emu/engine/gputab.h emu/engine/kern.h emu/engine/kernels.h emu/kernels/tc.h emu/kernels/gradscaler.h emu/io/nm_golden.h emu/train/train.h
LIB := lib/libnanmap.a
SHLIB := lib/libnanmap.so
SHLIB_REAL := $(SHLIB).$(VERSION)
SHLIB_SONAME := libnanmap.so.$(SOMAJOR)
# what the library itself links (nanmap.pc's Libs.private says the same)
LIB_LDLIBS := -lmpfr -lgmp -lm -lgomp
# the exports: emu_* and nm_golden_* (emu/nanmap.map); internal.h's helpers are
# hidden by their declarations
SHLIB_LDFLAGS := -shared -Wl,-soname,$(SHLIB_SONAME) -Wl,--version-script=emu/nanmap.map -Wl,--no-undefined
BIN := bin/nanmap
TESTBIN := build/tests/check_nanmap

DEB_PKGS := build-essential pkg-config libmpfr-dev libgmp-dev check libinih-dev gnuplot-nox \
  libopenmpi-dev openmpi-bin python3-numpy python3-pytest
# what make all needs (checked once, before the first compile: build/deps.ok)
BUILD_PKGS := build-essential libmpfr-dev libgmp-dev libinih-dev
# without dpkg, a -dev package counts as present when the compiler finds its header
DEP_HDR_build-essential := stdio.h
DEP_HDR_libmpfr-dev := mpfr.h
DEP_HDR_libgmp-dev := gmp.h
DEP_HDR_libinih-dev := ini.h
DEP_HDR_check := check.h
# the Python package's tests (tests/python.sh): this interpreter, or empty for
# the first of python3 and /usr/bin/python3 that imports numpy and pytest
PYTHON ?=
# DEPS_INSTALL=no: only name the missing packages, even as root
DEPS_INSTALL ?= yes

# deps_check PKGS: install the missing Debian packages when root; otherwise
# name them and the command, and fail. The one copy make deps and make all use.
define deps_check
missing=""; for p in $(foreach p,$(1),$(p)$(if $(DEP_HDR_$(p)),:$(DEP_HDR_$(p)))); do \
	  pkg=$${p%%:*}; h=$${p#"$$pkg"}; h=$${h#:}; \
	  dpkg -s $$pkg >/dev/null 2>&1 || { ! command -v dpkg >/dev/null 2>&1 && [ -n "$$h" ] && \
	    printf '#include <%s>\n' "$$h" | $(CC) -E -x c - >/dev/null 2>&1; } || missing="$$missing $$pkg"; \
	done; \
	if [ -z "$$missing" ]; then echo "deps: all present"; \
	elif [ "$(DEPS_INSTALL)" != no ] && [ "$$(id -u)" = 0 ]; then echo "deps: installing$$missing"; \
	  (apt-get install -y $$missing || (apt-get update && apt-get install -y $$missing)) >/dev/null || exit 1; \
	else echo "deps: missing Debian packages:$$missing (run: sudo apt-get install$$missing)"; exit 1; fi
endef

.PHONY: all deps test test-exhaustive test-mpi asan bench install uninstall clean format lint sweep sweep-quick check fuzz fuzz-build fuzz-replay gpu
all: $(LIB) $(SHLIB) $(BIN) nanmap.pc

# Parallel by default, one job per CPU (make -jN still chooses): the build,
# and the builds make test and make sweep run, take a fraction of the time.
# Set at the top level only: a recursive make shares its parent's jobs.
# A target that installs packages (deps) builds after it in its recipe, so
# two package installs never run at once.
ifeq ($(MAKELEVEL)$(filter -j%,$(MAKEFLAGS)),0)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif

# deps: install Debian packages when root; otherwise name them.
deps:
	@$(call deps_check,$(DEB_PKGS))

# make all checks BUILD_PKGS before its first compile, not on every build:
# a missing header is named as a package, not met as a compiler error.
build/deps.ok:
	@mkdir -p build
	@$(call deps_check,$(BUILD_PKGS))
	@echo "$(BUILD_PKGS)" > $@

# Header dependencies: the compiler writes each object's (-MMD) next to it,
# with an empty rule per header (-MP) so a deleted header is no error.
# Objects from before the .d files know no headers, and the library's from
# before its single -fPIC build cannot go into the shared library:
# build/dep.mode is new when the scheme changes, so each object is rebuilt once.
DEPFLAGS = -MMD -MP
DEP_MODE := mmd-pic
$(shell mkdir -p build && { [ "$$(cat build/dep.mode 2>/dev/null)" = "$(DEP_MODE)" ] || echo $(DEP_MODE) > build/dep.mode; })

build/%.o: %.c build/dep.mode | build/deps.ok
	@mkdir -p $(dir $@)
	$(CC) $(NM_CFLAGS) $(NM_PIC) $(DEPFLAGS) -c $< -o $@

# The library's objects are compiled once, position-independent, for both
# libraries and the executables: calls inside the library bind locally (no
# interposition), and linked into an executable the linker makes its GOT and
# TLS accesses direct, so the code runs as the default PIE code did. (Twice,
# aops.c's specialised loops alone took 80 s of the build's CPU.)
$(LIB_OBJ): NM_PIC := -fPIC -fno-semantic-interposition

# The array operations' loops vectorise sqrt only where GCC may drop libm's
# errno call (its optimize attribute does not reach the builtin); nothing
# in aops.c reads errno.
build/emu/core/aops.o: NM_PIC += -fno-math-errno

$(LIB): $(LIB_OBJ)
	@mkdir -p lib
	rm -f $@ && ar rcs $@ $^

$(CLI_LIB): $(CLI_OBJ)
	rm -f $@ && ar rcs $@ $^

# libnanmap.so -> libnanmap.so.0 -> libnanmap.so.0.1.0, the soname the middle one
$(SHLIB_REAL): $(LIB_OBJ) emu/nanmap.map
	@mkdir -p lib
	$(CC) $(SHLIB_LDFLAGS) -o $@ $(LIB_OBJ) $(LIB_LDLIBS) $(LDFLAGS)

$(SHLIB): $(SHLIB_REAL)
	ln -sf $(notdir $(SHLIB_REAL)) lib/$(SHLIB_SONAME)
	ln -sf $(SHLIB_SONAME) $@

# MPI=1: bin/nanmap linked by mpicc with the sweep built for MPI ranks
# (nm_sweep.c with -DNM_MPI, placed before the library so it wins).
MPICC ?= mpicc
MPI_SWEEP_OBJ := build/mpi/emu/sweep/nm_sweep.o
LINK_MODE := $(if $(filter 1,$(MPI)),mpi,plain)
$(shell mkdir -p build && { [ "$$(cat build/link.mode 2>/dev/null)" = "$(LINK_MODE)" ] || echo $(LINK_MODE) > build/link.mode; })

$(MPI_SWEEP_OBJ): emu/sweep/nm_sweep.c build/dep.mode
	@mkdir -p $(dir $@)
	$(MPICC) $(NM_CFLAGS) $(DEPFLAGS) -DNM_MPI -c $< -o $@

ifeq ($(MPI),1)
$(BIN): build/emu/cli/main.o $(MPI_SWEEP_OBJ) $(CLI_LIB) $(LIB) build/link.mode
	@mkdir -p bin
	$(MPICC) $(NM_CFLAGS) -o $@ build/emu/cli/main.o $(MPI_SWEEP_OBJ) $(CLI_LIB) $(LIB) $(NM_LDLIBS) $(LDFLAGS)
else
$(BIN): build/emu/cli/main.o $(CLI_LIB) $(LIB) build/link.mode
	@mkdir -p bin
	$(CC) $(NM_CFLAGS) -o $@ build/emu/cli/main.o $(CLI_LIB) $(LIB) $(NM_LDLIBS) $(LDFLAGS)
endif

# The MPI build for make test-mpi, beside the plain bin/nanmap it is compared with.
build/mpi/nanmap: build/emu/cli/main.o $(MPI_SWEEP_OBJ) $(CLI_LIB) $(LIB)
	$(MPICC) $(NM_CFLAGS) -o $@ build/emu/cli/main.o $(MPI_SWEEP_OBJ) $(CLI_LIB) $(LIB) $(NM_LDLIBS) $(LDFLAGS)

$(TESTBIN): $(TEST_OBJ) $(GPU_HOST_OBJ) $(ORACLE_OBJ) $(NATIVE_OBJ) $(CLI_LIB) $(LIB)
	$(CC) $(NM_CFLAGS) -o $@ $(TEST_OBJ) $(GPU_HOST_OBJ) $(ORACLE_OBJ) $(NATIVE_OBJ) $(CLI_LIB) $(LIB) $(CHECK_LIBS) $(NM_LDLIBS) $(LDFLAGS)

# -O3 vectorises its loops; -fno-math-errno lets sqrtf be an instruction (it
# reads no errno); -ffp-contract=off stays: its only fused operations are the
# fmaf it names. The user's CFLAGS still come last.
$(NATIVE_OBJ): $(NATIVE_SRC) build/dep.mode | build/deps.ok
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -O3 -fno-math-errno $(CFLAGS) $(DEPFLAGS) -c $< -o $@

# nanmap.pc carries PREFIX: build/pc.vars changes when PREFIX or VERSION does
$(shell mkdir -p build && { [ "$$(cat build/pc.vars 2>/dev/null)" = "$(PREFIX) $(VERSION)" ] || echo "$(PREFIX) $(VERSION)" > build/pc.vars; })
nanmap.pc: emu/nanmap.pc.in Makefile build/pc.vars
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' $< > $@

# test: the Check suites (fast == MPFR, hardware oracles) and the CLI tests.
# Every step runs, even after a failure, and adds its counts to build/tests/results.txt;
# the last line is the total, "summary: N passed, N failed, N skipped" (tests/results.sh),
# and make test fails when any step did.
RESULTS := build/tests/results.txt
STEP := NANMAP_RESULTS=$(RESULTS) sh tests/results.sh
# Two lanes: the Check binary, which keeps every CPU busy on its own but for
# its last suites, runs beside the scripts, which mostly use one; its output
# goes to CHECK_LOG and is printed whole when both lanes end. Its tests get
# twice Check's timeouts (CK_TIMEOUT_MULTIPLIER), as they share the CPUs.
# The GPU build is a make of its own (SUBMAKE: not "$(MAKE)", which would make
# make -n run the whole line, tests/fresh.sh's dry run included).
CHECK_LOG := build/tests/check_nanmap.log
SUBMAKE := $(MAKE)
# It builds everything its steps use (make all's libraries too: the Python
# package loads lib/libnanmap.so), so it passes on a fresh clone with nothing
# built; tests/fresh.sh checks that list against a dry run of it.
test: deps
	$(MAKE) --no-print-directory all $(TESTBIN) $(GPU_FAKE) $(GPU_MUTANT) $(FUZZ_REPLAY)
	@rm -rf $(RESULTS) $(RESULTS).time $(RESULTS).d
	@echo "test: the Check suites beside the scripts (their output follows when they end: $(CHECK_LOG))"
	@$(STEP) run check_nanmap env CK_TIMEOUT_MULTIPLIER=$${CK_TIMEOUT_MULTIPLIER:-2} $(TESTBIN) >$(CHECK_LOG) 2>&1 & \
	$(STEP) run layers sh tests/layers.sh; \
	$(STEP) run cli sh tests/cli/cli.sh; \
	$(STEP) run cli_run sh tests/cli/cli_run.sh; \
	$(STEP) run cli_quant sh tests/cli/cli_quant.sh; \
	$(STEP) run cli_train sh tests/cli/cli_train.sh; \
	$(STEP) run python env PYTHON="$(PYTHON)" sh tests/python.sh; \
	$(STEP) run cli_gemm sh tests/cli/cli_gemm.sh; \
	$(STEP) run cli_metrics sh tests/cli/cli_metrics.sh; \
	$(STEP) run cli_golden sh tests/cli/cli_golden.sh; \
	$(STEP) run cli_sweep sh tests/sweep/cli_sweep.sh; \
	$(STEP) run faults_sweep sh tests/sweep/faults_sweep.sh; \
	$(STEP) run faults_plot sh tests/sweep/faults_plot.sh; \
	$(STEP) run readme sh tests/readme.sh; \
	$(STEP) run install sh tests/install.sh; \
	if [ -x "$(NVCC)" ]; then $(STEP) run gpu env -u MAKEFLAGS -u MFLAGS $(SUBMAKE) --no-print-directory gpu; \
	else $(STEP) skip gpu "the GPU build: nvcc not found at $(NVCC) (set NVCC=)"; fi; \
	$(STEP) run cli_gpu sh tests/gpu/cli_gpu.sh; \
	$(STEP) run fuzz_replay sh tests/fuzz/replay.sh; \
	$(STEP) run fresh sh tests/fresh.sh; \
	wait; cat $(CHECK_LOG)
	@$(STEP) total

check: test

# test-mpi: a small sweep on 2 ranks must write the same bytes as one process.
test-mpi: deps
	$(MAKE) --no-print-directory $(BIN) build/mpi/nanmap
	sh tests/sweep/mpi_sweep.sh

test-exhaustive: deps
	$(MAKE) --no-print-directory $(TESTBIN)
	NANMAP_EXHAUSTIVE=1 CK_RUN_SUITE=exhaustive CK_DEFAULT_TIMEOUT=0 $(TESTBIN)

asan:
	$(MAKE) --no-print-directory clean
	$(MAKE) --no-print-directory CFLAGS="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
	  LDFLAGS="-fsanitize=address,undefined" $(TESTBIN) $(BIN) $(FUZZ_REPLAY)
	NANMAP_QUICK=1 CK_FORK=no $(TESTBIN)
	sh tests/cli/cli.sh
	sh tests/cli/cli_run.sh
	sh tests/cli/cli_quant.sh
	sh tests/fuzz/replay.sh
	sh tests/cli/cli_train.sh
	sh tests/cli/cli_gemm.sh
	sh tests/cli/cli_metrics.sh
	sh tests/cli/cli_golden.sh
	sh tests/sweep/cli_sweep.sh
	$(MAKE) --no-print-directory clean

# fuzz: libFuzzer on the .npy, golden-file, actual-output, case-file and plot results
# CSV readers, FUZZ_SECONDS each (default 60); needs clang.
fuzz:
	sh tests/fuzz/run.sh

# The harnesses (tests/fuzz/fuzz_NAME.c) and the sources each links: the one
# list, which tests/fuzz/run.sh builds through and make test links (fuzz-replay,
# below) so that a list missing a file fails make test, not make fuzz.
# Objects are instrumented once (build/fuzz/obj/) and shared by the harnesses.
FUZZ_CC ?= clang
FUZZ_NAMES := npy golden case plot gputab safetensors
FUZZ_CFLAGS := -std=c11 -g -O1 -fno-omit-frame-pointer -ffp-contract=off \
  -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
  -D_POSIX_C_SOURCE=200809L $(INC)
FUZZ_LDFLAGS := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
# the emulator files a reader decodes through, and the whole library
FUZZ_EMU := emu/core/format.c emu/core/codec.c emu/core/convert.c emu/core/round.c
FUZZ_LAYERS := $(sort $(wildcard emu/core/*.c emu/recipes/*.c emu/engine/*.c emu/kernels/*.c))
FUZZ_SRC_npy := tests/fuzz/fuzz_npy.c emu/io/nm_npy.c emu/io/nm_file.c $(FUZZ_EMU)
FUZZ_LIBS_npy := -lm
FUZZ_SRC_golden := tests/fuzz/fuzz_golden.c emu/io/nm_golden.c emu/io/nm_npy.c emu/io/nm_parse.c emu/io/nm_file.c \
  $(FUZZ_LAYERS)
FUZZ_LIBS_golden := -lmpfr -lgmp -lm
# a case file may name the training kernel (emu/train), which saves checkpoints
FUZZ_TRAIN := $(sort $(wildcard emu/train/*.c)) emu/io/nm_safetensors.c emu/io/nm_buf.c emu/io/nm_file.c
FUZZ_SRC_case := $(sort tests/fuzz/fuzz_case.c emu/sweep/nm_case.c emu/io/nm_parse.c emu/io/nm_gen.c \
  $(FUZZ_LAYERS) $(FUZZ_TRAIN))
FUZZ_LIBS_case := -linih -lmpfr -lgmp -lm
FUZZ_SRC_plot := $(sort tests/fuzz/fuzz_plot.c emu/sweep/nm_plot.c emu/sweep/nm_point.c emu/sweep/nm_case.c \
  emu/io/nm_parse.c emu/io/nm_file.c emu/io/nm_gen.c $(FUZZ_LAYERS) $(FUZZ_TRAIN))
FUZZ_LIBS_plot := -linih -lmpfr -lgmp -lm
FUZZ_SRC_gputab := tests/fuzz/fuzz_gputab.c emu/engine/gputab.c $(FUZZ_EMU)
FUZZ_LIBS_gputab := -lm
# the writer quotes names through nm_buf.c, which formats numbers through nm_parse.c
FUZZ_SRC_safetensors := tests/fuzz/fuzz_safetensors.c emu/io/nm_safetensors.c emu/io/nm_buf.c \
  emu/io/nm_parse.c emu/io/nm_file.c $(FUZZ_LAYERS)
FUZZ_LIBS_safetensors := -lmpfr -lgmp -lm
FUZZ_OBJ = $(FUZZ_SRC_$(1):%.c=build/fuzz/obj/%.o)

fuzz-build: $(FUZZ_NAMES:%=build/fuzz/%/fuzz)

# The replays make test runs (tests/fuzz/replay.sh): each harness and the same
# list, from the plain build's objects, linked with tests/fuzz/replay.c, a main
# that gives the harness files. A list missing a file fails to link here too,
# and every seed goes through the harness's checks, without the instrumented
# build (a minute of two cores) that make fuzz needs.
FUZZ_REPLAY_OBJ = $(patsubst %.c,build/%.o,$(FUZZ_SRC_$(1)) tests/fuzz/replay.c)
FUZZ_REPLAY := $(FUZZ_NAMES:%=build/fuzz/%/replay)
define fuzz_replay_link
build/fuzz/$(1)/replay: $(call FUZZ_REPLAY_OBJ,$(1))
	@mkdir -p $$(dir $$@)
	$$(CC) $$(NM_CFLAGS) -o $$@ $$^ $$(FUZZ_LIBS_$(1)) -fopenmp $$(LDFLAGS)
endef
$(foreach n,$(FUZZ_NAMES),$(eval $(call fuzz_replay_link,$(n))))

fuzz-replay: $(FUZZ_REPLAY)

build/fuzz/obj/%.o: %.c build/dep.mode | build/deps.ok
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(DEPFLAGS) -c $< -o $@

define fuzz_link
build/fuzz/$(1)/fuzz: $(call FUZZ_OBJ,$(1))
	@mkdir -p $$(dir $$@)
	$$(FUZZ_CC) $$(FUZZ_LDFLAGS) -o $$@ $$^ $$(FUZZ_LIBS_$(1))
endef
$(foreach n,$(FUZZ_NAMES),$(eval $(call fuzz_link,$(n))))

# gpu: bin/nanmap-gpu (needs the CUDA toolkit, not a GPU; run it with gpu/check.sh)
gpu:
	@if [ -x "$(NVCC)" ]; then $(MAKE) --no-print-directory $(GPU_BIN); \
	else echo "gpu: nvcc not found at $(NVCC): install the CUDA toolkit or set NVCC="; exit 1; fi

build/gpu/%.o: gpu/%.c build/dep.mode | build/deps.ok
	@mkdir -p $(dir $@)
	$(CC) $(NM_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(GPU_FAKE): $(GPU_RUN_OBJ) build/gpu/dev_fake.o $(GPU_HOST_OBJ) $(CLI_LIB) $(LIB)
	$(CC) $(NM_CFLAGS) -o $@ $^ $(NM_LDLIBS) $(LDFLAGS)

# The training kernels' row sources (emu/kernels/*_rows.h, and gpu/rows.h for the kernels not yet
# moved there) are compiled by the engine, on the host for the fake device (host_rows.c) and by
# nvcc for the GPU (kern.cu). An edit rebuilds all three (the compilers' -MMD lists).
ROW_SRC := gpu/rows.h $(sort $(wildcard emu/kernels/*_rows.h))

# The negative check of that single source (tests/gpu/cli_gpu.sh): the fake device built from
# the row sources as gpu/testdata/rows-mutant.sed edits them must disagree with the emulator.
# The edit must change exactly twenty-four lines in all. host_rows.c is copied to
# build/gpu/mutant/ with the mutants beside it at their own paths (build/gpu/mutant/gpu/rows.h,
# build/gpu/mutant/emu/kernels/NAME_rows.h), since #include "gpu/rows.h" looks in the
# includer's own directory first.
build/gpu/mutant/rows.stamp: $(ROW_SRC) gpu/testdata/rows-mutant.sed
	@n=0; for f in $(ROW_SRC); do mkdir -p build/gpu/mutant/$$(dirname $$f); \
	  sed -f gpu/testdata/rows-mutant.sed $$f >build/gpu/mutant/$$f.tmp || exit 1; \
	  n=$$((n + $$(diff $$f build/gpu/mutant/$$f.tmp | grep -c '^>'))); done; \
	[ "$$n" = 24 ] || { \
	  echo "build/gpu/mutant: gpu/testdata/rows-mutant.sed changed $$n lines of the row sources, not 24: update it" >&2; \
	  exit 1; }; \
	for f in $(ROW_SRC); do mv build/gpu/mutant/$$f.tmp build/gpu/mutant/$$f; done
	@touch $@

build/gpu/mutant/host_rows.c: gpu/host_rows.c
	@mkdir -p $(dir $@)
	cp gpu/host_rows.c $@

build/gpu/mutant/host_rows.o: build/gpu/mutant/host_rows.c build/gpu/mutant/rows.stamp build/dep.mode | build/deps.ok
	$(CC) $(NM_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(GPU_MUTANT): $(GPU_RUN_OBJ) build/gpu/dev_fake.o $(filter-out build/gpu/host_rows.o,$(GPU_HOST_OBJ)) build/gpu/mutant/host_rows.o $(CLI_LIB) $(LIB)
	$(CC) $(NM_CFLAGS) -o $@ $^ $(NM_LDLIBS) $(LDFLAGS)

build/gpu/%.cu.o: gpu/%.cu build/dep.mode
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -MMD -MP -MF $(@:.o=.d) -c $< -o $@

$(GPU_BIN): $(GPU_RUN_OBJ) $(GPU_HOST_OBJ) $(GPU_CU:%.cu=build/%.cu.o) $(CLI_LIB) $(LIB)
	@mkdir -p bin
	$(NVCC) $(GPU_ARCH) -o $@ $^ -lcublasLt -lcublas -lmpfr -lgmp -lm -lgomp $(LDFLAGS)

# the allocation functions wrapped: table 11 counts the bytes a trainer holds
BENCH_WRAP := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free
bench/nanmap-bench: $(BENCH_SRC) $(NATIVE_OBJ) $(CLI_LIB) $(LIB)
	$(CC) $(NM_CFLAGS) -o $@ $(BENCH_SRC) $(NATIVE_OBJ) $(CLI_LIB) $(LIB) $(NM_LDLIBS) $(BENCH_WRAP) $(LDFLAGS)

bench: deps
	$(MAKE) --no-print-directory bench/nanmap-bench
	bench/nanmap-bench

# sweep: every case in cases/ and cases/claims/; sweep-quick: their coarse
# grids, written under build/sweep-quick/ (CI runs it).
sweep: deps
	$(MAKE) --no-print-directory all
	$(BIN) sweep cases

sweep-quick: deps
	$(MAKE) --no-print-directory all
	$(BIN) sweep --quick cases

# the golden files (nanmap check CASE/OUTPUT and golden list find them under
# PREFIX/share/nanmap/golden, beside the installed command)
GOLDEN_FILES := $(sort $(wildcard golden/*.golden)) golden/README.md
# ldconfig after installing into a folder the dynamic linker searches (the
# system's lib folders and those its configuration, LD_SO_CONF, names;
# LDCONFIG=true skips it)
LDCONFIG ?= ldconfig
LD_SO_CONF ?= /etc/ld.so.conf /etc/ld.so.conf.d/*.conf
LD_SEARCHED = { case "$(1)" in /lib | /usr/lib | /lib64 | /usr/lib64) true ;; \
  *) cat $(LD_SO_CONF) 2>/dev/null | grep -qxF "$(1)" ;; esac; }

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/nanmap $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/nanmap
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/libnanmap.a
	install -m 755 $(SHLIB_REAL) $(DESTDIR)$(PREFIX)/lib/
	ln -sf $(notdir $(SHLIB_REAL)) $(DESTDIR)$(PREFIX)/lib/$(SHLIB_SONAME)
	ln -sf $(SHLIB_SONAME) $(DESTDIR)$(PREFIX)/lib/libnanmap.so
	@# the headers side by side, as programs include them ("nm_golden.h"):
	@# their includes of each other lose the layer folder
	for h in $(PUBLIC_H); do sed 's|^#include "emu/[a-z]*/|#include "|' $$h >$(DESTDIR)$(PREFIX)/include/nanmap/$${h##*/}.tmp && \
	  chmod 644 $(DESTDIR)$(PREFIX)/include/nanmap/$${h##*/}.tmp && \
	  mv $(DESTDIR)$(PREFIX)/include/nanmap/$${h##*/}.tmp $(DESTDIR)$(PREFIX)/include/nanmap/$${h##*/} || exit 1; done
	install -m 644 nanmap.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/nanmap.pc
	install -d $(DESTDIR)$(PREFIX)/share/nanmap/golden
	install -m 644 $(GOLDEN_FILES) $(DESTDIR)$(PREFIX)/share/nanmap/golden/
	@# the dynamic linker's cache knows the new library only after ldconfig;
	@# a PREFIX outside its search path needs an rpath or LD_LIBRARY_PATH (README)
	@if [ -z "$(DESTDIR)" ] && $(call LD_SEARCHED,$(PREFIX)/lib); then \
	  if [ "$$(id -u)" = 0 ]; then echo "$(LDCONFIG)"; $(LDCONFIG); \
	  else echo "install: run ldconfig as root so that programs find $(PREFIX)/lib/$(SHLIB_SONAME)"; fi; \
	fi

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/nanmap $(DESTDIR)$(PREFIX)/lib/libnanmap.a \
	  $(DESTDIR)$(PREFIX)/lib/libnanmap.so $(DESTDIR)$(PREFIX)/lib/$(SHLIB_SONAME) \
	  $(DESTDIR)$(PREFIX)/lib/$(notdir $(SHLIB_REAL)) \
	  $(addprefix $(DESTDIR)$(PREFIX)/include/nanmap/,$(notdir $(PUBLIC_H))) \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig/nanmap.pc \
	  $(addprefix $(DESTDIR)$(PREFIX)/share/nanmap/golden/,$(notdir $(GOLDEN_FILES)))
	-rmdir $(DESTDIR)$(PREFIX)/include/nanmap $(DESTDIR)$(PREFIX)/share/nanmap/golden \
	  $(DESTDIR)$(PREFIX)/share/nanmap 2>/dev/null

format:
	clang-format -i $(foreach d,$(LAYER_DIRS) emu/cli emu/sweep tests/oracles,$(d)/*.[ch]) tests/*.[ch] tests/*/*.[ch] bench/*.c

lint:
	sh tests/layers.sh
	clang-tidy --quiet $(foreach d,$(LAYER_DIRS) emu/cli emu/sweep tests/oracles,$(d)/*.c) -- $(BASE_CFLAGS) 2>/dev/null
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability --inline-suppr $(INC) $(LAYER_DIRS) emu/cli emu/sweep tests/oracles

clean:
	rm -rf build lib bin nanmap.pc bench/nanmap-bench

# every object's header list, as the compiler wrote it (absent before the first build)
-include $(wildcard $(patsubst %.o,%.d,$(LIB_OBJ) $(CLI_OBJ) $(ORACLE_OBJ) \
  $(TEST_OBJ) $(GPU_HOST_OBJ) build/emu/cli/main.o $(GPU_RUN_OBJ) build/gpu/dev_fake.o \
  $(MPI_SWEEP_OBJ) $(GPU_CU:%.cu=build/%.cu.o) \
  $(sort $(foreach n,$(FUZZ_NAMES),$(call FUZZ_OBJ,$(n))))))
