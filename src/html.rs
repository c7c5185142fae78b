//! The HTML report: one self-contained page a person can open from disk that shows what a
//! release kept and lost. It holds inline CSS and inline SVG only: no scripts, fonts, images
//! or links that would load anything, and a Content-Security-Policy that forbids them anyway.
//! So the page is safe to mail around and shows the same everywhere.
//!
//! The plots are drawn with `plotters`' SVG backend, which escapes the text it writes. Every
//! other string that comes from data or declarations (table and column names, the title) goes
//! through [`escape`]. The page only reads a [`Report`] and computes nothing itself; the
//! experiment pages (`experiment::pages`) are drawn with its page, tables and plots.

use std::collections::BTreeMap;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::outputs::PAGE_GENERATOR;
use crate::report::Report;

/// Fill of every bar and the first series of every line plot. The page uses this colour
/// nowhere else, so a screenshot can find the plots by colour.
pub const PLOT_COLOUR: [u8; 3] = [0x1F, 0x77, 0xB4];

/// Series colours in order (colour-blind-safe Dark2-like hues, the first being
/// [`PLOT_COLOUR`]); the palette repeats past its end.
pub(crate) const SERIES_COLOURS: [[u8; 3]; 8] = [
    PLOT_COLOUR,
    [0xD9, 0x5F, 0x02],
    [0x1B, 0x9E, 0x77],
    [0x75, 0x70, 0xB3],
    [0xE7, 0x29, 0x8A],
    [0x66, 0xA6, 0x1E],
    [0xA6, 0x76, 0x1D],
    [0x66, 0x66, 0x66],
];

/// Width of every plot in SVG pixels (the page scales them down on narrow screens).
const PLOT_WIDTH: u32 = 900;
/// Axis tick labels and axis titles, in plotters' font units (SVG px = units / 1.24).
const TICK_FONT: u32 = 17;
const AXIS_FONT: u32 = 18;
/// Category labels longer than this are cut in plots (tables show them whole).
const MAX_LABEL: usize = 40;
/// Legend names longer than this are cut (tables show them whole).
const MAX_LEGEND: usize = 22;
/// Room right of a line plot's frame for its legend, so the legend never hides a line.
const LEGEND_WIDTH: u32 = 230;

/// Drawing a plot failed. The SVG backend writes into a string, so this means a plot was
/// asked for something plotters cannot draw.
#[derive(Debug, thiserror::Error)]
#[error("drawing the '{plot}' plot failed: {message}; the report.json may hold values the HTML page cannot draw (check it is the file `relanon anonymize` wrote)")]
pub struct HtmlError {
    plot: String,
    message: String,
}

/// `s` safe for HTML text and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// One line of a line plot: a name for the legend and its points, drawn in x order.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// One line plot of a figure page: every series of one metric against the swept parameter.
#[derive(Debug, Clone)]
pub struct Metric {
    pub title: String,
    pub y_label: String,
    pub series: Vec<Series>,
}

/// Groups `rows` into one series per `name` (in order of first appearance), each point
/// `(x, y)`; rows whose `y` is `None` or not finite are left out (the line skips them).
pub fn series_by<R>(
    rows: &[R],
    name: impl Fn(&R) -> &str,
    x: impl Fn(&R) -> f64,
    y: impl Fn(&R) -> Option<f64>,
) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for r in rows {
        let n = name(r);
        let i = match out.iter().position(|s| s.name == n) {
            Some(i) => i,
            None => {
                out.push(Series {
                    name: n.to_string(),
                    points: Vec::new(),
                });
                out.len() - 1
            }
        };
        if let Some(v) = y(r).filter(|v| v.is_finite()) {
            out[i].points.push((x(r), v));
        }
    }
    for s in &mut out {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

/// A whole page: `title` (escaped) and `body` (HTML the caller built from escaped parts).
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         {PAGE_GENERATOR}\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        escape(title)
    )
}

const CSS: &str = "
body { font-family: system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif;
  color: #222; max-width: 1000px; margin: 2rem auto; padding: 0 1rem; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; }
h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid #ccc; padding-bottom: .2rem; }
table { border-collapse: collapse; margin: .6rem 0; }
th, td { border: 1px solid #ccc; padding: .25rem .7rem; text-align: left; }
td { white-space: nowrap; }
td.list { white-space: normal; min-width: 12rem; }
th { background: #f3f3f3; }
.num { text-align: right; }
figure { margin: 1.2rem 0; }
figcaption { font-weight: 600; margin-bottom: .3rem; }
svg { max-width: 100%; height: auto; }
.note { color: #555; font-size: .92rem; }
.warning { color: #a00; font-weight: 700; border: 2px solid #a00; padding: .5rem .8rem; }
";

/// An HTML table; every header and cell is escaped here. A column whose cells are all
/// numbers (or `-`) is right-aligned, header included, so digits line up.
pub(crate) fn table<S: AsRef<str>>(headers: &[&str], rows: &[Vec<S>]) -> String {
    let numeric: Vec<bool> = (0..headers.len())
        .map(|c| {
            !rows.is_empty()
                && rows
                    .iter()
                    .all(|r| r.get(c).is_none_or(|v| is_number(v.as_ref())))
        })
        .collect();
    // Columns listing names (`a, b, c`) may wrap; every other cell stays on one line.
    let lists: Vec<bool> = (0..headers.len())
        .map(|c| {
            rows.iter()
                .any(|r| r.get(c).is_some_and(|v| v.as_ref().contains(", ")))
        })
        .collect();
    let class = |c: usize| {
        if numeric.get(c).copied().unwrap_or(false) {
            " class=\"num\""
        } else if lists.get(c).copied().unwrap_or(false) {
            " class=\"list\""
        } else {
            ""
        }
    };
    let mut s = String::from("<table>\n<tr>");
    for (c, h) in headers.iter().enumerate() {
        s += &format!("<th{}>{}</th>", class(c), escape(h));
    }
    s += "</tr>\n";
    for row in rows {
        s += "<tr>";
        for (c, cell) in row.iter().enumerate() {
            s += &format!("<td{}>{}</td>", class(c), escape(cell.as_ref()));
        }
        s += "</tr>\n";
    }
    s + "</table>\n"
}

/// A cell as the tables write numbers: `12`, `0.1714`, `89.8%`, or `-` for none.
fn is_number(cell: &str) -> bool {
    cell == "-" || cell.trim_end_matches('%').parse::<f64>().is_ok()
}

pub(crate) fn figure(caption: &str, svg: &str) -> String {
    format!(
        "<figure>\n<figcaption>{}</figcaption>\n{svg}</figure>\n",
        escape(caption)
    )
}

pub(crate) fn fixed(x: f64, digits: usize) -> String {
    format!("{x:.digits$}")
}

pub(crate) fn percent(x: Option<f64>) -> String {
    x.map_or("-".to_string(), |v| format!("{:.1}%", 100.0 * v))
}

pub(crate) fn opt(x: Option<f64>, digits: usize) -> String {
    x.map_or("-".to_string(), |v| fixed(v, digits))
}

fn rgb(c: [u8; 3]) -> RGBColor {
    RGBColor(c[0], c[1], c[2])
}

/// A label as a plot shows it: at most [`MAX_LABEL`] characters.
fn short(label: &str) -> String {
    cut(label, MAX_LABEL)
}

fn cut(label: &str, max: usize) -> String {
    if label.chars().count() <= max {
        label.to_string()
    } else {
        label.chars().take(max - 1).collect::<String>() + "…"
    }
}

/// `[lo, hi]` widened so a plot never has an empty range and its data do not touch the frame.
fn padded(lo: f64, hi: f64, pad: f64) -> (f64, f64) {
    if !(lo.is_finite() && hi.is_finite()) {
        return (0.0, 1.0);
    }
    if hi - lo < 1e-12 {
        let half = if lo.abs() > 1e-12 {
            lo.abs() * 0.1
        } else {
            0.5
        };
        return (lo - half, hi + half);
    }
    let margin = (hi - lo) * pad;
    (lo - margin, hi + margin)
}

/// Tick positions `0..n` thinned to at most `max` labels, so long category axes stay legible.
fn category_ticks(n: usize, max: usize) -> Vec<f64> {
    let step = n.div_ceil(max.max(1)).max(1);
    (0..n).step_by(step).map(|i| i as f64).collect()
}

/// A linear axis over `[lo, hi]` ticked exactly at `ticks`: a category axis (ticks at the
/// categories) or a swept parameter (ticks at the settings run), where plotters' own "nice"
/// ticks would fall between the values that mean something; or, for measured values
/// ([`TickedAxis::nice`]), at plotters' own ticks.
#[derive(Clone)]
struct TickedAxis {
    lo: f64,
    hi: f64,
    /// `None`: plotters' ticks for `[lo, hi]`.
    ticks: Option<Vec<f64>>,
}

impl TickedAxis {
    fn new((lo, hi): (f64, f64), ticks: Vec<f64>) -> Self {
        TickedAxis {
            lo,
            hi,
            ticks: Some(ticks),
        }
    }

    fn nice((lo, hi): (f64, f64)) -> Self {
        TickedAxis {
            lo,
            hi,
            ticks: None,
        }
    }
}

impl Ranged for TickedAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let span = self.hi - self.lo;
        let t = if span > 0.0 {
            (value - self.lo) / span
        } else {
            0.5
        };
        limit.0 + (f64::from(limit.1 - limit.0) * t).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        match &self.ticks {
            None => RangedCoordf64::from(self.lo..self.hi).key_points(hint),
            // Only bold ticks: the thin grid between categories would mean nothing.
            Some(_) if hint.weight().allow_light_points() => Vec::new(),
            Some(ticks) => ticks.clone(),
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// Runs `draw` on a fresh SVG canvas of `size` and returns the SVG text.
fn svg(
    plot: &str,
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), String>,
) -> Result<String, HtmlError> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        let fail = |message: String| HtmlError {
            plot: plot.to_string(),
            message,
        };
        root.fill(&WHITE).map_err(|e| fail(e.to_string()))?;
        draw(&root).map_err(fail)?;
        root.present().map_err(|e| fail(e.to_string()))?;
    }
    Ok(buf + "\n")
}

/// Bars this narrow at most: a lone bar is drawn as one of this many slots, not the full width.
const MIN_BAR_SLOTS: usize = 8;

/// `0, step, 2 step, ...` up to at least `max`, with a 1-2-5 step giving at most ~8 ticks:
/// counts get whole-number ticks.
fn count_ticks(max: usize) -> Vec<f64> {
    let mut step = 1;
    'find: for scale in [1usize, 10, 100, 1_000, 10_000, 100_000, 1_000_000] {
        for m in [1, 2, 5] {
            step = m * scale;
            if max / step <= 8 {
                break 'find;
            }
        }
    }
    let top = max.div_ceil(step).max(1) * step;
    (0..=top / step).map(|i| (i * step) as f64).collect()
}

/// Vertical bars of counts, one per category: `labels[i]` under bar `i` of height `counts[i]`.
pub fn count_bars(
    plot: &str,
    labels: &[String],
    counts: &[usize],
    x_label: &str,
    y_label: &str,
) -> Result<String, HtmlError> {
    let n = labels.len().min(counts.len());
    let y_ticks = count_ticks(counts.iter().copied().max().unwrap_or(0));
    let y_hi = y_ticks.last().copied().unwrap_or(1.0) * 1.04;
    // Few categories sit in the middle of a wider axis so each bar keeps a bar's width.
    let pad = MIN_BAR_SLOTS.saturating_sub(n) as f64 / 2.0;
    let x_range = (-0.5 - pad, n as f64 - 0.5 + pad);
    let x_ticks = category_ticks(n, 30);
    svg(plot, (PLOT_WIDTH, 380), |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(16)
            .x_label_area_size(56)
            .y_label_area_size(70)
            .build_cartesian_2d(
                TickedAxis::new(x_range, x_ticks),
                TickedAxis::new((0.0, y_hi), y_ticks),
            )
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .label_style(("sans-serif", TICK_FONT))
            .axis_desc_style(("sans-serif", AXIS_FONT))
            .x_label_formatter(&|v| {
                labels
                    .get(v.round().max(0.0) as usize)
                    .map(|l| short(l))
                    .unwrap_or_default()
            })
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(|e| e.to_string())?;
        let style = rgb(PLOT_COLOUR).filled();
        chart
            .draw_series((0..n).map(|i| {
                let x = i as f64;
                Rectangle::new([(x - 0.38, 0.0), (x + 0.38, counts[i] as f64)], style)
            }))
            .map_err(|e| e.to_string())?;
        Ok(())
    })
}

/// Horizontal bars (long category names read better down the side), values in `[0, max]`.
pub fn horizontal_bars(
    plot: &str,
    labels: &[String],
    values: &[f64],
    x_label: &str,
) -> Result<String, HtmlError> {
    let n = labels.len().min(values.len());
    let top = values.iter().copied().fold(1.0_f64, f64::max);
    let longest = labels.iter().map(|l| short(l).chars().count()).max();
    // About 8 SVG px per character at the tick font size, plus the tick itself.
    let label_area = (24 + 8 * longest.unwrap_or(1)).min(360) as u32;
    let height = 110 + 34 * n.max(1) as u32;
    svg(plot, (PLOT_WIDTH, height), |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(16)
            .x_label_area_size(56)
            .y_label_area_size(label_area)
            .build_cartesian_2d(
                0.0..top,
                TickedAxis::new((-0.5, n as f64 - 0.5), category_ticks(n, 60)),
            )
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(WHITE)
            .x_desc(x_label)
            .label_style(("sans-serif", TICK_FONT))
            .axis_desc_style(("sans-serif", AXIS_FONT))
            // Category 0 at the top, as in the tables.
            .y_label_formatter(&|v| {
                let i = v.round().max(0.0) as usize;
                n.checked_sub(i + 1)
                    .and_then(|row| labels.get(row))
                    .map(|l| short(l))
                    .unwrap_or_default()
            })
            .x_label_formatter(&|v| trim_number(*v))
            .draw()
            .map_err(|e| e.to_string())?;
        let style = rgb(PLOT_COLOUR).filled();
        chart
            .draw_series((0..n).map(|i| {
                let y = (n - 1 - i) as f64;
                Rectangle::new([(0.0, y - 0.35), (values[i], y + 0.35)], style)
            }))
            .map_err(|e| e.to_string())?;
        Ok(())
    })
}

/// A line plot of every series (colours from the series palette, a legend naming each),
/// x ticks exactly at the x values that occur (the swept parameter's settings).
pub fn line_plot(
    plot: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<String, HtmlError> {
    let mut xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .filter(|x| x.is_finite())
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    lines(plot, (x_label, y_label), series, None, Some(xs))
}

/// A plot of `series` as lines through their points in the order given, each point marked,
/// `reference` (if any) as points of a black triangle of its own, a legend naming each; x
/// ticked at `x_ticks` (or plotters' ticks), the y axis from 0 unless the data go below it.
fn lines(
    plot: &str,
    (x_label, y_label): (&str, &str),
    series: &[Series],
    reference: Option<&Series>,
    x_ticks: Option<Vec<f64>>,
) -> Result<String, HtmlError> {
    let points = || {
        series
            .iter()
            .chain(reference)
            .flat_map(|s| s.points.iter().copied())
    };
    let xs = || points().map(|p| p.0).filter(|x| x.is_finite());
    let x_min = xs().fold(f64::INFINITY, f64::min);
    let x_max = xs().fold(f64::NEG_INFINITY, f64::max);
    let (x_lo, x_hi) = if x_min.is_finite() {
        padded(x_min, x_max, 0.06)
    } else {
        padded(0.0, 1.0, 0.06)
    };
    let x_axis = match x_ticks {
        Some(ticks) => TickedAxis::new((x_lo, x_hi), ticks),
        None => TickedAxis::nice((x_lo, x_hi)),
    };
    let ys = || points().map(|p| p.1).filter(|y| y.is_finite());
    let y_min = ys().fold(f64::INFINITY, f64::min);
    let y_max = ys().fold(f64::NEG_INFINITY, f64::max);
    let (y_lo, y_hi) = if y_min.is_finite() {
        // Anchored at 0 unless the data go below it (query accuracy can).
        let (lo, hi) = padded(y_min.min(0.0), y_max, 0.08);
        (if y_min >= 0.0 { 0.0 } else { lo }, hi)
    } else {
        (0.0, 1.0)
    };
    svg(plot, (PLOT_WIDTH, 420), |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(16)
            .margin_right(LEGEND_WIDTH)
            .x_label_area_size(56)
            .y_label_area_size(80)
            .build_cartesian_2d(x_axis, y_lo..y_hi)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .x_desc(x_label)
            .y_desc(y_label)
            .label_style(("sans-serif", TICK_FONT))
            .axis_desc_style(("sans-serif", AXIS_FONT))
            .x_label_formatter(&|v| trim_number(*v))
            .y_label_formatter(&|v| trim_number(*v))
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, s) in series.iter().enumerate() {
            let colour = rgb(SERIES_COLOURS[i % SERIES_COLOURS.len()]);
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().copied(),
                    colour.stroke_width(3),
                ))
                .map_err(|e| e.to_string())?;
            chart
                .draw_series(s.points.iter().map(|&p| Circle::new(p, 5, colour.filled())))
                .map_err(|e| e.to_string())?;
        }
        let marker = rgb(REFERENCE_COLOUR).filled();
        if let Some(r) = reference {
            chart
                .draw_series(r.points.iter().map(|&p| TriangleMarker::new(p, 9, marker)))
                .map_err(|e| e.to_string())?;
        }
        legend(root, series).map_err(|e| e.to_string())?;
        if let Some(r) = reference {
            let x = (PLOT_WIDTH - LEGEND_WIDTH) as i32 + 14;
            let y = 30 + 26 * series.len() as i32;
            let font = TextStyle::from(("sans-serif", TICK_FONT).into_font())
                .pos(Pos::new(HPos::Left, VPos::Center));
            root.draw(&TriangleMarker::new((x + 14, y), 9, marker))
                .map_err(|e| e.to_string())?;
            root.draw(&Text::new(cut(&r.name, MAX_LEGEND), (x + 38, y), &font))
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    })
}

/// The legend of a line plot in the strip right of its frame: a swatch of each series'
/// line and marker, then its name. (plotters' own legend is clipped to the frame, where it
/// would hide lines.)
fn legend(
    root: &DrawingArea<SVGBackend, Shift>,
    series: &[Series],
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let x = (PLOT_WIDTH - LEGEND_WIDTH) as i32 + 14;
    let font = TextStyle::from(("sans-serif", TICK_FONT).into_font())
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, s) in series.iter().enumerate() {
        let colour = rgb(SERIES_COLOURS[i % SERIES_COLOURS.len()]);
        let y = 30 + 26 * i as i32;
        root.draw(&PathElement::new(
            vec![(x, y), (x + 28, y)],
            colour.stroke_width(3),
        ))?;
        root.draw(&Circle::new((x + 14, y), 5, colour.filled()))?;
        root.draw(&Text::new(cut(&s.name, MAX_LEGEND), (x + 38, y), &font))?;
    }
    Ok(())
}

/// A tick value without trailing zeros: `2`, `0.25`, `1.5e-5` stays readable.
fn trim_number(v: f64) -> String {
    if v == 0.0 {
        return "0".to_string();
    }
    if v.abs() < 1e-3 || v.abs() >= 1e7 {
        return format!("{v:.2e}");
    }
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// Every figure of a parameter sweep: one line plot per metric against `x_label`.
pub fn metric_figures(x_label: &str, metrics: &[Metric]) -> Result<String, HtmlError> {
    let mut s = String::new();
    for m in metrics {
        s += &figure(
            &m.title,
            &line_plot(&m.title, x_label, &m.y_label, &m.series)?,
        );
    }
    Ok(s)
}

/// The page for one anonymization's report.json.
pub fn report_page(r: &Report) -> Result<String, HtmlError> {
    let mut b = format!(
        "<h1>Anonymization report: {}</h1>\n<p class=\"note\">relanon {}. Every number here is \
         read from the report.json written with the release; nothing identifying is in it.</p>\n",
        escape(&r.entity),
        escape(&r.relanon_version)
    );
    b += &summary(r);
    b += "<h2>Parameters</h2>\n";
    b += &table(&["parameter", "value"], &parameter_rows(&r.params));
    b += &tables_section(r);
    b += &ec_section(r)?;
    b += &lm_section(r)?;
    b += &utility_section(r);
    b += "<h2>Time</h2>\n";
    // The phases, then their total.
    let mut phases: Vec<(&String, &f64)> = r.timings_ms.iter().collect();
    phases.sort_by_key(|(phase, _)| phase.as_str() == "total");
    let timings: Vec<Vec<String>> = phases
        .into_iter()
        .map(|(phase, ms)| vec![phase.clone(), fixed(*ms, 1)])
        .collect();
    b += &table(&["phase", "milliseconds"], &timings);
    Ok(page(&format!("relanon report: {}", r.entity), &b))
}

fn summary(r: &Report) -> String {
    let mut rows = vec![
        vec![
            "independent verification".to_string(),
            if r.verified { "passed" } else { "FAILED" }.to_string(),
        ],
        vec!["entities".to_string(), r.entities.to_string()],
        vec![
            "entities released".to_string(),
            r.entities_released.to_string(),
        ],
        vec![
            "entities suppressed".to_string(),
            r.suppressed_entities.to_string(),
        ],
        vec![
            "equivalence classes".to_string(),
            r.equivalence_classes.to_string(),
        ],
        vec![
            "smallest equivalence class".to_string(),
            r.smallest_ec.map_or("-".to_string(), |n| n.to_string()),
        ],
        vec![
            "rows suppressed (every family table)".to_string(),
            format!("{:.1}%", 100.0 * r.rows_suppressed_share),
        ],
        vec!["LM (001 Def. 8)".to_string(), fixed(r.lm, 4)],
        vec![
            "LM with suppression (000 Def. 11)".to_string(),
            fixed(r.lm_with_suppression, 4),
        ],
        vec!["DM (001 Def. 9)".to_string(), r.dm.to_string()],
        vec![
            "query accuracy".to_string(),
            percent(r.utility.query_accuracy),
        ],
        vec![
            "suppression accuracy".to_string(),
            format!("{:.1}%", r.utility.suppression_accuracy),
        ],
    ];
    // `table` escapes every cell.
    for c in &r.recoding {
        rows.push(vec![
            format!("level of {} (global recoding)", c.column),
            format!("{} of {}", c.level, c.height),
        ]);
    }
    let mut warning = if r.verified {
        String::new()
    } else {
        "<p class=\"warning\">This release FAILED independent verification: it must not be \
         published.</p>\n"
            .to_string()
    };
    for w in r.rows_warnings() {
        warning += &format!("<p class=\"warning\">{}</p>\n", escape(&w));
    }
    format!(
        "<h2>Summary</h2>\n{warning}{}<p class=\"note\">LM is the share of information lost to \
         generalization: 0 keeps every value, 1 turns every value into <code>*</code>. \
         Suppressed rows are left out of the release, never filled with <code>*</code>.</p>\n",
        table(&["measure", "value"], &rows)
    )
}

/// The parameters as `name = value` rows, nested objects flattened (`model.k`).
fn parameter_rows(params: &crate::report::ReportParams) -> Vec<Vec<String>> {
    fn walk(prefix: &str, v: &serde_json::Value, out: &mut Vec<Vec<String>>) {
        match v {
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    let name = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&name, v, out);
                }
            }
            serde_json::Value::String(s) => out.push(vec![prefix.to_string(), s.clone()]),
            serde_json::Value::Null => out.push(vec![prefix.to_string(), "-".to_string()]),
            other => out.push(vec![prefix.to_string(), other.to_string()]),
        }
    }
    let mut out = Vec::new();
    // The parameters are plain data with string keys; serializing them cannot fail.
    if let Ok(v) = serde_json::to_value(params) {
        walk("", &v, &mut out);
    }
    out
}

fn tables_section(r: &Report) -> String {
    let rows: Vec<Vec<String>> = r
        .tables
        .iter()
        .map(|t| {
            vec![
                t.name.clone(),
                t.rows_in.to_string(),
                t.released.to_string(),
                t.suppressed.to_string(),
                format!("{:.1}%", 100.0 * t.suppressed_share()),
                t.orphans_dropped.to_string(),
                t.qi_columns.to_string(),
                fixed(t.lm, 4),
                if t.unchanged_columns.is_empty() {
                    "-".to_string()
                } else {
                    t.unchanged_columns.join(", ")
                },
            ]
        })
        .collect();
    let mut s = format!(
        "<h2>Tables</h2>\n{}",
        table(
            &[
                "table",
                "rows in",
                "released",
                "suppressed",
                "suppressed share",
                "orphans dropped",
                "QI columns",
                "LM",
                "published unchanged",
            ],
            &rows,
        )
    );
    if !r.dimensions.is_empty() {
        let rows: Vec<Vec<String>> = r
            .dimensions
            .iter()
            .map(|d| {
                vec![
                    d.name.clone(),
                    d.columns.join(", "),
                    if d.left_out_columns.is_empty() {
                        "-".to_string()
                    } else {
                        d.left_out_columns.join(", ")
                    },
                ]
            })
            .collect();
        s += "<h3>Released beside the family</h3>\n<p class=\"note\">Dimension tables are \
              published as the source holds them, without their IDENTIFIER columns.</p>\n";
        s += &table(&["table", "columns", "left out"], &rows);
    }
    if !r.left_out.is_empty() {
        let rows: Vec<Vec<String>> = r.left_out.iter().map(|t| vec![t.clone()]).collect();
        s += "<h3>Not released</h3>\n";
        s += &table(&["table"], &rows);
    }
    s
}

fn ec_section(r: &Report) -> Result<String, HtmlError> {
    let mut s = String::from("<h2>Equivalence classes</h2>\n");
    if r.ec_size_histogram.is_empty() {
        s += "<p>No equivalence class was released.</p>\n";
        return Ok(s);
    }
    s += &format!(
        "<p class=\"note\">{} equivalence classes; every released entity hides among the \
         others of its class. Classes much larger than the minimum cost utility.</p>\n",
        r.equivalence_classes
    );
    s += &figure(
        "Equivalence class sizes",
        &ec_histogram(&r.ec_size_histogram)?,
    );
    Ok(s)
}

/// One bar per EC size that occurs, its height the number of ECs of that size.
pub fn ec_histogram(histogram: &BTreeMap<usize, usize>) -> Result<String, HtmlError> {
    let labels: Vec<String> = histogram.keys().map(usize::to_string).collect();
    let counts: Vec<usize> = histogram.values().copied().collect();
    count_bars(
        "equivalence class sizes",
        &labels,
        &counts,
        "entities in the class",
        "classes",
    )
}

fn lm_section(r: &Report) -> Result<String, HtmlError> {
    let mut s = String::from("<h2>Information loss</h2>\n");
    let (mut labels, mut values) = (Vec::new(), Vec::new());
    for t in &r.tables {
        for (column, lm) in &t.lm_by_column {
            labels.push(format!("{}.{column}", t.name));
            values.push(*lm);
        }
    }
    if labels.is_empty() {
        s += "<p>This report has no per-column LM (written by an earlier relanon, or no QI \
              column was released).</p>\n";
    } else {
        s += &figure(
            "LM per quasi-identifier column",
            &horizontal_bars("LM per QI column", &labels, &values, "LM")?,
        );
        let rows: Vec<Vec<String>> = labels
            .iter()
            .zip(&values)
            .map(|(l, v)| vec![l.clone(), fixed(*v, 4)])
            .collect();
        s += &table(&["column", "LM"], &rows);
    }
    let with_qi: Vec<_> = r.tables.iter().filter(|t| t.qi_columns > 0).collect();
    if !with_qi.is_empty() {
        let labels: Vec<String> = with_qi.iter().map(|t| t.name.clone()).collect();
        let values: Vec<f64> = with_qi.iter().map(|t| t.lm).collect();
        s += &figure(
            "LM per table",
            &horizontal_bars("LM per table", &labels, &values, "LM")?,
        );
    }
    Ok(s)
}

fn utility_section(r: &Report) -> String {
    let u = &r.utility;
    let mut s = String::from("<h2>Utility</h2>\n");
    s += &format!(
        "<p>Query accuracy {} over {} random count queries (1 - |released - source| / source, \
         000 Sec. 2.4; 100% is perfect).</p>\n",
        percent(u.query_accuracy),
        u.queries
    );
    if !u.query_accuracy_by_depth.is_empty() {
        let rows: Vec<Vec<String>> = u
            .query_accuracy_by_depth
            .iter()
            .enumerate()
            .map(|(d, a)| {
                let depth = if d == 0 {
                    "0 (entity table)".to_string()
                } else {
                    d.to_string()
                };
                vec![depth, percent(*a)]
            })
            .collect();
        s += &table(&["depth of the counted table", "query accuracy"], &rows);
    }
    s += &format!(
        "<p>KL-divergence of the sensitive columns' distributions, release against source \
         (0 is identical): mean {}.</p>\n",
        opt(u.kl_divergence, 4)
    );
    if !u.kl_by_column.is_empty() {
        let rows: Vec<Vec<String>> = u
            .kl_by_column
            .iter()
            .map(|(c, kl)| vec![c.clone(), opt(*kl, 4)])
            .collect();
        s += &table(&["sensitive column", "KL"], &rows);
    }
    s += &format!(
        "<p>Suppression accuracy {:.1}% (released over source vertices per entity, 000 \
         Sec. 3.5).</p>\n",
        u.suppression_accuracy
    );
    s
}

/// Colour and marker of a reference drawn beside a plot's series: in no series' colour.
pub(crate) const REFERENCE_COLOUR: [u8; 3] = [0x00, 0x00, 0x00];

/// A plot of `series` as lines through their points in the order given (a sweep's order,
/// which need not be x order), each point marked, and `reference` (if any) as points of a
/// marker of its own; both axes numeric with plotters' ticks (the x values are measured, not
/// settings), the y axis from 0 unless the data go below it.
pub fn path_plot(
    plot: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    reference: Option<&Series>,
) -> Result<String, HtmlError> {
    lines(plot, (x_label, y_label), series, reference, None)
}

/// What the page tests read back from the SVG: shared by the report page's tests and the
/// experiment pages'.
#[cfg(test)]
pub(crate) mod svg {
    /// The value of attribute `name` in the start tag `tag`.
    pub(crate) fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
        let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        tag[start..].split('"').next()
    }

    /// Every start tag `<element ...>` in `svg`.
    pub(crate) fn tags<'a>(svg: &'a str, element: &str) -> Vec<&'a str> {
        let open = format!("<{element} ");
        svg.match_indices(&open)
            .map(|(i, _)| &svg[i..i + svg[i..].find('>').expect("tag closes")])
            .collect()
    }

    /// A colour as SVG writes it.
    pub(crate) fn hex(c: [u8; 3]) -> String {
        format!("#{:02X}{:02X}{:02X}", c[0], c[1], c[2])
    }

    /// The inline SVG documents of a page, in order.
    pub(crate) fn svgs(page: &str) -> Vec<&str> {
        page.split("<svg ").skip(1).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::svg::{attr, hex, svgs, tags};
    use super::*;

    /// A report as report.json carries it, with `table` as the child table's name.
    fn report(table: &str, column: &str, histogram: &[(usize, usize)]) -> Report {
        let hist: serde_json::Map<String, serde_json::Value> = histogram
            .iter()
            .map(|(size, n)| (size.to_string(), serde_json::json!(n)))
            .collect();
        serde_json::from_value(serde_json::json!({
            "relanon_version": "0.1.0",
            "entity": "student",
            "params": {
                "model": {"name": "k-anonymity", "k": 2}, "algorithm": "miracle",
                "threshold": 0.3, "climit": 150, "mapping": "lsap", "m": 4.0, "s": 0.5,
                "query_seed": 1, "queries": 200, "keys": "pseudonymize", "orphans": "refuse"
            },
            "tables": [
                {"name": "students", "rows_in": 4, "released": 4, "suppressed": 0,
                 "orphans_dropped": 0, "qi_columns": 0, "lm": 0.0, "lm_by_column": {}},
                {"name": table, "rows_in": 11, "released": 10, "suppressed": 1,
                 "orphans_dropped": 0, "qi_columns": 1, "lm": 0.25,
                 "lm_by_column": {column: 0.25}}
            ],
            "entities": 4, "entities_released": 4, "suppressed_entities": 0,
            "equivalence_classes": 2, "smallest_ec": 2, "ec_size_histogram": hist,
            "lm": 0.25, "lm_with_suppression": 0.3, "dm": 8,
            "utility": {
                "query_accuracy": 0.9, "query_accuracy_by_depth": [1.0, null],
                "queries": 200, "kl_divergence": 0.05,
                "kl_by_column": {"courses.grade": 0.05}, "suppression_accuracy": 90.0
            },
            "timings_ms": {"total": 12.0, "cluster": 1.0}
        }))
        .expect("the sample is a report")
    }

    #[test]
    fn hostile_names_are_escaped_everywhere() {
        let hostile = "<script>alert('x')</script>";
        let r = report(hostile, "<img src=x onerror=alert(1)>", &[(2, 2)]);
        let page = report_page(&r).expect("page renders");
        let lower = page.to_ascii_lowercase();
        assert!(
            !lower.contains("<script"),
            "a raw <script> reached the page"
        );
        assert!(!lower.contains("<img"), "a raw <img> reached the page");
        assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
        // The table name is drawn in the LM plots too, escaped by the SVG backend.
        assert!(svgs(&page).iter().any(|svg| svg.contains("&lt;script&gt;")));
        assert_eq!(
            escape(r#"a&b<c>"d"'e'"#),
            "a&amp;b&lt;c&gt;&quot;d&quot;&#39;e&#39;"
        );
    }

    #[test]
    fn the_page_forbids_loading_anything() {
        let page = report_page(&report("courses", "course", &[(2, 2)])).expect("renders");
        assert!(page.contains("default-src 'none'"));
        for external in ["<script", "<link", "<img", "http://", "https://", "url("] {
            let hits: Vec<_> = page.match_indices(external).collect();
            // The SVG namespace is an identifier, not a fetch.
            let fetches = hits
                .iter()
                .filter(|(i, _)| !page[..*i].ends_with("xmlns=\""))
                .count();
            assert_eq!(fetches, 0, "the page contains {external}");
        }
    }

    #[test]
    fn histogram_has_one_bar_per_ec_size_with_heights_as_counts() {
        let histogram: BTreeMap<usize, usize> = [(2, 3), (3, 1), (5, 6), (9, 1)].into();
        let svg = ec_histogram(&histogram).expect("draws");
        let bars: Vec<&str> = tags(&svg, "rect")
            .into_iter()
            .filter(|t| attr(t, "fill") == Some(hex(PLOT_COLOUR).as_str()))
            .collect();
        assert_eq!(bars.len(), 4, "one bar per EC size");
        let heights: Vec<f64> = bars
            .iter()
            .map(|t| {
                attr(t, "height")
                    .and_then(|h| h.parse().ok())
                    .expect("a rect has a height")
            })
            .collect();
        // Bars in size order: 3, 1, 6, 1 classes.
        assert!((heights[0] / heights[1] - 3.0).abs() < 0.1, "{heights:?}");
        assert!((heights[2] / heights[1] - 6.0).abs() < 0.2, "{heights:?}");
        assert_eq!(heights[1], heights[3]);
        for size in ["2", "3", "5", "9"] {
            assert!(svg.contains(&format!(">\n{size}\n</text>")), "label {size}");
        }
    }

    #[test]
    fn report_page_draws_its_plots() {
        let page = report_page(&report("courses", "course", &[(2, 1), (3, 1)])).expect("ok");
        // EC sizes, LM per column, LM per table.
        assert_eq!(svgs(&page).len(), 3);
        assert!(page.contains("courses.course"));
        assert!(page.contains("<td class=\"num\">0.2500</td>"));
        // Phases first, their total last.
        assert!(page.find(">cluster<") < page.find(">total<"));
    }

    #[test]
    fn a_report_of_an_earlier_version_still_renders() {
        let mut v = serde_json::to_value(report("courses", "course", &[])).expect("serializes");
        let obj = v.as_object_mut().expect("an object");
        obj.remove("ec_size_histogram");
        for t in obj["tables"].as_array_mut().expect("tables") {
            t.as_object_mut().expect("a table").remove("lm_by_column");
        }
        let old: Report = serde_json::from_value(v).expect("missing new fields default");
        let page = report_page(&old).expect("renders");
        assert!(page.contains("No equivalence class was released"));
        assert!(page.contains("no per-column LM"));
    }

    #[test]
    fn an_unverified_release_is_flagged() {
        let mut r = report("courses", "course", &[(2, 2)]);
        let verified = report_page(&r).expect("renders");
        assert!(!verified.contains("FAILED"));
        r.verified = false;
        let page = report_page(&r).expect("renders");
        assert!(page.contains("FAILED independent verification"));
    }

    #[test]
    fn degenerate_plots_still_draw() {
        let one = [Series {
            name: "only".into(),
            points: vec![(5.0, 0.0)],
        }];
        assert!(line_plot("one point", "k", "LM", &one).is_ok());
        assert!(line_plot("nothing", "k", "LM", &[]).is_ok());
        assert!(count_bars("none", &[], &[], "size", "classes").is_ok());
        assert!(horizontal_bars("none", &[], &[], "LM").is_ok());
    }

    #[test]
    fn count_ticks_are_whole_and_cover_the_maximum() {
        assert_eq!(count_ticks(0), vec![0.0, 1.0]);
        assert_eq!(count_ticks(2), vec![0.0, 1.0, 2.0]);
        let t = count_ticks(37);
        assert!(t.len() <= 9 && *t.last().expect("ticks") >= 37.0, "{t:?}");
        assert!(t.iter().all(|v| v.fract() == 0.0));
    }
}
