//! Plain-text rendering of tables and check reports.

use steadfast_model::check::{CheckReport, Trace};
use steadfast_model::Verdict;

/// Renders rows as columns padded to their widest cell, the first row as a header.
pub(crate) fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| format!("{cell:<w$}", w = widths[c]))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
        if i == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            out.push_str(&rule.join("  "));
            out.push('\n');
        }
    }
    out
}

/// A trace as numbered steps.
pub(crate) fn trace(trace: &Trace) -> String {
    let mut out = String::new();
    for (i, step) in trace.steps.iter().enumerate() {
        out.push_str(&format!("  {:>2}. {}\n", i + 1, step.description));
    }
    out.push_str(&format!("      final state: {}\n", trace.last_state));
    out
}

/// A report's settings as `name=value` items, in the report's order.
pub(crate) fn settings(r: &CheckReport) -> Vec<String> {
    r.settings.iter().map(|(k, v)| format!("{k}={v}")).collect()
}

/// A verdict as the Explorer's links and the HTML report name it.
pub(crate) fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Holds => "holds",
        Verdict::Counterexample => "VIOLATED",
        Verdict::Reached => "reached",
        Verdict::Unreached => "never reached",
    }
}

/// The human-readable form of a check report.
pub(crate) fn report(r: &CheckReport) -> String {
    let settings = settings(r);
    let mut out = format!(
        "model {}, design {} ({})\n{} unique states, {} generated, max depth {}, {:.2} s, {:.0} states/s\n\n",
        r.model,
        r.design,
        settings.join(" "),
        r.unique_states,
        r.generated_states,
        r.max_depth,
        r.seconds,
        r.states_per_second
    );
    if r.symmetry {
        out.insert_str(
            out.len() - 1,
            "symmetry reduction on (depth-first): the unique states are classes of \
             interchangeable states; shortest-trace runs are breadth-first, without it\n",
        );
    }
    if let Some((full, part)) = r.expansions {
        out.insert_str(
            out.len() - 1,
            &format!(
                "partial-order reduction on: {part} of {} expanded states followed a \
                 stubborn subset of their steps; shortest traces are shortest among the \
                 reduced paths\n",
                full + part
            ),
        );
    }
    let mut rows = vec![vec![
        "property".to_string(),
        "kind".to_string(),
        "verdict".to_string(),
        "trace".to_string(),
    ]];
    for p in &r.properties {
        let len = p
            .trace
            .as_ref()
            .map(|t| format!("{} steps", t.steps.len()))
            .unwrap_or_default();
        rows.push(vec![
            p.name.to_string(),
            p.kind.to_string(),
            p.verdict.word().to_string(),
            len,
        ]);
    }
    out.push_str(&table(&rows));
    for p in &r.properties {
        let (Some(t), steadfast_model::Verdict::Counterexample) = (&p.trace, p.verdict) else {
            continue;
        };
        let shape = t
            .shape
            .as_ref()
            .map(|s| format!(" [{s}]"))
            .unwrap_or_default();
        out.push_str(&format!(
            "\ncounterexample to \"{}\"{shape}, {} steps",
            p.name,
            t.steps.len()
        ));
        if let Some(path) = &p.explorer_path {
            out.push_str(&format!(" (Explorer: #/steps/{path})"));
        }
        out.push('\n');
        out.push_str(&trace(t));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_pads_columns_and_rules_the_header() {
        let rows = vec![
            vec!["a".to_string(), "bb".to_string()],
            vec!["ccc".to_string(), "d".to_string()],
        ];
        assert_eq!(table(&rows), "a    bb\n---  --\nccc  d\n");
    }
}
