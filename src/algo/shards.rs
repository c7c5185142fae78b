//! Sharded runs: the entities split into disjoint shards, each entity with its whole tree,
//! every shard anonymized on its own by the configured algorithm, the outputs put together.
//!
//! Why it is sound: a shard's release is k-anonymous (or l-diverse) on its own, and putting
//! shards together only merges classes that publish the same records, so no class shrinks.
//! Verify checks the union as it checks any release, blind to the shards.
//!
//! Shards are contiguous ranges of the shape order (`shape::by_shape`: tree shape, largest
//! first, then the root's QI codes), so trees whose children can be matched, and entities with
//! similar QIs, stay together. Each shard takes about the same number of rows (a tree's rows,
//! all tables), and at least the model's smallest class of entities; a short last range joins
//! the one before it. A `KEEP` floor is a share of a table's rows, so each shard is held to
//! it: each meets it, and so does the union. The entities the shards suppressed whole are
//! tried once more together, as a last shard. Global recoding (`lattice`) chooses one node for
//! the whole population and is never split; anatomy's groups are not split yet.

use crate::algo::{keep, Configured, Generalization, Output};
use crate::forest::{Forest, Outline};
use crate::plan::Model;
use crate::progress::Progress;

use super::kernel::{relocate, shape};
use super::output::NO_GROUP;

/// Refuses `n` shards of a family of `entities` when a shard could not hold `min_entities`.
pub fn check(entities: usize, n: usize, min_entities: usize) -> Result<(), String> {
    let most = entities / min_entities.max(1);
    if n == 0 || n > most {
        let hint = if most <= 1 {
            "drop --shards, or lower k".to_string()
        } else {
            format!("use --shards 1 to {most}")
        };
        return Err(format!(
            "--shards {n}: the family has {entities} entities and a shard needs at least {}, so at most {} shard(s) fit; {hint}",
            min_entities.max(1),
            most.max(1),
        ));
    }
    Ok(())
}

/// The entities of each shard (entity-table rows, ascending): `n` contiguous ranges of the
/// shape order with about equal rows, each of at least `min_entities`. Refused when the
/// forest has fewer than `n * min_entities` entities.
pub fn cut(forest: &Forest, n: usize, min_entities: usize) -> Result<Vec<Vec<u32>>, String> {
    check(forest.entities(), n, min_entities)?;
    Ok(ranges(
        &shape::by_shape(forest),
        &tree_rows(forest),
        n,
        min_entities,
    ))
}

/// [`cut`] of a family known by its outline (a run in shards from the source): the order is
/// rows per child table, largest first, then the shape's hash (equal trees stay together),
/// then the root QI codes, then the key.
pub fn cut_outline(
    outline: &Outline,
    n: usize,
    min_entities: usize,
) -> Result<Vec<Vec<u32>>, String> {
    check(outline.entities(), n, min_entities)?;
    Ok(ranges(
        &outline_order(outline),
        &outline.rows,
        n,
        min_entities,
    ))
}

/// Every entity of `outline` in the order [`cut_outline`] cuts.
fn outline_order(outline: &Outline) -> Vec<u32> {
    let mut order: Vec<u32> = (0..outline.entities() as u32).collect();
    order.sort_unstable_by(|&a, &b| {
        outline
            .counts(b)
            .cmp(outline.counts(a))
            .then_with(|| outline.shape[b as usize].cmp(&outline.shape[a as usize]))
            .then_with(|| outline.codes(a).cmp(outline.codes(b)))
            .then(a.cmp(&b))
    });
    order
}

/// `order` (every entity) cut into `n` contiguous ranges of about equal rows (`sizes`: a
/// tree's rows), each of at least `min_entities`; each range sorted.
fn ranges(order: &[u32], sizes: &[u64], n: usize, min_entities: usize) -> Vec<Vec<u32>> {
    let entities = order.len();
    let min_entities = min_entities.max(1);
    let total: u64 = sizes.iter().sum();
    let mut shards: Vec<Vec<u32>> = Vec::with_capacity(n);
    let mut current: Vec<u32> = Vec::new();
    let mut rows_so_far = 0u64;
    for (i, &e) in order.iter().enumerate() {
        current.push(e);
        rows_so_far += sizes[e as usize];
        let left = entities - i - 1;
        let target = total * (shards.len() as u64 + 1) / n as u64;
        // Close the shard when it holds its share of rows and both it and what is left can
        // still make a class; the last shard takes whatever remains.
        let last = shards.len() + 1 == n;
        if !last && current.len() >= min_entities && rows_so_far >= target && left >= min_entities {
            shards.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        match shards.last_mut() {
            Some(prev) if current.len() < min_entities => prev.append(&mut current),
            _ => shards.push(current),
        }
    }
    for s in &mut shards {
        s.sort_unstable();
    }
    shards
}

/// Rows of every family table under each entity, the entity's own row included.
fn tree_rows(forest: &Forest) -> Vec<u64> {
    // Rows per table are counted bottom-up: tables come parents first, so walking them in
    // reverse adds each row's count to its parent's before the parent is passed on.
    let mut counts: Vec<Vec<u64>> = forest.tables.iter().map(|t| vec![1; t.rows()]).collect();
    for t in (1..forest.tables.len()).rev() {
        let (above, below) = counts.split_at_mut(t);
        let p = forest
            .parent_table(t)
            .expect("every table but the entity table has a parent table");
        for (r, &parent) in forest.tables[t].parent.iter().enumerate() {
            above[p][parent as usize] += below[0][r];
        }
    }
    counts.swap_remove(0)
}

/// Runs `configured` on each shard of `forest` (`cut` into `n`) and puts the outputs
/// together into one output over the whole forest. Afterwards the configured options hold
/// the highest suppression price a shard needed to meet the `KEEP` floors.
pub fn run(
    configured: &mut Configured,
    forest: &Forest,
    model: &Model,
    n: usize,
    progress: &Progress,
) -> Result<Output, String> {
    let shards = cut(forest, n, model.min_group())?;
    let mut merged = Generalization::empty(forest);
    let mut next_group = 0u32;
    let mut options = configured.options.clone();
    for (i, entities) in shards.iter().enumerate() {
        let (sub, rows) = forest
            .subset(entities)
            .map_err(|e| format!("cannot cut a shard: {e}"))?;
        let (g, used) = run_shard(configured, &sub, model, (i, shards.len()), progress)?;
        next_group = absorb(&mut merged, forest, &g, &rows, next_group);
        options = highest_price(options, used);
    }
    remainder(configured, forest, model, &mut merged, next_group, progress);
    configured.options = options;
    Ok(Output::Generalized(merged))
}

/// Runs `configured` on one shard's forest (`at`: its number and the count), held to the
/// `KEEP` floors; its generalization and the options it needed. Errors name the shard.
pub fn run_shard(
    configured: &Configured,
    shard: &Forest,
    model: &Model,
    at: (usize, usize),
    progress: &Progress,
) -> Result<(Generalization, crate::algo::Options), String> {
    let (out, used) = keep::run(
        configured.spec,
        &configured.options,
        &configured.keep,
        shard,
        model,
        progress,
    )
    .map_err(|e| {
        format!(
            "in shard {} of {} ({} entities): {e}",
            at.0 + 1,
            at.1,
            shard.entities()
        )
    })?;
    let Output::Generalized(g) = out else {
        return Err(format!(
            "algorithm = '{}' publishes an anatomy, whose groups are not split into shards yet: drop --shards",
            configured.spec.name
        ));
    };
    Ok((g, used))
}

/// The entities the shards suppressed whole (`rest`, their own forest) anonymized together,
/// held to no floor (see [`remainder`]); `None` where they are too few or the algorithm
/// releases nothing of them, and so stay suppressed.
pub fn run_rest(
    configured: &Configured,
    rest: &Forest,
    model: &Model,
    progress: &Progress,
) -> Option<Generalization> {
    if rest.entities() < model.min_group().max(2) {
        return None;
    }
    match keep::run(
        configured.spec,
        &without_relocation(&configured.options),
        &[],
        rest,
        model,
        progress,
    ) {
        Ok((Output::Generalized(g), _)) => Some(g),
        _ => None,
    }
}

/// The entities the shards suppressed whole, anonymized together as one more shard: each
/// was left without partners in its own shard (the fewer than k left at a shard's end), and
/// together they may find some. Nothing released changes, so the `KEEP` floors the shards
/// met still hold and the remainder is held to none; where it releases nothing (too few, or
/// the algorithm refuses them) they stay suppressed, which is always safe.
fn remainder(
    configured: &Configured,
    forest: &Forest,
    model: &Model,
    merged: &mut Generalization,
    next_group: u32,
    progress: &Progress,
) {
    let rest: Vec<u32> = (0..forest.entities() as u32)
        .filter(|&e| !merged.kept[0][e as usize])
        .collect();
    if rest.len() == forest.entities() {
        return;
    }
    let Ok((sub, rows)) = forest.subset(&rest) else {
        return;
    };
    if let Some(g) = run_rest(configured, &sub, model, progress) {
        merged.suppressed_entities -= rest.len();
        absorb(merged, forest, &g, &rows, next_group);
    }
}

/// Copies a shard's generalization into the whole forest's (`rows[t][i]` is the forest row
/// of the shard's row `i` of table `t`), its representative groups numbered after the ones
/// before. Returns the next free group number.
fn absorb(
    merged: &mut Generalization,
    forest: &Forest,
    shard: &Generalization,
    rows: &[Vec<u32>],
    first_group: u32,
) -> u32 {
    let mut next = first_group;
    for (t, mine) in rows.iter().enumerate() {
        let nqi = forest.tables[t].nqi();
        for (i, &r) in mine.iter().enumerate() {
            let r = r as usize;
            merged.kept[t][r] = shard.kept[t][i];
            merged.codes[t][r * nqi..r * nqi + nqi]
                .copy_from_slice(&shard.codes[t][i * nqi..i * nqi + nqi]);
            let g = shard.groups[t][i];
            merged.groups[t][r] = if g == NO_GROUP {
                NO_GROUP
            } else {
                let global = first_group.saturating_add(g).min(NO_GROUP - 1);
                next = next.max(global.saturating_add(1).min(NO_GROUP - 1));
                global
            };
        }
    }
    merged.ec_sizes.extend_from_slice(&shard.ec_sizes);
    merged.suppressed_entities += shard.suppressed_entities;
    crate::algo::Relocated::absorb(&mut merged.relocation, shard.relocation.clone());
    next
}

/// The options without relocation (`relocate`): the rest's entities were counted in their
/// shards' budgets already, so relocating them again would spend their cells twice.
fn without_relocation(options: &crate::algo::Options) -> crate::algo::Options {
    if options.declares(relocate::RELOCATE.name) {
        options.with_number(relocate::RELOCATE.name, 0.0)
    } else {
        options.clone()
    }
}

/// The options with the higher suppression price of the two (the rest is the same).
pub fn highest_price(a: crate::algo::Options, b: crate::algo::Options) -> crate::algo::Options {
    if !a.declares(shape::PRICE.name) {
        return a;
    }
    if shape::price(&b) > shape::price(&a) {
        b
    } else {
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forest::shaped;

    /// The outline's order puts larger trees first and equal trees (same rows per table, same
    /// shape hash) side by side, among them by root QI codes, then by key; its ranges cover
    /// every entity once.
    #[test]
    fn the_outline_is_cut_into_ranges_of_equal_trees_largest_first() {
        // (rows in the one child table, shape hash, root code) per entity.
        let entities = [
            (3, 7, 2),
            (1, 5, 0),
            (3, 9, 1),
            (0, 1, 4),
            (3, 7, 0),
            (1, 5, 3),
            (3, 9, 0),
            (0, 1, 1),
        ];
        let outline = Outline::from_parts(
            entities.iter().map(|&(c, _, _)| 1 + c as u64).collect(),
            entities.iter().map(|&(_, h, _)| h).collect(),
            entities.iter().map(|&(c, _, _)| c).collect(),
            entities.iter().map(|&(_, _, q)| q).collect(),
        );
        // Three rows first, the larger hash first, by code; then one row; then none.
        assert_eq!(outline_order(&outline), vec![6, 2, 4, 0, 1, 5, 7, 3]);
        let shards = cut_outline(&outline, 2, 2).expect("8 entities make 2 shards");
        // 22 rows: the first three trees hold 12, past half.
        assert_eq!(shards, vec![vec![2, 4, 6], vec![0, 1, 3, 5, 7]]);
    }

    #[test]
    fn shards_are_disjoint_cover_every_entity_and_hold_at_least_k() {
        // Twelve entities with 0-3 children each.
        let children: Vec<Vec<usize>> = (0..12).map(|i| vec![0; i % 4]).collect();
        let forest = shaped(&children);
        for n in 1..=4 {
            let shards = cut(&forest, n, 3).expect("12 entities make up to 4 shards of 3");
            assert_eq!(shards.len(), n);
            let mut all: Vec<u32> = shards.iter().flatten().copied().collect();
            all.sort_unstable();
            assert_eq!(all, (0..12).collect::<Vec<u32>>());
            assert!(shards.iter().all(|s| s.len() >= 3), "{shards:?}");
            assert!(shards.iter().all(|s| s.windows(2).all(|w| w[0] < w[1])));
        }
    }

    #[test]
    fn shards_are_ranges_of_the_shape_order_with_equal_rows() {
        // Four entities with 3 children, four with none: the large trees come first.
        let children: Vec<Vec<usize>> = (0..8)
            .map(|i| if i % 2 == 0 { vec![0; 3] } else { vec![] })
            .collect();
        let forest = shaped(&children);
        let shards = cut(&forest, 2, 2).expect("8 entities make 2 shards");
        // 20 rows: three large trees (12 rows) fill the first half; the second shard holds
        // the fourth and every small one.
        assert_eq!(shards[0], vec![0, 2, 4]);
        assert_eq!(shards[1], vec![1, 3, 5, 6, 7]);
    }

    /// Four shards of five single-row entities at k = 3 each close one class and suppress
    /// the two left over; tried again together, the eight make two more classes.
    #[test]
    fn entities_a_shard_suppresses_are_tried_again_together() {
        use crate::algo::{miracle, Options};
        let forest = shaped(&vec![vec![]; 20]);
        let model = Model::KAnonymity { k: 3 };
        let mut configured = Configured {
            spec: &miracle::MIRACLEX,
            options: Options::defaults(miracle::MIRACLEX.options),
            keep: Vec::new(),
            shards: 4,
        };
        let out = configured
            .run(&forest, &model, &Progress::new())
            .expect("runs");
        let Output::Generalized(g) = out else {
            panic!("MiRaCleX generalizes");
        };
        assert_eq!(
            g.ec_sizes,
            vec![3; 6],
            "four from the shards, two from the rest"
        );
        assert_eq!(g.suppressed_entities, 2);
        assert_eq!(g.kept[0].iter().filter(|&&k| k).count(), 18);
    }

    #[test]
    fn too_many_shards_are_refused_with_the_most_that_fit() {
        let forest = shaped(&vec![vec![]; 10]);
        let e = cut(&forest, 4, 3).expect_err("10 entities hold 3 shards of 3");
        assert!(e.contains("at most 3 shard(s)"), "{e}");
        assert!(e.contains("use --shards 1 to 3"), "{e}");
        assert!(cut(&forest, 0, 3).is_err());
    }
}
