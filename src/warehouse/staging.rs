//! A run's outputs committed as one set, and what makes that hold under crashes, signals and
//! concurrent runs.
//!
//! - **Lock.** A run that writes a target holds an exclusive lock on `.<target>.lock` beside
//!   it for the whole run (readers hold a shared one), so two runs on one target cannot both
//!   commit: the second fails fast. The operating system drops the lock when a process dies.
//! - **Staging.** Every output is written in full under a hidden temporary sibling
//!   (`.<name>.<16 hex>.tmp`) and synced. The temporaries of the running process are
//!   tracked, so a signal handler can remove them ([`remove_in_flight`]).
//! - **Commit.** [`commit_all`] writes a journal (`.<target>.commit`, the renames to do) and
//!   syncs it, then renames each temporary onto its output (a directory moved aside first,
//!   as `.<name>.<16 hex>.old`), then removes the journal, then what was moved aside. Before
//!   the journal exists the previous set is untouched; once it exists the new set is complete
//!   on disk, and [`recover`] (run under the lock before anything else touches the target)
//!   finishes the renames of a run that died in between. So a reader that goes through
//!   relanon sees the whole previous set or the whole new one, never a mix.
//! - **Debris.** A run that writes a target lists every temporary it creates in a
//!   [`Manifest`] (`.<target>.staged`) before creating it; [`recover`] removes what a dead
//!   run's manifest lists, wherever it lies. [`clean`] removes temporaries and moved-aside
//!   copies that a dead run left beside an output, and says which.
//! - **Failpoints.** `RELANON_FAILPOINT=<step>` aborts the process at that named step (as a
//!   kill -9 would), `pause:<step>` holds it there, for the fault-injection and signal tests;
//!   nothing else reads it. Steps: `staged`, `before-journal`, `journal-staged` (the
//!   journal written under its temporary name), `journal`, `aside`, `renamed-<i>` (after the
//!   i-th rename), `committed`.

use std::fs::{self, File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::paths::{parent_dir, remove_path, sync_dir, temp_sibling, write_err};
use super::{one_line, show, WarehouseError};

/// Temporaries this process is writing and has not committed.
static IN_FLIGHT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn in_flight() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    // A list of paths is valid whatever a panicking holder was doing.
    IN_FLIGHT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Creates `path` with `create` and tracks it, both under the in-flight lock, so a signal
/// handler (which takes the lock for good) sees every temporary that exists: none can be
/// created between its removal and the exit. While a run holds a [`Manifest`], the path is
/// listed there (synced) before it is created, so a kill at any later system call leaves
/// nothing the next run cannot find.
pub(crate) fn create_tracked<T>(
    path: &Path,
    create: impl FnOnce(&Path) -> std::io::Result<T>,
) -> std::io::Result<T> {
    let mut list = in_flight();
    let mut manifests = manifest();
    if !manifests.is_empty() {
        use std::io::Write;
        let mut line = serde_json::to_vec(&absolute(path)).map_err(std::io::Error::other)?;
        line.push(b'\n');
        for (_, file) in manifests.iter_mut() {
            file.write_all(&line)?;
            file.sync_data()?;
        }
    }
    drop(manifests);
    let made = create(path)?;
    list.push(path.to_path_buf());
    Ok(made)
}

/// `path` was committed or removed.
pub(crate) fn untrack(path: &Path) {
    in_flight().retain(|p| p != path);
}

/// The manifests of the runs this process has writing targets: path and open file. A
/// temporary is listed in each, since which run creates it is not known here; that is safe,
/// because a manifest is read only by a recovery under its target's lock, that is once every
/// run of the process that could have listed there is over.
static MANIFEST: Mutex<Vec<(PathBuf, File)>> = Mutex::new(Vec::new());

fn manifest() -> std::sync::MutexGuard<'static, Vec<(PathBuf, File)>> {
    MANIFEST
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `.<target>.staged`: every temporary a run creates for a target's set, listed before it
/// exists. A key map's or a report page's temporary lies beside its own output, which the
/// next run may not name, and the journal's own temporary has no journal to find it by:
/// [`recover`] removes whatever the list names. Dropping the manifest (the run ended, its
/// temporaries committed or removed) removes the file.
#[derive(Debug)]
pub struct Manifest {
    path: PathBuf,
}

impl Manifest {
    /// Starts listing this process's temporaries for `target` (call it under the exclusive
    /// lock, after [`recover`]).
    pub fn begin(target: &Path) -> Result<Manifest, WarehouseError> {
        let path = beside(target, "staged")?;
        let file = File::create(&path).map_err(|e| write_err(&path, e))?;
        sync_dir(&parent_dir(&path));
        manifest().push((path.clone(), file));
        Ok(Manifest { path })
    }
}

impl Drop for Manifest {
    fn drop(&mut self) {
        manifest().retain(|(p, _)| *p != self.path);
        let _ = fs::remove_file(&self.path);
    }
}

/// Removes every temporary `target`'s manifest lists, then the manifest; returns how many
/// temporaries were left.
fn clear_manifest(target: &Path) -> Result<usize, WarehouseError> {
    let path = beside(target, "staged")?;
    let text = match fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(write_err(&path, e)),
    };
    let mut removed = 0;
    // A line cut short by the kill names a file that was never created.
    for temp in text
        .split(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice::<PathBuf>(line).ok())
    {
        if fs::symlink_metadata(&temp).is_ok() {
            remove_path(&temp).map_err(|e| write_err(&temp, e))?;
            removed += 1;
        }
    }
    fs::remove_file(&path).map_err(|e| write_err(&path, e))?;
    sync_dir(&parent_dir(&path));
    Ok(removed)
}

/// Lock files this process holds exclusively (so it may remove them).
static HELD: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn held() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    HELD.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Removes every temporary this process is writing and the lock files it holds alone (a
/// signal handler calls it just before exiting); returns the temporaries it removed. The
/// in-flight lock is kept to the end of the process, so no temporary is created after.
pub fn remove_in_flight() -> Vec<PathBuf> {
    for lock in std::mem::take(&mut *held()) {
        let _ = fs::remove_file(lock);
    }
    let mut list = in_flight();
    let removed = std::mem::take(&mut *list)
        .into_iter()
        .filter(|p| remove_path(p).is_ok())
        .collect();
    for (path, _) in std::mem::take(&mut *manifest()) {
        let _ = fs::remove_file(path);
    }
    // Held until the exit that follows: a writer waiting on it never creates its file.
    std::mem::forget(list);
    removed
}

/// Fault injection: aborts the process at step `name` when `RELANON_FAILPOINT` names it (as
/// a kill -9 would), or holds it there when it says `pause:<name>` (for a test to signal).
pub fn failpoint(name: &str) {
    let Ok(v) = std::env::var("RELANON_FAILPOINT") else {
        return;
    };
    if v == name {
        std::process::abort();
    }
    if v.strip_prefix("pause:") == Some(name) {
        loop {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

/// A lock on a target, held until dropped (or the process dies). The last holder removes
/// the lock file, so nothing is left beside the target.
#[derive(Debug)]
pub struct TargetLock {
    file: File,
    path: PathBuf,
}

impl Drop for TargetLock {
    fn drop(&mut self) {
        // Only a sole holder may remove the file: an exclusive lock (taken or upgraded to)
        // says no other run holds it. A run that opened the file just before it goes sees,
        // once it has the lock, that its file is no longer the one at the path, and retries.
        if self.file.try_lock().is_ok() {
            let _ = fs::remove_file(&self.path);
        }
        held().retain(|p| p != &self.path);
    }
}

/// `.<target name>.<tag>` beside the target.
fn beside(target: &Path, tag: &str) -> Result<PathBuf, WarehouseError> {
    let name = target.file_name().ok_or_else(|| WarehouseError::Write {
        path: show(target),
        msg: "the path has no file name".into(),
    })?;
    Ok(parent_dir(target).join(format!(".{}.{tag}", name.to_string_lossy())))
}

/// Takes the lock on `target`: exclusive for a run that writes it, shared for one that
/// reads it. Fails at once if another run holds it in a way that conflicts.
pub fn lock(target: &Path, exclusive: bool) -> Result<TargetLock, WarehouseError> {
    let path = beside(target, "lock")?;
    let parent = parent_dir(target);
    fs::create_dir_all(&parent).map_err(|e| write_err(&parent, e))?;
    loop {
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| write_err(&path, e))?;
        let taken = if exclusive {
            file.try_lock()
        } else {
            file.try_lock_shared()
        };
        match taken {
            Ok(()) if same_file(&file, &path) => {
                if exclusive {
                    held().push(path.clone());
                }
                return Ok(TargetLock { file, path });
            }
            // The holder before us removed the file after we opened it: try the new one.
            Ok(()) => continue,
            Err(TryLockError::WouldBlock) => {
                return Err(WarehouseError::Busy { path: show(target) })
            }
            Err(TryLockError::Error(e)) => {
                return Err(WarehouseError::Io {
                    op: "lock",
                    path: show(&path),
                    msg: one_line(e),
                    hint: "check that the target directory is writable",
                })
            }
        }
    }
}

/// Whether `file` is still the file at `path`.
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_: &File, path: &Path) -> bool {
    path.exists()
}

/// Whether `name` is `.<output>.<16 hex>.<tag>` for one of `tags`: relanon's temporary or
/// moved-aside copy of `output`.
fn is_debris(name: &str, output: &str, tags: &[&str]) -> bool {
    let Some(rest) = name
        .strip_prefix('.')
        .and_then(|n| n.strip_prefix(output))
        .and_then(|n| n.strip_prefix('.'))
    else {
        return false;
    };
    let Some((hex, tag)) = rest.split_once('.') else {
        return false;
    };
    hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()) && tags.contains(&tag)
}

/// Removes what a dead run left beside `outputs` (temporaries, moved-aside copies); call it
/// under the lock, after [`recover`]. Returns what it removed.
pub fn clean(outputs: &[&Path]) -> Result<Vec<PathBuf>, WarehouseError> {
    let mut removed = Vec::new();
    for output in outputs {
        let Some(name) = output.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        let dir = parent_dir(output);
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let file = e.file_name().to_string_lossy().into_owned();
            if is_debris(&file, &name, &["tmp", "old"]) {
                let p = e.path();
                remove_path(&p).map_err(|err| write_err(&p, err))?;
                removed.push(p);
            }
        }
    }
    Ok(removed)
}

/// One output written in full at `temp`, to be renamed onto `target` by [`commit_all`].
/// Dropping it uncommitted removes the temporary.
#[derive(Debug)]
pub struct Pending {
    temp: PathBuf,
    target: PathBuf,
    done: bool,
}

impl Pending {
    pub(crate) fn new(temp: PathBuf, target: PathBuf) -> Pending {
        Pending {
            temp,
            target,
            done: false,
        }
    }

    /// Where the output is staged.
    pub fn path(&self) -> &Path {
        &self.temp
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.done {
            let _ = remove_path(&self.temp);
            untrack(&self.temp);
        }
    }
}

/// Writes `bytes` under a temporary sibling of `path` (synced; on unix with `mode`), to be
/// committed with the run's other outputs.
pub fn stage_file(path: &Path, bytes: &[u8], mode: Option<u32>) -> Result<Pending, WarehouseError> {
    stage_written(path, mode, |w| w.write_all(bytes))
}

/// [`stage_file`] for an output written as it is produced (`write` gets a buffered writer),
/// so a large one (a key map) is never held whole.
pub fn stage_written(
    path: &Path,
    mode: Option<u32>,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<Pending, WarehouseError> {
    let parent = parent_dir(path);
    fs::create_dir_all(&parent).map_err(|e| write_err(&parent, e))?;
    let temp = temp_sibling(path, "tmp")?;
    let pending = Pending::new(temp, path.to_path_buf());
    write_synced(&pending.temp, mode, write).map_err(|e| write_err(path, e))?;
    Ok(pending)
}

/// Creates `temp` (tracked, so a signal removes it) with its mode (a key map is never
/// readable by others, not even while written), writes it and syncs.
pub(crate) fn write_synced(
    temp: &Path,
    mode: Option<u32>,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    use std::io::Write;
    let mut open = fs::OpenOptions::new();
    open.write(true).create_new(true);
    #[cfg(unix)]
    if let Some(mode) = mode {
        use std::os::unix::fs::OpenOptionsExt;
        open.mode(mode);
    }
    let file = create_tracked(temp, |p| open.open(p))?;
    // The umask may have taken bits from the mode asked for; it is set exactly, still before
    // anything is written.
    #[cfg(unix)]
    if let Some(mode) = mode {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(fs::Permissions::from_mode(mode))?;
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut out = std::io::BufWriter::new(file);
    write(&mut out)?;
    out.flush()?;
    out.into_inner().map_err(|e| e.into_error())?.sync_all()
}

/// `p` made absolute against the working directory (the journal must not depend on it).
fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The journal of a commit: every rename, in order.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Journal {
    renames: Vec<(PathBuf, PathBuf)>,
}

/// Commits `pending` as one set, `journal_at` (the release's target) naming the journal:
/// see the module docs. Without `overwrite`, an output that exists by now is refused before
/// anything moves.
pub fn commit_all(
    mut pending: Vec<Pending>,
    journal_at: &Path,
    overwrite: bool,
) -> Result<(), WarehouseError> {
    if !overwrite {
        if let Some(p) = pending
            .iter()
            .find(|p| fs::symlink_metadata(&p.target).is_ok())
        {
            return Err(WarehouseError::TargetExists {
                path: show(&p.target),
            });
        }
    }
    failpoint("before-journal");
    let journal = Journal {
        renames: pending
            .iter()
            .map(|p| (absolute(&p.temp), absolute(&p.target)))
            .collect(),
    };
    let text = serde_json::to_vec(&journal).map_err(|e| write_err(journal_at, e))?;
    let journal_path = beside(journal_at, "commit")?;
    let temp = temp_sibling(&journal_path, "tmp")?;
    write_synced(&temp, None, |w| w.write_all(&text)).map_err(|e| write_err(&journal_path, e))?;
    failpoint("journal-staged");
    fs::rename(&temp, &journal_path).map_err(|e| write_err(&journal_path, e))?;
    untrack(&temp);
    sync_dir(&parent_dir(&journal_path));
    // From here the journal owns the temporaries: a signal leaves them for `recover`.
    for p in &mut pending {
        p.done = true;
        untrack(&p.temp);
    }
    failpoint("journal");
    apply(&journal)?;
    fs::remove_file(&journal_path).map_err(|e| write_err(&journal_path, e))?;
    sync_dir(&parent_dir(&journal_path));
    failpoint("committed");
    for (_, target) in &journal.renames {
        let _ = clean(&[target.as_path()]);
    }
    Ok(())
}

/// Does the renames of `journal` that are not done yet (a temporary still there); a
/// directory in the way is moved aside first. Safe to run again after a crash in it.
fn apply(journal: &Journal) -> Result<(), WarehouseError> {
    for (i, (temp, target)) in journal.renames.iter().enumerate() {
        if fs::symlink_metadata(temp).is_err() {
            continue;
        }
        let in_the_way = fs::symlink_metadata(target).ok();
        let mut aside = None;
        if in_the_way.as_ref().is_some_and(|m| m.is_dir()) || temp.is_dir() && in_the_way.is_some()
        {
            let to = temp_sibling(target, "old")?;
            fs::rename(target, &to).map_err(|e| write_err(target, e))?;
            aside = Some(to);
            failpoint("aside");
        }
        if let Err(e) = fs::rename(temp, target) {
            // Put back what was moved aside, so the target is never left missing.
            if let Some(aside) = &aside {
                let _ = fs::rename(aside, target);
            }
            return Err(write_err(target, e));
        }
        sync_dir(&parent_dir(target));
        failpoint(&format!("renamed-{i}"));
    }
    Ok(())
}

/// Finishes a commit that a dead run left half done on `target` (call it under the
/// exclusive lock, before anything else touches the target). Returns what it did.
pub fn recover(target: &Path) -> Result<Option<String>, WarehouseError> {
    let journal_path = beside(target, "commit")?;
    let text = match fs::read(&journal_path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A run killed after its commit may have left the previous release moved aside.
            let left = if interrupted(target) {
                clear_manifest(target)? + clean(&[target])?.len()
            } else {
                0
            };
            return Ok((left > 0).then(|| {
                format!(
                    "removed {left} temporary file(s) an interrupted run on '{}' left",
                    show(target)
                )
            }));
        }
        Err(e) => return Err(write_err(&journal_path, e)),
    };
    let journal: Journal = serde_json::from_slice(&text).map_err(|e| WarehouseError::Write {
        path: show(&journal_path),
        msg: format!(
            "an unreadable commit journal ({e}); remove it by hand after checking the outputs beside it"
        ),
    })?;
    apply(&journal)?;
    fs::remove_file(&journal_path).map_err(|e| write_err(&journal_path, e))?;
    sync_dir(&parent_dir(&journal_path));
    for (_, t) in &journal.renames {
        clean(&[t.as_path()])?;
    }
    clear_manifest(target)?;
    Ok(Some(format!(
        "completed the commit of '{}' that an interrupted run left half done",
        show(target)
    )))
}

/// Whether a run on `target` was interrupted: a commit left half done (readers refuse such a
/// target until it is finished) or temporaries listed in a manifest.
pub fn interrupted(target: &Path) -> bool {
    ["commit", "staged"]
        .iter()
        .any(|tag| beside(target, tag).is_ok_and(|p| p.exists()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debris_names_are_recognized_exactly() {
        assert!(is_debris(
            ".r.sqlite.0123456789abcdef.tmp",
            "r.sqlite",
            &["tmp"]
        ));
        assert!(is_debris(
            ".r.sqlite.0123456789abcdef.old",
            "r.sqlite",
            &["tmp", "old"]
        ));
        assert!(!is_debris(
            ".r.sqlite.0123456789abcde.tmp",
            "r.sqlite",
            &["tmp"]
        ));
        assert!(!is_debris(
            ".r.sqlite.x.0123456789abcdef.tmp",
            "r.sqlite",
            &["tmp"]
        ));
        assert!(!is_debris("r.sqlite", "r.sqlite", &["tmp"]));
        assert!(!is_debris(".r.sqlite.lock", "r.sqlite", &["tmp", "old"]));
    }

    /// A run killed while staging (its manifest never dropped) leaves temporaries beside
    /// outputs the next run may not name; recovery of the target finds them by the manifest.
    #[test]
    fn recovery_removes_what_a_dead_runs_manifest_lists() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("release.sqlite");
        let elsewhere = dir.path().join("keys");
        fs::create_dir(&elsewhere).expect("mkdir");
        let run = Manifest::begin(&target).expect("begin");
        let key_map = elsewhere.join("keys.json");
        let pending = stage_file(&key_map, b"{}", None).expect("staged");
        let temp = pending.path().to_path_buf();
        // Killed: nothing is dropped, the temporary and the manifest stay.
        std::mem::forget(pending);
        std::mem::forget(run);
        let path = beside(&target, "staged").expect("beside");
        manifest().retain(|(p, _)| *p != path);
        untrack(&temp);
        assert!(temp.exists() && path.exists() && interrupted(&target));
        let said = recover(&target)
            .expect("recovers")
            .expect("says what it did");
        assert!(said.contains("removed 1 temporary file(s)"), "{said}");
        assert!(!temp.exists() && !path.exists() && !interrupted(&target));
        assert_eq!(recover(&target).expect("nothing left"), None);
    }

    #[test]
    fn a_commit_renames_every_output_and_recovery_finishes_a_half_done_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = dir.path().join("a.sqlite");
        let b = dir.path().join("a.report.json");
        std::fs::write(&a, "old a").expect("write");
        std::fs::write(&b, "old b").expect("write");
        let pending = vec![
            stage_file(&b, b"new b", None).expect("stage"),
            stage_file(&a, b"new a", None).expect("stage"),
        ];
        commit_all(pending, &a, true).expect("commit");
        assert_eq!(std::fs::read(&a).expect("read"), b"new a");
        assert_eq!(std::fs::read(&b).expect("read"), b"new b");
        // A run that died after writing its journal and one rename.
        let ta = dir.path().join(".a.sqlite.00000000000000aa.tmp");
        std::fs::write(&ta, "newer a").expect("write");
        std::fs::write(&b, "newer b").expect("write");
        let journal = Journal {
            renames: vec![
                (
                    dir.path().join(".a.report.json.00000000000000bb.tmp"),
                    b.clone(),
                ),
                (ta.clone(), a.clone()),
            ],
        };
        std::fs::write(
            dir.path().join(".a.sqlite.commit"),
            serde_json::to_vec(&journal).expect("json"),
        )
        .expect("write");
        assert!(interrupted(&a));
        assert!(recover(&a).expect("recover").is_some());
        assert_eq!(std::fs::read(&a).expect("read"), b"newer a");
        assert!(!interrupted(&a) && !ta.exists());
    }

    #[test]
    fn a_second_writer_fails_fast_and_readers_share() {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = dir.path().join("r.sqlite");
        let held = lock(&t, true).expect("first");
        assert!(matches!(lock(&t, true), Err(WarehouseError::Busy { .. })));
        assert!(matches!(lock(&t, false), Err(WarehouseError::Busy { .. })));
        drop(held);
        let r1 = lock(&t, false).expect("reader");
        let _r2 = lock(&t, false).expect("another reader");
        assert!(matches!(lock(&t, true), Err(WarehouseError::Busy { .. })));
        drop(r1);
        drop(_r2);
        assert!(
            !dir.path().join(".r.sqlite.lock").exists(),
            "the last holder removes the lock file"
        );
    }
}
