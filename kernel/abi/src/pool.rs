//! The resource pool's settings as the kernel takes them (`pool_set`) and
//! reports them (`inspect`): structures, not text. The language of
//! `etc/pool.conf` is parsed in user space into these.

/// Largest number of add rules (`pool_set`).
pub const MAX_POOL_RULES: u64 = 64;
/// Largest region the add function makes, in pages.
pub const MAX_POOL_REGION_PAGES: u64 = 1 << 18;

numbered! {
    /// The kinds of resources the pool keeps (seed 000, table 1, in its order).
    pub enum PoolKind {
        /// A work area: a one-page virtual kernel space.
        WorkArea = 0,
        /// An empty virtual space.
        Space = 1,
        /// A virtual region, kept by size.
        Region = 2,
        Program = 3,
        /// A text region holding a program's text.
        Text = 4,
        /// A virtual space with all of a program's regions attached and loaded.
        Full = 5,
    }
}

record! {
    /// The pool's settings (seed 000 §2.3–2.4).
    #[derive(PartialEq, Eq)]
    pub struct PoolSettings {
        /// 1: the reuse function keeps an ended process's resources for the
        /// next creation; 0: they are deleted.
        pub reuse: u64,
        /// 1: the reduce function deletes resources that stay unused; 0: off.
        pub reduce: u64,
        /// The paper's T: how long a resource stays unused before reduce deletes it.
        pub unused_ns: u64,
        /// How often reduce runs (more than 0).
        pub interval_ns: u64,
    }
}

record! {
    /// One rule of the add function: keep `count` resources of `kind` made
    /// ahead of need.
    #[derive(PartialEq, Eq)]
    pub struct PoolRule {
        /// A `PoolKind`.
        pub kind: u64,
        /// The program's plate for the kinds that depend on a program
        /// (`Program`, `Text`, `Full`); 0 for the others.
        pub plate: u64,
        /// A region's pages (`Region`: 1..=MAX_POOL_REGION_PAGES); 0 for the others.
        pub pages: u64,
        pub count: u64,
    }
}
