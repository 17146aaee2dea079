# Tessera: the single entry point. `make help` lists the targets.
# The work is done by `cargo xtask` (xtask/); this file only sets up the
# machine and passes settings through.

# Settings, read by xtask from the environment (empty means "default").
SMP ?=
MEM ?=
ACCEL ?=
CMDLINE ?=
QEMU ?=
MACHINE ?=
GDBPORT ?=
MODE ?=
# The pseudo-NVM: NVM=path of its image (default build/nvm.img; off: none),
# NVM_SIZE=256M (a power of two; default: the image's own size).
NVM ?=
NVM_SIZE ?=
# DISK=image: a raw disk image on virtio-blk (make run: build/root.img; off: none).
DISK ?=
# DISK_MODEL=dk|sata|nvme: the disk throttled by QEMU to one of seed 001's disks.
DISK_MODEL ?=
# NET=1: a virtio-net NIC on QEMU's user network, the host's 127.0.0.1:8080
# forwarded to the guest's port 80.
NET ?=
export SMP MEM ACCEL CMDLINE QEMU MACHINE GDBPORT MODE NVM NVM_SIZE DISK DISK_MODEL NET

# Test options: make test FILTER=frames JOBS=1 TEST_SMP=1
FILTER ?=
JOBS ?=
TEST_SMP ?=
# Boot-time options: make boottime RUNS=10 MODE=icount
RUNS ?=
# Benchmark selection: make bench B=spawn MODE=tcg
B ?=
# Linux-ABI programs and LTP tests to run: make linux-abi ONLY=ids,time CHECK=1;
# the system LTP runs on: make ltp SYSTEM=tessera ONLY=getpid01
ONLY ?=
SYSTEM ?=
CHECK ?=
# Profile of one system call: make profile SYSCALL=ica_move SKIP=25 CMDLINE='bench=ipc'
SYSCALL ?=
SKIP ?=
COND ?=
AFTER ?=
WHOLE ?=

# A machine where setup just installed rustup has it only here so far.
export PATH := $(or $(CARGO_HOME),$(HOME)/.cargo)/bin:$(PATH)

CARGO ?= cargo
XTASK := $(CARGO) xtask

.DEFAULT_GOAL := help
.PHONY: help setup build run debug profile test fuzz linux-fuzz linux-stress bench boottime disk linux-abi ltp-build ltp fmt lint clean

help: ## list the targets
	@echo "usage: make <target> [SETTING=value ...]"
	@echo
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -e 's/:.*## /\t/' | expand -t 12 | sed 's/^/  /'
	@echo
	@echo "settings: SMP=N MEM=512M ACCEL=tcg|icount|kvm (the machine); CMDLINE='...' (run, debug)"
	@echo "          GDBPORT=1234 (debug); FILTER= JOBS= TEST_SMP=1,4 (test)"
	@echo "          MODE=icount|tcg RUNS=5 (boottime); B=name MODE=icount|tcg|kvm (bench)"
	@echo "          ONLY=name,name CHECK=1 (linux-abi; ONLY also for ltp); SYSTEM=linux|tessera (ltp)"
	@echo "          QEMU=path MACHINE=pc NVM=build/nvm.img|off NVM_SIZE=256M DISK=image|off DISK_MODEL=dk|sata|nvme NET=1 (all)"

setup: ## install missing tools (every target below does this first)
	@tools/setup.sh

build: setup ## build the kernel into build/tessera.elf
	$(XTASK) build

run: setup ## build and boot interactively (Ctrl-A X quits)
	$(XTASK) run

debug: setup ## boot stopped, waiting for gdb (see tools/gdbinit)
	$(XTASK) debug

profile: ## instructions of one system call (or SYSCALL=fault) by function: SYSCALL=ica_move SKIP=25 CMDLINE='bench=ipc' [SEQ=1]
	bash tools/setup.sh gdb
	python3 tools/profile/syscall_trace.py $(SYSCALL) --skip $(or $(SKIP),0) --cmdline '$(CMDLINE)' $(if $(COND),--cond '$(value COND)') $(if $(AFTER),--after '$(AFTER)') $(if $(WHOLE),--whole) $(if $(SEQ),--sequence) $(if $(SMP),--smp $(SMP))

test: setup ## the whole test suite; last line: N passed, N failed
	$(XTASK) test $(if $(TEST_SMP),--smp $(TEST_SMP)) $(if $(FILTER),--filter $(FILTER)) $(if $(JOBS),--jobs $(JOBS))

fuzz: setup ## the long fuzz run: CALLS=1000000 SEED=1 SMP=4; result in docs/results/fuzz.csv
	bash tools/fuzz/long.sh $(or $(CALLS),1000000) $(or $(SEED),1)

linux-fuzz: setup ## Linux-ABI fuzzer, long: CALLS=1000000 SEED=1 SMP=4; docs/results/linux-fuzz.csv
	bash tools/fuzz/linux-long.sh fuzz $(or $(CALLS),1000000) $(or $(SEED),1)

linux-stress: setup ## fork+exec+pipe stress, long: ROUNDS=10000 SMP=4; docs/results/linux-stress.csv
	bash tools/fuzz/linux-long.sh stress $(or $(ROUNDS),10000)

bench: setup ## run the benchmarks (B=name to pick; MODE=icount|tcg|kvm)
	python3 tools/bench/bench.py run $(if $(B),--bench $(B))

linux-abi: setup ## Linux's transcripts of user/linux/abi/ (CHECK=1 compares instead of writing)
	python3 tools/bench/bench.py linux-abi $(if $(CHECK),--check) $(if $(ONLY),--only $(ONLY))

ltp-build: setup ## build LTP's system-call tests (static musl) into build/ltp/
	tools/ltp/build.sh

ltp: ltp-build ## LTP's system-call tests (SYSTEM=linux|tessera): docs/results/ltp.{csv,md}
	python3 tools/bench/bench.py ltp $(if $(SYSTEM),--system $(SYSTEM)) $(if $(ONLY),--only $(ONLY))

boottime: setup ## measure boot time (MODE=tcg|icount, RUNS=n)
	$(XTASK) boottime $(if $(MODE),--mode $(MODE)) $(if $(RUNS),--runs $(RUNS))

disk: setup ## make the disk images afresh from user/root/ (a build makes missing ones)
	$(XTASK) disk

fmt: setup ## format all Rust code
	$(CARGO) fmt --all

lint: setup ## formatting check and clippy (host crates and kernel), warnings are errors
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --exclude tessera-kernel --exclude kcore --exclude sched --exclude ipc --exclude resource --exclude syscall --exclude tessera-rt --exclude user-programs --exclude tessera-api --exclude echo-server --exclude relay-server --exclude distributor-server --exclude ramdisk-server --exclude blockcache-server --exclude fs-server --exclude net-server --exclude virtio-net-server --exclude linux-server --exclude virtio-blk-server --exclude loopblk-server --all-targets -- -D warnings
	$(CARGO) clippy -p tessera-kernel -p kcore -p sched -p ipc -p resource -p syscall -p tessera-rt -p user-programs -p tessera-api -p echo-server -p relay-server -p distributor-server -p ramdisk-server -p blockcache-server -p fs-server -p net-server -p virtio-net-server -p linux-server -p virtio-blk-server -p loopblk-server -p tessera-virtio --target x86_64-unknown-none --features tessera-kernel/ktest -- -D warnings
	$(XTASK) layers

clean: ## remove build outputs
	-$(CARGO) clean
	rm -rf build
