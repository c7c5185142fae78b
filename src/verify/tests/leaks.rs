//! Checks "labels" and "twins" on a one-table family of patients: releases that pass
//! truthfulness and k-anonymity, yet whose labels name patients or whose published codes
//! undo a generalized description.

use super::*;

/// A family of one entity table, `patients` keyed by `pid`, with `columns` (after the key)
/// and `hierarchies` by name.
fn patients_plan(
    k: usize,
    columns: Vec<PlannedColumn>,
    hierarchies: Vec<(&str, HierarchyDef)>,
) -> Plan {
    let mut all = vec![col("pid", ColumnRole::Key)];
    all.extend(columns);
    let mut plan = Plan {
        entity: "patient".to_string(),
        tables: vec![FamilyTable {
            name: "patients".to_string(),
            primary_key: vec!["pid".to_string()],
            parent: None,
            parent_fk: vec![],
            parent_key: vec![],
            key: ReleasedKey::Own("pid".to_string()),
            released_fk: vec![],
            released_parent_key: vec![],
            redundant: vec![],
            part: None,
            links: vec![],
            children: vec![],
            columns: all,
        }],
        dimensions: vec![],
        left_out: vec![],
        warnings: vec![],
        labels: vec![],
        hierarchies: hierarchies
            .into_iter()
            .map(|(n, h)| (n.to_string(), h))
            .collect(),
        params: Params {
            queries: 0,
            seed: Some(7),
            keys: KeyPolicy::Preserve,
            ..Params::defaults(Model::KAnonymity { k })
        },
        views: vec![],
        source: PathBuf::from("source.sqlite"),
        hierarchy_files: Vec::new(),
        target: None,
    };
    plan.labels = labels_of(&plan);
    plan
}

/// Patients with a first name (an IDENTIFIER, declared as `name`) and a surname (`last`, a QI
/// under `last_h`), at `k`.
fn names_plan(k: usize, name: &str, last_h: HierarchyDef) -> Plan {
    patients_plan(
        k,
        vec![col(name, ColumnRole::Identifier), col("last", qi("last_h"))],
        vec![("last_h", last_h)],
    )
}

/// Every leaf of `leaves` under one parent label.
fn under(parent: &str, leaves: &[&str]) -> HierarchyDef {
    let rows: Vec<Vec<&str>> = leaves.iter().map(|l| vec![*l, parent]).collect();
    let rows: Vec<&[&str]> = rows.iter().map(Vec::as_slice).collect();
    HierarchyDef::from_rows(&rows)
}

/// Each (leaf, parent) pair a row of its own.
fn pairs(rows: &[(&str, &str)]) -> HierarchyDef {
    let rows: Vec<[&str; 2]> = rows.iter().map(|&(l, p)| [l, p]).collect();
    let rows: Vec<&[&str]> = rows.iter().map(|r| &r[..]).collect();
    HierarchyDef::from_rows(&rows)
}

fn patients(columns: &[(&'static str, &'static str)], rows: Vec<Vec<Sql>>) -> Vec<Table> {
    let mut all = vec![("pid", "INTEGER")];
    all.extend_from_slice(columns);
    let rows = rows
        .into_iter()
        .enumerate()
        .map(|(n, mut r)| {
            r.insert(0, i(n as i64 + 1));
            r
        })
        .collect();
    vec![Table::new("patients", &all, rows)]
}

async fn verdict(plan: &Plan, src: &[Table], rel: &[Table]) -> Verdict {
    run_with(plan, src, rel, Keys::Preserved, None)
        .await
        .expect("verify runs")
}

const LAST: &[&str] = &["Abbott1", "Baker2", "Crist804", "Douglas998"];
const NAMES: &[&str] = &["Ann", "Bob", "Baker2", "Di"];

/// Four patients, each with a unique surname (QI) and first name (IDENTIFIER); released with
/// each surname replaced by `label(i)`, where `last_h` puts `LAST[i]` under that label.
async fn surnames_released_as(label: impl Fn(usize) -> String) -> Verdict {
    let hier = pairs(&[
        (LAST[0], &label(0)),
        (LAST[1], &label(1)),
        (LAST[2], &label(2)),
        (LAST[3], &label(3)),
    ]);
    let plan = names_plan(2, "name", hier);
    let src = patients(
        &[("name", "TEXT"), ("last", "TEXT")],
        (0..4).map(|n| vec![t(NAMES[n]), t(LAST[n])]).collect(),
    );
    let rel = patients(
        &[("last", "TEXT")],
        (0..4).map(|n| vec![t(&label(n))]).collect(),
    );
    verdict(&plan, &src, &rel).await
}

#[tokio::test]
async fn labels_made_of_member_values_name_their_members() {
    let v = surnames_released_as(|n| {
        if n < 2 {
            "[Abbott1 .. Baker2]".to_string()
        } else {
            "[Crist804 .. Douglas998]".to_string()
        }
    })
    .await;
    assert_eq!(failing(&v), vec!["labels"], "{}", v.summary());
    assert_caught(
        &v,
        "labels",
        &[
            "patients.last: label '[Abbott1 .. Baker2]' contains 'Abbott1' (and 1 more such value)",
            "a value of patients.last held by 1 entity (fewer than k = 2)",
        ],
    );
    assert_caught(
        &v,
        "labels",
        &["label '[Crist804 .. Douglas998]' contains 'Crist804'"],
    );
    // Baker2 is also a first name, an IDENTIFIER: named for that column too.
    assert_caught(
        &v,
        "labels",
        &[
            "label '[Abbott1 .. Baker2]' contains 'Baker2'",
            "a value of patients.name held by 1 entity",
        ],
    );
    // One violation per (label, column), not per row: two labels of last, one of name.
    assert_eq!(
        v.check("labels").map(|c| c.violation_count),
        Some(3),
        "{}",
        v.summary()
    );
}

/// The first names (an IDENTIFIER of a keyed table) are not read with the table but
/// streamed by key; a name on a row whose key another source row shares is still searched.
#[tokio::test]
async fn an_identifier_streamed_by_key_is_searched_even_where_the_key_repeats() {
    let label = |n: usize| {
        if n < 2 {
            "[Abbott1 .. Baker2]"
        } else {
            "[Crist804 .. Douglas998]"
        }
    };
    let hier = pairs(&[
        (LAST[0], label(0)),
        (LAST[1], label(1)),
        (LAST[2], label(2)),
        (LAST[3], label(3)),
    ]);
    let plan = names_plan(2, "name", hier);
    assert_eq!(data::streamed(&plan.tables[0]), vec!["name".to_string()]);
    // Patient 3 shares patient 2's key: its first name, Baker2, names no one row.
    let columns = [("pid", "INTEGER"), ("name", "TEXT"), ("last", "TEXT")];
    let pids = [1, 2, 2, 4];
    let src = vec![Table::new(
        "patients",
        &columns,
        (0..4)
            .map(|n| vec![i(pids[n]), t(NAMES[n]), t(LAST[n])])
            .collect(),
    )];
    let rel = patients(
        &[("last", "TEXT")],
        (0..4).map(|n| vec![t(label(n))]).collect(),
    );
    let v = verdict(&plan, &src, &rel).await;
    assert_caught(
        &v,
        "labels",
        &[
            "label '[Abbott1 .. Baker2]' contains 'Baker2'",
            "a value of patients.name held by 0 entities",
        ],
    );
}

/// The declarations may spell a column in another case than the source: the streamed
/// identifier is read under the source's spelling.
#[tokio::test]
async fn an_identifier_spelled_in_another_case_is_still_streamed() {
    let label = "[Abbott1 .. Baker2]";
    let hier = pairs(&[(LAST[0], label), (LAST[1], label)]);
    let plan = names_plan(2, "NAME", hier);
    let src = patients(
        &[("name", "TEXT"), ("last", "TEXT")],
        vec![vec![t("Abbott1"), t(LAST[0])], vec![t("Zed"), t(LAST[1])]],
    );
    let rel = patients(&[("last", "TEXT")], vec![vec![t(label)], vec![t(label)]]);
    let v = verdict(&plan, &src, &rel).await;
    assert_caught(
        &v,
        "labels",
        &[
            "label '[Abbott1 .. Baker2]' contains 'Abbott1'",
            "a value of patients.NAME held by 1 entity",
        ],
    );
}

#[tokio::test]
async fn labels_by_position_pass() {
    let v = surnames_released_as(|n| format!("group {} of 2", n / 2 + 1)).await;
    assert!(v.passed(), "{}", v.summary());
    assert_eq!(
        v.summary().lines().nth(5),
        Some("PASS labels"),
        "{}",
        v.summary()
    );
}

/// Patients born in `years`, released with `yob` replaced by `label` under `hier`.
async fn years_released_as(years: &[i64], label: &str, hier: HierarchyDef) -> Verdict {
    let plan = patients_plan(2, vec![col("yob", qi("yob_h"))], vec![("yob_h", hier)]);
    let src = patients(
        &[("yob", "INTEGER")],
        years.iter().map(|&y| vec![i(y)]).collect(),
    );
    let rel = patients(
        &[("yob", "TEXT")],
        years.iter().map(|_| vec![t(label)]).collect(),
    );
    verdict(&plan, &src, &rel).await
}

#[tokio::test]
async fn a_band_bound_is_arithmetic_not_a_member() {
    // 1990 is one patient's year of birth, and the band's lower bound.
    let bands = HierarchyDef::Bands {
        widths: vec![10.0],
        range: None,
        pos: Pos::default(),
    };
    let v = years_released_as(&[1990, 1993, 1993], "[1990,1999]", bands).await;
    assert!(v.passed(), "{}", v.summary());

    // The same range written out as a VALUES hierarchy over a column of numbers: a label's
    // numbers there are the bounds ranges are written in, not a member named.
    let rows = pairs(&[("1990", "[1990,1999]"), ("1993", "[1990,1999]")]);
    let v = years_released_as(&[1990, 1993, 1993], "[1990,1999]", rows).await;
    assert!(v.passed(), "{}", v.summary());
}

#[tokio::test]
async fn a_value_inside_a_longer_word_is_not_contained() {
    // "M" is one patient's ward; "Medicine" names it only as a prefix of a word.
    let plan = patients_plan(
        2,
        vec![col("ward", qi("ward_h"))],
        vec![("ward_h", under("Medicine", &["M", "Cardio", "Neuro"]))],
    );
    let src = patients(
        &[("ward", "TEXT")],
        ["M", "Cardio", "Cardio", "Neuro", "Neuro"]
            .iter()
            .map(|w| vec![t(w)])
            .collect(),
    );
    let rel = patients(&[("ward", "TEXT")], vec![vec![t("Medicine")]; 5]);
    let v = verdict(&plan, &src, &rel).await;
    assert!(v.passed(), "{}", v.summary());
}

/// Diagnoses of six patients: code, description, a per-row amount. Codes C1 x3, C2 x2, C3 x1
/// map to one description each, all under "Respiratory".
fn diagnoses() -> Vec<(&'static str, &'static str, f64)> {
    vec![
        ("C1", "Flu", 10.5),
        ("C1", "Flu", 11.0),
        ("C1", "Flu", 12.0),
        ("C2", "Cold", 13.5),
        ("C2", "Cold", 9.0),
        ("C3", "Asthma", 8.0),
    ]
}

fn description_h() -> (&'static str, HierarchyDef) {
    ("desc_h", under("Respiratory", &["Flu", "Cold", "Asthma"]))
}

/// The diagnoses with every description released as "Respiratory"; `code` is the code's
/// role (None: the code column is left out of both sides).
async fn descriptions_generalized(code: Option<ColumnRole>) -> Verdict {
    let mut columns = vec![
        col("description", qi("desc_h")),
        col("amount", ColumnRole::Insensitive),
    ];
    let mut hierarchies = vec![description_h()];
    let with_code = code.is_some();
    let code_qi = matches!(code, Some(ColumnRole::QuasiIdentifier { .. }));
    if code_qi {
        hierarchies.push(("code_h", under("Respiratory", &["C1", "C2", "C3"])));
    }
    if let Some(role) = code {
        columns.insert(0, col("code", role));
    }
    let plan = patients_plan(2, columns, hierarchies);
    let (mut src_cols, mut rel_cols) = (
        vec![("description", "TEXT"), ("amount", "REAL")],
        vec![("description", "TEXT"), ("amount", "REAL")],
    );
    if with_code {
        src_cols.insert(0, ("code", "TEXT"));
        rel_cols.insert(0, ("code", "TEXT"));
    }
    let (mut src_rows, mut rel_rows) = (Vec::new(), Vec::new());
    for (code, desc, amount) in diagnoses() {
        let mut s = vec![t(desc), f(amount)];
        let mut r = vec![t("Respiratory"), f(amount)];
        if with_code {
            s.insert(0, t(code));
            r.insert(0, t(if code_qi { "Respiratory" } else { code }));
        }
        src_rows.push(s);
        rel_rows.push(r);
    }
    verdict(
        &plan,
        &patients(&src_cols, src_rows),
        &patients(&rel_cols, rel_rows),
    )
    .await
}

#[tokio::test]
async fn a_code_published_beside_its_generalized_description_is_a_twin() {
    let v = descriptions_generalized(Some(ColumnRole::Insensitive)).await;
    assert_eq!(failing(&v), vec!["twins"], "{}", v.summary());
    assert_caught(
        &v,
        "twins",
        &[
            "patients.code determines patients.description (generalized in 6 released rows) and is published unchanged",
            "1 released entity falls in a class smaller than k = 2",
            "(smallest: 1)",
            "give patients.code the role of patients.description",
        ],
    );
    // The amount, unique per row, determines the description by chance only.
    assert_eq!(
        v.check("twins").map(|c| c.violation_count),
        Some(1),
        "{}",
        v.summary()
    );
}

#[tokio::test]
async fn a_code_generalized_like_its_description_passes() {
    let v = descriptions_generalized(Some(qi("code_h"))).await;
    assert!(v.passed(), "{}", v.summary());
}

#[tokio::test]
async fn a_nearly_unique_column_is_not_a_twin() {
    // Every amount occurs once, so each "determines" its description; no adversary holds
    // that mapping.
    let v = descriptions_generalized(None).await;
    assert!(v.passed(), "{}", v.summary());
}

#[tokio::test]
async fn twins_that_only_split_classes_of_k_pass() {
    // Twice the diagnoses: counted as known, the code leaves classes of 6, 4 and 2.
    let plan = patients_plan(
        2,
        vec![
            col("code", ColumnRole::Sensitive { buckets: None }),
            col("description", qi("desc_h")),
        ],
        vec![description_h()],
    );
    let twice: Vec<(&str, &str, f64)> = diagnoses().into_iter().chain(diagnoses()).collect();
    let src = patients(
        &[("code", "TEXT"), ("description", "TEXT")],
        twice.iter().map(|(c, d, _)| vec![t(c), t(d)]).collect(),
    );
    let rel = patients(
        &[("code", "TEXT"), ("description", "TEXT")],
        twice
            .iter()
            .map(|(c, _, _)| vec![t(c), t("Respiratory")])
            .collect(),
    );
    let v = verdict(&plan, &src, &rel).await;
    assert!(v.passed(), "{}", v.summary());
}

#[tokio::test]
async fn twins_harmless_alone_can_be_reported_together() {
    // Ward and shift are each generalized to one label, and each has a code published
    // beside it: either code alone splits the four patients in pairs, both single them out.
    let plan = patients_plan(
        2,
        vec![
            col("ward_code", ColumnRole::Insensitive),
            col("ward", qi("ward_h")),
            col("shift_code", ColumnRole::Insensitive),
            col("shift", qi("shift_h")),
        ],
        vec![
            ("ward_h", under("Any ward", &["North", "South"])),
            ("shift_h", under("Any shift", &["Day", "Night"])),
        ],
    );
    let cells = [
        ("W1", "North", "S1", "Day"),
        ("W1", "North", "S2", "Night"),
        ("W2", "South", "S1", "Day"),
        ("W2", "South", "S2", "Night"),
    ];
    let columns = [
        ("ward_code", "TEXT"),
        ("ward", "TEXT"),
        ("shift_code", "TEXT"),
        ("shift", "TEXT"),
    ];
    let src = patients(
        &columns,
        cells
            .iter()
            .map(|(wc, w, sc, s)| vec![t(wc), t(w), t(sc), t(s)])
            .collect(),
    );
    let rel = patients(
        &columns,
        cells
            .iter()
            .map(|(wc, _, sc, _)| vec![t(wc), t("Any ward"), t(sc), t("Any shift")])
            .collect(),
    );
    let v = verdict(&plan, &src, &rel).await;
    assert_eq!(failing(&v), vec!["twins"], "{}", v.summary());
    assert_caught(
        &v,
        "twins",
        &[
            "patients.ward_code (of patients.ward), patients.shift_code (of patients.shift) together",
            "4 released entities fall in classes smaller than k = 2 when they are counted as known (smallest: 1)",
        ],
    );
    assert_eq!(
        v.check("twins").map(|c| c.violation_count),
        Some(1),
        "{}",
        v.summary()
    );
}
