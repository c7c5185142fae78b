//! A run's outputs (release, report.json, key map, report page) under faults: the process
//! killed at each named step of staging and commit (`RELANON_FAILPOINT`, an abort as kill -9
//! would), a signal while staging, and a second run on a locked target. After any of them a
//! reader sees the whole previous set or the whole new one, never a mix, and the next run
//! leaves no debris.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common::*;

/// Which run a file of the output set came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum From {
    Old,
    New,
    Absent,
    Other,
}

fn anonymize(dir: &Path, target: &str, k: u32, overwrite: bool, failpoint: Option<&str>) -> Output {
    let with = format!("seed = 7, k = {k}");
    let mut args = vec![
        "anonymize",
        "decl.sql",
        "--target",
        target,
        "--with",
        &with,
        "--key-map",
        "keys.json",
        "--report",
        "page.html",
    ];
    if overwrite {
        args.push("--overwrite");
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_relanon"));
    cmd.current_dir(dir).args(&args);
    match failpoint {
        Some(f) => cmd.env("RELANON_FAILPOINT", f),
        None => cmd.env_remove("RELANON_FAILPOINT"),
    };
    cmd.output().expect("run relanon")
}

/// The k a report.json or a page says, or None.
fn k_of(text: &str) -> Option<u32> {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
        return v["params"]["model"]["k"].as_u64().map(|k| k as u32);
    }
    let at = text.find("model.k</td><td>")? + "model.k</td><td>".len();
    text[at..].split('<').next()?.parse().ok()
}

/// Where each output of `target` came from, comparing its bytes (release, key map: seeded,
/// so reproducible) or its k (report.json, page: they carry timings) with `old` and `new`.
fn classify(dir: &Path, target: &str, old: &Sets, new: &Sets) -> [From; 4] {
    let by_bytes = |p: &Path, old: &Option<Vec<u8>>, new: &Option<Vec<u8>>| match contents(p) {
        None if !p.exists() => From::Absent,
        b if b == *old => From::Old,
        b if b == *new => From::New,
        _ => From::Other,
    };
    let by_k = |p: &Path| match std::fs::read_to_string(p) {
        Err(_) => From::Absent,
        Ok(t) => match k_of(&t) {
            Some(k) if k == old.k => From::Old,
            Some(k) if k == new.k => From::New,
            _ => From::Other,
        },
    };
    let release = dir.join(target);
    [
        by_bytes(&release, &old.release, &new.release),
        by_k(&relanon::pipeline::report_path(&release)),
        by_bytes(&dir.join("keys.json"), &old.keys, &new.keys),
        by_k(&dir.join("page.html")),
    ]
}

/// One complete run's outputs, for comparison.
struct Sets {
    k: u32,
    release: Option<Vec<u8>>,
    keys: Option<Vec<u8>>,
}

fn reference(target: &str, k: u32) -> Sets {
    let dir = tempfile::tempdir().expect("tempdir");
    table2_workspace(dir.path(), &table2_text());
    let o = anonymize(dir.path(), target, k, false, None);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = classify_bytes(dir.path(), target);
    Sets {
        k,
        release: s.0,
        keys: s.1,
    }
}

fn classify_bytes(dir: &Path, target: &str) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    (
        contents(&dir.join(target)),
        std::fs::read(dir.join("keys.json")).ok(),
    )
}

/// A file's bytes, or a Parquet release's tables' bytes in name order.
fn contents(p: &Path) -> Option<Vec<u8>> {
    if !p.is_dir() {
        return std::fs::read(p).ok();
    }
    let mut names: Vec<_> = std::fs::read_dir(p)
        .expect("ls")
        .flatten()
        .map(|e| e.path())
        .filter(|n| n.extension().is_some_and(|e| e == "parquet"))
        .collect();
    names.sort();
    Some(
        names
            .iter()
            .flat_map(|n| std::fs::read(n).expect("read"))
            .collect(),
    )
}

/// Hidden files relanon leaves only while it runs: temporaries, moved-aside copies, the
/// commit journal, the lock.
fn debris(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("ls")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

fn whole(set: [From; 4]) -> bool {
    set.iter().all(|f| *f == From::Old) || set.iter().all(|f| *f == From::New)
}

/// Kills the second of two runs at every step of its staging and commit; prints the matrix
/// (step -> where each output came from right after the kill, after the reader that
/// completes the commit, and whether the next run left debris).
fn matrix(target: &str, steps: &[&str]) {
    let (old, new) = (reference(target, 2), reference(target, 4));
    for step in steps {
        let dir = tempfile::tempdir().expect("tempdir");
        table2_workspace(dir.path(), &table2_text());
        let first = anonymize(dir.path(), target, 2, false, None);
        assert!(first.status.success(), "{}", stderr(&first));
        let killed = anonymize(dir.path(), target, 4, true, Some(step));
        assert!(!killed.status.success(), "{step}: the run was not stopped");
        let raw = classify(dir.path(), target, &old, &new);
        // A reader completes an interrupted commit before it reads.
        let v = relanon(
            dir.path(),
            &[
                "verify",
                "decl.sql",
                "--release",
                target,
                "--key-map",
                "keys.json",
            ],
        );
        let after = classify(dir.path(), target, &old, &new);
        eprintln!(
            "{target} killed at {step:<15} raw {raw:?} -> after verify {after:?}, verify exit {:?}",
            v.status.code()
        );
        assert!(whole(after), "{step}: a mix after recovery: {after:?}");
        // Recovery alone leaves nothing behind: not the journal's temporary, not the key
        // map's or the page's (which the reader never names).
        assert!(
            debris(dir.path()).is_empty(),
            "{step}: recovery left {:?}",
            debris(dir.path())
        );
        assert_eq!(
            v.status.code(),
            Some(0),
            "{step}: {}{}",
            stdout(&v),
            stderr(&v)
        );
        let next = anonymize(dir.path(), target, 4, true, None);
        assert!(next.status.success(), "{step}: {}", stderr(&next));
        assert_eq!(
            classify(dir.path(), target, &old, &new),
            [From::New; 4],
            "{step}"
        );
        assert!(
            debris(dir.path()).is_empty(),
            "{step}: {:?}",
            debris(dir.path())
        );
    }
}

#[test]
fn a_sqlite_set_is_whole_old_or_whole_new_whatever_step_the_run_dies_at() {
    matrix(
        "release.sqlite",
        &[
            "staged",
            "before-journal",
            "journal-staged",
            "journal",
            "renamed-0",
            "renamed-1",
            "renamed-2",
            "renamed-3",
            "committed",
        ],
    );
}

#[test]
fn a_parquet_set_is_whole_old_or_whole_new_whatever_step_the_run_dies_at() {
    matrix(
        "release",
        &[
            "staged",
            "journal-staged",
            "journal",
            "renamed-0",
            "renamed-1",
            "aside",
            "renamed-2",
            "committed",
        ],
    );
}

/// Ctrl-C or SIGTERM while the release is staged: exit 130 / 143 with a message, the staged
/// files removed, the previous set untouched.
#[test]
fn a_signal_while_staging_removes_what_the_run_wrote() {
    for (signal, code) in [("-INT", 130), ("-TERM", 143)] {
        let dir = tempfile::tempdir().expect("tempdir");
        table2_workspace(dir.path(), &table2_text());
        let child = Command::new(env!("CARGO_BIN_EXE_relanon"))
            .current_dir(dir.path())
            .args(["anonymize", "decl.sql", "--key-map", "keys.json"])
            .env("RELANON_FAILPOINT", "pause:staged")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let started = std::time::Instant::now();
        while !debris(dir.path()).iter().any(|n| n.ends_with(".tmp")) {
            assert!(started.elapsed().as_secs() < 60, "the run never staged");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        // The shell's own kill: no procps needed.
        let kill = Command::new("sh")
            .args(["-c", &format!("kill {signal} {}", child.id())])
            .status()
            .expect("sh runs kill");
        assert!(kill.success());
        let o = child.wait_with_output().expect("wait");
        assert_eq!(o.status.code(), Some(code), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("interrupted: removed"),
            "{}",
            stderr(&o)
        );
        assert!(debris(dir.path()).is_empty(), "{:?}", debris(dir.path()));
        assert!(!dir.path().join("release.sqlite").exists());
        assert!(!dir.path().join("keys.json").exists());
    }
}

/// A run on a target another run holds fails at once, saying so, and changes nothing.
#[test]
fn a_second_run_on_a_locked_target_fails_fast() {
    let dir = tempfile::tempdir().expect("tempdir");
    table2_workspace(dir.path(), &table2_text());
    let held = relanon::warehouse::staging::lock(&dir.path().join("release.sqlite"), true)
        .expect("the test holds the lock");
    let o = relanon(dir.path(), &["anonymize", "decl.sql"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("another relanon run is using"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("release.sqlite").exists());
    let v = relanon(dir.path(), &["verify", "decl.sql"]);
    assert_eq!(
        v.status.code(),
        Some(2),
        "a reader waits for no writer either"
    );
    drop(held);
    let o = relanon(dir.path(), &["anonymize", "decl.sql"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(debris(dir.path()).is_empty(), "{:?}", debris(dir.path()));
}
