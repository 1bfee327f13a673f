//! How a filter's tests compare a payload's values with their operands:
//! scalars by value, numbers exactly whatever their JSON form.

use std::cmp::Ordering;

use serde_json::{Number, Value};

/// Scalar equality, numbers by value.
pub(super) fn same(found: &Value, expected: &Value) -> bool {
    match (found, expected) {
        (Value::Number(a), Value::Number(b)) => numbers(a, b) == Some(Ordering::Equal),
        (Value::Object(_) | Value::Array(_), _) => false,
        (a, b) => a == b,
    }
}

/// The order of two numbers or two strings; `None` for anything else.
pub(super) fn compare(found: &Value, bound: &Value) -> Option<Ordering> {
    match (found, bound) {
        (Value::Number(a), Value::Number(b)) => numbers(a, b),
        (Value::String(a), Value::String(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
        _ => None,
    }
}

/// By value, exactly: integers as i128, an integer against a float without
/// rounding the integer to a float (beyond 2^53 that rounding made
/// 9007199254740993 equal to 9007199254740992.0), floats as f64.
fn numbers(a: &Number, b: &Number) -> Option<Ordering> {
    fn integer(n: &Number) -> Option<i128> {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    }
    match (integer(a), integer(b)) {
        (Some(a), Some(b)) => Some(a.cmp(&b)),
        (Some(a), None) => integer_against_float(a, b.as_f64()?),
        (None, Some(b)) => integer_against_float(b, a.as_f64()?).map(Ordering::reverse),
        (None, None) => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

/// `integer` against `float`, exactly. Every integer of 64 bits lies in
/// ±2^64, where a float's whole part is exact as an i128.
fn integer_against_float(integer: i128, float: f64) -> Option<Ordering> {
    const BOUND: f64 = 18_446_744_073_709_551_616.0; // 2^64
    if float.is_nan() {
        return None;
    }
    if float >= BOUND {
        return Some(Ordering::Less);
    }
    if float <= -BOUND {
        return Some(Ordering::Greater);
    }
    let whole = float.trunc();
    Some(integer.cmp(&(whole as i128)).then_with(|| {
        // The same whole part: the float's fraction decides.
        0.0.partial_cmp(&(float - whole)).unwrap_or(Ordering::Equal)
    }))
}
