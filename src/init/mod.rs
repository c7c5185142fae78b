//! `relanon init`: declarations proposed from the data, ready to review and runnable as
//! they are. The entity table is the one given, or the table about people that the most
//! rows hang under; keys the source lacks are inferred from names and value containment;
//! foreign keys that would keep the family from being a snowflake are set aside; every
//! column of every released table gets a role with its reason; each quasi-identifier gets a
//! hierarchy (date parts, bands, a grouping read from the table an FK leads to, or groups of
//! its values); tables outside the family are released as dimensions only when they hold no
//! personal data and the release points into them. Nothing about sensitivity is guessed
//! silently: SENSITIVE is only ever a suggestion marked `-- review`.
//!
//! The family is read by the planner's own `plan::family`, so the proposal and the plan
//! agree on which columns are join keys. Reads through [`crate::warehouse`]; writes nothing
//! (`render` returns the file's text and the hierarchy files beside it).
//!
//! Two data-only measures decide roles and serve other commands too: `holders` (the entity
//! each family row belongs to, and how many people hold each value of a column: a column
//! whose values are mostly held by fewer than k people is an identifier), used by `plan`
//! for the rows each table can keep; and `twins` (a column that determines another of its
//! table takes its role), used by `plan`'s warnings and by `attack`, which reads facts
//! through the twins a release publishes. `verify` keeps its own.

use std::collections::{BTreeMap, BTreeSet};

use arrow::array::RecordBatch;

use crate::plan::FamilyTable;
use crate::warehouse::{ForeignKey, Warehouse, WarehouseError};

mod holders;
mod keys;
mod profile;
mod render;
mod roles;
mod twins;

pub use holders::{owners, Owners};
pub use keys::KeyChange;
pub use profile::{Pattern, Profile};
pub use render::{render, Rendered, HEADER, REVIEW};
pub use roles::{Decision, HierarchyPlan, Role};
pub use twins::{twin_map, twin_pairs};

/// What the data owner asks of `init`.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The entity table; proposed from the schema when absent.
    pub entity: Option<String>,
    /// The k written into `ANONYMIZE`.
    pub k: usize,
}

/// Why `init` cannot propose declarations. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error("the source holds no tables: point init at a SQLite file, a CSV / Parquet file or a directory of them")]
    Empty,
    #[error("no table '{table}' in the source; its tables are: {known}")]
    UnknownTable { table: String, known: String },
    #[error("the source has {count} tables and no foreign keys between them (none declared, none inferable from names and values), so the entity cannot be told from the schema: pass --entity TABLE naming the table with one row per person; tables with a key: {keyed}")]
    NoForeignKeys { count: usize, keyed: String },
    #[error("the entity table '{table}' has no primary key and no column that could be one (named like a key, every value present and distinct), so no other table can hang under it: add a key column to the source, or choose another table with --entity ({keyed})")]
    EntityWithoutKey { table: String, keyed: String },
    #[error("the schema around '{entity}' cannot be read as a family: {detail}")]
    Family { entity: String, detail: String },
    #[error(transparent)]
    Warehouse(#[from] WarehouseError),
}

/// One released or left-out table of the proposal.
#[derive(Debug, Clone)]
pub struct TableProposal {
    pub name: String,
    pub rows: usize,
    pub fate: Fate,
    pub columns: Vec<ColumnProposal>,
}

/// What happens to a table.
#[derive(Debug, Clone, PartialEq)]
pub enum Fate {
    Entity,
    /// In the family, under `parent`.
    Family {
        parent: String,
    },
    Dimension {
        reason: String,
    },
    LeftOut {
        reason: String,
    },
}

/// One column and its role (`None` for a join key, which needs no label).
#[derive(Debug, Clone)]
pub struct ColumnProposal {
    pub name: String,
    pub decision: Option<Decision>,
    /// Why a join key needs no label.
    pub note: String,
}

/// The declarations `init` proposes, before they are written as text.
#[derive(Debug, Clone)]
pub struct Proposal {
    pub entity: String,
    /// Empty for a key-less entity table (each row one individual).
    pub entity_key: Vec<String>,
    pub entity_reason: String,
    pub alternatives: Vec<String>,
    pub keys: Vec<KeyChange>,
    /// The entity table and its family in plan order, then dimensions, then tables left out.
    pub tables: Vec<TableProposal>,
    pub k: usize,
    /// The k asked for, when the population is smaller (then `k` is the population).
    pub asked_k: usize,
}

/// Proposes declarations for the warehouse. The keys it infers and sets aside are applied
/// to `wh`, as the planner will apply the written statements.
pub async fn propose(wh: &mut Warehouse, options: &Options) -> Result<Proposal, InitError> {
    if wh.tables.is_empty() {
        return Err(InitError::Empty);
    }
    let mut changes = keys::infer_primary_keys(wh)?;
    changes.extend(keys::infer_foreign_keys(wh)?);
    let (entity, entity_reason, alternatives) = choose_entity(wh, options)?;
    let (dropped_fks, family) =
        keys::make_snowflake(wh, &entity).map_err(|e| InitError::Family {
            entity: entity.clone(),
            detail: e.to_string(),
        })?;
    changes.extend(dropped_fks);
    let dropped: Vec<(String, ForeignKey)> = changes
        .iter()
        .filter_map(|c| match c {
            KeyChange::DropForeignKey { table, fk, .. } => Some((table.clone(), fk.clone())),
            _ => None,
        })
        .collect();
    let (profiles, batches) = read_tables(wh)?;
    // The k the proposal will write: a k above the population cannot be met.
    let population = rows(&profiles, &entity);
    let k = if population >= 2 && population < options.k {
        population
    } else {
        options.k
    };
    let owners = holders::owners(&family, &batches);
    let mut lookups = Lookups::default();
    let known = Known {
        profiles: &profiles,
        batches: &batches,
        owners: &owners,
        k,
        depth: 0,
    };
    let mut tables = family_tables(wh, &entity, &family, &dropped, &known, &mut lookups).await?;
    let in_family: BTreeSet<String> = family.iter().map(|ft| ft.name.clone()).collect();
    tables.extend(other_tables(wh, &entity, &in_family, &profiles, &lookups));
    // Dimensions after the family, then tables left out, each in source order.
    tables.sort_by_key(|t| match t.fate {
        Fate::Entity | Fate::Family { .. } => 0,
        Fate::Dimension { .. } => 1,
        Fate::LeftOut { .. } => 2,
    });
    let entity_key = wh
        .table(&entity)
        .map(|t| t.primary_key.clone())
        .unwrap_or_default();
    Ok(Proposal {
        entity,
        entity_key,
        entity_reason,
        alternatives,
        keys: changes,
        tables,
        k,
        asked_k: options.k,
    })
}

/// Each table's column profiles, by table name.
type Profiles = BTreeMap<String, Vec<Profile>>;
/// Each table's rows in source order, by table name.
type Batches = BTreeMap<String, RecordBatch>;

/// Every table read once, in source order, and profiled: the family's tables are traced
/// to their entities and classified from these same batches, so no table is read twice.
fn read_tables(wh: &Warehouse) -> Result<(Profiles, Batches), InitError> {
    let mut profiles: BTreeMap<String, Vec<Profile>> = BTreeMap::new();
    let mut batches: BTreeMap<String, RecordBatch> = BTreeMap::new();
    for t in &wh.tables {
        let batch = wh.table_in_source_order(&t.name)?;
        profiles.insert(
            t.name.clone(),
            batch
                .columns()
                .iter()
                .map(|a| Profile::of(a.as_ref()))
                .collect(),
        );
        batches.insert(t.name.clone(), batch);
    }
    Ok((profiles, batches))
}

/// The entity table and its family in plan order, each once (a split table has two plan
/// entries), with the roles of their columns; the references they follow decide in
/// `lookups` which other tables become dimensions.
async fn family_tables(
    wh: &Warehouse,
    entity: &str,
    family: &[FamilyTable],
    dropped: &[(String, ForeignKey)],
    base: &Known<'_>,
    lookups: &mut Lookups,
) -> Result<Vec<TableProposal>, InitError> {
    let mut tables = Vec::new();
    let mut seen = BTreeSet::new();
    for ft in family {
        if !seen.insert(ft.name.clone()) {
            continue;
        }
        let entries: Vec<&FamilyTable> = family.iter().filter(|f| f.name == ft.name).collect();
        let fate = match ft.parent {
            None => Fate::Entity,
            Some(p) => Fate::Family {
                parent: family[p].name.clone(),
            },
        };
        let known = Known {
            depth: depth(family, ft),
            ..*base
        };
        let columns = family_columns(wh, entity, &entries, dropped, &known, lookups).await?;
        tables.push(TableProposal {
            name: ft.name.clone(),
            rows: rows(base.profiles, &ft.name),
            fate,
            columns,
        });
    }
    Ok(tables)
}

/// The tables outside the family, in source order: a dimension when a released reference
/// leads into it, otherwise left out with the reason, so none disappears unexplained.
fn other_tables(
    wh: &Warehouse,
    entity: &str,
    in_family: &BTreeSet<String>,
    profiles: &BTreeMap<String, Vec<Profile>>,
    lookups: &Lookups,
) -> Vec<TableProposal> {
    let mut tables = Vec::new();
    for t in &wh.tables {
        if in_family.contains(&t.name) {
            continue;
        }
        let fate = match lookups.dimensions.get(&t.name) {
            Some(reason) => Fate::Dimension {
                reason: reason.clone(),
            },
            None => Fate::LeftOut {
                reason: lookups.left_out.get(&t.name).cloned().unwrap_or_else(|| {
                    format!("not in the family of {entity}, and no released column points into it")
                }),
            },
        };
        let columns = match fate {
            Fate::Dimension { .. } => dimension_columns(wh, &t.name, profiles),
            _ => Vec::new(),
        };
        tables.push(TableProposal {
            name: t.name.clone(),
            rows: rows(profiles, &t.name),
            fate,
            columns,
        });
    }
    tables
}

fn rows(profiles: &BTreeMap<String, Vec<Profile>>, table: &str) -> usize {
    profiles
        .get(table)
        .and_then(|p| p.first())
        .map_or(0, |p| p.rows)
}

/// The entity table: the one asked for, the only table, or the best candidate by (names a
/// person, has tables under it, rows, family size), with the others described.
fn choose_entity(
    wh: &Warehouse,
    options: &Options,
) -> Result<(String, String, Vec<String>), InitError> {
    let keyed: Vec<&str> = wh
        .tables
        .iter()
        .filter(|t| !t.primary_key.is_empty())
        .map(|t| t.name.as_str())
        .collect();
    let keyed = if keyed.is_empty() {
        "none".to_string()
    } else {
        keyed.join(", ")
    };
    let describe = |name: &str| -> (u8, bool, usize, usize, String) {
        let t = wh.table(name).expect("a table of the warehouse");
        let cols: Vec<String> = t.columns.iter().map(|c| c.name.clone()).collect();
        let (strength, person) = roles::person_columns(&cols);
        let below = keys::family_members(wh, name).len() - 1;
        let referenced = below > 0;
        let rows = wh.row_count(name).unwrap_or(0);
        let mut text = format!("{name}: {rows} rows, {below} table(s) below it");
        if !person.is_empty() {
            text.push_str(&format!(", names a person ({})", person.join(", ")));
        }
        (strength, referenced, rows, below, text)
    };
    if let Some(wanted) = &options.entity {
        let t = wh.table(wanted).ok_or_else(|| InitError::UnknownTable {
            table: wanted.clone(),
            known: wh
                .tables
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })?;
        if t.primary_key.is_empty() && wh.tables.len() > 1 {
            return Err(InitError::EntityWithoutKey {
                table: t.name.clone(),
                keyed,
            });
        }
        let (.., text) = describe(&t.name);
        return Ok((
            t.name.clone(),
            format!("chosen with --entity ({text})"),
            Vec::new(),
        ));
    }
    if wh.tables.len() == 1 {
        let t = &wh.tables[0];
        let (.., text) = describe(&t.name);
        return Ok((
            t.name.clone(),
            format!("the only table ({text}); each row one individual"),
            Vec::new(),
        ));
    }
    if wh.tables.iter().all(|t| t.foreign_keys.is_empty()) {
        return Err(InitError::NoForeignKeys {
            count: wh.tables.len(),
            keyed,
        });
    }
    let mut ranked: Vec<(u8, bool, usize, usize, String, String)> = wh
        .tables
        .iter()
        .map(|t| {
            let (p, r, rows, below, text) = describe(&t.name);
            (p, r, rows, below, text, t.name.clone())
        })
        .collect();
    // Among tables that name people, the one with the most rows is the population (a
    // handful of staff beside many customers); where no table names people, the one the
    // most tables hang under.
    ranked.sort_by_key(|r| {
        let (first, second) = if r.0 > 0 { (r.2, r.3) } else { (r.3, r.2) };
        std::cmp::Reverse((r.0, r.1, first, second))
    });
    let best = ranked.remove(0);
    let why = if best.0 > 0 {
        "the table about people with the most rows"
    } else {
        "no table names people by its columns; the table the most tables hang under"
    };
    let reason = format!(
        "proposed: {why} ({}); pass --entity to choose another",
        best.4
    );
    let alternatives = ranked
        .into_iter()
        .filter(|r| r.1)
        .take(4)
        .map(|r| r.4)
        .collect();
    Ok((best.5, reason, alternatives))
}

/// What the family's references into other tables decided about those tables.
#[derive(Default)]
struct Lookups {
    /// Table -> why it is released as a dimension.
    dimensions: BTreeMap<String, String>,
    /// Table -> why it is left out.
    left_out: BTreeMap<String, String>,
}

/// How many levels below the entity a family table is (0 for the entity table).
fn depth(family: &[FamilyTable], ft: &FamilyTable) -> usize {
    std::iter::successors(ft.parent, |&p| family[p].parent).count()
}

/// What the proposal measured of the data, for one family table's columns.
struct Known<'a> {
    profiles: &'a BTreeMap<String, Vec<Profile>>,
    /// Every table's rows in source order.
    batches: &'a BTreeMap<String, RecordBatch>,
    owners: &'a holders::Owners,
    /// The k the proposal writes.
    k: usize,
    /// The table's level below the entity.
    depth: usize,
}

/// Roles for one family table's columns (`entries`: its plan entries, two for a split
/// table), then twins raised to the role of the column they determine.
async fn family_columns(
    wh: &Warehouse,
    entity: &str,
    entries: &[&FamilyTable],
    dropped: &[(String, ForeignKey)],
    known: &Known<'_>,
    lookups: &mut Lookups,
) -> Result<Vec<ColumnProposal>, InitError> {
    let profiles = known.profiles;
    let name = &entries[0].name;
    let batch = known
        .batches
        .get(name)
        .ok_or_else(|| WarehouseError::Message(format!("no table '{name}' was read")))?;
    let meta = wh.table(name).expect("a family table is a table").clone();
    let family: BTreeSet<String> = keys::family_members(wh, entity);
    let in_entity = name == entity;
    let mut out = Vec::new();
    for (ci, c) in meta.columns.iter().enumerate() {
        let p = &profiles[name][ci];
        if entries.iter().any(|ft| ft.is_join_key(&c.name)) {
            out.push(ColumnProposal {
                name: c.name.clone(),
                decision: None,
                note: "join key: pseudonymized, needs no label".into(),
            });
            continue;
        }
        let set_aside = dropped
            .iter()
            .any(|(t, fk)| t == name && fk.columns.contains(&c.name));
        let self_ref = meta
            .foreign_keys
            .iter()
            .any(|fk| fk.ref_table == *name && fk.columns.contains(&c.name));
        let into_family = meta.foreign_keys.iter().any(|fk| {
            fk.columns.contains(&c.name) && family.contains(&fk.ref_table) && fk.ref_table != *name
        });
        let decision = if set_aside || self_ref || into_family {
            Decision::new(
                Role::Identifier,
                "a raw key of another row of the family: published unchanged it would link released rows back to the source",
            )
        } else if let Some(fk) = meta
            .foreign_keys
            .iter()
            .find(|fk| fk.columns.len() == 1 && fk.columns[0] == c.name)
        {
            let referrer = format!("{name}.{}", c.name);
            lookup(wh, &referrer, fk, p, profiles, &family, lookups).await?
        } else {
            let spread = known
                .owners
                .get(name)
                .filter(|_| roles::may_name_people(&c.name, p))
                .map(|owners| holders::spread(batch.column(ci).as_ref(), owners, known.k));
            let cx = roles::Context {
                in_entity,
                deep: known.depth >= 2,
                spread,
            };
            roles::classify(&c.name, cx, p)
        };
        out.push(ColumnProposal {
            name: c.name.clone(),
            decision: Some(decision),
            note: String::new(),
        });
    }
    twins::unify(name, batch, &profiles[name], &mut out);
    Ok(out)
}

/// Whether a table holds data about people: columns named like a person's, or values that
/// look like e-mail addresses, phone numbers, street addresses, card numbers or IBANs.
fn personal(
    wh: &Warehouse,
    table: &str,
    profiles: &BTreeMap<String, Vec<Profile>>,
) -> Option<String> {
    let t = wh.table(table)?;
    let cols: Vec<String> = t.columns.iter().map(|c| c.name.clone()).collect();
    let (_, mut hits) = roles::person_columns(&cols);
    for (c, p) in t.columns.iter().zip(&profiles[&t.name]) {
        let personal_shape = p
            .dominant_pattern()
            .is_some_and(|(pat, _)| !matches!(pat, Pattern::Url | Pattern::FreeText));
        let street = roles::identifying_name(&c.name, false).is_some_and(|w| {
            [
                "address", "street", "addr", "zip", "postal", "postcode", "zipcode",
            ]
            .contains(&w.as_str())
        });
        if (personal_shape || street) && !hits.contains(&c.name) {
            hits.push(c.name.clone());
        }
    }
    (!hits.is_empty()).then(|| hits.join(", "))
}

/// The role of a family column that references another table (`fk`, one column): an
/// identifier when that table is personal or the reference is nearly one per row, else a
/// quasi-identifier generalized through what that table (and the one its own reference
/// leads to) says about the row, which makes those tables dimensions.
async fn lookup(
    wh: &Warehouse,
    referrer: &str,
    fk: &ForeignKey,
    p: &Profile,
    profiles: &BTreeMap<String, Vec<Profile>>,
    family: &BTreeSet<String>,
    lookups: &mut Lookups,
) -> Result<Decision, InitError> {
    let target = fk.ref_table.clone();
    if let Some(cols) = personal(wh, &target, profiles) {
        lookups
            .left_out
            .insert(target.clone(), format!("holds personal data ({cols})"));
        return Ok(Decision::new(
            Role::Identifier,
            format!("points at a row of {target}, which holds personal data ({cols})"),
        ));
    }
    if p.nearly_unique() {
        return Ok(Decision::new(
            Role::Identifier,
            format!("points at a row of {target} of its own (nearly every value distinct): as identifying as a key"),
        ));
    }
    let Some((sql, levels, hop)) = grouping_query(wh, &target, profiles, family).await? else {
        return Ok(Decision::new(
            Role::Identifier,
            format!("a reference into {target}, which has nothing to group its rows by: left out"),
        ));
    };
    let why = format!("{referrer} is generalized through it");
    lookups
        .dimensions
        .entry(target.clone())
        .or_insert(why.clone());
    if let Some(hop) = hop {
        lookups.dimensions.entry(hop).or_insert(why);
    }
    Ok(Decision::new(
        Role::Qi(HierarchyPlan::Select(sql)),
        format!(
            "a reference into {target}: generalized to its {}",
            levels.join(", then ")
        ),
    ))
}

/// A `SELECT` hierarchy from `target`'s key through its describing columns and those of the
/// table its one-column FK leads to (one hop): each level has fewer values than the one
/// before and is determined by it in the data, so the rows form a tree. Returns the query,
/// the levels' names and the hop's table.
async fn grouping_query(
    wh: &Warehouse,
    target: &str,
    profiles: &BTreeMap<String, Vec<Profile>>,
    family: &BTreeSet<String>,
) -> Result<Option<(String, Vec<String>, Option<String>)>, InitError> {
    use crate::warehouse::quote_ident as q;
    let Some(t) = wh.table(target) else {
        return Ok(None);
    };
    let [pk] = t.primary_key.as_slice() else {
        return Ok(None);
    };
    let hop = t.foreign_keys.iter().find(|fk| {
        // A family table is released as family, never as a dimension to group by.
        fk.columns.len() == 1
            && fk.ref_table != t.name
            && !family.contains(&fk.ref_table)
            && wh
                .table(&fk.ref_table)
                .is_some_and(|h| h.primary_key.len() == 1)
            && personal(wh, &fk.ref_table, profiles).is_none()
    });
    let mut candidates = describing(wh, profiles, "t", &t.name);
    let mut from = format!("{} t", q(&t.name));
    if let Some(fk) = hop {
        let h = wh.table(&fk.ref_table).expect("checked above");
        candidates.extend(describing(wh, profiles, "h", &h.name));
        from.push_str(&format!(
            " LEFT JOIN {} h ON h.{} = t.{}",
            q(&h.name),
            q(&h.primary_key[0]),
            q(&fk.columns[0])
        ));
    }
    candidates.sort_by(|a, b| b.2.cmp(&a.2).then(a.1.cmp(&b.1)));
    let leaf = format!("t.{}", q(pk));
    let leaves = rows(profiles, &t.name);
    let levels = levels(wh, candidates, &leaf, leaves, &from).await?;
    if levels.is_empty() {
        return Ok(None);
    }
    let select: Vec<&str> = std::iter::once(leaf.as_str())
        .chain(levels.iter().map(|l| l.0.as_str()))
        .collect();
    let sql = format!("SELECT DISTINCT {} FROM {from}", select.join(", "));
    let used_hop = levels.iter().any(|l| l.0.starts_with("h."));
    Ok(Some((
        sql,
        levels.into_iter().map(|l| l.1).collect(),
        hop.filter(|_| used_hop).map(|fk| fk.ref_table.clone()),
    )))
}

/// The columns of `table` that could group its rows, as (expression under `alias`,
/// `table.column`, distinct values): keys, identifying names and shaped, numeric or date
/// values are left to their own hierarchies, so only plain describing words remain.
fn describing(
    wh: &Warehouse,
    profiles: &BTreeMap<String, Vec<Profile>>,
    alias: &str,
    table: &str,
) -> Vec<(String, String, usize)> {
    use crate::warehouse::quote_ident as q;
    let Some(m) = wh.table(table) else {
        return Vec::new();
    };
    let is_key = |c: &str| {
        m.primary_key.iter().any(|k| k == c)
            || m.foreign_keys
                .iter()
                .any(|fk| fk.columns.iter().any(|k| k == c))
            || keys::id_like(c)
    };
    m.columns
        .iter()
        .zip(&profiles[&m.name])
        .filter(|(c, p)| {
            !is_key(&c.name)
                && p.present() > 0
                && p.distinct_count >= 2
                && roles::identifying_name(&c.name, false).is_none()
                && p.dominant_pattern().is_none()
                && !p.numeric
                && !p.dates
        })
        .map(|(c, p)| {
            (
                format!("{alias}.{}", q(&c.name)),
                format!("{}.{}", m.name, c.name),
                p.distinct_count,
            )
        })
        .collect()
}

/// Up to two levels above `leaf` (which has `leaves` values), from `candidates` most
/// values first: a level is kept only when the data shows each row of the level below
/// has one value of it, since a hierarchy that is not a tree cannot generalize.
async fn levels(
    wh: &Warehouse,
    candidates: Vec<(String, String, usize)>,
    leaf: &str,
    leaves: usize,
    from: &str,
) -> Result<Vec<(String, String, usize)>, InitError> {
    let mut levels: Vec<(String, String, usize)> = Vec::new();
    for c in candidates {
        let (prev, prev_count) = levels
            .last()
            .map_or((leaf.to_string(), leaves), |l| (l.0.clone(), l.2));
        // The first level may name each row (film titles for copies of films); every
        // later one must group.
        let grows = if levels.is_empty() {
            c.2 > prev_count
        } else {
            c.2 >= prev_count
        };
        if grows || levels.len() == 2 {
            continue;
        }
        let check = format!(
            "SELECT COUNT(*) FROM (SELECT {prev} AS a, COUNT(DISTINCT {}) AS n FROM {from} GROUP BY {prev}) WHERE n > 1",
            c.0
        );
        let batches = wh.sql(&check).await?;
        let splits = batches
            .first()
            .and_then(|b| crate::warehouse::numeric_value(b.column(0).as_ref(), 0))
            .unwrap_or(1.0);
        if splits == 0.0 {
            levels.push(c);
        }
    }
    Ok(levels)
}

/// Roles for a dimension's columns: its key needs no label; identifying columns are left
/// out, the rest published as the source holds them.
fn dimension_columns(
    wh: &Warehouse,
    table: &str,
    profiles: &BTreeMap<String, Vec<Profile>>,
) -> Vec<ColumnProposal> {
    let Some(t) = wh.table(table) else {
        return Vec::new();
    };
    t.columns
        .iter()
        .zip(&profiles[&t.name])
        .map(|(c, p)| {
            if t.primary_key.contains(&c.name) {
                return ColumnProposal {
                    name: c.name.clone(),
                    decision: None,
                    note: "the dimension's key: needs no label".into(),
                };
            }
            let decision = if let Some(word) = roles::identifying_name(&c.name, false) {
                Decision::new(Role::Identifier, format!("its name ('{word}') says it may identify or describe a person"))
            } else if let Some((pat, n)) = p.dominant_pattern() {
                Decision::new(Role::Identifier, format!("its values look like {} ({n} of {} sampled)", pat.describe(), p.sampled))
            } else {
                Decision::new(Role::Insensitive, "describes the dimension's rows, not a person: published as the source holds it")
            };
            ColumnProposal {
                name: c.name.clone(),
                decision: Some(decision),
                note: String::new(),
            }
        })
        .collect()
}
