//! Payload filters (docs/design.md §19): a predicate over an event's JSON
//! payload that an endpoint's subscription may add, so that an event fans
//! out only to the endpoints whose filter it satisfies.
//!
//! The language is MongoDB's query subset that producers already know:
//!
//! ```json
//! {"amount": {"$gte": 100}, "currency": "CNY",
//!  "$or": [{"customer.tier": "gold"}, {"rush": {"$exists": true}}]}
//! ```
//!
//! - An object's entries all hold (an implicit `$and`). A key is a dotted
//!   path into the payload (`customer.tier`; a segment of digits indexes
//!   an array: `items.0.sku`), or `$and` / `$or` with a list of filters.
//! - A path's condition is a scalar (equality) or an object of operators,
//!   all of which hold: `$eq $ne $in $nin $gt $gte $lt $lte $exists`.
//! - Only scalars (string, number, boolean, `null`) are compared; a nested
//!   field is reached by its path, not by an object literal. Numbers
//!   compare by value (`100` equals `100.0`, and integers beyond 2^53 are
//!   exact); `$gt`-style operators compare numbers with numbers and strings
//!   with strings (by bytes), and nothing else matches them. `null` matches
//!   a `null` value, never an absent one (that is `{"$exists": false}`).
//!   `$ne` and `$nin` hold for an absent path, as in MongoDB.
//! - An event without a JSON payload (a text `body`) matches no filter.
//!
//! A filter is parsed once, when its endpoint is written or read, and
//! bounded then ([`MAX_FILTER_BYTES`], [`MAX_CLAUSES`], [`MAX_DEPTH`],
//! [`MAX_PATH_SEGMENTS`], [`MAX_LIST`]), so that evaluating one costs at
//! most a few hundred comparisons per event and endpoint. A refusal names
//! where in the filter it is and which operator (`filter.amount.$gte`).

use std::cmp::Ordering;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use values::{compare, same};

/// Most bytes of a filter, written as compact JSON.
pub const MAX_FILTER_BYTES: usize = 4096;
/// Most conditions in a filter, each operator on a path counting one.
pub const MAX_CLAUSES: usize = 64;
/// Deepest nesting of `$and` / `$or`.
pub const MAX_DEPTH: usize = 4;
/// Most segments of a dotted path.
pub const MAX_PATH_SEGMENTS: usize = 16;
/// Most values in one `$in` / `$nin`, and most filters in one `$and` / `$or`.
pub const MAX_LIST: usize = 100;

/// A validated filter, cheap to clone: the JSON it was written as (which
/// is what the API shows and the store keeps) and its parsed form.
#[derive(Clone)]
pub struct PayloadFilter(Arc<Parsed>);

struct Parsed {
    source: Value,
    root: Node,
    /// The source's length as compact JSON, for `approximate_size`.
    bytes: usize,
}

/// Where a filter is refused and why: `path` is the place inside the
/// filter (`amount.$gte`, `$or[1].currency`), empty for the whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterProblem {
    pub path: String,
    pub message: String,
}

impl FilterProblem {
    fn new(path: &str, message: impl Into<String>) -> Self {
        Self {
            path: path.to_string(),
            message: message.into(),
        }
    }

    /// The request field the problem names: `filter`, `filter.amount.$gte`.
    pub fn field(&self) -> String {
        self.field_in("filter")
    }

    /// The same place under another request field (`success_filter`).
    pub fn field_in(&self, field: &str) -> String {
        if self.path.is_empty() {
            field.to_string()
        } else {
            format!("{field}.{}", self.path)
        }
    }
}

enum Node {
    All(Vec<Node>),
    Any(Vec<Node>),
    Test { path: Vec<String>, test: Test },
}

enum Test {
    Eq(Value),
    Ne(Value),
    In(Vec<Value>),
    Nin(Vec<Value>),
    Compare(Ordering, bool, Value),
    Exists(bool),
}

impl PayloadFilter {
    /// Parses and bounds a filter as a producer wrote it.
    pub fn parse(source: Value) -> Result<Self, FilterProblem> {
        let size = serde_json::to_vec(&source).map_or(usize::MAX, |bytes| bytes.len());
        if size > MAX_FILTER_BYTES {
            return Err(FilterProblem::new(
                "",
                format!("a filter is at most {MAX_FILTER_BYTES} bytes of JSON; this one is {size}"),
            ));
        }
        let mut parser = Parser { clauses: 0 };
        let root = parser.filter(&source, "", 0)?;
        Ok(Self(Arc::new(Parsed {
            source,
            root,
            bytes: size,
        })))
    }

    /// The filter as written.
    pub fn source(&self) -> &Value {
        &self.0.source
    }

    /// About how many bytes it holds in memory, for bounded caches.
    pub fn approximate_size(&self) -> usize {
        // The parsed form holds about what the source does, twice over.
        3 * self.0.bytes
    }

    /// Whether `payload` satisfies it; `None` (no JSON payload) never does.
    pub fn matches(&self, payload: Option<&Value>) -> bool {
        payload.is_some_and(|payload| self.0.root.matches(payload))
    }
}

impl std::fmt::Debug for PayloadFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PayloadFilter({})", self.0.source)
    }
}

impl PartialEq for PayloadFilter {
    fn eq(&self, other: &Self) -> bool {
        self.0.source == other.0.source
    }
}

impl Serialize for PayloadFilter {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.source.serialize(serializer)
    }
}

/// A stored filter is parsed as a written one is: one that no longer
/// passes is an error of the row, never a filter that matches differently.
impl<'de> Deserialize<'de> for PayloadFilter {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let source = Value::deserialize(deserializer)?;
        Self::parse(source).map_err(|problem| {
            serde::de::Error::custom(format!("{}: {}", problem.field(), problem.message))
        })
    }
}

struct Parser {
    clauses: usize,
}

impl Parser {
    /// A filter object: each entry holds.
    fn filter(&mut self, value: &Value, at: &str, depth: usize) -> Result<Node, FilterProblem> {
        let Value::Object(entries) = value else {
            return Err(FilterProblem::new(
                at,
                "a filter is an object of paths and conditions (`{\"currency\": \"CNY\"}`)",
            ));
        };
        if entries.is_empty() {
            return Err(FilterProblem::new(
                at,
                "a filter has at least one condition (null removes the filter)",
            ));
        }
        let mut all = Vec::with_capacity(entries.len());
        for (key, condition) in entries {
            let here = joined(at, key);
            match key.as_str() {
                "$and" | "$or" => {
                    if depth >= MAX_DEPTH {
                        return Err(FilterProblem::new(
                            &here,
                            format!("`$and` and `$or` nest at most {MAX_DEPTH} deep"),
                        ));
                    }
                    let Some(list) = condition.as_array().filter(|l| !l.is_empty()) else {
                        return Err(FilterProblem::new(
                            &here,
                            format!("`{key}` takes a non-empty list of filters"),
                        ));
                    };
                    if list.len() > MAX_LIST {
                        return Err(FilterProblem::new(
                            &here,
                            format!("`{key}` takes at most {MAX_LIST} filters"),
                        ));
                    }
                    let nodes = list
                        .iter()
                        .enumerate()
                        .map(|(i, f)| self.filter(f, &format!("{here}[{i}]"), depth + 1))
                        .collect::<Result<Vec<_>, _>>()?;
                    all.push(if key == "$and" {
                        Node::All(nodes)
                    } else {
                        Node::Any(nodes)
                    });
                }
                operator if operator.starts_with('$') => {
                    return Err(FilterProblem::new(
                        &here,
                        format!(
                            "`{operator}` is not a filter's operator: `$and` and `$or` combine filters; \
                             a path (`amount`) takes $eq $ne $in $nin $gt $gte $lt $lte $exists"
                        ),
                    ));
                }
                path => {
                    let segments = path_segments(path, &here)?;
                    self.path(segments, condition, &here, &mut all)?;
                }
            }
        }
        Ok(if all.len() == 1 {
            all.pop().expect("one node")
        } else {
            Node::All(all)
        })
    }

    /// One path's condition: a scalar, or an object of operators.
    fn path(
        &mut self,
        path: Vec<String>,
        condition: &Value,
        at: &str,
        into: &mut Vec<Node>,
    ) -> Result<(), FilterProblem> {
        let operators = match condition {
            Value::Object(operators) => operators,
            Value::Array(_) => return Err(FilterProblem::new(
                at,
                "a list is not compared as a whole: `{\"$in\": [...]}` matches any of its values",
            )),
            scalar => {
                self.count(at)?;
                into.push(Node::Test {
                    path,
                    test: Test::Eq(scalar.clone()),
                });
                return Ok(());
            }
        };
        if operators.is_empty() || !operators.keys().all(|k| k.starts_with('$')) {
            return Err(FilterProblem::new(
                at,
                "a condition is a string, number, boolean or null, or an object of operators \
                 ($eq $ne $in $nin $gt $gte $lt $lte $exists); a nested field is reached by a \
                 dotted path (`customer.tier`)",
            ));
        }
        for (operator, operand) in operators {
            let here = joined(at, operator);
            self.count(&here)?;
            let test = operand_test(operator, operand, &here)?;
            into.push(Node::Test {
                path: path.clone(),
                test,
            });
        }
        Ok(())
    }

    fn count(&mut self, at: &str) -> Result<(), FilterProblem> {
        self.clauses += 1;
        if self.clauses > MAX_CLAUSES {
            return Err(FilterProblem::new(
                at,
                format!("a filter has at most {MAX_CLAUSES} conditions"),
            ));
        }
        Ok(())
    }
}

fn operand_test(operator: &str, operand: &Value, at: &str) -> Result<Test, FilterProblem> {
    let scalar = |operand: &Value| -> Result<Value, FilterProblem> {
        if operand.is_object() || operand.is_array() {
            Err(FilterProblem::new(
                at,
                format!("`{operator}` takes a string, number, boolean or null"),
            ))
        } else {
            Ok(operand.clone())
        }
    };
    let list = |operand: &Value| -> Result<Vec<Value>, FilterProblem> {
        match operand.as_array() {
            Some(values) if !values.is_empty() && values.len() <= MAX_LIST => values
                .iter()
                .map(|v| {
                    if v.is_object() || v.is_array() {
                        Err(FilterProblem::new(
                            at,
                            format!("`{operator}` lists strings, numbers, booleans or null"),
                        ))
                    } else {
                        Ok(v.clone())
                    }
                })
                .collect(),
            _ => Err(FilterProblem::new(
                at,
                format!("`{operator}` takes a list of 1 to {MAX_LIST} values"),
            )),
        }
    };
    let ordered = |operand: &Value| -> Result<Value, FilterProblem> {
        if operand.is_number() || operand.is_string() {
            Ok(operand.clone())
        } else {
            Err(FilterProblem::new(
                at,
                format!("`{operator}` takes a number or a string"),
            ))
        }
    };
    Ok(match operator {
        "$eq" => Test::Eq(scalar(operand)?),
        "$ne" => Test::Ne(scalar(operand)?),
        "$in" => Test::In(list(operand)?),
        "$nin" => Test::Nin(list(operand)?),
        "$gt" => Test::Compare(Ordering::Greater, false, ordered(operand)?),
        "$gte" => Test::Compare(Ordering::Greater, true, ordered(operand)?),
        "$lt" => Test::Compare(Ordering::Less, false, ordered(operand)?),
        "$lte" => Test::Compare(Ordering::Less, true, ordered(operand)?),
        "$exists" => match operand {
            Value::Bool(present) => Test::Exists(*present),
            _ => {
                return Err(FilterProblem::new(
                    at,
                    "`$exists` takes true or false",
                ))
            }
        },
        "$and" | "$or" => {
            return Err(FilterProblem::new(
                at,
                format!("`{operator}` combines whole filters: put it beside the paths, not under one"),
            ))
        }
        other => {
            return Err(FilterProblem::new(
                at,
                format!(
                    "`{other}` is not an operator: a path takes $eq $ne $in $nin $gt $gte $lt $lte $exists"
                ),
            ))
        }
    })
}

fn joined(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    }
}

fn path_segments(path: &str, at: &str) -> Result<Vec<String>, FilterProblem> {
    let segments: Vec<String> = path.split('.').map(str::to_string).collect();
    if segments.iter().any(String::is_empty) {
        return Err(FilterProblem::new(
            at,
            "a path is field names joined by dots, none empty (`customer.tier`)",
        ));
    }
    if segments.len() > MAX_PATH_SEGMENTS {
        return Err(FilterProblem::new(
            at,
            format!("a path has at most {MAX_PATH_SEGMENTS} segments"),
        ));
    }
    Ok(segments)
}

impl Node {
    fn matches(&self, payload: &Value) -> bool {
        match self {
            Node::All(nodes) => nodes.iter().all(|n| n.matches(payload)),
            Node::Any(nodes) => nodes.iter().any(|n| n.matches(payload)),
            Node::Test { path, test } => test.holds(resolve(payload, path)),
        }
    }
}

impl Test {
    fn holds(&self, found: Option<&Value>) -> bool {
        match self {
            Test::Eq(expected) => found.is_some_and(|v| same(v, expected)),
            Test::Ne(expected) => !found.is_some_and(|v| same(v, expected)),
            Test::In(values) => found.is_some_and(|v| values.iter().any(|e| same(v, e))),
            Test::Nin(values) => !found.is_some_and(|v| values.iter().any(|e| same(v, e))),
            Test::Compare(side, or_equal, bound) => found
                .and_then(|v| compare(v, bound))
                .is_some_and(|o| o == *side || (*or_equal && o == Ordering::Equal)),
            Test::Exists(present) => found.is_some() == *present,
        }
    }
}

/// The value at `path`: an object's field, or an array's element for a
/// segment of digits.
fn resolve<'a>(payload: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(payload, |value, segment| match value {
        Value::Object(fields) => fields.get(segment),
        Value::Array(items) => segment
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| segment.parse::<usize>().ok())
            .flatten()
            .and_then(|i| items.get(i)),
        _ => None,
    })
}

/// A payload as a filter reads it: its JSON, when it has any.
pub fn payload_json(content_type: &str, body: &[u8]) -> Option<Value> {
    super::json_value::is_json_content_type(content_type)
        .then(|| serde_json::from_slice(body).ok())
        .flatten()
}

/// Parses the object form a store keeps (text in SQLite).
pub fn from_stored_text(text: &str) -> Result<PayloadFilter, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    PayloadFilter::parse(value).map_err(|p| format!("{}: {}", p.field(), p.message))
}

/// The form a store keeps: compact JSON.
pub fn to_stored_text(filter: &PayloadFilter) -> String {
    filter.source().to_string()
}

mod values;

#[cfg(test)]
mod tests;
