//! The inspector's records (`inspect`): the kernel reports what it holds as
//! arrays of these, and user space formats them.

use crate::{ANY_CPU, PoolRule, PoolSettings};

/// Most records one `inspect` call writes.
pub const INSPECT_MAX: u64 = 256;

numbered! {
    /// What `inspect` reports. Each topic fills an array of one record type.
    pub enum Topic {
        /// `KindCount`s: live resources of every kind.
        Counts = 1,
        /// `ResRecord`s: the resources of kind `arg` (a `ResKind`: plates,
        /// programs, spaces, regions, attachments, processes, physical memory).
        Resources = 2,
        /// One `PoolSettings`.
        PoolSettings = 3,
        /// `PoolRule`s: the add function's rules, in order.
        PoolRules = 4,
        /// `PoolRecord`s: what the pool holds and did, by `PoolKind`.
        Pool = 5,
        /// `TraceRecord`s: the mediator's last `arg` operations (at most 256),
        /// oldest first.
        Trace = 6,
        /// `CounterRecord`s: the mediator's operations by kind and operation.
        Counters = 7,
        /// `ServerRecord`s: the processes registered under a name.
        Servers = 8,
        /// One `IpcTotals`.
        Ipc = 9,
        /// `CpuRecord`s: the processors online.
        Cpus = 10,
        /// `DeviceRecord`s: the PCI functions found at boot.
        Devices = 11,
        /// `NvmRecord`s: the text files of the NVM store, by name.
        Nvm = 12,
        /// One `NvmStoreInfo` (none: the machine has no NVM store).
        NvmStore = 13,
        /// `CpuTimeRecord`s: CPU time by process, of those alive, and of
        /// those that have ended by group, and the processors' idle time.
        CpuTimes = 14,
    }
}

/// A record type, and the topic that reports it: each topic has one.
pub trait Record: Copy + Default {
    const TOPIC: Topic;
}

macro_rules! records {
    ($($record:ty => $topic:ident,)*) => {
        $(impl Record for $record {
            const TOPIC: Topic = Topic::$topic;
        })*
    };
}

records! {
    KindCount => Counts,
    ResRecord => Resources,
    PoolSettings => PoolSettings,
    PoolRule => PoolRules,
    PoolRecord => Pool,
    TraceRecord => Trace,
    CounterRecord => Counters,
    ServerRecord => Servers,
    IpcTotals => Ipc,
    CpuRecord => Cpus,
    DeviceRecord => Devices,
    NvmRecord => Nvm,
    NvmStoreInfo => NvmStore,
    CpuTimeRecord => CpuTimes,
}

/// `CpuTimeRecord::flags`: a Linux process (else native).
pub const CPU_LINUX: u64 = 1;
/// A Linux fork's or vfork's copy of its parent (not an exec's program).
pub const CPU_FORKED: u64 = 2;
/// A process alive (else the sum of the ended processes of one group).
pub const CPU_LIVE: u64 = 4;
/// The processors' idle computations, all together.
pub const CPU_IDLE: u64 = 8;

record! {
    /// CPU time of a live process, of the ended computations of one group
    /// (a program's name and `CPU_LINUX`, `CPU_FORKED`), or of the idle
    /// computations (`Topic::CpuTimes`). In nanoseconds (under icount,
    /// instructions).
    pub struct CpuTimeRecord {
        /// The process's pid (0: a group, or idle).
        pub pid: u64,
        /// Its parent (0 for a group).
        pub parent: u64,
        /// `CPU_*` flags.
        pub flags: u64,
        /// Computations ended (a group), 1 for a live process.
        pub count: u64,
        pub ns: u64,
        /// The part of `ns` spent in the kernel: system calls, and faults
        /// and interrupts taken in user mode, up to the way back (0 unless
        /// the boot asked for it: `cputime`).
        pub kernel_ns: u64,
        /// The program's name. NUL-padded.
        pub name: [u8; 32],
    }
}

record! {
    /// Live resources of one kind.
    pub struct KindCount {
        /// A `ResKind`.
        pub kind: u64,
        pub live: u64,
    }
}

numbered! {
    /// Where a virtual region is (`ResRecord::detail[0]` of a region).
    pub enum RegionPlace {
        Detached = 0,
        /// Attached to a virtual space (a virtual user space links them).
        InSpace = 1,
        /// Attached in the kernel (a work area).
        InKernel = 2,
        /// A container's memory.
        InContainer = 3,
        /// Being moved between places.
        Moving = 4,
    }
}

record! {
    /// One resource of a kind (`Topic::Resources`).
    pub struct ResRecord {
        pub id: u64,
        /// Pid of the process that owns it (0: the kernel); a process's parent.
        pub owner: u64,
        /// Memory it holds, in bytes (a plate: its size).
        pub bytes: u64,
        /// By kind: program: entry point; space: regions attached; region:
        /// pages; attachment: address; process: pid; physical memory: pages.
        pub value: u64,
        /// Related resources, 0 if none: program: plate; attachment: region,
        /// space, container holding it; process: program, space.
        pub links: [u64; 3],
        /// By kind: program: text, data and BSS bytes, processes using it;
        /// region: its `RegionPlace`.
        pub detail: [u64; 4],
        /// Plate: its file; program and process: the program's name. NUL-padded.
        pub name: [u8; 32],
    }
}

record! {
    /// What the pool holds of one kind, and what it did so far.
    pub struct PoolRecord {
        /// A `PoolKind`.
        pub kind: u64,
        pub count: u64,
        pub bytes: u64,
        /// Creations served from the pool, and those it could not serve.
        pub hits: u64,
        pub misses: u64,
        /// Made by the add function; deleted by the reduce function.
        pub added: u64,
        pub reduced: u64,
    }
}

record! {
    /// One operation of the mediator's trace.
    pub struct TraceRecord {
        pub seq: u64,
        /// Pid of the caller (0: the kernel).
        pub caller: u64,
        /// The `ResKind` operated on.
        pub kind: u64,
        /// The resource it named or made.
        pub id: u64,
        /// 0, or the negated `Error`.
        pub result: i64,
        pub cycles: u64,
        /// The operation's name, NUL-padded.
        pub op: [u8; 24],
    }
}

record! {
    /// The mediator's count of one operation on one kind.
    pub struct CounterRecord {
        /// A `ResKind`.
        pub kind: u64,
        pub calls: u64,
        pub errors: u64,
        /// Cycles of all its calls.
        pub cycles: u64,
        /// The operation's name, NUL-padded.
        pub op: [u8; 24],
    }
}

record! {
    /// A process registered under a name, its placement and its port's counters.
    pub struct ServerRecord {
        pub pid: u64,
        /// 0 once it no longer runs (its name is about to go).
        pub alive: u64,
        /// The CPU it is pinned to, or ANY_CPU.
        pub affinity: u64 = ANY_CPU,
        /// The CPU it last ran on.
        pub last_cpu: u64,
        /// Calls accepted, answered and passed on.
        pub accepted: u64,
        pub answered: u64,
        pub forwarded: u64,
        /// Calls waiting to be accepted, and accepted calls not yet answered.
        pub queued: u64,
        pub held: u64,
        /// Requests it sent through its rings that are not back yet (u64::MAX:
        /// it has no rings).
        pub in_flight: u64 = u64::MAX,
        /// The name, NUL-padded.
        pub name: [u8; 64] = [0; 64],
    }
}

record! {
    /// Rendezvous totals since boot.
    pub struct IpcTotals {
        /// Rendezvous completed.
        pub calls: u64,
        /// Bytes copied between processes.
        pub bytes_copied: u64,
        /// Switches straight from one process to another, without the scheduler.
        pub direct_switches: u64,
    }
}

record! {
    /// One processor.
    pub struct CpuRecord {
        pub index: u64,
        pub apic_id: u64,
        /// Timer interrupts taken.
        pub ticks: u64,
        /// Function calls run for other CPUs.
        pub calls_served: u64,
    }
}

record! {
    /// A base address register of a device.
    pub struct BarRecord {
        /// Physical address (memory) or port (I/O); 0: not there.
        pub base: u64,
        pub size: u64,
        /// `BAR_IO`, `BAR_64`, `BAR_PREFETCH`.
        pub flags: u64,
    }
}

pub const BAR_IO: u64 = 1;
pub const BAR_64: u64 = 2;
pub const BAR_PREFETCH: u64 = 4;

record! {
    /// A PCI function: what it is, where its registers are, who drives it.
    pub struct DeviceRecord {
        /// Its resource id (`device_claim`, `device_map`, ...).
        pub id: u64,
        /// bus << 8 | device << 3 | function.
        pub bdf: u64,
        pub vendor: u64,
        pub device: u64,
        /// class << 16 | subclass << 8 | programming interface.
        pub class: u64,
        /// Interrupt pin (1 = INTA; 0: none) and the line the firmware routed it to.
        pub pin: u64,
        pub line: u64,
        /// The MSI-X table size (0: no MSI-X).
        pub msix: u64,
        /// The process holding it (0: nobody).
        pub holder: u64,
        /// Interrupts delivered to its holder since boot.
        pub interrupts: u64,
        pub bars: [BarRecord; 6],
    }
}

record! {
    /// A text file of the NVM store (seed 001's file 2).
    pub struct NvmRecord {
        /// Where its pages start in the NVM (bytes, page-aligned).
        pub offset: u64,
        pub len: u64,
        pub pages: u64,
        /// CRC-64/XZ of the content (an OFF2F header names it).
        pub crc: u64,
        /// The store's change that wrote this content.
        pub version: u64,
        /// Regions mapping it now (processes, pooled text regions).
        pub users: u64,
        /// The name, NUL-padded.
        pub name: [u8; 64] = [0; 64],
    }
}

record! {
    /// The NVM and its store as a whole.
    pub struct NvmStoreInfo {
        /// Physical address and size of the NVM.
        pub base: u64,
        pub size: u64,
        /// Pages for files, free ones, and the largest free run (the largest
        /// file that fits: each file is one run).
        pub data_pages: u64,
        pub free_pages: u64,
        pub largest_free_run: u64,
        pub files: u64,
        pub capacity: u64,
        /// Changes committed since the store was made.
        pub sequence: u64,
        /// Pages of replaced or deleted versions still mapped by processes.
        pub orphaned_pages: u64,
        /// 1 while a change runs (then the free space is not known).
        pub busy: u64,
    }
}

/// A NUL-padded name field's text (up to the first NUL; "?" if it is not UTF-8).
pub fn name_str(name: &[u8]) -> &str {
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    core::str::from_utf8(&name[..end]).unwrap_or("?")
}

/// `s` in a NUL-padded name field, cut at a character boundary if too long.
pub fn name_field<const N: usize>(s: &str) -> [u8; N] {
    let mut out = [0u8; N];
    let mut n = s.len().min(N);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    out[..n].copy_from_slice(&s.as_bytes()[..n]);
    out
}
