//! Sensitive attributes as small integer codes: a categorical SA interns its distinct values, a
//! continuous SA (`SENSITIVE BUCKETS (b0, b1, ..., bn)`) maps each value to its bucket
//! (000 Def. 6: "the domain of a continuous SA is divided into non-overlapping buckets").
//! Diversity is counted on codes, so two values in one bucket count as the same value.

use std::collections::HashMap;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SensitiveError {
    #[error("{column}: {count} value(s) fall outside the buckets {buckets}, e.g. {examples}; widen the first or last boundary of BUCKETS so every value is covered")]
    Uncovered {
        column: String,
        buckets: String,
        count: usize,
        examples: String,
    },
    #[error("{column}: {count} value(s) are not numbers, e.g. {examples}; BUCKETS needs a numeric column (drop BUCKETS to treat the column as categorical)")]
    NotNumeric {
        column: String,
        count: usize,
        examples: String,
    },
}

/// One sensitive column of a family table, interned.
#[derive(Debug, Clone, PartialEq)]
pub struct SensitiveColumn {
    /// `table.column`, for messages.
    pub column: String,
    /// Label of each code: the value itself, `NULL`, or a bucket `[lo, hi)`.
    pub labels: Vec<String>,
    /// Code per row.
    pub codes: Vec<u32>,
    /// The bucket boundaries of a `SENSITIVE BUCKETS` column.
    pub bounds: Option<Vec<f64>>,
}

impl SensitiveColumn {
    /// The column's own name, `column` without its table (`table` is the one it belongs to;
    /// a name holding dots stays whole).
    pub fn name_in<'a>(&'a self, table: &str) -> &'a str {
        self.column
            .strip_prefix(table)
            .and_then(|rest| rest.strip_prefix('.'))
            .unwrap_or(&self.column)
    }

    /// Number of distinct codes that occur (the most an l can ask of this column).
    pub fn distinct(&self) -> usize {
        let mut seen = vec![false; self.labels.len()];
        for &c in &self.codes {
            seen[c as usize] = true;
        }
        seen.iter().filter(|&&s| s).count()
    }

    /// The code a declared value stands for: the value itself, or in a bucketed column the
    /// bucket holding it; `None` for a value no code stands for. `None` as the value is NULL.
    pub fn code_of(&self, value: Option<&str>) -> Option<u32> {
        let label = match (value, &self.bounds) {
            (None, _) => "NULL".to_string(),
            (Some(v), None) => v.to_string(),
            (Some(v), Some(bounds)) => {
                let x: f64 = v.trim().parse().ok()?;
                bucket_label(bounds, bucket_of(bounds, x)?)
            }
        };
        self.labels
            .iter()
            .position(|l| *l == label)
            .map(|c| c as u32)
    }
}

/// Label of bucket `i` of `bounds`: half-open, the last one closed (`[3.5, 4]`).
pub fn bucket_label(bounds: &[f64], i: usize) -> String {
    let close = if i + 2 == bounds.len() { ']' } else { ')' };
    format!("[{}, {}{close}", bounds[i], bounds[i + 1])
}

/// Bucket index of `x`: buckets are `[b_i, b_{i+1})`, the last one also takes `b_n`.
pub fn bucket_of(bounds: &[f64], x: f64) -> Option<usize> {
    let n = bounds.len();
    if n < 2 || !(x >= bounds[0] && x <= bounds[n - 1]) {
        return None;
    }
    let i = bounds.partition_point(|&b| b <= x);
    Some(i.saturating_sub(1).min(n - 2))
}

/// Interns one column. `texts` and `numbers` are the rendered and numeric views of each row
/// (NULL is `None` in both). NULL is a value of its own, also in a bucketed column: a NULL
/// grade tells the adversary as much as any other grade.
pub fn intern(
    column: &str,
    buckets: Option<&[f64]>,
    texts: &[Option<String>],
    numbers: &[Option<f64>],
) -> Result<SensitiveColumn, SensitiveError> {
    let mut labels: Vec<String> = Vec::new();
    let mut codes = Vec::with_capacity(texts.len());
    match buckets {
        None => {
            let mut ids: HashMap<Option<&str>, u32> = HashMap::new();
            for t in texts {
                let key = t.as_deref();
                let next = ids.len() as u32;
                let code = *ids.entry(key).or_insert_with(|| {
                    labels.push(key.unwrap_or("NULL").to_string());
                    next
                });
                codes.push(code);
            }
        }
        Some(bounds) => {
            labels = (0..bounds.len().saturating_sub(1))
                .map(|i| bucket_label(bounds, i))
                .collect();
            let null_code = labels.len() as u32;
            let mut has_null = false;
            let (mut outside, mut not_numeric) = (Vec::new(), Vec::new());
            for (t, x) in texts.iter().zip(numbers) {
                match (t, x) {
                    (None, _) => {
                        has_null = true;
                        codes.push(null_code);
                    }
                    (Some(t), None) => {
                        not_numeric.push(t.clone());
                        codes.push(0);
                    }
                    (Some(t), Some(x)) => match bucket_of(bounds, *x) {
                        Some(b) => codes.push(b as u32),
                        None => {
                            outside.push(t.clone());
                            codes.push(0);
                        }
                    },
                }
            }
            let examples = |v: &[String]| v.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
            if !not_numeric.is_empty() {
                return Err(SensitiveError::NotNumeric {
                    column: column.to_string(),
                    count: not_numeric.len(),
                    examples: examples(&not_numeric),
                });
            }
            if !outside.is_empty() {
                return Err(SensitiveError::Uncovered {
                    column: column.to_string(),
                    buckets: format!(
                        "[{}, {}]",
                        bounds.first().copied().unwrap_or(0.0),
                        bounds.last().copied().unwrap_or(0.0)
                    ),
                    count: outside.len(),
                    examples: examples(&outside),
                });
            }
            if has_null {
                labels.push("NULL".into());
            }
        }
    }
    Ok(SensitiveColumn {
        column: column.to_string(),
        labels,
        codes,
        bounds: buckets.map(<[f64]>::to_vec),
    })
}

/// The most rows of a column any l-diverse release can keep: the largest R such that a
/// multiset of R of its values has every value at most R / l times (000 Def. 6), i.e.
/// `sum_v min(count_v, R / l) >= R`. Every vertex group of an l-diverse release obeys this,
/// so the whole release does too; `rows - ceiling` is a floor on what must be suppressed.
pub fn release_ceiling(col: &SensitiveColumn, l: usize) -> usize {
    let mut counts = vec![0usize; col.labels.len()];
    for &c in &col.codes {
        counts[c as usize] += 1;
    }
    let fits = |r: usize| {
        let cap = r as f64 / l.max(1) as f64;
        counts.iter().map(|&c| (c as f64).min(cap)).sum::<f64>() >= r as f64
    };
    // The feasible R form an interval [0, R*]: the left side is concave in R and 0 at 0.
    let (mut lo, mut hi) = (0, col.codes.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// The value a column holds most often, with its count.
pub fn most_frequent(col: &SensitiveColumn) -> Option<(&str, usize)> {
    let mut counts = vec![0usize; col.labels.len()];
    for &c in &col.codes {
        counts[c as usize] += 1;
    }
    let (i, n) = counts
        .iter()
        .enumerate()
        .max_by_key(|&(i, n)| (*n, std::cmp::Reverse(i)))?;
    Some((col.labels[i].as_str(), *n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(codes: Vec<u32>, values: usize) -> SensitiveColumn {
        SensitiveColumn {
            column: "t.c".into(),
            labels: (0..values).map(|v| v.to_string()).collect(),
            codes,
            bounds: None,
        }
    }

    #[test]
    fn ceiling_is_what_l_diversity_can_keep() {
        // 4 x a, 1 x b, 1 x c: with l = 2 at most 4 rows (a, a, b, c); with l = 3, 3 rows.
        let c = column(vec![0, 0, 0, 0, 1, 2], 3);
        assert_eq!(release_ceiling(&c, 1), 6);
        assert_eq!(release_ceiling(&c, 2), 4);
        assert_eq!(release_ceiling(&c, 3), 3);
        assert_eq!(release_ceiling(&c, 4), 0);
        assert_eq!(most_frequent(&c), Some(("0", 4)));
        // Balanced values lose nothing.
        assert_eq!(release_ceiling(&column(vec![0, 1, 2, 0, 1, 2], 3), 3), 6);
    }

    #[test]
    fn buckets_are_half_open_but_the_last_is_closed() {
        let b = [0.0, 2.0, 3.0, 4.0];
        assert_eq!(bucket_of(&b, 0.0), Some(0));
        assert_eq!(bucket_of(&b, 1.99), Some(0));
        assert_eq!(bucket_of(&b, 2.0), Some(1));
        assert_eq!(bucket_of(&b, 3.5), Some(2));
        assert_eq!(bucket_of(&b, 4.0), Some(2));
        assert_eq!(bucket_of(&b, 4.01), None);
        assert_eq!(bucket_of(&b, -0.1), None);
        assert_eq!(bucket_of(&b, f64::NAN), None);
        assert_eq!(bucket_label(&b, 0), "[0, 2)");
        assert_eq!(bucket_label(&b, 2), "[3, 4]");
    }

    #[test]
    fn categorical_values_and_null_are_interned() {
        let texts = vec![
            Some("A".to_string()),
            None,
            Some("B".into()),
            Some("A".into()),
        ];
        let c = intern("t.g", None, &texts, &[None; 4]).expect("categorical never fails");
        assert_eq!(c.codes, vec![0, 1, 2, 0]);
        assert_eq!(c.labels, vec!["A", "NULL", "B"]);
        assert_eq!(c.distinct(), 3);
    }

    #[test]
    fn bucketed_values_map_to_buckets() {
        let texts: Vec<_> = ["1.5", "3.2", "2.9"]
            .iter()
            .map(|s| Some(s.to_string()))
            .collect();
        let nums = vec![Some(1.5), Some(3.2), Some(2.9)];
        let c = intern("s.gpa", Some(&[0.0, 2.0, 3.0, 4.0]), &texts, &nums).expect("covered");
        assert_eq!(c.codes, vec![0, 2, 1]);
        assert_eq!(c.labels.len(), 3);
    }

    #[test]
    fn uncovered_and_non_numeric_values_are_errors() {
        let texts = vec![Some("4.5".to_string())];
        let e = intern("s.gpa", Some(&[0.0, 4.0]), &texts, &[Some(4.5)]).unwrap_err();
        assert!(e.to_string().contains("outside the buckets [0, 4]"), "{e}");
        assert!(e.to_string().contains("4.5"), "{e}");
        let texts = vec![Some("high".to_string())];
        let e = intern("s.gpa", Some(&[0.0, 4.0]), &texts, &[None]).unwrap_err();
        assert!(
            matches!(e, SensitiveError::NotNumeric { count: 1, .. }),
            "{e}"
        );
    }
}
