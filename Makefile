# Makefile for the tiny GPT trainer. `make` builds train, sample and lab; `make run` trains the
# default config; `make test` runs the test suite. Both install cJSON first when it is missing.
CC ?= cc
NATIVE ?= 1
NO_OMP ?= 0
SANITIZE ?= 0
MPI ?= 0
MPICC ?= mpicc

# make MPI=1: the same programs built with MPI's compiler wrapper, so that `mpirun -np N ./train`
# trains data-parallel (base/dist.c); the default build has no MPI dependency.
ifeq ($(MPI),1)
  override CC := $(MPICC)
  ifeq ($(shell command -v $(MPICC) 2>/dev/null),)
    $(error make MPI=1 needs $(MPICC): install MPI (Debian/Ubuntu: apt-get install libopenmpi-dev openmpi-bin))
  endif
  MPI_FLAGS := -DUSE_MPI
endif

# Probe what the compiler accepts instead of assuming gcc on Linux.
try_flag = $(shell printf 'int main(void){return 0;}' | $(CC) $(1) -x c - -o /dev/null >/dev/null 2>&1 && echo "$(1)")
# MARCH=NAME builds for -march=NAME instead of this machine (e.g. MARCH=x86-64-v3: AVX2 + FMA).
ifneq ($(MARCH),)
  ARCH_FLAGS := -march=$(MARCH)
else ifeq ($(NATIVE),1)
  ARCH_FLAGS := $(call try_flag,-march=native)
endif
# The kernels' vector width (kernels/vec.h) follows the target: 16 float32 lanes with AVX-512, 8 with
# AVX2 + FMA, 4 with NEON, scalar C without a vector FMA. VEC=16, 8, 4 or 0 forces one, for the
# tests: VEC=16 on an AVX2 target runs the AVX-512 build's source as two 8-wide halves.
# (-Wno-psabi: gcc notes that 64-byte vectors are passed differently without AVX-512; kernels/vec.h's
# functions are static inline, so no call crosses that ABI)
ifneq ($(VEC),)
  VEC_FLAGS := -DVEC_BYTES=$(shell expr 4 \* $(VEC)) -Wno-psabi
endif
ifeq ($(NO_OMP),1)
  OMP_FLAGS := $(call try_flag,-fopenmp-simd)
  OMP_LIBS :=
else
  OMP_FLAGS := $(call try_flag,-fopenmp)
  OMP_LIBS := $(OMP_FLAGS)
  ifeq ($(OMP_FLAGS),)
    # Apple clang has no -fopenmp of its own but works with Homebrew's libomp
    LIBOMP := $(firstword $(wildcard /opt/homebrew/opt/libomp /usr/local/opt/libomp))
    ifneq ($(LIBOMP),)
      OMP_TRY := -Xpreprocessor -fopenmp -I$(LIBOMP)/include
      OMP_OK := $(shell printf '\043include <omp.h>\nint main(void){return omp_get_max_threads();}' | \
                  $(CC) $(OMP_TRY) -x c - -o /dev/null -L$(LIBOMP)/lib -lomp >/dev/null 2>&1 && echo yes)
      ifeq ($(OMP_OK),yes)
        OMP_FLAGS := $(OMP_TRY)
        OMP_LIBS := -L$(LIBOMP)/lib -lomp
      endif
    endif
  endif
  ifeq ($(OMP_FLAGS),)
    $(info note: $(CC) does not accept -fopenmp (and no Homebrew libomp): building single-threaded)
    OMP_FLAGS := $(call try_flag,-fopenmp-simd)
  endif
endif

# cJSON: pkg-config when it knows the library, else the plain -lcjson. Recursive (=) so that
# the values are taken after `deps` has installed it.
# Without pkg-config, look in the usual prefixes (/usr, /usr/local, Homebrew's).
CJSON_PREFIX = $(firstword $(patsubst %/include/cjson/cJSON.h,%,$(wildcard /usr/include/cjson/cJSON.h /usr/local/include/cjson/cJSON.h /opt/homebrew/include/cjson/cJSON.h)))
CJSON_CFLAGS = $(shell pkg-config --cflags libcjson 2>/dev/null || { [ -n "$(CJSON_PREFIX)" ] && [ "$(CJSON_PREFIX)" != /usr ] && echo -I$(CJSON_PREFIX)/include; })
CJSON_LIBS = $(shell pkg-config --libs libcjson 2>/dev/null || { [ -n "$(CJSON_PREFIX)" ] && [ "$(CJSON_PREFIX)" != /usr ] && echo -L$(CJSON_PREFIX)/lib; echo -lcjson; })

WARN := -Wall -Wextra -Wpedantic
CFLAGS ?= -O3
ifeq ($(SANITIZE),1)
  # AddressSanitizer + UndefinedBehaviorSanitizer (make test-asan); -O1 keeps the stacks readable.
  # float-cast-overflow (a NaN or out-of-range float converted to an integer) is undefined
  # behaviour that -fsanitize=undefined leaves out in gcc and clang; it is asked for by name.
  CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined,float-cast-overflow \
            -fno-sanitize-recover=undefined,float-cast-overflow
endif
# -ffp-contract=fast lets the compiler fuse a*b+c into FMA in plain C loops (ISO C mode turns
# it off otherwise); no trapping math and no errno let compares and sqrt vectorise. Neither
# reorders arithmetic, so results stay deterministic for a given binary.
ALL_CFLAGS = -std=c11 -I. $(CFLAGS) $(WARN) -ffp-contract=fast -fno-trapping-math -fno-math-errno $(ARCH_FLAGS) $(VEC_FLAGS) $(OMP_FLAGS) $(MPI_FLAGS) $(CJSON_CFLAGS)
LDLIBS = $(CJSON_LIBS) $(OMP_LIBS) -lm

# The library every program links: the ground (base/), the kernels, the lesson's definition and
# model (the top level), and the run's files that the programs share.
BASE := base/common.c base/outfile.c base/signals.c base/dist.c base/rng.c base/data.c base/config_keys.c base/config.c base/config_text.c
KERNELS := kernels/matmul.c kernels/peak.c kernels/attention_engine.c kernels/qk_norm_engine.c kernels/model_engine.c kernels/model_layout.c
LESSON := attention.c attention_stats.c model.c
CORE := $(BASE) $(KERNELS) $(LESSON) run/optimizer.c run/checkpoint.c run/safetensors.c run/safetensors_export.c run/safetensors_names.c run/generate.c run/decode.c run/probe.c run/induction.c run/workers.c run/flops.c report/attention_map.c teach/lab_core.c
# every header of the tree, for the rules that are not compiled through the dependency files
CORE_H := $(wildcard *.h */*.h)
# Objects of each compiler/flag combination live apart; build/.config names the combination the
# binaries were last linked with, so switching CC, NO_OMP or NATIVE relinks them.
BUILD_ID := $(notdir $(firstword $(CC)))$(if $(filter 1,$(NO_OMP)),-noomp)$(if $(MARCH),-$(MARCH),$(if $(filter 0,$(NATIVE)),-generic))$(if $(VEC),-vec$(VEC))$(if $(filter 1,$(SANITIZE)),-asan)$(if $(filter 1,$(MPI)),-mpi)
OBJDIR := build/$(BUILD_ID)
STAMP ?= build/.config
$(shell mkdir -p build; [ "$$(cat $(STAMP) 2>/dev/null)" = "$(BUILD_ID)" ] || echo "$(BUILD_ID)" > $(STAMP))
CORE_OBJ := $(CORE:%.c=$(OBJDIR)/%.o)
CORE64_OBJ := $(CORE:%.c=$(OBJDIR)/f64/%.o)
# the lab's step-through pages (./lab examples --html FILE) and the HTML writer they use
PAGES := report/html.c teach/lab_pages.c teach/mistakes_page.c teach/online_page.c
PAGES_OBJ := $(PAGES:%.c=$(OBJDIR)/%.o)
# ./lab's commands (lab.c is their table): the option helpers they share, the lesson's commands
# and the gradient check
LAB_CMDS := teach/lab_args.c teach/lab_lessons.c teach/lab_gradcheck.c
LAB_CMDS_OBJ := $(LAB_CMDS:%.c=$(OBJDIR)/%.o)
LAB_CMDS64_OBJ := $(LAB_CMDS:%.c=$(OBJDIR)/f64/%.o)
# ./sample --explain: the measures, their table and JSON, the controlled experiment and the page
EXPLAIN := teach/explain.c teach/explain_report.c teach/explain_experiment.c teach/explain_page.c
EXPLAIN_OBJ := $(EXPLAIN:%.c=$(OBJDIR)/%.o)
EXPLAIN64_OBJ := $(EXPLAIN:%.c=$(OBJDIR)/f64/%.o)
PAGES64_OBJ := $(PAGES:%.c=$(OBJDIR)/f64/%.o)
TEST_SRC := $(sort $(wildcard tests/test_*.c))
# Each tests/test_NAME.c defines its table `const TestCase tests_NAME[]`, and that is its one
# registration: the runner's list of tables, TEST_TABLES(X), is made here from the file names (a
# file without its table fails to link).
TEST_TABLES := $(patsubst tests/test_%.c,X(%),$(TEST_SRC))
TEST_H := $(wildcard tests/*.h)
TEST_LIB := tests/page_check.c tests/programs.c run/sweep_grid.c

PREFIX ?= /usr/local

.PHONY: all deps web bench-web mpi-test-build run test check-safetensors test-asan test-browser test-arm64 test-chaos fuzz demo demo-mistakes demo-explain demo-stability demo-induction bench bench-busy bench-context bench-torch docs-check readme-check clean shakespeare install uninstall explain-model
all: deps train sample lab lab64 data/default.txt

deps:
	@sh tools/ensure-deps.sh

# Each object also writes its dependency file (-MMD): the headers it included, from any folder,
# so that changing one rebuilds exactly what depends on it.
DEPFLAGS = -MMD -MP
$(OBJDIR)/%.o: %.c | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(OBJDIR)/f64/%.o: %.c | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -DREAL_DOUBLE -c $< -o $@
-include $(wildcard $(OBJDIR)/*.d $(OBJDIR)/*/*.d $(OBJDIR)/*/*/*.d $(OBJDIR)/*/*/*/*.d)

# The comparison's outputs (report/compare.h): the log (compare_log.c) and its end (report.c), checked writing
# (writer.c), compare.csv, report.md and its reading, the SVG panels, report.html (report_html.c,
# over report/html.c, the HTML writer the lab's pages use too).
REPORT := report/report.c report/compare_log.c report/writer.c report/html_markdown.c report/compare_csv.c report/report_md.c report/reading.c \
    report/svg.c report/report_html.c
REPORT_OBJ := $(REPORT:%.c=$(OBJDIR)/%.o)
REPORT64_OBJ := $(REPORT:%.c=$(OBJDIR)/f64/%.o)

# ./train: train.c (the modes and the training loop) over run/args.c (the command line),
# run/setup.c (the configuration, the checks and the data), run/session.c, run/progress.c and
# run/session_stop.c (the runs trained side by side: start and end, the terminal, stopping short),
# run/run.c (one run's life), run/bench.c (--bench), run/outdir.c (its output directory),
# run/stop.c (signals) and the comparison's report (REPORT)
TRAIN_SRC := train.c run/args.c run/setup.c run/session.c run/progress.c run/session_stop.c run/run.c run/bench.c run/outdir.c run/stop.c run/sweep.c run/sweep_results.c run/sweep_outputs.c run/sweep_grid.c $(REPORT) report/html.c
TRAIN_OBJ := $(TRAIN_SRC:%.c=$(OBJDIR)/%.o)
train: $(TRAIN_OBJ) $(CORE_OBJ) $(STAMP)
	$(CC) $(ALL_CFLAGS) $(filter %.o,$^) -o $@ $(LDLIBS)

# The test build of train (build/train-test): the same sources with the fault injection the tests
# drive through TGPT_TEST_* environment variables (run/run.c). The shipped ./train has none of it.
TRAIN_TEST_OBJ := $(TRAIN_SRC:%.c=$(OBJDIR)/hooks/%.o)
$(OBJDIR)/hooks/%.o: %.c | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -DTGPT_TEST_HOOKS -c $< -o $@

build/train-test: $(TRAIN_TEST_OBJ) $(CORE_OBJ) $(STAMP)
	$(CC) $(ALL_CFLAGS) $(filter %.o,$^) -o $@ $(LDLIBS)

# The MPI build of train that the tests run under mpirun (build/train-mpi; ./train stays as it is).
# `make test` builds it when mpicc is installed; the MPI tests skip, saying so, when it is not.
build/train-mpi: $(TRAIN_OBJ) $(CORE_OBJ) $(STAMP)
	$(CC) $(ALL_CFLAGS) $(filter %.o,$^) -o $@ $(LDLIBS)

mpi-test-build:
	@if command -v $(MPICC) >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then \
	    $(MAKE) --no-print-directory MPI=1 SANITIZE=0 STAMP=build/.config-mpi build/train-mpi; \
	else echo "note: $(MPICC) or mpirun not found: the MPI tests will be skipped"; rm -f build/train-mpi; fi

sample: $(OBJDIR)/sample.o $(EXPLAIN_OBJ) $(OBJDIR)/report/html.o $(CORE_OBJ) $(STAMP)
	$(CC) $(ALL_CFLAGS) $(filter %.o,$^) -o $@ $(LDLIBS)

# The test build of sample (build/sample-test): the writer's fault injection (base/outfile.c,
# TGPT_TEST_SIGNAL_WRITING) that the tests drive; the shipped ./sample has none of it.
SAMPLE_TEST_OBJ := $(OBJDIR)/hooks/sample.o $(OBJDIR)/hooks/base/outfile.o $(EXPLAIN_OBJ) $(OBJDIR)/report/html.o \
    $(filter-out $(OBJDIR)/base/outfile.o,$(CORE_OBJ))
build/sample-test: $(SAMPLE_TEST_OBJ) $(STAMP)
	$(CC) $(ALL_CFLAGS) $(filter %.o,$^) -o $@ $(LDLIBS)

lab: $(OBJDIR)/lab.o $(LAB_CMDS_OBJ) $(PAGES_OBJ) $(CORE_OBJ) $(STAMP)
	$(CC) $(ALL_CFLAGS) $(filter %.o,$^) -o $@ $(LDLIBS)

# the lab and the gradient checks in double precision, from the very same sources
lab64: $(OBJDIR)/f64/lab.o $(LAB_CMDS64_OBJ) $(PAGES64_OBJ) $(CORE64_OBJ) $(STAMP)
	$(CC) $(ALL_CFLAGS) -DREAL_DOUBLE $(filter %.o,$^) -o $@ $(LDLIBS)

tools/gencorpus: tools/gencorpus.c base/repeat_line.h
	$(CC) -std=c11 -O2 $(WARN) $< -o $@

# The GEMM alone on one training worker's products (docs/PERFORMANCE.md); never run by the tests.
tools/bench_gemm: tools/bench_gemm.c $(CORE_OBJ) $(STAMP)
	$(CC) $(ALL_CFLAGS) -I. $< $(CORE_OBJ) -o $@ $(LDLIBS)

# The embedded corpus is committed; this rule regenerates it (the tests check it is identical).
data/default.txt: | tools/gencorpus
	./tools/gencorpus -o $@

FUZZ_SRC := tests/fuzz/harnesses.c

# The runner and the test files are compiled one object each, so that `make -j` builds them side
# by side; the runner's object alone sees the list of tables, and is rebuilt when a file comes or goes.
TEST_OBJ := $(patsubst %.c,$(OBJDIR)/%.o,tests/run_tests.c $(TEST_SRC) $(TEST_LIB) $(FUZZ_SRC))
TEST64_OBJ := $(patsubst %.c,$(OBJDIR)/f64/%.o,tests/run_tests.c $(TEST_SRC) $(TEST_LIB) $(FUZZ_SRC))
$(OBJDIR)/tests/run_tests.o $(OBJDIR)/f64/tests/run_tests.o: ALL_CFLAGS += '-DTEST_TABLES(X)=$(TEST_TABLES)'
$(OBJDIR)/tests/run_tests.o $(OBJDIR)/f64/tests/run_tests.o: $(OBJDIR)/tests/tables.txt
# the list of tables as a file that changes only when the list does
$(OBJDIR)/tests/tables.txt: FORCE
	@mkdir -p $(@D); [ "$$(cat $@ 2>/dev/null)" = "$(TEST_TABLES)" ] || echo "$(TEST_TABLES)" > $@
.PHONY: FORCE

tests/run_tests: $(TEST_OBJ) $(REPORT_OBJ) $(PAGES_OBJ) $(EXPLAIN_OBJ) $(CORE_OBJ) $(STAMP)
	$(CC) $(ALL_CFLAGS) $(filter %.o,$^) -o $@ $(LDLIBS)

tests/run_tests64: $(TEST64_OBJ) $(REPORT64_OBJ) $(PAGES64_OBJ) $(EXPLAIN64_OBJ) $(CORE64_OBJ) $(STAMP)
	$(CC) $(ALL_CFLAGS) -DREAL_DOUBLE $(filter %.o,$^) -o $@ $(LDLIBS)

# The pages in a real browser: headless Chromium opens every step of the lab's pages (#step=N),
# checks the rendered DOM against ./lab's JSON output and that no request left the file, then the
# report.html of a short real comparison, and takes screenshots (build/browser/*.png). Installs
# Debian's chromium when missing and it can; skips, saying so, where it cannot.
# (it needs only the page parser of TEST_LIB: run/sweep_grid.c would need base/common.c too)
tests/browser_test: tests/browser_test.c tests/page_check.c $(TEST_H) $(CORE_H) $(STAMP) | deps
	$(CC) $(ALL_CFLAGS) -I. tests/browser_test.c tests/page_check.c -o $@ $(LDLIBS)

test-browser: lab train sample tests/browser_test build/webnative/web_native
	@if sh tools/ensure-chromium.sh; then ./tests/browser_test; \
	else echo "test-browser: SKIPPED: no Chromium to run the pages in (see the line above)"; fi

# The attention playground (web/playground.html): the trainer's sources (with the config and the
# checkpoints) and web/ (the entry points, the JSON parser, the WASI shim) compiled to one wasm32 module, embedded in one page with its script (tools/build-web.sh installs clang's
# wasm32 target, lld and wasi-libc when they are missing). The native build does not need them.
WEB_SRC := base/common.c base/rng.c base/data.c base/config.c base/config_text.c base/config_keys.c base/outfile.c $(KERNELS) attention.c \
	attention_stats.c model.c run/optimizer.c run/checkpoint.c run/generate.c run/decode.c run/induction.c base/json_own.c web/wasi_shim.c web/web_main.c
# the same natively: the system's cJSON and files in build/webnative/ for the page's memory file system
WEB_NATIVE_SRC := $(filter-out base/json_own.c web/wasi_shim.c,$(WEB_SRC))
web: web/playground.html
web/playground.html: $(WEB_SRC) $(CORE_H) base/json.h base/json_own.h web/playground.in.html data/default.txt tools/build-web.sh
	sh tools/build-web.sh $@

# The same sources natively, 4-wide vectors (the module's width), one thread: the losses the page's
# must equal (tools/web-check.sh builds it the same way; the browser test runs it)
build/webnative/web_native: $(WEB_NATIVE_SRC) $(CORE_H) tools/web_native.c | deps
	@mkdir -p build/webnative
	$(CC) -std=c11 -I. -O3 -march=native -DVEC_BYTES=16 -DPG_DIR='"build/webnative/"' -Wno-psabi -Wno-unknown-pragmas \
	    -ffp-contract=fast -fno-trapping-math -fno-math-errno $(WARN) $(WEB_NATIVE_SRC) tools/web_native.c -o $@ -lcjson -lm

# The chaos test (its own target; CI runs it): SIGKILL, SIGTERM and SIGINT at random moments in
# every phase of ./train, the run directories moved or copied before each resume, two trainers on
# one out_dir, a real divergence (tests/chaos.c).
tests/chaos: tests/chaos.c $(TEST_H) $(CORE_H) $(CORE_OBJ) $(STAMP)
	$(CC) $(ALL_CFLAGS) -I. tests/chaos.c $(CORE_OBJ) -o $@ $(LDLIBS)

test-chaos: all tests/chaos
	./tests/chaos $(CHAOS_SEED)

# the default job; a second `make run` replaces its own earlier output (out/default). ARGS: more
# options for the trainer, e.g. `make run ARGS=--train.max_steps=30` (make readme-check uses it)
run: all
	./train configs/default.json --train.overwrite=true $(ARGS)

# One runner, one closing line: the float32 suite also runs the float64 build's numeric tests.
test: all tools/gencorpus tools/induction_report build/train-test build/sample-test tests/run_tests tests/run_tests64 mpi-test-build
	sh tools/web-check.sh
	./tests/run_tests

# the whole suite under AddressSanitizer and UndefinedBehaviorSanitizer (binaries included)
test-asan:
	$(MAKE) SANITIZE=1 test

# The ARM64 build (NEON vectors; `make test-arm64 VEC=0`: the scalar C kernels), cross-compiled and
# run under QEMU's user-mode emulation. Needs Debian's gcc-aarch64-linux-gnu, libcjson-dev:arm64
# (multiarch) and qemu-user. Every program runs with one thread, OMP_THREAD_LIMIT=1 included (two
# OpenMP threads hang under qemu-user 7.2, in libgomp itself) and the suites without the tests that start
# the programs as child processes (QEMU runs only the process it is given) or fork (a forked
# child spins forever under qemu-user 7.2); a short training run stands in for those. Each
# emulated program is one thread, so the float64 suite runs beside the rest, on the other core.
# Each emulated program gets 20 minutes (a hang fails the run instead of stalling CI). The binaries
# replace the native ones; the next native `make` relinks them (build/.config).
ARM64_CC ?= aarch64-linux-gnu-gcc
QEMU_ARM64 ?= timeout 1200 qemu-aarch64 -L /usr/aarch64-linux-gnu
ARM64_SKIP := --skip cli_ --skip crash_ --skip mpi_ --skip float64_build --skip robust_temp_removed_on_exit \
    --skip robust_fifo_and_devices_refused --skip robust_rng_below_bounded --skip lab_mistakes_json \
    --skip lab_pages_same_digits_as_terminal --skip lab_html_command_line --skip lab_mistakes_html_command_line \
    --skip lab_online_html_command_line --skip safetensors_programs --skip safetensors_converter_checks \
    --skip sweep_bad_input --skip sweep_outputs --skip sweep_divergence_recorded --skip sweep_stop_and_resume \
    --skip sweep_resume_refuses_other_runs --skip sweep_files_not_regular_refused --skip sweep_crafted_state_refused \
    --skip sweep_long_csv_lines --skip sweep_killed_stops_its_run
test-arm64:
	$(MAKE) CC=$(ARM64_CC) NATIVE=0 MARCH= train tests/run_tests tests/run_tests64
	OMP_NUM_THREADS=1 OMP_THREAD_LIMIT=1 $(QEMU_ARM64) ./train --version
	@echo "the float64 suite runs beside the training run and the float32 suite; its output follows theirs"
	OMP_NUM_THREADS=1 OMP_THREAD_LIMIT=1 $(QEMU_ARM64) ./tests/run_tests64 $(ARM64_SKIP) > build/arm64-tests64.log 2>&1 & f64=$$!; \
	OMP_NUM_THREADS=1 OMP_THREAD_LIMIT=1 $(QEMU_ARM64) ./train configs/default.json --model.n_layer=2 --model.n_embd=32 \
	    --data.val_fraction=0.01 --train.batch_size=4 --train.max_steps=20 --log.eval_interval=10 \
	    --log.eval_steps=2 --sample.tokens=50 --train.out_dir=build/arm64-run --train.overwrite=true > build/arm64-run.log && \
	tail -n 1 build/arm64-run.log && \
	OMP_NUM_THREADS=1 OMP_THREAD_LIMIT=1 $(QEMU_ARM64) ./tests/run_tests $(ARM64_SKIP); f32=$$?; \
	wait $$f64; f64=$$?; echo "the float64 suite under qemu-aarch64:"; cat build/arm64-tests64.log; \
	[ $$f32 = 0 ] && [ $$f64 = 0 ]

# libFuzzer harnesses (clang) for the config parser, the checkpoint loader, the UTF-8 text loader,
# the safetensors reader and a sweep's sweep.json. Run one: ./tests/fuzz/fuzz_config -max_total_time=600 FUZZ_WORK_DIR tests/fuzz/corpus/config
# Inputs that ever crashed go to tests/fuzz/regressions/<target>/, which `make test` replays.
FUZZ_CC ?= clang
FUZZ_TARGETS := tests/fuzz/fuzz_config tests/fuzz/fuzz_checkpoint tests/fuzz/fuzz_utf8 tests/fuzz/fuzz_safetensors \
    tests/fuzz/fuzz_sweep_state
fuzz: deps $(FUZZ_TARGETS)
tests/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_SRC) tests/fuzz/harnesses.h $(CORE) run/sweep_grid.c $(CORE_H)
	$(FUZZ_CC) -std=c11 -I. -g -O1 -fsanitize=fuzzer,address,undefined $(CJSON_CFLAGS) -I. $< $(FUZZ_SRC) $(CORE) run/sweep_grid.c -o $@ $(CJSON_LIBS) -lm

# Every figure the docs mark (<!--fig ...-->, <!--output ...-->) regenerated and checked against
# what the doc states: tools/docs-check.sh, with the runs of docs/experiments.txt.
docs-check: all tools/gencorpus tools/induction_report data/induction.txt
	sh tools/docs-check.sh

# The README's commands, in order, in a fresh copy of the tracked files (tools/readme-check.sh),
# the long ones with fewer training steps; fails at the first that exits non-zero.
readme-check:
	sh tools/readme-check.sh $(READMECHECK_ARGS)

# The safetensors files checked outside the C code (tests/safetensors_check.py): a NumPy reader and
# nanoGPT's forward pass in float64 against the programs' logits, both ways; and the nanoGPT
# converter when PyTorch is installed. Needs python3-numpy (CI installs it); make test does not.
PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)
check-safetensors: all
	$(PYTHON) tests/safetensors_check.py

demo: all
	./train configs/scaling_demo.json --compare-scaling --train.overwrite=true $(ARGS)

# The other common mistakes (docs/mistakes.md): masking with 0 instead of -inf or not at all, and
# the softmax over the wrong axis, each against the correct model, with the honest loss gen_loss.
demo-mistakes: all
	./train configs/mistake_mask.json --compare model.attn_mask=causal,zero,none --train.overwrite=true $(ARGS)
	./train configs/mistake_axis.json --compare model.softmax_axis=keys,queries --train.overwrite=true $(ARGS)

# The fourth mistake (docs/mistakes.md, section 4): attention weights read as explanations. A
# model that learns the corpus's copy, rev, kv and bracket lines (configs/explain.json; find
# stays at chance), then its attention against the effects of each position on held-out lines
# whose deciding position is known, 1000 answer characters per kind.
demo-explain: all tools/gencorpus
	./train configs/explain.json --train.overwrite=true --sample.tokens=0 $(ARGS)
	./tools/gencorpus --seed 7 --bytes 300000 -o out/explain/heldout.txt
	./sample out/explain/checkpoint.bin --explain --lines out/explain/heldout.txt --per-kind $(or $(PER_KIND),1000)

# Past the scale (docs/scaling.md, "Past the scale: logit growth"): learning-rate sweeps of a
# small model at lr 1e-3 .. 0.3 for the seeds 1337, 1 and 2, into out/stability/SEED/: attn_scale
# sqrt vs none (scale/), then with attn_scale sqrt QK-norm none vs layernorm (qk/) and z-loss 1e-4
# without QK-norm (zloss/).
# docs/stability/SEED/ holds each sweep's sweep.csv and report.md.
STABILITY_SWEEP = ./train configs/stability.json --sweep train.lr=1e-3..3e-1/6 --train.overwrite=true
demo-stability: all
	for seed in 1337 1 2; do \
	  $(STABILITY_SWEEP) --compare model.attn_scale=sqrt,none --train.seed=$$seed --train.out_dir=out/stability/$$seed/scale || exit 1; \
	  $(STABILITY_SWEEP) --compare model.qk_norm=none,layernorm --train.seed=$$seed --train.out_dir=out/stability/$$seed/qk || exit 1; \
	  $(STABILITY_SWEEP) --train.z_loss=1e-4 --train.seed=$$seed --train.out_dir=out/stability/$$seed/zloss || exit 1; \
	done

# What attention learns (docs/induction.md): a 2-layer model of data/induction.txt (tools/gencorpus
# --repeat 50: half the lines a random letter sequence twice, half the embedded corpus's lines)
# trained with and without the scale in the fan_in initialisation (configs/induction.json) and a
# 1-layer control, seeds 1337, 1 and 2 (INDUCTION_SEEDS), into out/induction/SEED/
# (tools/induction-demo.sh); tools/induction_report prints the table and writes
# out/induction/report.html with the attention maps before and after the induction head forms.
# The probe rows of the logs go to docs/induction/SEED/, which make docs-check reads.
data/induction.txt: | tools/gencorpus
	./tools/gencorpus --seed 57 --repeat 50 --bytes 700000 -o $@

tools/induction_report: tools/induction_report.c
	$(CC) -std=c11 -O2 $(WARN) $< -o $@ -lm

demo-induction: all data/induction.txt tools/induction_report
	ARGS="$(ARGS)" sh tools/induction-demo.sh $(INDUCTION_SEEDS)

# The explanation lesson in minutes (docs/EXPLAIN.md): a model of the corpus's copy lines alone
# (configs/explain_quick.json, data/copy.txt from tools/gencorpus), which learns to copy, then
# --explain on a copy prompt whose second half it predicts.
data/copy.txt: | tools/gencorpus
	./tools/gencorpus --seed 11 --bytes 1500000 -o $@.tmp && grep '^copy: ' $@.tmp > $@ && rm -f $@.tmp

explain-model: all data/copy.txt
	./train configs/explain_quick.json --train.overwrite=true $(ARGS)
	./sample out/explain_quick/checkpoint.bin --explain --prompt "copy: abc | abc"

bench: all
	@./train configs/bench_w1.json --bench=$(or $(BENCH_STEPS),30)
	@./train configs/bench_w2.json --bench=$(or $(BENCH_STEPS),20)
	@./train configs/default.json --bench=$(or $(BENCH_STEPS),30)

# The step and the sampler with one core kept busy by a spinning process it starts and stops:
# default threads against one thread, alternated (tools/bench-busy.sh; a few minutes).
bench-busy: train
	@sh tools/bench-busy.sh $(or $(BENCH_PAIRS),3) $(or $(BENCH_STEPS),20)

# The cost curve (docs/PERFORMANCE.md): ms/step, the attention phase and peak memory for T = 64 ..
# 4096 at 4096 tokens per step, full causal attention and a window of 128 keys; writes
# build/bench-context.md, .csv and .svg. A benchmark of a few minutes, never run by the tests.
tools/bench_context: tools/bench_context.c
	$(CC) -std=c11 -O2 $(WARN) $< -o $@ -lm

bench-context: train tools/bench_context
	./tools/bench_context $(BENCH_CONTEXT_ARGS)

# The playground's speed (docs/PLAYGROUND.md): its module's steps/s in headless Chromium beside the
# same sources natively on one thread, 4-wide (VEC=4) and at the machine's width, alternated over
# BENCH_WEB_PAIRS rounds (5), then the seconds from pressing Train in the page (compare mode) to
# the unscaled variant's entropy shown clearly below the scaled one's. Never run by the tests.
bench-web: web/playground.html
	@if sh tools/ensure-chromium.sh; then sh tools/bench-web.sh $(or $(BENCH_WEB_PAIRS),5) $(or $(BENCH_STEPS),20); \
	else echo "bench-web: no Chromium to run the page in (see the line above)"; exit 1; fi

# The program's step against PyTorch's at its fastest on this machine (tools/bench_torch.py tries
# its kernels and threads first), alternating the two: the ratio per pair and the median. Needs
# Debian's python3-torch and libopenblas0-pthread; never run by the tests or CI.
PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)
bench-torch: train
	$(PYTHON) tools/bench_torch.py W1 --pairs 5 30 -- ./train configs/bench_w1.json --bench=30
	$(PYTHON) tools/bench_torch.py W2 --pairs 3 20 -- ./train configs/bench_w2.json --bench=20

# Tiny Shakespeare into data/ (never committed); without a network it says how to use a local copy
shakespeare:
	@sh tools/get-shakespeare.sh -o data/tinyshakespeare.txt

install: train sample lab
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 train sample lab $(DESTDIR)$(PREFIX)/bin/

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/train $(DESTDIR)$(PREFIX)/bin/sample $(DESTDIR)$(PREFIX)/bin/lab

clean:
	rm -rf build train sample lab lab64 tests/run_tests tests/run_tests64 tests/browser_test tests/chaos tools/gencorpus tools/bench_gemm tools/bench_context $(FUZZ_TARGETS)
