//! SQL functions a data owner coming from SQLite expects in an `AS SELECT` hierarchy (and in
//! an `attack` fact) that DataFusion does not have. DataFusion's own string, unicode, regex
//! and date/time functions (`substr`, `left`, `upper`, `regexp_replace`, `date_part`,
//! `to_char`, ...) are registered by every session already; this adds `strftime`, SQLite's
//! way of taking a part of a date, which most hierarchy queries written against a SQLite
//! source use.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use datafusion::common::{exec_err, plan_err, Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

/// Registers the functions of this module with a session.
pub(super) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(Strftime::new()));
}

/// `strftime(format, time)` as SQLite has it, for the time values a warehouse holds: text
/// `YYYY-MM-DD`, optionally followed by ` HH:MM[:SS[.fff]]` (or `T` for the space), and
/// DATE / TIMESTAMP columns. Text that is no such time gives NULL, as in SQLite; so does a
/// day the calendar does not have (`2024-02-30`), which SQLite would roll over. SQLite's
/// modifiers (a third argument on) and its julian-day forms are refused with a message:
/// silently different results would be worse than an error.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Strftime {
    signature: Signature,
}

impl Strftime {
    fn new() -> Strftime {
        Strftime {
            signature: Signature::variadic_any(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for Strftime {
    fn name(&self) -> &str {
        "strftime"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> DfResult<DataType> {
        if args.len() != 2 {
            return plan_err!(
                "strftime takes two arguments, a format and a date (strftime('%Y', born)); SQLite's modifiers are not supported: compute the shifted date in the query instead"
            );
        }
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let [format, time] = args.args.as_slice() else {
            return exec_err!("strftime takes two arguments");
        };
        let format = format.to_array(rows)?;
        let format = cast(&format, &DataType::Utf8)?;
        let time = time.to_array(rows)?;
        let time = text_of(&time)?;
        let (format, time) = (format.as_string::<i32>(), time.as_string::<i32>());
        let mut out = StringBuilder::with_capacity(rows, rows * 8);
        for r in 0..rows {
            if format.is_null(r) || time.is_null(r) {
                out.append_null();
                continue;
            }
            match Moment::parse(time.value(r)) {
                Some(moment) => out.append_value(moment.format(format.value(r))?),
                None => out.append_null(),
            }
        }
        let array: ArrayRef = Arc::new(out.finish());
        Ok(
            match args
                .args
                .iter()
                .all(|a| matches!(a, ColumnarValue::Scalar(_)))
            {
                true => ColumnarValue::Scalar(ScalarValue::try_from_array(&array, 0)?),
                false => ColumnarValue::Array(array),
            },
        )
    }
}

/// The time argument as text in SQLite's layout: dates and timestamps through Arrow's cast
/// (which writes `YYYY-MM-DD` and `YYYY-MM-DDTHH:MM:SS`), text as it is.
fn text_of(time: &ArrayRef) -> DfResult<ArrayRef> {
    match time.data_type() {
        DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::Date32
        | DataType::Date64
        | DataType::Timestamp(_, _)
        | DataType::Null => Ok(cast(time, &DataType::Utf8)?),
        other => exec_err!(
            "strftime reads a date written as text ('2024-03-05' or '2024-03-05 14:30:00') or a DATE / TIMESTAMP column, not {other}; julian day numbers and unix times are not supported"
        ),
    }
}

/// A calendar date with a time of day, as SQLite reads it.
#[derive(Debug, PartialEq)]
struct Moment {
    date: chrono::NaiveDate,
    hour: u32,
    minute: u32,
    /// Seconds with their fraction.
    second: f64,
}

impl Moment {
    /// `YYYY-MM-DD`, optionally followed by a space or `T` and `HH:MM`, `HH:MM:SS` or
    /// `HH:MM:SS.fff`, optionally followed by `Z`. Anything else is `None`.
    fn parse(text: &str) -> Option<Moment> {
        let text = text.trim();
        let (date, rest) = text.split_at_checked(10)?;
        let date = chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d").ok()?;
        let rest = rest.strip_suffix('Z').unwrap_or(rest);
        let (hour, minute, second) = match rest.chars().next() {
            None => (0, 0, 0.0),
            Some(' ' | 'T') => parse_time(&rest[1..])?,
            Some(_) => return None,
        };
        Some(Moment {
            date,
            hour,
            minute,
            second,
        })
    }

    /// Expands SQLite's substitutions; an unknown one is an error naming it.
    fn format(&self, format: &str) -> DfResult<String> {
        use chrono::Datelike;
        let mut out = String::with_capacity(format.len() + 8);
        let mut chars = format.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            let whole = self.second.floor();
            match chars.next() {
                Some('Y') => out.push_str(&format!("{:04}", self.date.year())),
                Some('m') => out.push_str(&format!("{:02}", self.date.month())),
                Some('d') => out.push_str(&format!("{:02}", self.date.day())),
                Some('j') => out.push_str(&format!("{:03}", self.date.ordinal())),
                Some('H') => out.push_str(&format!("{:02}", self.hour)),
                Some('M') => out.push_str(&format!("{:02}", self.minute)),
                Some('S') => out.push_str(&format!("{:02}", whole as u32)),
                Some('f') => out.push_str(&format!("{:06.3}", self.second)),
                Some('w') => out.push_str(&self.date.weekday().num_days_from_sunday().to_string()),
                Some('u') => out.push_str(&self.date.weekday().number_from_monday().to_string()),
                Some('W') => {
                    // Week of the year, weeks starting on Monday, days before the first
                    // Monday in week 00 (SQLite's and C's %W).
                    let monday_based = self.date.weekday().num_days_from_monday();
                    let week = (self.date.ordinal0() + 7 - monday_based) / 7;
                    out.push_str(&format!("{week:02}"));
                }
                Some('%') => out.push('%'),
                Some(other) => {
                    return exec_err!(
                        "strftime: '%{other}' is not supported; use %Y %m %d %j %H %M %S %f %w %u %W or %%"
                    )
                }
                None => return exec_err!("strftime: the format ends in a lone '%'; write %% for a percent sign"),
            }
        }
        Ok(out)
    }
}

/// `HH:MM`, `HH:MM:SS` or `HH:MM:SS.fff` in range.
fn parse_time(text: &str) -> Option<(u32, u32, f64)> {
    let mut parts = text.split(':');
    let hour: u32 = two_digits(parts.next()?)?;
    let minute: u32 = two_digits(parts.next()?)?;
    let second = match parts.next() {
        None => 0.0,
        Some(s) => {
            let (whole, fraction) = s.split_once('.').unwrap_or((s, ""));
            let whole = two_digits(whole)?;
            if !fraction.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            let fraction: f64 = format!("0.{fraction}0").parse().ok()?;
            whole as f64 + fraction
        }
    };
    if parts.next().is_some() || hour > 23 || minute > 59 || second >= 60.0 {
        return None;
    }
    Some((hour, minute, second))
}

fn two_digits(text: &str) -> Option<u32> {
    (text.len() == 2 && text.chars().all(|c| c.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, format: &str) -> Option<String> {
        Moment::parse(text).map(|m| m.format(format).expect("supported format"))
    }

    #[test]
    fn formats_as_sqlite_does() {
        // Each expected value is what SQLite returns for the same call (%u since 3.44).
        assert_eq!(at("2024-03-05", "%Y").as_deref(), Some("2024"));
        assert_eq!(at("2024-03-05", "%Y-%m").as_deref(), Some("2024-03"));
        assert_eq!(at("2024-12-31", "%j").as_deref(), Some("366"));
        assert_eq!(
            at("2024-03-05 14:30:07.25", "%H:%M:%S %f").as_deref(),
            Some("14:30:07 07.250")
        );
        assert_eq!(
            at("2024-03-05T14:30", "%H.%M.%S").as_deref(),
            Some("14.30.00")
        );
        assert_eq!(at("2024-03-03", "%w %u").as_deref(), Some("0 7"));
        assert_eq!(at("2024-01-01", "%W").as_deref(), Some("01"));
        assert_eq!(at("2023-01-01", "%W").as_deref(), Some("00"));
        assert_eq!(at("2024-03-05", "100%%").as_deref(), Some("100%"));
    }

    #[test]
    fn text_that_is_no_time_gives_null() {
        for bad in [
            "2024-02-30",
            "05/03/2024",
            "2024-03-05 25:00",
            "2024-03-05x",
            "",
            "2024",
        ] {
            assert_eq!(Moment::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn unknown_substitutions_are_refused() {
        let moment = Moment::parse("2024-03-05").expect("a date");
        let message = moment.format("%Q").expect_err("unknown").to_string();
        assert!(message.contains("'%Q' is not supported"), "{message}");
    }

    #[tokio::test]
    async fn runs_in_a_session_on_text_and_dates() {
        let ctx = super::super::session(1);
        let batches = ctx
            .sql("SELECT strftime('%Y', '2024-03-05') AS a, strftime('%m', CAST('2021-07-09' AS DATE)) AS b, strftime('%Y', 'soon') AS c")
            .await
            .expect("plans")
            .collect()
            .await
            .expect("runs");
        let text = arrow::util::pretty::pretty_format_batches(&batches)
            .expect("prints")
            .to_string();
        assert!(text.contains("| 2024 | 07 |   |"), "{text}");
        let refused = ctx
            .sql("SELECT strftime('%Y', '2024-03-05', '+1 day')")
            .await;
        assert!(refused.is_err());
    }
}
