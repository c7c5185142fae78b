//! Keys the source does not carry, inferred from names and values, and the foreign keys
//! set aside so the entity's family is a snowflake the planner accepts. Each change is
//! applied to the warehouse (so the planner's own family reading sees it) and recorded with
//! its reason, to be written as an `ALTER TABLE` statement.

use std::collections::{HashMap, HashSet};

use arrow::array::RecordBatch;

pub use crate::plan::family_members;

use crate::plan::{FamilyTable, PlanError};
use crate::warehouse::{render_value, ForeignKey, TableMeta, Warehouse, WarehouseError};

/// One key statement `init` writes.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyChange {
    AddPrimaryKey {
        table: String,
        columns: Vec<String>,
        reason: String,
    },
    AddForeignKey {
        table: String,
        fk: ForeignKey,
        reason: String,
    },
    DropForeignKey {
        table: String,
        fk: ForeignKey,
        reason: String,
    },
}

/// A column name as words, lowercase: `BillingPostalCode` -> billing postal code,
/// `c_phone` -> c phone, `e-mail` -> e mail.
pub fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            continue;
        }
        // A capital after a lowercase letter (or before one, ending a run of capitals as in
        // `IPAddress`) starts a word.
        let boundary = c.is_uppercase()
            && i > 0
            && (chars[i - 1].is_lowercase()
                || (chars[i - 1].is_uppercase()
                    && chars.get(i + 1).is_some_and(|n| n.is_lowercase())));
        if boundary && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// A name reduced to lowercase letters and digits: `Customer_ID` and `customerid` agree.
pub fn squash(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// A table name's singular, squashed: `customers` -> customer, `categories` -> category.
fn singular(table: &str) -> String {
    let s = squash(table);
    if let Some(stem) = s.strip_suffix("ies") {
        format!("{stem}y")
    } else if s.ends_with("ses") || s.ends_with("xes") {
        s[..s.len() - 2].to_string()
    } else if s.len() > 3 && s.ends_with('s') && !s.ends_with("ss") {
        s[..s.len() - 1].to_string()
    } else {
        s
    }
}

/// Whether a column name reads as a key of its own table or another's.
pub fn id_like(name: &str) -> bool {
    let w = words(name);
    // A short word ending in `id` is an abbreviation (`sid`, `scid`) unless it is an
    // English word (`paid`, `valid`).
    const WORDS: [&str; 21] = [
        "paid", "said", "void", "raid", "maid", "laid", "acid", "arid", "avid", "grid", "skid",
        "squid", "valid", "solid", "rapid", "vivid", "fluid", "humid", "timid", "lucid", "rigid",
    ];
    matches!(
        w.last().map(String::as_str),
        Some("id" | "key" | "no" | "nr")
    ) || (w.len() == 1
        && (3..=5).contains(&w[0].len())
        && w[0].ends_with("id")
        && !WORDS.contains(&w[0].as_str()))
}

/// A column's values as text, NULLs left out, and whether any value was NULL.
fn values(batch: &RecordBatch, column: &str) -> (Vec<String>, bool) {
    let Ok(i) = batch.schema().index_of(column) else {
        return (Vec::new(), false);
    };
    let array = batch.column(i);
    let mut out = Vec::with_capacity(array.len());
    let mut nulls = false;
    for r in 0..array.len() {
        match render_value(array.as_ref(), r) {
            Some(v) => out.push(v),
            None => nulls = true,
        }
    }
    (out, nulls)
}

/// Declares a primary key on every table without one that has an id-like column whose
/// values are all present and distinct: `id`, `<table>_id`, then the first other id-like
/// column in source order.
pub fn infer_primary_keys(wh: &mut Warehouse) -> Result<Vec<KeyChange>, WarehouseError> {
    let mut changes = Vec::new();
    let keyless: Vec<TableMeta> = wh
        .tables
        .iter()
        .filter(|t| t.primary_key.is_empty())
        .cloned()
        .collect();
    for t in keyless {
        let own = singular(&t.name);
        let mut candidates: Vec<(u8, &str)> = t
            .columns
            .iter()
            .filter(|c| id_like(&c.name))
            .map(|c| {
                let s = squash(&c.name);
                let rank = if s == "id" {
                    0
                } else if s == format!("{own}id") || s == format!("{}id", squash(&t.name)) {
                    1
                } else {
                    2
                };
                (rank, c.name.as_str())
            })
            .collect();
        candidates.sort_by_key(|&(rank, _)| rank);
        let batch = wh.table_in_source_order(&t.name)?;
        for (_, column) in candidates {
            let (vals, nulls) = values(&batch, column);
            if nulls || vals.is_empty() {
                continue;
            }
            let distinct: HashSet<&String> = vals.iter().collect();
            if distinct.len() == vals.len() {
                let columns = vec![column.to_string()];
                wh.declare_primary_key(&t.name, &columns)?;
                changes.push(KeyChange::AddPrimaryKey {
                    table: t.name.clone(),
                    columns,
                    reason: format!(
                        "inferred: {column} is named like a key and its {} values are present and distinct",
                        vals.len()
                    ),
                });
                break;
            }
        }
    }
    Ok(changes)
}

/// Declares a foreign key for every column named after another table or its one-column
/// primary key (`customer_id` -> customer(customer_id), or customer(id); `PATIENT` ->
/// patients(Id)) whose values all occur in that key. Only for a source without foreign keys of its own: inferring beside a catalog
/// would second-guess what its owner declared.
pub fn infer_foreign_keys(wh: &mut Warehouse) -> Result<Vec<KeyChange>, WarehouseError> {
    if wh.tables.iter().any(|t| !t.foreign_keys.is_empty()) {
        return Ok(Vec::new());
    }
    let parents: Vec<(String, String)> = wh
        .tables
        .iter()
        .filter(|t| t.primary_key.len() == 1)
        .map(|t| (t.name.clone(), t.primary_key[0].clone()))
        .collect();
    let mut keys: HashMap<String, HashSet<String>> = HashMap::new();
    for (table, pk) in &parents {
        let batch = wh.table_in_source_order(table)?;
        keys.insert(table.clone(), values(&batch, pk).0.into_iter().collect());
    }
    let mut changes = Vec::new();
    let tables = wh.tables.clone();
    for t in &tables {
        let batch = wh.table_in_source_order(&t.name)?;
        for c in &t.columns {
            if t.primary_key == [c.name.clone()] {
                continue;
            }
            let s = squash(&c.name);
            let named = parents
                .iter()
                .filter(|(p, pk)| p != &t.name && names_key_of(&s, p, pk));
            for (parent, pk) in named {
                let (vals, _) = values(&batch, &c.name);
                let Some(known) = keys.get(parent) else {
                    continue;
                };
                let found = vals.iter().filter(|v| known.contains(*v)).count();
                if vals.is_empty() || found < vals.len() {
                    continue;
                }
                let fk = ForeignKey {
                    columns: vec![c.name.clone()],
                    ref_table: parent.clone(),
                    ref_columns: vec![pk.clone()],
                };
                wh.declare_foreign_key(&t.name, fk.clone())?;
                changes.push(KeyChange::AddForeignKey {
                    table: t.name.clone(),
                    fk,
                    reason: format!(
                        "inferred: {} is named after {parent}.{pk} and all {} of its values occur there",
                        c.name,
                        vals.len()
                    ),
                });
                break;
            }
        }
    }
    Ok(changes)
}

/// Whether a column (squashed name `column`) is named after table `table` whose one-column
/// key is `pk`: the key's own name (`customer_id`, not a bare `id`), the table's name
/// followed by `id` when the key is `id`, or the table's name alone, singular or plural
/// (`PATIENT` -> patients, as health-record exports name their references).
fn names_key_of(column: &str, table: &str, pk: &str) -> bool {
    let key = squash(pk);
    let (one, all) = (singular(table), squash(table));
    (column == key && key != "id")
        || (key == "id" && (column == format!("{one}id") || column == format!("{all}id")))
        || column == one
        || column == all
}

/// Sets aside, one at a time, each foreign key the planner names as keeping the family of
/// `root` from being a snowflake (two paths that do not nest, a cycle, a reference to a
/// non-key), until it reads the family; returns what was set aside and the family.
pub fn make_snowflake(
    wh: &mut Warehouse,
    root: &str,
) -> Result<(Vec<KeyChange>, Vec<FamilyTable>), PlanError> {
    let mut changes = Vec::new();
    loop {
        match crate::plan::family(wh, root) {
            Ok(family) => return Ok((changes, family)),
            Err(PlanError::Fk(bad)) => {
                wh.drop_foreign_key(&bad.table, &bad.fk.columns)?;
                changes.push(KeyChange::DropForeignKey {
                    table: bad.table,
                    fk: bad.fk,
                    reason: bad.why,
                });
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_words() {
        assert_eq!(words("BillingPostalCode"), ["billing", "postal", "code"]);
        assert_eq!(words("c_phone"), ["c", "phone"]);
        assert_eq!(words("IPAddress"), ["ip", "address"]);
        assert_eq!(words("e-mail"), ["e", "mail"]);
        assert_eq!(words("Order Date"), ["order", "date"]);
        assert_eq!(words("yob"), ["yob"]);
    }

    #[test]
    fn keys_are_recognized_by_name() {
        for key in [
            "id",
            "customer_id",
            "CustomerId",
            "TrackID",
            "emp_no",
            "sid",
        ] {
            assert!(id_like(key), "{key}");
        }
        for other in ["name", "idea", "paid", "valid"] {
            assert!(!id_like(other), "{other}");
        }
        assert_eq!(singular("Categories"), "category");
        assert_eq!(singular("addresses"), "address");
        assert_eq!(singular("customers"), "customer");
        assert_eq!(singular("class"), "class");
    }

    #[test]
    fn references_are_named_after_a_table_or_its_key() {
        assert!(names_key_of("customerid", "customers", "customer_id"));
        assert!(names_key_of("customerid", "customers", "id"));
        assert!(names_key_of("patient", "patients", "Id"));
        assert!(names_key_of("patients", "patients", "Id"));
        assert!(names_key_of("encounter", "encounters", "Id"));
        assert!(names_key_of("patientid", "patients", "Id"));
        assert!(!names_key_of("id", "patients", "id"));
        assert!(!names_key_of("payer", "patients", "Id"));
        assert!(!names_key_of("appointmentid", "encounters", "Id"));
    }
}
