//! A vertical fragmentation (seed 004, spec Sec. 3 "How an independent verifier checks it"),
//! from the release and the declarations alone, whole:
//!
//! - **fragments**: the entity table is released only as `<t>__f1` and `<t>__f2`; every
//!   column of a fragment is a released column of the source table; the declared class is
//!   in every fragment and is the only column in more than one (S1); no key column (S2);
//!   every class cell is a value of the source's class column.
//! - **fragment order**: each fragment's rows are sorted by their own content (S3), so the
//!   order of one says nothing of the order of the other.
//! - every check of a single-table release, on each fragment as a release of its own with
//!   the class left out (its cells may be changed by the repair; S1 allows it): schema,
//!   declared roles, truthfulness, k-anonymity, labels, twins, counts. Their violations name
//!   the fragment.
//! - twins across fragments: a column published unchanged in one fragment that determines
//!   (in the source) a QI column of another, or a class that determines a QI, brings that QI
//!   into a fragment whose k-anonymity does not count it.
//! - **non-reconstructability** (004 Thm 4.1, D7): for every pair of equivalence classes
//!   (rows with equal QI labels) of the two fragments, the rows their join on the class
//!   re-forms, `J = Σ_c f_x(c) · f_y(c)`, is 0 or at least k. Rows are entities here (a
//!   single table, S5). Under distinct l-diversity (the Sec. 5 pipeline) k is l, the class
//!   is checked like any SENSITIVE column in each fragment (truthful, l-diverse), and every
//!   joined pair must also hold at least l distinct classes, across segments too (D11).
//!
//! - **layout A** (an entity with child tables, spec Sec. 4.2): `<t>__f1` is the anchor. It
//!   may hold the entity key, is ordered by it, and is checked with the child tables as a
//!   family of entity trees through the key map; its equivalence classes are entities with
//!   identical released trees (their signatures), so Thm 4.1 counts entities (S5).
//!
//! Nothing here knows how the fragments were chosen or repaired.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::compute::{LexicographicalComparator, SortColumn};
use arrow::record_batch::RecordBatch;

use super::{hier::Hier, Check, Keys, Verdict, VerifyError};
use crate::keymap::KeyMap;
use crate::plan::{ColumnRole, Model, Plan, ReleasedKey};
use crate::policy::Value;
use crate::warehouse::{render_value, Warehouse};

/// A fragmentation the declarations ask for.
pub(super) struct Declared {
    class: String,
    k: usize,
    /// `repair = 'delta'`: each fragment publishes class sets (`<t>__fN_classes`), not a
    /// class per row, and every sharing pair must reach η >= δ.
    delta: Option<f64>,
    /// Under distinct l-diversity (004 Sec. 5): l. The class is then published as the source
    /// has it, each fragment is l-diverse on it, and every joined pair of groups holds at
    /// least l classes.
    diverse: Option<usize>,
    /// The family has child tables (layout A, spec Sec. 4.2): the first fragment is the
    /// anchor, released with the entity key and the child tables, and checked with them as
    /// entity trees.
    trees: bool,
}

/// `algorithm = 'fragment'` with its class, under k-anonymity; None for any other release.
pub(super) fn declared(plan: &Plan) -> Option<Declared> {
    let (name, _) = plan.params.algorithm.name.as_ref()?;
    if !name.eq_ignore_ascii_case("fragment") {
        return None;
    }
    let written = |name: &str| plan.params.algorithm.written(name);
    let class = written("class")
        .map(|v| match v {
            Value::Text(t) => t.trim().to_string(),
            Value::Number(n) => n.to_string(),
        })
        .unwrap_or_default();
    let (k, diverse) = match plan.params.model {
        Model::KAnonymity { k } => (k, None),
        Model::LDiversity { l, .. } => (l, Some(l)),
        // Refused by anonymize; no fragment passes a check of an undeclared k.
        Model::Anatomy { .. } => (usize::MAX, None),
    };
    let sets = matches!(written("repair"), Some(Value::Text(t)) if t.eq_ignore_ascii_case("delta"));
    let delta = sets.then(|| match written("delta") {
        Some(Value::Number(d)) => *d,
        _ => 0.5,
    });
    Some(Declared {
        class,
        k,
        delta,
        diverse,
        trees: plan.tables.len() > 1,
    })
}

/// The class-set tables of a δ-selective release of `table`.
fn set_names(table: &str) -> [String; 2] {
    [
        format!("{table}__f1_classes"),
        format!("{table}__f2_classes"),
    ]
}

/// The fragments a release of `table` consists of, by name.
fn fragment_names(table: &str) -> [String; 2] {
    [format!("{table}__f1"), format!("{table}__f2")]
}

/// The verdict on a fragmentation's release.
pub(super) async fn verify(
    plan: &Plan,
    (source, release): (&Warehouse, &Warehouse),
    declared: &Declared,
    keys: Keys<'_>,
    hiers: &HashMap<String, Hier>,
    budget: usize,
) -> Result<Verdict, VerifyError> {
    let table = &plan.tables[0];
    let names = fragment_names(&table.name);
    let mut structure = Check::new("fragments");
    let sets_named = set_names(&table.name);
    let mut expected: Vec<String> = names.to_vec();
    if declared.delta.is_some() {
        expected.extend(sets_named.iter().cloned());
    }
    expected.extend(plan.child_tables().into_iter().map(String::from));
    expected.extend(plan.dimensions.iter().map(|d| d.name.clone()));
    unplanned(release, &table.name, &expected, &mut structure);
    let batches = read_all(release, &names).await?;
    let sets = match declared.delta {
        Some(_) => read_all(release, &sets_named).await?,
        None => Vec::new(),
    };
    let source_rows = read(source, "source", &table.name).await?;
    columns(plan, declared, &names, &batches, &mut structure);
    if declared.delta.is_some() {
        set_columns(
            plan,
            declared,
            &names,
            &batches,
            &sets_named,
            &sets,
            &mut structure,
        );
        class_domain(declared, &sets_named, &sets, &source_rows, &mut structure);
    } else {
        class_domain(declared, &names, &batches, &source_rows, &mut structure);
    }
    let mut checks = vec![structure, order(plan, declared, &names, &batches)];
    let mut first: Option<Verdict> = None;
    let mut trees = None;
    for (i, (name, batch)) in names.iter().zip(&batches).enumerate() {
        let (verdict, signatures) = one_fragment(
            plan,
            (source, release),
            declared,
            (name, batch),
            (i == 0, keys),
            hiers,
            budget,
        )
        .await?;
        absorb(&mut checks, name, verdict.checks.clone());
        first.get_or_insert(verdict);
        trees = trees.or(signatures);
    }
    let mut across = Check::new("twins");
    twins_across(plan, source, declared, &names, &batches, &mut across)?;
    absorb(&mut checks, "", vec![across]);
    if let Some(delta) = declared.delta {
        let mut selective = Check::new("delta-selectivity");
        selective_pairs(
            plan,
            declared,
            delta,
            &names,
            &batches,
            &sets,
            &mut selective,
        );
        checks.push(selective);
    } else {
        let mut joins = Check::new("non-reconstructability");
        let left = match &trees {
            Some(signatures) => tree_classes(plan, declared, &batches[0], signatures),
            None => classes(plan, declared, &batches[0]),
        };
        non_reconstructible(plan, declared, &names, (left, &batches[1]), &mut joins);
        checks.push(joins);
    }
    let first = first.expect("a fragmentation has two fragments");
    Ok(Verdict {
        checks,
        entities_released: first.entities_released,
        equivalence_classes: first.equivalence_classes,
        smallest_ec: first.smallest_ec,
        class_sizes: first.class_sizes,
        checked: super::Checked::Whole,
    })
}

/// The released tables `names`, each of which must be there.
async fn read_all(release: &Warehouse, names: &[String]) -> Result<Vec<RecordBatch>, VerifyError> {
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        if release.table(name).is_none() {
            return Err(VerifyError::MissingTable {
                side: "release",
                table: name.clone(),
            });
        }
        out.push(read(release, "release", name).await?);
    }
    Ok(out)
}

async fn read(wh: &Warehouse, side: &'static str, name: &str) -> Result<RecordBatch, VerifyError> {
    wh.read_table(name, None, &[])
        .await
        .map_err(|source| VerifyError::Read {
            side,
            table: name.to_string(),
            source,
        })
}

/// Tables other than the fragments: the entity table under its own name (the unfragmented
/// rows) or anything else.
fn unplanned(release: &Warehouse, table: &str, names: &[String], out: &mut Check) {
    for t in &release.tables {
        if t.name.starts_with("sqlite_") || names.iter().any(|n| n.eq_ignore_ascii_case(&t.name)) {
            continue;
        }
        if t.name.eq_ignore_ascii_case(table) {
            out.record(format!(
                "table '{table}' is released whole beside its fragments: the fragments would be re-joined through it; remove it"
            ));
        } else {
            out.record(format!(
                "release table '{}' is not a fragment of '{table}': remove it",
                t.name
            ));
        }
    }
}

/// Every fragment column is a released column of the source table; keys and identifiers
/// never; the class in every fragment and no other column in two.
fn columns(
    plan: &Plan,
    declared: &Declared,
    names: &[String; 2],
    batches: &[RecordBatch],
    out: &mut Check,
) {
    let table = &plan.tables[0];
    let mut home: HashMap<String, &str> = HashMap::new();
    for (i, (name, batch)) in names.iter().zip(batches).enumerate() {
        let mut has_class = false;
        let key = anchor_key(plan, declared, i);
        for field in batch.schema().fields() {
            let column = field.name();
            if *column == declared.class {
                has_class = true;
                continue;
            }
            if key.contains(column) {
                continue;
            }
            let planned = table.columns.iter().find(|c| c.name == *column);
            let why = match planned.map(|c| &c.role) {
                None => Some("is not a column of the source table"),
                Some(ColumnRole::Identifier) => Some("is an IDENTIFIER column"),
                Some(ColumnRole::Key) => {
                    Some("is a key column: a key in a fragment lines its rows up with another's")
                }
                _ if table.primary_key.contains(column) => Some("is a key column"),
                _ => None,
            };
            if let Some(why) = why {
                out.record(format!("{name}.{column} {why}: it must not be released"));
            }
            if let Some(other) = home.insert(column.clone(), name) {
                out.record(format!(
                    "{column} is released in {other} and in {name}: only the class '{}' may be in two fragments, or the fragments join on it",
                    declared.class
                ));
            }
        }
        match (has_class, declared.delta.is_some()) {
            (false, false) => out.record(format!(
                "{name} has no column '{}', the declared class every fragment publishes",
                declared.class
            )),
            (true, true) => out.record(format!(
                "{name} publishes a class per row, but repair = 'delta' publishes each class's set of classes apart ({name}_classes): a class per row is what the sets hide"
            )),
            _ => {}
        }
    }
}

/// Every class cell of every fragment is a value the source's class column holds.
fn class_domain(
    declared: &Declared,
    names: &[String],
    batches: &[RecordBatch],
    source: &RecordBatch,
    out: &mut Check,
) {
    let Ok(at) = source.schema().index_of(&declared.class) else {
        out.record(format!(
            "the declared class '{}' is not a column of the source table",
            declared.class
        ));
        return;
    };
    let column = source.column(at);
    let values: std::collections::HashSet<Option<String>> = (0..source.num_rows())
        .map(|r| render_value(column.as_ref(), r))
        .collect();
    for (name, batch) in names.iter().zip(batches) {
        let Ok(at) = batch.schema().index_of(&declared.class) else {
            continue;
        };
        let column = batch.column(at);
        for r in 0..batch.num_rows() {
            let v = render_value(column.as_ref(), r);
            if !values.contains(&v) {
                out.record(format!(
                    "{name} row {}: class {} is no value of the source's {}",
                    r + 1,
                    v.as_deref().unwrap_or("NULL"),
                    declared.class
                ));
            }
        }
    }
}

/// Fragment `i`'s entity key: layout A's anchor keeps the pseudonymized entity key (S2), its
/// children hang from it; every other fragment has none.
fn anchor_key(plan: &Plan, declared: &Declared, i: usize) -> Vec<String> {
    if i == 0 && declared.trees {
        plan.tables[0].released_pk()
    } else {
        Vec::new()
    }
}

/// S3 on every fragment: each in an order of its own.
fn order(plan: &Plan, declared: &Declared, names: &[String], batches: &[RecordBatch]) -> Check {
    let mut order = Check::new("fragment order");
    for (i, (name, batch)) in names.iter().zip(batches).enumerate() {
        sorted(name, batch, &anchor_key(plan, declared, i), &mut order);
    }
    order
}

/// The fragment's rows in ascending order of their cells, column by column, or (layout A's
/// anchor) of its released `key`, whose pseudonyms the keys check holds to their own
/// random order (S3).
fn sorted(name: &str, batch: &RecordBatch, key: &[String], out: &mut Check) {
    let by: Vec<usize> = match key {
        [] => (0..batch.num_columns()).collect(),
        key => match key
            .iter()
            .map(|k| batch.schema().index_of(k).ok())
            .collect::<Option<Vec<usize>>>()
        {
            Some(at) => at,
            None => {
                out.record(format!(
                    "{name}: the anchor fragment has no column {}, the entity key it is ordered by",
                    key.join(", ")
                ));
                return;
            }
        },
    };
    let sort: Vec<SortColumn> = by
        .iter()
        .map(|&c| SortColumn {
            values: Arc::clone(batch.column(c)) as ArrayRef,
            options: None,
        })
        .collect();
    let Ok(cmp) = LexicographicalComparator::try_new(&sort) else {
        out.record(format!(
            "{name}: its columns cannot be ordered, so its row order cannot be shown to be its own"
        ));
        return;
    };
    if let Some(r) =
        (1..batch.num_rows()).find(|&r| cmp.compare(r - 1, r) == std::cmp::Ordering::Greater)
    {
        out.record(format!(
            "{name}: row {} comes after row {r} but sorts before it; a fragment's rows are ordered by their content, never as another order left them",
            r + 1
        ));
    }
}

/// Every single-table check on one fragment, with the class left out: the fragment as the
/// release of a table whose columns outside it are not released. Layout A's anchor is
/// checked with the child tables as a family of entity trees, through the key map; with its
/// entities' tree signatures, in its row order.
async fn one_fragment(
    plan: &Plan,
    (source, release): (&Warehouse, &Warehouse),
    declared: &Declared,
    (name, batch): (&str, &RecordBatch),
    (first, keys): (bool, Keys<'_>),
    hiers: &HashMap<String, Hier>,
    budget: usize,
) -> Result<(Verdict, Option<Vec<u64>>), VerifyError> {
    let table = plan.tables[0].name.clone();
    let anchor = first && declared.trees;
    let mut fragment_plan = plan.clone();
    if !anchor {
        // A key-less fragment is checked alone; the anchor with the family.
        fragment_plan.tables.truncate(1);
    }
    // The dimensions are checked once, with the first fragment.
    if !first {
        fragment_plan.dimensions.clear();
    }
    let entity = &mut fragment_plan.tables[0];
    // A repaired class is set aside (its cells may be changed); under l-diversity it is the
    // source's and the fragment must be diverse on it.
    let published: Vec<String> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .filter(|c| *c != declared.class || declared.diverse.is_some())
        .collect();
    for c in &mut entity.columns {
        if !published.contains(&c.name) {
            c.role = ColumnRole::Identifier;
        }
    }
    if !anchor {
        entity.children.clear();
        entity.primary_key.clear();
        entity.key = ReleasedKey::None;
    }
    let dir = tempfile::tempdir().map_err(|e| copy_failed(name, e))?;
    let keep: Vec<usize> = published
        .iter()
        .filter_map(|c| batch.schema().index_of(c).ok())
        .collect();
    let projected = batch.project(&keep).map_err(|e| copy_failed(name, e))?;
    write_parquet(&dir.path().join(format!("{table}.parquet")), &projected)
        .map_err(|e| copy_failed(name, e))?;
    if first {
        copy_tables(plan, release, dir.path(), anchor).await?;
    }
    let copy = Warehouse::open(dir.path())
        .await
        .map_err(|source| VerifyError::Read {
            side: "release",
            table: name.to_string(),
            source,
        })?;
    let map = KeyMap::default();
    let keys = if anchor { keys } else { Keys::Map(&map) };
    let mut schema = Check::new("schema");
    super::schema::check(&fragment_plan, source, &copy, &mut schema).await?;
    let mut fates = Check::new("declared roles");
    super::fates::check(&fragment_plan, &copy, &mut fates);
    let first = [schema, fates];
    let verdict = super::whole(
        &fragment_plan,
        source,
        &copy,
        keys,
        None,
        budget,
        hiers,
        first,
    )
    .await?;
    let signatures = if anchor {
        let none = vec![Vec::new(); fragment_plan.tables.len()];
        super::signature::of_entities(&fragment_plan, &copy, &none)?
    } else {
        None
    };
    Ok((verdict, signatures))
}

/// The dimensions as released, and (layout A) the child tables, beside the first
/// fragment's copy: it is checked as the family's entity table.
async fn copy_tables(
    plan: &Plan,
    release: &Warehouse,
    dir: &std::path::Path,
    children: bool,
) -> Result<(), VerifyError> {
    let mut names: Vec<String> = Vec::new();
    if children {
        names.extend(plan.child_tables().into_iter().map(String::from));
    }
    names.extend(plan.dimensions.iter().map(|d| d.name.clone()));
    for (name, batch) in names.iter().zip(read_all(release, &names).await?) {
        write_parquet(&dir.join(format!("{name}.parquet")), &batch)
            .map_err(|e| copy_failed(name, e))?;
    }
    Ok(())
}

fn copy_failed(name: &str, e: impl std::fmt::Display) -> VerifyError {
    VerifyError::Plan(format!(
        "cannot copy fragment {name} to check it on its own: {e}"
    ))
}

fn write_parquet(path: &std::path::Path, batch: &RecordBatch) -> Result<(), String> {
    let file = std::fs::File::create(path).map_err(|e| e.to_string())?;
    let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None)
        .map_err(|e| e.to_string())?;
    writer.write(batch).map_err(|e| e.to_string())?;
    writer.close().map_err(|e| e.to_string())?;
    Ok(())
}

/// A column published unchanged in one fragment that determines (in the source) a QI column
/// published in another, or the class determining a QI: the column reveals that QI's value
/// in a fragment whose k-anonymity does not count it. (Within one fragment the single-table
/// twins check sees it.)
fn twins_across(
    plan: &Plan,
    source: &Warehouse,
    declared: &Declared,
    names: &[String; 2],
    batches: &[RecordBatch],
    out: &mut Check,
) -> Result<(), VerifyError> {
    let home = |column: &str| -> Vec<usize> {
        (0..batches.len())
            .filter(|&i| batches[i].schema().index_of(column).is_ok())
            .collect()
    };
    for (t, twin, qi) in super::twins::determined(plan, source)? {
        if t != 0 {
            continue;
        }
        let (at, of_qi) = (home(&twin), home(&qi));
        let class = twin == declared.class;
        for &a in &at {
            if let Some(&b) = of_qi.iter().find(|&&b| b != a || class) {
                out.record(format!(
                    "{}.{twin} is published unchanged and determines {qi}, which {} publishes: in {} it reveals {qi}, which that fragment's k-anonymity does not count; label {twin} QUASI IDENTIFIER or IDENTIFIER",
                    names[a], names[b], names[a]
                ));
            }
        }
    }
    Ok(())
}

/// Adds one fragment's checks to the release's, by name, each violation naming the fragment.
fn absorb(checks: &mut Vec<Check>, fragment: &str, found: Vec<Check>) {
    for check in found {
        let mut named = Check::new(check.name);
        for v in &check.violations {
            if fragment.is_empty() {
                named.record(v.clone());
            } else {
                named.record(format!("{fragment}: {v}"));
            }
        }
        named.violation_count = check.violation_count;
        match checks.iter_mut().find(|c| c.name == check.name) {
            Some(held) => held.absorb(named),
            None => checks.push(named),
        }
    }
}

/// An equivalence class of a fragment: its QI labels, and its rows per class value.
type Class = (Vec<Option<String>>, HashMap<Option<String>, usize>);

/// One fragment's equivalence classes: its rows grouped by their QI labels (the columns
/// the declarations label QUASI IDENTIFIER), each with its rows per class value.
fn classes(plan: &Plan, declared: &Declared, batch: &RecordBatch) -> Vec<Class> {
    let qi = columns_at(batch, &qi_columns(plan, batch));
    let class = batch.schema().index_of(&declared.class).ok();
    let mut index: HashMap<Vec<Option<String>>, usize> = HashMap::new();
    let mut out: Vec<Class> = Vec::new();
    for r in 0..batch.num_rows() {
        let labels = labels_at(batch, &qi, r);
        let value = class.and_then(|c| render_value(batch.column(c).as_ref(), r));
        let next = out.len();
        let at = *index.entry(labels.clone()).or_insert(next);
        if at == out.len() {
            out.push((labels, HashMap::new()));
        }
        *out[at].1.entry(value).or_insert(0) += 1;
    }
    out
}

/// The anchor's equivalence classes (layout A): its entities grouped by the form of their
/// whole released tree (`signatures`, in the anchor's row order), each shown by its entity
/// row's QI labels and its tree's signature.
fn tree_classes(
    plan: &Plan,
    declared: &Declared,
    batch: &RecordBatch,
    signatures: &[u64],
) -> Vec<Class> {
    let qi = columns_at(batch, &qi_columns(plan, batch));
    let class = batch.schema().index_of(&declared.class).ok();
    let mut index: HashMap<u64, usize> = HashMap::new();
    let mut out: Vec<Class> = Vec::new();
    for (r, &signature) in signatures.iter().enumerate().take(batch.num_rows()) {
        let value = class.and_then(|c| render_value(batch.column(c).as_ref(), r));
        let next = out.len();
        let at = *index.entry(signature).or_insert(next);
        if at == out.len() {
            let mut labels = labels_at(batch, &qi, r);
            labels.push(Some(format!("tree {signature:016x}")));
            out.push((labels, HashMap::new()));
        }
        *out[at].1.entry(value).or_insert(0) += 1;
    }
    out
}

/// Thm 4.1 on every pair of classes (and under l-diversity, at least l classes joined).
fn non_reconstructible(
    plan: &Plan,
    declared: &Declared,
    names: &[String; 2],
    (left, second): (Vec<Class>, &RecordBatch),
    out: &mut Check,
) {
    let right = classes(plan, declared, second);
    joins(&left, &right, |x, y, rows, shared| {
        let short = declared.diverse.filter(|&l| shared < l);
        if short.is_none() && rows >= declared.k {
            return;
        }
        let (a, b) = (shown(&left[x].0), shown(&right[y].0));
        if let Some(l) = short {
            out.at([x, y, 0, 0]);
            out.record(format!(
                "the class of {} ({a}) and the class of {} ({b}) join on {} into {shared} distinct value(s), fewer than l = {l}",
                names[0], names[1], declared.class
            ));
        }
        if rows < declared.k {
            out.at([x, y, 0, 0]);
            out.record(format!(
                "the class of {} ({a}) and the class of {} ({b}) join on {} into {rows} row(s), fewer than k = {}",
                names[0], names[1], declared.class, declared.k
            ));
        }
    });
}

/// Every pair of classes (one per fragment) that shares a class value, handed to `each`:
/// its indexes, the rows their join re-forms (`J = Σ_c f_x(c) · f_y(c)`) and the values it
/// holds. Pairs are not collected: with few class values nearly every pair shares one.
fn joins(left: &[Class], right: &[Class], mut each: impl FnMut(usize, usize, usize, usize)) {
    // Per class value, the right classes holding it and how many rows.
    let mut holders: HashMap<&Option<String>, Vec<(usize, usize)>> = HashMap::new();
    for (y, (_, counts)) in right.iter().enumerate() {
        for (value, &n) in counts {
            holders.entry(value).or_default().push((y, n));
        }
    }
    let mut joined = vec![(0usize, 0usize); right.len()];
    for (x, (_, counts)) in left.iter().enumerate() {
        joined.iter_mut().for_each(|j| *j = (0, 0));
        for (value, &n) in counts {
            for &(y, m) in holders.get(value).map_or(&[][..], Vec::as_slice) {
                joined[y].0 += n * m;
                joined[y].1 += 1;
            }
        }
        for (y, &(rows, shared)) in joined.iter().enumerate() {
            if rows > 0 {
                each(x, y, rows, shared);
            }
        }
    }
}

fn shown(labels: &[Option<String>]) -> String {
    labels
        .iter()
        .map(|l| l.as_deref().unwrap_or("NULL"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The QI columns of a fragment (the columns the declarations label QUASI IDENTIFIER), in
/// its order.
fn qi_columns(plan: &Plan, batch: &RecordBatch) -> Vec<String> {
    let table = &plan.tables[0];
    batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .filter(|name| {
            table
                .columns
                .iter()
                .any(|c| c.name == *name && matches!(c.role, ColumnRole::QuasiIdentifier { .. }))
        })
        .collect()
}

/// Where each of `names` stands in `batch` (None: it does not).
fn columns_at(batch: &RecordBatch, names: &[String]) -> Vec<Option<usize>> {
    names
        .iter()
        .map(|n| batch.schema().index_of(n).ok())
        .collect()
}

/// Row `r`'s cells in `columns` (a missing column reads as NULL).
fn labels_at(batch: &RecordBatch, columns: &[Option<usize>], r: usize) -> Vec<Option<String>> {
    columns
        .iter()
        .map(|c| c.and_then(|i| render_value(batch.column(i).as_ref(), r)))
        .collect()
}

/// Under `repair = 'delta'`: each class-set table holds its fragment's QI columns and the
/// class, nothing else.
fn set_columns(
    plan: &Plan,
    declared: &Declared,
    names: &[String; 2],
    batches: &[RecordBatch],
    set_names: &[String; 2],
    sets: &[RecordBatch],
    out: &mut Check,
) {
    for i in 0..2 {
        let mut expected = qi_columns(plan, &batches[i]);
        expected.push(declared.class.clone());
        let found: Vec<String> = sets[i]
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        if found != expected {
            out.record(format!(
                "{} holds ({}); it must hold {}'s QI columns and the class: ({})",
                set_names[i],
                found.join(", "),
                names[i],
                expected.join(", ")
            ));
        }
    }
}

/// Per equivalence class of fragment `i` (its QI labels), its rows and its published set.
type SetClass = (Vec<Option<String>>, usize, Vec<Option<String>>);

/// Fragment `i`'s classes with the sets its class-set table gives them; a class without a
/// set, or a set without a class, is a violation.
fn classes_with_sets(
    plan: &Plan,
    declared: &Declared,
    (name, batch): (&str, &RecordBatch),
    sets: &RecordBatch,
    out: &mut Check,
) -> Vec<SetClass> {
    let on_sets = columns_at(sets, &qi_columns(plan, batch));
    let mut published: HashMap<Vec<Option<String>>, Vec<Option<String>>> = HashMap::new();
    let class_at = sets.schema().index_of(&declared.class).ok();
    for r in 0..sets.num_rows() {
        let value = class_at.and_then(|c| render_value(sets.column(c).as_ref(), r));
        published
            .entry(labels_at(sets, &on_sets, r))
            .or_default()
            .push(value);
    }
    let mut out_classes = Vec::new();
    for (labels, counts) in classes(plan, declared, batch) {
        let mut set = published.remove(&labels).unwrap_or_default();
        set.sort();
        set.dedup();
        if set.is_empty() {
            out.record(format!(
                "the class of {name} ({}) publishes no class in {name}_classes",
                shown(&labels)
            ));
        }
        out_classes.push((labels, counts.values().sum(), set));
    }
    let mut left: Vec<_> = published.into_keys().collect();
    left.sort();
    for labels in left {
        out.record(format!(
            "{name}_classes gives classes to ({}), which is no class of {name}",
            shown(&labels)
        ));
    }
    out_classes
}

/// 004 Def. 4.5 (D13, D14): every pair of classes of the two fragments whose sets share a
/// class reaches η >= δ.
fn selective_pairs(
    plan: &Plan,
    declared: &Declared,
    delta: f64,
    names: &[String; 2],
    batches: &[RecordBatch],
    sets: &[RecordBatch],
    out: &mut Check,
) {
    if declared.k > super::selectivity::LARGEST_K {
        out.record(format!(
            "k = {} is past the k up to which η is counted exactly ({}): a δ-selective release cannot be shown to hold",
            declared.k,
            super::selectivity::LARGEST_K
        ));
        return;
    }
    let left = classes_with_sets(plan, declared, (&names[0], &batches[0]), &sets[0], out);
    let right = classes_with_sets(plan, declared, (&names[1], &batches[1]), &sets[1], out);
    let mut eta = super::selectivity::Selectivity::new(declared.k);
    for (x, (lx, nx, sx)) in left.iter().enumerate() {
        for (y, (ly, ny, sy)) in right.iter().enumerate() {
            let w = sx.iter().filter(|c| sy.binary_search(c).is_ok()).count();
            if w == 0 || eta.holds((*nx, sx.len()), (*ny, sy.len()), w, delta) {
                continue;
            }
            out.at([x, y, 0, 0]);
            out.record(format!(
                "the class of {} ({}) and the class of {} ({}) share {w} class(es), and fewer than delta = {delta} of their versions join into k = {} rows or more",
                names[0],
                shown(lx),
                names[1],
                shown(ly),
                declared.k
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(counts: &[(&str, usize)]) -> Class {
        let counts = counts
            .iter()
            .map(|&(c, n)| (Some(c.to_string()), n))
            .collect();
        (Vec::new(), counts)
    }

    #[test]
    fn joins_count_rows_and_shared_values_of_pairs_that_share_a_value() {
        // Segments {a, b, c} and {c, d, e}: one shared value, one row.
        let left = [class(&[("a", 1), ("b", 1), ("c", 1)]), class(&[("a", 2)])];
        let right = [
            class(&[("c", 1), ("d", 1), ("e", 1)]),
            class(&[("a", 3), ("b", 1)]),
        ];
        let mut found = Vec::new();
        joins(&left, &right, |x, y, rows, shared| {
            found.push((x, y, rows, shared))
        });
        found.sort_unstable();
        assert_eq!(found, vec![(0, 0, 1, 1), (0, 1, 4, 2), (1, 1, 6, 1)]);
    }
}
