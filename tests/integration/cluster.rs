//! `anonymize --cluster` (`--features distributed`): a run's shards anonymized on a Ballista
//! cluster started inside the process (`standalone`) give the release, key map and report
//! of the same run on one machine, byte for byte, with the staged release verified a
//! partition a task on the cluster, and leave no per-shard or scratch files behind; a
//! scheduler that does not answer, a source the executors cannot share, a cluster without
//! shards and a scratch directory that exists are refused in one line, exit 2, with nothing
//! written.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{fingerprint, relanon, stderr};

/// TPC-H at a small scale as Parquet in `d/tpch`, and the declarations' path.
fn tpch(d: &Path) -> String {
    let o = relanon(d, &["generate", "tpch", "--sf", "0.002", "--out", "tpch"]);
    assert!(o.status.success(), "generate tpch: {}", stderr(&o));
    let decl = crate::common::root().join("sql/tpch.sql");
    decl.to_str().expect("UTF-8 path").to_string()
}

fn run(d: &Path, decl: &str, source: &str, target: &str, extra: &[&str]) -> std::process::Output {
    let keys = format!("{target}.keys.json");
    let mut args = vec![
        "anonymize",
        decl,
        "--source",
        source,
        "--target",
        target,
        "--key-map",
        &keys,
        "--overwrite",
        "--with",
        "k = 5, algorithm = 'miraclex', seed = 7",
    ];
    args.extend_from_slice(extra);
    relanon(d, &args)
}

/// report.json without what differs between any two runs (timings).
fn report(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).expect("report.json");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    v.as_object_mut().expect("an object").remove("timings_ms");
    v
}

#[test]
fn the_cluster_releases_what_one_machine_releases_byte_for_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let decl = tpch(d);
    let here = run(d, &decl, "tpch", "here", &["--shards", "3"]);
    assert!(here.status.success(), "one machine: {}", stderr(&here));
    let there = run(
        d,
        &decl,
        "tpch",
        "there",
        &["--shards", "3", "--cluster", "standalone"],
    );
    assert!(there.status.success(), "cluster: {}", stderr(&there));
    // The staged release was checked a partition a task on the cluster, one per shard.
    let said = String::from_utf8_lossy(&there.stdout);
    assert!(
        said.contains("verify: passed (8 checks, in 3 partitions on the cluster)"),
        "{said}"
    );
    // The shards' tables the cluster wrote beside the warehouse are gone with the run.
    let left: Vec<_> = std::fs::read_dir(d)
        .expect("the run's directory")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".relanon-shards"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    let strip = |p: &Path, root: &Path| -> Vec<(String, Vec<u8>)> {
        fingerprint(p)
            .into_iter()
            .filter(|(name, _)| !name.ends_with("report.json"))
            .map(|(name, bytes)| (name.replacen(&root.display().to_string(), "", 1), bytes))
            .collect()
    };
    let a = strip(&d.join("here"), &d.join("here"));
    let b = strip(&d.join("there"), &d.join("there"));
    let names = |f: &[(String, Vec<u8>)]| f.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert!(a.len() >= 7, "every released TPC-H table: {:?}", names(&a));
    assert_eq!(names(&a), names(&b), "the same files");
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        assert!(x == y, "{name} differs between one machine and the cluster");
    }
    assert_eq!(
        std::fs::read(d.join("here.keys.json")).expect("key map"),
        std::fs::read(d.join("there.keys.json")).expect("key map"),
        "the same key map"
    );
    assert_eq!(
        report(&d.join("here/report.json")),
        report(&d.join("there/report.json"))
    );
}

/// Runs a release that must be refused: exit 2, a message holding `says`, nothing written.
fn refused(d: &Path, decl: &str, source: &str, target: &str, extra: &[&str], says: &str) {
    let o = run(d, decl, source, target, extra);
    assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
    assert!(
        stderr(&o).contains(says),
        "{extra:?} says {says}: {}",
        stderr(&o)
    );
    assert_eq!(
        stderr(&o).trim().lines().count(),
        1,
        "one line: {}",
        stderr(&o)
    );
    assert!(!d.join(target).exists(), "{extra:?}: nothing written");
}

#[test]
fn a_cluster_that_does_not_answer_or_cannot_share_the_source_is_refused_in_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let decl = tpch(d);
    // Nothing listens on port 9 (discard) of the loopback.
    let start = Instant::now();
    let nobody = ["--shards", "2", "--cluster", "df://127.0.0.1:9"];
    refused(d, &decl, "tpch", "a", &nobody, "127.0.0.1:9");
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "within seconds, not a hang"
    );
    refused(
        d,
        &decl,
        "tpch",
        "b",
        &["--cluster", "standalone"],
        "--shards",
    );
    let unparsed = ["--shards", "2", "--cluster", "somewhere:1"];
    refused(d, &decl, "tpch", "c", &unparsed, "df://HOST:PORT");
    let o = relanon(
        d,
        &["generate", "tpch", "--sf", "0.002", "--out", "tpch.sqlite"],
    );
    assert!(o.status.success(), "generate tpch: {}", stderr(&o));
    let sqlite = ["--shards", "2", "--cluster", "standalone"];
    refused(d, &decl, "tpch.sqlite", "e", &sqlite, "Parquet");
    // A scratch directory that exists may be someone's: never written into, never removed.
    std::fs::create_dir(d.join("mine")).expect("a directory");
    std::fs::write(d.join("mine/keep"), b"x").expect("a file");
    let taken = [
        "--shards",
        "2",
        "--cluster",
        "standalone",
        "--cluster-scratch",
        "mine",
    ];
    refused(d, &decl, "tpch", "f", &taken, "exists already");
    assert!(d.join("mine/keep").exists(), "left as it was");
}
