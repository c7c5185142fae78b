//! Keeping the rows (the binary on real-shaped fixtures): shape-aware clustering
//! (`order = 'shape'`), the owner's `suppression_price`, `KEEP n PERCENT OF t` met or refused
//! with the best share, and the shape-only reference grouping.

use std::path::Path;

use crate::common::{realworld_workspace, relanon, stderr, stdout};

/// `anonymize decl --with with --json`: the report of a verified release, the warnings.
fn anonymize(dir: &Path, decl: &Path, with: &str) -> (serde_json::Value, String) {
    let decl = decl.to_str().expect("UTF-8 path");
    let o = relanon(
        dir,
        &["anonymize", decl, "--json", "--overwrite", "--with", with],
    );
    assert!(o.status.success(), "anonymize {with}: {}", stderr(&o));
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json report");
    assert_eq!(report["verified"], true, "{with}: {report}");
    (report, stderr(&o))
}

/// Rows released of `table`, and its source rows.
fn kept(report: &serde_json::Value, table: &str) -> (u64, u64) {
    let t = report["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .find(|t| t["name"] == table)
        .unwrap_or_else(|| panic!("no table {table} in {report}"));
    (
        t["released"].as_u64().expect("released"),
        t["rows_in"].as_u64().expect("rows_in"),
    )
}

fn lm(report: &serde_json::Value, measure: &str) -> f64 {
    report[measure].as_f64().expect("an LM")
}

/// Order counts from 1 to 6 whatever the city: in key order the CDGH algorithms gather
/// customers whose orders cannot be matched and suppress 48 of the 168; visited by shape they
/// keep every order at a lower LM. ClusTree and CToff find matching trees by their exact
/// search, so it is their blocking (`candidates`) that shape decides: ranked by shape, the few
/// candidates a seed weighs are trees it can match.
#[test]
fn shape_aware_clustering_keeps_strictly_more_rows_of_a_skewed_warehouse_at_no_higher_lm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = realworld_workspace(dir.path(), "skew", "skew", &[]);
    for (algorithm, extra, measures) in [
        ("miracle", "", &["lm", "lm_with_suppression"][..]),
        ("miraclex", "", &["lm", "lm_with_suppression"][..]),
        ("clustree", ", candidates = 3", &["lm_with_suppression"][..]),
        ("ctoff", ", candidates = 3", &["lm_with_suppression"][..]),
    ] {
        let run = |order: &str| {
            anonymize(
                dir.path(),
                &decl,
                &format!("algorithm = '{algorithm}', order = '{order}'{extra}"),
            )
            .0
        };
        let (by_key, by_shape) = (run("key"), run("shape"));
        let (key_rows, rows) = kept(&by_key, "Order");
        let (shape_rows, _) = kept(&by_shape, "Order");
        assert!(
            shape_rows > key_rows,
            "{algorithm}: by shape {shape_rows} of {rows} orders, by key {key_rows}"
        );
        for m in measures {
            assert!(
                lm(&by_shape, m) <= lm(&by_key, m),
                "{algorithm}: {m} by shape {} above by key {}",
                lm(&by_shape, m),
                lm(&by_key, m)
            );
        }
        assert_eq!(by_shape["params"]["order"], "shape");
    }
    // The reference keeps every order: each shape comes in classes of at least k = 4.
    let (reference, _) = anonymize(dir.path(), &decl, "algorithm = 'shape-only'");
    assert_eq!(kept(&reference, "Order"), (168, 168));
    assert!(reference["smallest_ec"].as_u64().expect("smallest_ec") >= 4);
}

/// At k = 5 MiRaCleX by shape keeps 266 of 360 rentals at price 1; `KEEP 90 PERCENT` of
/// rentals and payments makes it raise the price until both hold, generalizing more: the
/// report says the price it took, and the run warns about it.
#[test]
fn keep_is_met_by_raising_the_suppression_price() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = realworld_workspace(dir.path(), "rental", "rental", &[]);
    let with = "k = 5, algorithm = 'miraclex', order = 'shape'";
    let (free, _) = anonymize(dir.path(), &decl, with);
    let text = std::fs::read_to_string(&decl).expect("declarations");
    std::fs::write(
        &decl,
        format!("{text}\nKEEP 90 PERCENT OF rental;\nKEEP 90 PERCENT OF \"PAYMENT\";\n"),
    )
    .expect("write declarations");
    let (floored, warnings) = anonymize(dir.path(), &decl, with);
    for table in ["rental", "payment"] {
        let (before, rows) = kept(&free, table);
        let (after, _) = kept(&floored, table);
        assert!(after * 10 >= rows * 9, "{table}: {after} of {rows}");
        assert!(after > before, "{table}: {after} after, {before} before");
    }
    assert!(lm(&floored, "lm") > lm(&free, "lm"));
    let price = floored["params"]["suppression_price"]
        .as_f64()
        .expect("the price in force");
    assert!(price > 1.0, "{price}");
    assert!(
        warnings.contains("KEEP: suppression_price raised from 1 to"),
        "{warnings}"
    );
    assert_eq!(
        floored["params"]["keep"],
        serde_json::json!([
            { "table": "rental", "percent": 90.0 },
            { "table": "payment", "percent": 90.0 }
        ])
    );
    // The dry run says what each floor means in rows.
    let plan = relanon(dir.path(), &["plan", decl.to_str().expect("UTF-8")]);
    assert!(plan.status.success(), "{}", stderr(&plan));
    assert!(
        stdout(&plan).contains("KEEP 90%: at least 324 rows"),
        "{}",
        stdout(&plan)
    );
    // Written back, the price releases the same rows without the search.
    let again = anonymize(
        dir.path(),
        &decl,
        &format!("{with}, suppression_price = {price}"),
    )
    .0;
    assert_eq!(kept(&again, "rental"), kept(&floored, "rental"));
}

/// Whole-record k-anonymity at k = 5 cannot keep every payment: the run is refused with the
/// best share any price reached, and nothing is written. A table outside the family is refused
/// by the planner, naming the family.
#[test]
fn keep_out_of_reach_or_off_the_family_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = realworld_workspace(dir.path(), "rental", "rental", &[]);
    let text = std::fs::read_to_string(&decl).expect("declarations");
    std::fs::write(&decl, format!("{text}\nKEEP 100 PERCENT OF payment;\n")).expect("write");
    let o = relanon(
        dir.path(),
        &[
            "anonymize",
            decl.to_str().expect("UTF-8"),
            "--with",
            "order = 'shape'",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("the rows kept fall short of KEEP at every suppression_price up to 4096: payment keeps at best"),
        "{err}"
    );
    assert!(err.contains("where KEEP at"), "{err}");
    assert!(!dir.path().join("rental-release.sqlite").exists());

    std::fs::write(&decl, format!("{text}\nKEEP 50 PERCENT OF film;\n")).expect("write");
    let o = relanon(dir.path(), &["anonymize", decl.to_str().expect("UTF-8")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("KEEP names film, which is not in the customer family"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("rental-release.sqlite").exists());
}

/// The default visits by shape wherever the family has child tables: on the skewed fixture
/// it keeps strictly more orders than key order, and key order's summary leads with a
/// warning naming the table, its rows kept and the options that keep more.
#[test]
fn the_default_keeps_more_rows_than_key_order_and_warns_when_a_fifth_is_lost() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = realworld_workspace(dir.path(), "skew", "skew", &[]);
    let (default, _) = anonymize(dir.path(), &decl, "algorithm = 'miraclex'");
    let (by_key, _) = anonymize(dir.path(), &decl, "algorithm = 'miraclex', order = 'key'");
    assert_eq!(default["params"]["order"], "shape", "{default}");
    let (shape_kept, rows) = kept(&default, "Order");
    let (key_kept, _) = kept(&by_key, "Order");
    assert!(shape_kept > key_kept, "{shape_kept} against {key_kept}");
    assert!(shape_kept * 5 >= rows * 4, "{shape_kept} of {rows}");
    // The summary (no --json) leads with the loss, and names what keeps more.
    let o = relanon(
        dir.path(),
        &[
            "anonymize",
            decl.to_str().expect("UTF-8 path"),
            "--overwrite",
            "--with",
            "algorithm = 'miraclex', order = 'key'",
            "--report",
            "page.html",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(dir.path().join("page.html")).expect("the page");
    assert!(
        page.contains(&format!(
            "<p class=\"warning\">Order keeps {key_kept} of its {rows} rows"
        )),
        "the page leads with the loss too"
    );
    let out = stdout(&o);
    let first = out.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!(
            "warning: Order keeps {key_kept} of its {rows} rows"
        )),
        "{out}"
    );
    for offer in [
        "order = 'shape'",
        "suppression_price = 2",
        "KEEP 80 PERCENT OF \"Order\"",
        "a smaller k than",
    ] {
        assert!(first.contains(offer), "{offer}: {first}");
    }
    // The default's summary has no such warning.
    let o = relanon(
        dir.path(),
        &[
            "anonymize",
            decl.to_str().expect("UTF-8 path"),
            "--overwrite",
        ],
    );
    assert!(
        !stdout(&o).contains("warning: Order keeps"),
        "{}",
        stdout(&o)
    );
}

/// `plan` warns where even the best release keeps under four fifths of a table, and names
/// the largest class size whose bound reaches it.
#[test]
fn plan_warns_of_a_bound_under_four_fifths_and_names_the_class_size_that_reaches_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = realworld_workspace(dir.path(), "skew", "skew", &[]);
    let decl = decl.to_str().expect("UTF-8 path");
    let o = relanon(dir.path(), &["plan", decl, "--with", "k = 20"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("warning: Order: at most 120 of its 168 rows (71%) can be released")
            && stdout(&o).contains("classes of 16 could keep up to 144 (86%)"),
        "{}",
        stdout(&o)
    );
    let o = relanon(dir.path(), &["plan", decl, "--with", "k = 16"]);
    assert!(!stdout(&o).contains("can be released:"), "{}", stdout(&o));
}
