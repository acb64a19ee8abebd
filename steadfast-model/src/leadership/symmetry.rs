//! Symmetry over the terminal statuses: FINISHED, FAILED and CANCELED are only
//! compared for equality, so a state and its relabelling share every verdict;
//! [`State::canonical_statuses`] picks one representative per class.

use super::{Outcome, State, Status};

/// Relabels terminal statuses in order of first appearance: the first status met
/// becomes [`Status::ALL`]`[0]`, the next different one `ALL[1]`, and so on.
struct Relabel {
    /// New label per old status (indexed by `Status as usize`).
    to: [Option<Status>; 3],
    /// Statuses handed out so far.
    used: usize,
}

impl Relabel {
    fn status(&mut self, old: Status) -> Status {
        let used = &mut self.used;
        *self.to[old as usize].get_or_insert_with(|| {
            let new = Status::ALL[*used];
            *used += 1;
            new
        })
    }

    fn outcome(&mut self, old: Outcome) -> Outcome {
        match old {
            Outcome::Terminal(status) => Outcome::Terminal(self.status(status)),
            other => other,
        }
    }
}

impl State {
    /// The representative of this state's class under permutations of the terminal
    /// statuses: every field that holds a status (`decided`, `pending_terminal`,
    /// `runner_result`, each process's `result` by id, then the old runner's cache and
    /// result) relabelled in order of first
    /// appearance in that field order. States that differ only by a renaming of
    /// FINISHED, FAILED and CANCELED get the same representative, which is itself one of
    /// them; no step and no property of the model tells the statuses apart (they are only
    /// compared for equality), so the class shares every verdict.
    pub fn canonical_statuses(&self) -> State {
        let mut relabel = Relabel {
            to: [None; 3],
            used: 0,
        };
        let mut r = *self;
        r.decided = r.decided.map(|s| relabel.status(s));
        r.pending_terminal = r.pending_terminal.map(|s| relabel.status(s));
        r.runner_result = relabel.outcome(r.runner_result);
        for p in r.processes.iter_mut() {
            p.result = relabel.outcome(p.result);
            p.decision = p.decision.map(|s| relabel.status(s));
        }
        if let Some(o) = r.old.as_mut() {
            o.pending_terminal = o.pending_terminal.map(|s| relabel.status(s));
            o.result = relabel.outcome(o.result);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    //! Symmetry reduction over the terminal statuses: the representative is a canonical
    //! form of each class (idempotent, a member of the class, equal for every member),
    //! renaming statuses maps steps onto steps and keeps every property, and reduced DFS
    //! runs give the unreduced verdicts with pinned class counts.

    use std::collections::{BTreeMap, HashSet};

    use super::super::*;
    use crate::check::{try_check, CheckOptions, Strategy, Traces};

    /// Every renaming of the three statuses: entry `i` is the new name of `Status::ALL[i]`.
    const RENAMINGS: [[Status; 3]; 6] = {
        use Status::*;
        [
            [Finished, Failed, Canceled],
            [Finished, Canceled, Failed],
            [Failed, Finished, Canceled],
            [Failed, Canceled, Finished],
            [Canceled, Finished, Failed],
            [Canceled, Failed, Finished],
        ]
    };

    /// `state` with every status renamed, field by field, independently of
    /// `canonical_statuses`.
    fn rename(state: &State, to: &[Status; 3]) -> State {
        let status = |s: Status| to[s as usize];
        let outcome = |o: Outcome| match o {
            Outcome::Terminal(s) => Outcome::Terminal(status(s)),
            other => other,
        };
        let mut r = *state;
        r.decided = state.decided.map(status);
        r.pending_terminal = state.pending_terminal.map(status);
        r.runner_result = outcome(state.runner_result);
        for p in r.processes.iter_mut() {
            p.result = outcome(p.result);
            p.decision = p.decision.map(status);
        }
        if let Some(o) = r.old.as_mut() {
            o.pending_terminal = o.pending_terminal.map(status);
            o.result = outcome(o.result);
        }
        r
    }

    fn rename_action(action: Action, to: &[Status; 3]) -> Action {
        match action {
            Action::DecideTerminal(s) => Action::DecideTerminal(to[s as usize]),
            other => other,
        }
    }

    /// Every reachable state, by plain search.
    fn reachable(model: &Leadership) -> Vec<State> {
        let mut seen: HashSet<State> = model.init_states().into_iter().collect();
        let mut todo: Vec<State> = seen.iter().copied().collect();
        let mut all = Vec::new();
        while let Some(state) = todo.pop() {
            all.push(state);
            let mut actions = Vec::new();
            model.actions(&state, &mut actions);
            for action in actions {
                let next = model.next_state(&state, action).unwrap();
                if seen.insert(next) {
                    todo.push(next);
                }
            }
        }
        all
    }

    fn successors(model: &Leadership, state: &State) -> Vec<(Action, State)> {
        let mut actions = Vec::new();
        model.actions(state, &mut actions);
        actions
            .into_iter()
            .map(|a| (a, model.next_state(state, a).unwrap()))
            .collect()
    }

    fn dfs(symmetry: bool) -> CheckOptions {
        CheckOptions {
            strategy: Strategy::Dfs,
            traces: Traces::None,
            symmetry,
            ..CheckOptions::default()
        }
    }

    fn scenario(design: &str, scenario: &str, statuses: &str) -> Leadership {
        Leadership::scenario(design, scenario, &[("statuses", statuses)]).unwrap()
    }

    #[test]
    fn representative_is_a_canonical_form_of_every_reachable_state() {
        let fixed = Leadership::new(Design::Fixed);
        let states = reachable(&fixed);
        assert_eq!(states.len(), 6786);
        let mut classes = HashSet::new();
        for s in &states {
            let r = s.canonical_statuses();
            assert_eq!(r.canonical_statuses(), r, "idempotent: {s:?}");
            assert!(
                RENAMINGS.iter().any(|to| rename(s, to) == r),
                "a member of its own class: {s:?}"
            );
            for to in &RENAMINGS {
                assert_eq!(rename(s, to).canonical_statuses(), r, "{to:?} of {s:?}");
            }
            classes.insert(r);
        }
        // The classes are exactly the states of the model with one status.
        let one: HashSet<State> = reachable(&scenario("fixed", "all", "1"))
            .into_iter()
            .collect();
        assert_eq!(classes, one);
    }

    #[test]
    fn renaming_statuses_maps_steps_onto_steps_and_keeps_every_property() {
        // What makes the reduction sound: for every reachable state and renaming, the
        // renamed state's steps are the renamed steps, and every property (all of them,
        // reachability targets included) judges both alike. No property or guard names
        // one status; they only compare statuses for equality.
        // The handoff faults' scenarios too: a crash, and an old runner beside the new.
        let models = Design::ALL.into_iter().flat_map(|design| {
            [
                "all",
                "jobmaster-crash",
                "jobmaster-failures",
                "dispatcher-overlap",
            ]
            .map(|name| Leadership::scenario(design.name(), name, &[]).unwrap())
        });
        for model in models {
            let design = model.design;
            let properties = model.properties();
            for to in &RENAMINGS {
                let init = model.init_states();
                assert_eq!(init.iter().map(|s| rename(s, to)).collect::<Vec<_>>(), init);
            }
            for s in reachable(&model) {
                let steps = successors(&model, &s);
                for to in &RENAMINGS[1..] {
                    let t = rename(&s, to);
                    // The same steps, in another order (DecideTerminal lists statuses
                    // in a fixed order).
                    let renamed: HashSet<(Action, State)> = steps
                        .iter()
                        .map(|(a, n)| (rename_action(*a, to), rename(n, to)))
                        .collect();
                    let found = successors(&model, &t);
                    assert_eq!(found.len(), steps.len(), "{design:?} {s:?}");
                    assert_eq!(
                        found.into_iter().collect::<HashSet<_>>(),
                        renamed,
                        "{design:?} {s:?}"
                    );
                    for p in &properties {
                        assert_eq!(
                            (p.condition)(&model, &s),
                            (p.condition)(&model, &t),
                            "{design:?} `{}` on {s:?}",
                            p.name
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn reduced_runs_keep_every_verdict_with_pinned_class_counts() {
        let table = Leadership::expectations();
        let mut counts = BTreeMap::new();
        for design in DESIGN_NAMES {
            for name in [
                "ordering-a",
                "ordering-b",
                "all",
                "jobmaster-crash",
                "jobmaster-failures",
                "dispatcher-overlap",
                "dispatcher-overlap-fenced",
            ] {
                let model = scenario(design, name, "3");
                let plain = try_check(&model, &dfs(false)).unwrap();
                let reduced = try_check(&model, &dfs(true)).unwrap();
                assert!(reduced.symmetry && !plain.symmetry);
                assert_eq!(reduced.verdicts(), plain.verdicts(), "{design} {name}");
                let expected: BTreeMap<_, _> = table
                    .iter()
                    .filter(|e| e.design == design && e.scenario == name)
                    .map(|e| (e.property, e.expected))
                    .collect();
                assert_eq!(reduced.verdicts(), expected, "{design} {name}");
                // Two statuses reduce to the same classes as three, and a model with
                // one status has as many states as there are classes.
                let two = try_check(&scenario(design, name, "2"), &dfs(true)).unwrap();
                let one = try_check(&scenario(design, name, "1"), &dfs(false)).unwrap();
                assert_eq!(two.unique_states, reduced.unique_states, "{design} {name}");
                assert_eq!(one.unique_states, reduced.unique_states, "{design} {name}");
                counts.insert((design, name), (plain.unique_states, reduced.unique_states));
            }
        }
        let pinned: BTreeMap<(&str, &str), (usize, usize)> = [
            (("unpatched", "ordering-a"), (20120, 7998)),
            (("unpatched", "ordering-b"), (17240, 7038)),
            (("unpatched", "all"), (34967, 12947)),
            (("process-fix-only", "ordering-a"), (18696, 7346)),
            (("process-fix-only", "ordering-b"), (15567, 6303)),
            (("process-fix-only", "all"), (19494, 7612)),
            (("runner-fix-only", "ordering-a"), (6540, 2848)),
            (("runner-fix-only", "ordering-b"), (6192, 2732)),
            (("runner-fix-only", "all"), (11418, 4474)),
            (("fixed", "ordering-a"), (6417, 2725)),
            (("fixed", "ordering-b"), (4707, 2155)),
            (("fixed", "all"), (6786, 2848)),
            (("revoke-clears-leader", "ordering-a"), (10739, 4289)),
            (("revoke-clears-leader", "ordering-b"), (7523, 3217)),
            (("revoke-clears-leader", "all"), (11219, 4449)),
            (("unpatched", "jobmaster-crash"), (59376, 21856)),
            (("process-fix-only", "jobmaster-crash"), (34362, 13266)),
            (("runner-fix-only", "jobmaster-crash"), (25645, 9809)),
            (("fixed", "jobmaster-crash"), (15194, 6194)),
            (("revoke-clears-leader", "jobmaster-crash"), (23531, 9143)),
            (("unpatched", "jobmaster-failures"), (326808, 126880)),
            (("process-fix-only", "jobmaster-failures"), (244786, 98764)),
            (("runner-fix-only", "jobmaster-failures"), (101167, 41645)),
            (("fixed", "jobmaster-failures"), (77038, 33302)),
            (
                ("revoke-clears-leader", "jobmaster-failures"),
                (107081, 44563),
            ),
            (("unpatched", "dispatcher-overlap"), (234337, 84825)),
            (("process-fix-only", "dispatcher-overlap"), (126137, 47371)),
            (("runner-fix-only", "dispatcher-overlap"), (57545, 21363)),
            (("fixed", "dispatcher-overlap"), (37225, 14177)),
            (
                ("revoke-clears-leader", "dispatcher-overlap"),
                (70183, 26221),
            ),
            (("unpatched", "dispatcher-overlap-fenced"), (216844, 78994)),
            (
                ("process-fix-only", "dispatcher-overlap-fenced"),
                (109757, 41911),
            ),
            (
                ("runner-fix-only", "dispatcher-overlap-fenced"),
                (48233, 18259),
            ),
            (("fixed", "dispatcher-overlap-fenced"), (28294, 11200)),
            (
                ("revoke-clears-leader", "dispatcher-overlap-fenced"),
                (57118, 21866),
            ),
        ]
        .into_iter()
        .collect();
        assert_eq!(counts, pinned);
    }

    #[test]
    fn one_status_has_nothing_to_permute() {
        let one = scenario("fixed", "all", "1");
        assert!(one.representative().is_none());
        assert!(scenario("fixed", "all", "2").representative().is_some());
        let e = try_check(&one, &dfs(true)).unwrap_err();
        assert!(
            matches!(
                e,
                crate::check::CheckError::NoSymmetry {
                    model: "leadership",
                    design: "fixed",
                    ..
                }
            ),
            "{e:?}"
        );
    }

    #[test]
    fn statuses_are_relabelled_in_order_of_first_appearance() {
        let mut s = Leadership::new(Design::Fixed).initial_state();
        s.decided = Some(Status::Canceled);
        s.runner_result = Outcome::Terminal(Status::Canceled);
        s.processes[0].result = Outcome::Terminal(Status::Canceled);
        s.processes[1].result = Outcome::NotFinished;
        let r = s.canonical_statuses();
        assert_eq!(r.decided, Some(Status::Finished));
        assert_eq!(r.runner_result, Outcome::Terminal(Status::Finished));
        assert_eq!(r.processes[0].result, Outcome::Terminal(Status::Finished));
        assert_eq!(r.processes[1].result, Outcome::NotFinished);
        // Two different statuses (not reachable, the scheduler decides once) keep
        // their distinction: the second one met becomes FAILED.
        s.processes[1].result = Outcome::Terminal(Status::Finished);
        let r = s.canonical_statuses();
        assert_eq!(r.processes[0].result, Outcome::Terminal(Status::Finished));
        assert_eq!(r.processes[1].result, Outcome::Terminal(Status::Failed));
    }
}
