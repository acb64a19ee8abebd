//! The runtime's names for the model's keys, actions and state keys, and the scripted
//! supplier whose outcomes the names determine.

use super::*;

/// Names of the runtime's keys and actions for the model's indices.
#[derive(Debug)]
pub struct Names {
    /// Key name per model key; key `k`'s name hashes to partition `k mod partitions`,
    /// the model's placement.
    pub keys: Vec<String>,
    /// Action name per model action index.
    pub actions: Vec<String>,
    /// Durable calls per action.
    pub calls: u8,
    /// Log partitions.
    pub partitions: u32,
    /// Operator subtasks (key `k` runs on subtask `k mod subtasks` until a restore
    /// scales the job in).
    pub subtasks: u8,
    /// Each subtask restores from its own marker, not the minimum of all subtasks'.
    pub own_marker: bool,
    /// Every state key within the bounds, in the order of their views (key, input,
    /// action), with its view.
    pub(super) state_keys: Vec<(ImplKey, StateKeyView)>,
    /// Per key, its partition (`partition_for` of its name, computed once).
    pub(super) key_partitions: Vec<u32>,
    /// The operator's queue bounds for the model's bounds: as many pending checkpoints
    /// as `concurrent-checkpoints` (Flink's coordinator never has more), as many
    /// pending inputs per key as it has inputs.
    pub(super) limits: Limits,
}

impl Names {
    pub(super) fn new(bounds: &model::Bounds) -> Names {
        let partitions = u32::from(bounds.partitions);
        let keys: Vec<String> = (0..bounds.keys)
            .map(|k| {
                let want = u32::from(k % bounds.partitions);
                (0u32..)
                    .map(|n| format!("key{k}.{n}"))
                    .find(|name| partition_for(name, partitions) == want)
                    .expect("some name hashes to every partition")
            })
            .collect();
        let actions: Vec<String> = (0..bounds.actions).map(|a| format!("action{a}")).collect();
        let mut state_keys = Vec::new();
        for (k, key) in keys.iter().enumerate() {
            for seq in 0..u64::from(bounds.inputs) {
                for (a, action) in actions.iter().enumerate() {
                    let sk = ImplKey {
                        key: key.clone(),
                        seq,
                        action: action.clone(),
                    };
                    let view = StateKeyView {
                        key: k as u8,
                        seq,
                        action: a as u8,
                    };
                    state_keys.push((sk, view));
                }
            }
        }
        Names {
            limits: Limits {
                pending_inputs_per_key: usize::from(bounds.inputs),
                pending_checkpoints: usize::from(bounds.concurrent_checkpoints),
            },
            key_partitions: keys.iter().map(|k| partition_for(k, partitions)).collect(),
            keys,
            actions,
            calls: bounds.calls,
            partitions,
            subtasks: bounds.subtasks,
            own_marker: bounds.own_marker,
            state_keys,
        }
    }

    /// The keys subtask `t` owns while `subtasks` run.
    pub(super) fn ownership(&self, t: u8, subtasks: u8) -> Ownership {
        if subtasks == 1 {
            return Ownership::All;
        }
        Ownership::Keys(
            self.keys
                .iter()
                .enumerate()
                .filter(|(k, _)| *k as u8 % subtasks == t)
                .map(|(_, name)| name.clone())
                .collect(),
        )
    }

    pub(super) fn key_index(&self, name: &str) -> Option<u8> {
        self.keys.iter().position(|k| k == name).map(|i| i as u8)
    }

    pub(super) fn action_index(&self, name: &str) -> Option<u8> {
        self.actions.iter().position(|a| a == name).map(|i| i as u8)
    }

    pub(super) fn defs(&self) -> Vec<ActionDef> {
        let functions: Vec<String> = (0..self.calls).map(|c| format!("f{c}")).collect();
        self.actions
            .iter()
            .map(|a| ActionDef::new(a.clone(), CallChain::new(functions.clone())))
            .collect()
    }

    pub(super) fn state_key(&self, sk: StateKey) -> ImplKey {
        ImplKey {
            key: self.keys[sk.key as usize].clone(),
            seq: u64::from(sk.seq),
            action: self.actions[sk.action as usize].clone(),
        }
    }

    pub(super) fn view_of(&self, sk: &ImplKey) -> Result<StateKeyView, String> {
        match (self.key_index(&sk.key), self.action_index(&sk.action)) {
            (Some(key), Some(action)) => Ok(StateKeyView {
                key,
                seq: sk.seq,
                action,
            }),
            _ => Err(format!("unknown state key {sk:?}")),
        }
    }
}

/// The scripted external service: deterministic in the call. An action's second call
/// fails: an error is a call's outcome like a value, saved and reused the same way (the
/// model does not tell them apart).
pub(super) fn supplier(function: &str, args: &Datum) -> CallOutcome {
    match function {
        "f1" => CallOutcome::Error(format!("{function}{args} is unavailable")),
        _ => CallOutcome::Value(json!(format!("{function}{args}"))),
    }
}
