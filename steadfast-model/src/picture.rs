//! Lane diagrams of a path: one vertical lane per part of the system, one row per step,
//! a dot in the lane of the part that acts and the step's phrase beside it, the steps
//! whose resulting state violates a safety property in red.
//!
//! The Explorer draws the picture of the path it shows ([`stateright::Model::as_svg`]),
//! and `check --report` embeds the same picture per counterexample. The SVG is plain:
//! no scripts, no external references, every text escaped, so it can be inlined in any
//! page and opened offline.

use std::fmt::Write as _;

use stateright::Expectation;

use crate::Spec;

/// One step of a path as the picture shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// The lane of the part that acts; `None` for a step across every lane (a crash, a
    /// restore).
    pub lane: Option<usize>,
    /// The step in a short phrase.
    pub label: String,
    /// The safety properties the step's resulting state violates.
    pub violates: Vec<&'static str>,
}

/// The safety properties that `state` violates, in the model's order.
pub fn violations<M: Spec>(model: &M, state: &M::State) -> Vec<&'static str> {
    model
        .properties()
        .into_iter()
        .filter(|p| p.name != crate::check::SENTINEL && p.expectation == Expectation::Always)
        .filter(|p| !(p.condition)(model, state))
        .map(|p| p.name)
        .collect()
}

/// The rows of `path` (its states and the actions taken from them): `lane` names the
/// lane of each step, `label` its phrase.
pub fn rows<M: Spec>(
    model: &M,
    path: &[(M::State, Option<M::Action>)],
    lane: impl Fn(&M::State, &M::Action) -> Option<usize>,
    label: impl Fn(&M::State, &M::Action) -> String,
) -> Vec<Row> {
    path.windows(2)
        .filter_map(|pair| {
            let (state, action) = (&pair[0].0, pair[0].1.as_ref()?);
            Some(Row {
                lane: lane(state, action),
                label: label(state, action),
                violates: violations(model, &pair[1].0),
            })
        })
        .collect()
}

const LEFT: u32 = 36;
const LANE: u32 = 104;
const HEAD: u32 = 44;
const ROW: u32 = 24;
/// Room for a label's characters, in pixels per character (12 px sans-serif).
const CHAR: u32 = 8;

/// The SVG of `rows` under `lanes` (their names, left to right).
pub fn svg(lanes: &[String], rows: &[Row]) -> String {
    let lanes_right = LEFT + LANE * lanes.len() as u32;
    let longest = rows
        .iter()
        .map(|r| {
            r.label.chars().count() + r.violates.iter().map(|v| v.len() + 2).sum::<usize>() + 10
        })
        .max()
        .unwrap_or(0) as u32;
    let width = lanes_right + 16 + CHAR * longest;
    let height = HEAD + ROW * rows.len() as u32 + ROW / 2;
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg xmlns='http://www.w3.org/2000/svg' version='1.1' class='steadfast-lanes' \
         width='{width}' height='{height}' viewBox='0 0 {width} {height}' \
         font-family='sans-serif' font-size='12'>"
    );
    out.push_str(
        "<style>.lane{stroke:#bbb}.row{stroke:#eee}.dot{fill:#2a5db0}\
         .violation .dot{fill:#c00}.violation text{fill:#c00;font-weight:bold}\
         .across{stroke:#2a5db0;stroke-width:3}.violation .across{stroke:#c00}</style>",
    );
    // A background of its own, so the picture reads the same on a dark page.
    let _ = write!(out, "<rect width='{width}' height='{height}' fill='#fff'/>");
    for (i, name) in lanes.iter().enumerate() {
        let x = LEFT + LANE * i as u32 + LANE / 2;
        let _ = write!(
            out,
            "<text x='{x}' y='16' text-anchor='middle' font-weight='bold'>{}</text>\
             <line class='lane' x1='{x}' y1='{}' x2='{x}' y2='{height}'/>",
            escape(name),
            HEAD - 16,
        );
    }
    for (i, row) in rows.iter().enumerate() {
        let y = HEAD + ROW * i as u32 + ROW / 2;
        let class = if row.violates.is_empty() {
            "step"
        } else {
            "step violation"
        };
        let _ = write!(out, "<g class='{class}'>");
        let _ = write!(out, "<text x='4' y='{}'>{}</text>", y + 4, i + 1);
        match row.lane {
            Some(lane) => {
                let x = LEFT + LANE * lane as u32 + LANE / 2;
                let _ = write!(
                    out,
                    "<line class='row' x1='{x}' y1='{y}' x2='{lanes_right}' y2='{y}'/>\
                     <circle class='dot' cx='{x}' cy='{y}' r='5'/>"
                );
            }
            None => {
                let _ = write!(
                    out,
                    "<line class='across' x1='{LEFT}' y1='{y}' x2='{lanes_right}' y2='{y}'/>"
                );
            }
        }
        let mut label = row.label.clone();
        if !row.violates.is_empty() {
            let _ = write!(label, " — VIOLATES {}", row.violates.join(", "));
        }
        let _ = write!(
            out,
            "<text x='{}' y='{}'>{}</text></g>",
            lanes_right + 8,
            y + 4,
            escape(&label)
        );
    }
    out.push_str("</svg>");
    out
}

/// `text` with XML's special characters escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\'' => out.push_str("&apos;"),
            '"' => out.push_str("&quot;"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// The rows and picture of a path for [`stateright::Model::as_svg`]: a model names its lanes and
/// each step's lane, the picture does the rest.
pub fn of_path<M: Spec>(
    model: &M,
    path: &[(M::State, Option<M::Action>)],
    lanes: &[String],
    lane: impl Fn(&M::State, &M::Action) -> Option<usize>,
) -> String {
    let rows = rows(model, path, lane, |s, a| model.describe_step(s, a));
    svg(lanes, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_drawn_once_and_violations_are_marked() {
        let lanes = vec!["a".to_string(), "b<c".to_string()];
        let rows = vec![
            Row {
                lane: Some(0),
                label: "first & 'quoted'".into(),
                violates: vec![],
            },
            Row {
                lane: None,
                label: "across".into(),
                violates: vec!["no bug"],
            },
        ];
        let svg = svg(&lanes, &rows);
        assert_eq!(svg.matches("<g class='step").count(), 2);
        assert_eq!(svg.matches("<g class='step violation'>").count(), 1);
        assert!(svg.contains("b&lt;c") && svg.contains("first &amp; &apos;quoted&apos;"));
        assert!(svg.contains("across — VIOLATES no bug"));
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>"));
    }
}
