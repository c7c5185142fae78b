//! Every bad input the foundation issue lists: a one-line cause, exit code 2, the source
//! unchanged and no target (not even a partial one) left behind.

use std::path::Path;

use crate::common::*;

/// Runs anonymize on a Table II workspace whose declarations are `text` and whose fixture was
/// edited by `edit`; asserts the failure contract and returns stderr.
fn fails(text: &str, edit: impl Fn(&Path)) -> String {
    fails_in("table2", text, edit)
}

/// [`fails`] on a workspace holding a copy of `fixtures/<fixture>`.
fn fails_in(fixture_name: &str, text: &str, edit: impl Fn(&Path)) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&fixture(fixture_name), &dir.path().join(fixture_name));
    let decl = dir.path().join("decl.sql");
    std::fs::write(&decl, text).expect("write declarations");
    edit(&dir.path().join(fixture_name));
    let before = fingerprint(&dir.path().join(fixture_name));
    let o = relanon(
        dir.path(),
        &["anonymize", decl.to_str().expect("utf-8 path")],
    );
    let err = stderr(&o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "expected exit 2, got {:?}: {err}",
        o.status.code()
    );
    assert_eq!(
        err.trim().lines().count(),
        1,
        "the cause fits on one line: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(
        before,
        fingerprint(&dir.path().join(fixture_name)),
        "the source must not change"
    );
    let leftovers: Vec<String> = std::fs::read_dir(dir.path())
        .expect("ls")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != fixture_name && n != "decl.sql")
        .collect();
    assert!(
        leftovers.is_empty(),
        "no partial target may be left: {leftovers:?}"
    );
    err
}

fn no_edit(_: &Path) {}

fn append_line(file: &Path, line: &str) {
    let mut text = std::fs::read_to_string(file).expect("read fixture");
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(line);
    text.push('\n');
    std::fs::write(file, text).expect("write fixture");
}

#[test]
fn unparsable_declaration_points_at_line_and_column() {
    let text = table2_text() + "\nLABEL COLUMN students.gpa AS BANANA;\n";
    let line = text.lines().count();
    let err = fails(&text, no_edit);
    assert!(
        err.contains(&format!(":{line}:")),
        "names line {line}: {err}"
    );
    assert!(err.contains("BANANA"), "{err}");
}

#[test]
fn unknown_table_and_column() {
    let err = fails(
        &(table2_text() + "\nLABEL COLUMN teachers.name AS IDENTIFIER;\n"),
        no_edit,
    );
    assert!(err.contains("unknown table 'teachers'"), "{err}");
    let err = fails(
        &table2_text().replace("courses.grade", "courses.grad"),
        no_edit,
    );
    assert!(err.contains("unknown column 'grad'"), "{err}");
}

#[test]
fn missing_roles_are_all_listed() {
    let text: String = table2_text()
        .lines()
        .filter(|l| !l.contains("students.gpa") && !l.contains("books.price"))
        .collect::<Vec<_>>()
        .join("\n");
    let err = fails(&text, no_edit);
    assert!(
        err.contains("students.gpa") && err.contains("books.price"),
        "{err}"
    );
    assert!(err.contains("no role"), "{err}");
}

#[test]
fn value_missing_from_hierarchy() {
    let err = fails(&table2_text(), |d| {
        append_line(&d.join("courses.csv"), "SC99,S4,Astrology,50")
    });
    assert!(
        err.contains("Astrology") && err.contains("courses.course"),
        "{err}"
    );
}

#[test]
fn hierarchy_that_is_not_a_tree() {
    let two_parents = table2_text().replacen(
        "('Math', 'Science')",
        "('Math', 'Science'), ('Math', 'Social')",
        1,
    );
    assert_ne!(
        two_parents,
        table2_text(),
        "the fixture's course hierarchy has a ('Math', 'Science') row"
    );
    let err = fails(&two_parents, no_edit);
    assert!(err.contains("two parents"), "{err}");
    let cycle = table2_text().replacen(
        "('Math', 'Science')",
        "('Math', 'Science'), ('Science', 'Math')",
        1,
    );
    let err = fails(&cycle, no_edit);
    assert!(err.contains("not a tree"), "{err}");
}

#[test]
fn a_second_path_that_disagrees() {
    // books gets a second path to students (books.scid -> students.sid), which names no
    // student at all: every row disagrees with its parent chain.
    let text =
        table2_text() + "\nALTER TABLE books ADD FOREIGN KEY (scid) REFERENCES students (sid);\n";
    let err = fails(&text, no_edit);
    assert!(
        err.contains("table books: 12 row(s) reach students through (scid) and through their parent chain to different students rows, e.g. bid = B1")
            && err.contains("DROP FOREIGN KEY (scid)"),
        "{err}"
    );
}

#[test]
fn orphans_are_refused_or_dropped_and_counted() {
    let orphan = |d: &Path| append_line(&d.join("courses.csv"), "SC99,S9,Math,50");
    let err = fails(&table2_text(), orphan);
    assert!(
        err.contains("missing students row") && err.contains("orphans = 'drop'"),
        "{err}"
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let decl = table2_workspace(dir.path(), &(table2_text() + "\nSET orphans = 'drop';\n"));
    orphan(&dir.path().join("table2"));
    let o = relanon(
        dir.path(),
        &["anonymize", decl.to_str().expect("utf-8"), "--json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    let courses = report["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .find(|t| t["name"] == "courses")
        .expect("courses")
        .clone();
    assert_eq!(courses["orphans_dropped"], 1, "{courses}");
}

#[test]
fn duplicate_and_null_primary_keys() {
    let err = fails(&table2_text(), |d| {
        append_line(&d.join("students.csv"), "S1,1.5")
    });
    assert!(
        err.contains("students") && err.contains("primary key"),
        "{err}"
    );
    let err = fails(&table2_text(), |d| {
        append_line(&d.join("students.csv"), ",1.5")
    });
    assert!(err.contains("students") && err.contains("NULL"), "{err}");
}

#[test]
fn k_larger_than_the_population() {
    let err = fails(&table2_text().replace("k = 2", "k = 5"), no_edit);
    assert!(err.contains("k = 5") && err.contains("only 4"), "{err}");
}

#[test]
fn unreadable_or_corrupt_source() {
    let err = fails(
        &table2_text().replace("SET source = 'table2';", "SET source = 'nowhere.sqlite';"),
        no_edit,
    );
    assert!(err.contains("nowhere.sqlite"), "{err}");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("bad.sqlite"),
        b"SQLite format 3\0this is not a database at all, just bytes",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("decl.sql"),
        table2_text().replace("SET source = 'table2';", "SET source = 'bad.sqlite';"),
    )
    .expect("write");
    let o = relanon(dir.path(), &["anonymize", "decl.sql"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    assert!(!dir.path().join("release.sqlite").exists());
}

#[test]
fn target_equal_to_source_or_existing() {
    let err = fails(
        &table2_text().replace("SET target = 'release.sqlite';", "SET target = 'table2';"),
        no_edit,
    );
    assert!(err.contains("is the source"), "{err}");
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = table2_workspace(dir.path(), &table2_text());
    std::fs::write(dir.path().join("release.sqlite"), b"keep me").expect("write");
    let o = relanon(dir.path(), &["anonymize", decl.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--overwrite"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(dir.path().join("release.sqlite")).expect("read"),
        b"keep me"
    );
}

#[test]
fn key_map_inside_a_parquet_release_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = table2_workspace(
        dir.path(),
        &table2_text().replace("'release.sqlite'", "'release'"),
    );
    let o = relanon(
        dir.path(),
        &[
            "anonymize",
            decl.to_str().expect("utf-8"),
            "--key-map",
            "release/keys.json",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("inside the release"), "{}", stderr(&o));
    assert!(!dir.path().join("release").exists());
}

/// Table II under l-diversity: `options` replace the k-anonymity policy.
fn table2_l(options: &str) -> String {
    table2_text().replace(
        "ANONYMIZE student WITH (k = 2, algorithm = 'miracle', threshold = 1, climit = 150);",
        &format!("ANONYMIZE student WITH (model = 'l-diversity', {options});"),
    )
}

#[test]
fn l_beyond_what_the_entity_values_allow() {
    // One bucket holds every GPA: no two students can ever be 2-diverse.
    let text = table2_l("l = 2").replace(
        "students.gpa   AS SENSITIVE",
        "students.gpa   AS SENSITIVE BUCKETS (0, 5)",
    );
    let err = fails(&text, no_edit);
    assert!(
        err.contains("students.gpa") && err.contains("no entity can be released"),
        "{err}"
    );
    let err = fails(&table2_l("l = 5"), no_edit);
    assert!(err.contains("l = 5") && err.contains("only 4"), "{err}");
}

#[test]
fn l_beyond_what_a_child_column_allows_warns_with_the_share() {
    // Every grade in one bucket: every course must go, and the user is told before the run.
    let text = table2_l("l = 2, algorithm = 'clustree'").replace(
        "courses.grade  AS SENSITIVE",
        "courses.grade  AS SENSITIVE BUCKETS (0, 100)",
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = table2_workspace(dir.path(), &text);
    let o = relanon(dir.path(), &["anonymize", decl.to_str().expect("utf-8")]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("courses.grade")
            && err.contains("will be suppressed")
            && err.contains("(100.0%)"),
        "{err}"
    );
}

#[test]
fn buckets_that_miss_a_value() {
    let text = table2_l("l = 2").replace(
        "students.gpa   AS SENSITIVE",
        "students.gpa   AS SENSITIVE BUCKETS (0, 3, 3.9)",
    );
    let err = fails(&text, no_edit);
    assert!(
        err.contains("students.gpa")
            && err.contains("outside the buckets [0, 3.9]")
            && err.contains("e.g. 4;"),
        "{err}"
    );
    let text = table2_l("l = 2").replace(
        "students.gpa   AS SENSITIVE",
        "students.gpa   AS SENSITIVE BUCKETS (0, 3, 2)",
    );
    let err = fails(&text, no_edit);
    assert!(err.contains("must increase"), "{err}");
}

#[test]
fn sensitive_label_on_a_join_key() {
    let text = table2_l("l = 2") + "\nLABEL COLUMN courses.sid AS SENSITIVE;\n";
    let err = fails(&text, no_edit);
    assert!(
        err.contains("courses.sid") && err.contains("join key"),
        "{err}"
    );
}

#[test]
fn l_diversity_needs_sensitive_columns_and_a_diversity_algorithm() {
    let text = table2_l("l = 2")
        .replace("AS SENSITIVE;", "AS INSENSITIVE;")
        .replace("AS SENSITIVE ", "AS INSENSITIVE ");
    let err = fails(&text, no_edit);
    assert!(err.contains("at least one SENSITIVE column"), "{err}");
    let err = fails(&table2_l("l = 2, algorithm = 'miracle'"), no_edit);
    assert!(
        err.contains("k-anonymity algorithm") && err.contains("clustree"),
        "{err}"
    );
    let err = fails(&table2_l("k = 2"), no_edit);
    assert!(
        err.contains("l-diversity needs l") || err.contains("k belongs"),
        "{err}"
    );
}

/// Adds `teachers.csv` (tid, name) to the Table II workspace: a table outside the family.
fn add_teachers(dir: &Path) {
    std::fs::write(dir.join("teachers.csv"), "tid,name\nT1,Ada\nT2,Bob\n").expect("write");
}

#[test]
fn a_label_on_a_table_that_is_not_released() {
    let err = fails(
        &(table2_text() + "\nLABEL COLUMN teachers.name AS INSENSITIVE;\n"),
        add_teachers,
    );
    assert!(
        err.contains("table teachers is not released")
            && err.contains("LABEL TABLE \"teachers\" AS DIMENSION"),
        "{err}"
    );
}

#[test]
fn a_dimension_column_cannot_be_a_quasi_identifier() {
    let err = fails(
        &(table2_text()
            + "\nLABEL TABLE teachers AS DIMENSION;\nLABEL COLUMN teachers.name AS QUASI IDENTIFIER USING course_h;\n"),
        add_teachers,
    );
    assert!(
        err.contains("teachers is a dimension table") && err.contains("not QUASI IDENTIFIER"),
        "{err}"
    );
}

#[test]
fn a_dimension_column_without_a_role() {
    let err = fails(
        &(table2_text() + "\nLABEL TABLE teachers AS DIMENSION;\n"),
        add_teachers,
    );
    assert!(
        err.contains("have no role: teachers.tid, teachers.name"),
        "{err}"
    );
}

#[test]
fn a_family_table_declared_a_dimension() {
    let err = fails(
        &(table2_text() + "\nLABEL TABLE books AS DIMENSION;\n"),
        no_edit,
    );
    assert!(
        err.contains("table books is in the students family"),
        "{err}"
    );
}

#[test]
fn setting_aside_a_foreign_key_that_does_not_exist() {
    let err = fails(
        &(table2_text() + "\nALTER TABLE books DROP FOREIGN KEY (price);\n"),
        no_edit,
    );
    assert!(
        err.contains(
            "table 'books' has no foreign key on (price); its foreign keys are: (scid) -> courses"
        ),
        "{err}"
    );
}

#[test]
fn a_set_aside_foreign_key_leaves_a_column_without_a_role() {
    // The books are no longer family: their table is left out, so its labels name a table
    // that is not released.
    let err = fails(
        &(table2_text() + "\nALTER TABLE books DROP FOREIGN KEY (scid);\n"),
        no_edit,
    );
    assert!(err.contains("table books is not released"), "{err}");
}

#[test]
fn two_foreign_keys_into_one_parent() {
    let text =
        table2_text() + "\nALTER TABLE books ADD FOREIGN KEY (bid) REFERENCES courses (scid);\n";
    let err = fails(&text, no_edit);
    assert!(
        err.contains("not a snowflake: table books has two foreign keys into courses")
            && err.contains("DROP FOREIGN KEY"),
        "{err}"
    );
    // Reported at the declaration whose family it is.
    assert!(
        err.contains(": the family of entity student (on table students): not a snowflake"),
        "{err}"
    );
}

#[test]
fn a_cycle_of_foreign_keys() {
    let text =
        table2_text() + "\nALTER TABLE students ADD FOREIGN KEY (gpa) REFERENCES books (bid);\n";
    let err = fails(&text, no_edit);
    assert!(
        err.contains("not a snowflake: the entity table students has a foreign key (gpa) into its own family (books)"),
        "{err}"
    );
}

#[test]
fn two_paths_that_do_not_nest() {
    // A second child of students, and books referencing it beside their course.
    let text = table2_text()
        + "\nALTER TABLE teachers ADD PRIMARY KEY (tid);\nALTER TABLE teachers ADD FOREIGN KEY (name) REFERENCES students (sid);\nALTER TABLE books ADD FOREIGN KEY (price) REFERENCES teachers (tid);\nLABEL TABLE teachers DEFAULT INSENSITIVE;\n";
    let err = fails(&text, add_teachers);
    assert!(
        err.contains("not a snowflake: table books reaches the entity table through")
            && err.contains("courses (scid)")
            && err.contains("teachers (price)")
            && err.contains("which do not lie on one path"),
        "{err}"
    );
}

#[test]
fn a_view_reading_a_table_that_is_not_released() {
    let err = fails(
        &(table2_text() + "\nCREATE VIEW staff AS SELECT t.name FROM teachers t;\n"),
        add_teachers,
    );
    assert!(
        err.contains("view staff reads table teachers, which is not released"),
        "{err}"
    );
}

#[test]
fn a_composite_key_column_needs_a_role() {
    // Books keyed by (scid, book): the title is data, not a join key, and is labelled here
    // as a QI already, so the key's other part must be the FK; price keeps its label.
    let text = table2_text().replace(
        "ALTER TABLE books ADD PRIMARY KEY (bid);",
        "ALTER TABLE books ADD PRIMARY KEY (scid, bid);",
    );
    let err = fails(&text, no_edit);
    assert!(err.contains("have no role: books.bid"), "{err}");
}

/// Table II with `students.name` (labelled IDENTIFIER) and `book` generalized by `query`, a
/// SELECT hierarchy.
fn book_hierarchy_from(query: &str) -> String {
    table2_text().replace("USING book_h;", "USING book_q;")
        + "\nLABEL COLUMN students.name AS IDENTIFIER;\n"
        + &format!("CREATE HIERARCHY book_q AS {query};\n")
}

fn add_student_names(dir: &Path) {
    let path = dir.join("students.csv");
    let text = std::fs::read_to_string(&path).expect("read students");
    let named: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                format!("{l},name")
            } else {
                format!("{l},Person {i}")
            }
        })
        .collect();
    std::fs::write(&path, named.join("\n") + "\n").expect("write students");
}

#[test]
fn a_hierarchy_reading_an_identifier_is_refused_however_it_reads_it() {
    for query in [
        // People's names as the labels of their books.
        "SELECT b.book, s.name FROM books b JOIN courses c ON b.scid = c.scid JOIN students s ON c.sid = s.sid",
        // A bare column, resolved to the table that has it.
        "SELECT book, name FROM books JOIN courses USING (scid) JOIN students USING (sid)",
        // Read in a condition only: still derived from it.
        "SELECT b.book, 'Books' FROM books b JOIN courses c ON b.scid = c.scid JOIN students s ON c.sid = s.sid WHERE s.name <> ''",
        // A wildcard reads every column of its table.
        "SELECT b.book, s.* FROM books b JOIN courses c ON b.scid = c.scid JOIN students s ON c.sid = s.sid",
    ] {
        let err = fails(&book_hierarchy_from(query), add_student_names);
        assert!(
            err.contains("hierarchy book_q reads the IDENTIFIER column students.name")
                && err.contains("build the hierarchy from other columns"),
            "{query}: {err}"
        );
    }
}

#[test]
fn a_hierarchy_reading_a_table_without_roles_is_warned_about() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = table2_text().replace("USING book_h;", "USING book_q;")
        + "\nCREATE HIERARCHY book_q AS SELECT book, subject FROM subjects;\n";
    let decl = table2_workspace(dir.path(), &text);
    let subjects = "book,subject\nDiscrete,Math\nCalc,Math\nDyn,Physics\nOptics,Physics\nAm.Hist,History\nEu.Hist,History\nWorld Rel,Religion\nTheology,Religion\n";
    std::fs::write(dir.path().join("table2/subjects.csv"), subjects).expect("write");
    let o = relanon(
        dir.path(),
        &["anonymize", decl.to_str().expect("utf-8 path")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning: hierarchy book_q reads table subjects, which has no roles"),
        "{}",
        stderr(&o)
    );
}

/// No output of a run may land on what it reads, nor replace a file relanon did not write:
/// each is refused before any work, the file kept byte for byte.
#[test]
fn outputs_never_replace_the_source_the_declarations_or_a_users_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = table2_workspace(dir.path(), &table2_text());
    std::fs::write(dir.path().join("notes.html"), "<p>my notes</p>").expect("write");
    std::fs::write(dir.path().join("mine.json"), "[1, 2]").expect("write");
    let contents = || -> Vec<Vec<u8>> {
        ["decl.sql", "notes.html", "mine.json", "table2/students.csv"]
            .iter()
            .map(|f| std::fs::read(dir.path().join(f)).expect("read"))
            .collect()
    };
    for (args, says) in [
        (vec!["--key-map", "table2/students.csv"], "is the source"),
        (vec!["--key-map", "decl.sql"], "is the declarations"),
        (vec!["--report", "decl.sql"], "is the declarations"),
        (vec!["--report", "table2"], "is the source"),
        (
            vec!["--report", "notes.html", "--overwrite"],
            "is not a report page relanon wrote",
        ),
        (
            vec!["--key-map", "mine.json", "--overwrite"],
            "is not a key map relanon wrote",
        ),
        (
            vec!["--key-map", "k.json", "--report", "k.json"],
            "also where the key map goes",
        ),
        (vec!["--target", "."], "would hold the source"),
    ] {
        let before = contents();
        let mut all = vec!["anonymize", "decl.sql"];
        all.extend(&args);
        let o = relanon(dir.path(), &all);
        assert_eq!(o.status.code(), Some(2), "{args:?} was accepted");
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
        assert_eq!(before, contents(), "{args:?} changed a file");
        assert!(!dir.path().join("release.sqlite").exists(), "{args:?}");
    }
    let _ = decl;
    // What relanon wrote, it may replace with --overwrite, and only then.
    let run = |extra: &[&str]| {
        let mut args = vec![
            "anonymize",
            "decl.sql",
            "--key-map",
            "k.json",
            "--report",
            "r.html",
        ];
        args.extend(extra);
        relanon(dir.path(), &args)
    };
    let first = run(&[]);
    assert!(first.status.success(), "{}", stderr(&first));
    let again = run(&[]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        stderr(&again).contains("exists: pass --overwrite"),
        "{}",
        stderr(&again)
    );
    let over = run(&["--overwrite"]);
    assert!(over.status.success(), "{}", stderr(&over));
    // `report` redraws its own page but never draws over the JSON it reads.
    let o = relanon(
        dir.path(),
        &[
            "report",
            "release.report.json",
            "--out",
            "release.report.json",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("is the report.json it draws"),
        "{}",
        stderr(&o)
    );
    let o = relanon(
        dir.path(),
        &["report", "release.report.json", "--out", "r.html"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A closed pipe (`--json | head`) or a full disk behind stdout or stderr loses the text, never
/// the run: no panic, and a committed release still exits 0.
#[test]
fn closed_or_full_standard_streams_never_panic() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = table2_workspace(dir.path(), &table2_text());
    let decl = decl.to_str().expect("utf-8 path");
    // The reader takes a few bytes of the JSON report and closes the pipe.
    let mut child = Command::new(env!("CARGO_BIN_EXE_relanon"))
        .current_dir(dir.path())
        .args(["anonymize", decl, "--json", "--overwrite"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut head = [0u8; 8];
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_exact(&mut head)
        .expect("the report starts");
    let o = child.wait_with_output().expect("wait");
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    assert!(o.status.success(), "{:?}: {}", o.status, stderr(&o));
    if Path::new("/dev/full").exists() {
        for (args, code) in [
            (vec!["anonymize", decl, "--overwrite"], 0),
            (vec!["verify", decl, "--with", "keys = 'preserve'"], 1),
            (vec!["anonymize", "missing.sql"], 2),
        ] {
            for to_stderr in [false, true] {
                let full = || std::fs::File::create("/dev/full").expect("open /dev/full");
                let mut cmd = Command::new(env!("CARGO_BIN_EXE_relanon"));
                cmd.current_dir(dir.path()).args(&args);
                if to_stderr {
                    cmd.stderr(full()).stdout(Stdio::null());
                } else {
                    cmd.stdout(full()).stderr(Stdio::piped());
                }
                let o = cmd.output().expect("run");
                assert!(!stderr(&o).contains("panicked"), "{args:?}: {}", stderr(&o));
                assert_eq!(
                    o.status.code(),
                    Some(code),
                    "{args:?} to_stderr={to_stderr}"
                );
            }
        }
    }
}

/// A byte-order mark at the start of the declarations or of a hierarchy file is not part of
/// the first statement or the first leaf.
#[test]
fn a_byte_order_mark_is_not_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = table2_text().replace(
        "CREATE HIERARCHY book_h AS VALUES",
        "CREATE HIERARCHY book_old AS VALUES",
    ) + "\nCREATE HIERARCHY book_h FROM CSV 'books.csv';\n";
    let decl = table2_workspace(dir.path(), &format!("\u{feff}{text}"));
    let rows = "Discrete;Math books\nCalc;Math books\nDyn;Physics books\nOptics;Physics books\nAm.Hist;History books\nEu.Hist;History books\nWorld Rel;Religion books\nTheology;Religion books\n";
    std::fs::write(dir.path().join("books.csv"), format!("\u{feff}{rows}")).expect("write");
    let o = relanon(dir.path(), &["anonymize", decl.to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Doubtful numbers are refused, naming what to write: a seed or a count that is not whole,
/// a band too wide to compute exactly.
#[test]
fn fractional_seeds_and_counts_and_huge_bands_are_refused() {
    for (with, says) in [
        ("seed = 1.5", "seed must be a whole number, found 1.5"),
        ("queries = 2.5", "queries must be a whole number, found 2.5"),
        ("climit = 2.5", "climit must be a whole number, found 2.5"),
    ] {
        let err = fails(&table2_text().replace("climit = 150", with), no_edit);
        assert!(err.contains(says), "{with}: {err}");
    }
    let err = fails(
        &(table2_text() + "\nCREATE HIERARCHY wide_h AS BANDS (1e23);\n"),
        no_edit,
    );
    assert!(
        err.contains("band width 100000000000000000000000 is beyond"),
        "{err}"
    );
}

/// An error about an option given with --with points at --with, not at the file; an error
/// with no place in the file still names the file.
#[test]
fn errors_point_where_the_cause_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = table2_workspace(dir.path(), &table2_text());
    let d = decl.to_str().expect("utf-8");
    let o = relanon(dir.path(), &["anonymize", d, "--with", "k = 2, m = 8"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with("error: --with, column 8: m is an option of clustree, ctoff"),
        "{}",
        stderr(&o)
    );
    let text = table2_text().replace(
        "ANONYMIZE student WITH (k = 2, algorithm = 'miracle', threshold = 1, climit = 150);",
        "",
    );
    std::fs::write(&decl, text).expect("write");
    let o = relanon(dir.path(), &["anonymize", d]);
    assert!(
        stderr(&o).contains("decl.sql: no privacy policy"),
        "{}",
        stderr(&o)
    );
}

/// A value a hierarchy cannot place is refused with what fits its kind: '*' is the reserved
/// root, a number outside BETWEEN needs a wider range.
#[test]
fn values_a_hierarchy_cannot_place_say_why() {
    let err = fails(&table2_text(), |d| {
        append_line(&d.join("courses.csv"), "SC99,S1,*,90")
    });
    assert!(
        err.contains("'*' is the root every hierarchy ends in"),
        "{err}"
    );
    let text = table2_text().replace(
        "LABEL COLUMN books.price    AS INSENSITIVE;",
        "CREATE HIERARCHY price_h AS BANDS (10) BETWEEN 0 AND 50;\nLABEL COLUMN books.price AS QUASI IDENTIFIER USING price_h;",
    );
    let err = fails(&text, no_edit);
    assert!(
        err.contains("they lie outside BETWEEN 0 AND 50: widen the range"),
        "{err}"
    );
}

/// An empty CSV file says it is empty (not "unknown column ... it has:" with nothing after);
/// two files whose names differ only in case would name one table, and are refused.
#[test]
fn empty_and_case_twin_source_files() {
    let err = fails(&table2_text(), |d| {
        std::fs::write(d.join("books.csv"), "").expect("empty the file")
    });
    assert!(
        err.contains("books.csv") && err.contains("the file is empty"),
        "{err}"
    );
    let err = fails(&table2_text(), |d| {
        std::fs::copy(d.join("books.csv"), d.join("Books.csv")).expect("copy");
    });
    assert!(
        err.contains("Books.csv") && err.contains("books.csv"),
        "{err}"
    );
}

/// One odd value in a dynamically typed SQLite column (text in an INTEGER column) is the one
/// the error names, not the numbers beside it.
#[test]
fn an_odd_value_in_a_numeric_sqlite_column_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = rusqlite::Connection::open(dir.path().join("p.sqlite")).expect("create");
    db.execute_batch(
        "CREATE TABLE people (pid INTEGER PRIMARY KEY, age INTEGER);
         INSERT INTO people VALUES (1, 20), (2, 31), (3, 42), (4, 'abc'), (5, 55), (6, 61);",
    )
    .expect("fill");
    drop(db);
    std::fs::write(
        dir.path().join("d.sql"),
        "SET source = 'p.sqlite';\nSET target = 'r.sqlite';\nCREATE HIERARCHY age_h AS BANDS (10, 20);\n\
         CREATE ENTITY person ON people (pid);\nLABEL COLUMN people.age AS QUASI IDENTIFIER USING age_h;\n\
         ANONYMIZE person WITH (k = 2);\n",
    )
    .expect("write");
    let o = relanon(dir.path(), &["anonymize", "d.sql"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("1 distinct value(s) in 1 row(s) are not leaves")
            && err.contains("e.g. 'abc'"),
        "{err}"
    );
}

/// Table 1's declarations with its `ANONYMIZE` options replaced by `options`.
fn table1_with(options: &str) -> String {
    let text = table1_text();
    let at = text.rfind("ANONYMIZE").expect("an ANONYMIZE statement");
    format!("{}ANONYMIZE person WITH ({options});\n", &text[..at])
}

#[test]
fn hybrid_refuses_a_budget_that_is_no_percent() {
    for (p, shown) in [("101", "101"), ("-1", "-1"), ("'ten'", "'ten'")] {
        let err = fails_in(
            "table1",
            &table1_with(&format!("k = 3, algorithm = 'hybrid', p = {p}")),
            no_edit,
        );
        assert!(
            err.contains(&format!(
                "p must be a number between 0 and 100, found {shown}"
            )),
            "{err}"
        );
    }
}

#[test]
fn hybrid_refuses_a_level_outside_0_1_and_alpha_without_a_statistical_variant() {
    for alpha in ["0", "1", "1.5"] {
        let err = fails_in(
            "table1",
            &table1_with(&format!(
                "k = 3, algorithm = 'hybrid', relocation = 'statistical', alpha = {alpha}"
            )),
            no_edit,
        );
        assert!(err.contains("alpha must be"), "{err}");
    }
    let err = fails_in(
        "table1",
        &table1_with("k = 3, algorithm = 'hybrid', alpha = 0.05"),
        no_edit,
    );
    assert!(
        err.contains("alpha is the statistical variants' significance level")
            && err.contains("relocation = 'statistical'"),
        "{err}"
    );
    let err = fails_in(
        "table1",
        &table1_with("k = 3, algorithm = 'hybrid', relocation = 'random'"),
        no_edit,
    );
    assert!(
        err.contains(
            "relocation must be 'deterministic' or 'randomized' or 'statistical' or 'rstat'"
        ),
        "{err}"
    );
}

#[test]
fn hybrid_refuses_l_diversity_embedding_under_its_test_and_more_k_than_people() {
    let err = fails_in(
        "table1",
        &table1_with("model = 'l-diversity', l = 2, algorithm = 'hybrid'"),
        no_edit,
    );
    assert!(
        err.contains("hybrid serves k-anonymity only") && err.contains("003 L327"),
        "{err}"
    );
    // On entity trees the statistical variants are refused (their test is of one table's
    // group sizes, which verify recomputes), whatever the leftovers.
    for leftovers in ["embed", "suppress"] {
        let err = fails(
            &table2_text().replace(
                "algorithm = 'miracle', threshold = 1, climit = 150",
                &format!(
                    "algorithm = 'hybrid', relocation = 'statistical', leftovers = '{leftovers}'"
                ),
            ),
            no_edit,
        );
        assert!(
            err.contains("the statistical variants test the group sizes of one table")
                && err.contains("write relocation = 'deterministic' or 'randomized'"),
            "{err}"
        );
    }
    let err = fails_in(
        "table1",
        &table1_with("k = 10, algorithm = 'hybrid'"),
        no_edit,
    );
    assert!(err.contains("k = 10") && err.contains("only 9"), "{err}");
}

#[test]
fn hybrid_refuses_a_lattice_too_large_with_its_size() {
    // Ten QI columns of eleven levels and the root over two people: 12^10 nodes.
    let text = "SET source = 'table1';\nSET target = 'release.sqlite';\n\
        CREATE HIERARCHY h AS VALUES ('x', 'x1', 'x2', 'x3', 'x4', 'x5', 'x6', 'x7', 'x8', 'x9', 'x10'), \
        ('y', 'y1', 'y2', 'y3', 'y4', 'y5', 'y6', 'y7', 'y8', 'y9', 'y10');\n\
        ALTER TABLE people ADD PRIMARY KEY (id);\nCREATE ENTITY person ON people (id);\n"
        .to_string();
    let columns: Vec<String> = (0..10).map(|c| format!("c{c}")).collect();
    let mut text = text;
    for c in &columns {
        text += &format!("LABEL COLUMN people.{c} AS QUASI IDENTIFIER USING h;\n");
    }
    text += "ANONYMIZE person WITH (k = 1, algorithm = 'hybrid');\n";
    let csv = format!(
        "id,{}\n1,{}\n2,{}\n",
        columns.join(","),
        ["x"; 10].join(","),
        ["y"; 10].join(",")
    );
    let err = fails_in("table1", &text, |d| {
        std::fs::write(d.join("people.csv"), &csv).expect("csv");
    });
    assert!(
        err.contains(
            "has 61917364224 nodes (12 x 12 x 12 x 12 x 12 x 12 x 12 x 12 x 12 x 12 levels)"
        ) && err.contains("declare fewer quasi-identifiers or hierarchies with fewer levels"),
        "{err}"
    );
}

/// Relocation instead of suppression (`relocate`, relanon's own post-pass): a budget that is
/// no percent and l-diversity are refused before anything is written.
#[test]
fn relocation_instead_of_suppression_refuses_no_percent_and_l_diversity() {
    let miracle = "algorithm = 'miracle', threshold = 1, climit = 150";
    let err = fails(
        &table2_text().replace(miracle, "algorithm = 'miraclex', relocate = 150"),
        no_edit,
    );
    assert!(
        err.contains("relocate must be a number between 0 and 100, found 150"),
        "{err}"
    );
    let err = fails(
        &table2_text().replace(
            &format!("k = 2, {miracle}"),
            "model = 'l-diversity', l = 2, algorithm = 'clustree', relocate = 1",
        ),
        no_edit,
    );
    assert!(
        err.contains("relocate serves k-anonymity only") && err.contains("model = 'k-anonymity'"),
        "{err}"
    );
}
