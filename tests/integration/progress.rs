//! Progress of long phases: drawn on a terminal only, never into captured output; `--json`
//! leaves stdout to the report and `--quiet` leaves both streams empty.

use crate::common::*;

/// What a drawn phase leaves in a byte stream: carriage returns, escape sequences, bar fill,
/// phase names.
fn progress_traces(text: &str) -> Vec<&'static str> {
    ["\r", "\x1b", "[=", "[>", "clustering", "entity forest"]
        .into_iter()
        .filter(|t| text.contains(t))
        .collect()
}

#[test]
fn captured_stderr_gets_no_progress_and_json_stdout_is_the_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = table2_workspace(dir.path(), &table2_text());
    let o = relanon(
        dir.path(),
        &["anonymize", decl.to_str().expect("utf-8 path"), "--json"],
    );
    assert!(o.status.success(), "anonymize failed: {}", stderr(&o));
    let err = stderr(&o);
    assert!(
        progress_traces(&err).is_empty(),
        "progress drawn into a pipe: {err:?}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&stdout(&o)).expect("stdout is one JSON document and nothing else");
    assert_eq!(report["verified"], true);
    assert_eq!(report["entities"], 4);
}

#[test]
fn quiet_anonymize_prints_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = table2_workspace(dir.path(), &table2_text());
    let o = relanon(
        dir.path(),
        &["anonymize", decl.to_str().expect("utf-8 path"), "--quiet"],
    );
    assert!(o.status.success(), "anonymize failed: {}", stderr(&o));
    assert_eq!(stdout(&o), "");
    assert_eq!(stderr(&o), "");
}

/// Runs `relanon args` on a pseudo-terminal (util-linux `script`) and returns what the terminal
/// received, or `None` without `script` (the test is then skipped, unless `CI` is set).
#[cfg(target_os = "linux")]
fn on_a_terminal(dir: &std::path::Path, args: &[&str]) -> Option<String> {
    let command = std::iter::once(env!("CARGO_BIN_EXE_relanon"))
        .chain(args.iter().copied())
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ");
    let run = std::process::Command::new("script")
        .current_dir(dir)
        .env("TERM", "xterm")
        .args(["-qec", &command, "/dev/null"])
        .output();
    match run {
        Ok(o) => {
            assert!(o.status.success(), "{command} failed: {}", stdout(&o));
            Some(stdout(&o))
        }
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("skipped: cannot run util-linux script ({e})");
            None
        }
        Err(e) => panic!("CI must have util-linux script: {e}"),
    }
}

/// The demo's clustering (1000 students) lasts long enough for the bar to be drawn.
#[cfg(target_os = "linux")]
#[test]
fn a_terminal_sees_the_cluster_bar_unless_quiet() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(shown) = on_a_terminal(dir.path(), &["demo", "--out", "out"]) else {
        return;
    };
    assert!(
        shown.contains("cluster") && shown.contains("/1000 clustering"),
        "no cluster bar on the terminal: {shown:?}"
    );
    // Each phase's line is cleared, so the summary starts on a clean line.
    assert!(shown.contains("\x1b[2K"), "phase lines never cleared");
    assert!(shown.contains("verify: passed"), "{shown:?}");
    let quiet = on_a_terminal(dir.path(), &["demo", "--out", "out", "--quiet"]);
    assert_eq!(quiet.as_deref(), Some(""));
}
