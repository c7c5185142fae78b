//! The one rule that turns a cell into a label or a number. Hierarchies, the release, the
//! verifier and error messages all go through here, so a value compares equal wherever it is
//! rendered.

use arrow::array::timezone::Tz;
use arrow::array::{Array, AsArray};
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Decimal128Type, Decimal32Type, Decimal64Type, Float16Type,
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow::util::display::{ArrayFormatter, FormatOptions};

/// Sub-second digits are kept only when present, so whole-second timestamps read
/// `YYYY-MM-DD HH:MM:SS` and finer ones are not silently truncated.
const TIMESTAMP_FORMAT: &str = "%Y-%m-%d %H:%M:%S%.f";

/// Render one cell as text, the single rule used everywhere a value must become a label:
/// NULL -> None; integers -> decimal; floats -> Rust's `{}` Display (4.0 -> "4",
/// 3.72 -> "3.72"); strings -> the string; Boolean -> "true"/"false"; Date32/Date64 ->
/// "YYYY-MM-DD"; Timestamp -> "YYYY-MM-DD HH:MM:SS" (plus a fraction when there is one);
/// other types -> arrow's display formatter.
pub fn render_value(array: &dyn Array, row: usize) -> Option<String> {
    if row >= array.len() || array.data_type() == &DataType::Null || array.is_null(row) {
        return None;
    }
    let text = match array.data_type() {
        DataType::Int8 => prim::<Int8Type>(array, row).to_string(),
        DataType::Int16 => prim::<Int16Type>(array, row).to_string(),
        DataType::Int32 => prim::<Int32Type>(array, row).to_string(),
        DataType::Int64 => prim::<Int64Type>(array, row).to_string(),
        DataType::UInt8 => prim::<UInt8Type>(array, row).to_string(),
        DataType::UInt16 => prim::<UInt16Type>(array, row).to_string(),
        DataType::UInt32 => prim::<UInt32Type>(array, row).to_string(),
        DataType::UInt64 => prim::<UInt64Type>(array, row).to_string(),
        // f32 (and f16) use their own shortest representation: widening first would turn
        // 3.72f32 into "3.7200000286102295".
        DataType::Float16 => prim::<Float16Type>(array, row).to_f32().to_string(),
        DataType::Float32 => prim::<Float32Type>(array, row).to_string(),
        DataType::Float64 => prim::<Float64Type>(array, row).to_string(),
        DataType::Utf8 => array.as_string::<i32>().value(row).to_string(),
        DataType::LargeUtf8 => array.as_string::<i64>().value(row).to_string(),
        DataType::Utf8View => array.as_string_view().value(row).to_string(),
        DataType::Boolean => array.as_boolean().value(row).to_string(),
        DataType::Date32 => {
            let days = prim::<arrow::datatypes::Date32Type>(array, row);
            match arrow::array::temporal_conversions::date32_to_datetime(days) {
                Some(d) => d.format("%Y-%m-%d").to_string(),
                None => formatted(array, row)?,
            }
        }
        DataType::Date64 => {
            let ms = prim::<arrow::datatypes::Date64Type>(array, row);
            match arrow::array::temporal_conversions::date64_to_datetime(ms) {
                Some(d) => d.format("%Y-%m-%d").to_string(),
                None => formatted(array, row)?,
            }
        }
        DataType::Timestamp(unit, tz) => {
            let tz = tz.as_deref();
            let text = match unit {
                TimeUnit::Second => timestamp::<TimestampSecondType>(array, row, tz),
                TimeUnit::Millisecond => timestamp::<TimestampMillisecondType>(array, row, tz),
                TimeUnit::Microsecond => timestamp::<TimestampMicrosecondType>(array, row, tz),
                TimeUnit::Nanosecond => timestamp::<TimestampNanosecondType>(array, row, tz),
            };
            match text {
                Some(t) => t,
                None => formatted(array, row)?,
            }
        }
        DataType::Dictionary(_, _) => {
            let dict = array.as_any_dictionary_opt()?;
            let key = integer_value(dict.keys(), row)?;
            return render_value(dict.values().as_ref(), usize::try_from(key).ok()?);
        }
        _ => formatted(array, row)?,
    };
    Some(text)
}

/// Numeric view of a cell for bands (integers, floats and decimals, and text that is a plain
/// decimal number: a dynamically typed SQLite column with one odd value arrives as text, and
/// then only the odd value is not a number; None for NULL or non-numeric).
pub fn numeric_value(array: &dyn Array, row: usize) -> Option<f64> {
    if row >= array.len() || array.data_type() == &DataType::Null || array.is_null(row) {
        return None;
    }
    match array.data_type() {
        DataType::Float16 => short_float(prim::<Float16Type>(array, row).to_f32()),
        DataType::Float32 => short_float(prim::<Float32Type>(array, row)),
        DataType::Float64 => Some(prim::<Float64Type>(array, row)),
        DataType::Decimal32(_, scale) => Some(decimal(
            f64::from(prim::<Decimal32Type>(array, row)),
            *scale,
        )),
        DataType::Decimal64(_, scale) => {
            Some(decimal(prim::<Decimal64Type>(array, row) as f64, *scale))
        }
        DataType::Decimal128(_, scale) => {
            Some(decimal(prim::<Decimal128Type>(array, row) as f64, *scale))
        }
        DataType::Decimal256(_, _) => formatted(array, row)?.parse().ok(),
        DataType::Dictionary(_, _) => {
            let dict = array.as_any_dictionary_opt()?;
            let key = integer_value(dict.keys(), row)?;
            numeric_value(dict.values().as_ref(), usize::try_from(key).ok()?)
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            plain_number(&formatted(array, row)?)
        }
        _ => integer_value(array, row).map(|v| v as f64),
    }
}

/// An integer cell as i64 (u64 beyond i64::MAX is not an index nor a band value we can
/// place exactly, so it is None).
/// `text` as a number if it is written as one plainly: an optional `-`, digits, an optional
/// fraction. Not `1e5`, `inf`, `NaN` or a value with spaces: those are not what a person
/// writes for an age or a price, and bands of them would mean nothing.
fn plain_number(text: &str) -> Option<f64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let plain = !whole.is_empty()
        && whole.bytes().all(|b| b.is_ascii_digit())
        && fraction.bytes().all(|b| b.is_ascii_digit())
        && (fraction.is_empty() != digits.contains('.'));
    plain.then(|| text.parse().ok()).flatten()
}

fn integer_value(array: &dyn Array, row: usize) -> Option<i64> {
    if array.is_null(row) {
        return None;
    }
    Some(match array.data_type() {
        DataType::Int8 => i64::from(prim::<Int8Type>(array, row)),
        DataType::Int16 => i64::from(prim::<Int16Type>(array, row)),
        DataType::Int32 => i64::from(prim::<Int32Type>(array, row)),
        DataType::Int64 => prim::<Int64Type>(array, row),
        DataType::UInt8 => i64::from(prim::<UInt8Type>(array, row)),
        DataType::UInt16 => i64::from(prim::<UInt16Type>(array, row)),
        DataType::UInt32 => i64::from(prim::<UInt32Type>(array, row)),
        DataType::UInt64 => i64::try_from(prim::<UInt64Type>(array, row)).ok()?,
        _ => return None,
    })
}

/// Callers match on the data type first, so the downcast cannot fail.
fn prim<T: ArrowPrimitiveType>(array: &dyn Array, row: usize) -> T::Native {
    array.as_primitive::<T>().value(row)
}

/// Goes through the shortest decimal text so the number agrees with the rendered label
/// (3.72f32 is 3.72, not 3.7200000286102295).
fn short_float(v: f32) -> Option<f64> {
    v.to_string().parse().ok()
}

fn decimal(unscaled: f64, scale: i8) -> f64 {
    unscaled / 10f64.powi(i32::from(scale))
}

fn timestamp<T: ArrowPrimitiveType<Native = i64>>(
    array: &dyn Array,
    row: usize,
    tz: Option<&str>,
) -> Option<String> {
    use arrow::array::temporal_conversions::{as_datetime, as_datetime_with_timezone};
    let v = prim::<T>(array, row);
    // A zoned timestamp shows its wall-clock time in that zone; a zone arrow cannot
    // resolve falls back to UTC rather than failing.
    if let Some(tz) = tz.and_then(|t| t.parse::<Tz>().ok()) {
        let dt = as_datetime_with_timezone::<T>(v, tz)?;
        return Some(dt.format(TIMESTAMP_FORMAT).to_string());
    }
    Some(as_datetime::<T>(v)?.format(TIMESTAMP_FORMAT).to_string())
}

fn formatted(array: &dyn Array, row: usize) -> Option<String> {
    let options = FormatOptions::default();
    let formatter = ArrayFormatter::try_new(array, &options).ok()?;
    formatter.value(row).try_to_string().ok()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{
        ArrayRef, BinaryArray, BooleanArray, Date32Array, Date64Array, Decimal128Array,
        DictionaryArray, Float32Array, Float64Array, Int32Array, Int64Array, LargeStringArray,
        NullArray, StringArray, StringViewArray, TimestampMicrosecondArray, TimestampSecondArray,
        UInt64Array,
    };
    use arrow::datatypes::Int8Type;

    use super::*;

    fn r(a: &dyn Array, row: usize) -> Option<String> {
        render_value(a, row)
    }

    #[test]
    fn renders_scalars() {
        let ints = Int64Array::from(vec![Some(42), None, Some(-7)]);
        assert_eq!(r(&ints, 0).as_deref(), Some("42"));
        assert_eq!(r(&ints, 1), None);
        assert_eq!(r(&ints, 2).as_deref(), Some("-7"));
        assert_eq!(r(&Int32Array::from(vec![5]), 0).as_deref(), Some("5"));
        assert_eq!(
            r(&UInt64Array::from(vec![u64::MAX]), 0).as_deref(),
            Some("18446744073709551615")
        );

        let floats = Float64Array::from(vec![4.0, 3.72, -0.5, 1e21]);
        assert_eq!(r(&floats, 0).as_deref(), Some("4"));
        assert_eq!(r(&floats, 1).as_deref(), Some("3.72"));
        assert_eq!(r(&floats, 2).as_deref(), Some("-0.5"));
        assert_eq!(r(&floats, 3).as_deref(), Some("1000000000000000000000"));
        assert_eq!(
            r(&Float32Array::from(vec![3.72f32]), 0).as_deref(),
            Some("3.72")
        );

        assert_eq!(
            r(&StringArray::from(vec!["Science"]), 0).as_deref(),
            Some("Science")
        );
        assert_eq!(
            r(&LargeStringArray::from(vec!["x"]), 0).as_deref(),
            Some("x")
        );
        assert_eq!(
            r(
                &StringViewArray::from(vec!["a longer string than twelve"]),
                0
            )
            .as_deref(),
            Some("a longer string than twelve")
        );
        let bools = BooleanArray::from(vec![Some(true), Some(false), None]);
        assert_eq!(r(&bools, 0).as_deref(), Some("true"));
        assert_eq!(r(&bools, 1).as_deref(), Some("false"));
        assert_eq!(r(&bools, 2), None);
        assert_eq!(r(&NullArray::new(2), 0), None);
        // Out of range is None rather than a panic.
        assert_eq!(r(&ints, 99), None);
    }

    #[test]
    fn renders_dates_and_timestamps() {
        // 2021-03-04 is day 18690 since the epoch.
        assert_eq!(
            r(&Date32Array::from(vec![18690]), 0).as_deref(),
            Some("2021-03-04")
        );
        assert_eq!(
            r(&Date64Array::from(vec![18690 * 86_400_000]), 0).as_deref(),
            Some("2021-03-04")
        );
        let ts = TimestampSecondArray::from(vec![18690 * 86_400 + 3_723]);
        assert_eq!(r(&ts, 0).as_deref(), Some("2021-03-04 01:02:03"));
        let zoned = TimestampSecondArray::from(vec![18690 * 86_400]).with_timezone("+02:00");
        assert_eq!(r(&zoned, 0).as_deref(), Some("2021-03-04 02:00:00"));
        let fine = TimestampMicrosecondArray::from(vec![18690 * 86_400_000_000 + 500_000]);
        assert_eq!(r(&fine, 0).as_deref(), Some("2021-03-04 00:00:00.500"));
    }

    #[test]
    fn renders_other_types() {
        let dec = Decimal128Array::from(vec![1234])
            .with_precision_and_scale(10, 2)
            .expect("valid precision and scale");
        assert_eq!(r(&dec, 0).as_deref(), Some("12.34"));
        assert_eq!(numeric_value(&dec, 0), Some(12.34));
        let text =
            arrow::array::StringArray::from(vec!["23", "-4.5", "abc", "1e5", " 7", "NaN", "3."]);
        let read: Vec<Option<f64>> = (0..text.len()).map(|r| numeric_value(&text, r)).collect();
        assert_eq!(read, [Some(23.0), Some(-4.5), None, None, None, None, None]);
        let bin = BinaryArray::from(vec![&b"\x01\xff"[..]]);
        assert_eq!(r(&bin, 0).as_deref(), Some("01ff"));
        let dict: DictionaryArray<Int8Type> = vec!["a", "b", "a"].into_iter().collect();
        let dict: ArrayRef = Arc::new(dict);
        assert_eq!(r(dict.as_ref(), 2).as_deref(), Some("a"));
        assert_eq!(r(dict.as_ref(), 1).as_deref(), Some("b"));
    }

    #[test]
    fn numeric_values() {
        let ints = Int32Array::from(vec![Some(3), None]);
        assert_eq!(numeric_value(&ints, 0), Some(3.0));
        assert_eq!(numeric_value(&ints, 1), None);
        assert_eq!(
            numeric_value(&Float32Array::from(vec![3.72f32]), 0),
            Some(3.72)
        );
        assert_eq!(numeric_value(&Float64Array::from(vec![2.5]), 0), Some(2.5));
        // Text written as a plain number is one (a SQLite column turned to text by one odd
        // value keeps its numbers).
        assert_eq!(numeric_value(&StringArray::from(vec!["12"]), 0), Some(12.0));
        assert_eq!(numeric_value(&BooleanArray::from(vec![true]), 0), None);
    }
}
