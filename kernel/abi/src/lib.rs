//! The native system-call interface, shared by the kernel and the user
//! runtime so that numbers, error codes and structure layouts are defined
//! exactly once.
//!
//! Calling convention (x86_64 `syscall`): number in `rax`, arguments in
//! `rdi, rsi, rdx, r10, r8, r9`; the result comes back in `rax`. A result
//! in `-4095..=-1` is an error (`-Error as i64`); anything else is a value.
#![cfg_attr(not(test), no_std)]

pub mod args;

/// Bumped whenever a number, argument or structure below changes meaning.
pub const ABI_VERSION: u64 = 6;

macro_rules! numbered {
    ($(#[$m:meta])* pub enum $name:ident { $($(#[$vm:meta])* $v:ident = $n:expr,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u64)]
        pub enum $name { $($(#[$vm])* $v = $n,)* }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$v,)*];
            pub fn from_u64(n: u64) -> Option<$name> {
                match n { $($n => Some($name::$v),)* _ => None }
            }
            pub const fn name(self) -> &'static str {
                match self { $($name::$v => stringify!($v),)* }
            }
        }
    };
}

/// A record that crosses between kernel and user memory byte for byte:
/// `repr(C)`, `Copy`, and a `Default` that gives a field the value written
/// after it (`= value`) or its type's default. It must have no padding
/// (whose bytes would carry kernel memory out): the build fails if it has.
macro_rules! record {
    // `..call` first: the words that say which call to make, the same in
    // every record that asks the kernel for one (an `ncallsync` batch's
    // member, a ring's control block), and read by it the same way.
    ($(#[$m:meta])* pub struct $name:ident { ..call, $($rest:tt)* }) => {
        record! {
            $(#[$m])*
            pub struct $name {
                /// The server (a pid) and its entry.
                pub server: u64,
                pub entry: u64,
                /// The message: its address and length.
                pub msg: u64,
                pub msg_len: u64,
                /// The reply buffer: its address and room.
                pub reply: u64,
                pub reply_cap: u64,
                $($rest)*
            }
        }
    };
    ($(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $field:ident: $ty:ty $(= $value:expr)?,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy)]
        #[repr(C)]
        pub struct $name { $($(#[$fm])* pub $field: $ty,)* }
        impl Default for $name {
            fn default() -> Self {
                $name { $($field: record!(@value $($value)?),)* }
            }
        }
        const _: () = assert!(
            core::mem::size_of::<$name>() == 0 $(+ core::mem::size_of::<$ty>())*,
            concat!(stringify!($name), " has padding"),
        );
    };
    (@value $value:expr) => { $value };
    (@value) => { Default::default() };
}

mod inspect;
pub mod linux;
mod pool;

pub use inspect::*;
pub use pool::*;

/// The native system calls, defined once: each entry is its number, the
/// name of its wrapper and its arguments with their types (`args`). From
/// this list come the numbers (`Sys`), the kernel's typed argument
/// structures (`call`, `Call`) and the user runtime's wrappers
/// (`each_call!`). Arguments travel in `rdi, rsi, rdx, r10, r8, r9` in the
/// order given, a buffer taking two registers (address, length).
#[macro_export]
macro_rules! each_call {
    ($m:ident) => {
        $m! {
        /// Returns ABI_VERSION
        AbiVersion = 0, abi_version();
        /// Returns never returns
        Exit = 1, exit(status: u64);
        /// Returns pid.
        /// `args` is the arguments (without the program name) separated by NUL bytes.
        /// The child gets the `rights` of the options, which the caller must hold.
        Spawn = 2, spawn(path: Str, args: Bytes, options: InOpt<SpawnOptions>);
        /// Returns exit status (a process killed by a fault has status KILLED_STATUS)
        Wait = 3, wait(pid: u64);
        /// Returns pid
        GetPid = 4, getpid();
        /// Returns 0
        Yield = 5, yield_now();
        /// Returns 0
        Sleep = 6, sleep(nanoseconds: u64);
        /// Returns 0
        Clock = 7, clock(out: Out<$crate::Clock>);
        /// Returns bytes written
        ConsoleWrite = 8, console_write(bytes: Bytes);
        /// Returns bytes read (at least 1; waits for input)
        ConsoleRead = 9, console_read(buf: BytesMut);
        /// Returns address of new anonymous zeroed memory
        Map = 10, map(hint: u64, len: u64, prot: u64);
        /// Returns 0
        Unmap = 11, unmap(addr: u64, len: u64);
        /// Returns 0
        ProcInfo = 12, proc_info(pid: u64, out: Out<$crate::ProcInfo>);
        /// Returns number of pids (all written up to capacity)
        ProcList = 13, proc_list(out: List<u64>);
        /// Returns previous system default (needs `rights::SYSTEM`)
        SetPolicy = 14, set_policy(policy: LoadPolicy);
        /// Returns 0: the caller itself, a child of its own, or (with
        /// `rights::SYSTEM`) any process
        Kill = 15, kill(pid: u64);
        /// Returns 0: the caller itself, a child
        /// of its own, or (with `rights::SYSTEM`) any process
        SetAffinity = 16, set_affinity(pid: u64, cpu: u64);
        /// Returns 0
        SysInfo = 17, sys_info(out: Out<$crate::SysInfo>);
        /// Returns resource id. Arguments by kind:
        /// Program(plate); VirtualSpace(); VirtualRegion(pages, RegionKind, prot);
        /// VirtualUserSpace(space, region, address) (attaches the region);
        /// VirtualKernelSpace(region); PhysicalMemory(pages);
        /// Process(program, space, work area (a VirtualKernelSpace), LoadPolicy);
        /// Computation(process, cpu or ANY_CPU). Plates come from the initial archive.
        ResCreate = 18, res_create(kind: ResKind, a: u64, b: u64, c: u64, d: u64);
        /// Returns 0 (detaches a VirtualUserSpace/VirtualKernelSpace)
        ResDelete = 19, res_delete(id: u64);
        /// Returns 0
        ResQuery = 20, res_query(id: u64, out: Out<ResInfo>);
        /// Returns 0: fill a region with a program segment
        ResLoad = 21, res_load(region: u64, program: u64, segment: u64);
        /// Returns plate id
        PlateFind = 22, plate_find(name: Str);
        /// Returns pid (the process runs; wait() for it)
        ProcessStart = 23, process_start(process: u64);
        /// Returns 0: store name + arguments
        WorkAreaWrite = 24, work_area_write(area: u64, strings: Bytes);
        /// -> how many records the topic has. Records `start..` of them, at most
        /// `capacity` (≤ INSPECT_MAX), are written to `out`; the record type is the
        /// topic's (see `Topic`) and `record size` must be its size.
        Inspect = 25, inspect(topic: Topic, arg: u64, start: u64, out: u64, capacity: u64, record_size: u64);
        /// -> resources added: the pool's settings and the add function's rules
        /// (n ≤ MAX_POOL_RULES) replace the previous ones, and the add function
        /// runs at once if there are rules. Needs `rights::SYSTEM`.
        PoolSet = 26, pool_set(settings: In<PoolSettings>, rules: List<PoolRule>);
        /// Returns 0
        ProgramSegment = 27, program_segment(program: u64, index: u64, out: Out<SegmentInfo>);
        /// Returns bytes read (0 at the end): a
        /// plate's content from `offset` on (res_query gives its size)
        PlateRead = 28, plate_read(plate: u64, offset: u64, buf: BytesMut);
        /// Returns resources deleted: everything the pool holds. Needs
        /// `rights::SYSTEM`.
        PoolFlush = 29, pool_flush();
        /// Returns container id
        /// (attached, zeroed, in the caller's space; res_query gives its address)
        ContainerCreate = 40, container_create(pages: u64, addr: u64);
        /// Returns box id
        BoxCreate = 41, box_create(pages: u64, initial: u64, lower: u64, upper: u64, flags: u64);
        /// Returns 0 (box owner only)
        BoxGrant = 42, box_grant(bx: u64, pid: u64, rights: u64);
        /// Returns container id in the box
        /// (seed 004 table 2; *size_ptr receives the size sent, in bytes)
        ContainerSend = 43, container_send(container: u64, bx: u64, addr: u64, mode: ContainerMode, size: Out<u64>);
        /// container_receive(container or 0 (first), box, requested address, ContainerMode,
        /// timeout_ns, out: *mut Received) -> container id (seed 004 table 3).
        /// SWAP exchanges with `container`, the caller's own container of the same size.
        ContainerReceive = 44, container_receive(container: u64, bx: u64, addr: u64, mode: ContainerMode, timeout_ns: u64, out: Out<Received>);
        /// Returns container id in the target
        ContainerPush = 45, container_push(container: u64, target: u64, addr: u64, mode: ContainerMode);
        /// Returns container id
        ContainerSteal = 46, container_steal(container: u64, target: u64, addr: u64, mode: ContainerMode);
        /// Returns 0
        ContainerExchange = 47, container_exchange(container: u64, target: u64, theirs: u64);
        /// Returns 0: `pid` may push into, steal from and exchange with the caller
        PeerGrant = 48, peer_grant(pid: u64);
        /// Returns 0
        ContainerStats = 49, container_stats(out: Out<$crate::ContainerStats>);
        /// Returns 0: the caller serves under
        /// this name; calls to entries outside the mask (bit n = entry n) are refused
        /// with NoSys (0: any entry)
        NameRegister = 50, name_register(name: Str, entries: u64);
        /// Returns pid
        NameLookup = 51, name_lookup(name: Str);
        /// Returns reply length
        /// (rendezvous, seed 003; also AnT's callsync). With entry | CALL_BY_REF,
        /// msg_ptr is the rid of a call the caller holds: its message is passed on.
        Call = 52, call(server: u64, entry: u64, msg: Message, reply: BytesMut);
        /// Returns rid: wait for a call on one of the entries
        Acc = 53, acc(entries: u64, out: Out<AccInfo>);
        /// Returns bytes replied: end the rendezvous
        Endr = 54, endr(rid: u64, reply: Bytes);
        /// Returns len: read the caller's message
        RvRead = 55, rv_read(rid: u64, offset: u64, buf: BytesMut);
        /// Returns len: write into the caller's reply buffer
        RvWrite = 56, rv_write(rid: u64, offset: u64, data: Bytes);
        /// Returns 0: the next server replies directly
        Forward = 57, forward(rid: u64, server: u64, entry: u64);
        /// Returns request id (non-blocking)
        Request = 58, request(server: u64, entry: u64, msg: Bytes, reply: Room);
        /// Returns 0: (request id, status) of a finished request
        Fetch = 59, fetch(timeout_ns: u64, out: Out<[u64; 2]>);
        /// Returns 0: end the rendezvous with an error for the caller
        RvFail = 60, rv_fail(rid: u64, error: u64);
        /// Returns 0, or -Error if any member
        /// failed: AnT's batch request (seed 002): the n requests go out at once,
        /// the caller is woken once when all n are back; each entry's `status`
        /// receives its reply length or its error
        NCallSync = 61, ncallsync(list: List<BatchEntry>);
        /// Returns rid:
        /// `endr` then `acc` in one call, a server's loop; the released caller gets
        /// the CPU directly while the server waits
        EndrAcc = 62, endr_acc(rid: u64, reply: Bytes, entries: u64, out: Out<AccInfo>);
        /// Returns rid:
        /// `forward` then `acc` in one call (a relay's loop); the next server gets
        /// the CPU directly while the relay waits
        ForwardAcc = 66, forward_acc(rid: u64, server: u64, entry: u64, entries: u64, out: Out<AccInfo>);
        /// Returns calls accepted (1..=k):
        /// waits for a call on one of the entries (with ACC_NOWAIT: Busy at once if
        /// none is waiting), then accepts it and up to k - 1 more that are already
        /// waiting, without waiting again; out[i] describes the i-th, in the order
        /// they arrived. k is 1..=MAX_BATCH
        AccMany = 67, acc_many(entries: u64, out: List<AccInfo>);
        /// Returns calls passed on: `forward`
        /// for each entry, in order, each next server seeing its message without its
        /// last `trim` bytes. A call that cannot be passed on (not held, no such
        /// server or entry, trim longer than the message) is ended with that error
        /// for its caller, and the entry's `status` receives the error; the others'
        /// `status` is left as it was. k is 1..=MAX_BATCH
        ForwardMany = 68, forward_many(list: List<ForwardEntry>);
        /// Returns calls accepted (1..=k):
        /// ends every call of `replies` with its reply, then accepts as `acc_many`
        /// does (a server's loop for a whole batch in one step: the caller its
        /// last reply released gets the CPU while the server waits). A call that
        /// cannot be ended (not held, reply not in memory) is left as it was and
        /// its entry's `status` receives the error; the others' `status` is left
        /// as it was. `replies` has 0..=MAX_BATCH entries, k is 1..=MAX_BATCH
        EndrManyAcc = 131, endr_many_acc(replies: List<ReplyEntry>, entries: u64, out: List<AccInfo>);
        /// Returns address of the caller's `Rings`: AnT's request and result
        /// rings of control blocks (seed 002 §2.2), made by the kernel on first use
        RingSetup = 63, ring_setup();
        /// Returns n: sends the next n control blocks of the request
        /// ring. Without RING_WAIT_ALL each result goes to the result ring as it
        /// comes back; with it the n form one batch (ncallsync): the caller is woken
        /// once, when all are back, and their results (failed members' with their
        /// error as status) are in the result ring, in order, when it returns
        RingSubmit = 64, ring_submit(n: u64, flags: u64);
        /// Returns results waiting in the result ring (Busy on timeout)
        RingWait = 65, ring_wait(timeout_ns: u64);
        /// Returns container id: AnT's ICA, n physically contiguous pages
        /// attached to the caller (res_query gives its address; res_delete frees it)
        IcaCreate = 70, ica_create(pages: u64);
        /// Returns its address in the target:
        /// re-attached without copying; the caller loses access
        IcaMove = 71, ica_move(ica: u64, target: u64, addr: u64);
        /// Returns 0: ends the rendezvous with status `len` (what the caller's
        /// call returns), copying nothing: the reply went into the caller's
        /// buffer in pieces (rv_write). `len` is at most the buffer's room
        EndrLen = 72, endr_len(rid: u64, len: u64);
        /// Returns the plate's id: the plate (Tender's file held in memory)
        /// named `name` whose version is `tag` (the creator's mark of the
        /// content, e.g. from a file's inode and time). If there is none and
        /// `content` is empty: NotFound; else a plate of `content` is made and
        /// takes the name from older versions (running programs keep theirs).
        /// `spawn` finds a plate by name; programs are pooled by plate
        PlateCreate = 90, plate_create(name: Str, tag: u64, content: Bytes);
        /// Returns bytes read: memory of the process waiting in call `rid`
        /// (held by the caller, its supervisor), at any user address
        CallerRead = 91, caller_read(rid: u64, addr: u64, buf: BytesMut);
        /// Returns how many of the ranges it read, in order: `caller_read`
        /// of each entry of `list` (`len` bytes at `addr` in the waiting
        /// process into the caller's `buf`), in one call (execve's
        /// path, argument and environment arrays, then their strings). It
        /// stops at the first range it cannot read or write (outside user
        /// space, unmapped), whose index it returns; what the ranges before
        /// it read stays. Invalid for an empty list, more than MAX_BATCH
        /// entries or more than MAX_COPY bytes in all
        CallerReadMany = 162, caller_read_many(rid: u64, list: List<ReadEntry>);
        /// Returns bytes written into the waiting process's memory
        CallerWrite = 92, caller_write(rid: u64, addr: u64, data: Bytes);
        /// Returns 0: the waiting process's user registers
        CallerRegs = 93, caller_regs(rid: u64, out: Out<linux::Regs>);
        /// Returns 0: sets them (rip, rsp and rflags are checked)
        CallerSetRegs = 94, caller_set_regs(rid: u64, regs: In<linux::Regs>);
        /// Returns 0: as caller_set_regs, and the waiting thread's signal
        /// mask becomes `sigmask` (never SIGKILL, SIGSTOP): a handler's
        /// entry and sigreturn change both
        CallerSetSignalRegs = 161, caller_set_signal_regs(rid: u64, regs: In<linux::Regs>, sigmask: u64);
        /// Returns 0: ends the waiting process's system call with `value` in
        /// its rax
        CallerReturn = 95, caller_return(rid: u64, value: u64);
        /// Returns rid: `caller_return` then `acc` in one call (a supervisor's
        /// loop); the process gets the CPU directly while the supervisor waits
        CallerReturnAcc = 130, caller_return_acc(rid: u64, value: u64, entries: u64, out: Out<AccInfo>);
        /// Returns the reply's length: a call on behalf of the waiting process,
        /// its memory as the message and/or the reply buffer
        CallFor = 96, call_for(req: In<linux::CallFor>);
        /// Returns the child's pid: a copy of the waiting process (text
        /// shared, writable memory copied, registers as they are with rax 0),
        /// started, its system calls going to `supervisor` as Linux pid
        /// `linux_pid`
        LinuxFork = 97, linux_fork(rid: u64, supervisor: u64, linux_pid: u64);
        /// Returns the child's pid: as linux_fork, but the child runs in
        /// the waiting process's space itself, lent to it (Linux's vfork:
        /// what it writes and maps the parent sees) until it ends or its
        /// program is replaced (exec: a new process), then given back;
        /// handed over to it if the parent ends first. Busy when the space
        /// is lent to as many processes as it may be (then fork copies)
        LinuxVfork = 137, linux_vfork(rid: u64, supervisor: u64, linux_pid: u64);
        /// Returns 0: process `pid`, which the caller supervises, stops on its
        /// way back to user mode with an ATTENTION call
        LinuxAttention = 98, linux_attention(pid: u64);
        /// Returns the address: anonymous zeroed memory of `len` bytes mapped
        /// into the waiting process (Linux prot bits; MAP_FIXED: at `addr`)
        CallerMap = 99, caller_map(rid: u64, addr: u64, len: u64, prot: u64, flags: u64);
        /// Returns 0: mprotect of `addr..addr + len` in the waiting process,
        /// with Linux's rules and errors (a file's mapping `caller_map` made
        /// writable to fill it gets the protection it was asked with)
        CallerProtect = 135, caller_protect(rid: u64, addr: u64, len: u64, prot: u64);
        /// Returns how many records it wrote: the mappings of process `pid`,
        /// which the caller supervises, that start at `from` or above, in
        /// address order, as many as `out` holds, each `linux::MAPS_WORDS`
        /// words (start, end, `linux::MAPS_*` flags, present pages)
        /// (/proc/PID/maps and smaps)
        ProcMaps = 132, proc_maps(pid: u64, from: u64, out: BytesMut);
        /// Returns the address: the caller's own anonymous mapping that
        /// starts at `src`, its frames shared into the waiting process (a
        /// SysV segment's shmat; flags MAP_FIXED: at `addr`, SHM_RDONLY)
        CallerShare = 123, caller_share(rid: u64, addr: u64, src: u64, flags: u64);
        /// The waiting process's mapping at `addr`, one whose frames are
        /// shared, goes with the other parts of its segment (shmdt); returns
        /// how far from `addr` they reached
        CallerUnshare = 124, caller_unshare(rid: u64, addr: u64);
        /// Returns how many other mappings share the frames of the
        /// caller's mapping at `addr` (a segment's attachments)
        MapSharers = 125, map_sharers(addr: u64);
        /// Returns 0: the process waiting in call `rid` ends, quietly, with
        /// `status` (its supervisor keeps the Linux status itself)
        CallerExit = 110, caller_exit(rid: u64, status: u64);
        /// Returns 0: passes the Linux call `rid` on to `server`'s `entry`
        /// with `msg` (at most 64 bytes) as its message instead of the
        /// system call; that server then holds it, as the supervisor did
        /// (a call that must wait: a pipe, a child, the terminal)
        LinuxPass = 111, linux_pass(rid: u64, server: u64, entry: u64, msg: Bytes);
        /// Returns 0: console input arrives as an event on the caller's
        /// `entry` (then taken with console_read, which no longer waits),
        /// Ctrl-C included; `entry` = u64::MAX gives the console back.
        /// Busy while another process holds it
        ConsoleAttach = 112, console_attach(entry: u64);
        /// Returns 0: an event is posted on the caller's `entry` once the
        /// clock (nanoseconds since boot) reaches `deadline`, replacing the
        /// caller's earlier alarm; deadline 0 cancels it
        PortAlarm = 113, port_alarm(entry: u64, deadline: u64);
        /// Returns 0: the waiting process's FPU and SSE state (fxsave's 512
        /// bytes) into `out` (a signal frame saves it)
        CallerFpu = 114, caller_fpu(rid: u64, out: BytesMut);
        /// Returns 0: sets it (sigreturn; MXCSR's reserved bits are cleared)
        CallerSetFpu = 115, caller_set_fpu(rid: u64, data: Bytes);
        /// Returns 0: a new computation (a Linux thread, Linux tid `tid`) of
        /// the process waiting in call `rid`, in its space, starting with
        /// `regs` (rip and rsp in user space, a canonical thread pointer);
        /// at its end, if others go on, the 32-bit word at `clear_word`
        /// (0: none) is cleared and a futex wake-up is made on it. Limit
        /// when the process's kernel memory is used up
        LinuxThread = 120, linux_thread(rid: u64, regs: In<linux::Regs>, tid: u64, clear_word: u64);
        /// Returns 0: the computation waiting in call `rid` ends alone; its
        /// process goes on with its others
        CallerExitThread = 121, caller_exit_thread(rid: u64);
        /// Returns 0: as linux_attention, for the computation of process
        /// `pid` with Linux tid `tid` alone
        LinuxAttentionThread = 122, linux_attention_thread(pid: u64, tid: u64);
        /// Returns what operation `op` (`linux::pipe::op`) gives: a kernel
        /// pipe's descriptors in the table of Linux process `pid` (which the
        /// caller serves), whose read and write calls the kernel then serves
        LinuxPipe = 126, linux_pipe(op: u64, pid: u64, a: u64, b: u64, c: u64);
        /// Returns process `pid`'s state (`state::*`), as proc_info gives it
        /// but with nothing else looked at (0: the caller; NotFound: none)
        ProcState = 127, proc_state(pid: u64);
        /// Returns what operation `op` (`file_cache::op`) of a file server
        /// on its file cache `id` gives (publishing and revoking pages,
        /// granting readers)
        FileCache = 129, file_cache(op: u64, id: u64, a: u64, b: u64, c: u64);
        /// Returns the bytes read: file cache `id`'s bytes from `offset`
        /// into `buf`, all of them (up to the end of the file), if every
        /// page they are on is present and the caller may read it;
        /// NotFound otherwise (a miss: ask the file server)
        FileCacheRead = 128, file_cache_read(id: u64, offset: u64, buf: BytesMut);
        /// Returns 0: the file of the caller's cache `id` has the
        /// attributes `stat`, its Linux `struct stat` as the file server
        /// answers fstat (`file_cache::STAT_LEN` bytes), which the kernel
        /// gives a Linux process's fstat of a descriptor bound to the
        /// cache (`linux::KERNEL_SERVED_ON_FILES`); an empty `stat`: they
        /// are no longer known (so too after any `op::REVOKE`). Invalid
        /// for another length; Denied for a cache not the caller's
        FileCacheAttr = 146, file_cache_attr(id: u64, stat: Bytes);
        /// Returns 0: the wall clock Linux programs see (CLOCK_REALTIME)
        /// reads `ns` nanoseconds since 1970 from now on, asked by the
        /// supervisor of the process waiting in call `rid` (settimeofday,
        /// clock_settime; the supervisor checks the privilege); Invalid
        /// for a time before boot
        WallSet = 139, wall_set(rid: u64, ns: u64);
        /// Returns the wall clock (CLOCK_REALTIME) in nanoseconds since 1970
        WallClock = 140, wall_clock();
        /// Returns the bytes copied: up to `len` (at most
        /// `linux::VM_COPY_MAX`) bytes between `local` in the memory of the
        /// process waiting in call `rid` and `remote` in process
        /// `target`'s, into the target if `to_target` is 1, else out of it
        /// (process_vm_writev, process_vm_readv). The caller must serve both
        /// processes (Denied otherwise: only the personality's shared
        /// server serves every one); NotFound if the target is gone. The
        /// copy stops at the first page either side cannot read or write
        /// (a short count, 0 included), never part way into a page
        CallerVmCopy = 141, caller_vm_copy(rid: u64, target: u64, local: u64, remote: u64, len: u64, to_target: u64);
        /// Returns the Tessera pid of the live process that `supervisor`
        /// supervises as Linux pid `linux_pid` (a forked child the shared
        /// server has not been told of yet). The caller must serve it
        /// (NotFound otherwise, as for no such process)
        LinuxProcess = 142, linux_process(supervisor: u64, linux_pid: u64);
        /// Returns 0: process `target`, Linux process `linux_pid`, has the
        /// parent `ppid` from now on (0: not known), which the kernel
        /// answers its getppid with. The caller must serve it (Denied: its
        /// supervisor, or the supervisors' parent); NotFound if it is gone
        /// or `linux_pid` is not its own; Invalid for a ppid past
        /// `linux::PID_MAX`
        LinuxSetPpid = 148, linux_set_ppid(target: u64, linux_pid: u64, ppid: u64);
        /// Returns what operation `op` (`linux::sigmask`) gives: the
        /// signal mask of thread `tid` of Linux process `pid` (which the
        /// caller serves), or the process's pending set, which the kernel
        /// serves rt_sigprocmask with. NotFound: no such thread
        LinuxSigmask = 160, linux_sigmask(op: u64, pid: u64, tid: u64, value: u64);
        /// Returns the CPU time the calling computation has used, in
        /// nanoseconds, the stretch it is running now included (a
        /// server's own, without `proc_info`'s count of its pages)
        CpuTime = 143, cpu_time();
        /// Returns 0: the waiting process's mapping that starts at `addr`
        /// maps a file: `may` (`linux::MAY_WRITE`, `MAY_EXEC`) is the most
        /// mprotect may open it to, for good (EACCES past it); with `file`
        /// not 0 (the caller's name of the file), page `first` of the file
        /// is its first page and the file has `pages` pages: a touch of a
        /// page wholly past them is SIGBUS (`linux::FAULT_PAST_END`)
        CallerMapFile = 144, caller_map_file(rid: u64, addr: u64, may: u64, file: u64, first: u64, pages: u64);
        /// Returns how many mappings it changed: the waiting process's
        /// mappings of file `file` (`caller_map_file`) now end at `pages`
        /// pages of it (truncated or extended); their pages past the end
        /// go, a private copy of one too, and a touch there is SIGBUS
        CallerFileEnd = 145, caller_file_end(rid: u64, file: u64, pages: u64);
        /// Returns how many pages took bytes: `data` was written to file
        /// `file` (as `caller_map_file` names it) at byte `offset`; the
        /// pages of the waiting process's private mappings of it that are
        /// still the file's (never written by the process; a forked child
        /// still mapping one sees it too) get them, as Linux's page cache
        /// would. Invalid for file 0, more than `linux::FILE_WRITTEN_MAX`
        /// bytes, or a range past what a file offset reaches
        CallerFileWritten = 151, caller_file_written(rid: u64, file: u64, offset: u64, data: Bytes);
        /// Returns the device's id: the `index`-th PCI function (from 0) with
        /// this vendor and device id (NotFound: none)
        DeviceFind = 80, device_find(vendor: u64, device: u64, index: u64);
        /// Returns 0: what the device is and who holds it
        DeviceInfo = 81, device_info(device: u64, out: Out<DeviceRecord>);
        /// Returns 0: the device is the caller's until it ends or deletes
        /// it (res_delete: quiesced and free again). Needs `rights::DEVICE`;
        /// Busy if another process holds it
        DeviceClaim = 82, device_claim(device: u64);
        /// Returns the address of memory BAR `bar` mapped uncached in the
        /// caller's space (the holder's only; no I/O BARs)
        DeviceMap = 83, device_map(device: u64, bar: u64);
        /// Returns 0: the device's interrupt comes to the caller as an event
        /// on its port's `entry` (< 61): `acc` reports it with rid 0, caller 0,
        /// flags ACC_EVENT and the pending entries' bits in its first 8 bytes.
        /// The line stays masked from each interrupt until `device_irq_done`
        DeviceIrq = 84, device_irq(device: u64, entry: u64);
        /// Returns 0: the driver has served the device; its line is unmasked
        DeviceIrqDone = 85, device_irq_done(device: u64);
        /// Returns the value: `width` (1, 2, 4) bytes of configuration space
        /// at `offset`, aligned
        DeviceConfigRead = 86, device_config_read(device: u64, offset: u64, width: u64);
        /// Returns 0: writes configuration space; the header's command and
        /// status and the capabilities past it only, never the BARs, the
        /// interrupt line or MSI/MSI-X (the kernel's): Denied
        DeviceConfigWrite = 87, device_config_write(device: u64, offset: u64, width: u64, value: u64);
        /// Returns the physical address of `len` bytes of the caller's memory
        /// at `addr`, present and physically contiguous (an ICA, a container),
        /// for a device's DMA. Only for a process holding a device; Invalid if
        /// the range is not contiguous or not present
        DmaAddress = 88, dma_address(addr: u64, len: u64);
        /// Returns 1 if stored, 0 if the file already held exactly `data`:
        /// `data` becomes text file `name` of the NVM store (seed 001's file
        /// 2), replacing any of that name; processes mapping the old version
        /// keep it until they end. Needs `rights::NVM`; Limit if the store
        /// has no room, Busy while another change runs
        NvmStore = 100, nvm_store(name: Str, data: Bytes);
        /// Returns 0: deletes text file `name` of the NVM store (mapped
        /// pages stay until their processes end). Needs `rights::NVM`
        NvmDelete = 101, nvm_delete(name: Str);
        /// Returns bytes read (0 at the end): NVM text file `name` from
        /// `offset` on (readable by every process, as plates are)
        NvmRead = 102, nvm_read(name: Str, offset: u64, buf: BytesMut);
        /// Returns the exit status, as `wait`, and `out` receives what the
        /// process was at its end (its page faults by category, CPU time)
        WaitInfo = 103, wait_info(pid: u64, out: Out<$crate::ProcInfo>);
        /// Returns the plate's id, as `plate_create`, for a plate of which
        /// only `head` is held: the bytes past it are in a file that
        /// `source.pager` serves, read a page at a time at faults
        /// (`PAGER_ENTRY`). Used for an OFF2F file 1: exec reads its
        /// header page only
        PlatePaged = 104, plate_paged(name: Str, tag: u64, head: Bytes, source: In<$crate::PagerSource>);
        }
    };
}

use args::syscalls;
each_call!(syscalls);

numbered! {
    /// Tender's resource kinds (資源の種類).
    pub enum ResKind {
        Process = 1,
        Program = 2,
        Plate = 3,
        Computation = 4,
        VirtualSpace = 5,
        VirtualRegion = 6,
        VirtualUserSpace = 7,
        VirtualKernelSpace = 8,
        PhysicalMemory = 9,
        Container = 10,
        ContainerBox = 11,
        Device = 12,
        /// A pipe the kernel serves to Linux processes (`linux::pipe`).
        Pipe = 13,
        /// The pages of a file a file server publishes for its clients'
        /// reads (`file_cache`).
        FileCache = 14,
    }
}

numbered! {
    /// The resource operations, each served by one kind (`Query` and
    /// `Delete` by the kind of the identifier they name). The mediator
    /// counts and traces them by these codes; a code is never reused.
    pub enum ResOp {
        Query = 0,
        Delete = 1,
        FindPlate = 2,
        CreateProgram = 3,
        ProgramSegment = 4,
        CreateSpace = 5,
        CreateRegion = 6,
        LoadRegion = 7,
        ClearRegion = 8,
        Attach = 9,
        AttachKernel = 10,
        WriteWorkArea = 11,
        CreatePhysical = 12,
        CreateProcess = 13,
        StartProcess = 14,
        CreateComputation = 15,
        CreateContainer = 16,
        CreateIca = 17,
        MoveIca = 18,
        Push = 19,
        Steal = 20,
        Exchange = 21,
        CreateBox = 22,
        GrantBox = 23,
        Send = 24,
        Receive = 25,
        ClaimDevice = 26,
        MapDevice = 27,
        BindInterrupt = 28,
        InterruptDone = 29,
        ReadConfig = 30,
        WriteConfig = 31,
        DmaAddress = 32,
        CreatePlate = 33,
        StoreText = 34,
        DeleteText = 35,
        CreatePipe = 36,
        /// Binding, copying or closing a descriptor of a kernel pipe.
        PipeBind = 37,
        /// A kernel pipe's state, flags, size or watch.
        PipeControl = 38,
        CreateFileCache = 39,
        /// Publishing, revoking or granting a file cache's pages.
        FileCacheControl = 40,
        /// A fork's copy of a space, its private memory copy-on-write.
        CopySpace = 41,
    }
}

impl ResOp {
    /// The kind that serves the operation (none: the kind the identifier
    /// names).
    pub const fn kind(self) -> Option<ResKind> {
        use ResKind as K;
        use ResOp as O;
        Some(match self {
            O::Query | O::Delete => return None,
            O::FindPlate => K::Plate,
            O::CreateProgram | O::ProgramSegment => K::Program,
            O::CreateSpace | O::CopySpace => K::VirtualSpace,
            O::CreateRegion | O::LoadRegion | O::ClearRegion => K::VirtualRegion,
            O::Attach => K::VirtualUserSpace,
            O::AttachKernel | O::WriteWorkArea => K::VirtualKernelSpace,
            O::CreatePhysical => K::PhysicalMemory,
            O::CreateProcess | O::StartProcess => K::Process,
            O::CreateComputation => K::Computation,
            O::CreateContainer | O::CreateIca | O::MoveIca | O::Push | O::Steal | O::Exchange => K::Container,
            O::CreateBox | O::GrantBox | O::Send | O::Receive => K::ContainerBox,
            O::ClaimDevice
            | O::MapDevice
            | O::BindInterrupt
            | O::InterruptDone
            | O::ReadConfig
            | O::WriteConfig
            | O::DmaAddress => K::Device,
            // An NVM text file is persistent content, as a plate is.
            O::CreatePlate | O::StoreText | O::DeleteText => K::Plate,
            O::CreatePipe | O::PipeBind | O::PipeControl => K::Pipe,
            O::CreateFileCache | O::FileCacheControl => K::FileCache,
        })
    }
}

numbered! {
    /// Transfer modes of container IPC (seed 004, tables 2 and 3).
    pub enum ContainerMode {
        Copy = 1,
        Share = 2,
        Move = 3,
        /// Exchange of physical pages (Tender's 交換).
        Swap = 4,
    }
}

/// `box_grant` rights.
pub const BOX_SEND: u64 = 1;
pub const BOX_RECEIVE: u64 = 2;
/// `box_grant` to every process.
pub const ANY_PID: u64 = u64::MAX;
/// `box_create` flag: zero the pages of containers that become empty, so no
/// data passes from a receiver to a later sender through the empty queue.
pub const BOX_SCRUB: u64 = 1;
/// `box_create` flag: never zero them, even once the box is granted to
/// another process (which otherwise makes it scrub: its pages could then
/// carry one process's data to another). Its creator's explicit choice,
/// for processes that trust each other (and benchmarks comparable with
/// seed 004, which says nothing of clearing).
pub const BOX_UNSCRUBBED: u64 = 2;

record! {
    /// What `container_receive` reports.
    pub struct Received {
        /// Where the container is attached in the receiver's space.
        pub addr: u64,
        /// Its size in bytes.
        pub size: u64,
    }
}

record! {
    /// Cumulative kernel work of container IPC, in cycles (the breakdown of
    /// seed 004 figs 5-7), and how often each happened.
    pub struct ContainerStats {
        pub create_cycles: u64,
        pub creates: u64,
        pub delete_cycles: u64,
        pub deletes: u64,
        pub exchange_cycles: u64,
        pub exchanges: u64,
        pub copy_cycles: u64,
        pub attach_cycles: u64,
        pub detach_cycles: u64,
        pub queue_cycles: u64,
        pub pages_exchanged: u64,
        pub bytes_copied: u64,
    }
}

numbered! {
    /// What a virtual region holds (page faults are counted by this).
    pub enum RegionKind {
        Text = 0,
        Data = 1,
        Bss = 2,
        Stack = 3,
        Heap = 4,
    }
}

record! {
    /// One loadable segment of a program (`program_segment`).
    pub struct SegmentInfo {
        pub vaddr: u64,
        pub memsz: u64,
        pub filesz: u64,
        /// `prot::WRITE` and `prot::EXEC` bits (always readable).
        pub prot: u64,
    }
}

record! {
    /// One member of an `ncallsync` batch.
    pub struct BatchEntry {
        ..call,
        /// Out: reply length, or a negated error.
        pub status: u64,
    }
}

/// Largest `ncallsync` batch.
pub const MAX_BATCH: u64 = 64;

/// The largest buffer one system call copies from or to a process: a
/// longer one is `Error::Invalid` (a read or write loops over pieces).
pub const MAX_COPY: usize = 1 << 20;

record! {
    /// One range of a `caller_read_many`: `len` bytes at `addr` in the
    /// waiting process, into `buf` in the caller.
    pub struct ReadEntry {
        pub addr: u64,
        pub buf: u64,
        pub len: u64,
    }
}

record! {
    /// One call of a `forward_many`: where call `rid` goes next.
    pub struct ForwardEntry {
        pub rid: u64,
        /// The next server (pid) and its entry.
        pub server: u64,
        pub entry: u64,
        /// Bytes at the end of the message that this server consumed (its routing
        /// information, AnT's stacked request information popped): the next server
        /// and those after it see the message without them.
        pub trim: u64,
        /// Out: a negated error if the call could not be passed on (it was ended
        /// with that error); left as it was otherwise.
        pub status: u64,
    }
}

record! {
    /// One call an `endr_many_acc` ends: call `rid`, with the `reply_len` bytes
    /// at `reply` as its reply.
    pub struct ReplyEntry {
        pub rid: u64,
        pub reply: u64,
        pub reply_len: u64,
        /// Out: a negated error if the call could not be ended (it is still
        /// held); left as it was otherwise.
        pub status: u64,
    }
}

/// `acc` mask flag: return `Busy` at once instead of waiting (entries are 0..=61).
pub const ACC_NOWAIT: u64 = 1 << 62;
/// `AccInfo::flags` of an event (a device's interrupt) rather than a call:
/// rid 0 (nothing to end), caller 0 (the kernel), the pending entries'
/// bits in the first 8 inline bytes.
pub const ACC_EVENT: u64 = 1 << 63;

/// `AccInfo::flags` of a pager's call the kernel made for a page
/// (`PAGER_ENTRY`): its reply fills a process's new frame. No process can
/// set it (or `ACC_EVENT`): a pager tells the kernel's call from a forged
/// one by it.
pub const ACC_PAGER: u64 = 1 << 61;
/// `AccInfo::flags` of a Linux process's call (a system call, a fault, a
/// stop) the kernel's routing hook made to its supervisor
/// (`linux::entry`). No process can set it: a supervisor tells the
/// kernel's call from one a process made to its entries itself, which
/// would act as the process it serves.
pub const ACC_ROUTED: u64 = 1 << 60;
/// The `AccInfo::flags` bits only the kernel sets; a request's own flags
/// lose them.
pub const ACC_KERNEL_FLAGS: u64 = ACC_PAGER | ACC_EVENT | ACC_ROUTED;

/// `call` entry flag: the message is a reference to a call the caller holds.
pub const CALL_BY_REF: u64 = 1 << 62;

/// Slots in each of a process's two rings.
pub const RING_SLOTS: u64 = 64;

/// `ring_submit` flag: the blocks form one batch; wait until all are back.
pub const RING_WAIT_ALL: u64 = 1;

/// Control-block flag (AnT's flag in the control ICA): the result may go
/// straight back to the requester, skipping servers that passed it on.
pub const CONTROL_DIRECT_RETURN: u64 = 1;

record! {
    /// A control block: one request's information (AnT's control ICA). The
    /// requester fills the request half in its request ring; the kernel hands
    /// the block back in the result ring with the result half filled in.
    #[derive(PartialEq, Eq)]
    pub struct Control {
        ..call,
        /// CONTROL_DIRECT_RETURN, ...
        pub flags: u64,
        /// The requester's own label, handed back with the result.
        pub tag: u64,
        /// Result half: the request's id and its status (reply length or a
        /// negated error).
        pub id: u64,
        pub status: u64,
        /// The batch identifier: how many requests were sent with this one
        /// (1: a single request).
        pub batch: u64,
        /// Servers the request passed through, and the first four of them
        /// (the stacked request information of a multi-stage request).
        pub hops: u64,
        pub path: [u64; 4],
    }
}

impl Control {
    /// The result half's status: the reply length, or the error.
    pub fn result(&self) -> Result<u64, Error> {
        Error::decode(self.status)
    }
}

/// One ring's indices. `tail` is written by the producer and `head` by the
/// consumer; each counts blocks for ever (slot = index % RING_SLOTS).
#[derive(Debug, Default)]
#[repr(C)]
pub struct RingIndex {
    pub head: u64,
    pub tail: u64,
    pub _reserved: [u64; 6],
}

/// A process's rings, mapped in its space: requests it makes (it produces,
/// the kernel consumes) and their results (the kernel produces, it consumes).
#[repr(C)]
pub struct Rings {
    pub req: RingIndex,
    pub requests: [Control; RING_SLOTS as usize],
    pub res: RingIndex,
    pub results: [Control; RING_SLOTS as usize],
}

record! {
    /// What `acc` reports about an accepted call.
    pub struct AccInfo {
        /// The rendezvous: name it in rv_read, rv_write, endr, forward.
        pub rid: u64,
        pub caller: u64,
        pub entry: u64,
        /// Length of the caller's message (the first 64 bytes are in `inline`).
        pub len: u64,
        /// Room in the caller's reply buffer.
        pub reply_cap: u64,
        /// The request's flags (CONTROL_DIRECT_RETURN: the result may go straight
        /// back to the requester, so a relay may `forward` instead of calling on).
        pub flags: u64,
        pub inline: [u8; 64] = [0; 64],
    }
}

record! {
    /// What `res_query` reports about a resource.
    pub struct ResInfo {
        pub id: u64,
        pub kind: u64,
        /// Pid of the process that owns it (0: the kernel, or shared).
        pub owner: u64,
        /// Memory it holds, in bytes (frames, page tables).
        pub bytes: u64,
        /// Kind-specific: pages (region), entry point (program), pid (process), ...
        pub value: u64,
        /// Related resources (space of an attachment, region, program ...), 0 if none.
        pub links: [u64; 3],
    }
}

numbered! {
    /// Error codes, returned negated.
    pub enum Error {
        /// Unknown system-call number.
        NoSys = 1,
        /// A pointer or range the process may not access.
        Fault = 2,
        /// An argument is out of range or malformed.
        Invalid = 3,
        /// Out of memory (physical frames, kernel heap, address space).
        NoMemory = 4,
        /// No such process or program.
        NotFound = 5,
        /// Not a program this kernel can load.
        BadProgram = 6,
        /// The caller may not do this (e.g. wait for a process that is not its child).
        Denied = 7,
        /// A limit was reached (processes, regions).
        Limit = 8,
        /// The call would block for ever (e.g. a process waiting for itself).
        Deadlock = 9,
        /// The resource is in use (attached, running) and cannot be changed so.
        Busy = 10,
    }
}

impl Error {
    pub fn as_ret(self) -> u64 {
        (-(self as i64)) as u64
    }
    /// Decodes a raw system-call result.
    #[inline]
    pub fn decode(ret: u64) -> Result<u64, Error> {
        let signed = ret as i64;
        if (-4095..0).contains(&signed) {
            Err(Error::from_u64((-signed) as u64).unwrap_or(Error::Invalid))
        } else {
            Ok(ret)
        }
    }
}

/// Exit status of a process the kernel killed (fault, kill, Ctrl-C).
pub const KILLED_STATUS: u64 = 0x100;
/// `set_affinity` argument: run on any CPU.
pub const ANY_CPU: u64 = u64::MAX;

/// How a program's pages are brought in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum LoadPolicy {
    /// The system default (spawn option only).
    Default = 0,
    /// Tender: every page of text, data, BSS and stack is allocated and
    /// filled at creation; the program takes no page faults while running.
    Eager = 1,
    /// Pages are allocated and filled at first touch.
    Demand = 2,
}

impl LoadPolicy {
    pub fn from_u64(n: u64) -> Option<LoadPolicy> {
        match n {
            0 => Some(LoadPolicy::Default),
            1 => Some(LoadPolicy::Eager),
            2 => Some(LoadPolicy::Demand),
            _ => None,
        }
    }
}

record! {
    /// Options of `spawn`.
    pub struct SpawnOptions {
        /// A `LoadPolicy` value.
        pub policy: u64,
        /// CPU to pin the process to, or ANY_CPU.
        pub cpu: u64,
        /// Non-zero: Ctrl-C on the console kills this process.
        pub foreground: u64,
        /// The `rights` the child holds: some of the caller's own.
        pub rights: u64,
        /// `linux::NATIVE`, or `linux::LINUX`: a Linux program whose system
        /// calls go to `supervisor` (a process the caller may place: itself or
        /// its child), with Linux pid `linux_pid`. Its arguments are argc in
        /// decimal, the path execve was given (AT_EXECFN), argv, then the
        /// environment; its stack is laid out as Linux lays it out (argc,
        /// argv, envp, the auxiliary vector).
        pub personality: u64,
        pub supervisor: u64,
        pub linux_pid: u64,
        /// Bytes of kernel memory the child (with its own children) may cause:
        /// its resources' records (regions' and containers' lists of frames
        /// included), its page tables, its children. 0: the caller's own
        /// limit, which it can never exceed; what the child uses counts
        /// against the caller's too.
        pub kernel_limit: u64,
        /// A Linux program's stack in bytes (its RLIMIT_STACK): how far
        /// below the 64 KiB stack it may grow, filled at faults. 0: Linux's
        /// default, 8 MiB; more than 64 MiB is 64 MiB. Not for native ones.
        pub stack: u64,
        /// A Linux program's signal mask and pending signals (an exec
        /// keeps both). Not for native ones.
        pub sigmask: u64,
        pub sigpending: u64,
        /// Non-zero: the plate `path` names must be of this version (its
        /// `plate_create` tag), else the spawn fails with `NotFound` and
        /// makes nothing. An exec that finds its program's plate current
        /// then runs it in one call, not a look-up and a spawn.
        pub tag: u64,
    }
}

impl SpawnOptions {
    pub const DEFAULT: SpawnOptions = SpawnOptions {
        policy: LoadPolicy::Default as u64,
        cpu: ANY_CPU,
        foreground: 0,
        rights: 0,
        personality: linux::NATIVE,
        supervisor: 0,
        linux_pid: 0,
        kernel_limit: 0,
        stack: 0,
        sigmask: 0,
        sigpending: 0,
        tag: 0,
    };
}

/// Rights a process holds. The kernel gives them to the first process
/// (init); a process passes on only rights it holds (`SpawnOptions::rights`).
pub mod rights {
    /// The system's global settings: the resource pool (`pool_set`,
    /// `pool_flush`), the default loading policy (`set_policy`), and the
    /// placement of processes that are not the caller's own children
    /// (`set_affinity`).
    pub const SYSTEM: u64 = 1;
    /// Claiming a device (`device_claim`): its registers, interrupts and
    /// DMA. Without an IOMMU a device's driver can make it write anywhere
    /// in memory, so this right is the kernel's whole trust in a driver.
    pub const DEVICE: u64 = 2;
    /// Changing the NVM store's text files (`nvm_store`, `nvm_delete`):
    /// they become the text of the OFF2F programs that name them.
    pub const NVM: u64 = 4;
    /// Taking the console's input for itself (`console_attach`): every key
    /// typed, passwords included, goes to the holder alone.
    pub const CONSOLE: u64 = 8;
    /// Every right there is.
    pub const ALL: u64 = SYSTEM | DEVICE | NVM | CONSOLE;
}

/// File caches (`file_cache`, `file_cache_read`): the pages of one file
/// (one inode) that its file server publishes in the kernel, so that a
/// client it granted reads them with one system call and one copy, and
/// revokes before it answers a request that changes them.
pub mod file_cache {
    /// A page of a file cache.
    pub const PAGE: u64 = 4096;
    /// Pages of a file from 0 a cache may hold (files of 1 GiB); pages
    /// beyond are never published and always miss.
    pub const MAX_PAGES: u64 = 1 << 18;
    /// Readers one cache may grant.
    pub const MAX_READERS: usize = 256;
    /// In `op::PUBLISH`'s length: the file ends with this page.
    pub const LAST: u64 = 1 << 63;
    /// Bytes of the attributes `file_cache_attr` keeps: Linux x86_64's
    /// `struct stat`.
    pub const STAT_LEN: usize = 144;
    /// Pages one `op::PUBLISH` publishes at most.
    pub const PUBLISH_MAX_PAGES: u64 = 64;

    /// Operations of `file_cache(op, id, a, b, c)`; all but `CREATE` by
    /// the cache's owner.
    pub mod op {
        /// A new, empty cache owned (and paid for) by the caller (`id`
        /// unused) → its id.
        pub const CREATE: u64 = 1;
        /// Pages from `a` hold the `c` bytes at the caller's address `b`,
        /// a page each (1 byte to `PUBLISH_MAX_PAGES` pages; the last
        /// short only at the file's end, and with `LAST` in `c` the file
        /// ends there) → the pages published, those before the first
        /// that failed; that page's error if it is the first (Limit past
        /// `MAX_PAGES` or the caller's limit).
        pub const PUBLISH: u64 = 2;
        /// Pages `a` to `a + b - 1` are gone (`b` = u64::MAX: all from
        /// `a`), and the attributes (`file_cache_attr`) with them: a change
        /// of the bytes changes the times → the pages that were present.
        pub const REVOKE: u64 = 3;
        /// Process `a` may read the cache (`b` = 0: no longer) → 0.
        pub const GRANT: u64 = 4;
        /// The file is `a` bytes long now → 0: a read from there on reads
        /// nothing, with no page needed. Forgotten when a revoke reaches
        /// the page it ends in (a change of size revokes it).
        pub const SIZE: u64 = 5;
        /// Process `a` (0: none) may publish pages with `PUBLISH_FOR`,
        /// charged to the owner → 0. The file server names its block
        /// cache, which holds a cold read's pages already: publishing them
        /// from there saves copying them through the file server.
        pub const PUBLISHER: u64 = 6;
        /// → the cache's generation, which every `REVOKE` advances.
        pub const GENERATION: u64 = 7;
        /// By the publisher `PUBLISHER` named: `PUBLISH` of pages from
        /// `a & 0xffff_ffff`, refused (Busy) unless `a >> 32` is the low
        /// half of the cache's generation: a revoke since the owner read
        /// it (a plan made before a write) publishes nothing stale. A
        /// page present already stays as it is → the pages published, and
        /// in the high 32 bits how many of them were present (not copied).
        pub const PUBLISH_FOR: u64 = 8;
    }
}

/// Memory protection for `map`.
pub mod prot {
    pub const READ: u64 = 1;
    pub const WRITE: u64 = 2;
    pub const EXEC: u64 = 4;
}

record! {
    pub struct Clock {
        pub cycles: u64,
        /// Nanoseconds since boot.
        pub nanos: u64,
        pub tsc_hz: u64,
    }
}

record! {
    /// Where the bytes of a paged plate (`plate_paged`) past its head are:
    /// the file `object` (words the pager chose: for the file server, inode,
    /// size and modification time) of `size` bytes that process `pager`
    /// serves.
    #[derive(PartialEq, Eq)]
    pub struct PagerSource {
        pub pager: u64,
        pub object: [u64; 4],
        pub size: u64,
    }
}

/// The entry of a pager on which the kernel calls it for a page, with a
/// `PageIn` as the message and the page as the reply buffer: it answers
/// as to a read (`endr`, `rv_write` and `endr_len`, or `forward` to
/// whoever holds the bytes), with the number of bytes given.
pub const PAGER_ENTRY: u64 = 23;

record! {
    /// A pager's call for a page: `len` bytes of file `object` at `offset`.
    #[derive(PartialEq, Eq)]
    pub struct PageIn {
        pub object: [u64; 4],
        pub offset: u64,
        pub len: u64,
    }
}

record! {
    /// Page-fault counts by what was touched (Tender's argument rests on them).
    #[derive(PartialEq, Eq)]
    pub struct FaultCounts {
        /// Text faults served from a program image: a frame filled by a copy,
        /// or one another process of the program filled (its shared text).
        pub text: u64,
        pub data: u64,
        pub bss: u64,
        pub stack: u64,
        pub heap: u64,
        /// Text faults that mapped an NVM page in place (an OFF2F program's
        /// text, seed 001 fig. 3 steps X and Y): no frame, no copy.
        pub nvm_text: u64,
        /// Of the faults above, those whose page a pager read from storage
        /// (an OFF2F program's data, from file 1 on the disk): pages read at
        /// faults, as the paper's ELF reads text and data.
        pub paged: u64,
    }
}

impl FaultCounts {
    pub fn total(&self) -> u64 {
        self.text + self.data + self.bss + self.stack + self.heap + self.nvm_text
    }
}

pub mod state {
    pub const RUNNABLE: u64 = 1;
    pub const RUNNING: u64 = 2;
    /// Blocked for any other reason: in a call it made, a futex, a sleep.
    pub const BLOCKED: u64 = 3;
    pub const EXITED: u64 = 4;
    /// Blocked waiting for calls at its port (a server between calls):
    /// told apart from `BLOCKED` so that a supervisor waiting for its
    /// process's next call is not taken for one still serving the last.
    pub const WAITING: u64 = 5;
}

record! {
    pub struct ProcInfo {
        pub pid: u64,
        pub parent: u64,
        pub state: u64,
        /// CPU it runs on or last ran on.
        pub cpu: u64,
        /// Pinned CPU, or ANY_CPU.
        pub affinity: u64 = ANY_CPU,
        pub policy: u64,
        pub faults: FaultCounts,
        /// Physical memory held by the process's regions, in pages.
        pub resident_pages: u64,
        pub cpu_ns: u64,
        pub exit_status: u64,
        /// Kernel memory it causes, in bytes (with its descendants'), and
        /// its limit (`SpawnOptions::kernel_limit`).
        pub kernel_bytes: u64,
        pub kernel_limit: u64,
        pub name: [u8; 32] = [0; 32],
    }
}

record! {
    pub struct SysInfo {
        pub cpus: u64,
        pub frames_total: u64,
        pub frames_free: u64,
        pub heap_size: u64,
        pub heap_used: u64,
        pub processes: u64,
        pub default_policy: u64,
        pub syscalls: u64,
        /// Memory held by the resource pool, in bytes.
        pub pool_bytes: u64,
        /// Operations performed by the resource mediator so far.
        pub resource_ops: u64,
        /// Context switches on all CPUs so far.
        pub context_switches: u64,
        /// Inter-processor interrupts sent so far (wake-ups, TLB shootdowns,
        /// calls on other CPUs).
        pub ipis: u64,
        /// Kernel heap allocations so far (a benchmark counts what an operation
        /// allocates: a call's or a batch's objects come from free lists).
        pub heap_allocations: u64,
        /// Pooled virtual spaces and text regions of OFF2F programs taken
        /// again, and the NVM text pages they held mapped: reused with no
        /// content copy at all (seed 001 with seed 000's pool).
        pub nvm_text_reuses: u64,
        pub nvm_text_pages_reused: u64,
        /// Pages pagers supplied (data read from files at faults or at
        /// creation), and page-ins that failed.
        pub pages_paged_in: u64,
        pub page_ins_failed: u64,
        /// Seed 003's counts: Linux system calls (served by the kernel or
        /// sent to supervisors), communications (rendezvous completed), the
        /// bytes the kernel copied between processes, and of those the bytes
        /// servers moved in and out of the memory of a process waiting in a
        /// call (passing by pointer).
        pub linux_calls: u64,
        pub communications: u64,
        pub bytes_copied: u64,
        pub bytes_by_reference: u64,
        /// Time every CPU has spent idle (up to its last switch).
        pub idle_ns: u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_round_trip_and_are_unique() {
        for (i, s) in Sys::ALL.iter().enumerate() {
            assert_eq!(Sys::from_u64(*s as u64), Some(*s));
            assert!(Sys::ALL[..i].iter().all(|o| *o as u64 != *s as u64));
        }
        assert_eq!(Sys::from_u64(9999), None);
    }

    #[test]
    fn resource_operations_are_numbered_densely_and_once() {
        // The mediator's counters are an array indexed by these codes.
        for (i, op) in ResOp::ALL.iter().enumerate() {
            assert_eq!(*op as usize, i);
            assert_eq!(ResOp::from_u64(i as u64), Some(*op));
        }
    }

    #[test]
    fn name_fields_cut_at_characters_and_read_back() {
        let f: [u8; 4] = name_field("abcdef");
        assert_eq!(name_str(&f), "abcd");
        let f: [u8; 4] = name_field("ab\u{e9}\u{e9}");
        assert_eq!(name_str(&f), "ab\u{e9}");
        let f: [u8; 8] = name_field("x");
        assert_eq!(name_str(&f), "x");
        assert_eq!(name_str(&[0xff, 0]), "?");
    }

    #[test]
    fn records_hold_no_padding() {
        use core::mem::size_of;
        assert_eq!(size_of::<ResRecord>(), 11 * 8 + 32);
        assert_eq!(size_of::<TraceRecord>(), 6 * 8 + 24);
        assert_eq!(size_of::<CounterRecord>(), 4 * 8 + 24);
        assert_eq!(size_of::<ServerRecord>(), 10 * 8 + 64);
        assert_eq!(size_of::<PoolRule>(), 4 * 8);
        assert_eq!(size_of::<SpawnOptions>(), 12 * 8);
        assert_eq!(size_of::<DeviceRecord>(), 10 * 8 + 6 * 24);
        assert_eq!(size_of::<NvmRecord>(), 6 * 8 + 64);
        assert_eq!(size_of::<NvmStoreInfo>(), 10 * 8);
        assert_eq!(size_of::<FaultCounts>(), 7 * 8);
        assert_eq!(size_of::<PagerSource>(), 6 * 8);
        assert_eq!(size_of::<PageIn>(), 6 * 8);
        assert_eq!(size_of::<linux::Regs>(), 19 * 8);
        assert_eq!(size_of::<linux::CallFor>(), 8 * 8);
        // A Linux system call travels inline, whole.
        assert_eq!(size_of::<linux::LinuxCall>(), 64);
        assert_eq!(size_of::<linux::LinuxFault>(), 5 * 8);
    }

    #[test]
    fn errors_encode_as_negative_results() {
        for e in Error::ALL {
            assert_eq!(Error::decode(e.as_ret()), Err(*e));
        }
        assert_eq!(Error::decode(0), Ok(0));
        assert_eq!(Error::decode(0x7fff_ffff_f000), Ok(0x7fff_ffff_f000));
        assert_eq!(Error::decode(u64::MAX - 5000), Ok(u64::MAX - 5000));
    }
}

args::enum_arg!(ResKind, ContainerMode, RegionKind, LoadPolicy, Topic);
