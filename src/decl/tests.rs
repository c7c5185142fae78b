//! Unit tests of the declarations parser: every statement, its errors and their positions.

use super::*;

const EXAMPLE: &str = r#"SET source = 'fixtures/university.sqlite';          -- or a directory of .parquet / .csv files
SET target = 'out/university-release.sqlite';      -- .sqlite file, or a directory for Parquet

CREATE HIERARCHY course_h AS VALUES ('Math','Science'), ('CS','Science'), ('History','Social');
CREATE HIERARCHY genre_h  AS SELECT t.TrackId, g.Name FROM Track t JOIN Genre g USING (GenreId);
CREATE HIERARCHY age_h    AS BANDS (5, 10, 20);        -- numeric, then *
CREATE HIERARCHY day_h    AS DATE PARTS (month, year); -- then *
CREATE HIERARCHY edu_h    FROM CSV 'hierarchies/education.csv';  -- ARX layout: leaf;l1;l2;...;*

CREATE ENTITY student ON students (sid);               -- family discovered from FKs
ALTER TABLE books ADD FOREIGN KEY (scid) REFERENCES courses (scid);   -- where the source has none

LABEL COLUMN students.name   AS IDENTIFIER;
LABEL COLUMN students.yob    AS QUASI IDENTIFIER USING age_h;
LABEL COLUMN students.gpa    AS SENSITIVE;
LABEL COLUMN courses.course  AS QUASI IDENTIFIER USING course_h;
LABEL COLUMN courses.grade   AS SENSITIVE BUCKETS (0, 50, 70, 85, 100);  -- continuous SA for l-diversity

ANONYMIZE student WITH (model = 'k-anonymity', k = 5, algorithm = 'miraclex', climit = 150, threshold = 0.3);

CREATE VIEW course_load AS SELECT s.yob, COUNT(*) AS n FROM students s JOIN courses c USING (sid) GROUP BY s.yob;
"#;

fn p(line: u64, column: u64) -> Pos {
    Pos { line, column }
}

fn ok(text: &str) -> Policy {
    match parse(text) {
        Ok(policy) => policy,
        Err(e) => panic!("unexpected error for {text:?}: {e}"),
    }
}

fn err(text: &str) -> DeclError {
    match parse(text) {
        Ok(policy) => panic!("expected an error for {text:?}, got {policy:?}"),
        Err(e) => e,
    }
}

/// Asserts an error's position and that its message contains `needle`.
fn assert_err(text: &str, at: (u64, u64), needle: &str) {
    let e = err(text);
    assert_eq!(
        (e.pos.line, e.pos.column),
        at,
        "wrong position for {text:?}: {e}"
    );
    assert!(
        e.message.contains(needle),
        "message for {text:?} lacks {needle:?}: {}",
        e.message
    );
}

fn setting(name: &str, value: &str, pos: Pos) -> Setting {
    Setting {
        name: name.into(),
        value: value.into(),
        pos,
    }
}

fn label(table: &str, column: Option<&str>, role: Role, pos: Pos) -> LabelDecl {
    LabelDecl {
        table: table.into(),
        column: column.map(Into::into),
        role,
        pos,
    }
}

fn strings(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| r.iter().map(|s| s.to_string()).collect())
        .collect()
}

#[test]
fn full_example() {
    let policy = ok(EXAMPLE);
    assert_eq!(
        policy.source,
        Some(setting("source", "fixtures/university.sqlite", p(1, 1)))
    );
    assert_eq!(
        policy.target,
        Some(setting("target", "out/university-release.sqlite", p(2, 1)))
    );
    assert!(policy.settings.is_empty());

    let expected_hierarchies = vec![
        HierarchyDecl {
            name: "course_h".into(),
            source: HierarchySource::Values(strings(&[
                &["Math", "Science"],
                &["CS", "Science"],
                &["History", "Social"],
            ])),
            pos: p(4, 1),
        },
        HierarchyDecl {
            name: "genre_h".into(),
            source: HierarchySource::Select(
                "SELECT t.TrackId, g.Name FROM Track t JOIN Genre g USING (GenreId)".into(),
            ),
            pos: p(5, 1),
        },
        HierarchyDecl {
            name: "age_h".into(),
            source: HierarchySource::Bands {
                widths: vec![5.0, 10.0, 20.0],
                range: None,
            },
            pos: p(6, 1),
        },
        HierarchyDecl {
            name: "day_h".into(),
            source: HierarchySource::DateParts(vec![DatePart::Month, DatePart::Year]),
            pos: p(7, 1),
        },
        HierarchyDecl {
            name: "edu_h".into(),
            source: HierarchySource::Csv("hierarchies/education.csv".into()),
            pos: p(8, 1),
        },
    ];
    assert_eq!(policy.hierarchies, expected_hierarchies);

    assert_eq!(
        policy.entity,
        Some(EntityDecl {
            name: "student".into(),
            table: "students".into(),
            key: vec!["sid".into()],
            pos: p(10, 1),
        })
    );
    assert!(policy.primary_keys.is_empty());
    assert_eq!(
        policy.foreign_keys,
        vec![ForeignKeyDecl {
            table: "books".into(),
            columns: vec!["scid".into()],
            ref_table: "courses".into(),
            ref_columns: vec!["scid".into()],
            pos: p(11, 1),
        }]
    );

    let qi = |h: &str| Role::QuasiIdentifier {
        hierarchy: h.into(),
    };
    assert_eq!(
        policy.labels,
        vec![
            label("students", Some("name"), Role::Identifier, p(13, 1)),
            label("students", Some("yob"), qi("age_h"), p(14, 1)),
            label(
                "students",
                Some("gpa"),
                Role::Sensitive { buckets: None },
                p(15, 1)
            ),
            label("courses", Some("course"), qi("course_h"), p(16, 1)),
            label(
                "courses",
                Some("grade"),
                Role::Sensitive {
                    buckets: Some(vec![0.0, 50.0, 70.0, 85.0, 100.0])
                },
                p(17, 1)
            ),
        ]
    );

    let anonymize = policy.anonymize.as_ref().expect("ANONYMIZE parsed");
    assert_eq!(anonymize.entity, "student");
    assert_eq!(anonymize.pos, p(19, 1));
    let options: Vec<(&str, &Value)> = anonymize
        .options
        .iter()
        .map(|(k, v)| (k.as_str(), &v.value))
        .collect();
    assert_eq!(
        options,
        vec![
            ("algorithm", &Value::Text("miraclex".into())),
            ("climit", &Value::Number(150.0)),
            ("k", &Value::Number(5.0)),
            ("model", &Value::Text("k-anonymity".into())),
            ("threshold", &Value::Number(0.3)),
        ]
    );
    assert_eq!(anonymize.options["k"].pos, p(19, 48));

    assert_eq!(policy.views.len(), 1);
    assert_eq!(policy.views[0].name, "course_load");
    assert_eq!(policy.views[0].pos, p(21, 1));
    assert_eq!(
        policy.views[0].query.to_string(),
        "SELECT s.yob, COUNT(*) AS n FROM students s JOIN courses c USING(sid) GROUP BY s.yob"
    );
}

#[test]
fn empty_and_comment_only_files_are_empty_policies() {
    for text in ["", "   \n\t", "-- nothing\n/* still nothing; */\n", ";;\n;"] {
        let policy = ok(text);
        assert!(policy.source.is_none() && policy.target.is_none());
        assert!(policy.settings.is_empty() && policy.hierarchies.is_empty());
        assert!(policy.entity.is_none() && policy.anonymize.is_none());
        assert!(policy.primary_keys.is_empty() && policy.foreign_keys.is_empty());
        assert!(policy.labels.is_empty() && policy.views.is_empty());
    }
}

#[test]
fn entity_key_list_is_optional() {
    let policy = ok("CREATE ENTITY person ON adult;");
    assert_eq!(
        policy.entity,
        Some(EntityDecl {
            name: "person".into(),
            table: "adult".into(),
            key: Vec::new(),
            pos: p(1, 1),
        })
    );
    let policy = ok("CREATE ENTITY person ON adult (id)");
    assert_eq!(policy.entity.map(|e| e.key), Some(vec!["id".to_string()]));
}

#[test]
fn csv_delimiter_is_one_byte() {
    for (value, byte) in [
        ("';'", b';'),
        ("','", b','),
        ("'|'", b'|'),
        ("'tab'", b'\t'),
        ("TAB", b'\t'),
        ("'\t'", b'\t'),
        ("' '", b' '),
    ] {
        let policy = ok(&format!("SET csv_delimiter = {value};"));
        assert_eq!(
            policy.csv_delimiter,
            Some(CsvDelimiter { byte, pos: p(1, 1) }),
            "{value}"
        );
        assert!(policy.settings.is_empty(), "not left for the planner");
    }
    let policy = ok("SET CSV_Delimiter = ';'");
    assert_eq!(policy.csv_delimiter.map(|d| d.byte), Some(b';'));
}

#[test]
fn csv_delimiter_errors_say_what_to_write() {
    for value in [
        "'semicolon'",
        "';;'",
        "''",
        "'a'",
        "7",
        "'\"'",
        "''''",
        "'é'",
    ] {
        assert_err(
            &format!("SET csv_delimiter = {value};"),
            (1, 21),
            "csv_delimiter must be one punctuation character or 'tab', found",
        );
    }
    assert_err(
        "SET csv_delimiter = 'x';",
        (1, 21),
        "write e.g. SET csv_delimiter = ';' (or ',', '|', 'tab')",
    );
    assert_err(
        "SET csv_delimiter = ';';\nSET csv_delimiter = ',';",
        (2, 5),
        "'csv_delimiter' is already set at 1:1",
    );
}

#[test]
fn set_values_and_names() {
    let policy = ok(
        "set Orphans = 'drop';\nSET keys = preserve;\nSET seed = -42;\nSET Source = \"a b.sqlite\"",
    );
    assert_eq!(
        policy.settings,
        vec![
            setting("orphans", "drop", p(1, 1)),
            setting("keys", "preserve", p(2, 1)),
            setting("seed", "-42", p(3, 1)),
        ]
    );
    assert_eq!(
        policy.source,
        Some(setting("source", "a b.sqlite", p(4, 1)))
    );
}

#[test]
fn hierarchy_values_rows_of_any_length() {
    let policy =
        ok("CREATE HIERARCHY h AS VALUES ('Math'), ('CS','Science','Stem'), (15, '10-20');");
    assert_eq!(
        policy.hierarchies[0].source,
        HierarchySource::Values(strings(&[
            &["Math"],
            &["CS", "Science", "Stem"],
            &["15", "10-20"]
        ]))
    );
}

#[test]
fn hierarchy_select_keeps_source_text() {
    let text = "CREATE HIERARCHY g AS SELECT t.TrackId, g.Name  -- leaf, parent\n  FROM Track t JOIN Genre g USING (GenreId)   /* trailing */ ;\n";
    let policy = ok(text);
    assert_eq!(
        policy.hierarchies[0].source,
        HierarchySource::Select(
            "SELECT t.TrackId, g.Name  -- leaf, parent\n  FROM Track t JOIN Genre g USING (GenreId)"
                .into()
        )
    );
    // Columns count characters, not bytes: the slice must still land on the right text.
    let policy = ok("CREATE HIERARCHY \"é\" AS WITH x AS (SELECT 'ü' AS a) SELECT a, a FROM x");
    assert_eq!(policy.hierarchies[0].name, "é");
    assert_eq!(
        policy.hierarchies[0].source,
        HierarchySource::Select("WITH x AS (SELECT 'ü' AS a) SELECT a, a FROM x".into())
    );
}

#[test]
fn hierarchy_bands_dates_and_csv() {
    let policy = ok(
        "CREATE HIERARCHY a AS BANDS (2.5, 5) BETWEEN -10 AND 100;\n\
         create hierarchy b as bands (10);\n\
         CREATE HIERARCHY c AS DATE PARTS (Month, quarter, YEAR, decade);\n\
         CREATE HIERARCHY d AS DATE PARTS (year);\n\
         CREATE HIERARCHY e FROM CSV 'h/e.csv';",
    );
    let sources: Vec<&HierarchySource> = policy.hierarchies.iter().map(|h| &h.source).collect();
    assert_eq!(
        sources,
        vec![
            &HierarchySource::Bands {
                widths: vec![2.5, 5.0],
                range: Some((-10.0, 100.0))
            },
            &HierarchySource::Bands {
                widths: vec![10.0],
                range: None
            },
            &HierarchySource::DateParts(vec![
                DatePart::Month,
                DatePart::Quarter,
                DatePart::Year,
                DatePart::Decade
            ]),
            &HierarchySource::DateParts(vec![DatePart::Year]),
            &HierarchySource::Csv("h/e.csv".into()),
        ]
    );
}

#[test]
fn keys() {
    let policy = ok("ALTER TABLE students ADD PRIMARY KEY (sid);\n\
         ALTER TABLE enrol ADD CONSTRAINT pk_enrol PRIMARY KEY (sid, cid);\n\
         ALTER TABLE enrol ADD CONSTRAINT fk1 FOREIGN KEY (sid) REFERENCES students;\n\
         ALTER TABLE enrol ADD FOREIGN KEY (a, b) REFERENCES pairs (x, y);\n\
         CREATE ENTITY s ON enrol (sid, cid);");
    assert_eq!(
        policy.primary_keys,
        vec![
            KeyDecl {
                table: "students".into(),
                columns: vec!["sid".into()],
                pos: p(1, 1)
            },
            KeyDecl {
                table: "enrol".into(),
                columns: vec!["sid".into(), "cid".into()],
                pos: p(2, 1)
            },
        ]
    );
    assert_eq!(
        policy.foreign_keys,
        vec![
            ForeignKeyDecl {
                table: "enrol".into(),
                columns: vec!["sid".into()],
                ref_table: "students".into(),
                ref_columns: vec![],
                pos: p(3, 1)
            },
            ForeignKeyDecl {
                table: "enrol".into(),
                columns: vec!["a".into(), "b".into()],
                ref_table: "pairs".into(),
                ref_columns: vec!["x".into(), "y".into()],
                pos: p(4, 1)
            },
        ]
    );
    assert_eq!(
        policy.entity.map(|e| e.key),
        Some(vec!["sid".to_string(), "cid".to_string()])
    );
}

#[test]
fn label_roles() {
    let policy = ok("LABEL COLUMN t.a AS identifier;\n\
         LABEL COLUMN t.b AS QUASI_IDENTIFIER USING h;\n\
         LABEL COLUMN t.c AS quasi identifier using h2;\n\
         LABEL COLUMN t.d AS SENSITIVE BUCKETS (0, 2.0, 2.5);\n\
         LABEL COLUMN t.e AS INSENSITIVE;\n\
         LABEL TABLE t DEFAULT INSENSITIVE;");
    let roles: Vec<(Option<&str>, &Role)> = policy
        .labels
        .iter()
        .map(|l| (l.column.as_deref(), &l.role))
        .collect();
    assert_eq!(
        roles,
        vec![
            (Some("a"), &Role::Identifier),
            (
                Some("b"),
                &Role::QuasiIdentifier {
                    hierarchy: "h".into()
                }
            ),
            (
                Some("c"),
                &Role::QuasiIdentifier {
                    hierarchy: "h2".into()
                }
            ),
            (
                Some("d"),
                &Role::Sensitive {
                    buckets: Some(vec![0.0, 2.0, 2.5])
                }
            ),
            (Some("e"), &Role::Insensitive),
            (None, &Role::Insensitive),
        ]
    );
}

#[test]
fn anonymize_options() {
    let policy = ok("ANONYMIZE s WITH (K = 5, Model = kanon, eps = -0.5, name = \"x y\");");
    let a = policy.anonymize.expect("parsed");
    assert_eq!(a.options["k"].value, Value::Number(5.0));
    assert_eq!(a.options["model"].value, Value::Text("kanon".into()));
    assert_eq!(a.options["eps"].value, Value::Number(-0.5));
    assert_eq!(a.options["name"].value, Value::Text("x y".into()));
    assert_eq!(a.options["model"].pos, p(1, 26));
    let empty = ok("ANONYMIZE s WITH ()").anonymize.expect("parsed");
    assert!(empty.options.is_empty());
}

#[test]
fn views() {
    let policy = ok(
        "CREATE VIEW v AS SELECT 1;\nCREATE VIEW w AS WITH a AS (SELECT x FROM t) SELECT x FROM a",
    );
    assert_eq!(policy.views.len(), 2);
    assert_eq!(policy.views[0].query.to_string(), "SELECT 1");
    assert_eq!(policy.views[1].name, "w");
    assert_eq!(policy.views[1].pos, p(2, 1));
}

#[test]
fn quoted_identifiers_comments_and_case() {
    let text = "/* header; with a semicolon */\n\
         -- LABEL COLUMN ignored.x AS IDENTIFIER;\n\
         label column \"My Table\".\"My Col\" as Identifier; -- trailing\n\
         LABEL COLUMN \"label\".\"year\" AS /* inline */ INSENSITIVE;\n\
         LABEL COLUMN Students.Name AS SENSITIVE;\n\
         SET source = 'a;b.sqlite';";
    let policy = ok(text);
    let cols: Vec<(&str, Option<&str>, Pos)> = policy
        .labels
        .iter()
        .map(|l| (l.table.as_str(), l.column.as_deref(), l.pos))
        .collect();
    assert_eq!(
        cols,
        vec![
            ("My Table", Some("My Col"), p(3, 1)),
            ("label", Some("year"), p(4, 1)),
            ("Students", Some("Name"), p(5, 1)),
        ]
    );
    assert_eq!(policy.source.map(|s| s.value), Some("a;b.sqlite".into()));
    // A quoted word is a name, never a keyword.
    assert_err("\"SET\" source = 'x';", (1, 1), "found '\"SET\"'");
}

#[test]
fn statement_errors() {
    assert_err(
        "DROP TABLE x;",
        (1, 1),
        "expected SET, CREATE HIERARCHY, CREATE ENTITY, CREATE VIEW, CREATE RULE, ALTER TABLE, LABEL, KEEP or ANONYMIZE, found 'DROP'",
    );
    assert_err("-- c\n\n   drop table x;", (3, 4), "found 'drop'");
    assert_err(
        "CREATE TABLE t (a INT);",
        (1, 8),
        "HIERARCHY, ENTITY, VIEW or RULE after CREATE",
    );
    assert_err("ALTER VIEW v;", (1, 7), "TABLE after ALTER");
    assert_err(
        "SET a = 1\nSET b = 2;",
        (2, 1),
        "expected ';' to end the SET statement, found 'SET'",
    );
    assert_err("SET a 1;", (1, 7), "'=' after SET a");
    assert_err("SET = 1;", (1, 5), "a setting name after SET");
    assert_err("SET a = ;", (1, 9), "found ';'");
    assert_err("SET source = 'abc", (1, 14), "close every quoted string");
    assert_err("SET a = 1 /* open", (1, 11), "close every quoted string");
}

#[test]
fn duplicate_errors_name_the_first() {
    assert_err(
        "SET source = 'a';\n\n  SET Source = 'b';",
        (3, 7),
        "'source' is already set at 1:1",
    );
    assert_err("SET x = 1; SET X = 2;", (1, 16), "already set at 1:1");
    assert_err(
        "CREATE HIERARCHY h AS BANDS (5);\nCREATE HIERARCHY H AS BANDS (5);",
        (2, 18),
        "hierarchy 'H' is already declared at 1:1",
    );
    assert_err(
        "CREATE ENTITY a ON t (id);\n  CREATE ENTITY b ON u (id);",
        (2, 3),
        "entity 'a' is already declared at 1:1",
    );
    assert_err(
        "LABEL COLUMN t.c AS IDENTIFIER;\nLABEL COLUMN T.C AS SENSITIVE;",
        (2, 1),
        "column T.C is already labeled at 1:1",
    );
    assert_err(
        "LABEL TABLE t DEFAULT INSENSITIVE;\nLABEL TABLE t DEFAULT INSENSITIVE;",
        (2, 1),
        "already has a default at 1:1",
    );
    assert_err(
        "ANONYMIZE s WITH (k = 5);\nANONYMIZE s WITH (k = 6);",
        (2, 1),
        "already given at 1:1",
    );
    assert_err(
        "ANONYMIZE s WITH (k = 5, K = 6);",
        (1, 26),
        "option 'k' is already given at 1:19",
    );
    assert_err(
        "ALTER TABLE t ADD PRIMARY KEY (a);\nALTER TABLE T ADD PRIMARY KEY (b);",
        (2, 1),
        "already has a primary key declared at 1:1",
    );
    assert_err(
        "CREATE VIEW v AS SELECT 1;\nCREATE VIEW V AS SELECT 2;",
        (2, 13),
        "view 'V' is already declared at 1:1",
    );
    assert_err(
        "CREATE ENTITY e ON t (a, b, A);",
        (1, 29),
        "column 'A' is listed twice",
    );
}

#[test]
fn hierarchy_errors() {
    assert_err(
        "CREATE HIERARCHY h AS FOO;",
        (1, 23),
        "expected a hierarchy source after AS: VALUES (...), SELECT ..., BANDS (...), or DATE PARTS (...); found 'FOO'",
    );
    assert_err(
        "CREATE HIERARCHY h VALUES ('a');",
        (1, 20),
        "AS or FROM CSV after the hierarchy name",
    );
    assert_err(
        "CREATE HIERARCHY h FROM JSON 'x';",
        (1, 25),
        "CSV after FROM",
    );
    assert_err("CREATE HIERARCHY h FROM CSV x;", (1, 29), "quoted string");
    assert_err(
        "CREATE HIERARCHY h AS VALUES ('Math', Science);",
        (1, 39),
        "quote hierarchy values, e.g. 'Science'",
    );
    assert_err(
        "CREATE HIERARCHY h AS VALUES ();",
        (1, 31),
        "a quoted string or a number",
    );
    assert_err(
        "CREATE HIERARCHY h AS VALUES ('a' 'b');",
        (1, 35),
        "',' or ')'",
    );
    assert_err(
        "CREATE HIERARCHY h AS BANDS (0, 5);",
        (1, 30),
        "band widths must be positive",
    );
    assert_err(
        "CREATE HIERARCHY h AS BANDS (-5, 10);",
        (1, 30),
        "band widths must be positive",
    );
    assert_err(
        "CREATE HIERARCHY h AS BANDS (5, 5);",
        (1, 33),
        "band widths must increase strictly",
    );
    assert_err("CREATE HIERARCHY h AS BANDS ();", (1, 30), "a band width");
    assert_err(
        "CREATE HIERARCHY h AS BANDS (5)\n  BETWEEN 10 AND 5;",
        (2, 18),
        "upper bound 5 must be greater than the lower bound 10",
    );
    assert_err(
        "CREATE HIERARCHY h AS BANDS (5) BETWEEN 0 100;",
        (1, 43),
        "AND",
    );
    assert_err(
        "CREATE HIERARCHY h AS DATE (year);",
        (1, 28),
        "PARTS after DATE",
    );
    assert_err(
        "CREATE HIERARCHY h AS DATE PARTS (year, month);",
        (1, 41),
        "finer than 'year'",
    );
    assert_err(
        "CREATE HIERARCHY h AS DATE PARTS (month, Month);",
        (1, 42),
        "listed twice",
    );
    assert_err(
        "CREATE HIERARCHY h AS DATE PARTS (week);",
        (1, 35),
        "unknown date part 'week'; use month, quarter, year, decade",
    );
    assert_err(
        "CREATE HIERARCHY h AS\n  SELECT (a FROM t;",
        (2, 13),
        "the hierarchy's query is not a valid SQL query",
    );
    assert_err(
        "CREATE HIERARCHY h AS SELECT a FROM t )",
        (1, 39),
        "';' to end the CREATE HIERARCHY statement",
    );
}

#[test]
fn key_and_entity_errors() {
    assert_err(
        "CREATE ENTITY s ON t sid;",
        (1, 22),
        "';' to end the CREATE ENTITY statement, found 'sid'",
    );
    assert_err("CREATE ENTITY s ON", (1, 19), "found the end of the file");
    assert_err(
        "CREATE ENTITY s students (id);",
        (1, 17),
        "ON and the entity's table",
    );
    assert_err("CREATE ENTITY s ON t ();", (1, 23), "a column name");
    assert_err(
        "ALTER TABLE t ADD FOREIGN KEY (a, b) REFERENCES p (x);",
        (1, 51),
        "the foreign key has 2 column(s) but REFERENCES lists 1",
    );
    assert_err(
        "ALTER TABLE t ADD UNIQUE (a);",
        (1, 19),
        "PRIMARY KEY (...) or FOREIGN KEY",
    );
    assert_err(
        "ALTER TABLE t DROP x;",
        (1, 20),
        "FOREIGN KEY (columns) after DROP",
    );
    assert_err(
        "ALTER TABLE t MODIFY x;",
        (1, 15),
        "ADD or DROP after the table name",
    );
    assert_err(
        "ALTER TABLE t ADD FOREIGN KEY (a) p (x);",
        (1, 35),
        "REFERENCES",
    );
    assert_err(
        "ALTER TABLE t ADD FOREIGN KEY (a) REFERENCES p (x) ON DELETE CASCADE;",
        (1, 52),
        "';' to end the ALTER TABLE statement",
    );
}

#[test]
fn label_errors() {
    assert_err(
        "LABEL TABLE t DEFAULT SENSITIVE;",
        (1, 23),
        "only INSENSITIVE can be a table default",
    );
    assert_err("LABEL TABLE t SENSITIVE;", (1, 15), "DEFAULT INSENSITIVE");
    assert_err(
        "LABEL COLUMN c AS IDENTIFIER;",
        (1, 16),
        "'.' and a column name after 'c'",
    );
    assert_err("LABEL COLUMN t.c IDENTIFIER;", (1, 18), "AS and a role");
    assert_err(
        "LABEL ROW t.c AS IDENTIFIER;",
        (1, 7),
        "COLUMN or TABLE after LABEL",
    );
    assert_err(
        "LABEL COLUMN t.c AS PUBLIC;",
        (1, 21),
        "a role after AS: IDENTIFIER, QUASI IDENTIFIER USING <hierarchy>, SENSITIVE [BUCKETS (...)] or INSENSITIVE, found 'PUBLIC'",
    );
    assert_err(
        "LABEL COLUMN t.c AS QUASI-IDENTIFIER USING h;",
        (1, 26),
        "IDENTIFIER after QUASI",
    );
    assert_err(
        "LABEL COLUMN t.c AS QUASI IDENTIFIER;",
        (1, 37),
        "USING and a hierarchy name",
    );
    assert_err(
        "LABEL COLUMN t.c AS SENSITIVE BUCKETS (0);",
        (1, 31),
        "at least 2 boundaries",
    );
    assert_err(
        "LABEL COLUMN t.c\n  AS SENSITIVE\n  BUCKETS (0, 2.5, 2.0);",
        (3, 20),
        "bucket boundaries must increase strictly, but 2.0 follows 2.5",
    );
    assert_err(
        "LABEL COLUMN t.c AS SENSITIVE BUCKETS (0, 'a');",
        (1, 43),
        "a bucket boundary",
    );
}

#[test]
fn anonymize_and_view_errors() {
    assert_err("ANONYMIZE s (k = 5);", (1, 13), "WITH and an option list");
    assert_err("ANONYMIZE s WITH k = 5;", (1, 18), "'(' after WITH");
    assert_err("ANONYMIZE s WITH (k 5);", (1, 21), "'=' after option 'k'");
    assert_err(
        "ANONYMIZE s WITH (k = 5 model = 'x');",
        (1, 25),
        "',' or ')' after an option value",
    );
    assert_err(
        "ANONYMIZE s WITH (k = );",
        (1, 23),
        "a value for option 'k'",
    );
    assert_err("CREATE VIEW v (a) AS SELECT 1;", (1, 15), "column list");
    assert_err("CREATE VIEW v SELECT 1;", (1, 15), "AS and a query");
    assert_err(
        "CREATE VIEW v AS\n\n  SELECT a FROM t WHERE;",
        (3, 24),
        "the query of view 'v' is not a valid SQL query",
    );
}

#[test]
fn long_tokens_are_shortened_in_messages() {
    let long = "x".repeat(200);
    let e = err(&format!("{long};"));
    assert!(e.message.len() < 200, "{}", e.message);
}

/// Every prefix of a valid file (cut anywhere, including inside tokens, strings, comments
/// and multi-byte characters) must give a policy or an error, never a panic.
#[test]
fn truncations_never_panic() {
    let extra = "CREATE HIERARCHY \"é h\" AS VALUES ('ü', \"x\"), (1.5, -2);\n\
         ALTER TABLE \"My Table\" ADD CONSTRAINT c FOREIGN KEY (a, b) REFERENCES p (x, y);\n\
         LABEL TABLE t DEFAULT INSENSITIVE; /* done */\n\
         CREATE HIERARCHY x AS BANDS (1, 2) BETWEEN -1 AND 1e3;\n\
         SET keys = preserve;";
    for text in [EXAMPLE, extra] {
        for (i, _) in text.char_indices().chain([(text.len(), ' ')]) {
            let prefix = &text[..i];
            let _ = parse(prefix);
            // Also the rest, which starts mid-statement.
            let _ = parse(&text[i..]);
        }
    }
}

/// Random sequences of grammar fragments: deterministic (a fixed LCG) so failures reproduce.
#[test]
fn random_fragments_never_panic() {
    const FRAGMENTS: &[&str] = &[
        "SET",
        "CREATE",
        "HIERARCHY",
        "ENTITY",
        "VIEW",
        "ALTER",
        "TABLE",
        "ADD",
        "PRIMARY",
        "FOREIGN",
        "KEY",
        "REFERENCES",
        "LABEL",
        "COLUMN",
        "AS",
        "QUASI",
        "IDENTIFIER",
        "SENSITIVE",
        "INSENSITIVE",
        "BUCKETS",
        "BANDS",
        "BETWEEN",
        "AND",
        "DATE",
        "PARTS",
        "VALUES",
        "SELECT",
        "FROM",
        "CSV",
        "USING",
        "ANONYMIZE",
        "WITH",
        "DEFAULT",
        "ON",
        "(",
        ")",
        ",",
        ";",
        ".",
        "=",
        "-",
        "'s'",
        "\"q\"",
        "5",
        "0",
        "2.5",
        "t",
        "month",
        "year",
        "--c\n",
        "/*c*/",
        "\n",
        "*",
        "'",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..3000 {
        let mut text = String::new();
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        let len = (state >> 33) % 24;
        for _ in 0..len {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            let pick = usize::try_from(state >> 33).unwrap_or(0) % FRAGMENTS.len();
            text.push_str(FRAGMENTS[pick]);
            text.push(' ');
        }
        let _ = parse(&text);
    }
}

#[test]
fn error_display_is_position_then_message() {
    let e = err("\n  DROP x;");
    assert_eq!(
        e.to_string(),
        "2:3: expected SET, CREATE HIERARCHY, CREATE ENTITY, CREATE VIEW, CREATE RULE, ALTER TABLE, LABEL, KEEP or ANONYMIZE, found 'DROP'"
    );
}

#[test]
fn dimensions_and_foreign_keys_set_aside() {
    let policy = ok("LABEL TABLE \"Employees\" AS DIMENSION;\n\
         LABEL TABLE \"Employees\" DEFAULT INSENSITIVE;\n\
         ALTER TABLE payment DROP FOREIGN KEY (rental_id);\n\
         alter table \"Order Details\" drop foreign key (\"OrderID\", \"ProductID\");");
    assert_eq!(
        policy.dimensions,
        vec![TableDecl {
            table: "Employees".to_string(),
            pos: p(1, 1),
        }]
    );
    assert_eq!(policy.labels.len(), 1, "the default is a label of its own");
    assert_eq!(
        policy.dropped_foreign_keys,
        vec![
            KeyDecl {
                table: "payment".to_string(),
                columns: vec!["rental_id".to_string()],
                pos: p(3, 1),
            },
            KeyDecl {
                table: "Order Details".to_string(),
                columns: vec!["OrderID".to_string(), "ProductID".to_string()],
                pos: p(4, 1),
            },
        ]
    );
}

#[test]
fn dimension_and_set_aside_errors() {
    assert_err("LABEL TABLE t AS FACT;", (1, 18), "DIMENSION after AS");
    assert_err(
        "LABEL TABLE t AS DIMENSION;\nlabel table T as dimension;",
        (2, 1),
        "already declared a dimension at 1:1",
    );
    assert_err(
        "ALTER TABLE t DROP KEY (a);",
        (1, 20),
        "FOREIGN KEY (columns) after DROP",
    );
    assert_err("ALTER TABLE t DROP FOREIGN KEY a;", (1, 32), "'('");
    assert_err(
        "ALTER TABLE t DROP FOREIGN KEY (a);\nALTER TABLE T DROP FOREIGN KEY (A);",
        (2, 1),
        "already set aside at 1:1",
    );
}

#[test]
fn rules_name_a_column_a_value_or_every_value() {
    let policy = ok(
        "CREATE RULE aids ON visits.diagnosis = 'AIDS' WITH (m = 1, p = 0.5);\n\
         CREATE RULE grades ON enrollments.grade WITH (p = '1/3', m = 2);\n\
         CREATE RULE price ON purchases.price = 40 WITH (m = 3, p = 0.25);\n\
         CREATE RULE missing ON visits.diagnosis IS NULL WITH (m = 1, p = 1);",
    );
    let r = &policy.rules;
    assert_eq!(r.len(), 4);
    assert_eq!(
        (
            r[0].name.as_str(),
            r[0].table.as_str(),
            r[0].column.as_str()
        ),
        ("aids", "visits", "diagnosis")
    );
    assert_eq!(r[0].value, RuleValue::Value("AIDS".into()));
    assert_eq!((r[0].m.0, r[0].p.0.as_str()), (1.0, "0.5"));
    assert_eq!(r[1].value, RuleValue::Every);
    assert_eq!((r[1].m.0, r[1].p.0.as_str()), (2.0, "1/3"));
    assert_eq!(r[2].value, RuleValue::Value("40".into()));
    assert_eq!(r[3].value, RuleValue::Null);
    assert_eq!(r[1].pos, p(2, 1));
}

#[test]
fn rule_errors_say_what_to_write() {
    assert_err(
        "CREATE RULE ON t.c WITH (m = 1, p = 1);",
        (1, 16),
        "ON and the sensitive column",
    );
    assert_err(
        "CREATE RULE r ON t WITH (m = 1, p = 1);",
        (1, 20),
        "'.' and a column name",
    );
    assert_err(
        "CREATE RULE r ON t.c = AIDS WITH (m = 1, p = 1);",
        (1, 24),
        "quote the value",
    );
    assert_err("CREATE RULE r ON t.c WITH (m = 1);", (1, 1), "needs p");
    assert_err("CREATE RULE r ON t.c WITH (p = 0.5);", (1, 1), "needs m");
    assert_err(
        "CREATE RULE r ON t.c WITH (m = 1, m = 2, p = 1);",
        (1, 35),
        "m is already given",
    );
    assert_err(
        "CREATE RULE r ON t.c WITH (k = 1);",
        (1, 28),
        "a rule takes m and p",
    );
    assert_err(
        "CREATE RULE r ON t.c WITH (m = 1, p = 1);\nCREATE RULE R ON t.d WITH (m = 1, p = 1);",
        (2, 13),
        "rule 'R' is already declared at 1:1",
    );
}

#[test]
fn keep_floors() {
    let policy = ok("KEEP 90 PERCENT OF \"Order Details\";\nkeep 12.5 percent of rental;");
    let floors: Vec<(&str, f64, u64)> = policy
        .keeps
        .iter()
        .map(|k| (k.table.as_str(), k.percent, k.pos.line))
        .collect();
    assert_eq!(
        floors,
        vec![("Order Details", 90.0, 1), ("rental", 12.5, 2)]
    );
    assert_err(
        "KEEP PERCENT OF t;",
        (1, 6),
        "a share of rows in percent after KEEP",
    );
    assert_err(
        "KEEP 0 PERCENT OF t;",
        (1, 6),
        "above 0 and at most 100, found 0",
    );
    assert_err("KEEP 101 PERCENT OF t;", (1, 6), "found 101");
    assert_err("KEEP 90 OF t;", (1, 9), "PERCENT after the number");
    assert_err(
        "KEEP 90 PERCENT t;",
        (1, 17),
        "OF and a table after PERCENT",
    );
    assert_err("KEEP 90 PERCENT OF t u;", (1, 22), "KEEP");
    assert_err(
        "KEEP 90 PERCENT OF t;\nKEEP 80 PERCENT OF T;",
        (2, 1),
        "table 'T' already has a KEEP at 1:1",
    );
}
