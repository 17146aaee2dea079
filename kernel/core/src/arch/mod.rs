//! Processor- and platform-specific code. Tessera targets x86_64 PCs only.
pub mod x86_64;
