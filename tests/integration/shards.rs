//! Sharded runs (`anonymize --shards N`): the entities split into shards of whole trees, each
//! anonymized on its own, the union released and verified like any release; the release
//! carries no trace of the shards in its keys or its row order; bad shard counts refused.

use std::collections::HashMap;
use std::path::Path;

use crate::common::{realworld_workspace, relanon, stderr, stdout};

/// `anonymize decl --json --key-map keys.json` with `extra` arguments: the report of a
/// verified release.
fn anonymize(dir: &Path, decl: &Path, extra: &[&str]) -> serde_json::Value {
    let decl = decl.to_str().expect("UTF-8 path");
    let mut args = vec![
        "anonymize",
        decl,
        "--json",
        "--overwrite",
        "--key-map",
        "keys.json",
    ];
    args.extend_from_slice(extra);
    let o = relanon(dir, &args);
    assert!(o.status.success(), "anonymize {extra:?}: {}", stderr(&o));
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json report");
    assert_eq!(report["verified"], true, "{report}");
    report
}

/// Spearman's rank correlation of two equally long lists without ties in `a`.
fn rank_correlation(a: &[f64], b: &[f64]) -> f64 {
    fn ranks(v: &[f64]) -> Vec<f64> {
        let mut idx: Vec<usize> = (0..v.len()).collect();
        idx.sort_by(|&i, &j| v[i].total_cmp(&v[j]));
        let mut r = vec![0.0; v.len()];
        let mut i = 0;
        // Ties share their mean rank.
        while i < idx.len() {
            let mut j = i;
            while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
                j += 1;
            }
            for &k in &idx[i..=j] {
                r[k] = (i + j) as f64 / 2.0;
            }
            i = j + 1;
        }
        r
    }
    let (ra, rb) = (ranks(a), ranks(b));
    let n = a.len() as f64;
    let (ma, mb) = (ra.iter().sum::<f64>() / n, rb.iter().sum::<f64>() / n);
    let cov: f64 = ra.iter().zip(&rb).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = ra.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = rb.iter().map(|y| (y - mb).powi(2)).sum();
    cov / (va * vb).sqrt()
}

/// Shards are ranges of the shape order, largest trees first: were keys or rows laid out by
/// shard, a customer's released key or row position would follow the size of its tree.
#[test]
fn a_sharded_release_verifies_and_its_keys_and_rows_carry_no_shard() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let decl = realworld_workspace(d, "sales", "sales", &[]);
    let whole = anonymize(d, &decl, &["--with", "seed = 5"]);
    let report = anonymize(d, &decl, &["--shards", "4", "--with", "seed = 5"]);
    assert_eq!(report["params"]["shards"], 4, "{}", report["params"]);
    assert!(
        whole["params"].get("shards").is_none(),
        "one shard is not written"
    );
    assert!(report["smallest_ec"].as_u64().expect("classes") >= 5);
    let verified = relanon(
        d,
        &[
            "verify",
            decl.to_str().expect("UTF-8"),
            "--key-map",
            "keys.json",
        ],
    );
    assert!(verified.status.success(), "{}", stderr(&verified));

    // Each released customer's source key (key map), then its tree's rows in the source.
    let keys: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(d.join("keys.json")).expect("key map written"),
    )
    .expect("key map JSON");
    let source_of: HashMap<String, String> = keys["tables"]["Customers"]["pairs"]
        .as_array()
        .expect("customer pairs")
        .iter()
        .map(|p| (p["released"][0].to_string(), p["source"][0].to_string()))
        .collect();
    let src = rusqlite::Connection::open(d.join("sales.sqlite")).expect("source");
    let mut tree: HashMap<String, f64> = HashMap::new();
    let mut stmt = src
        .prepare(
            "SELECT c.\"CustomerID\", COUNT(DISTINCT o.\"OrderID\") + COUNT(l.\"OrderID\")
             FROM \"Customers\" c LEFT JOIN \"Orders\" o ON o.\"CustomerID\" = c.\"CustomerID\"
             LEFT JOIN \"Order Details\" l ON l.\"OrderID\" = o.\"OrderID\"
             GROUP BY c.\"CustomerID\"",
        )
        .expect("tree sizes");
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .expect("query");
    for row in rows {
        let (id, n) = row.expect("row");
        tree.insert(serde_json::Value::from(id).to_string(), n as f64);
    }
    let release = rusqlite::Connection::open(d.join("sales-release.sqlite")).expect("release");
    let released: Vec<i64> = {
        let mut s = release
            .prepare("SELECT \"CustomerID\" FROM \"Customers\"")
            .expect("released customers");
        s.query_map([], |r| r.get(0))
            .expect("query")
            .map(|r| r.expect("row"))
            .collect()
    };
    assert!(released.len() > 20, "{} customers released", released.len());
    let sizes: Vec<f64> = released
        .iter()
        .map(|k| tree[&source_of[&serde_json::Value::from(*k).to_string()]])
        .collect();
    let position: Vec<f64> = (0..released.len()).map(|i| i as f64).collect();
    let key: Vec<f64> = released.iter().map(|&k| k as f64).collect();
    let by_row = rank_correlation(&position, &sizes);
    let by_key = rank_correlation(&key, &sizes);
    assert!(by_row.abs() < 0.5, "row order follows tree size: {by_row}");
    assert!(
        by_key.abs() < 0.5,
        "released keys follow tree size: {by_key}"
    );
}

#[test]
fn bad_shard_counts_are_refused_in_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let decl = realworld_workspace(d, "sales", "sales", &[]);
    let decl = decl.to_str().expect("UTF-8");
    for (shards, says) in [
        ("0", "at least one shard"),
        ("1000", "so at most"),
        ("many", "invalid value"),
    ] {
        let o = relanon(d, &["anonymize", decl, "--shards", shards]);
        assert_eq!(
            o.status.code(),
            Some(2),
            "--shards {shards}: {}",
            stderr(&o)
        );
        let err = stderr(&o);
        assert!(err.contains(says), "--shards {shards}: {err}");
        assert!(!d.join("sales-release.sqlite").exists());
    }
    let o = relanon(d, &["anonymize", decl, "--shards", "1000"]);
    let err = stderr(&o);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("use --shards 1 to"), "{err}");
}

/// The lattice's node is chosen over every entity: it runs whole, and says so.
#[test]
fn the_lattice_runs_whole_and_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let decl = realworld_workspace(d, "sales", "sales", &[]);
    let o = relanon(
        d,
        &[
            "anonymize",
            decl.to_str().expect("UTF-8"),
            "--shards",
            "3",
            "--with",
            "algorithm = 'lattice', max_suppression = 0.5",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("runs over every entity at once"),
        "{}",
        stderr(&o)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert!(report["params"].get("shards").is_none());
}

/// Hidden entries beside the target: what a run stages (parts, temporaries).
fn hidden(d: &Path) -> Vec<String> {
    std::fs::read_dir(d)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".sales-release"))
        .collect()
}

/// Killed (as kill -9) after the second of three shards: no release, its parts left behind;
/// the next run removes them, says so, and releases the same bytes a seeded run always does.
#[test]
fn a_run_killed_between_shards_leaves_no_release_and_the_next_cleans_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let decl = realworld_workspace(d, "sales", "sales", &[]);
    let decl = decl.to_str().expect("UTF-8");
    let args = ["anonymize", decl, "--shards", "3", "--with", "seed = 5"];
    let killed = std::process::Command::new(env!("CARGO_BIN_EXE_relanon"))
        .current_dir(d)
        .args(args)
        .env("RELANON_FAILPOINT", "shard-2")
        .output()
        .expect("run relanon");
    assert!(!killed.status.success());
    assert!(!d.join("sales-release.sqlite").exists(), "no half release");
    assert!(
        hidden(d).iter().any(|n| n.ends_with(".parts")),
        "the killed run's parts: {:?}",
        hidden(d)
    );
    let next = relanon(d, &args);
    assert!(next.status.success(), "{}", stderr(&next));
    assert!(
        stderr(&next).contains("an interrupted run"),
        "{}",
        stderr(&next)
    );
    assert!(hidden(d).is_empty(), "debris: {:?}", hidden(d));
    let first = std::fs::read(d.join("sales-release.sqlite")).expect("released");
    let again = relanon(d, &[&args[..], &["--overwrite"]].concat());
    assert!(again.status.success(), "{}", stderr(&again));
    let second = std::fs::read(d.join("sales-release.sqlite")).expect("released");
    assert!(first == second, "same seed, same shards: the same release");
}

/// A write that fails while the shards are written (a file-size limit stands in for a full
/// disk): one line naming the file and the cause, exit 2, no release, nothing staged left.
#[cfg(unix)]
#[test]
fn a_write_failing_while_shards_are_written_ends_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let decl = realworld_workspace(d, "sales", "sales", &[]);
    let script = format!(
        "ulimit -f 1; exec '{}' anonymize '{}' --shards 3",
        env!("CARGO_BIN_EXE_relanon"),
        decl.to_str().expect("UTF-8")
    );
    let o = std::process::Command::new("bash")
        .current_dir(d)
        .args(["-c", &script])
        .env_remove("RELANON_FAILPOINT")
        .output()
        .expect("run relanon");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot write") && err.contains("too large"),
        "{err}"
    );
    assert!(!d.join("sales-release.sqlite").exists(), "no release");
    assert!(hidden(d).is_empty(), "debris: {:?}", hidden(d));
}

/// `--memory-budget`: a budget that is no size, and one below what the family needs,
/// refused in one line that says how much it needs (exit 2, nothing written); that amount
/// given back is enough, and the family, too large to run whole in it, runs in shards and
/// verifies, as does the standalone verify within the same budget.
#[test]
fn a_memory_budget_picks_the_shards_and_a_short_one_says_what_it_needs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let o = relanon(d, &["generate", "tpch", "--sf", "0.0005", "--out", "tpch"]);
    assert!(o.status.success(), "generate tpch: {}", stderr(&o));
    let decl = crate::common::root().join("sql/tpch.sql");
    let decl = decl.to_str().expect("UTF-8");
    let run = |budget: &str| {
        relanon(
            d,
            &[
                "anonymize",
                decl,
                "--source",
                "tpch",
                "--target",
                "rel",
                "--key-map",
                "keys.json",
                "--overwrite",
                "--json",
                "--memory-budget",
                budget,
            ],
        )
    };
    let o = run("lots");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("'lots' is not a size"),
        "{}",
        stderr(&o)
    );
    let o = run("1KiB");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!d.join("rel").exists(), "{err}");
    let needs = err
        .split("give at least --memory-budget ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no amount in: {err}"));
    let o = run(needs);
    assert!(
        o.status.success(),
        "--memory-budget {needs}: {}",
        stderr(&o)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json report");
    assert_eq!(report["verified"], true, "{report}");
    let shards = report["params"]["shards"].as_u64().unwrap_or(1);
    assert!(shards >= 2, "--memory-budget {needs}: {}", report["params"]);
    let v = relanon(
        d,
        &[
            "verify",
            decl,
            "--source",
            "tpch",
            "--release",
            "rel",
            "--key-map",
            "keys.json",
            "--memory-budget",
            needs,
        ],
    );
    assert!(v.status.success(), "{}{}", stdout(&v), stderr(&v));
}
