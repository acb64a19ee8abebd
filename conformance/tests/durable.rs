//! Conformance of the durable-actions runtime (flink-agents issue 1158) to the model's
//! `fixed` design.

use steadfast_conformance::cover::cover;
use steadfast_conformance::durable::DurableBinding;
use steadfast_model::durable::Durable;
use steadfast_model::{Settings, Spec};

fn model(design: &str, overrides: &[(&str, &str)]) -> Durable {
    let mut all = vec![("compact-offsets", "false")];
    all.extend_from_slice(overrides);
    let settings = Settings::parse(Durable::params(), &all).unwrap();
    Durable::build(design, &settings).unwrap()
}

#[test]
fn smoke() {
    let m = model("fixed", &[("keys", "2"), ("inputs", "1")]);
    match cover::<DurableBinding>(&m) {
        Ok(c) => println!("{c:?} {:.0}", c.steps_per_second()),
        Err(d) => panic!("{d}"),
    }
}
