//! A proposal as a declarations file: every identifier double-quoted, every role with its
//! reason as a comment on its line, suggestions marked `-- review`, and the hierarchy files
//! of rows beside it.

use std::fmt::Write as _;

use super::keys::KeyChange;
use super::roles::{HierarchyPlan, Role};
use super::{Fate, Proposal, TableProposal};
use crate::warehouse::quote_ident as q;

/// The marker of a line the owner must look at (followed by `:` and the reason); `plan`
/// lists the lines that still carry it.
pub const REVIEW: &str = "-- review";

/// The first line of every file `init` writes: its signature, which `outputs` owns.
pub use crate::outputs::DECLARATIONS_HEADER as HEADER;

/// The text of a declarations file and the hierarchy files it reads.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub text: String,
    /// Path relative to the declarations file, and content (ARX layout: `leaf;...;*`).
    pub files: Vec<(String, String)>,
}

/// A single-quoted SQL string.
fn s(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Writes the proposal. `source` and `target` are written as given (relative to the
/// declarations file); hierarchy files go under `files_dir` (relative too).
/// `settings` are further `SET` statements (name, value).
pub fn render(
    p: &Proposal,
    source: &str,
    target: &str,
    files_dir: &str,
    settings: &[(String, String)],
) -> Rendered {
    let mut out = String::new();
    let mut files: Vec<(String, String)> = Vec::new();
    preamble(&mut out, source, target, settings);
    entity(p, &mut out);
    let mut used_files = std::collections::BTreeSet::new();
    for t in &p.tables {
        table(t, files_dir, &mut used_files, &mut files, &mut out);
    }
    left_out(p, &mut out);
    let _ = writeln!(
        out,
        "-- k = {}: every person's whole record hides among at least {} (docs/declarations.md lists the\n-- other models, algorithms and options).",
        p.k, p.k
    );
    if p.asked_k != p.k {
        let _ = writeln!(
            out,
            "{REVIEW}: k = {} was asked for, but {} has only {} rows, so k is lowered to {}: too few people to hide among",
            p.asked_k, p.entity, p.k, p.k
        );
    }
    let _ = writeln!(out, "ANONYMIZE {} WITH (k = {});", q(&p.entity), p.k);
    sensitive_model(p, &mut out);
    Rendered { text: out, files }
}

/// The header `--overwrite` recognises, the advice to the reader, and the `SET`s: the
/// first thing an owner opening the file must see is that every line is a proposal.
fn preamble(out: &mut String, source: &str, target: &str, settings: &[(String, String)]) {
    let _ = writeln!(out, "{HEADER}");
    let _ = writeln!(
        out,
        "-- Every role below is a proposal with its reason: read each one before publishing.\n-- A line whose comment starts with review is a suggestion relanon does not make silently:\n-- decide, then delete the word; `relanon plan` lists those still marked. Paths are\n-- relative to this file.\n"
    );
    let _ = writeln!(out, "SET source = {};", s(source));
    for (name, value) in settings {
        let _ = writeln!(out, "SET {name} = {};", s(value));
    }
    let _ = writeln!(out, "SET target = {};\n", s(target));
}

/// The entity with why it was chosen and what else could have been, then the key
/// changes: the keys decide the family, so they come before any table's roles.
fn entity(p: &Proposal, out: &mut String) {
    let _ = writeln!(out, "-- The entity: {}", p.entity_reason);
    if !p.alternatives.is_empty() {
        let _ = writeln!(out, "-- Other tables that could be the entity:");
        for a in &p.alternatives {
            let _ = writeln!(out, "--   {a}");
        }
    }
    let key = if p.entity_key.is_empty() {
        String::new()
    } else {
        format!(
            " ({})",
            p.entity_key
                .iter()
                .map(|c| q(c))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let _ = writeln!(
        out,
        "CREATE ENTITY {} ON {}{key};\n",
        q(&p.entity),
        q(&p.entity)
    );

    if !p.keys.is_empty() {
        let _ = writeln!(
            out,
            "-- Keys the source does not declare, and keys set aside."
        );
        for change in &p.keys {
            let _ = writeln!(out, "{}", key_statement(change));
        }
        out.push('\n');
    }
}

/// One released table: its fate as a comment, then a role line per column with its
/// reason, so each decision can be reviewed where it is made. A table left out writes
/// nothing here (it is listed after all the released ones).
fn table(
    t: &TableProposal,
    files_dir: &str,
    used_files: &mut std::collections::BTreeSet<String>,
    files: &mut Vec<(String, String)>,
    out: &mut String,
) {
    match &t.fate {
        Fate::Entity => {
            let _ = writeln!(out, "-- {}: the entity table, {} rows.", q(&t.name), t.rows);
        }
        Fate::Family { parent } => {
            let _ = writeln!(
                out,
                "-- {}: in the family, under {}, {} rows.",
                q(&t.name),
                q(parent),
                t.rows
            );
        }
        Fate::Dimension { reason } => {
            let _ = writeln!(
                out,
                "-- {}: released beside the family as a dimension ({reason}), {} rows.",
                q(&t.name),
                t.rows
            );
            let _ = writeln!(out, "LABEL TABLE {} AS DIMENSION;", q(&t.name));
        }
        Fate::LeftOut { .. } => return,
    }
    for c in &t.columns {
        let Some(d) = &c.decision else {
            let _ = writeln!(out, "--   {}: {}", q(&c.name), c.note);
            continue;
        };
        let target = format!("{}.{}", q(&t.name), q(&c.name));
        let role = match &d.role {
            Role::Identifier => "IDENTIFIER".to_string(),
            Role::Sensitive => "SENSITIVE".to_string(),
            Role::Insensitive => "INSENSITIVE".to_string(),
            Role::Qi(plan) => {
                let name = format!("{}.{}", t.name, c.name);
                let source = hierarchy_source(plan, &name, files_dir, used_files, files);
                let _ = writeln!(out, "CREATE HIERARCHY {} {source};", q(&name));
                format!("QUASI IDENTIFIER USING {}", q(&name))
            }
        };
        let marker = if d.review {
            format!("{REVIEW}:")
        } else {
            "--".to_string()
        };
        let _ = writeln!(
            out,
            "LABEL COLUMN {target} AS {role}; {marker} {}",
            d.reason
        );
    }
    out.push('\n');
}

/// The tables left out, each with its reason, so the owner sees what the release will not
/// hold and how to bring a table back.
fn left_out(p: &Proposal, out: &mut String) {
    let left_out: Vec<_> = p
        .tables
        .iter()
        .filter_map(|t| match &t.fate {
            Fate::LeftOut { reason } => Some((t, reason)),
            _ => None,
        })
        .collect();
    if !left_out.is_empty() {
        let _ = writeln!(
            out,
            "-- Left out of the release (declare one a DIMENSION, with roles, to release it):"
        );
        for (t, reason) in left_out {
            let _ = writeln!(out, "--   {} ({} rows): {reason}", q(&t.name), t.rows);
        }
        out.push('\n');
    }
}

/// When columns are proposed SENSITIVE, the model that protects them, proposed for review
/// beside the k-anonymity statement: k-anonymity hides who a record is, not what a class
/// has in common, and the model that makes classes diverse cannot be chosen silently,
/// because its l takes the place of k.
fn sensitive_model(p: &Proposal, out: &mut String) {
    let sensitive: Vec<String> = p
        .tables
        .iter()
        .filter(|t| matches!(t.fate, Fate::Entity | Fate::Family { .. }))
        .flat_map(|t| {
            t.columns.iter().filter_map(move |c| {
                let d = c.decision.as_ref()?;
                (d.role == Role::Sensitive).then(|| format!("{}.{}", t.name, c.name))
            })
        })
        .collect();
    if sensitive.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "{REVIEW}: {} column(s) are proposed SENSITIVE ({}). k-anonymity publishes them unchanged: it hides who a record is, but a class whose {} people share a value tells that value of each of them. To protect them, replace the statement above with the one below: model = 'l-diversity' makes every class hold at least l people and l distinct values of each SENSITIVE column (l takes the place of k; a smaller l keeps more rows but hides each person among fewer). Where the quasi-identifiers are worth publishing exactly, model = 'anatomy' publishes the sensitive values apart instead (docs/anatomy.md).",
        sensitive.len(),
        sensitive.join(", "),
        p.k
    );
    let _ = writeln!(
        out,
        "-- ANONYMIZE {} WITH (model = 'l-diversity', l = {});",
        q(&p.entity),
        p.k
    );
}

fn key_statement(change: &KeyChange) -> String {
    let cols = |c: &[String]| c.iter().map(|x| q(x)).collect::<Vec<_>>().join(", ");
    match change {
        KeyChange::AddPrimaryKey {
            table,
            columns,
            reason,
        } => format!(
            "ALTER TABLE {} ADD PRIMARY KEY ({}); -- {reason}",
            q(table),
            cols(columns)
        ),
        KeyChange::AddForeignKey { table, fk, reason } => format!(
            "ALTER TABLE {} ADD FOREIGN KEY ({}) REFERENCES {} ({}); -- {reason}",
            q(table),
            cols(&fk.columns),
            q(&fk.ref_table),
            cols(&fk.ref_columns)
        ),
        KeyChange::DropForeignKey { table, fk, reason } => format!(
            "ALTER TABLE {} DROP FOREIGN KEY ({}); -- set aside (it references {}): {reason}",
            q(table),
            cols(&fk.columns),
            fk.ref_table
        ),
    }
}

/// The text after `CREATE HIERARCHY name`; rows go to a CSV file unless a value holds what
/// a CSV cell cannot (`;`, a line break), then inline as `AS VALUES`.
fn hierarchy_source(
    plan: &HierarchyPlan,
    name: &str,
    files_dir: &str,
    used: &mut std::collections::BTreeSet<String>,
    files: &mut Vec<(String, String)>,
) -> String {
    match plan {
        HierarchyPlan::DateParts(parts) => format!("AS DATE PARTS ({})", parts.join(", ")),
        HierarchyPlan::Bands(widths) => format!(
            "AS BANDS ({})",
            widths
                .iter()
                .map(|w| w.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        HierarchyPlan::Select(sql) => format!("AS {sql}"),
        HierarchyPlan::Rows(rows) => {
            let csv_safe = rows
                .iter()
                .flatten()
                .all(|v| !v.contains([';', '\n', '\r']));
            if !csv_safe {
                let values: Vec<String> = rows
                    .iter()
                    .map(|r| {
                        format!(
                            "({})",
                            r.iter().map(|v| s(v)).collect::<Vec<_>>().join(", ")
                        )
                    })
                    .collect();
                return format!("AS VALUES {}", values.join(", "));
            }
            let stem: String = name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            let mut file = format!("{files_dir}/{stem}.csv");
            let mut n = 2;
            while !used.insert(file.to_lowercase()) {
                file = format!("{files_dir}/{stem}-{n}.csv");
                n += 1;
            }
            let mut content = String::new();
            for r in rows {
                let _ = writeln!(content, "{};*", r.join(";"));
            }
            files.push((file.clone(), content));
            format!("FROM CSV {}", s(&file))
        }
    }
}
