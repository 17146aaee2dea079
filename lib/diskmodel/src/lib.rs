//! Seed 001's disks as speed models, for the OFF2F experiments. Under
//! QEMU's instruction counter a device's real latency does not show in the
//! guest's clock, so a block server (the RAM disk or the virtio-blk driver)
//! makes each request wait, in guest time, what the modelled disk would
//! take: its access latency when the request does not continue the last one
//! (a disk streams on without a seek, its read-ahead serves the rest), then
//! its bytes over the bandwidth. The disk serves one request at a time: a
//! request that arrives while it is busy waits its turn.
//!
//! Plain-TCG runs take the same model from QEMU instead (block throttling:
//! [`Model::throttling`]), since there guest time follows the host's clock.

#![no_std]
#![forbid(unsafe_code)]

/// A disk's speed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Model {
    pub name: &'static str,
    /// Seek plus rotation (or an SSD's access time), paid by a request
    /// that does not start where the last one ended.
    pub latency_ns: u64,
    pub bytes_per_s: u64,
}

/// The paper's disks: `dk` a 5,400 rpm 2.5" hard disk (an average seek of
/// 12 ms plus half a rotation, 5.6 ms; 100 MB/s), `sata` a SATA SSD
/// (100 µs, 500 MB/s), `nvme` an NVMe SSD (20 µs, 2 GB/s).
pub const MODELS: [Model; 3] = [
    Model {
        name: "dk",
        latency_ns: 17_600_000,
        bytes_per_s: 100_000_000,
    },
    Model {
        name: "sata",
        latency_ns: 100_000,
        bytes_per_s: 500_000_000,
    },
    Model {
        name: "nvme",
        latency_ns: 20_000,
        bytes_per_s: 2_000_000_000,
    },
];

/// The name that means no model: the device's own speed.
pub const NONE: &str = "none";

/// `none` → `Ok(None)`; a model's name → that model; anything else: the
/// names there are, for the message.
pub fn named(name: &str) -> Result<Option<Model>, &'static str> {
    if name == NONE {
        return Ok(None);
    }
    MODELS
        .iter()
        .find(|m| m.name == name)
        .map(|m| Some(*m))
        .ok_or("none, dk, sata, nvme")
}

impl Model {
    /// How long `bytes` take, with an access first or not.
    pub fn time_ns(&self, bytes: u64, seek: bool) -> u64 {
        let transfer = (bytes as u128 * 1_000_000_000).div_ceil(self.bytes_per_s as u128);
        let transfer = u64::try_from(transfer).unwrap_or(u64::MAX);
        if seek {
            transfer.saturating_add(self.latency_ns)
        } else {
            transfer
        }
    }

    /// QEMU's block throttling for the same disk (`throttling.bps-total`,
    /// `throttling.iops-total`): its bandwidth, and as many requests a
    /// second as accesses fit in one (QEMU cannot tell a seek from a
    /// streaming request, so every request counts as an access).
    pub fn throttling(&self) -> (u64, u64) {
        (self.bytes_per_s, (1_000_000_000 / self.latency_ns.max(1)).max(1))
    }
}

/// One modelled disk: where its head is and until when it is busy.
#[derive(Clone, Debug)]
pub struct Disk {
    model: Model,
    /// The block after the last request's.
    head: u64,
    /// When the disk is done with the requests it has (ns, guest time).
    busy_until: u64,
}

impl Disk {
    pub fn new(model: Model) -> Disk {
        Disk {
            model,
            head: u64::MAX,
            busy_until: 0,
        }
    }

    pub fn model(&self) -> Model {
        self.model
    }

    /// A request of `blocks` blocks of `block_size` bytes from block
    /// `first` arrives at `now`: when the disk is done with it (ns).
    pub fn request(&mut self, now: u64, first: u64, blocks: u64, block_size: u64) -> u64 {
        let seek = self.head != first;
        let start = now.max(self.busy_until);
        self.busy_until = start.saturating_add(self.model.time_ns(blocks.saturating_mul(block_size), seek));
        self.head = first.saturating_add(blocks);
        self.busy_until
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_give_the_models_and_none() {
        assert_eq!(named("none"), Ok(None));
        assert_eq!(named("dk").unwrap().unwrap().latency_ns, 17_600_000);
        assert_eq!(named("nvme").unwrap().unwrap().bytes_per_s, 2_000_000_000);
        assert!(named("floppy").is_err());
        assert!(named("").is_err());
    }

    #[test]
    fn a_seek_costs_the_latency_and_bytes_the_bandwidth() {
        let dk = named("dk").unwrap().unwrap();
        // 4 KiB at 100 MB/s: 40.96 µs, rounded up.
        assert_eq!(dk.time_ns(4096, false), 40_960);
        assert_eq!(dk.time_ns(4096, true), 17_640_960);
        assert_eq!(dk.time_ns(0, false), 0);
        assert_eq!(dk.time_ns(u64::MAX, true), u64::MAX);
    }

    #[test]
    fn a_request_that_continues_the_last_does_not_seek() {
        let mut d = Disk::new(named("sata").unwrap().unwrap());
        let t1 = d.request(1_000, 10, 2, 4096);
        assert_eq!(t1, 1_000 + 100_000 + 16_384);
        // Arrives while the disk is busy, continues where it ended.
        let t2 = d.request(1_500, 12, 1, 4096);
        assert_eq!(t2, t1 + 8_192);
        // Elsewhere, after the disk went idle: a seek from then.
        let t3 = d.request(t2 + 1_000_000, 0, 1, 4096);
        assert_eq!(t3, t2 + 1_000_000 + 100_000 + 8_192);
    }

    #[test]
    fn throttling_follows_the_model() {
        let (bps, iops) = named("dk").unwrap().unwrap().throttling();
        assert_eq!((bps, iops), (100_000_000, 56));
        let (_, iops) = named("nvme").unwrap().unwrap().throttling();
        assert_eq!(iops, 50_000);
    }
}
