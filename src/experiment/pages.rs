//! The experiment pages (`relanon experiment --html`): each experiment's table drawn as plots
//! and the table itself, on [`crate::html`]'s page, tables and plots. Experiment rows are read
//! here, so the report page's module knows nothing of the experiments.

use super::frontier::{kept_cell, table_names, FrontierRow};
use super::hybrid::HybridRow;
use super::{KRow, Row};
use crate::html::{
    escape, figure, fixed, metric_figures, opt, page, path_plot, percent, series_by, table,
    HtmlError, Metric, Series,
};

/// The page for an experiment table: one line plot per metric (LM, query accuracy, KL, time)
/// against l with one series per algorithm, then the table itself.
pub fn experiment_page(title: &str, rows: &[Row]) -> Result<String, HtmlError> {
    fn x(r: &Row) -> f64 {
        r.l as f64
    }
    fn name(r: &Row) -> &str {
        &r.algorithm
    }
    let metrics = [
        Metric {
            title: "LM with suppression".to_string(),
            y_label: "LM".to_string(),
            series: series_by(rows, name, x, |r| Some(r.lm)),
        },
        Metric {
            title: "Query accuracy".to_string(),
            y_label: "accuracy (%)".to_string(),
            series: series_by(rows, name, x, |r| r.query_accuracy.map(|a| 100.0 * a)),
        },
        Metric {
            title: "KL-divergence".to_string(),
            y_label: "KL".to_string(),
            series: series_by(rows, name, x, |r| r.kl_divergence),
        },
        Metric {
            title: "Time".to_string(),
            y_label: "seconds".to_string(),
            series: series_by(rows, name, x, |r| Some(r.total_s)),
        },
    ];
    let mut b = format!("<h1>{}</h1>\n", escape(title));
    b += &metric_figures("l", &metrics)?;
    b += "<h2>Table</h2>\n";
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.l.to_string(),
                match r.threshold {
                    Some(t) => format!("{} (th = {t})", r.algorithm),
                    None => r.algorithm.clone(),
                },
                fixed(r.lm, 4),
                percent(r.query_accuracy),
                opt(r.kl_divergence, 4),
                format!("{:.1}%", r.suppression_accuracy),
                r.entities_suppressed.to_string(),
                fixed(r.cluster_s, 2),
                fixed(r.total_s, 2),
            ]
        })
        .collect();
    b += &table(
        &[
            "l",
            "algorithm",
            "LM",
            "query accuracy",
            "KL",
            "suppression accuracy",
            "entities suppressed",
            "cluster (s)",
            "total (s)",
        ],
        &cells,
    );
    Ok(page(title, &b))
}

/// The page of the hybrid experiment (003 Sec. 5 on Adult): LM and query error against k,
/// LM and the relocated share against p (the lattice, which p does not change, drawn level
/// across the p swept), then the tables.
pub fn hybrid_page(title: &str, rows: &[HybridRow], markdown: &str) -> Result<String, HtmlError> {
    fn name(r: &HybridRow) -> &str {
        &r.algorithm
    }
    let by_k: Vec<&HybridRow> = rows.iter().filter(|r| r.sweep == "k").collect();
    let by_p: Vec<&HybridRow> = rows.iter().filter(|r| r.sweep == "p").collect();
    let ps: Vec<f64> = by_p.iter().filter_map(|r| r.p).collect();
    // (x, row): each hybrid row at its p, the lattice's at every p.
    let at_p: Vec<(f64, &HybridRow)> = by_p
        .iter()
        .flat_map(|r| match r.p {
            Some(p) => vec![(p, *r)],
            None => ps.iter().map(|&p| (p, *r)).collect(),
        })
        .collect();
    let against_k = [
        Metric {
            title: "LM against k".to_string(),
            y_label: "LM".to_string(),
            series: series_by(&by_k, |r| name(r), |r| r.k as f64, |r| Some(r.lm)),
        },
        Metric {
            title: "Query error against k".to_string(),
            y_label: "error (%)".to_string(),
            series: series_by(
                &by_k,
                |r| name(r),
                |r| r.k as f64,
                |r| r.query_error.map(|e| 100.0 * e),
            ),
        },
    ];
    let against_p = [
        Metric {
            title: "LM against p".to_string(),
            y_label: "LM".to_string(),
            series: series_by(&at_p, |(_, r)| name(r), |(p, _)| *p, |(_, r)| Some(r.lm)),
        },
        Metric {
            title: "Relocated QI cells against p".to_string(),
            y_label: "relocated (%)".to_string(),
            series: series_by(
                &at_p,
                |(_, r)| name(r),
                |(p, _)| *p,
                |(_, r)| Some(100.0 * r.relocated_share),
            ),
        },
    ];
    let mut b = format!("<h1>{}</h1>\n", escape(title));
    b += &metric_figures("k", &against_k)?;
    b += &metric_figures("p (%)", &against_p)?;
    b += &format!("<h2>Tables</h2>\n<pre>{}</pre>\n", escape(markdown));
    Ok(page(title, &b))
}

/// The page of the MiRaCle experiment (001 Sec. V, Fig. 4-8): LM, LM with suppression, DM
/// and time versus k at threshold 0.3, and LM versus threshold at `sweep_k` (50 in the
/// paper), one series per algorithm, then the whole table.
pub fn miracle_page(rows: &[KRow], sweep_k: usize) -> Result<String, HtmlError> {
    let by_k: Vec<KRow> = rows
        .iter()
        .filter(|r| r.threshold == 0.3)
        .cloned()
        .collect();
    let by_th: Vec<KRow> = rows.iter().filter(|r| r.k == sweep_k).cloned().collect();
    fn name(r: &KRow) -> &str {
        &r.algorithm
    }
    fn k(r: &KRow) -> f64 {
        r.k as f64
    }
    fn th(r: &KRow) -> f64 {
        r.threshold
    }
    let versus_k = [
        Metric {
            title: "LM (Fig. 4)".to_string(),
            y_label: "LM".to_string(),
            series: series_by(&by_k, name, k, |r| Some(r.lm)),
        },
        Metric {
            title: "LM with suppression".to_string(),
            y_label: "LM".to_string(),
            series: series_by(&by_k, name, k, |r| Some(r.lm_with_suppression)),
        },
        Metric {
            title: "DM (Fig. 6, 7)".to_string(),
            y_label: "DM".to_string(),
            series: series_by(&by_k, name, k, |r| Some(r.dm as f64)),
        },
        Metric {
            title: "Time (Fig. 8)".to_string(),
            y_label: "seconds".to_string(),
            series: series_by(&by_k, name, k, |r| Some(r.total_s)),
        },
    ];
    let versus_th = [
        Metric {
            title: format!("LM at k = {sweep_k} (Fig. 5)"),
            y_label: "LM".to_string(),
            series: series_by(&by_th, name, th, |r| Some(r.lm)),
        },
        Metric {
            title: format!("LM with suppression at k = {sweep_k}"),
            y_label: "LM".to_string(),
            series: series_by(&by_th, name, th, |r| Some(r.lm_with_suppression)),
        },
    ];
    let title = "MiRaCle experiment (001 Sec. V)";
    let mut b = format!("<h1>{}</h1>\n", escape(title));
    b += "<h2>Versus k (threshold 0.3)</h2>\n";
    b += &metric_figures("k", &versus_k)?;
    b += &format!("<h2>Versus threshold (k = {sweep_k})</h2>\n");
    b += &metric_figures("threshold", &versus_th)?;
    b += "<h2>Table</h2>\n";
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.k.to_string(),
                r.threshold.to_string(),
                r.algorithm.clone(),
                fixed(r.lm, 4),
                fixed(r.lm_with_suppression, 4),
                r.dm.to_string(),
                r.equivalence_classes.to_string(),
                r.entities_suppressed.to_string(),
                fixed(r.cluster_s, 2),
                fixed(r.total_s, 2),
            ]
        })
        .collect();
    b += &table(
        &[
            "k",
            "threshold",
            "algorithm",
            "LM",
            "LM with suppression",
            "DM",
            "ECs",
            "entities suppressed",
            "cluster (s)",
            "total (s)",
        ],
        &cells,
    );
    Ok(page(title, &b))
}

/// The page of the frontier experiment: for every family table, the share of its rows kept
/// against QI loss (LM) and against query accuracy, one line per (algorithm, order) through
/// its prices in rising order and the shape-only reference as a marker of its own; then the
/// whole table.
pub fn frontier_page(title: &str, rows: &[FrontierRow]) -> Result<String, HtmlError> {
    let tables = table_names(rows);
    let (reference, swept): (Vec<&FrontierRow>, Vec<&FrontierRow>) =
        rows.iter().partition(|r| r.is_reference());
    let mut b = format!("<h1>{}</h1>\n", escape(title));
    b += "<p class=\"note\">Each line is one algorithm in one visiting order, its points the \
          suppression prices from cheapest to dearest: a higher price keeps more rows and \
          generalizes more. The black triangle is the shape-only grouping: what grouping by \
          tree shape alone keeps, whatever the QIs cost. LM is 001 Def. 8 \
          over the released QI cells; query accuracy is over seeded random count queries \
          (100% is perfect).</p>\n";
    for table in &tables {
        // Each line's points in rising price, the path the price walks along the trade.
        let by_price = |y: fn(&FrontierRow) -> Option<f64>| -> Vec<Series> {
            let mut out: Vec<Series> = Vec::new();
            for r in &swept {
                if !out.iter().any(|s| s.name == r.line) {
                    out.push(Series {
                        name: r.line.clone(),
                        points: Vec::new(),
                    });
                }
            }
            for s in &mut out {
                let mut runs: Vec<&FrontierRow> =
                    swept.iter().copied().filter(|r| r.line == s.name).collect();
                runs.sort_by(|a, b| a.price.unwrap_or(0.0).total_cmp(&b.price.unwrap_or(0.0)));
                s.points = runs
                    .iter()
                    .filter_map(|r| {
                        let v = y(r).filter(|v| v.is_finite())?;
                        Some((100.0 * r.kept(table)?.share(), v))
                    })
                    .collect();
            }
            out
        };
        let reference_of = |y: fn(&FrontierRow) -> Option<f64>| -> Option<Series> {
            let points: Vec<(f64, f64)> = reference
                .iter()
                .filter_map(|r| Some((100.0 * r.kept(table)?.share(), y(r)?)))
                .filter(|p| p.1.is_finite())
                .collect();
            (!reference.is_empty()).then(|| Series {
                name: reference.first().map_or(String::new(), |r| r.line.clone()),
                points,
            })
        };
        let lm: fn(&FrontierRow) -> Option<f64> = |r| Some(r.lm);
        let accuracy: fn(&FrontierRow) -> Option<f64> = |r| r.query_accuracy.map(|a| 100.0 * a);
        let x_label = format!("rows of {table} kept (%)");
        b += &format!("<h2>{}</h2>\n", escape(table));
        for (caption, y_label, y) in [
            (format!("QI loss against rows of {table} kept"), "LM", lm),
            (
                format!("Query accuracy against rows of {table} kept"),
                "query accuracy (%)",
                accuracy,
            ),
        ] {
            let svg = path_plot(
                &caption,
                &x_label,
                y_label,
                &by_price(y),
                reference_of(y).as_ref(),
            )?;
            b += &figure(&caption, &svg);
        }
    }
    b += "<h2>Table</h2>\n";
    let mut headers: Vec<String> = vec!["line".to_string(), "price".to_string()];
    headers.extend(tables.iter().map(|t| format!("{t} kept")));
    headers.extend(
        [
            "least kept",
            "LM",
            "LM with suppression",
            "query accuracy",
            "verified",
            "total (s)",
        ]
        .map(String::from),
    );
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut row = vec![
                r.line.clone(),
                r.price.map_or("-".to_string(), |p| p.to_string()),
            ];
            row.extend(
                tables
                    .iter()
                    .map(|t| r.kept(t).map_or("-".to_string(), kept_cell)),
            );
            row.extend([
                percent(Some(r.least_kept)),
                fixed(r.lm, 4),
                fixed(r.lm_with_suppression, 4),
                percent(r.query_accuracy),
                if r.verified { "yes" } else { "NO" }.to_string(),
                fixed(r.total_s, 2),
            ]);
            row
        })
        .collect();
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    b += &table(&headers, &cells);
    Ok(page(title, &b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::svg::{attr, hex, svgs, tags};
    use crate::html::{PLOT_COLOUR, REFERENCE_COLOUR, SERIES_COLOURS};

    fn row(algorithm: &str, l: usize, lm: f64, accuracy: Option<f64>) -> Row {
        Row {
            algorithm: algorithm.to_string(),
            l,
            lm,
            query_accuracy: accuracy,
            kl_divergence: Some(lm / 10.0),
            suppression_accuracy: 90.0,
            entities_suppressed: 1,
            cluster_s: 0.5,
            total_s: 1.0 + lm,
            threshold: None,
            sweep_s: None,
        }
    }

    #[test]
    fn experiment_page_has_one_series_per_algorithm_in_every_plot() {
        let algorithms = ["ClusTree-LSAP", "CToff-GRD", "dMiRaCle"];
        let mut rows = Vec::new();
        for l in [2, 3, 4] {
            for (i, a) in algorithms.iter().enumerate() {
                // dMiRaCle ran no queries at l = 3: its line skips that point.
                let accuracy = (!(i == 2 && l == 3)).then_some(0.8);
                rows.push(row(a, l, 0.1 * (i + l) as f64, accuracy));
            }
        }
        let page = experiment_page("thesis <S>", &rows).expect("renders");
        assert!(page.contains("<title>thesis &lt;S&gt;</title>"));
        let plots = svgs(&page);
        assert_eq!(plots.len(), 4, "LM, query accuracy, KL, time");
        let palette: Vec<String> = SERIES_COLOURS.iter().map(|&c| hex(c)).collect();
        for svg in plots {
            let mut strokes: Vec<&str> = tags(svg, "polyline")
                .into_iter()
                .filter_map(|t| attr(t, "stroke"))
                .filter(|s| palette.iter().any(|p| p == s))
                .collect();
            strokes.sort();
            strokes.dedup();
            assert_eq!(strokes.len(), algorithms.len(), "one colour per algorithm");
            for a in algorithms {
                let legend = format!(">\n{a}\n</text>");
                assert_eq!(svg.matches(&legend).count(), 1, "{a} in the legend once");
            }
            // Every swept l is a tick.
            for l in ["2", "3", "4"] {
                assert!(svg.contains(&format!(">\n{l}\n</text>")), "tick l = {l}");
            }
        }
    }

    #[test]
    fn miracle_page_plots_every_algorithm_against_k_and_threshold() {
        let algorithms = ["MiRaCle", "MiRaCleX", "Bitmap (incomplete)"];
        let settings = [(2, 0.3), (10, 0.3), (50, 0.3), (50, 0.0), (50, 1.0)];
        let mut rows = Vec::new();
        for (k, threshold) in settings {
            for (i, a) in algorithms.iter().enumerate() {
                rows.push(KRow {
                    algorithm: a.to_string(),
                    k,
                    threshold,
                    lm: 0.1 * i as f64 + threshold,
                    lm_with_suppression: 0.2,
                    dm: 100 * k as u64,
                    equivalence_classes: 3,
                    entities_suppressed: 0,
                    cluster_s: 0.1,
                    total_s: 0.2,
                });
            }
        }
        let page = miracle_page(&rows, 50).expect("renders");
        let plots = svgs(&page);
        assert_eq!(
            plots.len(),
            6,
            "LM, LM+suppression, DM, time vs k; two vs threshold"
        );
        for svg in &plots {
            for a in algorithms {
                let legend = format!(">\n{}\n</text>", escape(a));
                assert_eq!(svg.matches(&legend).count(), 1, "{a} in every legend once");
            }
        }
        // Versus k: the three swept k are ticks; versus threshold: 0 and 1 are.
        for k in ["2", "10", "50"] {
            assert!(
                plots[0].contains(&format!(">\n{k}\n</text>")),
                "tick k = {k}"
            );
        }
        assert_eq!(
            page.matches("<tr>").count() - 1,
            rows.len(),
            "one table row each"
        );
    }

    fn frontier_row(
        line: &str,
        price: Option<f64>,
        kept: &[(&str, usize)],
        lm: f64,
    ) -> FrontierRow {
        use crate::experiment::frontier::Kept;
        let tables: Vec<Kept> = kept
            .iter()
            .map(|&(t, released)| Kept {
                table: t.to_string(),
                rows_in: 100,
                released,
            })
            .collect();
        FrontierRow {
            line: line.to_string(),
            algorithm: "miraclex".to_string(),
            order: price.map(|_| "shape".to_string()),
            price,
            k: 5,
            least_kept: tables.iter().map(Kept::share).fold(1.0, f64::min),
            tables,
            lm,
            lm_with_suppression: lm + 0.1,
            query_accuracy: Some(0.7),
            verified: true,
            total_s: 0.5,
        }
    }

    #[test]
    fn frontier_page_plots_each_table_with_a_line_per_sweep_and_the_reference() {
        let hostile = "<b>rental</b>";
        let mut rows = Vec::new();
        for (i, line) in ["MiRaCleX (key)", "CToff (shape)"].iter().enumerate() {
            // Prices out of order: each line still walks them cheapest first.
            for (price, kept) in [(8.0, 95), (1.0, 70), (4.0, 90)] {
                let lm = 0.3 + price / 100.0 + 0.01 * i as f64;
                rows.push(frontier_row(
                    line,
                    Some(price),
                    &[("customer", 100), (hostile, kept)],
                    lm,
                ));
            }
        }
        rows.push(frontier_row(
            "shape-only (reference)",
            None,
            &[("customer", 100), (hostile, 97)],
            0.8,
        ));
        let page = frontier_page("frontier <k = 5>", &rows).expect("renders");
        assert!(!page.contains("<b>"), "a raw table name reached the page");
        assert!(page.contains("<h2>&lt;b&gt;rental&lt;/b&gt;</h2>"));
        let plots = svgs(&page);
        assert_eq!(plots.len(), 4, "LM and query accuracy per family table");
        for svg in &plots {
            for name in ["MiRaCleX (key)", "CToff (shape)", "shape-only (reference)"] {
                let legend = format!(">\n{}\n</text>", escape(name));
                assert_eq!(
                    svg.matches(&legend).count(),
                    1,
                    "{name} in every legend once"
                );
            }
            // The reference is a marker of its own colour: one on the plot, one in the legend.
            let black = tags(svg, "polygon")
                .into_iter()
                .filter(|t| attr(t, "fill") == Some(hex(REFERENCE_COLOUR).as_str()))
                .count();
            assert_eq!(black, 2, "{svg}");
        }
        // The rental LM plot: a line's points at 70, 90, 95% kept in rising price.
        let first = tags(plots[2], "polyline")
            .into_iter()
            .find(|t| attr(t, "stroke") == Some(hex(PLOT_COLOUR).as_str()))
            .and_then(|t| attr(t, "points"))
            .expect("the first line is drawn");
        let xs: Vec<i32> = first
            .split_whitespace()
            .filter_map(|p| p.split(',').next()?.parse().ok())
            .collect();
        assert_eq!(xs.len(), 3);
        assert!(xs[0] < xs[1] && xs[1] < xs[2], "{xs:?}");
        // One table row per run, the reference without a price.
        assert_eq!(page.matches("<tr>").count() - 1, rows.len());
        assert!(page.contains("<td>shape-only (reference)</td><td class=\"num\">-</td>"));
    }

    #[test]
    fn series_group_by_name_sort_by_x_and_skip_missing_values() {
        let rows = [
            row("b", 3, 0.3, Some(0.5)),
            row("a", 2, 0.2, None),
            row("b", 2, 0.1, Some(f64::NAN)),
            row("a", 3, 0.4, Some(0.7)),
        ];
        let s = series_by(
            &rows,
            |r| &r.algorithm,
            |r| r.l as f64,
            |r| r.query_accuracy,
        );
        assert_eq!(
            s,
            vec![
                Series {
                    name: "b".into(),
                    points: vec![(3.0, 0.5)]
                },
                Series {
                    name: "a".into(),
                    points: vec![(3.0, 0.7)]
                },
            ]
        );
        let by_lm = series_by(&rows, |r| &r.algorithm, |r| r.l as f64, |r| Some(r.lm));
        assert_eq!(by_lm[0].points, vec![(2.0, 0.1), (3.0, 0.3)]);
    }
}
