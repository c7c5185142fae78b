//! Unit tests of the planner's steps on small CSV warehouses: the family's placement and
//! its refusals, the released keys, the shared parameters, the anatomy check and roles.

use super::error::PlanError;
use super::{build, family, family_members, params, AnatomyRule, ColumnRole};
use super::{Diversity, KeyPolicy, Model, OrphanPolicy, ReleasedKey, Variant};
use crate::fraction::Fraction;
use crate::policy::Policy;
use crate::warehouse::Warehouse;

/// A warehouse of CSV tables `(name, header and rows)` in a temporary directory (kept alive
/// by the returned guard), with the keys the `ALTER TABLE` declarations in `keys` declare,
/// declared the planner's own way.
async fn warehouse(tables: &[(&str, &str)], keys: &str) -> (tempfile::TempDir, Warehouse) {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, csv) in tables {
        std::fs::write(dir.path().join(format!("{name}.csv")), csv).expect("write csv");
    }
    let mut wh = Warehouse::open(dir.path())
        .await
        .expect("open the warehouse");
    let policy = crate::decl::parse(keys).expect("key declarations parse");
    super::keys::declare_keys(&policy, &mut wh).expect("keys declared");
    (dir, wh)
}

fn names(tables: &[super::FamilyTable]) -> Vec<&str> {
    tables.iter().map(|t| t.name.as_str()).collect()
}

/// The `PlanError::Fk` a refused family carries, or a panic naming what came instead.
fn bad_fk(result: Result<Vec<super::FamilyTable>, PlanError>) -> Box<super::error::BadFk> {
    match result {
        Err(PlanError::Fk(bad)) => bad,
        Err(other) => panic!("expected a foreign key to set aside, got: {other}"),
        Ok(tables) => panic!("expected a refusal, got the family {:?}", names(&tables)),
    }
}

const CLINIC_KEYS: &str = "ALTER TABLE persons ADD PRIMARY KEY (id);
    ALTER TABLE visits ADD PRIMARY KEY (vid);
    ALTER TABLE visits ADD FOREIGN KEY (pid) REFERENCES persons (id);
    ALTER TABLE notes ADD PRIMARY KEY (nid);
    ALTER TABLE notes ADD FOREIGN KEY (vid) REFERENCES visits (vid);";

async fn clinic() -> (tempfile::TempDir, Warehouse) {
    warehouse(
        &[
            ("persons", "id,age,zip\n1,30,100\n2,40,200\n"),
            (
                "visits",
                "vid,pid,diagnosis,count\n10,1,flu,1\n11,2,cold,2\n",
            ),
            ("notes", "nid,vid,body\n100,10,x\n"),
            ("wards", "wid,name\n1,A\n"),
        ],
        CLINIC_KEYS,
    )
    .await
}

#[tokio::test]
async fn a_snowflake_is_placed_parents_first_each_table_under_one_parent() {
    let (_dir, wh) = clinic().await;
    assert_eq!(
        family_members(&wh, "persons")
            .into_iter()
            .collect::<Vec<_>>(),
        ["notes", "persons", "visits"],
        "wards has no FK chain to persons"
    );
    let tables = family(&wh, "persons").expect("a snowflake");
    assert_eq!(names(&tables), ["persons", "visits", "notes"]);
    let parents: Vec<Option<usize>> = tables.iter().map(|t| t.parent).collect();
    assert_eq!(parents, [None, Some(0), Some(1)]);
    let children: Vec<&[usize]> = tables.iter().map(|t| t.children.as_slice()).collect();
    assert_eq!(children, [&[1][..], &[2], &[]]);
    assert_eq!(tables[2].parent_fk, ["vid"]);
    assert_eq!(tables[2].parent_key, ["vid"]);
    let keys: Vec<&ReleasedKey> = tables.iter().map(|t| &t.key).collect();
    assert_eq!(
        keys,
        [
            &ReleasedKey::Own("id".into()),
            &ReleasedKey::Own("vid".into()),
            &ReleasedKey::Own("nid".into())
        ]
    );
    // Released in place: the parent's key is released as it is.
    assert_eq!(tables[2].released_fk, ["vid"]);
    assert!(!tables[2].fk_replaced());
}

#[tokio::test]
async fn a_shortcut_to_an_ancestor_is_a_second_path_and_its_null_rows_a_second_entry() {
    let (_dir, wh) = warehouse(
        &[
            ("customers", "cid\n1\n"),
            ("rentals", "rid,cid\n5,1\n"),
            ("payments", "pay,rid,cid\n9,5,1\n"),
        ],
        "ALTER TABLE customers ADD PRIMARY KEY (cid);
         ALTER TABLE rentals ADD PRIMARY KEY (rid);
         ALTER TABLE rentals ADD FOREIGN KEY (cid) REFERENCES customers (cid);
         ALTER TABLE payments ADD PRIMARY KEY (pay);
         ALTER TABLE payments ADD FOREIGN KEY (rid) REFERENCES rentals (rid);
         ALTER TABLE payments ADD FOREIGN KEY (cid) REFERENCES customers (cid);",
    )
    .await;
    let tables = family(&wh, "customers").expect("a snowflake with a shortcut");
    assert_eq!(
        names(&tables),
        ["customers", "rentals", "payments", "payments"]
    );
    let main = &tables[2];
    assert_eq!(
        main.parent,
        Some(1),
        "under the deepest table it references"
    );
    assert_eq!(main.parent_fk, ["rid"]);
    assert_eq!(main.redundant.len(), 1);
    assert_eq!(main.redundant[0].columns, ["cid"]);
    assert_eq!(main.redundant[0].ancestor, 0);
    assert!(main.is_join_key("cid") && main.is_join_key("rid") && main.is_join_key("pay"));
    let part = main.part.as_ref().expect("the main entry is split");
    assert!(!part.null_side);
    assert_eq!(part.other, 3);
    let second = &tables[3];
    assert_eq!(
        second.parent,
        Some(0),
        "the rows whose rid is NULL hang at customers"
    );
    let part = second.part.as_ref().expect("the second entry is split");
    assert!(part.null_side);
    assert_eq!(part.other, 2);
    assert_eq!(part.split_source, ["rid"]);
    assert_eq!(part.split_released, ["rid"]);
    assert_eq!(tables[0].children, [1, 3]);
    assert_eq!(part.sql_filter("p"), "(p.\"rid\" IS NULL)");
}

#[tokio::test]
async fn a_cycle_among_family_tables_is_refused_naming_a_key_to_set_aside() {
    let (_dir, wh) = warehouse(
        &[
            ("r", "id\n1\n"),
            ("a", "id,rid,bid\n1,1,1\n"),
            ("b", "id,aid\n1,1\n"),
        ],
        "ALTER TABLE r ADD PRIMARY KEY (id);
         ALTER TABLE a ADD PRIMARY KEY (id);
         ALTER TABLE b ADD PRIMARY KEY (id);
         ALTER TABLE a ADD FOREIGN KEY (rid) REFERENCES r (id);
         ALTER TABLE a ADD FOREIGN KEY (bid) REFERENCES b (id);
         ALTER TABLE b ADD FOREIGN KEY (aid) REFERENCES a (id);",
    )
    .await;
    let bad = bad_fk(family(&wh, "r"));
    assert_eq!(bad.why, "the foreign keys among a, b form a cycle");
    assert_eq!(bad.table, "a");
    assert_eq!(bad.fk.columns, ["bid"], "a's FK to the table not placed");
    assert!(
        bad.message
            .contains("set the other aside with ALTER TABLE \"a\" DROP FOREIGN KEY"),
        "{}",
        bad.message
    );
}

#[tokio::test]
async fn two_paths_that_need_not_meet_are_refused() {
    // Two FKs into one parent may name two rows of it.
    let (_dir, wh) = warehouse(
        &[("r", "id\n1\n"), ("t", "id,x,y\n1,1,1\n")],
        "ALTER TABLE r ADD PRIMARY KEY (id);
         ALTER TABLE t ADD PRIMARY KEY (id);
         ALTER TABLE t ADD FOREIGN KEY (x) REFERENCES r (id);
         ALTER TABLE t ADD FOREIGN KEY (y) REFERENCES r (id);",
    )
    .await;
    let bad = bad_fk(family(&wh, "r"));
    assert_eq!(bad.table, "t");
    assert!(
        bad.why.starts_with("table t has two foreign keys into r"),
        "{}",
        bad.why
    );
    // The entity table pointing into its own family closes a loop through it.
    let (_dir, wh) = warehouse(
        &[("r", "id,cid\n1,1\n"), ("c", "id,rid\n1,1\n")],
        "ALTER TABLE r ADD PRIMARY KEY (id);
         ALTER TABLE c ADD PRIMARY KEY (id);
         ALTER TABLE c ADD FOREIGN KEY (rid) REFERENCES r (id);
         ALTER TABLE r ADD FOREIGN KEY (cid) REFERENCES c (id);",
    )
    .await;
    let bad = bad_fk(family(&wh, "r"));
    assert_eq!(
        bad.why,
        "the entity table r has a foreign key (cid) into its own family (c)"
    );
}

#[tokio::test]
async fn a_foreign_key_to_columns_other_than_the_primary_key_is_refused() {
    let (_dir, wh) = warehouse(
        &[("r", "id,code\n1,a\n"), ("c", "id,rcode\n1,a\n")],
        "ALTER TABLE r ADD PRIMARY KEY (id);
         ALTER TABLE c ADD PRIMARY KEY (id);
         ALTER TABLE c ADD FOREIGN KEY (rcode) REFERENCES r (code);",
    )
    .await;
    let bad = bad_fk(family(&wh, "r"));
    assert_eq!(
        bad.message,
        "c(rcode) references r(code), which is not its primary key (id); reference the primary key"
    );
    assert_eq!(bad.fk.columns, ["rcode"]);
}

#[tokio::test]
async fn keys_are_released_as_the_parents_own_or_a_surrogate_named_apart() {
    let (_dir, wh) = warehouse(
        &[
            ("r", "id\n1\n"),
            ("s", "rid,x\n1,2\n"),
            ("e", "rid,course,e_key\n1,m,3\n"),
            ("f", "fid,rid,course\n1,1,m\n"),
        ],
        "ALTER TABLE r ADD PRIMARY KEY (id);
         ALTER TABLE s ADD PRIMARY KEY (rid);
         ALTER TABLE s ADD FOREIGN KEY (rid) REFERENCES r (id);
         ALTER TABLE e ADD PRIMARY KEY (rid, course);
         ALTER TABLE e ADD FOREIGN KEY (rid) REFERENCES r (id);
         ALTER TABLE f ADD PRIMARY KEY (fid);
         ALTER TABLE f ADD FOREIGN KEY (rid, course) REFERENCES e (rid, course);",
    )
    .await;
    let tables = family(&wh, "r").expect("a snowflake");
    // One round places e and s under r, in the source's table order; f waits for e.
    assert_eq!(names(&tables), ["r", "e", "s", "f"]);
    let (e, s, f) = (&tables[1], &tables[2], &tables[3]);
    assert_eq!(s.key, ReleasedKey::Parent, "a shared primary key");
    assert_eq!(s.released_pk(), ["rid"]);
    // e's key holds the data column course; `e_key` is taken, so the surrogate steps aside.
    assert_eq!(e.key, ReleasedKey::Surrogate("e_key_".into()));
    assert!(e.is_join_key("rid") && !e.is_join_key("course"));
    assert_eq!(f.released_fk, ["e_key_"]);
    assert_eq!(f.released_parent_key, ["e_key_"]);
    assert!(f.fk_replaced());
    assert_eq!(f.released_columns(), ["fid", "e_key_"]);
}

/// The shared parameters of `ANONYMIZE p WITH (<options>)` after `SET`s `sets`.
fn params_of(sets: &str, options: &str) -> Result<super::Params, PlanError> {
    let text = format!("{sets} CREATE ENTITY p ON persons (id); ANONYMIZE p WITH ({options});");
    let policy: Policy = crate::decl::parse(&text).expect("declarations parse");
    let entity = policy.entity.as_ref().expect("an entity");
    params::params(&policy, entity)
}

fn refusal(sets: &str, options: &str) -> String {
    match params_of(sets, options) {
        Ok(p) => panic!("({options}) accepted as {:?}", p.model),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_model_follows_from_the_options_given() {
    let model = |options| params_of("", options).expect("accepted").model;
    assert_eq!(model("k = 4"), Model::KAnonymity { k: 4 });
    assert_eq!(
        model("l = 3"),
        Model::LDiversity {
            l: 3,
            diversity: Diversity::Probabilistic
        }
    );
    assert_eq!(
        model("model = 'L-Diversity', l = 2, diversity = 'distinct'"),
        Model::LDiversity {
            l: 2,
            diversity: Diversity::Distinct
        }
    );
    assert_eq!(
        model("model = 'anatomy', l = 2"),
        Model::Anatomy {
            l: 2,
            variant: Variant::TreeTree,
            rules: Vec::new()
        }
    );
    assert_eq!(
        model("variant = 'v-v', l = 5, model = 'anatomy'"),
        Model::Anatomy {
            l: 5,
            variant: Variant::VertexVertex,
            rules: Vec::new()
        }
    );
}

#[test]
fn model_options_that_contradict_each_other_are_refused_with_the_fix() {
    for (options, says) in [
        (
            "model = 'anatomy'",
            "anatomy needs l; write ANONYMIZE p WITH (model = 'anatomy', l = 3, variant = 't-t')",
        ),
        ("model = 'anatomy', l = 1", "anatomy needs l >= 2"),
        (
            "model = 'anatomy', l = 2, diversity = 'distinct'",
            "diversity belongs to l-diversity",
        ),
        (
            "k = 5, variant = 'v-v'",
            "variant belongs to anatomy; write model = 'anatomy' or remove it",
        ),
        (
            "model = 'l-diversity', k = 5, l = 2",
            "k belongs to k-anonymity",
        ),
        (
            "k = 2, l = 3",
            "l belongs to l-diversity; write model = 'l-diversity' or use k for k-anonymity",
        ),
        (
            "model = 'l-diversity'",
            "l-diversity needs l; write ANONYMIZE p WITH (model = 'l-diversity', l = 3, ...)",
        ),
        (
            "model = 'k-map'",
            "unknown model 'k-map'; use model = 'k-anonymity', 'l-diversity' or 'anatomy'",
        ),
        (
            "model = 'anatomy', l = 2, variant = 'q'",
            "variant must be 't-t'",
        ),
        (
            "l = 2, diversity = 'entropy'",
            "diversity must be 'probabilistic' or 'distinct', found 'entropy'",
        ),
        (
            "k = 0",
            "k must be a number between 1 and 1000000000, found 0",
        ),
        ("l = 2.5", "l must be a whole number, found 2.5"),
    ] {
        let message = refusal("", options);
        assert!(message.contains(says), "({options}): {message}");
    }
}

#[test]
fn run_options_are_read_and_the_rest_go_to_the_algorithm_as_written() {
    let p = params_of(
        "SET keys = 'Preserve'; SET zeta = 'x';",
        "k = 2, seed = 7, queries = 0, query_seed = 3, orphans = 'drop', algorithm = 'MIRACLE', climit = 150",
    )
    .expect("accepted");
    assert_eq!(p.keys, KeyPolicy::Preserve);
    assert_eq!(p.orphans, OrphanPolicy::Drop);
    assert_eq!((p.seed, p.queries, p.query_seed), (Some(7), 0, 3));
    assert_eq!(
        p.algorithm.name.as_ref().map(|(n, _)| n.as_str()),
        Some("miracle")
    );
    // `SET` first, then the options of ANONYMIZE.
    let raw: Vec<&str> = p
        .algorithm
        .options
        .iter()
        .map(|o| o.name.as_str())
        .collect();
    assert_eq!(raw, ["zeta", "climit"]);
    assert!(super::SHARED_OPTIONS.iter().all(|o| !raw.contains(o)));
}

#[test]
fn bad_run_options_are_refused_naming_what_to_write() {
    for (options, says) in [
        (
            "k = 2, queries = 2.5",
            "queries must be a whole number, found 2.5",
        ),
        (
            "k = 2, seed = 'x'",
            "seed must be a number between 0 and 9000000000000000, found 'x'",
        ),
        (
            "k = 2, keys = 'raw'",
            "keys must be 'pseudonymize' or 'preserve', found 'raw'",
        ),
        (
            "k = 2, orphans = 'keep'",
            "orphans must be 'refuse' or 'drop', found 'keep'",
        ),
    ] {
        let message = refusal("", options);
        assert!(message.contains(says), "({options}): {message}");
    }
    let policy = crate::decl::parse("CREATE ENTITY p ON persons (id); ANONYMIZE q WITH (k = 2);")
        .expect("declarations parse");
    let entity = policy.entity.as_ref().expect("an entity");
    let message = params::params(&policy, entity)
        .expect_err("another entity")
        .to_string();
    assert!(
        message
            .ends_with("ANONYMIZE names 'q' but the entity is 'p'; write ANONYMIZE p WITH (...)"),
        "{message}"
    );
}

/// The clinic's declarations: `persons.zip`, `visits.diagnosis` and `visits.count` with the
/// roles given, then `more` (rules, views, labels) and `ANONYMIZE person WITH (<options>)`.
fn clinic_policy(roles: [&str; 3], more: &str, options: &str) -> Policy {
    let [zip, diagnosis, count] = roles;
    let text = format!(
        "SET source = 'clinic';
         {CLINIC_KEYS}
         CREATE HIERARCHY age_h AS VALUES ('30', '3*'), ('40', '4*');
         CREATE ENTITY person ON persons (id);
         LABEL COLUMN persons.age AS QUASI IDENTIFIER USING age_h;
         LABEL COLUMN persons.zip AS {zip};
         LABEL COLUMN visits.diagnosis AS {diagnosis};
         LABEL COLUMN visits.count AS {count};
         LABEL TABLE notes DEFAULT INSENSITIVE;
         {more}
         ANONYMIZE person WITH ({options});"
    );
    crate::decl::parse(&text).expect("declarations parse")
}

/// The plan of `policy` on a fresh clinic warehouse.
async fn plan_clinic(policy: &Policy) -> Result<super::Plan, PlanError> {
    let (dir, mut wh) = clinic().await;
    build(policy, &mut wh, dir.path()).await
}

#[tokio::test]
async fn anatomy_resolves_its_rules_to_sensitive_columns_and_says_what_it_ignores() {
    let policy = clinic_policy(
        ["INSENSITIVE", "SENSITIVE", "INSENSITIVE"],
        "CREATE RULE flu ON visits.Diagnosis = 'flu' WITH (m = 2, p = 1);",
        "model = 'anatomy', l = 2, k = 3",
    );
    let plan = plan_clinic(&policy).await.expect("a plan");
    let Model::Anatomy { rules, .. } = &plan.params.model else {
        panic!("not anatomy: {:?}", plan.params.model);
    };
    let expected = AnatomyRule {
        name: "flu".into(),
        table: "visits".into(),
        column: "diagnosis".into(),
        value: policy.rules[0].value.clone(),
        m: 2,
        p: Fraction::from_decimal("1").expect("a fraction"),
    };
    assert_eq!(rules, &[expected]);
    let warned = |what: &str| plan.warnings.iter().any(|w| w.contains(what));
    assert!(warned(
        "k is not used by anatomy (groups hold l = 2 entities each)"
    ));
    assert!(warned("rule 'flu' has p = 1, which any release meets"));
    // Another model does not use rules, and says so.
    let policy = clinic_policy(
        ["INSENSITIVE", "SENSITIVE", "INSENSITIVE"],
        "CREATE RULE flu ON visits.diagnosis = 'flu' WITH (m = 1, p = 0.5);",
        "k = 2",
    );
    let plan = plan_clinic(&policy).await.expect("a plan");
    assert!(plan
        .warnings
        .iter()
        .any(|w| w.contains("CREATE RULE applies to model = 'anatomy' only; the 1 rule(s)")));
}

#[tokio::test]
async fn anatomy_refuses_what_its_release_cannot_hold() {
    let anatomy = "model = 'anatomy', l = 2";
    let rule = |r: &str| format!("CREATE RULE r ON {r};");
    for (diagnosis, count, more, says) in [
        (
            "INSENSITIVE",
            "INSENSITIVE",
            String::new(),
            "family has no SENSITIVE column",
        ),
        (
            "SENSITIVE",
            "SENSITIVE",
            String::new(),
            "the SENSITIVE column visits.count has the name of a column anatomy's SA side adds",
        ),
        (
            "SENSITIVE",
            "INSENSITIVE",
            rule("persons.zip = 100 WITH (m = 1, p = 0.5)"),
            "rule 'r' is about persons.zip, which is not SENSITIVE",
        ),
        (
            "SENSITIVE",
            "INSENSITIVE",
            rule("wards.name = 'A' WITH (m = 1, p = 0.5)"),
            "rule 'r' names table wards, which is not in the persons family",
        ),
        (
            "SENSITIVE",
            "INSENSITIVE",
            rule("visits.nothing = 'A' WITH (m = 1, p = 0.5)"),
            "rule 'r': table visits has no column nothing",
        ),
        (
            "SENSITIVE",
            "INSENSITIVE",
            rule("visits.diagnosis = 'flu' WITH (m = 1.5, p = 0.5)"),
            "m must be a whole number of occurrences, 1 or more, found 1.5",
        ),
        (
            "SENSITIVE",
            "INSENSITIVE",
            rule("visits.diagnosis = 'flu' WITH (m = 1, p = 0)"),
            "p must be a share above 0 and at most 1",
        ),
    ] {
        let policy = clinic_policy(["INSENSITIVE", diagnosis, count], &more, anatomy);
        match plan_clinic(&policy).await {
            Ok(_) => panic!("accepted: {diagnosis} {count} {more}"),
            Err(e) => assert!(e.to_string().contains(says), "{more}: {e}"),
        }
    }
}

#[tokio::test]
async fn every_column_takes_one_role_and_a_join_key_none() {
    let policy = clinic_policy(
        ["INSENSITIVE", "SENSITIVE", "INSENSITIVE"],
        "LABEL COLUMN visits.pid AS QUASI IDENTIFIER USING age_h;",
        "k = 2",
    );
    let message = plan_clinic(&policy)
        .await
        .expect_err("a join key labelled")
        .to_string();
    assert!(
        message.contains(
            "visits.pid is a join key, which is kept atomic (pseudonymized) and can never be"
        ),
        "{message}"
    );
    let policy = clinic_policy(["INSENSITIVE", "SENSITIVE", "INSENSITIVE"], "", "k = 2");
    let plan = plan_clinic(&policy).await.expect("every column has a role");
    let roles: Vec<(&str, &ColumnRole)> = plan.tables[1]
        .columns
        .iter()
        .map(|c| (c.name.as_str(), &c.role))
        .collect();
    assert_eq!(
        roles,
        [
            ("vid", &ColumnRole::Key),
            ("pid", &ColumnRole::Key),
            ("diagnosis", &ColumnRole::Sensitive { buckets: None }),
            ("count", &ColumnRole::Insensitive),
        ]
    );
    assert_eq!(plan.left_out, ["wards"]);
    // A column with no label and no table default is named in the refusal.
    let text = format!(
        "SET source = 'clinic'; {CLINIC_KEYS}
         CREATE ENTITY person ON persons (id);
         LABEL TABLE visits DEFAULT INSENSITIVE; LABEL TABLE notes DEFAULT INSENSITIVE;
         LABEL COLUMN persons.age AS INSENSITIVE;
         ANONYMIZE person WITH (k = 2);"
    );
    let policy = crate::decl::parse(&text).expect("declarations parse");
    let message = plan_clinic(&policy)
        .await
        .expect_err("zip unlabelled")
        .to_string();
    assert!(
        message.starts_with("1 column(s) have no role: persons.zip; add LABEL COLUMN"),
        "{message}"
    );
}

#[tokio::test]
async fn a_view_may_not_read_an_identifier_nor_under_anatomy_a_sensitive_column() {
    let view = "CREATE VIEW v AS SELECT p.zip, COUNT(*) AS n FROM persons p GROUP BY p.zip;";
    let policy = clinic_policy(["INSENSITIVE", "SENSITIVE", "INSENSITIVE"], view, "k = 2");
    plan_clinic(&policy).await.expect("zip is INSENSITIVE");
    let policy = clinic_policy(["IDENTIFIER", "SENSITIVE", "INSENSITIVE"], view, "k = 2");
    let message = plan_clinic(&policy)
        .await
        .expect_err("zip hidden")
        .to_string();
    assert!(
        message.contains("view v reads the IDENTIFIER column persons.zip, which is not released"),
        "{message}"
    );
    let sa = "CREATE VIEW v AS SELECT diagnosis FROM visits;";
    let policy = clinic_policy(["INSENSITIVE", "SENSITIVE", "INSENSITIVE"], sa, "k = 2");
    plan_clinic(&policy)
        .await
        .expect("published in place under k-anonymity");
    let policy = clinic_policy(
        ["INSENSITIVE", "SENSITIVE", "INSENSITIVE"],
        sa,
        "model = 'anatomy', l = 2",
    );
    let message = plan_clinic(&policy).await.expect_err("anatomy").to_string();
    assert!(
        message.contains("view v reads the SENSITIVE column visits.diagnosis"),
        "{message}"
    );
}
