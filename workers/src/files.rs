//! Files written whole, and why a write failed: a file is written to a temporary beside it,
//! flushed and renamed over it, so a crash never leaves half a file; a full disk is named as
//! such ([`is_disk_full`]), and the callers say which folder and what still works.

use std::fs::File;
use std::io::Write as _;
use std::path::Path;

/// Writes `bytes` to `temporary` (beside `path`), flushes it to disk and renames it over
/// `path`, making the folder first; the temporary is removed when that fails.
pub fn replace_file(path: &Path, temporary: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let written = (|| {
        let mut file = File::create(temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(temporary);
    }
    written
}

/// What went wrong writing `path`, for a message: a full disk as such, else the error.
pub fn write_failure(error: &std::io::Error, path: &Path) -> String {
    if is_disk_full(error, path) {
        "the disk is full (ENOSPC: no space left on device)".to_string()
    } else {
        error.to_string()
    }
}

/// Below this many free bytes, a short write is taken for a full disk.
const FULL_BELOW: u64 = 1 << 20;

/// Whether `error`, from writing under `folder`, is a full disk: `ENOSPC`, or a short write
/// (LMDB reports one as `EIO`) on a file system with less than 1 MiB left.
pub fn is_disk_full(error: &std::io::Error, folder: &Path) -> bool {
    const ENOSPC: i32 = 28;
    const EIO: i32 = 5;
    match error.raw_os_error() {
        Some(ENOSPC) => true,
        Some(EIO) => free_bytes(folder).is_some_and(|free| free < FULL_BELOW),
        _ => error.kind() == std::io::ErrorKind::StorageFull,
    }
}

/// Bytes an unprivileged process may still write on the file system holding `path` (or its
/// nearest existing parent).
fn free_bytes(path: &Path) -> Option<u64> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let stats = rustix::fs::statvfs(existing).ok()?;
    Some(stats.f_bavail.saturating_mul(stats.f_frsize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enospc_is_a_full_disk() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert!(is_disk_full(&std::io::Error::from_raw_os_error(28), here));
        assert!(!is_disk_full(&std::io::Error::from_raw_os_error(13), here));
        // A short write with room left is not a full disk (this disk has more than 1 MiB).
        assert!(!is_disk_full(&std::io::Error::from_raw_os_error(5), here));
    }
}
