//! The memory a run may hold (`--memory-budget`), and what it decides: whether the family is
//! anonymized whole or in shards and in how many, how much verify may hold (so how large its
//! partitions are), and how much the final sort of a run in shards holds before it spills.
//!
//! The decision is taken before anything is loaded, from the family's row count (read from
//! the catalog: a Parquet footer, or the rows a SQLite or CSV source counted at open) and from
//! figures per family row measured on TPC-H (docs/scale.md): a run holds about
//! [`WHOLE_PER_ROW`] bytes a row whole; in shards, the outline [`OUTLINE_PER_ENTITY`] an entity,
//! then the key map and the report's tallies [`HELD_PER_ROW`] plus the shard's forest and
//! release [`SHARD_PER_ROW`] a row of the shard. The fewest shards that fit are chosen:
//! a shard with fewer partners costs utility (docs/scale.md, "What sharding costs").
//! Plain arithmetic: no I/O but reading the machine's memory for the default.

use std::fmt;
use std::str::FromStr;

use bytesize::ByteSize;

/// What a run holds before any table: the runtime, DataFusion's session, the plan, the
/// allocator's arenas (a run on a tiny family peaks at about 100 MiB).
pub const BASE: u64 = 160 << 20;
/// A run holding the whole forest: the load's peak per family row (TPC-H SF 1: 2.6 GiB for
/// 7.65 M rows, each table sorted a column at a time).
pub const WHOLE_PER_ROW: u64 = 360;
/// The outline of a run in shards, per entity: its key, tree rows, shape hash, rows per
/// child table and root QI codes, and its place in the cut's order (TPC-H: 48 bytes).
pub const OUTLINE_PER_ENTITY: u64 = 64;
/// What a run in shards holds across shards, per family row: the key map and the report's
/// tallies (SF 10: 37 bytes a row).
pub const HELD_PER_ROW: u64 = 40;
/// A shard's forest and release at its peak (materialized and written), per family row of
/// the shard (SF 1 in 3 shards: 410).
pub const SHARD_PER_ROW: u64 = 400;
/// The final sort of a run in shards spills past this share of what is left...
const SORT_SHARE: u64 = 4;
/// ... within these bounds.
const SORT_MIN: u64 = 32 << 20;
const SORT_MAX: u64 = 1 << 30;
/// The budget when the machine's memory cannot be read.
const UNKNOWN_MACHINE: u64 = 8 << 30;

/// Why a budget cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum BudgetError {
    #[error("'{0}' is not a size: give a number and a unit, such as 8GiB, 1500MiB or 2G")]
    NotASize(String),
    #[error("--memory-budget {budget}{default}: this family of {rows} rows ({entities} entities) needs at least {needs}, for {what}; give at least --memory-budget {needs}")]
    TooSmall {
        budget: Size,
        /// " (the default, half this machine's memory)" where it was not given.
        default: &'static str,
        rows: u64,
        entities: u64,
        needs: Needed,
        what: &'static str,
    },
}

/// A number of bytes, shown in binary units (`1.5 GiB`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Size(pub u64);

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", ByteSize(self.0).display().iec())
    }
}

/// An amount needed, in whole MiB rounded up, so that the figure given back as a budget is
/// enough (`1843MiB`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needed(pub u64);

impl fmt::Display for Needed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}MiB", self.0.div_ceil(1 << 20))
    }
}

/// The memory a run may hold, and whether the user gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    pub bytes: u64,
    pub given: bool,
}

impl FromStr for Budget {
    type Err = BudgetError;

    /// `8GiB`, `1500 MiB`, `2G` (10^9), `1.5GiB`; a bare number is bytes.
    fn from_str(text: &str) -> Result<Budget, BudgetError> {
        let size: ByteSize = text
            .trim()
            .parse()
            .map_err(|_| BudgetError::NotASize(text.to_string()))?;
        Ok(Budget {
            bytes: size.as_u64(),
            given: true,
        })
    }
}

impl Budget {
    /// The default: half the memory this process may use (the machine's, or its control
    /// group's limit when lower), or 8 GiB where neither can be read.
    pub fn half_machine() -> Budget {
        Budget {
            bytes: machine_memory().map_or(UNKNOWN_MACHINE, |m| m / 2),
            given: false,
        }
    }

    /// The given budget, else [`Budget::half_machine`].
    pub fn or_default(given: Option<Budget>) -> Budget {
        given.unwrap_or_else(Budget::half_machine)
    }

    /// What is left of the budget beside the process itself ([`BASE`]) and `held` bytes.
    pub fn beside(&self, held: u64) -> u64 {
        self.bytes.saturating_sub(BASE.saturating_add(held))
    }

    fn shown(&self) -> &'static str {
        if self.given {
            ""
        } else {
            " (the default, half this machine's memory)"
        }
    }
}

/// What the decision needs to know of the family.
#[derive(Clone, Copy, Debug)]
pub struct Family {
    /// Rows of every family table (a table on two paths counts twice: it is loaded twice).
    pub rows: u64,
    pub entities: u64,
    /// The smallest group the model allows (k, or l).
    pub min_group: u64,
    /// The least verify keeps within, for a release as large as the family
    /// (`verify::least_memory`).
    pub verify_least: u64,
}

/// What a budget decides for one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// 1: the whole forest at once.
    pub shards: usize,
    /// What verify may hold (its partitions follow), beside what the run holds then.
    pub verify_memory: u64,
    /// What the final sort of a run in shards holds before it spills.
    pub sort_memory: usize,
    /// What the queries that read the source may hold (their joins' hash tables, their
    /// sorts, which spill beyond): what the budget leaves beside the process and what is
    /// held across shards.
    pub query_memory: usize,
    /// What the whole forest would hold, for the message when it cannot be split.
    pub whole: u64,
}

/// The decision for `family` under `budget`: whole if it fits, else the fewest shards
/// whose forest fits beside the key map; `forced` (`--shards N`) fixes the count and the
/// budget still sets verify's and the sort's memory. Refused, saying how much is needed,
/// where not even the floor fits: the outline, or a shard of the smallest size allowed
/// beside the key map, or verify's floor.
pub fn decide(
    budget: Budget,
    family: Family,
    forced: Option<usize>,
) -> Result<Decision, BudgetError> {
    let rows = family.rows;
    let whole = BASE.saturating_add(WHOLE_PER_ROW.saturating_mul(rows));
    let held = HELD_PER_ROW.saturating_mul(rows);
    let most = (family.entities / family.min_group.max(1)).max(1);
    let outline = BASE.saturating_add(OUTLINE_PER_ENTITY.saturating_mul(family.entities));
    let smallest_shard = BASE
        .saturating_add(held)
        .saturating_add(SHARD_PER_ROW.saturating_mul(rows).div_ceil(most));
    let verify_floor = BASE
        .saturating_add(held)
        .saturating_add(family.verify_least);
    // What the shards, verify and the sort share: all the floors below are checked first.
    let left = budget.beside(held);
    let too_small = |needs: u64, what: &'static str| BudgetError::TooSmall {
        budget: Size(budget.bytes),
        default: budget.shown(),
        rows,
        entities: family.entities,
        needs: Needed(needs),
        what,
    };
    let shards = match forced {
        Some(n) => n.max(1),
        None if whole <= budget.bytes => 1,
        None => {
            if most < 2 {
                return Err(too_small(
                    whole,
                    "the whole family at once: it has too few entities for two shards",
                ));
            }
            // The largest floor that does not fit is the one to name: given back, it fits
            // every floor.
            let floors = [
                (outline, "every entity's outline"),
                (
                    smallest_shard,
                    "the key map and a shard of the fewest entities a class needs",
                ),
                (verify_floor, "the key map and verify's smallest partition"),
            ];
            if let Some(&(needs, what)) = floors
                .iter()
                .filter(|(needs, _)| *needs > budget.bytes)
                .max_by_key(|(needs, _)| *needs)
            {
                return Err(too_small(needs, what));
            }
            let n = SHARD_PER_ROW.saturating_mul(rows).div_ceil(left.max(1));
            usize::try_from(n.clamp(2, most)).unwrap_or(usize::MAX)
        }
    };
    if verify_floor > budget.bytes {
        return Err(too_small(
            verify_floor,
            "the key map and verify's smallest partition",
        ));
    }
    Ok(Decision {
        shards,
        verify_memory: left,
        sort_memory: usize::try_from((left / SORT_SHARE).clamp(SORT_MIN, SORT_MAX))
            .unwrap_or(usize::MAX),
        query_memory: usize::try_from(left.max(SORT_MIN)).unwrap_or(usize::MAX),
        whole,
    })
}

/// The memory this process may use: the machine's (`MemTotal`), or its control group's
/// limit when that is lower (a container's).
fn machine_memory() -> Option<u64> {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| meminfo_total(&text));
    let limit = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok());
    match (total, limit) {
        (Some(t), Some(l)) => Some(t.min(l)),
        (t, l) => t.or(l),
    }
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
fn meminfo_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn given(text: &str) -> Budget {
        text.parse().expect("a size")
    }

    /// TPC-H SF 1 and SF 10 as the decision sees them (customer, orders, line items).
    fn tpch(sf: u64) -> Family {
        Family {
            rows: 7_650_000 * sf,
            entities: 150_000 * sf,
            min_group: 10,
            verify_least: 10 * 2 * 7_650_000 * sf + 300 * 1_000,
        }
    }

    #[test]
    fn sizes_parse_in_binary_and_decimal_units() {
        assert_eq!(given("1GiB").bytes, GIB);
        assert_eq!(given(" 1500 MiB ").bytes, 1500 << 20);
        assert_eq!(given("2G").bytes, 2_000_000_000);
        assert_eq!(given("1.5gib").bytes, GIB + GIB / 2);
        assert_eq!(given("4096").bytes, 4096);
        for bad in ["", "lots", "GiB", "12 parsecs", "-1GiB"] {
            let e = bad.parse::<Budget>().expect_err(bad).to_string();
            assert!(e.contains("is not a size"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_family_that_fits_runs_whole_and_a_larger_one_in_the_fewest_shards() {
        let d = decide(given("8GiB"), tpch(1), None).expect("fits");
        assert_eq!(d.shards, 1);
        let d = decide(given("1GiB"), tpch(1), None).expect("fits in shards");
        assert!(d.shards > 1, "{d:?}");
        // One shard fewer would not fit beside the key map.
        let room = GIB - BASE - HELD_PER_ROW * tpch(1).rows;
        assert!(SHARD_PER_ROW * tpch(1).rows / d.shards as u64 <= room);
        assert!(SHARD_PER_ROW * tpch(1).rows / (d.shards as u64 - 1) > room);
        // SF 10 under 7 GiB: a few shards, each under the room left.
        let d = decide(given("7GiB"), tpch(10), None).expect("fits in shards");
        assert!((2..=8).contains(&d.shards), "{d:?}");
    }

    #[test]
    fn a_budget_below_the_floor_says_how_much_it_needs() {
        let e = decide(given("256MiB"), tpch(1), None).expect_err("too small");
        let text = e.to_string();
        assert!(text.contains("needs at least"), "{text}");
        let BudgetError::TooSmall { needs, .. } = e else {
            panic!("{text}")
        };
        // The amount it names is enough.
        let given_back: Budget = needs.to_string().parse().expect("a size");
        decide(given_back, tpch(1), None).expect("enough");
        let default = decide(
            Budget {
                bytes: 1 << 20,
                given: false,
            },
            tpch(1),
            None,
        )
        .expect_err("too small");
        assert!(default.to_string().contains("the default"), "{default}");
    }

    #[test]
    fn a_family_of_too_few_entities_to_split_needs_room_to_run_whole() {
        let few = Family {
            entities: 15,
            ..tpch(1)
        };
        let e = decide(given("1GiB"), few, None).expect_err("cannot split");
        assert!(e.to_string().contains("too few entities"), "{e}");
        assert_eq!(decide(given("8GiB"), few, None).expect("whole").shards, 1);
    }

    #[test]
    fn forced_shards_keep_their_count_and_the_budget_sets_the_rest() {
        let d = decide(given("2GiB"), tpch(1), Some(16)).expect("fits");
        assert_eq!(d.shards, 16);
        assert!(d.sort_memory as u64 >= SORT_MIN && d.sort_memory as u64 <= SORT_MAX);
        assert_eq!(
            d.verify_memory,
            2 * GIB - BASE - HELD_PER_ROW * tpch(1).rows
        );
    }

    #[test]
    fn meminfo_gives_the_total_in_bytes() {
        let text = "MemTotal:       24603428 kB\nMemFree:        1 kB\n";
        assert_eq!(meminfo_total(text), Some(24_603_428 * 1024));
        assert_eq!(meminfo_total("nothing"), None);
    }
}
