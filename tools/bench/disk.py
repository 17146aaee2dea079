"""ext2 disk images for the machine's virtio-blk device, made and read on the host.

The same image serves both systems: `mke2fs -t ext2 -d DIR` (revision 1, the
format issue 17's file server reads) and, after the guest powered off,
`debugfs` to read back what the guest wrote.  Images are made reproducibly
(fixed UUID, directory hash seed and time stamps), so two runs start from the
same bytes.
"""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

# Fixed identity: a fresh random UUID and hash seed per image would make the
# order of hashed directories differ from run to run.
UUID = "7e55e2a0-0000-4000-8000-000000000001"
HASH_SEED = "7e55e2a0-0000-4000-8000-000000000002"
FAKE_TIME = "1704067200"  # 2024-01-01T00:00:00Z, the guest's clock at boot


def _tool(name):
    """e2fsprogs live in /sbin, which is not in a normal user's PATH."""
    for cand in (shutil.which(name), f"/sbin/{name}", f"/usr/sbin/{name}"):
        if cand and os.access(cand, os.X_OK):
            return cand
    raise SystemExit(f"{name} not found: install e2fsprogs (tools/setup.sh does)")


def make_ext2(path, size_mib, source=None, block_size=4096, label="tessera"):
    """Write a fresh ext2 image of size_mib MiB, populated from the folder
    `source` (empty if None); files keep their modes, the root is root's."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with tempfile.TemporaryDirectory(prefix="tessera-ext2-") as empty:
        src = Path(source) if source else Path(empty)
        if tmp.exists():
            tmp.unlink()
        # Sparse: a large image costs only what is written into it.
        with open(tmp, "wb") as f:
            f.truncate(size_mib * 1024 * 1024)
        env = dict(os.environ, E2FSPROGS_FAKE_TIME=FAKE_TIME)
        r = subprocess.run([_tool("mke2fs"), "-q", "-F", "-t", "ext2", "-b", str(block_size),
                            "-L", label, "-U", UUID, "-E", f"hash_seed={HASH_SEED},root_owner=0:0",
                            "-d", str(src), str(tmp)], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise SystemExit(f"mke2fs failed: {r.stderr.strip()}")
    tmp.rename(path)
    return path


def fsck(path):
    """(clean, report) of a read-only full check (e2fsck -fn)."""
    r = subprocess.run([_tool("e2fsck"), "-fn", str(path)], capture_output=True, text=True)
    return r.returncode == 0, (r.stdout + r.stderr).strip()


def repair(path):
    """Let e2fsck fix what a killed guest left (no questions asked)."""
    r = subprocess.run([_tool("e2fsck"), "-fy", str(path)], capture_output=True, text=True)
    # 0 clean, 1 errors corrected: both leave a usable image.
    return r.returncode in (0, 1), (r.stdout + r.stderr).strip()


def copy_out(path, folder, dest):
    """Copy the image's `folder` (absolute, e.g. /out) into the host folder
    `dest`; returns dest/<basename of folder>."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([_tool("debugfs"), "-R", f"rdump {folder} {dest}", str(path)],
                       capture_output=True, text=True)
    out = dest / Path(folder).name
    if r.returncode != 0 or not out.is_dir():
        raise SystemExit(f"debugfs rdump {folder} failed: {r.stderr.strip()}")
    return out
