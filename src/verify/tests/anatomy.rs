//! The anatomy family on hand-written releases (spec Sec. 7), none produced by the algorithm:
//! the thesis's Table 3.1 (tabular anatomy), the hospital of Figs 3.1-3.4 with the Fig. 3.3
//! grouping, the A19 counterexample both ways, and releases broken in one way each.

use super::*;
use crate::fraction::Fraction;
use crate::plan::{AnatomyRule, Variant};
use crate::policy::RuleValue;

const CHECKS: [&str; 10] = [
    "schema",
    "declared roles",
    "key atomicity",
    "truthfulness",
    "counts",
    "slots",
    "sa side",
    "l-diversity",
    "(p,m)-privacy",
    "sa truthfulness",
];

fn rule(name: &str, table: &str, column: &str, value: &str, m: u32, p: &str) -> AnatomyRule {
    AnatomyRule {
        name: name.to_string(),
        table: table.to_string(),
        column: column.to_string(),
        value: RuleValue::Value(value.to_string()),
        m,
        p: Fraction::from_decimal(p).expect("a valid share"),
    }
}

fn sensitive() -> ColumnRole {
    ColumnRole::Sensitive { buckets: None }
}

/// A family table keyed by its own one-column key (or by none), under `parent` through the
/// FK column of the same name as the parent's key.
fn family_table(
    name: &str,
    key: Option<&str>,
    parent: Option<(usize, &str)>,
    children: Vec<usize>,
    columns: Vec<PlannedColumn>,
) -> FamilyTable {
    let fk: Vec<String> = parent.map(|(_, k)| vec![k.to_string()]).unwrap_or_default();
    FamilyTable {
        name: name.to_string(),
        primary_key: key.map(|k| vec![k.to_string()]).unwrap_or_default(),
        parent: parent.map(|(p, _)| p),
        parent_fk: fk.clone(),
        parent_key: fk.clone(),
        children,
        columns,
        key: key.map_or(ReleasedKey::None, |k| ReleasedKey::Own(k.to_string())),
        released_fk: fk.clone(),
        released_parent_key: fk,
        redundant: vec![],
        links: vec![],
        part: None,
    }
}

/// An anatomy plan over `tables`, every QI on a hierarchy the plan defines (anatomy uses
/// none; verify only asks that they exist).
fn anatomy_plan(
    entity: &str,
    tables: Vec<FamilyTable>,
    l: usize,
    variant: Variant,
    rules: Vec<AnatomyRule>,
    keys: KeyPolicy,
) -> Plan {
    let mut hierarchies = BTreeMap::new();
    hierarchies.insert(
        "any_h".to_string(),
        HierarchyDef::Bands {
            widths: vec![10.0],
            range: None,
            pos: Pos::default(),
        },
    );
    let mut plan = Plan {
        entity: entity.to_string(),
        tables,
        dimensions: vec![],
        left_out: vec![],
        warnings: vec![],
        labels: vec![],
        hierarchies,
        params: Params {
            queries: 0,
            seed: Some(7),
            keys,
            ..Params::defaults(Model::Anatomy { l, variant, rules })
        },
        views: vec![],
        source: PathBuf::from("source.sqlite"),
        hierarchy_files: Vec::new(),
        target: None,
    };
    plan.labels = labels_of(&plan);
    plan
}

async fn verdict(plan: &Plan, src: &[Table], rel: &[Table], keys: Keys<'_>) -> Verdict {
    run_with(plan, src, rel, keys, None)
        .await
        .expect("verify runs")
}

fn names(v: &Verdict) -> Vec<&'static str> {
    v.checks.iter().map(|c| c.name).collect()
}

// ---------------------------------------------------------------------------------------
// Table 3.1: a key-less single table, l = 2, groups {1,2}, {3,4}, {5,6}.

fn people_plan(variant: Variant) -> Plan {
    let qi = || qi("any_h");
    anatomy_plan(
        "person",
        vec![family_table(
            "people",
            None,
            None,
            vec![],
            vec![
                col("age", qi()),
                col("sex", qi()),
                col("nationality", qi()),
                col("disease", sensitive()),
            ],
        )],
        2,
        variant,
        vec![],
        KeyPolicy::Pseudonymize,
    )
}

const PEOPLE: [(i64, &str, &str, &str); 6] = [
    (42, "M", "Ukrainian", "Hearth Disease"),
    (46, "M", "Romanian", "Flu"),
    (54, "F", "Turkish", "Bronchitis"),
    (51, "F", "Italian", "Dyspepsia"),
    (24, "M", "German", "Pneumonia"),
    (22, "F", "German", "Gastritis"),
];

/// Released group and slot ids of Table 3.1's three groups: opaque, in no order.
const PEOPLE_GROUPS: [(i64, i64); 3] = [(7, 40), (3, 10), (5, 20)];

fn people_source() -> Vec<Table> {
    vec![Table::new(
        "people",
        &[
            ("age", "INTEGER"),
            ("sex", "TEXT"),
            ("nationality", "TEXT"),
            ("disease", "TEXT"),
        ],
        PEOPLE
            .iter()
            .map(|&(a, s, n, d)| vec![i(a), t(s), t(n), t(d)])
            .collect(),
    )]
}

/// Table 3.1(c) with slots, and (d) as t-t trees or v-v counted groups, `diseases` giving
/// the SA side's values per person (Table 3.1's own when unchanged).
fn people_release(variant: Variant, diseases: [&'static str; 6]) -> Vec<Table> {
    let qi = Table::new(
        "people",
        &[
            ("age", "INTEGER"),
            ("sex", "TEXT"),
            ("nationality", "TEXT"),
            ("group_id", "INTEGER"),
            ("slot", "INTEGER"),
        ],
        PEOPLE
            .iter()
            .enumerate()
            .map(|(k, &(a, s, n, _))| {
                let (g, slot) = PEOPLE_GROUPS[k / 2];
                vec![i(a), t(s), t(n), i(g), i(slot)]
            })
            .collect(),
    );
    let sa = match variant {
        Variant::TreeTree => {
            let sa_ids = [4, 1, 6, 2, 5, 3];
            Table::new(
                "people__sa",
                &[
                    ("sa_id", "INTEGER"),
                    ("group_id", "INTEGER"),
                    ("slot", "INTEGER"),
                    ("disease", "TEXT"),
                ],
                (0..6)
                    .map(|k| {
                        let (g, slot) = PEOPLE_GROUPS[k / 2];
                        vec![i(sa_ids[k]), i(g), i(slot), t(diseases[k])]
                    })
                    .collect(),
            )
        }
        Variant::VertexVertex => Table::new(
            "people__sag",
            &[
                ("slot", "INTEGER"),
                ("disease", "TEXT"),
                ("count", "INTEGER"),
            ],
            (0..6)
                .map(|k| vec![i(PEOPLE_GROUPS[k / 2].1), t(diseases[k]), i(1)])
                .collect(),
        ),
    };
    vec![qi, sa]
}

fn table_3_1_diseases() -> [&'static str; 6] {
    PEOPLE.map(|p| p.3)
}

#[tokio::test]
async fn table_3_1_passes_in_both_variants() {
    for variant in [Variant::TreeTree, Variant::VertexVertex] {
        let rel = people_release(variant, table_3_1_diseases());
        let v = verdict(
            &people_plan(variant),
            &people_source(),
            &rel,
            Keys::Preserved,
        )
        .await;
        assert!(v.passed(), "{}:\n{}", variant.name(), v.summary());
        assert_eq!(names(&v), CHECKS);
        assert_eq!(
            (v.entities_released, v.equivalence_classes, v.smallest_ec),
            (6, 3, Some(2))
        );
    }
}

#[tokio::test]
async fn table_3_1_with_a_duplicate_value_in_a_group_fails() {
    // Group 1 publishes Hearth Disease twice and Flu not at all.
    let mut diseases = table_3_1_diseases();
    diseases[1] = "Hearth Disease";
    for variant in [Variant::TreeTree, Variant::VertexVertex] {
        let rel = people_release(variant, diseases);
        let v = verdict(
            &people_plan(variant),
            &people_source(),
            &rel,
            Keys::Preserved,
        )
        .await;
        assert_caught(
            &v,
            "l-diversity",
            &[
                "slot 40",
                "people.disease = 'Hearth Disease' is 2 of its 2 values",
            ],
        );
        assert!(
            !v.check("sa truthfulness").expect("ran").passed(),
            "{}",
            v.summary()
        );
        assert_passes(&v, "slots");
    }
}

// ---------------------------------------------------------------------------------------
// The hospital of Figs 3.1-3.4 (years invented where the thesis lost them).

fn hospital_plan(l: usize, variant: Variant, rules: Vec<AnatomyRule>, keyed: bool) -> Plan {
    let visit_key = keyed.then_some("vid");
    let mut visit_columns = vec![col("pid", ColumnRole::Key), col("year", qi("any_h"))];
    if keyed {
        visit_columns.insert(0, col("vid", ColumnRole::Key));
    }
    visit_columns.push(col("diagnosis", sensitive()));
    anatomy_plan(
        "patient",
        vec![
            family_table(
                "patients",
                Some("pid"),
                None,
                vec![1],
                vec![
                    col("pid", ColumnRole::Key),
                    col("age", qi("any_h")),
                    col("blood", sensitive()),
                ],
            ),
            family_table("visits", visit_key, Some((0, "pid")), vec![], visit_columns),
        ],
        l,
        variant,
        rules,
        KeyPolicy::Preserve,
    )
}

/// (vid, pid, year, diagnosis): A = 1 (47, 0+), B = 2 (46, AB-).
const VISITS: [(i64, i64, i64, &str); 7] = [
    (11, 1, 2005, "Alcohol P."),
    (12, 1, 2006, "Alcohol P."),
    (13, 1, 2007, "Diaria"),
    (21, 2, 2000, "AIDS"),
    (22, 2, 2006, "AIDS"),
    (23, 2, 2006, "Flu"),
    (24, 2, 2007, "Cold"),
];

/// Fig. 3.3's grouping: group 901; root slot 501 {0+, AB-}; 502 {A's Alcohol P. 2005, B's
/// AIDS 2000}; 503 {A's Alcohol P. 2006, B's Flu}; 504 {Diaria, Cold}; B's AIDS 2006 (22)
/// suppressed. (visit, slot, sa_id) of the kept visits.
const KEPT_VISITS: [(i64, i64, i64); 6] = [
    (11, 502, 3),
    (12, 503, 5),
    (13, 504, 1),
    (21, 502, 6),
    (23, 503, 2),
    (24, 504, 4),
];

fn visit(vid: i64) -> (i64, i64, i64, &'static str) {
    *VISITS
        .iter()
        .find(|v| v.0 == vid)
        .expect("the test names a visit")
}

fn visit_columns(keyed: bool) -> Vec<(&'static str, &'static str)> {
    let mut cols = vec![("pid", "INTEGER"), ("year", "INTEGER")];
    if keyed {
        cols.insert(0, ("vid", "INTEGER"));
    }
    cols
}

fn hospital_source(keyed: bool) -> Vec<Table> {
    let mut cols = visit_columns(keyed);
    cols.push(("diagnosis", "TEXT"));
    vec![
        Table::new(
            "patients",
            &[("pid", "INTEGER"), ("age", "INTEGER"), ("blood", "TEXT")],
            vec![vec![i(1), i(47), t("0+")], vec![i(2), i(46), t("AB-")]],
        ),
        Table::new(
            "visits",
            &cols,
            VISITS
                .iter()
                .map(|&(v, p, y, d)| {
                    let mut row = vec![i(p), i(y), t(d)];
                    if keyed {
                        row.insert(0, i(v));
                    }
                    row
                })
                .collect(),
        ),
    ]
}

/// The QI side of Fig. 3.3: exact QI values, `group_id` and `slot`, no SENSITIVE column.
fn hospital_qi(keyed: bool) -> Vec<Table> {
    let mut cols = visit_columns(keyed);
    cols.push(("slot", "INTEGER"));
    vec![
        Table::new(
            "patients",
            &[
                ("pid", "INTEGER"),
                ("age", "INTEGER"),
                ("group_id", "INTEGER"),
                ("slot", "INTEGER"),
            ],
            vec![
                vec![i(1), i(47), i(901), i(501)],
                vec![i(2), i(46), i(901), i(501)],
            ],
        ),
        Table::new(
            "visits",
            &cols,
            KEPT_VISITS
                .iter()
                .map(|&(vid, slot, _)| {
                    let (_, p, y, _) = visit(vid);
                    let mut row = vec![i(p), i(y), i(slot)];
                    if keyed {
                        row.insert(0, i(vid));
                    }
                    row
                })
                .collect(),
        ),
    ]
}

/// Fig. 3.3 (t-t): the SA-trees with fresh keys (A's root 7, B's 8).
fn hospital_tt(keyed: bool) -> Vec<Table> {
    let mut db = hospital_qi(keyed);
    db.push(Table::new(
        "patients__sa",
        &[
            ("sa_id", "INTEGER"),
            ("group_id", "INTEGER"),
            ("slot", "INTEGER"),
            ("blood", "TEXT"),
        ],
        vec![
            vec![i(7), i(901), i(501), t("0+")],
            vec![i(8), i(901), i(501), t("AB-")],
        ],
    ));
    db.push(Table::new(
        "visits__sa",
        &[
            ("sa_id", "INTEGER"),
            ("parent_sa_id", "INTEGER"),
            ("slot", "INTEGER"),
            ("diagnosis", "TEXT"),
        ],
        KEPT_VISITS
            .iter()
            .map(|&(vid, slot, sa_id)| {
                let (_, p, _, d) = visit(vid);
                vec![i(sa_id), i(if p == 1 { 7 } else { 8 }), i(slot), t(d)]
            })
            .collect(),
    ));
    db
}

/// Fig. 3.4 (v-v): the same grouping as counted SA-groups.
fn hospital_vv(keyed: bool) -> Vec<Table> {
    let mut db = hospital_qi(keyed);
    db.push(Table::new(
        "patients__sag",
        &[("slot", "INTEGER"), ("blood", "TEXT"), ("count", "INTEGER")],
        vec![vec![i(501), t("0+"), i(1)], vec![i(501), t("AB-"), i(1)]],
    ));
    let mut rows: Vec<Vec<Sql>> = KEPT_VISITS
        .iter()
        .map(|&(vid, slot, _)| vec![i(slot), t(visit(vid).3), i(1)])
        .collect();
    rows.sort_by_key(|r| format!("{:?}", r));
    db.push(Table::new(
        "visits__sag",
        &[
            ("slot", "INTEGER"),
            ("diagnosis", "TEXT"),
            ("count", "INTEGER"),
        ],
        rows,
    ));
    db
}

fn aids() -> AnatomyRule {
    rule("aids", "visits", "diagnosis", "AIDS", 1, "1/2")
}

fn alcohol(p: &str) -> AnatomyRule {
    rule("alcohol", "visits", "diagnosis", "Alcohol P.", 2, p)
}

#[tokio::test]
async fn fig_3_3_t_t_passes_its_rules() {
    let plan = hospital_plan(2, Variant::TreeTree, vec![aids(), alcohol("0.5")], true);
    let v = verdict(
        &plan,
        &hospital_source(true),
        &hospital_tt(true),
        Keys::Preserved,
    )
    .await;
    assert!(v.passed(), "{}", v.summary());
    assert_eq!(names(&v), CHECKS);
    assert_eq!(
        (v.entities_released, v.equivalence_classes, v.smallest_ec),
        (2, 1, Some(2))
    );
}

#[tokio::test]
async fn fig_3_3_t_t_breaks_alcohol_at_a_quarter() {
    // mu = 1 (A's tree holds Alcohol P. twice): 1/2 > 1/4.
    let plan = hospital_plan(2, Variant::TreeTree, vec![aids(), alcohol("1/4")], true);
    let v = verdict(
        &plan,
        &hospital_source(true),
        &hospital_tt(true),
        Keys::Preserved,
    )
    .await;
    assert_eq!(failing(&v), ["(p,m)-privacy"], "{}", v.summary());
    assert_caught(
        &v,
        "(p,m)-privacy",
        &[
            "rule 'alcohol'",
            "'Alcohol P.'",
            "group 901",
            "mu/|G| = 1/2 > p",
        ],
    );
}

#[tokio::test]
async fn fig_3_4_v_v_passes_at_the_exact_boundary() {
    // Alcohol P. is in 2 SA-groups: Pr[Bin(2, 1/2) >= 2] = 1/4 <= 1/4, exactly.
    let plan = hospital_plan(2, Variant::VertexVertex, vec![aids(), alcohol("1/4")], true);
    let v = verdict(
        &plan,
        &hospital_source(true),
        &hospital_vv(true),
        Keys::Preserved,
    )
    .await;
    assert!(v.passed(), "{}", v.summary());
    // A hair below the boundary it breaks.
    let plan = hospital_plan(2, Variant::VertexVertex, vec![alcohol("0.2499")], true);
    let v = verdict(
        &plan,
        &hospital_source(true),
        &hospital_vv(true),
        Keys::Preserved,
    )
    .await;
    assert_caught(
        &v,
        "(p,m)-privacy",
        &["in 2 of its SA-groups", "0.2500 > p"],
    );
}

#[tokio::test]
async fn a19_t_t_and_v_v_privacy_are_incomparable() {
    // A holds s at two slots, B at none; rule (s, 1, 1/2), l = 2.
    let source = vec![
        Table::new(
            "patients",
            &[("pid", "INTEGER"), ("age", "INTEGER"), ("blood", "TEXT")],
            vec![vec![i(1), i(47), t("0+")], vec![i(2), i(46), t("AB-")]],
        ),
        Table::new(
            "visits",
            &[
                ("vid", "INTEGER"),
                ("pid", "INTEGER"),
                ("year", "INTEGER"),
                ("diagnosis", "TEXT"),
            ],
            vec![
                vec![i(11), i(1), i(2001), t("s")],
                vec![i(12), i(1), i(2002), t("s")],
                vec![i(21), i(2), i(2001), t("x")],
                vec![i(22), i(2), i(2002), t("y")],
            ],
        ),
    ];
    let mut qi = hospital_qi(true);
    table(&mut qi, "visits").rows = vec![
        vec![i(11), i(1), i(2001), i(502)],
        vec![i(12), i(1), i(2002), i(503)],
        vec![i(21), i(2), i(2001), i(502)],
        vec![i(22), i(2), i(2002), i(503)],
    ];
    let mut tt = qi.clone();
    tt.extend(hospital_tt(true).into_iter().skip(2));
    table(&mut tt, "visits__sa").rows = vec![
        vec![i(4), i(7), i(502), t("s")],
        vec![i(1), i(7), i(503), t("s")],
        vec![i(3), i(8), i(502), t("x")],
        vec![i(2), i(8), i(503), t("y")],
    ];
    let mut vv = qi;
    vv.extend(hospital_vv(true).into_iter().skip(2));
    table(&mut vv, "visits__sag").rows = vec![
        vec![i(502), t("s"), i(1)],
        vec![i(502), t("x"), i(1)],
        vec![i(503), t("s"), i(1)],
        vec![i(503), t("y"), i(1)],
    ];
    let s_rule = || vec![rule("s", "visits", "diagnosis", "s", 1, "1/2")];

    // t-t: mu = 1 tree of 2, 1/2 <= 1/2.
    let plan = hospital_plan(2, Variant::TreeTree, s_rule(), true);
    let v = verdict(&plan, &source, &tt, Keys::Preserved).await;
    assert!(v.passed(), "{}", v.summary());
    // v-v: eta = 2, Pr[Bin(2, 1/2) >= 1] = 3/4 > 1/2.
    let plan = hospital_plan(2, Variant::VertexVertex, s_rule(), true);
    let v = verdict(&plan, &source, &vv, Keys::Preserved).await;
    assert_eq!(failing(&v), ["(p,m)-privacy"], "{}", v.summary());
    assert_caught(&v, "(p,m)-privacy", &["rule 's'", "0.7500 > p"]);

    // And the converse (Fig. 3.3 / 3.4 under (Alcohol P., 2, 1/4)): v-v passes, t-t fails.
    let rules = || vec![aids(), alcohol("1/4")];
    let plan = hospital_plan(2, Variant::VertexVertex, rules(), true);
    let v = verdict(
        &plan,
        &hospital_source(true),
        &hospital_vv(true),
        Keys::Preserved,
    )
    .await;
    assert!(v.passed(), "{}", v.summary());
    let plan = hospital_plan(2, Variant::TreeTree, rules(), true);
    let v = verdict(
        &plan,
        &hospital_source(true),
        &hospital_tt(true),
        Keys::Preserved,
    )
    .await;
    assert_eq!(failing(&v), ["(p,m)-privacy"], "{}", v.summary());
}

#[tokio::test]
async fn a_rule_on_every_value_is_one_rule_per_value() {
    // Every diagnosis at m = 2, p = 1/4: only Alcohol P. is held twice by one tree.
    let mut every = alcohol("1/4");
    every.name = "any".to_string();
    every.value = RuleValue::Every;
    let plan = hospital_plan(2, Variant::TreeTree, vec![every], true);
    let v = verdict(
        &plan,
        &hospital_source(true),
        &hospital_tt(true),
        Keys::Preserved,
    )
    .await;
    let check = v.check("(p,m)-privacy").expect("ran");
    assert_eq!(check.violation_count, 1, "{}", v.summary());
    assert_caught(&v, "(p,m)-privacy", &["rule 'any'", "'Alcohol P.'"]);
}

#[tokio::test]
async fn key_less_siblings_are_paired_as_the_sa_side_says() {
    // Without visit keys, B's kept 2006 visit may stand for AIDS 2006 or Flu 2006: the QI side
    // cannot tell them apart, and the SA side's Flu at slot 503 is a true pairing.
    let rules = || vec![aids(), alcohol("1/2")];
    for (variant, rel) in [
        (Variant::TreeTree, hospital_tt(false)),
        (Variant::VertexVertex, hospital_vv(false)),
    ] {
        let plan = hospital_plan(2, variant, rules(), false);
        let v = verdict(&plan, &hospital_source(false), &rel, Keys::Preserved).await;
        assert!(v.passed(), "{}:\n{}", variant.name(), v.summary());
    }
    // A value the source never held there is still caught.
    let mut rel = hospital_vv(false);
    for row in &mut table(&mut rel, "visits__sag").rows {
        if row[1] == t("Flu") {
            row[1] = t("Cold");
        }
    }
    let plan = hospital_plan(2, Variant::VertexVertex, rules(), false);
    let v = verdict(&plan, &hospital_source(false), &rel, Keys::Preserved).await;
    assert_caught(
        &v,
        "sa truthfulness",
        &["slot 503", "publishes {'Alcohol P.', 'Cold'}"],
    );
}

#[tokio::test]
async fn columns_on_the_wrong_side_are_caught() {
    let mut rel = hospital_tt(true);
    let visits = table(&mut rel, "visits");
    visits.columns.insert(3, ("diagnosis", "TEXT"));
    for row in &mut visits.rows {
        let Sql::Integer(vid) = row[0] else {
            panic!("visit keys are integers")
        };
        row.insert(3, t(visit(vid).3));
    }
    let plan = hospital_plan(2, Variant::TreeTree, vec![aids()], true);
    let v = verdict(&plan, &hospital_source(true), &rel, Keys::Preserved).await;
    assert_caught(
        &v,
        "schema",
        &["visits.diagnosis is released but is not a column"],
    );
    assert_caught(
        &v,
        "declared roles",
        &["visits.diagnosis is declared SENSITIVE", "SA side only"],
    );

    // A QI value beside the sensitive ones re-links them.
    let mut rel = hospital_tt(true);
    let sa = table(&mut rel, "patients__sa");
    sa.columns.push(("age", "INTEGER"));
    for (row, age) in sa.rows.iter_mut().zip([47, 46]) {
        row.push(i(age));
    }
    let v = verdict(&plan, &hospital_source(true), &rel, Keys::Preserved).await;
    assert_passes(&v, "schema");
    assert_caught(
        &v,
        "sa side",
        &["patients__sa.age is a QI column of patients"],
    );
    assert_caught(
        &v,
        "declared roles",
        &[
            "patients__sa.age is published on the SA side",
            "QUASI IDENTIFIER",
        ],
    );
}

#[tokio::test]
async fn a_slot_holding_rows_of_two_tables_is_caught() {
    // B's Cold visit sits at the root slot, beside A's and B's patient rows.
    let mut rel = hospital_tt(true);
    set(&mut rel, "visits", i(24), "slot", i(501));
    set(&mut rel, "visits__sa", i(4), "slot", i(501));
    let plan = hospital_plan(2, Variant::TreeTree, vec![], true);
    let v = verdict(&plan, &hospital_source(true), &rel, Keys::Preserved).await;
    assert_caught(
        &v,
        "slots",
        &["slot 501 holds rows of patients and of visits"],
    );
    assert_caught(&v, "slots", &["patients key 2", "no row at slot 504"]);
    assert_caught(
        &v,
        "sa side",
        &["slot 501 is a slot of patients, not of visits"],
    );
}

#[tokio::test]
async fn a_qi_tree_missing_a_slot_is_caught() {
    // B's Cold visit (slot 504) is left out on both sides.
    let mut rel = hospital_tt(true);
    table(&mut rel, "visits").rows.retain(|r| r[0] != i(24));
    table(&mut rel, "visits__sa").rows.retain(|r| r[0] != i(4));
    let plan = hospital_plan(2, Variant::TreeTree, vec![], true);
    let v = verdict(&plan, &hospital_source(true), &rel, Keys::Preserved).await;
    assert_caught(
        &v,
        "slots",
        &["patients key 2 (group 901) has no row at slot 504 (visits)"],
    );
    assert_caught(&v, "sa side", &["has 0 rows at slot 504"]);
}

#[tokio::test]
async fn groups_smaller_than_l_and_sa_sides_of_the_other_variant_are_caught() {
    let mut rel = hospital_tt(true);
    rel.push(Table::new(
        "patients__sag",
        &[("slot", "INTEGER"), ("blood", "TEXT"), ("count", "INTEGER")],
        vec![vec![i(501), t("0+"), i(1)]],
    ));
    let plan = hospital_plan(3, Variant::TreeTree, vec![], true);
    let v = verdict(&plan, &hospital_source(true), &rel, Keys::Preserved).await;
    assert_passes(&v, "schema");
    assert_caught(
        &v,
        "slots",
        &["group 901 has 2 member(s), fewer than l = 3"],
    );
    assert_caught(
        &v,
        "sa side",
        &["patients__sag is not part of a t-t release"],
    );
    assert_caught(
        &v,
        "l-diversity",
        &["is 1 of its 2 values; l = 3 allows at most 0"],
    );
}

#[tokio::test]
async fn v_v_counts_that_do_not_add_up_are_caught() {
    let mut rel = hospital_vv(true);
    for row in &mut table(&mut rel, "visits__sag").rows {
        if row[1] == t("Cold") {
            row[2] = i(2);
        }
    }
    let plan = hospital_plan(2, Variant::VertexVertex, vec![], true);
    let v = verdict(&plan, &hospital_source(true), &rel, Keys::Preserved).await;
    assert_caught(
        &v,
        "sa side",
        &["slot 504 (visits, group 901): the counts in visits__sag sum to 3"],
    );
    assert_caught(
        &v,
        "sa side",
        &["visits__sag's counts sum to 7 but visits has 6 rows"],
    );
    assert_caught(&v, "sa truthfulness", &["slot 504", "'Cold' x2"]);
}

#[tokio::test]
async fn an_sa_tree_that_is_no_members_tree_is_caught() {
    // The two Alcohol P. rows swap trees with B's AIDS and Flu: every slot's multiset is
    // unchanged, but neither SA-tree is a member's.
    let mut rel = hospital_tt(true);
    set(&mut rel, "visits__sa", i(3), "parent_sa_id", i(8));
    set(&mut rel, "visits__sa", i(5), "parent_sa_id", i(8));
    set(&mut rel, "visits__sa", i(6), "parent_sa_id", i(7));
    set(&mut rel, "visits__sa", i(2), "parent_sa_id", i(7));
    let plan = hospital_plan(2, Variant::TreeTree, vec![], true);
    let v = verdict(&plan, &hospital_source(true), &rel, Keys::Preserved).await;
    assert_eq!(failing(&v), ["sa truthfulness"], "{}", v.summary());
    assert_caught(
        &v,
        "sa truthfulness",
        &["group 901: 2 member(s) have no SA-tree", "2 SA-tree(s)"],
    );
}

// ---------------------------------------------------------------------------------------
// Unlinkability: a keyed single table, keys pseudonymized through a key map.

/// `n` patients in groups of `l` (consecutive source keys), each group's diagnoses distinct;
/// released keys `released(k)` and SA keys `sa(k)` for source key k = 1..=n.
fn linked(
    n: i64,
    l: i64,
    released: impl Fn(i64) -> i64,
    sa: impl Fn(i64) -> i64,
) -> (Plan, Vec<Table>, Vec<Table>, KeyMap) {
    let plan = anatomy_plan(
        "patient",
        vec![family_table(
            "patients",
            Some("pid"),
            None,
            vec![],
            vec![
                col("pid", ColumnRole::Key),
                col("age", qi("any_h")),
                col("diagnosis", sensitive()),
            ],
        )],
        l as usize,
        Variant::TreeTree,
        vec![],
        KeyPolicy::Pseudonymize,
    );
    let group = |k: i64| (k - 1) / l;
    let diagnosis = |k: i64| t(&format!("d{}", (k - 1) % l));
    let src = vec![Table::new(
        "patients",
        &[
            ("pid", "INTEGER"),
            ("age", "INTEGER"),
            ("diagnosis", "TEXT"),
        ],
        (1..=n)
            .map(|k| vec![i(k), i(20 + k), diagnosis(k)])
            .collect(),
    )];
    let rel = vec![
        Table::new(
            "patients",
            &[
                ("pid", "INTEGER"),
                ("age", "INTEGER"),
                ("group_id", "INTEGER"),
                ("slot", "INTEGER"),
            ],
            (1..=n)
                .map(|k| {
                    vec![
                        i(released(k)),
                        i(20 + k),
                        i(500 + group(k)),
                        i(9000 + group(k)),
                    ]
                })
                .collect(),
        ),
        Table::new(
            "patients__sa",
            &[
                ("sa_id", "INTEGER"),
                ("group_id", "INTEGER"),
                ("slot", "INTEGER"),
                ("diagnosis", "TEXT"),
            ],
            (1..=n)
                .map(|k| {
                    vec![
                        i(sa(k)),
                        i(500 + group(k)),
                        i(9000 + group(k)),
                        diagnosis(k),
                    ]
                })
                .collect(),
        ),
    ];
    let mut map = KeyMap::default();
    map.tables.insert(
        "patients".to_string(),
        TableKeys::from_pairs(
            vec!["pid".to_string()],
            vec![],
            (1..=n).map(|k| KeyPair {
                source: vec![KeyValue::Int(k)],
                released: vec![KeyValue::Int(released(k))],
                group: None,
            }),
        )
        .expect("one-column keys"),
    );
    (plan, src, rel, map)
}

#[tokio::test]
async fn sa_keys_equal_to_qi_keys_are_caught() {
    let released = |k: i64| (k * 7) % 12 + 1;
    let (plan, src, rel, map) = linked(12, 2, released, released);
    let v = verdict(&plan, &src, &rel, Keys::Map(&map)).await;
    assert_eq!(failing(&v), ["unlinkability"], "{}", v.summary());
    assert_caught(
        &v,
        "unlinkability",
        &["patients__sa: 12 of 12 rows have an sa_id equal to the released key"],
    );
    // Keys drawn apart pass (two rows agree by chance).
    let (plan, src, rel, map) = linked(12, 2, released, |k| (k * 5) % 12 + 1);
    let v = verdict(&plan, &src, &rel, Keys::Map(&map)).await;
    assert!(v.passed(), "{}", v.summary());
    assert_eq!(names(&v).last(), Some(&"unlinkability"));
}

#[tokio::test]
async fn sa_keys_in_the_order_of_qi_keys_are_caught() {
    // SA keys differ from QI keys but follow their order in all 10 groups of 3 (chance: 1/6).
    let released = |k: i64| (k * 7) % 30 + 1;
    let (plan, src, rel, map) = linked(30, 3, released, |k| released(k) + 100);
    let v = verdict(&plan, &src, &rel, Keys::Map(&map)).await;
    assert_eq!(failing(&v), ["unlinkability"], "{}", v.summary());
    assert_caught(
        &v,
        "unlinkability",
        &["in 10 of 10 groups the SA-trees' keys are in the order"],
    );
}
