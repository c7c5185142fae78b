//! verify's "labels" and "twins" on a small health record: groups of surnames labelled by
//! their first and last member, and a reason code published beside its generalized
//! description, are refused; labels by position and the code generalized like the
//! description are released.

use std::path::Path;

use crate::common::*;

/// Six patients, one encounter each. Surnames are unique; within each half of the
/// alphabet the reasons mix bronchitis and sinusitis, so grouping by surname (cheaper than
/// giving the surname up: 'respiratory' is 2 of 8 reasons) generalizes the description.
fn health(dir: &Path) {
    let db = rusqlite::Connection::open(dir.join("health.sqlite")).expect("create");
    db.execute_batch(
        "CREATE TABLE patients (\"Id\" TEXT PRIMARY KEY, \"LAST\" TEXT);
         CREATE TABLE encounters (\"Id\" INTEGER PRIMARY KEY,
             \"PATIENT\" TEXT REFERENCES patients (\"Id\"),
             \"REASONCODE\" TEXT, \"REASONDESCRIPTION\" TEXT);
         INSERT INTO patients VALUES
             ('8ab2b0e2-1c2d', 'Abbott1'), ('9104536f-2d3e', 'Baker2'),
             ('a1b2c3d4-3e4f', 'Crist804'), ('b2c3d4e5-4f5a', 'Douglas998'),
             ('c3d4e5f6-5a6b', 'Emard19'), ('d4e5f6a7-6b7c', 'Fay398');
         INSERT INTO encounters VALUES
             (1, '8ab2b0e2-1c2d', '10509002', 'Acute bronchitis'),
             (2, '9104536f-2d3e', '444814009', 'Viral sinusitis'),
             (3, 'a1b2c3d4-3e4f', '10509002', 'Acute bronchitis'),
             (4, 'b2c3d4e5-4f5a', '444814009', 'Viral sinusitis'),
             (5, 'c3d4e5f6-5a6b', '10509002', 'Acute bronchitis'),
             (6, 'd4e5f6a7-6b7c', '444814009', 'Viral sinusitis');",
    )
    .expect("build the health record");
}

/// Declarations over [`health`]: surnames grouped by `last_groups` (two labels, for
/// Abbott1..Crist804 and Douglas998..Fay398) and the reason code labelled `code_role`.
fn declarations(dir: &Path, last_groups: [&str; 2], code_role: &str) -> String {
    let [low, high] = last_groups;
    let text = format!(
        "SET source = 'health.sqlite';
         SET target = 'release.sqlite';
         CREATE HIERARCHY last_h AS VALUES
             ('Abbott1', '{low}'), ('Baker2', '{low}'), ('Crist804', '{low}'),
             ('Douglas998', '{high}'), ('Emard19', '{high}'), ('Fay398', '{high}');
         CREATE HIERARCHY reason_h AS VALUES
             ('Acute bronchitis', 'respiratory'), ('Viral sinusitis', 'respiratory'),
             ('Diabetes', 'metabolic'), ('Prediabetes', 'metabolic'), ('Obesity', 'metabolic'),
             ('Hypertension', 'cardiac'), ('Angina', 'cardiac'), ('Arrhythmia', 'cardiac');
         CREATE HIERARCHY code_h AS VALUES
             ('10509002', 'respiratory'), ('444814009', 'respiratory'),
             ('44054006', 'metabolic'), ('15777000', 'metabolic'), ('162864005', 'metabolic'),
             ('38341003', 'cardiac'), ('194828000', 'cardiac'), ('698247007', 'cardiac');
         CREATE ENTITY patient ON patients (\"Id\");
         LABEL COLUMN patients.\"LAST\" AS QUASI IDENTIFIER USING last_h;
         LABEL COLUMN encounters.\"REASONDESCRIPTION\" AS QUASI IDENTIFIER USING reason_h;
         LABEL COLUMN encounters.\"REASONCODE\" AS {code_role};
         ANONYMIZE patient WITH (k = 3, algorithm = 'miraclex', seed = 7);"
    );
    let path = dir.join("decl.sql");
    std::fs::write(&path, text).expect("write declarations");
    "decl.sql".to_string()
}

#[test]
fn labels_naming_members_and_a_published_twin_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    health(d);
    let decl = declarations(
        d,
        ["[Abbott1 .. Crist804]", "[Douglas998 .. Fay398]"],
        "INSENSITIVE",
    );
    let o = relanon(
        d,
        &[
            "anonymize",
            &decl,
            "--allow-unverified",
            "--key-map",
            "keys.json",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let said = stderr(&o);
    assert!(said.contains("FAIL labels: 2 violations"), "{said}");
    assert!(
        said.contains("patients.LAST: label '[Abbott1 .. Crist804]' contains 'Abbott1' (and 1 more such value), a value of patients.LAST held by 1 entity (fewer than k = 3)"),
        "{said}"
    );
    assert!(said.contains("FAIL twins: 1 violation"), "{said}");
    assert!(
        said.contains("encounters.REASONCODE determines encounters.REASONDESCRIPTION (generalized in 6 released rows) and is published unchanged: 6 released entities fall in classes smaller than k = 3"),
        "{said}"
    );

    // The standalone verify of what was written says the same, and exits 1.
    let v = verify_with_key_map(d, &decl, "health.sqlite", "release.sqlite");
    assert_eq!(v.status.code(), Some(1), "{}{}", stdout(&v), stderr(&v));
    let out = stdout(&v);
    assert!(
        out.contains("FAIL labels") && out.contains("FAIL twins"),
        "{out}"
    );
}

#[test]
fn labels_by_position_and_a_generalized_code_are_released() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    health(d);
    let decl = declarations(d, ["group 1", "group 2"], "QUASI IDENTIFIER USING code_h");
    let o = relanon(d, &["anonymize", &decl]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("verify: passed (8 checks)"),
        "{}",
        stdout(&o)
    );
}
