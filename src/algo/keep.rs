//! `KEEP n PERCENT OF t`: the data owner's floor on the rows a release keeps, per family table.
//!
//! An algorithm with a `suppression_price` meets the floor by generalizing more: it runs again
//! at a doubled price until every floor holds, then halves the gap to the last price that fell
//! short a few times (geometrically), and releases the lowest price found that holds, which
//! generalizes least among those tried. If no price up to [`MAX_DOUBLINGS`] doublings holds,
//! the run is refused with the best share each table reached. An algorithm without a price
//! (or a floor its first run already meets) runs once and is checked.

use crate::algo::kernel::shape;
use crate::algo::{Options, Output, Spec};
use crate::forest::Forest;
use crate::plan::{KeepRows, Model};
use crate::progress::Progress;

/// How many times the price is doubled before the floor is declared out of reach (the price
/// then weighs a row 4096 times a fully generalized one: generalization always wins where it
/// can keep a row at all).
pub const MAX_DOUBLINGS: u32 = 12;

/// Geometric halvings of the interval between the last price short of the floor and the
/// first that met it.
const BISECTIONS: u32 = 3;

/// Runs `spec` with `options` and, if the floors of `keep` are not met, again at higher
/// suppression prices. Returns the output and the options it was made with.
pub fn run(
    spec: &Spec,
    options: &Options,
    keep: &[KeepRows],
    forest: &Forest,
    model: &Model,
    progress: &Progress,
) -> Result<(Output, Options), String> {
    let first = (spec.run)(forest, model, options, progress)?;
    let mut best = Shares::of(&first, keep, forest);
    if keep.is_empty() || best.meets(keep) {
        return Ok((first, options.clone()));
    }
    if !options.declares(shape::PRICE.name) {
        return Err(best.refusal(keep, None));
    }
    let start = shape::price(options);
    let ceiling = max_price(start);
    let mut short = start;
    let mut found: Option<(f64, Output)> = None;
    let mut price = start;
    while price < ceiling {
        price = (price * 2.0).min(ceiling);
        let out = (spec.run)(
            forest,
            model,
            &options.with_number(shape::PRICE.name, price),
            progress,
        )?;
        let shares = Shares::of(&out, keep, forest);
        best.raise(&shares);
        if shares.meets(keep) {
            found = Some((price, out));
            break;
        }
        short = price;
    }
    let Some((mut met, mut output)) = found else {
        return Err(best.refusal(keep, Some(ceiling)));
    };
    for _ in 0..BISECTIONS {
        // Tried at a price as the report prints it, so that writing the reported price back
        // releases this very output.
        let mid = round((short * met).sqrt());
        if mid <= short || mid >= met {
            break;
        }
        let out = (spec.run)(
            forest,
            model,
            &options.with_number(shape::PRICE.name, mid),
            progress,
        )?;
        if Shares::of(&out, keep, forest).meets(keep) {
            (met, output) = (mid, out);
        } else {
            short = mid;
        }
    }
    progress.warn(format!(
        "KEEP: suppression_price raised from {start} to {met} so that {}",
        keep.iter()
            .map(|k| format!("{} keeps at least {}% of its rows", k.name, k.percent))
            .collect::<Vec<_>>()
            .join(" and ")
    ));
    Ok((output, options.with_number(shape::PRICE.name, met)))
}

/// The largest price tried from `start`: [`MAX_DOUBLINGS`] doublings, within the option's range.
fn max_price(start: f64) -> f64 {
    let max = match shape::PRICE.kind {
        crate::algo::options::Kind::Number { max, .. } => max,
        _ => f64::MAX,
    };
    (start * 2f64.powi(MAX_DOUBLINGS as i32)).min(max)
}

/// A price rounded up to four significant digits: short to read and to write back.
fn round(p: f64) -> f64 {
    let digits = 4 - p.abs().log10().ceil() as i32;
    let scale = 10f64.powi(digits.max(0));
    (p * scale).ceil() / scale
}

/// Rows kept and source rows per floor, in the order of `keep`.
struct Shares {
    kept: Vec<usize>,
    rows: Vec<usize>,
}

impl Shares {
    fn of(output: &Output, keep: &[KeepRows], forest: &Forest) -> Shares {
        Shares {
            kept: keep
                .iter()
                .map(|k| output.kept()[k.table].iter().filter(|&&x| x).count())
                .collect(),
            rows: keep
                .iter()
                .map(|k| forest.tables[k.table].rows_in)
                .collect(),
        }
    }

    /// Whether floor `i` holds: at least its percentage of the table's source rows, in
    /// exact arithmetic on the counts (`kept * 100 >= percent * rows`).
    fn holds(&self, i: usize, k: &KeepRows) -> bool {
        self.kept[i] as f64 * 100.0 >= k.percent * self.rows[i] as f64
    }

    fn meets(&self, keep: &[KeepRows]) -> bool {
        keep.iter().enumerate().all(|(i, k)| self.holds(i, k))
    }

    fn raise(&mut self, other: &Shares) {
        for (a, &b) in self.kept.iter_mut().zip(&other.kept) {
            *a = (*a).max(b);
        }
    }

    /// Why the floors cannot be met: each table short of its floor with the most rows any run
    /// kept.
    fn refusal(&self, keep: &[KeepRows], ceiling: Option<f64>) -> String {
        let short: Vec<String> = keep
            .iter()
            .enumerate()
            .filter(|&(i, k)| !self.holds(i, k))
            .map(|(i, k)| {
                let (kept, rows) = (self.kept[i], self.rows[i]);
                format!(
                    "{} keeps at best {kept} of its {rows} rows ({:.1}%) where KEEP at {} asks for {}%",
                    k.name,
                    100.0 * kept as f64 / rows.max(1) as f64,
                    k.pos,
                    k.percent
                )
            })
            .collect();
        let tried = match ceiling {
            Some(c) => format!(" at every suppression_price up to {c}"),
            None => " (the algorithm has no suppression_price to trade generalization for rows)"
                .to_string(),
        };
        format!(
            "the rows kept fall short of KEEP{tried}: {}; lower the percentage or k, or try another order or algorithm",
            short.join("; ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::kernel::shape::{ORDER, PRICE};
    use crate::algo::Generalization;
    use crate::forest::shaped;
    use crate::policy::Pos;

    /// A stand-in for a priced algorithm: of the ten child rows it keeps as many as the price
    /// (rounded down), nine at most, as a real one keeps more rows the dearer a removal.
    fn keeps_the_price(
        forest: &Forest,
        _: &Model,
        options: &Options,
        _: &Progress,
    ) -> Result<Output, String> {
        let price = if options.declares(PRICE.name) {
            shape::price(options)
        } else {
            1.0
        };
        let mut g = Generalization::empty(forest);
        g.kept[0].fill(true);
        g.kept[1]
            .iter_mut()
            .take((price as usize).min(9))
            .for_each(|k| *k = true);
        Ok(Output::Generalized(g))
    }

    static PRICED: Spec = Spec::plain(
        "priced",
        &[PRICE, ORDER],
        crate::algo::any_model,
        keeps_the_price,
    );
    static UNPRICED: Spec = Spec::plain("unpriced", &[], crate::algo::any_model, keeps_the_price);

    fn attempt(spec: &Spec, percent: f64) -> Result<(usize, Options), String> {
        let forest = shaped(&vec![vec![0]; 10]);
        let keep = [KeepRows {
            table: 1,
            name: "c".into(),
            percent,
            pos: Pos { line: 9, column: 1 },
        }];
        let options = Options::defaults(spec.options);
        let model = Model::KAnonymity { k: 2 };
        let (out, options) = run(spec, &options, &keep, &forest, &model, &Progress::new())?;
        Ok((out.kept()[1].iter().filter(|&&k| k).count(), options))
    }

    #[test]
    fn a_floor_is_met_at_the_lowest_price_found_and_the_options_say_which() {
        // Doubling meets 60% at 8; three geometric halvings of [4, 8] come down to 6.2.
        let (kept, options) = attempt(&PRICED, 60.0).expect("6 of 10 from price 6");
        assert_eq!(kept, 6);
        let p = options.number(PRICE.name);
        assert!((6.0..6.5).contains(&p), "{p}");
        // Met by the first run: the price as declared.
        let (kept, options) = attempt(&PRICED, 10.0).expect("1 of 10 at price 1");
        assert_eq!((kept, options.number(PRICE.name)), (1, 1.0));
    }

    #[test]
    fn an_unreachable_floor_is_refused_with_the_best_share_reached() {
        let err = attempt(&PRICED, 95.0)
            .map(|_| ())
            .expect_err("9 of 10 at most");
        assert_eq!(
            err,
            "the rows kept fall short of KEEP at every suppression_price up to 4096: c keeps at best 9 of its 10 rows (90.0%) where KEEP at 9:1 asks for 95%; lower the percentage or k, or try another order or algorithm"
        );
        let err = attempt(&UNPRICED, 50.0).map(|_| ()).expect_err("1 of 10");
        assert!(err.contains("(the algorithm has no suppression_price to trade generalization for rows): c keeps at best 1 of its 10 rows (10.0%)"), "{err}");
        // Met without a price: checked and released.
        assert_eq!(attempt(&UNPRICED, 10.0).map(|(k, _)| k), Ok(1));
    }
}
