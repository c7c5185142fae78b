//! `relanon experiment` end to end on small populations: every run goes through the whole
//! pipeline (so its release passed verify), and the table, JSON and page agree.

use crate::common::*;

fn json_rows(path: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).expect("the experiment wrote its JSON");
    serde_json::from_str::<Vec<serde_json::Value>>(&text).expect("JSON rows")
}

#[test]
fn thesis_table_on_a_small_synthetic_s() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = relanon(
        dir.path(),
        &[
            "experiment",
            "thesis-s",
            "--out",
            "exp",
            "--students",
            "12",
            "--l",
            "2,3",
            "--only",
            "CToff-GRD",
            "--json",
            "rows.json",
            "--html",
            "page.html",
        ],
    );
    let out = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        out.contains("| 2 | CToff-GRD |") && out.contains("| 3 | CToff-GRD |"),
        "{out}"
    );
    let rows = json_rows(&dir.path().join("rows.json"));
    assert_eq!(rows.len(), 2);
    for r in &rows {
        let lm = r["lm"].as_f64().expect("lm");
        assert!((0.0..=1.0).contains(&lm), "{r}");
    }
    let page = std::fs::read_to_string(dir.path().join("page.html")).expect("page");
    assert_eq!(page.matches("<svg").count(), 4, "LM, accuracy, KL, time");
    // Unknown algorithm names are refused with the list to choose from.
    let o = relanon(
        dir.path(),
        &[
            "experiment",
            "thesis-s",
            "--out",
            "exp",
            "--students",
            "12",
            "--only",
            "nope",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("ClusTree-LSAP"), "{}", stderr(&o));
}

#[test]
fn miracle_experiment_on_a_small_university() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = relanon(
        dir.path(),
        &[
            "experiment",
            "miracle",
            "--out",
            "exp",
            "--students",
            "20",
            "--k",
            "2,4",
            "--sweep-k",
            "4",
            "--thresholds",
            "0.3,1",
            "--json",
            "rows.json",
            "--html",
            "page.html",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = json_rows(&dir.path().join("rows.json"));
    // (2, 0.3), (4, 0.3), (4, 1): k = 4 at 0.3 runs once; four algorithms each.
    assert_eq!(rows.len(), 12);
    for r in &rows {
        let k = r["k"].as_u64().expect("k");
        // DM (001 Def. 9) is at least k per entity: every EC holds k or more.
        assert!(r["dm"].as_u64().expect("dm") >= 20 * k, "{r}");
        let (lm, lms) = (
            r["lm"].as_f64().expect("lm"),
            r["lm_with_suppression"].as_f64().expect("lms"),
        );
        assert!(lm <= 1.0 && lms <= 1.0, "{r}");
    }
    let page = std::fs::read_to_string(dir.path().join("page.html")).expect("page");
    assert_eq!(page.matches("<svg").count(), 6);
    assert!(page.contains("Bitmap (complete)"));
}

/// 000 Sec. 3.5 on a small syntheticS at one l: every setting of the slices runs (or is
/// refused as nothing publishable where m = 1 and p < 1/l bar every gpa value), the
/// variants agree without binding rules, and the gain table compares with ClusTree-LSAP.
#[test]
fn anatomy_experiment_on_a_small_synthetic_s() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = relanon(
        dir.path(),
        &[
            "experiment",
            "anatomy",
            "--out",
            "exp",
            "--students",
            "24",
            "--l",
            "2",
            "--partitions",
            "1,2",
            "--json",
            "rows.json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("| 2 | ClusTree-LSAP |"), "{out}");
    let text = std::fs::read_to_string(dir.path().join("rows.json")).expect("JSON");
    let all: Vec<serde_json::Value> = serde_json::from_str(&text).expect("JSON");
    let grid = all[0]["grid"].as_array().expect("grid");
    // Each setting once, both variants: 3.5/3.8's 5 p, 3.6/3.9's 4 more m, 3.7/3.10's 16
    // more (p, m), 5 with the grade rules only, p = 0.33, and np = 2.
    assert_eq!(grid.len(), 2 * (5 + 4 + 16 + 5 + 1 + 1));
    let refused: Vec<&serde_json::Value> = grid.iter().filter(|r| r["refused"] == true).collect();
    assert!(
        refused.iter().all(|r| r["m"] == 1),
        "only m = 1 with p < 1/l is refused: {refused:?}"
    );
    // p = 1: the rules bind nothing and t-t and v-v keep the same rows (000 L1140).
    let at = |variant: &str| {
        grid.iter()
            .find(|r| {
                r["variant"] == variant && r["p"] == "1" && r["m"] == 3 && r["rules"] == "every"
            })
            .map(|r| r["suppression_accuracy"].as_f64().expect("a number"))
    };
    assert_eq!(at("t-t"), at("v-v"));
    assert!(at("t-t").is_some());
}

/// The frontier on the real-shaped rental warehouse at k = 5, two prices: every release
/// verified, the shape-only reference beside the lines, and at price 8 some line keeping at
/// least 90% of every family table (measured: 95.6% or more for every line there).
#[test]
fn frontier_experiment_on_the_rental_fixture() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = realworld_workspace(dir.path(), "rental", "rental", &[]);
    let o = relanon(
        dir.path(),
        &[
            "experiment",
            "frontier",
            "--decl",
            decl.to_str().expect("utf-8 path"),
            "--out",
            "exp",
            "--k",
            "5",
            "--prices",
            "1,8",
            "--only",
            "MiRaCleX,CToff",
            "--json",
            "rows.json",
            "--html",
            "page.html",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("| MiRaCleX (shape) | 8 |"), "{out}");
    let rows = json_rows(&dir.path().join("rows.json"));
    // Two algorithms in two orders at two prices, and the reference.
    assert_eq!(rows.len(), 2 * 2 * 2 + 1, "{out}");
    assert!(rows.iter().all(|r| r["verified"] == true), "{out}");
    let reference: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| r["algorithm"] == "shape-only")
        .collect();
    assert_eq!(reference.len(), 1, "{out}");
    assert!(reference[0]["price"].is_null());
    let keeps_90 = |r: &serde_json::Value| {
        let tables = r["tables"].as_array().expect("tables");
        tables.len() == 3
            && tables.iter().all(|t| {
                let (rows_in, released) = (
                    t["rows_in"].as_f64().expect("rows_in"),
                    t["released"].as_f64().expect("released"),
                );
                released >= 0.9 * rows_in
            })
    };
    assert!(
        rows.iter().any(|r| r["price"] == 8.0 && keeps_90(r)),
        "{out}"
    );
    let page = std::fs::read_to_string(dir.path().join("page.html")).expect("page");
    assert_eq!(page.matches("<svg").count(), 6, "LM and accuracy per table");
    for table in ["customer", "rental", "payment"] {
        assert!(page.contains(&format!("<h2>{table}</h2>")), "{table}");
    }
    assert!(page.contains("shape-only (reference)"));
}

#[test]
fn fragmentation_on_a_small_wide_table_scores_every_release_with_both_classifiers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = relanon(
        dir.path(),
        &[
            "experiment",
            "fragmentation",
            "--dims",
            "6",
            "--rows",
            "800",
            "--out",
            "exp",
            "--json",
            "rows.json",
            "--quiet",
        ],
    );
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let rows = json_rows(&dir.path().join("rows.json"));
    // Every method but the lattice ones (past 8 columns only; 6 here, so all nine).
    assert_eq!(rows.len(), 9, "{rows:?}");
    for r in &rows {
        // The releases hold 70% of each class's rows (rounded up): the rest are the
        // classifiers' test rows.
        let n = r["rows"].as_u64().expect("rows");
        assert!((560..=563).contains(&n), "{r}");
        for score in ["j48", "knn"] {
            let f = r[score].as_f64().expect("a score");
            assert!((0.0..=1.0).contains(&f), "{score}: {r}");
        }
    }
    // The wide table's class follows its first columns: some release classifies better
    // than always naming one class (at most 1/3 of the rows are each class's: F <= 0.5).
    let best = rows
        .iter()
        .filter_map(|r| r["knn"].as_f64())
        .fold(0.0, f64::max);
    assert!(best > 0.5, "{rows:?}");
    assert!(stdout(&o).contains("F-measure 5-NN"), "{}", stdout(&o));
}
