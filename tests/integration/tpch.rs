//! W2: TPC-H at a tiny scale factor, generated as SQLite and as Parquet, anonymized by
//! MiRaCleX with `sql/tpch.sql` (SELECT hierarchies over the dimension tables, date parts,
//! bands, a composite line-item key); the built-in and the standalone verify pass.

use std::path::Path;

use crate::common::*;

/// 75 customers, 750 orders, ~3000 line items: small enough for a debug build.
const SF: &str = "0.0005";

fn generate(dir: &Path, out: &str) {
    let o = relanon(dir, &["generate", "tpch", "--sf", SF, "--out", out]);
    assert!(o.status.success(), "generate tpch: {}", stderr(&o));
}

/// Anonymizes `source` (the run verifies the staged release itself); with `standalone`, also
/// runs `relanon verify` on the committed release with the key map.
fn anonymize(dir: &Path, source: &str, target: &str, standalone: bool) -> serde_json::Value {
    let decl = root().join("sql/tpch.sql");
    let decl = decl.to_str().expect("a UTF-8 path");
    let o = anonymize_with_key_map(dir, decl, source, target);
    assert!(o.status.success(), "anonymize {source}: {}", stderr(&o));
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json report");
    assert!(
        report["smallest_ec"].as_u64().expect("smallest_ec") >= 10,
        "{report}"
    );
    assert_eq!(report["verified"], true, "{report}");
    if !standalone {
        return report;
    }
    let v = verify_with_key_map(dir, decl, source, target);
    assert!(
        v.status.success(),
        "standalone verify of {target}: {}{}",
        stdout(&v),
        stderr(&v)
    );
    report
}

#[test]
fn tpch_on_sqlite_and_parquet_with_miraclex() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    generate(d, "tpch.sqlite");
    generate(d, "tpch-parquet");
    for table in [
        "customer", "orders", "lineitem", "nation", "region", "part", "supplier",
    ] {
        assert!(
            d.join(format!("tpch-parquet/{table}.parquet")).exists(),
            "{table}"
        );
    }
    let a = anonymize(d, "tpch.sqlite", "rel.sqlite", true);
    let b = anonymize(d, "tpch-parquet", "rel-parquet", false);
    // Both formats hold the same warehouse, so they anonymize alike.
    assert_eq!(a["lm"], b["lm"]);
    assert_eq!(a["equivalence_classes"], b["equivalence_classes"]);

    let db = rusqlite::Connection::open(d.join("rel.sqlite")).expect("open");
    let released: Vec<i64> = column(&db, "SELECT COUNT(*) FROM customer");
    assert_eq!(
        released[0] + a["suppressed_entities"].as_i64().unwrap_or(0),
        75
    );
    // Nations are released as themselves or generalized to their region.
    let nations: Vec<String> = column(
        &db,
        "SELECT DISTINCT CAST(c_nationkey AS TEXT) FROM customer",
    );
    let regions = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST", "*"];
    assert!(
        nations
            .iter()
            .all(|n| regions.contains(&n.as_str()) || n.parse::<u32>().is_ok_and(|k| k < 25)),
        "{nations:?}"
    );
    // Identifiers are dropped; the dimension tables are copied.
    let phone: Vec<i64> = column(
        &db,
        "SELECT COUNT(*) FROM pragma_table_info('customer') WHERE name = 'c_phone'",
    );
    assert_eq!(phone[0], 0);
    let parts: Vec<i64> = column(&db, "SELECT COUNT(*) FROM part");
    assert_eq!(parts[0], 100);
}

#[test]
fn a_bad_scale_factor_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = relanon(
        dir.path(),
        &["generate", "tpch", "--sf", "0", "--out", "t.sqlite"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--sf"), "{}", stderr(&o));
    assert!(!dir.path().join("t.sqlite").exists());
}

/// Every released row of `table` as text, sorted.
fn rows(db: &rusqlite::Connection, table: &str) -> Vec<String> {
    let mut stmt = db
        .prepare(&format!("SELECT * FROM \"{table}\""))
        .expect("query prepares");
    let n = stmt.column_count();
    let mut out: Vec<String> = stmt
        .query_map([], |r| {
            (0..n)
                .map(|i| {
                    r.get::<_, rusqlite::types::Value>(i)
                        .map(|v| format!("{v:?}"))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(|cells| cells.join("|"))
        })
        .expect("query runs")
        .map(|r| r.expect("row reads"))
        .collect();
    out.sort();
    out
}

/// RAYON_NUM_THREADS bounds every phase (clustering, DataFusion's partitions, the async
/// runtime). On one thread the run must still finish and release exactly what two threads do.
#[test]
fn one_thread_releases_what_two_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    generate(d, "tpch.sqlite");
    let decl = root().join("sql/tpch.sql");
    let decl = decl.to_str().expect("a UTF-8 path");
    let mut reports = Vec::new();
    for threads in ["1", "2"] {
        let target = format!("rel-{threads}.sqlite");
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_relanon"))
            .current_dir(d)
            .env("RAYON_NUM_THREADS", threads)
            .args(["anonymize", decl, "--source", "tpch.sqlite", "--target"])
            .args([target.as_str(), "--overwrite", "--json"])
            // Released keys are a random permutation; a seed makes it the same in both runs.
            .args(["--with", "seed = 7"])
            .output()
            .expect("the relanon binary runs");
        assert!(o.status.success(), "{threads} threads: {}", stderr(&o));
        let mut report: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json report");
        assert_eq!(report["verified"], true, "{report}");
        // Only the timings may differ.
        report
            .as_object_mut()
            .expect("the report is an object")
            .remove("timings_ms");
        reports.push(report);
    }
    let one = rusqlite::Connection::open(d.join("rel-1.sqlite")).expect("open");
    let two = rusqlite::Connection::open(d.join("rel-2.sqlite")).expect("open");
    for table in ["customer", "orders", "lineitem"] {
        let released = rows(&one, table);
        assert!(!released.is_empty(), "{table}");
        assert_eq!(released, rows(&two, table), "{table}");
    }
    for key in [
        "lm",
        "equivalence_classes",
        "suppressed_entities",
        "utility",
    ] {
        assert_eq!(reports[0][key], reports[1][key], "{key}");
    }
    assert_eq!(reports[0], reports[1]);
}
