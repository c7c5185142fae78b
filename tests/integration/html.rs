//! The HTML report: `anonymize --report` and `relanon report` write the same page, bad input
//! says which file and what to do, and a real browser (headless Chromium) renders the page's
//! plots as a person sees them: SVG elements in the DOM and bar-coloured pixels on screen.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use relanon::html::PLOT_COLOUR;

use crate::common::*;

/// Table II anonymized with `--report page.html` in `dir`; returns the report.json path.
fn anonymize_with_page(dir: &Path) -> PathBuf {
    let o = anonymize_table2(dir, &table2_text(), &["--report", "page.html"]);
    assert!(o.status.success(), "anonymize failed: {}", stderr(&o));
    dir.join("release.report.json")
}

/// How many bars the page draws for this report.json: one per EC size, one per QI column,
/// one per table with QI columns.
fn expected_bars(report: &serde_json::Value) -> usize {
    let sizes = report["ec_size_histogram"]
        .as_object()
        .expect("an EC size histogram")
        .len();
    let tables = report["tables"].as_array().expect("tables");
    let columns: usize = tables
        .iter()
        .map(|t| t["lm_by_column"].as_object().map_or(0, |m| m.len()))
        .sum();
    let with_qi = tables
        .iter()
        .filter(|t| t["qi_columns"].as_u64() > Some(0))
        .count();
    sizes + columns + with_qi
}

fn colour_hex() -> String {
    format!(
        "#{:02X}{:02X}{:02X}",
        PLOT_COLOUR[0], PLOT_COLOUR[1], PLOT_COLOUR[2]
    )
}

#[test]
fn anonymize_and_report_write_the_same_page() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = anonymize_with_page(dir.path());
    let written = std::fs::read_to_string(dir.path().join("page.html")).expect("page written");
    let o = relanon(dir.path(), &["report", "release.report.json"]);
    assert!(o.status.success(), "report failed: {}", stderr(&o));
    // Default output: beside the JSON, same stem, .html.
    let again = std::fs::read_to_string(dir.path().join("release.report.html"))
        .expect("report writes beside the JSON");
    // The page is drawn from the report alone, so reading report.json back loses nothing.
    assert_eq!(written, again);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("report.json")).expect("JSON");
    assert_eq!(
        written
            .matches(&format!("fill=\"{}\"", colour_hex()))
            .count(),
        expected_bars(&report)
    );
    for table in ["students", "courses", "books"] {
        assert!(
            written.contains(&format!("<td>{table}</td>")),
            "{table} row"
        );
    }
    let o = relanon(
        dir.path(),
        &["report", "release.report.json", "--out", "other.html"],
    );
    assert!(o.status.success(), "report --out failed: {}", stderr(&o));
    assert!(dir.path().join("other.html").is_file());
}

#[test]
fn unreadable_or_invalid_reports_say_which_file_and_what_to_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = relanon(dir.path(), &["report", "missing.json"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("missing.json") && e.contains("pass the report.json"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1, "one line: {e}");

    std::fs::write(dir.path().join("bad.json"), "{\"tables\": 3}").expect("write");
    let o = relanon(dir.path(), &["report", "bad.json"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("bad.json") && e.contains("is not a relanon report.json"),
        "{e}"
    );
    assert!(
        !dir.path().join("bad.html").exists(),
        "no page for a bad report"
    );
}

/// Debian's chromium, if installed.
fn chromium() -> Option<PathBuf> {
    let usual = PathBuf::from("/usr/bin/chromium");
    if usual.is_file() {
        return Some(usual);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("chromium"))
        .find(|p| p.is_file())
}

/// Runs headless Chromium on `page` with `extra` arguments, stdout into `out`; kills it if it
/// hangs (a safety net, not a measurement).
fn run_chromium(browser: &Path, page: &Path, extra: &[String], out: &Path) {
    let profile = tempfile::tempdir().expect("profile dir");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(out).expect("stdout file"))
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        match child.try_wait().expect("wait on chromium") {
            Some(status) => {
                assert!(status.success(), "chromium exited with {status}");
                return;
            }
            None if Instant::now() > deadline => {
                let _ = child.kill();
                panic!("chromium did not finish rendering {}", page.display());
            }
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// Pixels of `png` within 3 of `colour` on every channel, and all pixels.
fn count_colour(png: &Path, colour: [u8; 3]) -> (usize, usize) {
    let file = std::io::BufReader::new(std::fs::File::open(png).expect("screenshot written"));
    let mut decoder = png::Decoder::new(file);
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("fits in memory")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let channels = info.color_type.samples();
    assert!(
        channels >= 3,
        "a colour screenshot, got {:?}",
        info.color_type
    );
    let pixels = &buf[..info.buffer_size()];
    let near = |a: u8, b: u8| a.abs_diff(b) <= 3;
    let hits = pixels
        .chunks_exact(channels)
        .filter(|p| near(p[0], colour[0]) && near(p[1], colour[1]) && near(p[2], colour[2]))
        .count();
    (hits, pixels.len() / channels)
}

#[test]
fn chromium_renders_the_plots() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have chromium: .ci/run installs Debian's chromium before the tests"
        );
        println!("skipped: install Debian's chromium (apt-get install chromium) to render the HTML report");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let json = anonymize_with_page(dir.path());
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).expect("report.json")).expect("JSON");
    let page = dir.path().join("page.html");

    // What the browser built: the plots are SVG elements, not text.
    let dom = dir.path().join("dom.html");
    run_chromium(&browser, &page, &["--dump-dom".to_string()], &dom);
    let dom = std::fs::read_to_string(dom).expect("DOM dumped");
    assert_eq!(
        dom.matches("<svg").count(),
        3,
        "EC sizes, LM per column, per table"
    );
    let bars = dom
        .match_indices("<rect")
        .filter(|(i, _)| {
            let tag = &dom[*i..*i + dom[*i..].find('>').expect("tag closes")];
            tag.contains(&format!("fill=\"{}\"", colour_hex()))
        })
        .count();
    assert_eq!(bars, expected_bars(&report));

    // What a person sees: the bars' colour covers a real area of the screen.
    let shot = dir.path().join("page.png");
    run_chromium(
        &browser,
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1200,2400".to_string(),
        ],
        &dir.path().join("screenshot.log"),
    );
    let (coloured, total) = count_colour(&shot, PLOT_COLOUR);
    // One EC bar alone is about 75 x 300 pixels; the four LM bars add more.
    assert!(
        coloured > 10_000,
        "only {coloured} pixels in the bar colour: the plots did not render"
    );
    assert!(
        coloured < total / 5,
        "{coloured} of {total} pixels in the bar colour: the page is not a page of plots"
    );
}
