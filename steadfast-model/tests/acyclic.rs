//! Both models' state graphs have no cycle, in every design at the default settings and
//! in scenarios with the most faults (crashes with zombie sends, checkpoint aborts,
//! JobMaster failures, overlapping dispatchers). A reduction of interleavings
//! (partial-order reduction) must not postpone a step forever around a cycle; on an
//! acyclic graph that cannot happen, so the cycle proviso such a reduction needs holds
//! by itself at these bounds. A depth-first search over the graph that meets a state
//! still on its stack has found a cycle, and the test names its length.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use stateright::Model;
use steadfast_model::durable::Durable;
use steadfast_model::leadership::Leadership;
use steadfast_model::{Settings, Spec};

/// A state's fingerprint: the graphs here have at most a few million states, far from
/// where 64-bit fingerprints collide.
fn fingerprint<S: Hash>(s: &S) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// The states and the length of the first cycle found, if any.
fn first_cycle<M: Model>(m: &M) -> (usize, Option<usize>)
where
    M::State: Hash,
{
    // 1: on the stack; 2: finished.
    let mut colour: HashMap<u64, u8> = HashMap::new();
    let mut actions = Vec::new();
    for init in m.init_states() {
        if colour.contains_key(&fingerprint(&init)) {
            continue;
        }
        // Each frame: a state's fingerprint and its successors not yet followed.
        let mut stack: Vec<(u64, Vec<M::State>)> = Vec::new();
        let mut enter = |s: &M::State, colour: &mut HashMap<u64, u8>| {
            actions.clear();
            m.actions(s, &mut actions);
            let next: Vec<M::State> = actions
                .drain(..)
                .filter_map(|a| m.next_state(s, a))
                .filter(|n| m.within_boundary(n))
                .collect();
            colour.insert(fingerprint(s), 1);
            (fingerprint(s), next)
        };
        stack.push(enter(&init, &mut colour));
        while let Some((_, successors)) = stack.last_mut() {
            let Some(next) = successors.pop() else {
                let (done, _) = stack.pop().expect("a frame");
                colour.insert(done, 2);
                continue;
            };
            match colour.get(&fingerprint(&next)) {
                Some(1) => {
                    let at = fingerprint(&next);
                    let start = stack.iter().position(|(f, _)| *f == at).expect("on stack");
                    return (colour.len(), Some(stack.len() - start));
                }
                Some(_) => {}
                None => {
                    let frame = enter(&next, &mut colour);
                    stack.push(frame);
                }
            }
        }
    }
    (colour.len(), None)
}

fn build<M: Spec>(design: &str, overrides: &[(&str, &str)]) -> M {
    let settings = Settings::parse(M::params(), overrides).expect("settings");
    M::build(design, &settings).expect("a model")
}

/// Each scenario with the fixed design's state count, the checker's (pinned in the
/// model's tests): the search walks the same graph.
#[test]
fn the_leadership_graph_has_no_cycle() {
    let failures: &[(&str, &str)] = &[("jobmaster-failures", "true"), ("jobmaster-crash", "true")];
    for (overrides, fixed_states) in [
        (&[][..], 6_786),
        (failures, 147_280),
        (&[("dispatcher-overlap", "true")][..], 37_225),
    ] {
        for &design in Leadership::designs() {
            let m: Leadership = build(design, overrides);
            check_acyclic(&m, design, overrides, fixed_states);
        }
    }
}

#[test]
fn the_durable_graph_has_no_cycle() {
    let zombies: &[(&str, &str)] = &[("inputs", "1"), ("zombie-sends", "true"), ("crashes", "2")];
    let aborts: &[(&str, &str)] = &[
        ("inputs", "1"),
        ("checkpoint-aborts", "true"),
        ("checkpoints", "3"),
    ];
    for (overrides, fixed_states) in [(&[][..], 1_647_487), (zombies, 493_823), (aborts, 44_489)] {
        for &design in Durable::designs() {
            let m: Durable = build(design, overrides);
            check_acyclic(&m, design, overrides, fixed_states);
        }
    }
}

fn check_acyclic<M: Model>(m: &M, design: &str, overrides: &[(&str, &str)], fixed_states: usize)
where
    M::State: Hash,
{
    let (states, cycle) = first_cycle(m);
    println!("{design} {overrides:?}: {states} states, acyclic");
    assert_eq!(cycle, None, "{design} {overrides:?}: {states} states");
    if design == "fixed" {
        assert_eq!(states, fixed_states, "{overrides:?}");
    }
}

/// A ring of three states and a path of three: the search finds the ring's cycle and
/// none on the path, so an acyclic verdict above is the search's finding, not its blind
/// spot.
#[test]
fn the_search_finds_a_cycle_where_there_is_one() {
    struct Ring(bool);
    impl Model for Ring {
        type State = u8;
        type Action = ();
        fn init_states(&self) -> Vec<u8> {
            vec![0]
        }
        fn actions(&self, s: &u8, actions: &mut Vec<()>) {
            if self.0 || *s < 2 {
                actions.push(());
            }
        }
        fn next_state(&self, s: &u8, _: ()) -> Option<u8> {
            Some((s + 1) % 3)
        }
    }
    assert_eq!(first_cycle(&Ring(true)), (3, Some(3)));
    assert_eq!(first_cycle(&Ring(false)), (3, None));
}
