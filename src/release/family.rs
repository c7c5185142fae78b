//! The family tables as released: for each plan table its kept rows, keys as the plan says,
//! QI cells as hierarchy labels (or, under anatomy, exact beside their slot and group ids),
//! identifiers left out, other cells as the source holds them; a split table's two entries
//! merged back; the per-table statistics.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array, StringArray, UInt32Array};
use arrow::compute::take_record_batch;
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;

use super::keys::{key_pairs, released_ints, second_path_keys, sort_by_key};
use super::{internal, Materialized, ReleaseError, TableStats};
use crate::algo::Generalization;
use crate::forest::{Forest, TableNodes};
use crate::keymap::KeyMap;
use crate::plan::{ColumnRole, KeyPolicy, Plan, ReleasedKey};
use crate::warehouse::{ForeignKey, ReleaseTable};

/// What the QI side of an anatomy adds to each family table (000 Sec. 3.2, spec D10): every
/// kept row's released slot id, and the entity rows' group id. Both are drawn at random, so
/// neither ranks groups by entity key or slots by depth.
pub(super) struct QiSide {
    /// `slot[t][row]`, for kept rows.
    pub(super) slot: Vec<Vec<i64>>,
    /// `group[row]` of the entity table, for kept rows.
    pub(super) group: Vec<i64>,
}

/// The family tables with generalized rows: kept rows with their codes' labels, keys drawn.
pub(super) fn tables(
    plan: &Plan,
    forest: &Forest,
    generalization: &Generalization,
    anatomy: Option<&QiSide>,
) -> Result<Materialized, ReleaseError> {
    let Generalization { kept, codes, .. } = generalization;
    // surrogate[t][row]: the released one-column integer key of a kept row, for tables whose
    // released key is one (see `released_ints`).
    let mut surrogate: Vec<Option<Vec<Option<i64>>>> = Vec::with_capacity(forest.tables.len());
    let mut tables = Vec::new();
    let mut stats = Vec::new();
    let mut keys = KeyMap::default();
    let mut reserved: HashMap<usize, Vec<i64>> = HashMap::new();
    for (ti, (ft, nodes)) in plan.tables.iter().zip(&forest.tables).enumerate() {
        let rows: Vec<u32> = (0..nodes.rows() as u32)
            .filter(|&r| kept[ti][r as usize])
            .collect();
        let kept_elsewhere = ft
            .part
            .as_ref()
            .filter(|p| !p.null_side)
            .map_or(0, |p| kept[p.other].iter().filter(|&&k| k).count());
        let own = released_ints(
            plan,
            ti,
            &rows,
            nodes,
            &surrogate,
            &mut reserved,
            kept_elsewhere,
        );
        let Released {
            batch,
            lm_sum,
            lm_sum_by_column,
        } = release_rows(&RowsOf {
            plan,
            forest,
            ti,
            rows: &rows,
            cells: Cells {
                codes: &codes[ti],
                anatomy,
            },
            own: own.as_ref(),
            surrogate: &surrogate,
        })?;
        let nqi = nodes.nqi();
        let released_pk = ft.released_pk();
        let batch = sort_by_key(
            batch,
            released_pk.iter().chain(&ft.released_fk),
            released_pk.is_empty(),
        )?;
        surrogate.push(own);
        if !ft.primary_key.is_empty() {
            let pairs = key_pairs(
                plan,
                ti,
                &nodes.batch,
                &rows,
                &surrogate,
                &generalization.groups[ti],
            )?;
            add_pairs(&mut keys, &ft.name, pairs);
        }
        let foreign_keys = foreign_keys(plan, ti);
        stats.push(TableStats {
            name: ft.name.clone(),
            rows_in: nodes.rows_in,
            released: rows.len(),
            suppressed: nodes.rows() - rows.len(),
            orphans_dropped: nodes.orphans_dropped,
            no_parent: nodes.no_parent,
            lm_sum,
            lm_sum_by_column,
            qi_columns: nqi,
        });
        tables.push(ReleaseTable {
            name: ft.name.clone(),
            batch,
            primary_key: released_pk,
            foreign_keys,
        });
    }
    merge_parts(plan, &mut tables, &mut stats)?;
    Ok(Materialized {
        tables,
        keys,
        stats,
        ec_sizes: generalization.ec_sizes.clone(),
        suppressed_entities: generalization.suppressed_entities,
        recoding: recoding(plan, generalization),
        relocation: generalization.relocation.clone(),
        fragmentation: None,
        fragment_rows: Vec::new(),
    })
}

/// Adds a table's key pairs to the key map: the two entries of a split table share one
/// released table and one entry here.
fn add_pairs(keys: &mut KeyMap, table: &str, pairs: crate::keymap::TableKeys) {
    match keys.tables.get_mut(table) {
        Some(entry) => entry.extend(pairs),
        None => {
            keys.tables.insert(table.to_string(), pairs);
        }
    }
}

/// The released FKs of plan table `ti`: to its parent, along its second paths, and its
/// links to dimensions.
fn foreign_keys(plan: &Plan, ti: usize) -> Vec<ForeignKey> {
    let ft = &plan.tables[ti];
    let mut foreign_keys = Vec::new();
    if let Some(p) = ft.parent {
        foreign_keys.push(ForeignKey {
            columns: ft.released_fk.clone(),
            ref_table: plan.tables[p].name.clone(),
            ref_columns: ft.released_parent_key.clone(),
        });
    }
    foreign_keys.extend(ft.redundant.iter().map(|r| ForeignKey {
        columns: r.released_columns.clone(),
        ref_table: plan.tables[r.ancestor].name.clone(),
        ref_columns: r.released_ancestor_key.clone(),
    }));
    foreign_keys.extend(ft.links.iter().cloned());
    foreign_keys
}

/// Global recoding's levels named by their columns (a split table's two plan entries, which
/// hang at different parents, are searched as two sets of columns and named twice).
fn recoding(plan: &Plan, g: &Generalization) -> Vec<(String, u16, u16)> {
    let Some(levels) = &g.levels else {
        return Vec::new();
    };
    let names = plan
        .tables
        .iter()
        .flat_map(|t| t.qi_columns().map(move |(c, _)| format!("{}.{c}", t.name)));
    names
        .zip(levels)
        .map(|(name, &(level, height))| (name, level, height))
        .collect()
}

/// One table's kept rows as released, before sorting, with the loss its QI cells carry.
struct Released {
    batch: RecordBatch,
    /// 001 Def. 8 numerator over the table's released QI cells.
    lm_sum: f64,
    lm_sum_by_column: Vec<(String, f64)>,
}

/// The labels of QI column `qi` (the table's `qi`-th) for the kept `rows`, and their summed
/// loss (LM' of 001 Def. 8), each loss also added to the table's `total` row by row (the
/// report's sums are the same to the last bit for the same release).
fn qi_labels(
    nodes: &TableNodes,
    rows: &[u32],
    codes: &[u32],
    qi: usize,
    total: &mut f64,
) -> (StringArray, f64) {
    let h = &nodes.hierarchies[qi];
    let nqi = nodes.nqi();
    let mut sum = 0.0;
    let labels = rows
        .iter()
        .map(|&r| {
            let code = codes[r as usize * nqi + qi];
            let loss = h.loss(code);
            *total += loss;
            sum += loss;
            h.label(code)
        })
        .collect();
    (labels, sum)
}

/// What a table's QI cells are released as: generalized codes, or under anatomy the source
/// values beside the slot (and group) ids.
struct Cells<'a> {
    codes: &'a [u32],
    anatomy: Option<&'a QiSide>,
}

/// One table's columns as they are released, with the loss of its QI cells so far.
#[derive(Default)]
struct Built {
    fields: Vec<Field>,
    columns: Vec<ArrayRef>,
    /// The next QI column's index among the table's QI columns.
    qi_index: usize,
    lm_sum: f64,
    lm_sum_by_column: Vec<(String, f64)>,
    /// The FK to the parent was written as one replacing column.
    fk_done: bool,
    /// Second FK paths already written.
    redundant_done: Vec<usize>,
}

impl Built {
    fn push(&mut self, field: Field, column: ArrayRef) {
        self.fields.push(field);
        self.columns.push(column);
    }

    /// A released key column: integers, never NULL.
    fn push_ints(&mut self, name: &str, values: Vec<Option<i64>>) {
        self.push(
            Field::new(name, DataType::Int64, false),
            Arc::new(Int64Array::from(values)),
        );
    }
}

/// What table `ti`'s kept `rows` are released from: keys as the plan says (own pseudonyms
/// `own`, the parent's or an ancestor's from `surrogate`), and the QI cells.
struct RowsOf<'a> {
    plan: &'a Plan,
    forest: &'a Forest,
    ti: usize,
    rows: &'a [u32],
    cells: Cells<'a>,
    own: Option<&'a Vec<Option<i64>>>,
    surrogate: &'a [Option<Vec<Option<i64>>>],
}

/// The released columns of the kept rows: keys as the plan says (a surrogate column first),
/// QI cells as hierarchy labels, identifiers left out, other cells as the source holds them.
fn release_rows(of: &RowsOf<'_>) -> Result<Released, ReleaseError> {
    let (plan, forest, ti, rows) = (of.plan, of.forest, of.ti, of.rows);
    let ft = &plan.tables[ti];
    let take = UInt32Array::from(rows.to_vec());
    let source = take_record_batch(&forest.tables[ti].batch, &take).map_err(internal)?;
    let mut out = Built {
        lm_sum_by_column: Vec::with_capacity(forest.tables[ti].nqi()),
        ..Built::default()
    };
    if let ReleasedKey::Surrogate(name) = &ft.key {
        let own = of.own.ok_or_else(|| {
            internal(format!(
                "table {} has a surrogate key but no values",
                ft.name
            ))
        })?;
        out.push_ints(name, rows.iter().map(|&r| own[r as usize]).collect());
    }
    for (ci, col) in ft.columns.iter().enumerate() {
        release_column(of, &source, ci, col, &mut out)?;
    }
    if let Some(side) = of.cells.anatomy {
        anatomy_ids(of, side, &mut out);
    }
    let schema = Arc::new(Schema::new(out.fields));
    let batch = RecordBatch::try_new(schema, out.columns).map_err(internal)?;
    Ok(Released {
        batch,
        lm_sum: out.lm_sum,
        lm_sum_by_column: out.lm_sum_by_column,
    })
}

/// Source column `ci` (`col`) of the kept rows as released, appended to `out` (or left out).
fn release_column(
    of: &RowsOf<'_>,
    source: &RecordBatch,
    ci: usize,
    col: &crate::plan::PlannedColumn,
    out: &mut Built,
) -> Result<(), ReleaseError> {
    let ft = &of.plan.tables[of.ti];
    let nodes = &of.forest.tables[of.ti];
    let original = source.column(ci);
    let field = source.schema().field(ci).clone();
    let in_fk = ft.parent_fk.contains(&col.name);
    let parent_ints = ft.parent.and_then(|p| of.surrogate[p].as_ref());
    let pseudonymize = of.plan.params.keys == KeyPolicy::Pseudonymize;
    let second = ft
        .redundant
        .iter()
        .enumerate()
        .find(|(_, r)| r.columns.contains(&col.name));
    // The main entry's FK, NULL in a second entry's rows: filled in when the two are
    // merged.
    let absent = ft
        .part
        .as_ref()
        .is_some_and(|p| p.null_side && p.split_source.contains(&col.name));
    let anatomy = of.cells.anatomy.is_some();
    match &col.role {
        ColumnRole::Identifier => {}
        _ if absent => {}
        // A second path to an ancestor: the ancestor's released key, read up the
        // tree (the forest checked that both paths agree).
        ColumnRole::Key if second.is_some() => {
            let (i, r) = second.expect("checked by the guard");
            second_path_column(of, (i, r), &col.name, (field, original), out);
        }
        // The reference to a parent with an integer key: its pseudonym, in place, or in
        // one column in place of the FK's columns when the parent is keyed by a surrogate.
        ColumnRole::Key if in_fk && (ft.fk_replaced() || parent_ints.is_some()) => {
            if out.fk_done {
                return Ok(());
            }
            out.fk_done = ft.fk_replaced();
            let ints = parent_ints.ok_or_else(|| {
                internal(format!(
                    "the parent of {} has no released key values",
                    ft.name
                ))
            })?;
            let values = of
                .rows
                .iter()
                .map(|&r| ints[nodes.parent[r as usize] as usize])
                .collect();
            let name = if ft.fk_replaced() {
                &ft.released_fk[0]
            } else {
                &col.name
            };
            out.push_ints(name, values);
        }
        ColumnRole::Key if !in_fk && pseudonymize => {
            let own = of.own.ok_or_else(|| {
                internal(format!(
                    "key {}.{} has no released values",
                    ft.name, col.name
                ))
            })?;
            out.push_ints(
                &col.name,
                of.rows.iter().map(|&r| own[r as usize]).collect(),
            );
        }
        // Anatomy publishes QI values exactly and sensitive ones on the SA side only.
        ColumnRole::Sensitive { .. } if anatomy => {}
        ColumnRole::QuasiIdentifier { .. } if anatomy => {
            out.lm_sum_by_column.push((col.name.clone(), 0.0));
            out.qi_index += 1;
            out.push(field, original.clone());
        }
        ColumnRole::QuasiIdentifier { .. } => {
            let (labels, column_sum) = qi_labels(
                nodes,
                of.rows,
                of.cells.codes,
                out.qi_index,
                &mut out.lm_sum,
            );
            out.lm_sum_by_column.push((col.name.clone(), column_sum));
            out.qi_index += 1;
            out.push(
                Field::new(&col.name, DataType::Utf8, true),
                Arc::new(labels),
            );
        }
        _ => out.push(field, original.clone()),
    }
    Ok(())
}

/// Second FK path `i` (`r`) of the kept rows, at its column `name`: the ancestor's released
/// integer key read up the tree, written once where one column replaces the path's columns;
/// the source values (`source`) where the ancestor keeps its own key.
fn second_path_column(
    of: &RowsOf<'_>,
    (i, r): (usize, &crate::plan::RedundantFk),
    name: &str,
    source: (Field, &ArrayRef),
    out: &mut Built,
) {
    if r.replaced() && out.redundant_done.contains(&i) {
        return;
    }
    out.redundant_done.push(i);
    match of.surrogate[r.ancestor].as_ref() {
        Some(ints) => {
            let name = if r.replaced() {
                &r.released_columns[0]
            } else {
                name
            };
            let values = second_path_keys(of.plan, of.forest, of.ti, of.rows, r, ints, source.1);
            out.push(
                Field::new(name, DataType::Int64, true),
                Arc::new(Int64Array::from(values)),
            );
        }
        None => out.push(source.0, source.1.clone()),
    }
}

/// Under anatomy: every row's slot id, and the entity rows' group id before it.
fn anatomy_ids(of: &RowsOf<'_>, side: &QiSide, out: &mut Built) {
    if of.ti == 0 {
        out.push_ints(
            "group_id",
            of.rows
                .iter()
                .map(|&r| Some(side.group[r as usize]))
                .collect(),
        );
    }
    out.push_ints(
        "slot",
        of.rows
            .iter()
            .map(|&r| Some(side.slot[of.ti][r as usize]))
            .collect(),
    );
}

/// Appends each split table's second entry (plan::Part) to its main entry's table and
/// statistics, the main entry's FK NULL in its rows, and drops the second entries.
fn merge_parts(
    plan: &Plan,
    tables: &mut Vec<ReleaseTable>,
    stats: &mut Vec<TableStats>,
) -> Result<(), ReleaseError> {
    for (ti, ft) in plan.tables.iter().enumerate() {
        let Some(main) = ft.part.as_ref().filter(|p| p.null_side).map(|p| p.other) else {
            continue;
        };
        let second = tables[ti].batch.clone();
        let first = tables[main].batch.clone();
        let mut fields = Vec::with_capacity(first.num_columns());
        let mut tails = Vec::with_capacity(first.num_columns());
        for f in first.schema().fields() {
            let tail = match second.schema().index_of(f.name()) {
                Ok(i) => arrow::compute::cast(second.column(i), f.data_type()).map_err(internal)?,
                Err(_) => arrow::array::new_null_array(f.data_type(), second.num_rows()),
            };
            let nullable = f.is_nullable() || tail.null_count() > 0;
            fields.push(Field::new(f.name(), f.data_type().clone(), nullable));
            tails.push(tail);
        }
        let schema = Arc::new(Schema::new(fields));
        let head =
            RecordBatch::try_new(schema.clone(), first.columns().to_vec()).map_err(internal)?;
        let tail = RecordBatch::try_new(schema.clone(), tails).map_err(internal)?;
        let merged = arrow::compute::concat_batches(&schema, [&head, &tail]).map_err(internal)?;
        let main_ft = &plan.tables[main];
        let released_pk = main_ft.released_pk();
        tables[main].batch = sort_by_key(
            merged,
            released_pk.iter().chain(&main_ft.released_fk),
            released_pk.is_empty(),
        )?;
        let s = stats[ti].clone();
        let m = &mut stats[main];
        m.rows_in += s.rows_in;
        m.released += s.released;
        m.suppressed += s.suppressed;
        m.orphans_dropped += s.orphans_dropped;
        m.no_parent += s.no_parent;
        m.lm_sum += s.lm_sum;
        for ((_, sum), (_, more)) in m.lm_sum_by_column.iter_mut().zip(&s.lm_sum_by_column) {
            *sum += more;
        }
    }
    let second = |ti: usize| plan.tables[ti].part.as_ref().is_some_and(|p| p.null_side);
    let mut i = 0;
    tables.retain(|_| {
        i += 1;
        !second(i - 1)
    });
    let mut i = 0;
    stats.retain(|_| {
        i += 1;
        !second(i - 1)
    });
    Ok(())
}
