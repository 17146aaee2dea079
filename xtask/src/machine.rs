//! The one definition of the virtual machine Tessera runs on. Everything that
//! starts QEMU (run, debug, test, boottime, and the benchmark harness through
//! `cargo xtask qemu-args`, which boots Linux for comparison) gets its
//! arguments here, so that Tessera and Linux are always measured on the
//! identical machine.

use std::process::Command;

use crate::Args;
use crate::nvm::Nvm;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Plain (multi-threaded) TCG: the default, because on hosts whose
    /// /dev/kvm is a software hypervisor TCG boots faster than KVM.
    Tcg,
    /// TCG with one virtual nanosecond per guest instruction: repeatable
    /// figures on a noisy host (measurements of record).
    Icount,
    /// Hardware virtualisation, for hosts that really have it.
    Kvm,
}

impl Mode {
    pub fn parse(text: &str) -> Result<Mode, String> {
        match text {
            "tcg" => Ok(Mode::Tcg),
            "icount" => Ok(Mode::Icount),
            "kvm" => Ok(Mode::Kvm),
            other => Err(format!("unknown mode {other:?} (want tcg, icount or kvm)")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::Tcg => "tcg",
            Mode::Icount => "icount",
            Mode::Kvm => "kvm",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serial {
    /// Serial port only: what harnesses read.
    Stdio,
    /// Serial multiplexed with the QEMU monitor, so that an interactive user
    /// can quit with Ctrl-A X.
    Monitor,
}

#[derive(Debug, Clone)]
pub struct Machine {
    pub qemu: String,
    pub machine: String,
    pub mode: Mode,
    pub smp: u32,
    pub mem: String,
    pub serial: Serial,
    /// The pseudo-NVM device, unless turned off (NVM=off).
    pub nvm: Option<Nvm>,
    /// A raw disk image on virtio-blk (the modern PCI device, 1af4:1042):
    /// the same device for Tessera's driver and for the Linux reference.
    /// None: no block device.
    pub disk: Option<String>,
    /// The disk as slow as one of seed 001's disks (DISK_MODEL=dk|sata|nvme),
    /// by QEMU's block throttling: for plain-TCG runs, where guest time
    /// follows the host's clock (under icount the guest's block servers
    /// wait instead, crate `diskmodel`).
    pub disk_model: Option<diskmodel::Model>,
    /// The disk's writes go to a temporary overlay QEMU drops at the end
    /// (`snapshot=on`): boots side by side share one image unchanged.
    pub scratch: bool,
    /// QEMU's PCI test device (`pci-testdev`, 1b36:0005), for the tests
    /// that drive a device as a driver would: the NVM device is the
    /// kernel's, never a driver's.
    pub test_device: bool,
    /// A NIC on QEMU's user network (NET=1). None: no NIC.
    pub net: Option<UserNet>,
}

/// A virtio-net NIC (the modern PCI device, 1af4:1041) on QEMU's user
/// network: the guest is 10.0.2.15 behind the gateway 10.0.2.2, QEMU's own
/// NAT. `restrict=on` keeps the guest from reaching anything outside QEMU
/// (the host included) but what is forwarded here explicitly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserNet {
    /// The host port on 127.0.0.1 (the host's loopback only) forwarded to
    /// the guest's port 80.
    pub http_port: Option<u16>,
    /// A TCP echo service at 10.0.2.100:7 for the guest: QEMU runs `cat`
    /// on the host for each connection.
    pub echo: bool,
}

/// The host port `make run NET=1` forwards to the guest's web server.
pub const HTTP_PORT: u16 = 8080;

impl UserNet {
    pub fn args(&self) -> Vec<String> {
        let mut netdev = "user,id=net0,restrict=on".to_string();
        if let Some(port) = self.http_port {
            netdev += &format!(",hostfwd=tcp:127.0.0.1:{port}-:80");
        }
        if self.echo {
            netdev += ",guestfwd=tcp:10.0.2.100:7-cmd:cat";
        }
        vec![
            "-netdev".to_string(),
            netdev,
            "-device".to_string(),
            "virtio-net-pci,netdev=net0,disable-legacy=on".to_string(),
        ]
    }
}

pub const DEFAULT_QEMU: &str = "qemu-system-x86_64";
pub const DEFAULT_MEM: &str = "512M";

impl Machine {
    /// Reads `--mode`, `--smp`, `--mem` and `--disk` from `args`, falling
    /// back to the environment (ACCEL, SMP, MEM, QEMU, MACHINE, NVM,
    /// NVM_SIZE, DISK) that the Makefile exports. DISK=off: no disk.
    pub fn configure(args: &mut Args) -> Result<Machine, String> {
        Self::from_sources(args, crate::env_var)
    }

    pub fn from_sources(args: &mut Args, env: impl Fn(&str) -> Option<String>) -> Result<Machine, String> {
        let mode = match args.value("--mode")?.or_else(|| env("ACCEL")) {
            Some(m) => Mode::parse(m.trim())?,
            None => Mode::Tcg,
        };
        let smp = match args.value("--smp")?.or_else(|| env("SMP")) {
            Some(s) => s
                .trim()
                .parse()
                .ok()
                .filter(|&n: &u32| n >= 1)
                .ok_or_else(|| format!("bad CPU count {s:?}"))?,
            None => 1,
        };
        let mem = args
            .value("--mem")?
            .or_else(|| env("MEM"))
            .unwrap_or_else(|| DEFAULT_MEM.to_string());
        if !mem.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(format!("bad memory size {mem:?} (e.g. 512M, 1G)"));
        }
        let disk = args
            .value("--disk")?
            .or_else(|| env("DISK"))
            .filter(|d| !d.is_empty() && d != "off");
        let disk_model = match env("DISK_MODEL").filter(|m| !m.trim().is_empty()) {
            Some(m) => diskmodel::named(m.trim()).map_err(|names| format!("bad DISK_MODEL {m:?} (want {names})"))?,
            None => None,
        };
        let net = match env("NET").as_deref().map(str::trim) {
            None | Some("0" | "off") => None,
            Some("1" | "on") => Some(UserNet {
                http_port: Some(HTTP_PORT),
                echo: false,
            }),
            Some(other) => return Err(format!("bad NET {other:?} (want 1 or off)")),
        };
        Ok(Machine {
            disk,
            disk_model,
            scratch: false,
            net,
            qemu: env("QEMU").unwrap_or_else(|| DEFAULT_QEMU.to_string()),
            machine: env("MACHINE").unwrap_or_else(|| "pc".to_string()),
            mode,
            smp,
            mem: mem.trim().to_string(),
            serial: Serial::Stdio,
            nvm: Nvm::configure(env("NVM"), env("NVM_SIZE"))?,
            test_device: false,
        })
    }

    pub fn with_smp(&self, smp: u32) -> Machine {
        Machine { smp, ..self.clone() }
    }

    /// The same machine with its NVM backed by `image` (made fresh if it is
    /// missing), so that boots running side by side do not share one.
    pub fn with_nvm_image(&self, image: &std::path::Path) -> Machine {
        Machine {
            nvm: self.nvm.as_ref().map(|n| n.at(image)),
            ..self.clone()
        }
    }

    /// The same machine with text files stored in its NVM store when it is
    /// prepared: (name, host file).
    pub fn with_nvm_texts(&self, texts: Vec<(String, std::path::PathBuf)>) -> Machine {
        Machine {
            nvm: self.nvm.as_ref().map(|n| crate::nvm::Nvm { texts, ..n.clone() }),
            ..self.clone()
        }
    }

    /// The same machine with QEMU's PCI test device (test boots).
    pub fn with_test_device(&self) -> Machine {
        Machine {
            test_device: true,
            ..self.clone()
        }
    }

    /// The same machine with disk image `image` (None: without a disk).
    pub fn with_disk(&self, image: Option<&str>) -> Machine {
        Machine {
            disk: image.map(String::from),
            ..self.clone()
        }
    }

    /// The same machine with disk image `image`, its writes dropped when
    /// the boot ends.
    pub fn with_scratch_disk(&self, image: &str) -> Machine {
        Machine {
            disk: Some(image.to_string()),
            scratch: true,
            ..self.clone()
        }
    }

    /// The same machine with a NIC on the user network (None: without).
    pub fn with_net(&self, net: Option<UserNet>) -> Machine {
        Machine { net, ..self.clone() }
    }

    /// Makes what the machine's devices need on the host (the NVM image);
    /// a disk image must exist.
    pub fn prepare(&self) -> Result<(), String> {
        if let Some(disk) = &self.disk
            && !std::path::Path::new(disk).is_file()
        {
            return Err(format!(
                "disk image {disk:?} does not exist (make disk, or mke2fs -t ext2 -d DIR)"
            ));
        }
        if let Some(nvm) = &self.nvm
            && nvm.prepare()?
        {
            eprintln!(
                "xtask: made {}, an empty NVM store of {} MiB",
                nvm.path.display(),
                nvm.size >> 20
            );
        }
        Ok(())
    }

    /// Like `prepare`, without a word (test boots make theirs every time).
    pub fn prepare_quietly(&self) -> Result<(), String> {
        self.nvm.as_ref().map_or(Ok(()), |n| n.prepare().map(|_| ()))
    }

    /// The QEMU arguments, one argv element per item, without the binary and
    /// without `-kernel`/`-append`/`-initrd`.
    pub fn args(&self) -> Vec<String> {
        let mut args: Vec<String> = Vec::new();
        let mut push = |items: &[&str]| args.extend(items.iter().map(|s| s.to_string()));
        // `pc` rather than the faster-booting microvm: its SeaBIOS assigns
        // PCI BARs and enables the devices, which virtio-pci and the ivshmem
        // device standing in for NVM depend on. -nodefaults also removes the
        // default NIC, so no host-driven packets disturb icount runs.
        push(&["-machine", &self.machine]);
        push(&["-nodefaults", "-no-user-config", "-display", "none"]);
        push(&[
            "-serial",
            match self.serial {
                Serial::Stdio => "stdio",
                Serial::Monitor => "mon:stdio",
            },
        ]);
        // The guest ends a run by writing to port 0xf4: status (v << 1) | 1.
        push(&["-device", "isa-debug-exit,iobase=0xf4,iosize=4"]);
        // A triple fault must end the run, not loop through reboots.
        push(&["-no-reboot"]);
        push(&["-m", &self.mem, "-smp", &self.smp.to_string()]);
        match self.mode {
            Mode::Tcg => push(&["-accel", "tcg"]),
            Mode::Icount => push(&[
                "-accel",
                "tcg",
                // shift=0: one virtual ns per instruction; sleep=off: idle
                // time is skipped rather than waited for. A fixed guest wall
                // clock makes runs bit-identical.
                "-icount",
                "shift=0,sleep=off",
                "-rtc",
                "base=2024-01-01T00:00:00,clock=vm",
            ]),
            // The plain `host` model aborts at start-up ("failed to set MSR
            // 0x10a") under hypervisors that refuse IA32_ARCH_CAPABILITIES,
            // such as nested or PVM-based KVM; dropping that feature is
            // harmless elsewhere.
            Mode::Kvm => push(&["-accel", "kvm", "-cpu", "host,-arch-capabilities"]),
        }
        // The pseudo non-volatile memory: a file-backed PCI BAR that keeps
        // its content across boots (1af4:1110, BAR2).
        if let Some(nvm) = &self.nvm {
            args.extend(nvm.args());
        }
        if self.test_device {
            args.extend(["-device".to_string(), "pci-testdev".to_string()]);
        }
        if let Some(path) = &self.disk {
            // QEMU's option syntax doubles a comma inside a value. The host's
            // page cache stands behind the disk (writeback), as for an image
            // on any development machine; the guest sees a volatile write
            // cache and must flush for durability.
            let file = path.replace(',', ",,");
            let scratch = if self.scratch { ",snapshot=on" } else { "" };
            let throttle = self.disk_model.map_or(String::new(), |m| {
                let (bps, iops) = m.throttling();
                format!(",throttling.bps-total={bps},throttling.iops-total={iops}")
            });
            args.extend([
                "-drive".to_string(),
                format!("file={file},if=none,id=disk0,format=raw,cache=writeback{scratch}{throttle}"),
                // Modern only: no legacy I/O BAR, one register layout to drive.
                "-device".to_string(),
                "virtio-blk-pci,drive=disk0,disable-legacy=on".to_string(),
            ]);
        }
        if let Some(net) = &self.net {
            args.extend(net.args());
        }
        args
    }

    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.qemu);
        cmd.args(self.args());
        cmd
    }

    pub fn describe(&self) -> String {
        let nvm = match &self.nvm {
            Some(n) => format!(", {} MiB NVM", n.size >> 20),
            None => String::new(),
        };
        let disk = match &self.disk {
            Some(d) => format!(", disk {d}"),
            None => String::new(),
        };
        let net = match &self.net {
            Some(UserNet { http_port: Some(p), .. }) => format!(", user network (host 127.0.0.1:{p} -> guest port 80)"),
            Some(_) => ", user network".to_string(),
            None => String::new(),
        };
        format!(
            "machine {}, {}, {} CPU(s), {} memory{nvm}{disk}{net}",
            self.machine,
            self.mode.name(),
            self.smp,
            self.mem
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configure(cli: &[&str], env: &[(&str, &str)]) -> Result<Machine, String> {
        let mut args = Args::new(cli.iter().map(|s| s.to_string()).collect());
        let m = Machine::from_sources(&mut args, |k| {
            env.iter().find(|(key, _)| *key == k).map(|(_, v)| v.to_string())
        })?;
        args.finish()?;
        Ok(m)
    }

    #[test]
    fn defaults() {
        let m = configure(&[], &[("NVM", "off")]).unwrap();
        assert_eq!(
            m.args().join(" "),
            "-machine pc -nodefaults -no-user-config -display none -serial stdio \
             -device isa-debug-exit,iobase=0xf4,iosize=4 -no-reboot -m 512M -smp 1 -accel tcg"
        );
        assert_eq!(m.qemu, DEFAULT_QEMU);
    }

    #[test]
    fn flags_beat_environment() {
        let env = [
            ("ACCEL", "kvm"),
            ("SMP", "2"),
            ("MEM", "1G"),
            ("QEMU", "/q"),
            ("NVM", "off"),
        ];
        let m = configure(&["--mode", "icount", "--smp=4"], &env).unwrap();
        assert_eq!(
            (m.mode, m.smp, m.mem.as_str(), m.qemu.as_str()),
            (Mode::Icount, 4, "1G", "/q")
        );
        let args = m.args().join(" ");
        assert!(args.ends_with("-accel tcg -icount shift=0,sleep=off -rtc base=2024-01-01T00:00:00,clock=vm"));
        let kvm = configure(&[], &env).unwrap().args().join(" ");
        assert!(kvm.ends_with("-accel kvm -cpu host,-arch-capabilities"), "{kvm}");
    }

    #[test]
    fn nvm_device() {
        let m = configure(&[], &[("NVM", "/images/nvm.img"), ("NVM_SIZE", "64M")]).unwrap();
        assert!(
            m.args().join(" ").ends_with(
                "-accel tcg -object memory-backend-file,id=nvm,mem-path=/images/nvm.img,size=67108864,share=on \
                 -device ivshmem-plain,memdev=nvm"
            ),
            "{:?}",
            m.args()
        );
        let default = configure(&[], &[]).unwrap().nvm.unwrap();
        assert!(default.path.is_absolute() && default.path.ends_with("build/nvm.img"));
        let own = m.with_nvm_image(std::path::Path::new("/t/x.img")).nvm.unwrap();
        assert_eq!((own.path.to_str(), own.size), (Some("/t/x.img"), 64 << 20));
    }

    #[test]
    fn disk_is_an_option() {
        let dir = std::env::temp_dir().join(format!("tessera-machine-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let img = dir.join("a,b.img");
        std::fs::write(&img, [0u8; 512]).unwrap();
        let path = img.to_str().unwrap();
        let m = configure(&["--disk", path], &[]).unwrap();
        let args = m.args();
        let drive = args.iter().position(|a| a == "-drive").unwrap();
        assert_eq!(
            args[drive + 1],
            format!(
                "file={},if=none,id=disk0,format=raw,cache=writeback",
                path.replace(',', ",,")
            )
        );
        assert_eq!(args[drive + 3], "virtio-blk-pci,drive=disk0,disable-legacy=on");
        assert_eq!(configure(&[], &[("DISK", path)]).unwrap().disk.as_deref(), Some(path));
        assert!(!m.with_disk(None).args().contains(&"-drive".to_string()));
        let missing = configure(&["--disk", dir.join("missing.img").to_str().unwrap()], &[]).unwrap();
        assert!(missing.prepare().is_err());
        assert!(configure(&[], &[("DISK", "off")]).unwrap().disk.is_none());
        let slow = configure(&["--disk", path], &[("DISK_MODEL", "dk")]).unwrap().args();
        assert!(slow[drive + 1].ends_with(",throttling.bps-total=100000000,throttling.iops-total=56"));
        assert!(configure(&[], &[("DISK_MODEL", "floppy")]).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn user_network() {
        let m = configure(&[], &[("NVM", "off"), ("NET", "1")]).unwrap();
        assert!(
            m.args().join(" ").ends_with(
                "-netdev user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:8080-:80 \
                 -device virtio-net-pci,netdev=net0,disable-legacy=on"
            ),
            "{:?}",
            m.args()
        );
        assert!(configure(&[], &[("NVM", "off"), ("NET", "off")]).unwrap().net.is_none());
        let echo = m.with_net(Some(UserNet {
            http_port: None,
            echo: true,
        }));
        assert!(
            echo.args()
                .join(" ")
                .contains("user,id=net0,restrict=on,guestfwd=tcp:10.0.2.100:7-cmd:cat ")
        );
        assert!(configure(&[], &[("NET", "yes")]).is_err());
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(configure(&["--mode", "hvf"], &[]).is_err());
        assert!(configure(&[], &[("SMP", "0")]).is_err());
        assert!(configure(&[], &[("MEM", "lots")]).is_err());
        assert!(configure(&[], &[("NVM_SIZE", "100M")]).is_err());
        assert!(configure(&["--bogus"], &[]).is_err());
    }
}
