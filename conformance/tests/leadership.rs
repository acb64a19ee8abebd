//! Scratch.
use steadfast_conformance::cover::cover;
use steadfast_conformance::leadership::LeadershipBinding;
use steadfast_model::leadership::{Design, Leadership};

#[test]
fn scratch() {
    let m = Leadership::new(Design::Fixed);
    match cover::<LeadershipBinding>(&m) {
        Ok(c) => println!("{c:?}"),
        Err(d) => panic!("{d}"),
    }
}
