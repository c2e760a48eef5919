# Thin wrapper: `make demo` and `make test` do everything on a fresh Debian 12 machine.
BUILD ?= build
JOBS ?= $(shell nproc)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Every Debian package the project needs, in one place.
DEBS := build-essential cmake pkg-config ccache git \
        libtorch-dev libgloo-dev libopenblas0-openmp \
        qt6-base-dev qt6-charts-dev libgl-dev xvfb xauth \
        libcli11-dev libfmt-dev libeigen3-dev libgtest-dev \
        libtomlplusplus-dev nlohmann-json3-dev clang \
        sentencepiece python3-torch

.PHONY: all deps build test gpu-check demo bench clean

all: build

deps:
	@missing=$$(for p in $(DEBS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	else echo "deps: all installed"; fi

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: deps
	$(MAKE) build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The trainer's NCCL/CUDA path compiled syntax-only against the CUDA toolkit's headers (no GPU,
# no build needed; skips with a message when no CUDA toolkit is installed). tests/gpu/.
gpu-check:
	JOBS=$(JOBS) bash tests/gpu/gpu_check.sh

# The demo builds only what it runs (the planner and the trainer, not the test targets); apt's
# and CMake's output go to $(BUILD)/demo-setup.log, the demo's own to the terminal.
DEMO_LOG := $(BUILD)/demo-setup.log
# The sub-makes by a variable of their own: a recipe line that names $(MAKE) itself runs even under
# `make -n`, and this line also builds, so `make -n demo` would not be a dry run.
DEMO_MAKE = $(MAKE) --no-print-directory
demo:
	@mkdir -p $(BUILD); : > $(DEMO_LOG); \
	echo "setup: installing what is missing and building shardcast, shardcast-train (output in $(DEMO_LOG))"; \
	if { $(DEMO_MAKE) deps && $(DEMO_MAKE) $(BUILD)/CMakeCache.txt && \
	     cmake --build $(BUILD) -j $(JOBS) --target shardcast shardcast-train; } >> $(DEMO_LOG) 2>&1; \
	then echo "setup: done"; \
	else echo "setup failed; the last lines of $(DEMO_LOG):" >&2; tail -n 25 $(DEMO_LOG) >&2; exit 1; fi
	@bash tests/e2e/demo.sh $(BUILD)

bench: deps
	$(MAKE) build
	cmake --build $(BUILD) --target bench
	for b in $(BUILD)/bench_*; do echo "== $$b"; $$b || exit 1; done

clean:
	rm -rf $(BUILD)
