//! `check --report FILE.html`: one self-contained page per check (no scripts, no
//! network): the verdict table and, per counterexample or example, its steps in the
//! domain's words with the lane diagram the Explorer draws. Meant as a CI artefact.

use stateright::Path;
use steadfast_model::check::CheckReport;
use steadfast_model::picture::escape;
use steadfast_model::{Spec, Verdict};

/// The report page of `report`, a check of `model`.
pub(crate) fn html<M: Spec>(model: &M, report: &CheckReport) -> String {
    let settings = crate::render::settings(report);
    let title = format!("{} · design {}", report.model, report.design);
    let mut out = format!(
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>{t}</title>\
         <style>body{{font-family:sans-serif;margin:24px;color:#111}}\
         table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}}\
         .bad{{color:#c00;font-weight:bold}}.good{{color:#176b2c}}\
         ol li{{margin:2px 0}}figure{{overflow-x:auto;margin:12px 0}}</style></head><body>\
         <h1>{t}</h1><p>{s}</p><p>{u} unique states, {g} generated, depth {d}</p>\
         <table><tr><th>property</th><th>kind</th><th>verdict</th><th>steps</th></tr>",
        t = escape(&title),
        s = escape(&settings.join(", ")),
        u = report.unique_states,
        g = report.generated_states,
        d = report.max_depth,
    );
    for p in &report.properties {
        let class = if p.verdict.is_good() { "good" } else { "bad" };
        let steps = p
            .trace
            .as_ref()
            .map(|t| format!("<a href='#{}'>{}</a>", anchor(p.name), t.steps.len()))
            .unwrap_or_default();
        out.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td class='{class}'>{}</td><td>{steps}</td></tr>",
            escape(p.name),
            p.kind,
            crate::render::verdict(p.verdict)
        ));
    }
    out.push_str("</table>");
    let full = model.focus(None).ok();
    for p in &report.properties {
        let Some(trace) = &p.trace else { continue };
        let what = match p.verdict {
            Verdict::Counterexample => "counterexample to",
            _ => "example of",
        };
        let shape = trace
            .shape
            .as_ref()
            .map(|s| format!(" ({})", escape(s)))
            .unwrap_or_default();
        out.push_str(&format!(
            "<h2 id='{}'>{what} “{}”{shape}, {} steps</h2><ol>",
            anchor(p.name),
            escape(p.name),
            trace.steps.len()
        ));
        for step in &trace.steps {
            out.push_str(&format!("<li>{}</li>", escape(&step.description)));
        }
        out.push_str("</ol>");
        let picture = full
            .as_ref()
            .zip(p.explorer_path.as_deref())
            .and_then(|(full, path)| picture(full, path));
        if let Some(svg) = picture {
            out.push_str(&format!("<figure>{svg}</figure>"));
        }
    }
    out.push_str("</body></html>\n");
    out
}

fn anchor(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The lane diagram of the path whose Explorer encoding is `path` (action indices).
fn picture<M: Spec>(model: &M, path: &str) -> Option<String> {
    let (init, actions) = steadfast_model::check::decode_explorer_path(model, path).ok()?;
    model.as_svg(Path::from_actions(model, init, actions.iter())?)
}
