# shootout build. One command builds everything: `make`.
#
#   make                 release build: build/release/shootout
#   make SANITIZE=1      ASan + UBSan build in build/asan/
#   make test            unit tests (cmocka) then end-to-end tests (pytest)
#   make check           `make test` with gcc and with ASan + UBSan, plus the
#                        unit tests built with clang
#   make fuzz            libFuzzer targets (clang) in build/fuzz/
#   make fuzz-run        runs each fuzz target for FUZZ_SECONDS (default 60)
#   make run             builds and runs the main job (`shootout run`)
#
# Warnings are errors everywhere, as in CI.

CC ?= cc
ifeq ($(origin CC),default)
CC := gcc
endif
PYTHON ?= /usr/bin/python3

ifeq ($(SANITIZE),1)
MODE := asan
MODE_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
MODE_LDFLAGS := -fsanitize=address,undefined
else
MODE := release
MODE_CFLAGS := -O2 -g
MODE_LDFLAGS :=
endif

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -Isrc $(WARN)
ALL_CFLAGS := $(CFLAGS_BASE) $(MODE_CFLAGS) $(CFLAGS)
ALL_LDFLAGS := $(MODE_LDFLAGS) $(LDFLAGS)
LIBS := -lm

# clang builds go to their own tree so both compilers can be checked side by side.
B := build/$(MODE)$(if $(findstring clang,$(CC)),-clang)
LIB_SRC := $(filter-out src/cli/main.c,$(wildcard src/*/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(B)/obj/%.o)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%)
FUZZ_SECONDS ?= 60

.PHONY: all test unit e2e check fuzz fuzz-run run clean
all: $(B)/shootout

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(B)/libshootout.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/shootout: $(B)/obj/src/cli/main.o $(B)/libshootout.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(B)/tests/%: tests/unit/%.c $(B)/libshootout.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -MMD -MP -o $@ $< $(B)/libshootout.a -lcmocka $(LIBS)

unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done

e2e: $(B)/shootout
	SHOOTOUT_BIN=$(abspath $(B)/shootout) $(PYTHON) -m pytest -q tests/e2e

test: unit e2e

check:
	$(MAKE) test
	$(MAKE) CC=clang all unit
	$(MAKE) test SANITIZE=1

build/fuzz/%: tests/fuzz/%.c $(LIB_SRC)
	@mkdir -p $(dir $@)
	clang $(CFLAGS_BASE) -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -o $@ $< $(LIB_SRC) $(LIBS)

fuzz: $(FUZZ_BIN)

fuzz-run: fuzz
	@set -e; for f in $(FUZZ_BIN); do n=$$(basename $$f); \
	  mkdir -p build/fuzz/corpus-$$n; \
	  echo "== $$n for $(FUZZ_SECONDS)s"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 build/fuzz/corpus-$$n tests/fuzz/corpus/$$n; \
	done

run: $(B)/shootout
	$(B)/shootout run $(RUN_ARGS)

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
