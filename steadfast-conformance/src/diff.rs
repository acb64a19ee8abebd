//! Field-by-field differences between two serialisable values.

use serde::Serialize;
use serde_json::Value;

/// One line per leaf where `left` and `right` differ: `path: left | right`.
pub fn fields<T: Serialize>(left: &T, right: &T) -> Vec<String> {
    let l = serde_json::to_value(left).unwrap_or(Value::Null);
    let r = serde_json::to_value(right).unwrap_or(Value::Null);
    let mut out = Vec::new();
    walk("", &l, &r, &mut out);
    out
}

fn walk(path: &str, l: &Value, r: &Value, out: &mut Vec<String>) {
    if l == r {
        return;
    }
    match (l, r) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                walk(
                    &p,
                    a.get(k).unwrap_or(&Value::Null),
                    b.get(k).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                walk(&format!("{path}[{i}]"), x, y, out);
            }
        }
        _ => out.push(format!(
            "{}: {} | {}",
            if path.is_empty() { "(value)" } else { path },
            l,
            r
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct P {
        state: &'static str,
        results: Vec<Option<u8>>,
        nested: (u8, bool),
    }

    #[test]
    fn names_each_differing_leaf() {
        let a = P {
            state: "Running",
            results: vec![None, Some(1)],
            nested: (1, true),
        };
        let b = P {
            state: "Stopped",
            results: vec![None, Some(2)],
            nested: (1, false),
        };
        assert_eq!(
            fields(&a, &b),
            vec![
                "nested[1]: true | false",
                "results[1]: 1 | 2",
                "state: \"Running\" | \"Stopped\"",
            ]
        );
        assert!(fields(&a, &a).is_empty());
    }

    #[test]
    fn different_lengths_are_one_difference() {
        assert_eq!(fields(&vec![1, 2], &vec![1]), vec!["(value): [1,2] | [1]"]);
    }
}
