//! The file-system steps staged writes are made of: a hidden sibling to write into, removing
//! what was staged, making a rename durable, and the error that names the path. Shared by
//! `write` (which stages a release) and `staging` (which commits a set of them).

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use super::{one_line, show, WarehouseError};

pub(crate) fn write_err(path: &Path, e: impl std::fmt::Display) -> WarehouseError {
    WarehouseError::Write {
        path: show(path),
        msg: one_line(e),
    }
}

pub(crate) fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A hidden name in the target's own directory: a rename within one file system is atomic,
/// and the dot keeps a half-written release out of directory listings and warehouse scans.
pub(crate) fn temp_sibling(target: &Path, tag: &str) -> Result<PathBuf, WarehouseError> {
    let name = target.file_name().ok_or_else(|| WarehouseError::Write {
        path: show(target),
        msg: "the path has no file name".into(),
    })?;
    let suffix: u64 = rand::random();
    Ok(parent_dir(target).join(format!(".{}.{suffix:016x}.{tag}", name.to_string_lossy())))
}

pub(crate) fn remove_path(path: &Path) -> std::io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Makes a rename durable; best effort, as not every platform can open a directory.
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}
