//! The anatomy family (000 Ch. 3, spec Sec. 3.5), run under `model = 'anatomy'` in place of
//! k-anonymity: an anatomy publishes QI values exactly, so what it protects is only the link
//! between a person's QI-tree and their sensitive values, and every check here is about that
//! link. Each is read from the release, the source and the declarations alone; nothing the
//! anonymizer computed (its groups, slot trees or budgets) is trusted or reused.
//!
//! - "slots" ([`slots`]): the QI side as groups of aligned trees. Slot ids are unique over the
//!   release; slot -> table, slot -> parent slot and slot -> group are functions; every
//!   member of a group has exactly one row at each slot of its group (Defs 20.2 / 22.1 in slot
//!   form); a group holds at least l members; no entity is in two groups.
//! - "sa side" ([`sa`]): the SA side has exactly the tables and columns of its variant (keys,
//!   `slot`, `count` and SENSITIVE columns, nothing else). t-t: `<t>__sa` rows form one
//!   SA-tree per member whose slot tree is the QI side's; v-v: `<t>__sag` counts sum to |G|
//!   at every slot. Row counts match the QI side's.
//! - "l-diversity" ([`privacy`]): at every slot, every SA column's value (after BUCKETS; NULL
//!   a value of its own) occurs at most |G| / l times (Def. 6 per slot: Defs 20.3 / 22.3).
//! - "(p,m)-privacy" ([`privacy`]): every rule in every group, t-t by Def. 21 (trees holding
//!   the value m times or more, exactly), v-v by Def. 23 (the binomial tail with the declared
//!   l, in exact integer arithmetic: [`binomial`]).
//! - "sa truthfulness" ([`sa_truth`]): the SA side holds the source values of the rows the QI
//!   side traces to, per slot (v-v) or as whole trees per group (t-t), without knowing the
//!   pairing.
//! - "unlinkability" ([`links`], only with a key map): the SA side's keys do not repeat the QI
//!   side's, in value or in order within groups, more often than chance.

mod binomial;
mod flow;
mod links;
mod privacy;
mod sa;
mod sa_truth;
mod slots;

use rustc_hash::FxHashMap as HashMap;

use super::data::TableData;
use super::ldiv::valid_bounds;
use super::{Check, Keys, VerifyError};
use crate::plan::{Model, Plan, Variant};
use crate::warehouse::Warehouse;

/// The two shapes an SA-side table takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SaKind {
    /// t-t's `<t>__sa`: one row per kept vertex, keyed, linked to its parent's row.
    Trees,
    /// v-v's `<t>__sag`: one row per distinct SA tuple of a slot, with its count.
    Groups,
}

impl SaKind {
    fn suffix(self) -> &'static str {
        match self {
            SaKind::Trees => "__sa",
            SaKind::Groups => "__sag",
        }
    }

    /// The columns the layout adds around the SENSITIVE ones of family table `ti` (the
    /// entity table is `ti = 0`).
    pub(super) fn layout_columns(self, ti: usize) -> Vec<&'static str> {
        match self {
            SaKind::Trees if ti == 0 => vec![SA_ID, GROUP, SLOT],
            SaKind::Trees => vec![SA_ID, PARENT_SA_ID, SLOT],
            SaKind::Groups => vec![SLOT, COUNT],
        }
    }

    /// The released columns in order: the layout's first (v-v's `count` last), the SENSITIVE
    /// ones between.
    fn expected_columns(self, ti: usize, sa: &[SaCol]) -> Vec<String> {
        let names = sa.iter().map(|c| c.name.clone());
        match self {
            SaKind::Trees => self
                .layout_columns(ti)
                .into_iter()
                .map(str::to_string)
                .chain(names)
                .collect(),
            SaKind::Groups => std::iter::once(SLOT.to_string())
                .chain(names)
                .chain(std::iter::once(COUNT.to_string()))
                .collect(),
        }
    }
}

const SA_ID: &str = "sa_id";
const PARENT_SA_ID: &str = "parent_sa_id";
const GROUP: &str = crate::plan::GROUP_ID;
const SLOT: &str = crate::plan::SLOT;
const COUNT: &str = "count";

/// Which family table's SA side a release table is, by name (`<t>__sa`, `<t>__sag`).
pub(super) fn sa_side_of(plan: &Plan, name: &str) -> Option<(usize, SaKind)> {
    plan.tables.iter().enumerate().find_map(|(ti, t)| {
        [SaKind::Trees, SaKind::Groups]
            .into_iter()
            .find(|k| name.eq_ignore_ascii_case(&format!("{}{}", t.name, k.suffix())))
            .map(|k| (ti, k))
    })
}

/// The name of family table `ti`'s SA-side table of `kind`.
fn sa_table(plan: &Plan, ti: usize, kind: SaKind) -> String {
    format!("{}{}", plan.tables[ti].name, kind.suffix())
}

/// One SENSITIVE column of a family table.
struct SaCol {
    name: String,
    buckets: Option<Vec<f64>>,
    /// Its column in the source.
    src: usize,
    /// Whether the source holds numbers: cells then compare as numbers on both sides.
    numeric: bool,
}

/// A row's SENSITIVE cells in plan order, normalized for comparison.
type Tuple = Vec<Option<String>>;

/// A slot of the QI side, as its rows define it (the first row decides; [`slots`] reports
/// rows that disagree).
struct Slot {
    /// The released slot id.
    label: String,
    table: usize,
    /// The parent row's slot (None for the entity table's slots).
    parent: Option<usize>,
    /// Whether `parent` was read from a row whose parent resolved.
    parent_known: bool,
    group: Option<usize>,
}

/// A group of the QI side: the entity rows sharing a `group_id`, and the slots their rows
/// sit at.
struct Group {
    label: String,
    members: Vec<usize>,
    slots: Vec<usize>,
}

/// The QI side read as groups of slot trees ([`slots::read`]).
#[derive(Default)]
struct Layout {
    slots: Vec<Slot>,
    slot_index: HashMap<String, usize>,
    groups: Vec<Group>,
    group_index: HashMap<String, usize>,
    /// Per family table, per released row: its slot.
    row_slot: Vec<Vec<Option<usize>>>,
    /// Per family table, per released row: the entity row of its tree.
    member: Vec<Vec<Option<usize>>>,
    /// (member, slot) -> (table, row) of the member's first row at the slot.
    at: HashMap<(usize, usize), (usize, usize)>,
}

impl Layout {
    fn describe_slot(&self, plan: &Plan, s: usize) -> String {
        let slot = &self.slots[s];
        let group = slot
            .group
            .map(|g| format!(", group {}", self.groups[g].label))
            .unwrap_or_default();
        format!(
            "slot {} ({}{group})",
            slot.label, plan.tables[slot.table].name
        )
    }

    fn group_size(&self, s: usize) -> Option<usize> {
        self.slots[s].group.map(|g| self.groups[g].members.len())
    }
}

/// An SA-tree of a t-t release: an entity table's `__sa` row and its descendants.
struct SaTree {
    group: Option<usize>,
    /// The root row's `sa_id`.
    key: String,
    /// (slot, published SENSITIVE tuple) of its rows in tables with SENSITIVE columns, sorted.
    map: Vec<(usize, Tuple)>,
}

/// One row of a `<t>__sa` table, for the unlinkability lints.
struct SaRow {
    key: String,
    tree: Option<usize>,
    slot: Option<usize>,
}

/// The SA side as published ([`sa::read`]).
#[derive(Default)]
struct Published {
    /// Per slot of the QI side: the multiset of SENSITIVE tuples published at it (t-t: the
    /// tuples of the SA-tree rows at the slot).
    at_slot: Vec<HashMap<Tuple, u64>>,
    /// t-t: every SA-tree.
    trees: Vec<SaTree>,
    /// t-t: per family table, the rows of its `__sa` table.
    rows: Vec<Vec<SaRow>>,
    /// Per family table: whether its SA side was read (present, with its columns), so that
    /// its values can be compared at all.
    complete: Vec<bool>,
}

/// The group statistics the verdict reports in place of equivalence classes.
pub(super) struct Groups {
    pub entities: usize,
    pub groups: usize,
    pub smallest: Option<usize>,
}

/// Per family table, its SENSITIVE columns as the plan gives them.
fn sa_columns(plan: &Plan, tables: &[TableData]) -> Result<Vec<Vec<SaCol>>, VerifyError> {
    let mut out = Vec::with_capacity(tables.len());
    for (ft, t) in plan.tables.iter().zip(tables) {
        let mut cols = Vec::new();
        for c in &ft.columns {
            let crate::plan::ColumnRole::Sensitive { buckets } = &c.role else {
                continue;
            };
            if buckets.as_deref().is_some_and(|b| !valid_bounds(b)) {
                return Err(VerifyError::Plan(format!(
                    "BUCKETS of '{}.{}' are not at least two finite increasing boundaries",
                    ft.name, c.name
                )));
            }
            let src = t.src.col(&c.name).ok_or_else(|| {
                VerifyError::Plan(format!(
                    "the plan lists column '{}.{}', which the source does not have",
                    ft.name, c.name
                ))
            })?;
            cols.push(SaCol {
                name: c.name.clone(),
                buckets: buckets.clone(),
                src,
                numeric: t.src.data_type(src).is_numeric(),
            });
        }
        out.push(cols);
    }
    Ok(out)
}

/// Per family table, whether t-t publishes its `<t>__sa`: it has a SENSITIVE column or a
/// descendant with one (an SA-tree's edges pass through SA-less tables).
fn tree_tables(plan: &Plan, sa: &[Vec<SaCol>]) -> Vec<bool> {
    let mut needed: Vec<bool> = sa.iter().map(|c| !c.is_empty()).collect();
    // Children follow their parents in plan order: walking backwards settles a child first.
    for ti in (0..needed.len()).rev() {
        if let (true, Some(p)) = (needed[ti], plan.tables[ti].parent) {
            needed[p] = true;
        }
    }
    needed
}

/// Runs the anatomy family (nothing under another model); `tables` have been traced by the
/// truthfulness check.
pub(super) async fn check(
    plan: &Plan,
    release: &Warehouse,
    tables: &[TableData],
    keys: &Keys<'_>,
) -> Result<(Vec<Check>, Groups), VerifyError> {
    let Model::Anatomy { l, variant, rules } = &plan.params.model else {
        return Ok((
            Vec::new(),
            Groups {
                entities: 0,
                groups: 0,
                smallest: None,
            },
        ));
    };
    let sa = sa_columns(plan, tables)?;

    let mut slot_check = Check::new("slots");
    let layout = slots::read(tables, *l, &mut slot_check);

    let mut side = Check::new("sa side");
    let published = sa::read(plan, release, tables, &layout, &sa, *variant, &mut side).await?;

    let mut diversity = Check::new("l-diversity");
    privacy::diversity(plan, &layout, &published, &sa, *l, &mut diversity);

    let mut pm = Check::new("(p,m)-privacy");
    privacy::rules(plan, &layout, &published, &sa, *l, *variant, rules, &mut pm)?;

    let mut truth = Check::new("sa truthfulness");
    let pairs = sa_truth::check(plan, tables, &layout, &published, &sa, *variant, &mut truth);

    let mut checks = vec![slot_check, side, diversity, pm, truth];
    if let Keys::Map(_) = keys {
        let mut link = Check::new("unlinkability");
        if *variant == Variant::TreeTree {
            links::check(plan, tables, &layout, &published, &pairs, &mut link);
        }
        checks.push(link);
    }
    let stats = Groups {
        entities: tables.first().map_or(0, |t| t.rel.rows()),
        groups: layout.groups.len(),
        smallest: layout.groups.iter().map(|g| g.members.len()).min(),
    };
    Ok((checks, stats))
}
