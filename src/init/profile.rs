//! What a column's values look like: counts, distinct values, whether every value is a
//! number or a calendar date, and how many of a sample match the patterns of personal data.
//! Everything `init` proposes for a column is decided from a `Profile` and the column's name.

use std::collections::BTreeSet;

use arrow::array::Array;
use arrow::datatypes::DataType;

use crate::warehouse::{numeric_value, render_value};

/// Distinct values kept per column; a column with more is high-cardinality, and its values
/// are not needed (no hierarchy of rows is built for it).
const DISTINCT_CAP: usize = 20_000;

/// Values matched against the patterns of personal data, spread over the column.
const SAMPLE: usize = 1_000;

/// A column's values, summarized.
#[derive(Debug, Clone)]
pub struct Profile {
    pub rows: usize,
    pub nulls: usize,
    /// The distinct non-NULL values as text, sorted, if there are at most `DISTINCT_CAP`.
    pub distinct: Option<Vec<String>>,
    /// How many distinct non-NULL values (exact up to the cap, then the cap plus one).
    pub distinct_count: usize,
    /// The storage type.
    pub data_type: DataType,
    /// Every non-NULL value is a number (stored as one, or text written as a plain number).
    pub numeric: bool,
    /// Every non-NULL value is whole.
    pub integral: bool,
    /// Smallest and largest number, when `numeric`.
    pub range: Option<(f64, f64)>,
    /// Every non-NULL value is a calendar date (`YYYY-MM-DD`, a time may follow).
    pub dates: bool,
    /// How many sampled non-NULL values match each pattern of personal data.
    pub patterns: Vec<(Pattern, usize)>,
    /// How many non-NULL values were sampled.
    pub sampled: usize,
    /// Mean length of the sampled values, in characters.
    pub mean_len: f64,
}

/// A shape of value that is personal data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    Email,
    Phone,
    Ip,
    Url,
    Iban,
    Card,
    Street,
    FreeText,
}

impl Pattern {
    pub const ALL: [Pattern; 8] = [
        Pattern::Email,
        Pattern::Phone,
        Pattern::Ip,
        Pattern::Url,
        Pattern::Iban,
        Pattern::Card,
        Pattern::Street,
        Pattern::FreeText,
    ];

    /// What values of this shape are, for a reason comment.
    pub fn describe(self) -> &'static str {
        match self {
            Pattern::Email => "e-mail addresses",
            Pattern::Phone => "phone numbers",
            Pattern::Ip => "IP addresses",
            Pattern::Url => "web addresses",
            Pattern::Iban => "IBANs",
            Pattern::Card => "card numbers",
            Pattern::Street => "street addresses",
            Pattern::FreeText => "free text",
        }
    }

    /// Whether `v` has this shape.
    pub fn matches(self, v: &str) -> bool {
        let v = v.trim();
        match self {
            Pattern::Email => is_email(v),
            Pattern::Phone => is_phone(v),
            Pattern::Ip => is_ipv4(v),
            Pattern::Url => {
                let l = v.to_ascii_lowercase();
                (l.starts_with("http://") || l.starts_with("https://") || l.starts_with("www."))
                    && !v.contains(' ')
            }
            Pattern::Iban => is_iban(v),
            Pattern::Card => is_card(v),
            Pattern::Street => is_street(v),
            Pattern::FreeText => v.chars().count() >= 40 && v.split_whitespace().count() >= 6,
        }
    }
}

impl Profile {
    /// Profiles column `c` of a table's rows.
    pub fn of(array: &dyn Array) -> Profile {
        let rows = array.len();
        let mut distinct: BTreeSet<String> = BTreeSet::new();
        let mut overflow = false;
        let (mut nulls, mut numeric, mut integral, mut dates) = (0, true, true, true);
        let mut range: Option<(f64, f64)> = None;
        let text_typed = matches!(
            array.data_type(),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        );
        for r in 0..rows {
            let Some(text) = render_value(array, r) else {
                nulls += 1;
                continue;
            };
            let number = numeric_value(array, r).or_else(|| {
                if text_typed {
                    plain_number(&text)
                } else {
                    None
                }
            });
            match number {
                Some(n) if n.is_finite() => {
                    integral &= n.fract() == 0.0;
                    range = Some(range.map_or((n, n), |(lo, hi)| (lo.min(n), hi.max(n))));
                }
                _ => numeric = false,
            }
            dates &= crate::hierarchy::parse_date(&text).is_some();
            if !overflow {
                distinct.insert(text);
                overflow = distinct.len() > DISTINCT_CAP;
            }
        }
        let present = rows - nulls;
        let (numeric, dates) = (numeric && present > 0, dates && present > 0);
        let step = (rows / SAMPLE).max(1);
        let sample: Vec<String> = (0..rows)
            .step_by(step)
            .filter_map(|r| render_value(array, r))
            .collect();
        let patterns = Pattern::ALL
            .iter()
            .map(|&p| (p, sample.iter().filter(|v| p.matches(v)).count()))
            .collect();
        let mean_len = if sample.is_empty() {
            0.0
        } else {
            sample.iter().map(|v| v.chars().count()).sum::<usize>() as f64 / sample.len() as f64
        };
        Profile {
            rows,
            nulls,
            distinct_count: distinct.len(),
            distinct: (!overflow).then(|| distinct.into_iter().collect()),
            data_type: array.data_type().clone(),
            numeric,
            integral: numeric && integral,
            range: range.filter(|_| numeric),
            dates,
            patterns,
            sampled: sample.len(),
            mean_len,
        }
    }

    /// Rows with a value.
    pub fn present(&self) -> usize {
        self.rows - self.nulls
    }

    /// The pattern most sampled values match, if at least half of them do.
    pub fn dominant_pattern(&self) -> Option<(Pattern, usize)> {
        self.patterns
            .iter()
            .copied()
            .filter(|&(_, n)| n > 0 && 2 * n >= self.sampled)
            .max_by_key(|&(_, n)| n)
    }

    /// Whether every value is its own (or nearly: 90% of the rows with a value).
    pub fn nearly_unique(&self) -> bool {
        self.present() >= 10 && self.distinct_count * 10 >= self.present() * 9
    }

    /// Whether this is a category: few distinct values against the rows.
    pub fn categorical(&self) -> bool {
        self.distinct.is_some()
            && self.distinct_count >= 1
            && (self.distinct_count <= 12 || self.distinct_count * 2 <= self.present())
    }

    /// Whether the storage type is a date or timestamp.
    pub fn date_typed(&self) -> bool {
        matches!(
            self.data_type,
            DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _)
        )
    }
}

/// Text that is a plain decimal number (`42`, `-3.5`), as bands read it.
fn plain_number(text: &str) -> Option<f64> {
    let t = text.strip_prefix('-').unwrap_or(text);
    let mut parts = t.splitn(2, '.');
    let whole = parts.next().unwrap_or_default();
    let fraction = parts.next().unwrap_or("0");
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(whole) && digits(fraction))
        .then(|| text.parse().ok())
        .flatten()
}

fn is_email(v: &str) -> bool {
    let Some((local, domain)) = v.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !v.contains(char::is_whitespace)
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
}

/// Seven or more digits written with the separators phone numbers have (`+`, `(`, `-`,
/// spaces), never bare: a bare run of digits is as often a code or an amount.
fn is_phone(v: &str) -> bool {
    let digits = v.chars().filter(char::is_ascii_digit).count();
    let allowed = v
        .chars()
        .all(|c| c.is_ascii_digit() || " +-().".contains(c));
    let separated = v.starts_with('+') || v.contains(['(', '-', ' ']);
    allowed && separated && (7..=15).contains(&digits) && !is_date_like(v)
}

fn is_date_like(v: &str) -> bool {
    crate::hierarchy::parse_date(v).is_some()
}

fn is_ipv4(v: &str) -> bool {
    let parts: Vec<&str> = v.split('.').collect();
    parts.len() == 4
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()))
        && parts
            .iter()
            .all(|p| p.parse::<u16>().is_ok_and(|n| n <= 255))
}

fn is_iban(v: &str) -> bool {
    let s: String = v.chars().filter(|c| *c != ' ').collect();
    let b = s.as_bytes();
    (15..=34).contains(&b.len())
        && b[..2].iter().all(u8::is_ascii_uppercase)
        && b[2..4].iter().all(u8::is_ascii_digit)
        && b[4..].iter().all(u8::is_ascii_alphanumeric)
}

/// 13 to 19 digits (spaces and dashes allowed between) that pass the Luhn check.
fn is_card(v: &str) -> bool {
    if !v
        .chars()
        .all(|c| c.is_ascii_digit() || c == ' ' || c == '-')
    {
        return false;
    }
    let digits: Vec<u32> = v.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| match i % 2 {
            1 if d * 2 > 9 => d * 2 - 9,
            1 => d * 2,
            _ => d,
        })
        .sum();
    sum.is_multiple_of(10)
}

/// A house number and a word that names a kind of street: `47 MySakila Drive`, `12 rue
/// Lepic`, `Hauptstraße 5`.
fn is_street(v: &str) -> bool {
    const KINDS: [&str; 24] = [
        "street",
        "st",
        "road",
        "rd",
        "avenue",
        "ave",
        "lane",
        "ln",
        "drive",
        "dr",
        "boulevard",
        "blvd",
        "way",
        "place",
        "pl",
        "court",
        "ct",
        "square",
        "sq",
        "rue",
        "strasse",
        "straße",
        "via",
        "parkway",
    ];
    let words: Vec<String> = v
        .split(|c: char| c.is_whitespace() || c == ',' || c == '.')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let has_number = words
        .iter()
        .any(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()));
    let has_kind = words
        .iter()
        .any(|w| KINDS.contains(&w.as_str()) || w.ends_with("straße") || w.ends_with("strasse"));
    has_number && has_kind && words.len() >= 2
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};

    #[test]
    fn patterns_of_personal_data() {
        assert!(Pattern::Email.matches("mary.smith@sakilacustomer.org"));
        assert!(!Pattern::Email.matches("not an @ address"));
        assert!(Pattern::Phone.matches("+1 (555) 010-4477"));
        assert!(Pattern::Phone.matches("030 1234567"));
        assert!(
            !Pattern::Phone.matches("12345678"),
            "bare digits are a code"
        );
        assert!(
            !Pattern::Phone.matches("2024-03-05"),
            "a date is not a phone number"
        );
        assert!(Pattern::Ip.matches("192.168.0.17"));
        assert!(!Pattern::Ip.matches("1.2.3"));
        assert!(Pattern::Url.matches("https://example.org/x"));
        assert!(Pattern::Iban.matches("DE89 3704 0044 0532 0130 00"));
        assert!(Pattern::Card.matches("4111 1111 1111 1111"));
        assert!(!Pattern::Card.matches("4111 1111 1111 1112"), "fails Luhn");
        assert!(Pattern::Street.matches("47 MySakila Drive"));
        assert!(Pattern::Street.matches("Hauptstraße 5"));
        assert!(!Pattern::Street.matches("Drive"));
        assert!(Pattern::FreeText
            .matches("Patient reports a mild headache after the second dose, no fever"));
    }

    #[test]
    fn numbers_dates_and_distinct_values() {
        let ages = Int64Array::from(vec![Some(31), None, Some(47), Some(31)]);
        let p = Profile::of(&ages);
        assert!(p.numeric && p.integral && !p.dates);
        assert_eq!(
            (p.nulls, p.distinct_count, p.range),
            (1, 2, Some((31.0, 47.0)))
        );
        let days = StringArray::from(vec!["2005-05-24 22:53:30", "2006-02-14"]);
        let p = Profile::of(&days);
        assert!(p.dates && !p.numeric);
        let text_numbers = StringArray::from(vec!["12", "7.5", "-3"]);
        let p = Profile::of(&text_numbers);
        assert!(p.numeric && !p.integral);
        let mixed = StringArray::from(vec!["12", "twelve"]);
        assert!(!Profile::of(&mixed).numeric);
        let not_a_day = StringArray::from(vec!["2021-02-30"]);
        assert!(
            !Profile::of(&not_a_day).dates,
            "the calendar has no such day"
        );
        let nothing = StringArray::from(vec![None::<&str>, None]);
        let p = Profile::of(&nothing);
        assert!(!p.numeric && !p.dates && p.present() == 0);
    }

    #[test]
    fn the_dominant_pattern_needs_half_the_sample() {
        let mails = StringArray::from(vec!["a@b.org", "c@d.org", "none", "e@f.org"]);
        let p = Profile::of(&mails);
        assert_eq!(p.dominant_pattern(), Some((Pattern::Email, 3)));
        let few = StringArray::from(vec!["a@b.org", "x", "y", "z"]);
        assert_eq!(Profile::of(&few).dominant_pattern(), None);
    }
}
